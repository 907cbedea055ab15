// Date-times turned into proto messages by ingestItem and episodeMessage: `t` and `z` in lower
// case, which the schemas accept, are read as the server's HTTP port reads them (upper-cased);
// RFC 3339 date-times a proto Timestamp cannot hold (more than 9 fraction digits, year 0000, a
// leap second :60) are refused before any call, as the server refuses the same document over
// HTTP: INVALID_ARGUMENT, reason INVALID_REQUEST, the same field named, its rule starting with
// the server's.
//
// Needs HIMGA_HTTP (the server's HTTP origin) and HIMGA_TOKEN; tests/languages/test_typescript.py
// sets them.
import assert from "node:assert/strict";
import { test } from "node:test";

import { fromBinary } from "@bufbuild/protobuf";
import { timestampDate } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError } from "@connectrpc/connect";

import {
  connectEpisodes,
  episodeMessage,
  recordAfterTask,
} from "../../examples/typescript/episodes.js";
import {
  errorReason,
  fieldViolations,
  ingestItem,
  Reason,
  TIMESTAMP_RULE,
  type FieldViolation,
} from "../../examples/typescript/memory.js";
import { SchemaValidator } from "../../examples/typescript/schemas.js";
import { BadRequestSchema } from "../../generated/typescript/google/rpc/error_details_pb.js";
import type { EpisodeTrace, Message, Session } from "../../generated/typescript/schema/v1.js";

const origin = process.env.HIMGA_HTTP;
const token = process.env.HIMGA_TOKEN;
if (!origin || !token) throw new Error("set HIMGA_HTTP and HIMGA_TOKEN (test_typescript.py does)");
const schemas = new SchemaValidator();
const namespace = `ts-timestamps-${process.pid}`;

/** What the server's HTTP port answers `body`: 200, or the field violations of its refusal. */
async function overHttp(method: string, body: unknown): Promise<FieldViolation[] | "stored"> {
  const response = await fetch(`${origin}/himga.memory.v1.${method}`, {
    method: "POST",
    headers: { "Content-Type": "application/json", Authorization: `Bearer ${token}` },
    body: JSON.stringify(body),
  });
  const raw = await response.text();
  if (response.status === 200) return "stored";
  const answer = JSON.parse(raw) as { code: string; details: { type: string; value: string }[] };
  assert.equal(answer.code, "invalid_argument", raw);
  return answer.details
    .filter((detail) => detail.type === "google.rpc.BadRequest")
    .flatMap((detail) => fromBinary(BadRequestSchema, Buffer.from(detail.value, "base64")).fieldViolations)
    .map(({ field, description }) => ({ field, description }));
}

/** The refusal `make` throws: a ConnectError the way the server answers, never the decoder's. */
function refusal(make: () => unknown): ConnectError {
  try {
    make();
  } catch (error) {
    assert.ok(error instanceof ConnectError, String(error));
    assert.doesNotMatch(error.message, /cannot decode/);
    assert.equal(error.code, Code.InvalidArgument);
    assert.equal(errorReason(error), Reason.InvalidRequest);
    return error;
  }
  assert.fail("no error thrown");
}

/** The client's violations name the server's fields, each rule starting with the server's. */
function agree(client: FieldViolation[], server: FieldViolation[] | "stored"): void {
  assert.notEqual(server, "stored", "the server stored it");
  assert.deepEqual(
    client.map((v) => v.field),
    (server as FieldViolation[]).map((v) => v.field),
  );
  client.forEach((v, i) => assert.ok(v.description.startsWith((server as FieldViolation[])[i]!.description), v.description));
}

test("t and z in lower case are read as the HTTP port reads them", async () => {
  const message: Message = { role: "Ada", content: "x", timestamp: "2024-05-08t13:56:00z" };
  const session: Session = { session_id: "s1", timestamp: "2024-05-08t13:00:00.5z" };
  assert.deepEqual(schemas.violations("message", message), []);
  assert.deepEqual(schemas.violations("session", session), []);
  const item = ingestItem(message, session);
  assert.equal(timestampDate(item.message!.timestamp!).toISOString(), "2024-05-08T13:56:00.000Z");
  assert.equal(timestampDate(item.session!.timestamp!).toISOString(), "2024-05-08T13:00:00.500Z");
  assert.equal(message.timestamp, "2024-05-08t13:56:00z", "the caller's document is left as it is");
  assert.equal(await overHttp("MemoryService/Ingest", { namespace, message, session }), "stored");

  const episode: EpisodeTrace = {
    id: "ep-lower",
    task_id: "t1",
    timestamp: "2025-03-01t09:00:00z",
    last_accessed: "2025-03-02t10:00:00.123456789z",
    agent: "ts",
    context: { goal: "read lower case", files_involved: [] },
  };
  assert.deepEqual(schemas.violations("episode_trace", episode), []);
  const proto = episodeMessage(episode);
  assert.equal(timestampDate(proto.timestamp!).toISOString(), "2025-03-01T09:00:00.000Z");
  assert.equal(proto.lastAccessed!.nanos, 123456789);
});

// RFC 3339 date-times no proto Timestamp holds, and times no calendar or clock has, which the
// ProtoJSON parser of @bufbuild/protobuf would roll over into the next month or day.
// ingestItem does not validate its documents, so it meets them whatever the schemas say.
const beyond = [
  { name: "ten fraction digits", at: "2024-05-08T13:56:00.1234567891Z", rule: "at most 9 fraction digits" },
  { name: "year 0000", at: "0000-01-01T00:00:00Z", rule: "0001-01-01T00:00:00Z to 9999-12-31T23:59:59.999999999Z" },
  { name: "a leap second", at: "2016-12-31T23:59:60Z", rule: "no leap second" },
  { name: "30 February", at: "2023-02-30T00:00:00Z", rule: TIMESTAMP_RULE },
  { name: "hour 24", at: "2024-05-08T24:00:00Z", rule: TIMESTAMP_RULE },
];

for (const { name, at, rule } of beyond) {
  test(`a message and session at ${name}: refused naming the field, as the server does`, async () => {
    const message: Message = { role: "Ada", content: "x", timestamp: at };
    const session: Session = { session_id: "s1", timestamp: at.toLowerCase() };
    const error = refusal(() => ingestItem(message, session));
    const found = fieldViolations(error);
    assert.deepEqual(
      found.map((v) => v.field),
      ["message.timestamp", "session.timestamp"],
    );
    for (const v of found) {
      assert.ok(v.description.startsWith(TIMESTAMP_RULE), v.description);
      assert.ok(v.description.includes(rule), v.description);
    }
    assert.match(error.message, /^\[invalid_argument\] message\.timestamp: must be /);
    agree(found, await overHttp("MemoryService/Ingest", { namespace, message, session }));
  });

  test(`an episode at ${name}: refused naming the field, before any call`, async () => {
    const episode: EpisodeTrace = {
      id: "ep-beyond",
      task_id: "t1",
      timestamp: at,
      agent: "ts",
      context: { goal: "keep time", files_involved: [] },
    };
    assert.deepEqual(
      fieldViolations(refusal(() => episodeMessage(episode))).map((v) => v.field),
      ["timestamp"],
    );
    // No server listens on port 1: the refusal comes before the call.
    const nowhere = connectEpisodes("127.0.0.1:1");
    const error = await recordAfterTask(nowhere, namespace, episode).then(
      () => assert.fail("recorded"),
      (e: unknown) => refusal(() => { throw e; }),
    );
    agree(fieldViolations(error), await overHttp("EpisodeService/RecordEpisode", { namespace, episode }));
  });
}
