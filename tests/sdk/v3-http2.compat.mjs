// v3-http2.compat.mjs -- the common compatibility flow with the AWS SDK for
// JavaScript v3 over HTTP/2 (NodeHttp2Handler, prior knowledge).
import { test } from "node:test";
import { sqsClient } from "./harness.mjs";
import { runFlow, sluicedPerFile } from "./compat-flow.mjs";
import { v3Adapter } from "./compat-v3.mjs";

const ctx = sluicedPerFile();

test("v3 over HTTP/2 runs the common flow", async () => {
  await runFlow(v3Adapter(sqsClient(ctx.server)), ctx.server.endpoint, { prefix: "v3h2" });
});
