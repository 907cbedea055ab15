// The TypeScript client against a himga server with an auth file and mutual TLS: served with a
// token and a certificate of the server's CA; refused without a token (UNAUTHENTICATED), beyond
// its token's rights (PERMISSION_DENIED), and at the handshake with an expired client
// certificate or one from another CA. connectEpisodes takes the same options: its episodes are
// served with them and refused without a token. tests/languages/test_secure.py starts the server
// and sets the environment.
import assert from "node:assert/strict";
import { test } from "node:test";

import { Code, ConnectError } from "@connectrpc/connect";

import {
  connectEpisodes,
  contextBeforeTask,
  recordAfterTask,
} from "../../examples/typescript/episodes.js";
import {
  connectMemory,
  errorReason,
  ingestItem,
  Reason,
  type ConnectOptions,
} from "../../examples/typescript/memory.js";
import type { EpisodeTrace } from "../../generated/typescript/schema/v1.js";

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

const episode: EpisodeTrace = {
  id: "ep-secure",
  task_id: "task-secure",
  timestamp: "2025-03-01T09:00:00Z",
  agent: "ts-agent",
  context: { goal: "Rotate the TLS certificates", phase: "ACT", files_involved: ["deploy/tls.ts"] },
  errors_encountered: [
    { type: "handshake", message: "certificate expired", resolution: "renew before the deadline" },
  ],
};

test("episodes: served with a token and a certificate of the CA", async () => {
  const episodes = connectEpisodes(target, good);
  await recordAfterTask(episodes, "ts-secure-episodes", episode);
  const { hits, context } = await contextBeforeTask(episodes, "ts-secure-episodes", {
    goal: "The TLS certificates expire next week",
    files_involved: ["deploy/tls.ts"],
  });
  assert.equal(hits[0]?.episode?.id, "ep-secure");
  assert.match(context, /renew before the deadline/);
});

test("episodes: refused without a token: UNAUTHENTICATED", async () => {
  const episodes = connectEpisodes(target, { ...good, token: undefined });
  const error = await recordAfterTask(episodes, "ts-secure-episodes", episode).then(
    () => assert.fail("the server accepted the call"),
    (e: unknown) => ConnectError.from(e),
  );
  assert.equal(error.code, Code.Unauthenticated, error.message);
  assert.equal(errorReason(error), Reason.Unauthenticated);
});

test("a client certificate without the CA, or without its key, is an error, not plaintext", () => {
  assert.throws(() => connectEpisodes(target, { ...good, ca: undefined }), /needs the server's CA/);
  assert.throws(() => connectMemory(target, { ...good, key: undefined }), /go together/);
});
