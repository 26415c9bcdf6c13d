// v2.compat.mjs -- the common compatibility flow with the AWS SDK for
// JavaScript v2 (aws-sdk, pinned to 2.1490.0, the last release whose SQS
// model speaks the query protocol; later ones speak JSON 1.0). It sends
// form bodies over HTTP/1.1 and reads SQS's XML. computeChecksums stays on
// (the default), so the SDK checks every body digest itself.
import { test } from "node:test";
import assert from "node:assert/strict";
import AWS from "aws-sdk";
import { tenants } from "./harness.mjs";
import { runFlow, sluicedPerFile } from "./compat-flow.mjs";

const ctx = sluicedPerFile();

function v2Client(cred) {
  return new AWS.SQS({
    endpoint: ctx.server.endpoint,
    region: "us-east-1",
    credentials: new AWS.Credentials(cred.key, cred.secret),
    maxRetries: 0,
    httpOptions: { timeout: 30000 },
  });
}

const lower = (op) => op[0].toLowerCase() + op.slice(1);

function v2Adapter(sqs) {
  return {
    call: (op, params) => sqs[lower(op)](params).promise(),
    async errorCode(op, params) {
      let err;
      try {
        await sqs[lower(op)](params).promise();
      } catch (e) {
        err = e;
      }
      assert.ok(err, `${op}: the call succeeded but an error was expected`);
      assert.equal(err.statusCode, 400, `${op}: HTTP status (${err.code}: ${err.message})`);
      return err.code;
    },
  };
}

test("the SDK speaks the query protocol", () => {
  assert.equal(new AWS.SQS({ region: "us-east-1" }).api.protocol, "query");
  assert.equal(AWS.VERSION, "2.1490.0");
});

test("v2 runs the common flow", async () => {
  const sqs = v2Client(tenants.alpha);
  assert.equal(sqs.config.computeChecksums, true, "MD5 checks on");
  await runFlow(v2Adapter(sqs), ctx.server.endpoint, { prefix: "v2" });
});

test("v2 reports a wrong secret as SignatureDoesNotMatch", async () => {
  const sqs = v2Client({ key: tenants.alpha.key, secret: "not-the-secret" });
  const err = await sqs.listQueues({}).promise().then(() => null, (e) => e);
  assert.ok(err, "ListQueues with a wrong secret succeeded");
  assert.equal(err.code, "SignatureDoesNotMatch");
  assert.equal(err.statusCode, 403);
});
