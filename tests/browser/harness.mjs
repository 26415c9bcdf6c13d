// harness.mjs -- what the browser tests need around the browser: a real
// sluiced with an admin listener (one tenant), an SQS client small enough
// to need no SDK (AWS JSON 1.0 over HTTP/1.1, signed with SigV4 by
// node:crypto), and Debian's chromium driven by puppeteer-core.
import { execFileSync } from "node:child_process";
import { createHash, createHmac } from "node:crypto";
import { mkdirSync } from "node:fs";
import net from "node:net";
import { join } from "node:path";
import { buildDir, spawnSluiced } from "../js/sluiced.mjs";

export const artifactsDir = join(buildDir, "browser-artifacts");
export const CHROMIUM = process.env.SLUICE_CHROMIUM ?? "/usr/bin/chromium";

export const tenant = { name: "acme", key: "AKIDACME", secret: "acme-secret" };
export const admin = { key: "admin", secret: "admin-secret" };
const REGION = "us-east-1";

// Over TLS, node's fetch would refuse the self-signed certificate; an
// accepted TCP connection says the listener is up.
function tcpOpen(port) {
  return new Promise((resolve) => {
    const socket = net.connect(port, "127.0.0.1", () => { socket.destroy(); resolve(true); });
    socket.on("error", () => resolve(false));
  });
}

async function healthz(port) {
  try {
    return (await fetch(`http://127.0.0.1:${port}/healthz`)).status === 200;
  } catch (_) {
    return false; // not listening yet
  }
}

// A self-signed certificate for 127.0.0.1 in dir (the openssl CLI).
function makeCertificate(dir) {
  execFileSync("openssl", ["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
    "-nodes", "-keyout", join(dir, "server.key"), "-out", join(dir, "server.crt"), "-days", "2",
    "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"], { stdio: "ignore" });
  return [`tls:`, `  cert_file: ${join(dir, "server.crt")}`, `  key_file: ${join(dir, "server.key")}`];
}

// Starts sluiced, with TLS on both listeners when tls is set (the SQS
// client below then does not fit: it speaks cleartext). Resolves to
// { endpoint, adminUrl, stderr, stop }.
export async function startSluiced({ tls = false } = {}) {
  const scheme = tls ? "https" : "http";
  const server = await spawnSluiced("sluice-browser-", ({ dir, port, adminPort }) => [
    ...(tls ? makeCertificate(dir) : []),
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
  ].join("\n") + "\n", tls ? tcpOpen : healthz);
  return {
    ...server,
    endpoint: `${scheme}://127.0.0.1:${server.port}`,
    adminUrl: `${scheme}://127.0.0.1:${server.adminPort}`,
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
