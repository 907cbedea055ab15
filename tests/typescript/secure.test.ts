// The TypeScript client against a himga server with an auth file and mutual TLS: served with a
// token and a certificate of the server's CA; refused without a token (UNAUTHENTICATED), beyond
// its token's rights (PERMISSION_DENIED), and at the handshake with an expired client
// certificate or one from another CA. tests/languages/test_secure.py starts the server and sets
// the environment.
import assert from "node:assert/strict";
import { test } from "node:test";

import { Code, ConnectError } from "@connectrpc/connect";

import {
  connectMemory,
  errorReason,
  ingestItem,
  Reason,
  type ConnectOptions,
} from "../../examples/typescript/memory.js";

function required(name: string): string {
  const value = process.env[name];
  if (!value) throw new Error(`set ${name} (tests/languages/test_secure.py does)`);
  return value;
}

const target = required("HIMGA_TARGET");
const good: ConnectOptions = {
  token: required("HIMGA_TOKEN"),
  ca: required("HIMGA_TLS_CA"),
  cert: required("HIMGA_TLS_CERT"),
  key: required("HIMGA_TLS_KEY"),
};
const namespace = "ts-secure";
const item = ingestItem(
  { role: "user", content: "over mutual tls" },
  { session_id: "s1", messages: [] },
);

async function refusal(options: ConnectOptions): Promise<ConnectError> {
  return await connectMemory(target, options)
    .ingestBatch({ namespace, items: [item] })
    .then(
      () => assert.fail("the server accepted the call"),
      (e: unknown) => ConnectError.from(e),
    );
}

test("served with a token and a certificate of the CA", async () => {
  const memory = connectMemory(target, good);
  const reply = await memory.ingestBatch({ namespace, items: [item] });
  assert.equal(reply.ingested, 1);
  const found = await memory.retrieve({ namespace, query: "mutual" });
  assert.ok(found.hits.length > 0);
});

test("refused without a token: UNAUTHENTICATED", async () => {
  const error = await refusal({ ...good, token: undefined });
  assert.equal(error.code, Code.Unauthenticated, error.message);
  assert.equal(errorReason(error), Reason.Unauthenticated);
});

test("refused beyond the token's rights: PERMISSION_DENIED", async () => {
  const error = await refusal({ ...good, token: required("HIMGA_READ_TOKEN") });
  assert.equal(error.code, Code.PermissionDenied, error.message);
  assert.equal(errorReason(error), Reason.PermissionDenied);
});

for (const kind of ["EXPIRED", "OTHER"]) {
  test(`refused at the handshake: client certificate ${kind.toLowerCase()}`, async () => {
    const error = await refusal({
      ...good,
      cert: required(`HIMGA_TLS_${kind}_CERT`),
      key: required(`HIMGA_TLS_${kind}_KEY`),
    });
    // With TLS 1.3 the server refuses a client certificate after the client's half of the
    // handshake: Node sees the connection fail (UNAVAILABLE) or the stream reset (CANCELED).
    assert.ok([Code.Unavailable, Code.Canceled].includes(error.code), error.message);
    assert.equal(errorReason(error), undefined, "the server's code answered");
  });
}

test("refuses a server whose certificate comes from another CA", async () => {
  const error = await refusal({ ...good, ca: required("HIMGA_TLS_OTHER_CA") });
  // Node's TLS refuses it before any call: connect-node reports its error as INTERNAL.
  assert.match(error.message, /unable to verify the first certificate/);
  assert.equal(errorReason(error), undefined, "the server's code answered");
});
