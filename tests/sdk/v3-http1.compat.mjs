// v3-http1.compat.mjs -- the common compatibility flow with the AWS SDK for
// JavaScript v3 as most applications build it: no requestHandler given, so
// the SDK's default NodeHttpHandler speaks HTTP/1.1 (keep-alive).
import { test } from "node:test";
import assert from "node:assert/strict";
import { SQSClient } from "@aws-sdk/client-sqs";
import { tenants } from "./harness.mjs";
import { runFlow, sluicedPerFile } from "./compat-flow.mjs";
import { v3Adapter } from "./compat-v3.mjs";

const ctx = sluicedPerFile();

test("v3 with its default HTTP/1.1 handler runs the common flow", async () => {
  const sqs = new SQSClient({
    region: "us-east-1",
    endpoint: ctx.server.endpoint,
    credentials: { accessKeyId: tenants.alpha.key, secretAccessKey: tenants.alpha.secret },
    maxAttempts: 1,
  });
  const handler = sqs.config.requestHandler;
  assert.equal(handler?.constructor?.name, "NodeHttpHandler", "the default handler is the HTTP/1.1 one");
  try {
    await runFlow(v3Adapter(sqs), ctx.server.endpoint, { prefix: "v3h1" });
  } finally {
    sqs.destroy(); // its keep-alive sockets
  }
});
