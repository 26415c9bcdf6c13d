// v3-http2.compat.mjs -- the common compatibility flow with the AWS SDK for
// JavaScript v3 over HTTP/2 (NodeHttp2Handler, prior knowledge).
import { test, after, before } from "node:test";
import assert from "node:assert/strict";
import { startSluiced, sqsClient } from "./harness.mjs";
import { runFlow } from "./compat-flow.mjs";
import { v3Adapter } from "./compat-v3.mjs";

let server;
before(async () => { server = await startSluiced(); });
after(async () => {
  const { code } = await server.stop();
  assert.equal(code, 0, "sluiced exits 0 on SIGTERM");
});

test("v3 over HTTP/2 runs the common flow", async () => {
  await runFlow(v3Adapter(sqsClient(server)), server.endpoint, { prefix: "v3h2" });
});
