// compat-flow.mjs -- the one SQS flow every JavaScript client of the
// compatibility tier runs (the v2 SDK over the query protocol, the v3 SDK
// over HTTP/1.1 and HTTP/2), the same as tests/compat/sqs_flow.py runs for
// boto3 and the aws CLI. A client is an adapter:
//   call(op, params)      op as the API names it (CreateQueue), params and
//                         result in the SDK's shapes
//   errorCode(op, params) runs a call that must fail; checks the SDK's own
//                         error type and returns the SQS code it carries
// The SDKs check MD5OfMessageBody themselves (left on); the flow also
// checks MD5OfMessageAttributes, which neither SDK verifies.
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { after, before } from "node:test";
import { startSluiced } from "./harness.mjs";

const TRACE = "Root=1-5759e988-bd862e3fe1be46a994272793";
const region = "us-east-1";

// One sluiced for the calling test file: started before its tests and
// stopped after them, when it must exit 0 on SIGTERM. The returned object's
// server is set once it runs.
export function sluicedPerFile() {
  const ctx = { server: null };
  before(async () => { ctx.server = await startSluiced(); });
  after(async () => {
    const { code } = await ctx.server.stop();
    assert.equal(code, 0, "sluiced exits 0 on SIGTERM");
  });
  return ctx;
}

const md5 = (data) => createHash("md5").update(data).digest("hex");

function lengthPrefixed(buf) {
  const len = Buffer.alloc(4);
  len.writeUInt32BE(buf.length);
  return Buffer.concat([len, buf]);
}

// SQS's digest of message attributes ("Calculating the MD5 message digest
// for message attributes", Amazon SQS Developer Guide): per attribute in
// name order, the length-prefixed name and data type, a transport byte (1
// string, 2 binary) and the length-prefixed value.
export function md5OfMessageAttributes(attrs) {
  const h = createHash("md5");
  for (const name of Object.keys(attrs).sort()) {
    const a = attrs[name];
    h.update(lengthPrefixed(Buffer.from(name)));
    h.update(lengthPrefixed(Buffer.from(a.DataType)));
    if (a.BinaryValue !== undefined) {
      h.update(Buffer.from([2]));
      h.update(lengthPrefixed(Buffer.from(a.BinaryValue)));
    } else {
      h.update(Buffer.from([1]));
      h.update(lengthPrefixed(Buffer.from(a.StringValue)));
    }
  }
  return h.digest("hex");
}

// Attributes with Binary values as Buffers, comparable with deepEqual.
function plain(attrs) {
  return Object.fromEntries(Object.entries(attrs).map(([k, a]) => {
    const out = { DataType: a.DataType };
    if (a.BinaryValue !== undefined && a.BinaryValue !== null) out.BinaryValue = Buffer.from(a.BinaryValue);
    if (a.StringValue !== undefined && a.StringValue !== null) out.StringValue = a.StringValue;
    return [k, out];
  }));
}

function checkSent(what, reply, body, attrs) {
  assert.equal(reply.MD5OfMessageBody, md5(body), `${what}: MD5OfMessageBody`);
  if (attrs) assert.equal(reply.MD5OfMessageAttributes, md5OfMessageAttributes(attrs), `${what}: MD5OfMessageAttributes`);
  assert.match(reply.MessageId ?? "", /^[0-9a-f-]{36}$/, `${what}: MessageId`);
}

async function receiveAll(client, url, want, params = {}) {
  const got = new Map();
  const deadline = Date.now() + 10000;
  while (got.size < want && Date.now() < deadline) {
    const r = await client.call("ReceiveMessage", { QueueUrl: url, MaxNumberOfMessages: 10, WaitTimeSeconds: 1, ...params });
    for (const m of r.Messages ?? []) got.set(m.MessageId, m);
  }
  assert.equal(got.size, want, `messages received from ${url}`);
  return got;
}

async function counts(client, url) {
  const { Attributes } = await client.call("GetQueueAttributes", {
    QueueUrl: url, AttributeNames: ["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"] });
  return [Attributes.ApproximateNumberOfMessages, Attributes.ApproximateNumberOfMessagesNotVisible];
}

// Runs the flow; a failure names the step it happened in.
export async function runFlow(client, endpoint, { tenant = "alpha", prefix = "compat", log = console.log } = {}) {
  let current = "start";
  const step = (title) => { current = title; log(`step: ${title}`); };
  try {
    await flow(client, endpoint, tenant, prefix, step);
  } catch (err) {
    // An answer the SDK could not parse (say a 505 from a server without
    // HTTP/1.1) hides its status in $response: show it.
    const status = err.$response?.statusCode ? ` (HTTP ${err.$response.statusCode})` : "";
    err.message = `in step '${current}': ${err.message}${status}`;
    throw err;
  }
}

async function flow(client, endpoint, tenant, prefix, step) {
  const name = `${prefix}-main`;
  const dlqName = `${prefix}-dlq`;

  step("create a queue with attributes and tags");
  const url = (await client.call("CreateQueue", {
    QueueName: name,
    Attributes: { VisibilityTimeout: "30", MessageRetentionPeriod: "3600", MaximumMessageSize: "262144" },
    tags: { team: "compat" },
  })).QueueUrl;
  assert.equal(url, `${endpoint}/${tenant}/${name}`, "CreateQueue's QueueUrl");
  let a = (await client.call("GetQueueAttributes", { QueueUrl: url, AttributeNames: ["All"] })).Attributes;
  assert.equal(a.VisibilityTimeout, "30");
  assert.equal(a.MessageRetentionPeriod, "3600");
  assert.equal(a.MaximumMessageSize, "262144");
  assert.equal(a.QueueArn, `arn:aws:sqs:${region}:${tenant}:${name}`);
  assert.equal((await client.call("GetQueueUrl", { QueueName: name })).QueueUrl, url, "GetQueueUrl");

  step("send with String, Number and Binary attributes");
  const attrs = {
    kind: { DataType: "String", StringValue: "greeting \u00e9\u4e2d" },
    n: { DataType: "Number", StringValue: "42.5" },
    blob: { DataType: "Binary", BinaryValue: Buffer.from([0, 1, 98, 121, 116, 101, 115, 255]) },
  };
  const body = "hello, sluice \u2603";
  const sent = await client.call("SendMessage", {
    QueueUrl: url, MessageBody: body, MessageAttributes: attrs,
    MessageSystemAttributes: { AWSTraceHeader: { DataType: "String", StringValue: TRACE } },
  });
  checkSent("SendMessage", sent, body, attrs);
  assert.ok(sent.MD5OfMessageSystemAttributes, "SendMessage: MD5OfMessageSystemAttributes");

  step("send a batch");
  const entries = [0, 1, 2].map((i) => ({ Id: `e${i}`, MessageBody: `batch body ${i}` }));
  entries[1].MessageAttributes = attrs;
  entries[2].DelaySeconds = 0;
  const batch = await client.call("SendMessageBatch", { QueueUrl: url, Entries: entries });
  assert.equal(batch.Failed?.length ?? 0, 0, "SendMessageBatch: Failed");
  assert.deepEqual(batch.Successful.map((e) => e.Id).sort(), ["e0", "e1", "e2"]);
  for (const e of batch.Successful) {
    const i = Number(e.Id.slice(1));
    checkSent(`SendMessageBatch entry ${e.Id}`, e, entries[i].MessageBody, i === 1 ? attrs : null);
  }

  step("receive with system and message attribute names");
  const got = await receiveAll(client, url, 4, { AttributeNames: ["All"], MessageAttributeNames: ["All"], VisibilityTimeout: 30 });
  assert.ok(got.has(sent.MessageId), "the single send is among the received");
  for (const m of got.values()) {
    assert.equal(m.MD5OfBody, md5(m.Body), `MD5OfBody of ${m.MessageId}`);
    assert.equal(m.Attributes.ApproximateReceiveCount, "1");
    assert.equal(m.Attributes.SenderId, tenant);
    assert.match(m.Attributes.SentTimestamp, /^\d+$/);
    if (m.MessageAttributes) {
      assert.deepEqual(plain(m.MessageAttributes), plain(attrs), "message attributes received");
      assert.equal(m.MD5OfMessageAttributes, md5OfMessageAttributes(attrs), "MD5OfMessageAttributes received");
    }
  }
  const one = got.get(sent.MessageId);
  assert.equal(one.Body, body);
  assert.equal(one.Attributes.AWSTraceHeader, TRACE);
  assert.equal([...got.values()].filter((m) => m.MessageAttributes).length, 2, "messages carrying attributes");

  step("change visibility");
  await client.call("ChangeMessageVisibility", { QueueUrl: url, ReceiptHandle: one.ReceiptHandle, VisibilityTimeout: 0 });
  const again = await receiveAll(client, url, 1, { AttributeNames: ["ApproximateReceiveCount"] });
  const back = again.get(sent.MessageId);
  assert.ok(back, "the message made visible again is received");
  assert.equal(back.Attributes.ApproximateReceiveCount, "2");
  got.set(back.MessageId, back);

  step("delete a batch");
  const del = await client.call("DeleteMessageBatch", {
    QueueUrl: url, Entries: [...got.values()].map((m, i) => ({ Id: `d${i}`, ReceiptHandle: m.ReceiptHandle })) });
  assert.equal(del.Failed?.length ?? 0, 0, "DeleteMessageBatch: Failed");
  assert.equal(del.Successful.length, 4);
  assert.deepEqual(await counts(client, url), ["0", "0"], "visible and in flight after the delete");

  step("redrive policy: a message reaches the dead-letter queue");
  const dlq = (await client.call("CreateQueue", { QueueName: dlqName })).QueueUrl;
  const dlqArn = (await client.call("GetQueueAttributes", { QueueUrl: dlq, AttributeNames: ["QueueArn"] })).Attributes.QueueArn;
  const policy = JSON.stringify({ deadLetterTargetArn: dlqArn, maxReceiveCount: 1 });
  await client.call("SetQueueAttributes", { QueueUrl: url, Attributes: { RedrivePolicy: policy } });
  a = (await client.call("GetQueueAttributes", { QueueUrl: url, AttributeNames: ["RedrivePolicy"] })).Attributes;
  assert.deepEqual(JSON.parse(a.RedrivePolicy), JSON.parse(policy), "RedrivePolicy read back");
  const poison = await client.call("SendMessage", { QueueUrl: url, MessageBody: "poison" });
  const first = await client.call("ReceiveMessage", { QueueUrl: url, VisibilityTimeout: 0, WaitTimeSeconds: 1 });
  assert.deepEqual((first.Messages ?? []).map((m) => m.Body), ["poison"], "first receive gets the message");
  // The second receive finds the count past maxReceiveCount: moved, not returned.
  const second = await client.call("ReceiveMessage", { QueueUrl: url, WaitTimeSeconds: 0 });
  assert.deepEqual(second.Messages ?? [], [], "second receive from the source queue");
  const dead = (await receiveAll(client, dlq, 1, { AttributeNames: ["All"] })).get(poison.MessageId);
  assert.ok(dead, "the poison message is in the DLQ");
  assert.equal(dead.Body, "poison");
  assert.equal(dead.Attributes.DeadLetterQueueSourceArn, `arn:aws:sqs:${region}:${tenant}:${name}`);

  step("list queues, tags and dead-letter source queues");
  const listed = (await client.call("ListQueues", { QueueNamePrefix: `${prefix}-` })).QueueUrls ?? [];
  assert.deepEqual([...listed].sort(), [url, dlq].sort(), "ListQueues");
  await client.call("TagQueue", { QueueUrl: url, Tags: { stage: "test", owner: "sluice" } });
  await client.call("UntagQueue", { QueueUrl: url, TagKeys: ["owner"] });
  assert.deepEqual((await client.call("ListQueueTags", { QueueUrl: url })).Tags, { team: "compat", stage: "test" });
  assert.deepEqual((await client.call("ListDeadLetterSourceQueues", { QueueUrl: dlq })).queueUrls, [url]);

  step("purge");
  for (let i = 0; i < 3; i++) await client.call("SendMessage", { QueueUrl: url, MessageBody: `to purge ${i}` });
  assert.deepEqual(await counts(client, url), ["3", "0"], "before the purge");
  await client.call("PurgeQueue", { QueueUrl: url });
  assert.deepEqual(await counts(client, url), ["0", "0"], "after the purge");

  step("delete the queues");
  await client.call("DeleteQueue", { QueueUrl: url });
  await client.call("DeleteQueue", { QueueUrl: dlq });
  assert.deepEqual((await client.call("ListQueues", { QueueNamePrefix: `${prefix}-` })).QueueUrls ?? [], []);

  step("a typed error: a queue that does not exist");
  assert.equal(await client.errorCode("GetQueueUrl", { QueueName: name }), "AWS.SimpleQueueService.NonExistentQueue");
  assert.equal(await client.errorCode("SendMessage", { QueueUrl: `${endpoint}/${tenant}/${prefix}-never`, MessageBody: "x" }),
    "AWS.SimpleQueueService.NonExistentQueue");
}
