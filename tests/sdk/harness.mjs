// harness.mjs -- starts a real sluiced for the SDK tests and builds SDK
// clients that talk HTTP/2 to it, the way an application would.
import { spawn } from "node:child_process";
import { mkdtempSync, writeFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import net from "node:net";
import http2 from "node:http2";
import { SQSClient } from "@aws-sdk/client-sqs";
import { NodeHttp2Handler } from "@smithy/node-http-handler";

const buildDir = process.env.SLUICE_BUILD_DIR ?? new URL("../../build", import.meta.url).pathname;

function freePort() {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.listen(0, "127.0.0.1", () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
    srv.on("error", reject);
  });
}

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
  const dir = mkdtempSync(join(tmpdir(), "sluice-sdk-"));
  const port = await freePort();
  const adminPort = await freePort();
  const config = [
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
  ].join("\n") + "\n";
  writeFileSync(join(dir, "sluice.yaml"), config);
  const child = spawn(join(buildDir, "sluiced"), ["--config", join(dir, "sluice.yaml")], {
    stdio: ["ignore", "inherit", "pipe"],
  });
  let stderr = "";
  child.stderr.on("data", (d) => { stderr += d; });
  const exited = new Promise((resolve) => child.on("exit", (code, signal) => resolve({ code, signal })));
  for (let i = 0; i < 200; i++) {
    if (await healthz(port)) break;
    if (child.exitCode !== null) throw new Error(`sluiced exited early: ${stderr}`);
    await new Promise((r) => setTimeout(r, 50));
    if (i === 199) { child.kill("SIGKILL"); throw new Error(`sluiced did not become healthy: ${stderr}`); }
  }
  return {
    port,
    endpoint: `http://127.0.0.1:${port}`,
    stderr: () => stderr,
    async stop() {
      child.kill("SIGTERM");
      const result = await exited;
      rmSync(dir, { recursive: true, force: true });
      return result;
    },
  };
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
