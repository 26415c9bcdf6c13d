// compat-v3.mjs -- the AWS SDK for JavaScript v3 as a client of the common
// flow (compat-flow.mjs): its commands by name, and its typed errors.
import assert from "node:assert/strict";
import * as S from "@aws-sdk/client-sqs";

export function v3Adapter(sqs) {
  return {
    call: (op, params) => sqs.send(new S[`${op}Command`](params)),
    async errorCode(op, params) {
      let err;
      try {
        await sqs.send(new S[`${op}Command`](params));
      } catch (e) {
        err = e;
      }
      assert.ok(err, `${op}: the call succeeded but QueueDoesNotExist was expected`);
      assert.ok(err instanceof S.QueueDoesNotExist, `${op}: the SDK's QueueDoesNotExist, got ${err.name}: ${err.message}`);
      assert.equal(err.$metadata.httpStatusCode, 400, `${op}: HTTP status`);
      // The JSON protocol's x-amzn-query-error header gives the query code.
      return err.Code;
    },
  };
}
