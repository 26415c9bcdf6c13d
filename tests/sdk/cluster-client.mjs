// cluster-client.mjs -- the stock @aws-sdk/client-sqs (v3, HTTP/2) as one
// client of a cluster test (tests/compat/test_cluster_failover.py): for
// SECONDS it sends batches and receives and deletes them, each request to
// one of the endpoints in turn, with the SDK's own retries (8 attempts);
// then it drains what it sent. It prints one JSON line: what was
// acknowledged (bodies sent), the receives and acknowledged deletes in the
// order they happened (so that a MessageId received after its delete
// shows), and the errors that outlived the SDK's retries.
//
//   node cluster-client.mjs QUEUE_URL SECONDS ENDPOINT...
import { NodeHttp2Handler } from "@smithy/node-http-handler";
import {
  SQSClient,
  SendMessageBatchCommand,
  ReceiveMessageCommand,
  DeleteMessageBatchCommand,
} from "@aws-sdk/client-sqs";

const [queueUrl, secondsArg, ...endpoints] = process.argv.slice(2);
const seconds = Number(secondsArg);
const clients = endpoints.map((endpoint) => new SQSClient({
  region: "us-east-1",
  endpoint,
  credentials: { accessKeyId: "AKIDALPHA", secretAccessKey: "alpha-secret" },
  requestHandler: new NodeHttp2Handler({ requestTimeout: 20000 }),
  maxAttempts: 8,
}));

const out = { sent: [], events: [], errors: [] };
let turn = 0;
const next = () => clients[turn++ % clients.length];

async function attempt(fn) {
  const c = next();
  try {
    return await fn(c);
  } catch (err) {
    out.errors.push(`${err.name}: ${err.message}`);
    return null;
  }
}

async function takeSome() {
  const r = await attempt((c) => c.send(new ReceiveMessageCommand({
    QueueUrl: queueUrl, MaxNumberOfMessages: 10, WaitTimeSeconds: 1, VisibilityTimeout: 8,
  })));
  const msgs = r?.Messages ?? [];
  for (const m of msgs) out.events.push(["r", m.Body, m.MessageId]);
  if (msgs.length === 0) return 0;
  const d = await attempt((c) => c.send(new DeleteMessageBatchCommand({
    QueueUrl: queueUrl,
    Entries: msgs.map((m, i) => ({ Id: String(i), ReceiptHandle: m.ReceiptHandle })),
  })));
  for (const s of d?.Successful ?? []) out.events.push(["d", "", msgs[Number(s.Id)].MessageId]);
  return msgs.length;
}

const deadline = Date.now() + seconds * 1000;
let n = 0;
while (Date.now() < deadline) {
  const bodies = Array.from({ length: 5 }, (_, i) => `js-${n + i}`);
  n += 5;
  const r = await attempt((c) => c.send(new SendMessageBatchCommand({
    QueueUrl: queueUrl,
    Entries: bodies.map((b, i) => ({ Id: String(i), MessageBody: b })),
  })));
  if (r && (r.Failed ?? []).length === 0) out.sent.push(...bodies);
  await takeSome();
}
// Drain: until every acknowledged body was received, or 30 s pass.
const drainEnd = Date.now() + 30000;
const want = new Set(out.sent);
while (Date.now() < drainEnd) {
  for (const [kind, b] of out.events) if (kind === "r") want.delete(b);
  if (want.size === 0) break;
  await takeSome();
}
for (const c of clients) c.destroy();
console.log(JSON.stringify(out));
