// auth.test.mjs -- the stock SDK over HTTP/2 is authenticated (SigV4 with
// :authority signed) and gets SQS-shaped errors it can map to its own
// exception classes.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { AddPermissionCommand, ListQueuesCommand } from "@aws-sdk/client-sqs";
import { startSluiced, sqsClient, tenants } from "./harness.mjs";

let server;
before(async () => { server = await startSluiced(); });
after(async () => {
  const { code } = await server.stop();
  assert.equal(code, 0, "sluiced exits 0 on SIGTERM");
});

async function rejection(promise) {
  try {
    await promise;
  } catch (err) {
    return err;
  }
  assert.fail("the call succeeded but an error was expected");
}

test("a wrong secret is SignatureDoesNotMatch (403)", async () => {
  const sqs = sqsClient(server, { key: tenants.alpha.key, secret: "not-the-secret" });
  const err = await rejection(sqs.send(new ListQueuesCommand({})));
  assert.equal(err.name, "SignatureDoesNotMatch");
  assert.equal(err.$metadata.httpStatusCode, 403);
  assert.match(err.$metadata.requestId ?? "", /^[0-9a-f-]{36}$/);
});

test("an unknown access key is InvalidClientTokenId (403)", async () => {
  const sqs = sqsClient(server, { key: "AKIDNOBODY", secret: "whatever" });
  const err = await rejection(sqs.send(new ListQueuesCommand({})));
  assert.equal(err.name, "InvalidClientTokenId");
  assert.equal(err.$metadata.httpStatusCode, 403);
});

test("a signed call to an action sluice does not offer gets an SQS-shaped error", async () => {
  // AddPermission is SQS's IAM-style sharing; sluice has no IAM, so it is
  // refused -- after authentication, with a proper SQS error.
  const sqs = sqsClient(server);
  const err = await rejection(sqs.send(new AddPermissionCommand({
    QueueUrl: `${server.endpoint}/alpha/q1`, Label: "l", AWSAccountIds: ["beta"], Actions: ["SendMessage"],
  })));
  assert.equal(err.$metadata.httpStatusCode, 400);
  assert.match(err.name, /UnsupportedOperation/);
  assert.ok(err.message.length > 0, "the error carries a message");
});
