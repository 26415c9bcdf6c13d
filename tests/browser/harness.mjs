// harness.mjs -- what the browser tests need around the browser: a real
// sluiced with an admin listener (one tenant), an SQS client small enough
// to need no SDK (AWS JSON 1.0 over HTTP/1.1, signed with SigV4 by
// node:crypto), and Debian's chromium driven by puppeteer-core.
import { spawn } from "node:child_process";
import { createHash, createHmac } from "node:crypto";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import net from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";

const buildDir = process.env.SLUICE_BUILD_DIR ?? new URL("../../build", import.meta.url).pathname;
export const artifactsDir = join(buildDir, "browser-artifacts");
export const CHROMIUM = process.env.SLUICE_CHROMIUM ?? "/usr/bin/chromium";

export const tenant = { name: "acme", key: "AKIDACME", secret: "acme-secret" };
export const admin = { key: "admin", secret: "admin-secret" };
const REGION = "us-east-1";

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

// Starts sluiced; resolves to { endpoint, adminUrl, stop }.
export async function startSluiced() {
  const dir = mkdtempSync(join(tmpdir(), "sluice-browser-"));
  const port = await freePort();
  const adminPort = await freePort();
  const config = [
    `listen: 127.0.0.1:${port}`,
    `region: ${REGION}`,
    `data_dir: ${dir}/data`,
    `partitions: 4`,
    `shard_size: 2`,
    `durability: os`,
    `io_threads: 2`,
    `admin:`,
    `  listen: 127.0.0.1:${adminPort}`,
    `  access_key_id: ${admin.key}`,
    `  secret_access_key: ${admin.secret}`,
    `tenants:`,
    `  ${tenant.name}:`,
    `    access_key_id: ${tenant.key}`,
    `    secret_access_key: ${tenant.secret}`,
  ].join("\n") + "\n";
  writeFileSync(join(dir, "sluice.yaml"), config);
  const child = spawn(join(buildDir, "sluiced"), ["--config", join(dir, "sluice.yaml")], {
    stdio: ["ignore", "inherit", "pipe"],
  });
  let stderr = "";
  child.stderr.on("data", (d) => { stderr += d; });
  const exited = new Promise((resolve) => child.on("exit", (code, signal) => resolve({ code, signal })));
  const endpoint = `http://127.0.0.1:${port}`;
  for (let i = 0; ; i++) {
    try {
      const r = await fetch(`${endpoint}/healthz`);
      if (r.status === 200) break;
    } catch (_) { /* not listening yet */ }
    if (child.exitCode !== null) throw new Error(`sluiced exited early: ${stderr}`);
    if (i === 200) {
      child.kill("SIGKILL");
      throw new Error(`sluiced did not become healthy: ${stderr}`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  return {
    endpoint,
    adminUrl: `http://127.0.0.1:${adminPort}`,
    stderr: () => stderr,
    async stop() {
      child.kill("SIGTERM");
      const result = await exited;
      rmSync(dir, { recursive: true, force: true });
      return result;
    },
  };
}

const sha256 = (s) => createHash("sha256").update(s).digest("hex");
const hmac = (k, s) => createHmac("sha256", k).update(s).digest();

// One SQS call (AWS JSON 1.0), signed with SigV4 as the SDKs sign it.
// Resolves to the parsed answer; rejects with the SQS error.
export async function sqs(server, action, input, cred = tenant) {
  const url = new URL(server.endpoint);
  const body = JSON.stringify(input);
  const now = new Date();
  const amzDate = now.toISOString().replace(/[-:]/g, "").replace(/\.\d+Z$/, "Z");
  const day = amzDate.slice(0, 8);
  const headers = {
    "content-type": "application/x-amz-json-1.0",
    host: url.host,
    "x-amz-date": amzDate,
    "x-amz-target": `AmazonSQS.${action}`,
  };
  const names = Object.keys(headers).sort();
  const canonical = ["POST", "/", "", ...names.map((n) => `${n}:${headers[n]}`), "",
    names.join(";"), sha256(body)].join("\n");
  const scope = `${day}/${REGION}/sqs/aws4_request`;
  const toSign = ["AWS4-HMAC-SHA256", amzDate, scope, sha256(canonical)].join("\n");
  let key = hmac(`AWS4${cred.secret}`, day);
  for (const part of [REGION, "sqs", "aws4_request"]) key = hmac(key, part);
  const signature = createHmac("sha256", key).update(toSign).digest("hex");
  headers.authorization =
    `AWS4-HMAC-SHA256 Credential=${cred.key}/${scope}, SignedHeaders=${names.join(";")}, Signature=${signature}`;
  delete headers.host;
  const r = await fetch(`${server.endpoint}/`, { method: "POST", headers, body });
  const answer = await r.json();
  if (!r.ok) throw new Error(`${action}: ${r.status} ${answer.__type}: ${answer.message}`);
  return answer;
}

// Calls poll until it returns a truthy value; rejects after timeoutMs.
export async function until(what, poll, timeoutMs = 20000, everyMs = 100) {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const v = await poll();
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

export function ensureArtifactsDir() {
  mkdirSync(artifactsDir, { recursive: true });
  return artifactsDir;
}
