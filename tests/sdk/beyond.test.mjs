// beyond.test.mjs -- sluice's features beyond SQS (docs/api.md, "Beyond
// SQS") with the stock AWS SDK for JavaScript v3 over HTTP/2 (JSON 1.0),
// unpatched, its MD5 checks left on: a priority queue fed with the
// sluice.Priority message attribute and drained lowest first across a
// shard of two partitions, a bad priority as the SDK's own error, and
// idempotent sends with MessageDeduplicationId on a standard queue, an
// exclusive queue drained by a pool of sqs-consumer workers, and a queue
// created by its first send (auto_create_queues), and filtered receives
// and depth (SluiceFilterKeys, sluice.Filter entries).
import { test } from "node:test";
import assert from "node:assert/strict";
import * as S from "@aws-sdk/client-sqs";
import { sqsClient, startSluiced } from "./harness.mjs";
import { md5OfMessageAttributes, sluicedPerFile } from "./compat-flow.mjs";

const ctx = sluicedPerFile();
let client;
const sqs = { send: (cmd) => (client ??= sqsClient(ctx.server)).send(cmd) };

const prio = (value, type = "Number") => ({
  "sluice.Priority": { DataType: type, StringValue: value },
});

test("a priority queue: lowest sluice.Priority first, MD5s verified", async () => {
  const { QueueUrl: url } = await sqs.send(new S.CreateQueueCommand({
    QueueName: "deadlines", Attributes: { SluicePriority: "true" } }));
  const now = Date.now();
  // Deadlines in ms, as Timestone uses them, sent out of order.
  const deadlines = [now + 9000, now + 1000, now + 5000, now + 3000, now + 7000];
  const one = await sqs.send(new S.SendMessageCommand({
    QueueUrl: url, MessageBody: `d${deadlines[0]}`, MessageAttributes: prio(String(deadlines[0])) }));
  assert.equal(one.MD5OfMessageAttributes, md5OfMessageAttributes(prio(String(deadlines[0]))));
  const batch = await sqs.send(new S.SendMessageBatchCommand({
    QueueUrl: url,
    Entries: deadlines.slice(1).map((d, i) => ({
      Id: `e${i}`, MessageBody: `d${d}`, MessageAttributes: prio(String(d)) })),
  }));
  assert.equal(batch.Successful.length, 4);
  // No priority: its deadline is its send time, before every one above.
  await sqs.send(new S.SendMessageCommand({ QueueUrl: url, MessageBody: "now" }));
  const got = [];
  for (;;) {
    const r = await sqs.send(new S.ReceiveMessageCommand({
      QueueUrl: url, MaxNumberOfMessages: 1, VisibilityTimeout: 60,
      MessageAttributeNames: ["All"] }));
    if (!r.Messages?.length) break;
    const m = r.Messages[0];
    if (m.MessageAttributes) {
      assert.equal(m.MD5OfMessageAttributes, md5OfMessageAttributes(m.MessageAttributes));
    }
    got.push(m.Body);
  }
  assert.deepEqual(got, ["now", ...[...deadlines].sort((a, b) => a - b).map((d) => `d${d}`)]);
});

test("a bad priority is the SDK's InvalidParameterValue, nothing stored", async () => {
  const { QueueUrl: url } = await sqs.send(new S.CreateQueueCommand({
    QueueName: "strict", Attributes: { SluicePriority: "true" } }));
  for (const bad of [prio("soon"), prio("1.5"), prio("5", "String")]) {
    const err = await sqs.send(new S.SendMessageCommand({
      QueueUrl: url, MessageBody: "x", MessageAttributes: bad })).then(
      () => assert.fail("accepted"), (e) => e);
    assert.equal(err.name, "InvalidParameterValue");
    assert.equal(err.$metadata.httpStatusCode, 400);
  }
  const { Attributes } = await sqs.send(new S.GetQueueAttributesCommand({
    QueueUrl: url, AttributeNames: ["ApproximateNumberOfMessages"] }));
  assert.equal(Attributes.ApproximateNumberOfMessages, "0");
});

test("idempotent sends: a retry answers the first MessageId", async () => {
  const { QueueUrl: url } = await sqs.send(new S.CreateQueueCommand({
    QueueName: "payments", Attributes: { SluiceIdempotentSends: "true",
      SluiceIdempotencyWindowSeconds: "600" } }));
  const a = await sqs.send(new S.SendMessageCommand({
    QueueUrl: url, MessageBody: "pay 10", MessageDeduplicationId: "pay-1" }));
  const b = await sqs.send(new S.SendMessageCommand({
    QueueUrl: url, MessageBody: "pay 10", MessageDeduplicationId: "pay-1" }));
  assert.equal(b.MessageId, a.MessageId);
  const batch = await sqs.send(new S.SendMessageBatchCommand({
    QueueUrl: url,
    Entries: [
      { Id: "x", MessageBody: "pay 20", MessageDeduplicationId: "pay-2" },
      { Id: "y", MessageBody: "pay 10", MessageDeduplicationId: "pay-1" },
    ],
  }));
  const ids = Object.fromEntries(batch.Successful.map((e) => [e.Id, e.MessageId]));
  assert.equal(ids.y, a.MessageId);
  assert.notEqual(ids.x, a.MessageId);
  const { Attributes } = await sqs.send(new S.GetQueueAttributesCommand({
    QueueUrl: url, AttributeNames: ["All"] }));
  assert.equal(Attributes.ApproximateNumberOfMessages, "2");
  assert.equal(Attributes.SluiceIdempotentSends, "true");
  assert.equal(Attributes.SluiceIdempotencyWindowSeconds, "600");
});

test("an exclusive queue: a pool of sqs-consumer workers never runs one key twice at once", async () => {
  const { Consumer } = await import("sqs-consumer");
  const { QueueUrl: url } = await sqs.send(new S.CreateQueueCommand({
    QueueName: "projects", Attributes: { SluiceExclusivityKey: "project" } }));
  const keys = 6;
  const perKey = 8;
  for (let k = 0; k < keys; k++) {
    await sqs.send(new S.SendMessageBatchCommand({
      QueueUrl: url,
      Entries: Array.from({ length: perKey }, (_, i) => ({
        Id: `m${i}`, MessageBody: `${k}:${i}`,
        MessageAttributes: { project: { DataType: "String", StringValue: `p${k}` } } })),
    }));
  }
  const running = new Map(); // key -> handlers running now
  const violations = [];
  let handled = 0;
  let peak = 0;
  const workers = [];
  await new Promise((resolve, reject) => {
    for (let w = 0; w < 4; w++) {
      const worker = Consumer.create({
        queueUrl: url,
        sqs: sqsClient(ctx.server),
        batchSize: 10,
        waitTimeSeconds: 1,
        visibilityTimeout: 30,
        messageAttributeNames: ["project"],
        handleMessage: async (m) => {
          const key = m.MessageAttributes.project.StringValue;
          const now = (running.get(key) ?? 0) + 1;
          running.set(key, now);
          if (now > 1) violations.push(`${key} ran twice at once`);
          peak = Math.max(peak, [...running.values()].filter((n) => n > 0).length);
          await new Promise((r) => setTimeout(r, 15));
          running.set(key, running.get(key) - 1);
          handled += 1;
          if (handled === keys * perKey) resolve();
          return m;
        },
      });
      worker.on("error", reject);
      worker.on("processing_error", reject);
      workers.push(worker);
      worker.start();
    }
    setTimeout(() => reject(new Error(`handled only ${handled}/${keys * perKey}`)), 60000).unref();
  }).finally(() => workers.forEach((w) => w.stop()));
  assert.deepEqual(violations, []);
  assert.equal(handled, keys * perKey);
  assert.ok(peak > 1, "other keys flowed while one was held");
  // A send without the key is refused, the SDK's own error name.
  const err = await sqs.send(new S.SendMessageCommand({ QueueUrl: url, MessageBody: "x" }))
    .then(() => assert.fail("accepted"), (e) => e);
  assert.equal(err.name, "MissingParameter");
});

test("auto_create_queues: the first send creates the queue", async () => {
  const server = await startSluiced("defaults:\n  auto_create_queues: true");
  try {
    const own = sqsClient(server);
    const url = `${server.endpoint}/alpha/made-on-send`;
    const sent = await own.send(new S.SendMessageCommand({ QueueUrl: url, MessageBody: "first" }));
    assert.ok(sent.MessageId);
    const { QueueUrl } = await own.send(new S.GetQueueUrlCommand({ QueueName: "made-on-send" }));
    assert.equal(QueueUrl, url);
    const r = await own.send(new S.ReceiveMessageCommand({ QueueUrl: url }));
    assert.equal(r.Messages?.[0]?.Body, "first");
    // a FIFO send the new queue would refuse creates nothing
    const err = await own.send(new S.SendMessageCommand({
      QueueUrl: `${server.endpoint}/alpha/never.fifo`, MessageBody: "x" })).then(
      () => assert.fail("accepted"), (e) => e);
    assert.equal(err.name, "MissingParameter");
    const missing = await own.send(new S.GetQueueUrlCommand({ QueueName: "never.fifo" })).then(
      () => assert.fail("created"), (e) => e);
    assert.equal(missing.name, "QueueDoesNotExist");
  } finally {
    const { code } = await server.stop();
    assert.equal(code, 0);
  }
});

test("filtered receives and depth: sluice.Filter entries, MD5s verified", async () => {
  const { QueueUrl: url } = await sqs.send(new S.CreateQueueCommand({
    QueueName: "filtered", Attributes: { SluiceFilterKeys: "customer" } }));
  const attrs = (c) => ({ customer: { DataType: "String", StringValue: c } });
  const customers = ["acme", "zeta", "acme", "zeta", "zeta", "acme", "omni"];
  const sent = await sqs.send(new S.SendMessageBatchCommand({
    QueueUrl: url,
    Entries: customers.map((c, i) => ({ Id: `e${i}`, MessageBody: `${c}-${i}`,
      MessageAttributes: attrs(c) })),
  }));
  assert.equal(sent.Successful.length, customers.length);
  const depth = async () => (await sqs.send(new S.GetQueueAttributesCommand({
    QueueUrl: url, AttributeNames: ["SluiceFilteredMessages", "SluiceFilteredMessagesNotVisible",
      "sluice.Filter.customer=acme"] }))).Attributes;
  assert.deepEqual(await depth(),
    { SluiceFilteredMessages: "3", SluiceFilteredMessagesNotVisible: "0" });
  const r = await sqs.send(new S.ReceiveMessageCommand({
    QueueUrl: url, MaxNumberOfMessages: 10, VisibilityTimeout: 60,
    MessageAttributeNames: ["All", "sluice.Filter.customer=acme"] }));
  assert.deepEqual(r.Messages.map((m) => m.Body).sort(), ["acme-0", "acme-2", "acme-5"]);
  for (const m of r.Messages) {
    assert.equal(m.MessageAttributes.customer.StringValue, "acme");
    assert.equal(m.MD5OfMessageAttributes, md5OfMessageAttributes(m.MessageAttributes));
  }
  assert.deepEqual(await depth(),
    { SluiceFilteredMessages: "0", SluiceFilteredMessagesNotVisible: "3" });
  // a filtered long poll with nothing of acme ready returns nothing else
  const empty = await sqs.send(new S.ReceiveMessageCommand({
    QueueUrl: url, MaxNumberOfMessages: 10, WaitTimeSeconds: 1,
    MessageAttributeNames: ["sluice.Filter.customer=acme"] }));
  assert.equal(empty.Messages?.length ?? 0, 0);
  const err = await sqs.send(new S.ReceiveMessageCommand({
    QueueUrl: url, MessageAttributeNames: ["sluice.Filter.customer"] })).then(
    () => null, (e) => e);
  assert.equal(err?.name, "InvalidParameterValue");
  const rest = await sqs.send(new S.ReceiveMessageCommand({ QueueUrl: url, MaxNumberOfMessages: 10 }));
  assert.equal(rest.Messages.length, 4);
});
