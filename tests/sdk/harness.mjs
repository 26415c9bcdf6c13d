// harness.mjs -- starts a real sluiced for the SDK tests and builds SDK
// clients that talk HTTP/2 to it, the way an application would.
import http2 from "node:http2";
import { SQSClient } from "@aws-sdk/client-sqs";
import { NodeHttp2Handler } from "@smithy/node-http-handler";
import { spawnSluiced } from "../js/sluiced.mjs";

function healthz(port) {
  return new Promise((resolve) => {
    const client = http2.connect(`http://127.0.0.1:${port}`);
    client.on("error", () => resolve(false));
    const req = client.request({ ":path": "/healthz" });
    req.on("response", (h) => {
      req.resume();
      req.on("end", () => { client.close(); resolve(h[":status"] === 200); });
    });
    req.on("error", () => { client.close(); resolve(false); });
    req.end();
  });
}

export const tenants = {
  alpha: { key: "AKIDALPHA", secret: "alpha-secret" },
  beta: { key: "AKIDBETA", secret: "beta-secret" },
};
export const admin = { key: "admin", secret: "admin-secret" };

// Starts sluiced on a free port with two tenants (and extraYaml appended
// under tenants' limits if given). Resolves to { port, endpoint, stop }.
export async function startSluiced(extraYaml = "") {
  const server = await spawnSluiced("sluice-sdk-", ({ dir, port, adminPort }) => [
    `listen: 127.0.0.1:${port}`,
    `region: us-east-1`,
    `data_dir: ${dir}/data`,
    `partitions: 4`,
    `shard_size: 2`,
    `durability: os`,
    `io_threads: 2`,
    `log_requests: false`,
    `admin:`,
    `  listen: 127.0.0.1:${adminPort}`,
    `  access_key_id: ${admin.key}`,
    `  secret_access_key: ${admin.secret}`,
    `tenants:`,
    ...Object.entries(tenants).flatMap(([name, t]) => [
      `  ${name}:`, `    access_key_id: ${t.key}`, `    secret_access_key: ${t.secret}`,
    ]),
    extraYaml,
  ].join("\n") + "\n", healthz);
  return { ...server, endpoint: `http://127.0.0.1:${server.port}` };
}

// A stock SQS client over HTTP/2 (prior knowledge, as docs/design.md says).
// MD5 validation stays on (the SDK default).
export function sqsClient(server, cred = tenants.alpha, opts = {}) {
  return new SQSClient({
    region: "us-east-1",
    endpoint: server.endpoint,
    credentials: { accessKeyId: cred.key, secretAccessKey: cred.secret },
    requestHandler: new NodeHttp2Handler({ requestTimeout: 30000 }),
    maxAttempts: 1,
    ...opts,
  });
}
