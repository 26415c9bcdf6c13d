// gen_smithy_vectors.mjs -- writes smithy_vectors.json: SigV4 test vectors
// computed by the official AWS signer for JavaScript (@smithy/signature-v4,
// the one inside the AWS SDK for JavaScript v3), independent of sluice's C
// code. The requests are the cases of AWS's SigV4 test suite (credentials
// AKIDEXAMPLE, 20150830T123600Z, us-east-1, service "service"), where AWS
// published a signature it is asserted here too, plus SQS-shaped requests
// as the SDK sends them over HTTP/1.1 (host) and HTTP/2 (:authority).
//
// Regenerate (network needed once for npm):
//   mkdir /tmp/sigv4-gen && cd /tmp/sigv4-gen && npm init -y &&
//   npm install @smithy/signature-v4 @aws-crypto/sha256-js @smithy/protocol-http
//   NODE_PATH=/tmp/sigv4-gen/node_modules node gen_smithy_vectors.mjs > smithy_vectors.json
// (run from tests/data/sigv4; the .mjs resolves packages via createRequire).
import { createRequire } from "node:module";
import assert from "node:assert/strict";

const require = createRequire(process.env.NODE_PATH ? process.env.NODE_PATH + "/" : import.meta.url);
const { SignatureV4 } = require("@smithy/signature-v4");
const { Sha256 } = require("@aws-crypto/sha256-js");
const { HttpRequest } = require("@smithy/protocol-http");

const SUITE = {
  akid: "AKIDEXAMPLE",
  secret: "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY",
  region: "us-east-1",
  service: "service",
  date: new Date(Date.UTC(2015, 7, 30, 12, 36, 0)),
  host: "example.amazonaws.com",
};

// wireQuery: the raw query string as a client would put it on the wire
// (what the gateway sees); query: the same parameters decoded, which is
// what the smithy signer takes. Both must describe the same parameters.
const cases = [
  { name: "get-vanilla", path: "/", published: "5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31" },
  { name: "get-vanilla-query-order-key-case", path: "/", query: { Param2: "value2", Param1: "value1" },
    wireQuery: "Param2=value2&Param1=value1",
    published: "b97d918cfa904a5beff61c982a1b6f458b799221646efd99d3219ec94cdf2500" },
  { name: "get-header-value-trim", path: "/", headers: { "My-Header1": " value1", "My-Header2": ' "a   b   c"' },
    published: "acc3ed3afb60bb290fc8d2dd0098b9911fcaa05412b367055dee359757a9c736" },
  // aws-c-auth's copy of this case models the three lines as three header
  // values (comma-joined); as one folded value, the signer collapses them.
  { name: "get-header-value-multiline", path: "/", headers: { "My-Header1": "value1\n  value2\n     value3" } },
  { name: "get-utf8", path: "/\u1234", published: "8318018e0b0f223aa2bbf98705b62bb787dc9c0e678f255a891fd03141be5d85" },
  { name: "get-slashes-normalized", path: "//example//",
    published: "9a624bd73a37c9a373b5312afbebe7a714a789de108f0bdfe846570885f57e84" },
  { name: "get-unreserved", path: "/-._~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz",
    published: "07ef7494c76fa4850883e2b006601f940f8a34d404d0cfa977f52a65bbf5f24f" },
  { name: "get-space-normalized", path: "/example space/" },
  { name: "get-relative-relative-normalized", path: "/example1/example2/../.." },
  { name: "get-slash-dot-slash-normalized", path: "/./" },
  { name: "get-slash-pointless-dot-normalized", path: "/./example" },
  { name: "get-vanilla-utf8-query", path: "/", query: { "\u1234": "bar" }, wireQuery: "%E1%88%B4=bar" },
  { name: "get-vanilla-query-unreserved", path: "/",
    query: { "-._~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz": "-._~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz" },
    wireQuery: "-._~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz=-._~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz" },
  { name: "get-vanilla-empty-query-key", path: "/", query: { Param1: "value1" }, wireQuery: "Param1=value1" },
  { name: "get-query-needs-encoding", path: "/", query: { "a b": "c=d&e", k: "v/w+x", z: "" },
    wireQuery: "z=&k=v%2fw%2Bx&a%20b=c%3dd%26e" },
  { name: "get-encoded-path", path: "/documents%20and%20settings/" },
  { name: "post-vanilla", method: "POST", path: "/" },
  { name: "post-vanilla-query", method: "POST", path: "/", query: { Param1: "value1" }, wireQuery: "Param1=value1" },
  { name: "post-x-www-form-urlencoded", method: "POST", path: "/",
    headers: { "Content-Type": "application/x-www-form-urlencoded" }, body: "Param1=value1" },
  { name: "post-header-key-sort", method: "POST", path: "/", headers: { "My-Header1": "value1" } },
].map((c) => ({ ...SUITE, method: "GET", query: {}, wireQuery: "", headers: {}, body: "", ...c,
                headers: { host: SUITE.host, ...(c.headers || {}) }, applyChecksum: false }));

const sqsBody = JSON.stringify({ QueueUrl: "http://localhost:9324/acme/orders", MessageBody: "hello \u00e9t\u00e9 \u{1F600}" });
const sqsHeaders = {
  "content-type": "application/x-amz-json-1.0",
  "x-amz-target": "AmazonSQS.SendMessage",
  "x-amzn-query-mode": "true",
  "x-amz-user-agent": "aws-sdk-js/3.700.0",
  "user-agent": "aws-sdk-js/3.700.0 ua/2.1 os/linux lang/js md/nodejs#20",
  "amz-sdk-invocation-id": "6f1f5e2c-6d7a-4c64-9a43-3f0c7a7a1b11",
  "amz-sdk-request": "attempt=1; max=3",
  "content-length": String(Buffer.byteLength(sqsBody)),
};
const SQS = { akid: "AKIDACME", secret: "acme-secret", region: "us-east-1", service: "sqs",
              date: new Date(Date.UTC(2026, 10, 21, 7, 9, 0)), method: "POST", path: "/",
              query: {}, wireQuery: "", body: sqsBody, applyChecksum: true };
cases.push(
  { ...SQS, name: "sqs-http1-host", headers: { host: "localhost:9324", ...sqsHeaders } },
  // HTTP/2: middleware-host-header deletes host and sets :authority, and the
  // signer signs the pseudo-header like any other.
  { ...SQS, name: "sqs-http2-authority", headers: { ":authority": "localhost:9324", ...sqsHeaders } },
  { ...SQS, name: "sqs-http2-authority-eu", region: "eu-west-1", akid: "AKIDOTHER", secret: "s3cr3t/with+chars",
    date: new Date(Date.UTC(2025, 0, 1, 0, 0, 59)),
    headers: { ":authority": "sqs.example.test", ...sqsHeaders, "x-amz-target": "AmazonSQS.ReceiveMessage" },
    body: JSON.stringify({ QueueUrl: "http://sqs.example.test/t/q", WaitTimeSeconds: 20 }) },
  { ...SQS, name: "sqs-http1-no-content-sha", applyChecksum: false, headers: { host: "127.0.0.1:9324", ...sqsHeaders } },
  { ...SQS, name: "sqs-empty-body", body: "", applyChecksum: true,
    headers: { host: "localhost:9324", "content-type": "application/x-amz-json-1.0", "x-amz-target": "AmazonSQS.ListQueues" } },
);

const out = [];
for (const c of cases) {
  const signer = new SignatureV4({ credentials: { accessKeyId: c.akid, secretAccessKey: c.secret },
    region: c.region, service: c.service, sha256: Sha256, applyChecksum: c.applyChecksum });
  let canonical, stringToSign;
  const mkCanon = signer.createCanonicalRequest.bind(signer);
  signer.createCanonicalRequest = (...a) => (canonical = mkCanon(...a));
  const mkSts = signer.createStringToSign.bind(signer);
  signer.createStringToSign = async (...a) => (stringToSign = await mkSts(...a));
  const req = new HttpRequest({ method: c.method, protocol: "https:", hostname: "ignored.invalid",
    path: c.path, query: c.query, headers: { ...c.headers }, body: c.body });
  const signed = await signer.sign(req, { signingDate: c.date });
  const authorization = signed.headers["authorization"];
  const signature = authorization.split("Signature=")[1];
  if (c.published) {
    assert.equal(signature, c.published, `${c.name}: smithy disagrees with AWS's published signature`);
  }
  const headers = Object.entries(signed.headers).filter(([n]) => n.toLowerCase() !== "authorization");
  const amzDate = signed.headers["x-amz-date"];
  out.push({ name: c.name, method: c.method, path: c.path, query: c.wireQuery, headers, body: c.body,
    region: c.region, service: c.service, access_key_id: c.akid, secret: c.secret, amz_date: amzDate,
    now: Math.floor(c.date.getTime() / 1000), authorization, canonical_request: canonical,
    string_to_sign: stringToSign, ...(c.published ? { published_signature: c.published } : {}) });
}
const pkg = require("@smithy/signature-v4/package.json");
process.stdout.write(JSON.stringify({ generator: `@smithy/signature-v4 ${pkg.version} via gen_smithy_vectors.mjs`,
  vectors: out }, null, 2) + "\n");
