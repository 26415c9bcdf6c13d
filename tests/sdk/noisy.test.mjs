// noisy.test.mjs -- three kinds of tenant share one gateway: quiet ones,
// one flooding in reject mode, one flooding in spill mode. The flooders are
// throttled or spilled as configured, nothing acknowledged is lost, spilled
// messages become receivable after the spill delay, and every quiet request
// succeeds.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import * as S from "@aws-sdk/client-sqs";
import { startSluiced, sqsClient, tenants, admin } from "./harness.mjs";

const flood = { key: "AKIDFLOOD", secret: "flood-secret" };
const spiller = { key: "AKIDSPILL", secret: "spill-secret" };
const extraTenants = [
  "  flood:", `    access_key_id: ${flood.key}`, `    secret_access_key: ${flood.secret}`,
  "    limits:", "      requests_per_second: 2", "      burst: 5", "    on_excess: reject",
  "  spiller:", `    access_key_id: ${spiller.key}`, `    secret_access_key: ${spiller.secret}`,
  "    limits:", "      requests_per_second: 2", "      burst: 5", "    on_excess: spill",
  "    spill:", "      delay_seconds: 1",
].join("\n");

let server;
before(async () => { server = await startSluiced(extraTenants); });
after(async () => {
  const { code } = await server.stop();
  assert.equal(code, 0);
});

// Receives everything currently receivable with admin credentials (never
// rate-limited), deleting as it goes; returns the bodies.
async function drain(root, url, expect, rounds = 40) {
  const bodies = [];
  for (let i = 0; i < rounds && bodies.length < expect; i++) {
    const r = await root.send(new S.ReceiveMessageCommand({ QueueUrl: url, MaxNumberOfMessages: 10, WaitTimeSeconds: 1 }));
    for (const m of r.Messages ?? []) {
      bodies.push(m.Body);
      await root.send(new S.DeleteMessageCommand({ QueueUrl: url, ReceiptHandle: m.ReceiptHandle }));
    }
  }
  return bodies;
}

test("a flooding tenant hurts only itself", async () => {
  const root = sqsClient(server, admin);
  const quiet = [sqsClient(server, tenants.alpha), sqsClient(server, tenants.beta)];
  const flooder = sqsClient(server, flood);      // maxAttempts 1: see every throttle
  const spill = sqsClient(server, spiller);
  const quietUrls = [];
  for (const c of quiet) quietUrls.push((await c.send(new S.CreateQueueCommand({ QueueName: "q" }))).QueueUrl);
  const floodUrl = (await flooder.send(new S.CreateQueueCommand({ QueueName: "q" }))).QueueUrl;
  const spillUrl = (await spill.send(new S.CreateQueueCommand({ QueueName: "q" }))).QueueUrl;

  // All at once: 40 sends from each flooder, 20 from each quiet tenant.
  const floodSends = Array.from({ length: 40 }, (_, i) =>
    flooder.send(new S.SendMessageCommand({ QueueUrl: floodUrl, MessageBody: `f${i}` })).then(
      () => `f${i}`, (e) => { assert.equal(e.name, "RequestThrottled"); assert.equal(e.$metadata.httpStatusCode, 403); return null; }));
  const spillSends = Array.from({ length: 40 }, (_, i) =>
    spill.send(new S.SendMessageCommand({ QueueUrl: spillUrl, MessageBody: `s${i}` })).then(() => `s${i}`));
  const quietSends = quiet.flatMap((c, q) => Array.from({ length: 20 }, (_, i) =>
    c.send(new S.SendMessageCommand({ QueueUrl: quietUrls[q], MessageBody: `q${q}-${i}` })).then(() => `q${q}-${i}`)));

  const floodAcked = (await Promise.all(floodSends)).filter((b) => b !== null);
  const spillAcked = await Promise.all(spillSends);     // spill mode: every send is accepted
  const quietAcked = await Promise.all(quietSends);     // any rejection would throw here
  // The burst of 5, less the token its CreateQueue spent: every action
  // costs a token of the tenant's rate.
  assert.ok(floodAcked.length >= 4, "the burst is admitted");
  assert.ok(floodAcked.length < 40, "the rest is throttled");
  assert.equal(spillAcked.length, 40);
  assert.equal(quietAcked.length, 40);

  // Nothing acknowledged is lost, nothing refused was stored.
  assert.deepEqual((await drain(root, floodUrl, floodAcked.length)).sort(), floodAcked.sort());
  for (let q = 0; q < 2; q++) {
    const got = await drain(root, quietUrls[q], 20);
    assert.deepEqual(got.sort(), quietAcked.filter((b) => b.startsWith(`q${q}-`)).sort());
  }
  // Spilled messages sit in the overflow lane, invisible for the spill
  // delay (1 s), then become receivable: all 40 arrive.
  assert.deepEqual((await drain(root, spillUrl, 40)).sort(), spillAcked.sort());
});

test("spilled sends wait in the overflow lane, behind fresh work", async () => {
  const root = sqsClient(server, admin);
  const spill = sqsClient(server, spiller);
  const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
  await sleep(3000); // a full bucket again: 5 tokens at 2 per second
  const url = (await spill.send(new S.CreateQueueCommand({ QueueName: "lanes" }))).QueueUrl;

  // Ten entries cost ten tokens, more than the burst: spilled whole.
  const batch = await spill.send(new S.SendMessageBatchCommand({
    QueueUrl: url,
    Entries: Array.from({ length: 10 }, (_, i) => ({ Id: `e${i}`, MessageBody: `s${i}` })),
  }));
  assert.equal(batch.Successful.length, 10);
  await sleep(3000); // past the spill delay (1 s), and the bucket refilled
  await spill.send(new S.SendMessageCommand({ QueueUrl: url, MessageBody: "fresh" }));
  const attrs = await root.send(new S.GetQueueAttributesCommand({
    QueueUrl: url, AttributeNames: ["ApproximateNumberOfMessages"] }));
  assert.equal(attrs.Attributes.ApproximateNumberOfMessages, "11"); // SQS counts both lanes

  // The older, spilled messages are ready, but the main lane goes first.
  const first = await root.send(new S.ReceiveMessageCommand({ QueueUrl: url, MaxNumberOfMessages: 1 }));
  assert.equal(first.Messages[0].Body, "fresh");
  const rest = await drain(root, url, 10);
  assert.deepEqual(rest.sort(), Array.from({ length: 10 }, (_, i) => `s${i}`).sort());
});
