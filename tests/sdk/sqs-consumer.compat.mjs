// sqs-consumer.compat.mjs -- sqs-consumer as its README shows it: given a
// queue URL and a handler, no SQS client of ours. It then builds its own v3
// SQSClient with the default HTTP/1.1 handler, takes the endpoint from the
// queue URL (useQueueUrlAsEndpoint) and the credentials from the
// environment, like any deployed worker.
import { test } from "node:test";
import assert from "node:assert/strict";
import * as S from "@aws-sdk/client-sqs";
import { Consumer } from "sqs-consumer";
import { sqsClient, tenants } from "./harness.mjs";
import { sluicedPerFile } from "./compat-flow.mjs";

const ctx = sluicedPerFile();

test("an sqs-consumer worker with its own client drains a queue", async () => {
  // Seeded over HTTP/2, so that only the consumer depends on HTTP/1.1.
  const seed = sqsClient(ctx.server);
  const { QueueUrl: url } = await seed.send(new S.CreateQueueCommand({ QueueName: "consumed" }));
  const total = 15;
  for (let i = 0; i < total; i += 5) {
    await seed.send(new S.SendMessageBatchCommand({
      QueueUrl: url,
      Entries: Array.from({ length: 5 }, (_, j) => ({
        Id: `e${j}`, MessageBody: `job ${i + j}`,
        MessageAttributes: { n: { DataType: "Number", StringValue: String(i + j) } },
      })),
    }));
  }
  // The credential chain reads these first; no file of the user's is used.
  Object.assign(process.env, {
    AWS_ACCESS_KEY_ID: tenants.alpha.key,
    AWS_SECRET_ACCESS_KEY: tenants.alpha.secret,
    AWS_CONFIG_FILE: "/dev/null",
    AWS_SHARED_CREDENTIALS_FILE: "/dev/null",
  });
  delete process.env.AWS_PROFILE;
  delete process.env.AWS_SESSION_TOKEN;
  const seen = new Map();
  let worker;
  await new Promise((resolve, reject) => {
    worker = Consumer.create({
      queueUrl: url,
      region: "us-east-1",
      batchSize: 10,
      waitTimeSeconds: 1,
      messageAttributeNames: ["All"],
      handleMessage: async (m) => {
        seen.set(m.Body, m.MessageAttributes?.n?.StringValue);
        if (seen.size === total) resolve();
        return m;
      },
    });
    worker.on("error", reject);
    worker.on("processing_error", reject);
    worker.start();
    setTimeout(() => reject(new Error(`drained only ${seen.size}/${total}`)), 20000).unref();
  }).finally(() => worker.stop());
  assert.equal(seen.size, total);
  for (const [body, n] of seen) assert.equal(body, `job ${n}`, "attributes travel with their message");
  // Everything handled was deleted by the worker.
  await new Promise((r) => setTimeout(r, 300));
  const { Attributes } = await seed.send(new S.GetQueueAttributesCommand({
    QueueUrl: url, AttributeNames: ["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"] }));
  assert.deepEqual(Attributes, { ApproximateNumberOfMessages: "0", ApproximateNumberOfMessagesNotVisible: "0" });
});
