// The TypeScript client against a real himga server: a LoCoMo conversation goes in by
// IngestBatch, questions find their evidence turns, Reset forgets them, a malformed batch is
// refused with INVALID_ARGUMENT naming the field, storing nothing, and a call naming another
// memory than its namespace's is refused; each refusal carries its ErrorInfo reason.
//
// Needs HIMGA_TARGET (host:port of a running server) and HIMGA_CONVERSATION_PATH: a JSON file
// {sample_id, sessions: [Session], questions: [{question, evidence, category}]}, the sessions
// being schema documents. tests/languages/test_typescript.py starts the server and writes it.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";

import { Code, ConnectError } from "@connectrpc/connect";

import {
  connectMemory,
  errorReason,
  fieldViolations,
  ingestItem,
  Reason,
} from "../../examples/typescript/memory.js";
import { SchemaValidator } from "../../examples/typescript/schemas.js";
import type { Session } from "../../generated/typescript/schema/v1.js";

interface Question {
  question: string;
  evidence: string[];
  category: number;
}
interface Conversation {
  sample_id: string;
  sessions: Session[];
  questions: Question[];
}

function required(name: string): string {
  const value = process.env[name];
  if (!value) throw new Error(`set ${name} (tests/languages/test_typescript.py does)`);
  return value;
}

const BATCH_SIZE = 50;
const LIMIT = 10;
const conversation = JSON.parse(
  readFileSync(required("HIMGA_CONVERSATION_PATH"), "utf8"),
) as Conversation;
const memory = connectMemory(required("HIMGA_TARGET"));
const namespace = `ts-client-${process.pid}`;

// The questions asked: the first 5 of each category 1-4 (category 5 is adversarial: its
// evidence need not answer it) that name evidence turns.
const asked = [1, 2, 3, 4].flatMap((category) =>
  conversation.questions
    .filter((q) => q.category === category && q.evidence.length > 0)
    .slice(0, 5),
);

const items = conversation.sessions.flatMap((session) =>
  (session.messages ?? []).map((message) => ({ message, session })),
);
const turnIds = new Set(items.map(({ message }) => message.turn_id));

test("the conversation's sessions are valid documents", () => {
  const schemas = new SchemaValidator();
  assert.ok(items.length > 0, "the conversation has no messages");
  for (const session of conversation.sessions) {
    assert.deepEqual(schemas.violations("session", session), [], session.session_id);
  }
});

test("IngestBatch stores the conversation in batches", async () => {
  let stored = 0;
  for (let start = 0; start < items.length; start += BATCH_SIZE) {
    const batch = items.slice(start, start + BATCH_SIZE);
    const reply = await memory.ingestBatch({
      namespace,
      items: batch.map(({ message, session }) => ingestItem(message, session)),
    });
    assert.equal(reply.ingested, batch.length);
    stored += reply.ingested;
  }
  assert.equal(stored, items.length);
});

test("Retrieve finds evidence turns among the hits, best first", async (t) => {
  assert.ok(asked.length > 0, "no question of categories 1-4 names evidence");
  let found = 0;
  for (const q of asked) {
    const reply = await memory.retrieve({ namespace, query: q.question, limit: LIMIT });
    assert.ok(reply.hits.length <= LIMIT);
    for (const hit of reply.hits) assert.ok(turnIds.has(hit.turnId), `unknown turn ${hit.turnId}`);
    const scores = reply.hits.map((hit) => hit.score);
    assert.deepEqual(
      scores,
      [...scores].sort((a, b) => b - a),
      "hits are not best first",
    );
    if (reply.hits.length > 0) assert.notEqual(reply.context, "");
    if (reply.hits.some((hit) => q.evidence.includes(hit.turnId))) found += 1;
  }
  t.diagnostic(`evidence among the top ${LIMIT} hits for ${found} of ${asked.length} questions`);
  assert.ok(found >= 1, `no evidence turn among the hits of ${asked.length} questions`);
});

test("Reset forgets the namespace, which stays usable", async () => {
  await memory.reset({ namespace });
  for (const q of asked) {
    const reply = await memory.retrieve({ namespace, query: q.question, limit: LIMIT });
    assert.deepEqual(reply.hits, [], q.question);
    assert.equal(reply.context, "");
  }
  const [first] = items;
  assert.ok(first !== undefined);
  const reply = await memory.ingestBatch({
    namespace,
    items: [ingestItem(first.message, first.session)],
  });
  assert.equal(reply.ingested, 1);
  await memory.reset({ namespace });
});

test("a filter keeps Retrieve in one session, and Delete forgets that session", async () => {
  const space = `${namespace}-filter`;
  const reply = await memory.ingestBatch({
    namespace: space,
    items: items.map(({ message, session }) => ingestItem(message, session)),
  });
  assert.deepEqual(
    reply.ids,
    items.map(({ message }) => message.turn_id),
  );
  const [first] = conversation.sessions;
  assert.ok(first !== undefined);
  const inFirst = { sessionIds: [first.session_id] };
  const count = first.messages?.length ?? 0;
  let hits = 0;
  for (const q of asked) {
    const answer = await memory.retrieve({ namespace: space, query: q.question, filter: inFirst });
    for (const hit of answer.hits) assert.equal(hit.sessionId, first.session_id, q.question);
    hits += answer.hits.length;
  }
  assert.ok(hits > 0, `no hit in ${first.session_id} for ${asked.length} questions`);

  const { deleted } = await memory.delete({ namespace: space, filter: inFirst });
  assert.equal(deleted, count);
  for (const q of asked) {
    const answer = await memory.retrieve({ namespace: space, query: q.question, limit: LIMIT });
    for (const hit of answer.hits) assert.notEqual(hit.sessionId, first.session_id, q.question);
  }
  const listed = await memory.listMessages({ namespace: space, filter: inFirst });
  assert.deepEqual(listed.messages, []);
  const error = await memory.delete({ namespace: space }).then(
    () => assert.fail("a Delete naming nothing was accepted"),
    (e: unknown) => ConnectError.from(e),
  );
  assert.equal(errorReason(error), Reason.InvalidRequest, error.message);
  await memory.reset({ namespace: space });
});

test("a batch with an empty role is INVALID_ARGUMENT naming the field, and stores nothing", async () => {
  const [good] = items;
  assert.ok(good !== undefined);
  const bad = ingestItem({ ...good.message, role: "" }, good.session);
  const error = await memory
    .ingestBatch({ namespace, items: [ingestItem(good.message, good.session), bad] })
    .then(
      () => assert.fail("the server accepted an empty role"),
      (e: unknown) => ConnectError.from(e),
    );
  assert.equal(error.code, Code.InvalidArgument, error.message);
  assert.equal(errorReason(error), Reason.InvalidRequest, error.message);
  const fields = fieldViolations(error).map((v) => v.field);
  assert.ok(fields.includes("items[1].message.role"), `violations: ${JSON.stringify(fields)}`);

  const reply = await memory.retrieve({
    namespace,
    query: good.message.content,
    limit: LIMIT,
  });
  assert.deepEqual(
    reply.hits.map((hit) => hit.turnId),
    [],
    "the valid item of the refused batch was stored",
  );
});

test("a call naming another memory than the namespace's is MEMORY_MISMATCH", async () => {
  const [first] = items;
  assert.ok(first !== undefined);
  const other = `${namespace}-memory`;
  const batch = [ingestItem(first.message, first.session)];
  // The first call opens the namespace with the keyword memory; it keeps it.
  await memory.ingestBatch({ namespace: other, items: batch, memory: "keyword" });
  const error = await memory.ingestBatch({ namespace: other, items: batch, memory: "null" }).then(
    () => assert.fail("the server accepted another memory for the namespace"),
    (e: unknown) => ConnectError.from(e),
  );
  assert.equal(error.code, Code.FailedPrecondition, error.message);
  assert.equal(errorReason(error), Reason.MemoryMismatch, error.message);
  await memory.reset({ namespace: other, memory: "keyword" });
});
