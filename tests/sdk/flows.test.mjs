// flows.test.mjs -- the common SQS flows, the way applications run them
// with the stock AWS SDK for JavaScript v3 over HTTP/2. MD5 validation stays
// on (the SDK default), so every body digest sluice returns is checked by
// the SDK itself.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import * as S from "@aws-sdk/client-sqs";
import { Consumer } from "sqs-consumer";
import { startSluiced, sqsClient, tenants, admin } from "./harness.mjs";

let server;
let sqs;
before(async () => {
  server = await startSluiced();
  sqs = sqsClient(server);
});
after(async () => {
  const { code } = await server.stop();
  assert.equal(code, 0, "sluiced exits 0 on SIGTERM");
});

async function createQueue(name, Attributes = {}) {
  const { QueueUrl } = await sqs.send(new S.CreateQueueCommand({ QueueName: name, Attributes }));
  return QueueUrl;
}

async function rejection(promise) {
  try {
    await promise;
  } catch (err) {
    return err;
  }
  assert.fail("the call succeeded but an error was expected");
}

test("create, look up, list, attributes and delete a queue", async () => {
  const url = await createQueue("orders", { VisibilityTimeout: "45" });
  assert.equal(url, `${server.endpoint}/alpha/orders`);
  // Idempotent for the same attributes.
  assert.equal(await createQueue("orders", { VisibilityTimeout: "45" }), url);
  const conflict = await rejection(sqs.send(new S.CreateQueueCommand({
    QueueName: "orders", Attributes: { VisibilityTimeout: "46" } })));
  assert.equal(conflict.name, "QueueNameExists");
  const { QueueUrl } = await sqs.send(new S.GetQueueUrlCommand({ QueueName: "orders" }));
  assert.equal(QueueUrl, url);
  const { QueueUrls } = await sqs.send(new S.ListQueuesCommand({ QueueNamePrefix: "ord" }));
  assert.deepEqual(QueueUrls, [url]);
  const { Attributes } = await sqs.send(new S.GetQueueAttributesCommand({
    QueueUrl: url, AttributeNames: ["All"] }));
  assert.equal(Attributes.VisibilityTimeout, "45");
  assert.equal(Attributes.MaximumMessageSize, "1048576");
  assert.equal(Attributes.QueueArn, "arn:aws:sqs:us-east-1:alpha:orders");
  await sqs.send(new S.SetQueueAttributesCommand({ QueueUrl: url, Attributes: { DelaySeconds: "1" } }));
  const after = await sqs.send(new S.GetQueueAttributesCommand({
    QueueUrl: url, AttributeNames: ["DelaySeconds"] }));
  assert.deepEqual(after.Attributes, { DelaySeconds: "1" });
  await sqs.send(new S.DeleteQueueCommand({ QueueUrl: url }));
  const gone = await rejection(sqs.send(new S.GetQueueUrlCommand({ QueueName: "orders" })));
  assert.equal(gone.name, "QueueDoesNotExist");
});

test("send, receive with attributes, change visibility, delete", async () => {
  const url = await createQueue("work");
  const sent = await sqs.send(new S.SendMessageCommand({
    QueueUrl: url, MessageBody: "hello, sluice",
    MessageAttributes: {
      kind: { DataType: "String", StringValue: "greeting" },
      n: { DataType: "Number", StringValue: "42" },
      blob: { DataType: "Binary", BinaryValue: Buffer.from("bytes") },
    },
    MessageSystemAttributes: { AWSTraceHeader: { DataType: "String", StringValue: "Root=1-5759e988-bd862e3fe1be46a994272793" } },
  }));
  assert.match(sent.MessageId, /^[0-9a-f-]{36}$/);
  assert.ok(sent.MD5OfMessageAttributes, "attribute digest returned");
  assert.ok(sent.MD5OfMessageSystemAttributes, "system attribute digest returned");

  const got = await sqs.send(new S.ReceiveMessageCommand({
    QueueUrl: url, MaxNumberOfMessages: 10, MessageAttributeNames: ["All"],
    MessageSystemAttributeNames: ["All"], VisibilityTimeout: 30 }));
  assert.equal(got.Messages.length, 1);
  const m = got.Messages[0];
  assert.equal(m.Body, "hello, sluice");
  assert.equal(m.MessageId, sent.MessageId);
  assert.equal(m.MD5OfMessageAttributes, sent.MD5OfMessageAttributes);
  assert.equal(m.MessageAttributes.n.StringValue, "42");
  assert.equal(Buffer.from(m.MessageAttributes.blob.BinaryValue).toString(), "bytes");
  assert.equal(m.Attributes.ApproximateReceiveCount, "1");
  assert.equal(m.Attributes.SenderId, "alpha");
  assert.equal(m.Attributes.AWSTraceHeader, "Root=1-5759e988-bd862e3fe1be46a994272793");

  // In flight: invisible to others until the visibility is changed to 0.
  const hidden = await sqs.send(new S.ReceiveMessageCommand({ QueueUrl: url }));
  assert.equal(hidden.Messages, undefined);
  await sqs.send(new S.ChangeMessageVisibilityCommand({
    QueueUrl: url, ReceiptHandle: m.ReceiptHandle, VisibilityTimeout: 0 }));
  const again = await sqs.send(new S.ReceiveMessageCommand({
    QueueUrl: url, MessageSystemAttributeNames: ["ApproximateReceiveCount"] }));
  assert.equal(again.Messages[0].Attributes.ApproximateReceiveCount, "2");
  await sqs.send(new S.DeleteMessageCommand({ QueueUrl: url, ReceiptHandle: again.Messages[0].ReceiptHandle }));
  const { Attributes } = await sqs.send(new S.GetQueueAttributesCommand({
    QueueUrl: url, AttributeNames: ["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"] }));
  assert.deepEqual(Attributes, { ApproximateNumberOfMessages: "0", ApproximateNumberOfMessagesNotVisible: "0" });
});

test("batches: send 10, receive them all, delete in one call", async () => {
  const url = await createQueue("batch");
  const Entries = Array.from({ length: 10 }, (_, i) => ({ Id: `m${i}`, MessageBody: `body ${i}` }));
  const sent = await sqs.send(new S.SendMessageBatchCommand({ QueueUrl: url, Entries }));
  assert.equal(sent.Successful.length, 10);
  assert.equal(sent.Failed?.length ?? 0, 0);
  const bodies = new Set();
  const handles = [];
  for (let i = 0; i < 10 && bodies.size < 10; i++) {
    const r = await sqs.send(new S.ReceiveMessageCommand({ QueueUrl: url, MaxNumberOfMessages: 10 }));
    for (const m of r.Messages ?? []) {
      bodies.add(m.Body);
      handles.push({ Id: `d${handles.length}`, ReceiptHandle: m.ReceiptHandle });
    }
  }
  assert.equal(bodies.size, 10);
  const del = await sqs.send(new S.DeleteMessageBatchCommand({ QueueUrl: url, Entries: handles }));
  assert.equal(del.Successful.length, 10);
  const tooMany = await rejection(sqs.send(new S.SendMessageBatchCommand({
    QueueUrl: url, Entries: Array.from({ length: 11 }, (_, i) => ({ Id: `x${i}`, MessageBody: "x" })) })));
  assert.equal(tooMany.name, "TooManyEntriesInBatchRequest");
});

test("a long poll is woken by a send", async () => {
  const url = await createQueue("wake");
  const started = Date.now();
  const poll = sqs.send(new S.ReceiveMessageCommand({ QueueUrl: url, WaitTimeSeconds: 10 }));
  await new Promise((r) => setTimeout(r, 200));
  await sqs.send(new S.SendMessageCommand({ QueueUrl: url, MessageBody: "wake up" }));
  const r = await poll;
  assert.equal(r.Messages?.[0]?.Body, "wake up");
  assert.ok(Date.now() - started < 9000, "answered by the send, not by the timeout");
});

test("an sqs-consumer worker drains a queue", async () => {
  const url = await createQueue("jobs");
  const total = 25;
  for (let i = 0; i < total; i += 5) {
    await sqs.send(new S.SendMessageBatchCommand({
      QueueUrl: url,
      Entries: Array.from({ length: 5 }, (_, j) => ({ Id: `e${j}`, MessageBody: `job ${i + j}` })) }));
  }
  const seen = new Set();
  await new Promise((resolve, reject) => {
    const worker = Consumer.create({
      queueUrl: url, sqs, batchSize: 10, waitTimeSeconds: 1,
      handleMessage: async (m) => { seen.add(m.Body); if (seen.size === total) { worker.stop(); resolve(); } return m; },
    });
    worker.on("error", reject);
    worker.on("processing_error", reject);
    worker.start();
    setTimeout(() => { worker.stop(); reject(new Error(`drained only ${seen.size}/${total}`)); }, 20000).unref();
  });
  assert.equal(seen.size, total);
  // Everything handled was deleted by the worker.
  await new Promise((r) => setTimeout(r, 300));
  const { Attributes } = await sqs.send(new S.GetQueueAttributesCommand({
    QueueUrl: url, AttributeNames: ["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"] }));
  assert.deepEqual(Attributes, { ApproximateNumberOfMessages: "0", ApproximateNumberOfMessagesNotVisible: "0" });
});

test("a message that keeps failing moves to the dead-letter queue", async () => {
  const dlqUrl = await createQueue("orders-dlq");
  const { Attributes: dlqAttrs } = await sqs.send(new S.GetQueueAttributesCommand({
    QueueUrl: dlqUrl, AttributeNames: ["QueueArn"] }));
  const url = await createQueue("orders-main", {
    RedrivePolicy: JSON.stringify({ deadLetterTargetArn: dlqAttrs.QueueArn, maxReceiveCount: 2 }) });
  const sent = await sqs.send(new S.SendMessageCommand({
    QueueUrl: url, MessageBody: "poison",
    MessageAttributes: { why: { DataType: "String", StringValue: "bad input" } } }));
  for (let i = 0; i < 2; i++) {
    const r = await sqs.send(new S.ReceiveMessageCommand({ QueueUrl: url, VisibilityTimeout: 0 }));
    assert.equal(r.Messages?.length, 1, `receive ${i + 1} gets the message`);
  }
  // The third receive finds the count past maxReceiveCount: moved, not returned.
  const third = await sqs.send(new S.ReceiveMessageCommand({ QueueUrl: url }));
  assert.equal(third.Messages, undefined);
  const d = await sqs.send(new S.ReceiveMessageCommand({
    QueueUrl: dlqUrl, MessageAttributeNames: ["All"], MessageSystemAttributeNames: ["All"] }));
  assert.equal(d.Messages.length, 1);
  const m = d.Messages[0];
  assert.equal(m.MessageId, sent.MessageId);
  assert.equal(m.Body, "poison");
  assert.equal(m.MD5OfMessageAttributes, sent.MD5OfMessageAttributes);
  assert.equal(m.Attributes.DeadLetterQueueSourceArn, "arn:aws:sqs:us-east-1:alpha:orders-main");
  assert.equal(m.Attributes.ApproximateReceiveCount, "3");
  const { queueUrls } = await sqs.send(new S.ListDeadLetterSourceQueuesCommand({ QueueUrl: dlqUrl }));
  assert.deepEqual(queueUrls, [url]);
});

test("tenants are isolated; the admin reaches every tenant's queue", async () => {
  const url = await createQueue("private");
  await sqs.send(new S.SendMessageCommand({ QueueUrl: url, MessageBody: "alpha only" }));
  const beta = sqsClient(server, tenants.beta);
  for (const call of [
    beta.send(new S.ReceiveMessageCommand({ QueueUrl: url })),
    beta.send(new S.SendMessageCommand({ QueueUrl: url, MessageBody: "intruder" })),
    beta.send(new S.GetQueueAttributesCommand({ QueueUrl: url, AttributeNames: ["All"] })),
    beta.send(new S.GetQueueUrlCommand({ QueueName: "private", QueueOwnerAWSAccountId: "alpha" })),
  ]) {
    const err = await rejection(call);
    assert.equal(err.name, "QueueDoesNotExist");
  }
  // Same name, another tenant: another queue.
  const betaUrl = (await beta.send(new S.CreateQueueCommand({ QueueName: "private" }))).QueueUrl;
  assert.equal(betaUrl, `${server.endpoint}/beta/private`);
  const empty = await beta.send(new S.ReceiveMessageCommand({ QueueUrl: betaUrl }));
  assert.equal(empty.Messages, undefined);
  // The admin lists everything and can read alpha's queue through its URL.
  const root = sqsClient(server, admin);
  const { QueueUrls } = await root.send(new S.ListQueuesCommand({ QueueNamePrefix: "private" }));
  assert.deepEqual(QueueUrls.sort(), [url, betaUrl].sort());
  const r = await root.send(new S.ReceiveMessageCommand({ QueueUrl: url }));
  assert.equal(r.Messages?.[0]?.Body, "alpha only");
});
