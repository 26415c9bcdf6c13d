// fifo.test.mjs -- FIFO queues with the stock AWS SDK for JavaScript v3 over
// HTTP/2: the flow an application runs (create, send with groups and
// deduplication ids, batch, receive in group order, delete), the SDK's own
// error names for the FIFO rules, and sqs-consumer draining a FIFO queue
// of several groups while the test asserts each group's order, and a
// receive retried with its ReceiveRequestAttemptId. The server
// runs a shard of two partitions, so a high-throughput queue's groups live
// on both.
import { test } from "node:test";
import assert from "node:assert/strict";
import * as S from "@aws-sdk/client-sqs";
import { Consumer } from "sqs-consumer";
import { sqsClient } from "./harness.mjs";
import { sluicedPerFile } from "./compat-flow.mjs";

const ctx = sluicedPerFile();
let client;
const sqs = { send: (cmd) => (client ??= sqsClient(ctx.server)).send(cmd) };

async function rejection(promise) {
  try {
    await promise;
  } catch (err) {
    return err;
  }
  assert.fail("the call succeeded but an error was expected");
}

async function fifoQueue(name, attrs = {}) {
  const { QueueUrl } = await sqs.send(new S.CreateQueueCommand({
    QueueName: name, Attributes: { FifoQueue: "true", ...attrs } }));
  return QueueUrl;
}

test("a FIFO flow: groups, deduplication, sequence numbers, order", async () => {
  const url = await fifoQueue("orders.fifo", { ContentBasedDeduplication: "true" });
  const { Attributes } = await sqs.send(new S.GetQueueAttributesCommand({
    QueueUrl: url, AttributeNames: ["All"] }));
  assert.equal(Attributes.FifoQueue, "true");
  assert.equal(Attributes.ContentBasedDeduplication, "true");
  assert.equal(Attributes.DeduplicationScope, "queue");

  const a = await sqs.send(new S.SendMessageCommand({
    QueueUrl: url, MessageBody: "order 1 created", MessageGroupId: "order-1" }));
  assert.match(a.SequenceNumber, /^\d{20}$/);
  // The same body again: content-based deduplication answers the first.
  const dup = await sqs.send(new S.SendMessageCommand({
    QueueUrl: url, MessageBody: "order 1 created", MessageGroupId: "order-1" }));
  assert.equal(dup.MessageId, a.MessageId);
  assert.equal(dup.SequenceNumber, a.SequenceNumber);
  const batch = await sqs.send(new S.SendMessageBatchCommand({
    QueueUrl: url,
    Entries: [
      { Id: "b1", MessageBody: "order 2 created", MessageGroupId: "order-2" },
      { Id: "b2", MessageBody: "order 1 paid", MessageGroupId: "order-1" },
      { Id: "b3", MessageBody: "order 1 shipped", MessageGroupId: "order-1",
        MessageDeduplicationId: "ship-1" },
    ],
  }));
  assert.equal(batch.Successful.length, 3);
  const seqs = batch.Successful.map((e) => BigInt(e.SequenceNumber));
  assert.ok(seqs[0] > BigInt(a.SequenceNumber) && seqs[1] > seqs[0] && seqs[2] > seqs[1]);

  // One receive: all of order-1's messages in order (SQS fills from one
  // group first), then order-2's.
  const r = await sqs.send(new S.ReceiveMessageCommand({
    QueueUrl: url, MaxNumberOfMessages: 10, MessageSystemAttributeNames: ["All"] }));
  assert.deepEqual(r.Messages.map((m) => m.Body),
    ["order 1 created", "order 1 paid", "order 1 shipped", "order 2 created"]);
  assert.equal(r.Messages[2].Attributes.MessageDeduplicationId, "ship-1");
  assert.equal(r.Messages[0].Attributes.MessageGroupId, "order-1");
  assert.equal(r.Messages[0].Attributes.SequenceNumber, a.SequenceNumber);
  // Both groups are in flight: nothing more until they are deleted.
  const none = await sqs.send(new S.ReceiveMessageCommand({ QueueUrl: url }));
  assert.equal(none.Messages, undefined);
  await sqs.send(new S.DeleteMessageBatchCommand({
    QueueUrl: url,
    Entries: r.Messages.map((m, i) => ({ Id: `d${i}`, ReceiptHandle: m.ReceiptHandle })),
  }));
});

test("a receive retried with its ReceiveRequestAttemptId gets the same messages", async () => {
  const url = await fifoQueue("retry.fifo", { ContentBasedDeduplication: "true" });
  for (const [body, group] of [["a1", "a"], ["b1", "b"], ["a2", "a"]]) {
    await sqs.send(new S.SendMessageCommand({ QueueUrl: url, MessageBody: body,
      MessageGroupId: group }));
  }
  const receive = (id) => sqs.send(new S.ReceiveMessageCommand({
    QueueUrl: url, MaxNumberOfMessages: 10, VisibilityTimeout: 60,
    ReceiveRequestAttemptId: id }));
  const first = await receive("sdk-attempt-1");
  assert.deepEqual(first.Messages.map((m) => m.Body), ["a1", "a2", "b1"]);
  // As an application retries after a lost reply: same messages, handles, order.
  const again = await receive("sdk-attempt-1");
  assert.deepEqual(again.Messages.map((m) => m.ReceiptHandle),
    first.Messages.map((m) => m.ReceiptHandle));
  // Another attempt is a new receive: every group is in flight.
  const other = await receive("sdk-attempt-2");
  assert.equal(other.Messages, undefined);
  await sqs.send(new S.DeleteMessageBatchCommand({
    QueueUrl: url,
    Entries: again.Messages.map((m, i) => ({ Id: `d${i}`, ReceiptHandle: m.ReceiptHandle })),
  }));
});

test("the FIFO rules answer with SQS's errors", async () => {
  const url = await fifoQueue("rules.fifo");
  const noGroup = await rejection(sqs.send(new S.SendMessageCommand({
    QueueUrl: url, MessageBody: "x", MessageDeduplicationId: "d" })));
  assert.equal(noGroup.name, "MissingParameter"); // the query code, as the SDK names it
  assert.equal(noGroup.Code, "MissingParameter");
  const noDedup = await rejection(sqs.send(new S.SendMessageCommand({
    QueueUrl: url, MessageBody: "x", MessageGroupId: "g" })));
  assert.equal(noDedup.Code, "InvalidParameterValue");
  const delay = await rejection(sqs.send(new S.SendMessageCommand({
    QueueUrl: url, MessageBody: "x", MessageGroupId: "g", MessageDeduplicationId: "d",
    DelaySeconds: 5 })));
  assert.equal(delay.Code, "InvalidParameterValue");
  const typeChange = await rejection(sqs.send(new S.SetQueueAttributesCommand({
    QueueUrl: url, Attributes: { FifoQueue: "false" } })));
  assert.equal(typeChange.name, "InvalidAttributeValue");
  const badName = await rejection(sqs.send(new S.CreateQueueCommand({
    QueueName: "nosuffix", Attributes: { FifoQueue: "true" } })));
  assert.equal(badName.Code, "InvalidParameterValue");
  const { Attributes } = await sqs.send(new S.GetQueueAttributesCommand({
    QueueUrl: url, AttributeNames: ["ApproximateNumberOfMessages"] }));
  assert.equal(Attributes.ApproximateNumberOfMessages, "0", "nothing refused was stored");
});

test("sqs-consumer drains a FIFO queue of several groups in each group's order", async () => {
  const url = await fifoQueue("work.fifo", {
    DeduplicationScope: "messageGroup", FifoThroughputLimit: "perMessageGroupId" });
  const groups = 6;
  const perGroup = 20;
  for (let n = 0; n < perGroup; n += 1) {
    await sqs.send(new S.SendMessageBatchCommand({
      QueueUrl: url,
      Entries: Array.from({ length: groups }, (_, g) => ({
        Id: `g${g}`, MessageBody: `${g}:${n}`, MessageGroupId: `group-${g}`,
        MessageDeduplicationId: `${g}-${n}`,
      })),
    }));
  }
  const next = new Array(groups).fill(0);
  const violations = [];
  let handled = 0;
  let worker;
  await new Promise((resolve, reject) => {
    worker = Consumer.create({
      queueUrl: url,
      sqs: sqsClient(ctx.server),
      batchSize: 10,
      waitTimeSeconds: 1,
      suppressFifoWarning: true,
      handleMessage: async (m) => {
        const [g, n] = m.Body.split(":").map(Number);
        if (n !== next[g]) violations.push(`group ${g}: got ${n}, expected ${next[g]}`);
        next[g] = n + 1;
        handled += 1;
        if (handled === groups * perGroup) resolve();
        return m;
      },
    });
    worker.on("error", reject);
    worker.on("processing_error", reject);
    worker.start();
    setTimeout(() => reject(new Error(`drained only ${handled}/${groups * perGroup}`)), 30000)
      .unref();
  }).finally(() => worker.stop());
  assert.deepEqual(violations, []);
  assert.deepEqual(next, new Array(groups).fill(perGroup));
});
