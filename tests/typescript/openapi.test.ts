// A client typed by openapi-typescript from the OpenAPI document (generated/typescript/.../
// memory_openapi.ts) compiles and calls a real himga server over HTTP: `namespace` is required
// (the @ts-expect-error below fails the build if it is not), the bearer token is sent, and the
// counts of an episode are JSON integers, read as `number`.
//
// Needs HIMGA_HTTP (the server's HTTP origin) and HIMGA_TOKEN; tests/languages/test_typescript.py
// sets them.
import assert from "node:assert/strict";
import { test } from "node:test";

import type { components } from "../../generated/typescript/himga_proto/memory/v1/memory_openapi.js";

type Schemas = components["schemas"];
const origin = process.env.HIMGA_HTTP;
const token = process.env.HIMGA_TOKEN;
if (!origin || !token) throw new Error("set HIMGA_HTTP and HIMGA_TOKEN (test_typescript.py does)");

// @ts-expect-error: a Retrieve request without its namespace does not type-check
const incomplete: Schemas["RetrieveRequest"] = { query: "plums" };
void incomplete;

async function call<Answer>(path: string, body: unknown): Promise<{ raw: string; answer: Answer }> {
  const response = await fetch(origin + path, {
    method: "POST",
    headers: { "Content-Type": "application/json", Authorization: `Bearer ${token}` },
    body: JSON.stringify(body),
  });
  const raw = await response.text();
  assert.equal(response.status, 200, raw);
  return { raw, answer: JSON.parse(raw) as Answer };
}

test("a typed Ingest and Retrieve", async () => {
  const ingest: Schemas["IngestRequest"] = {
    namespace: "openapi-ts",
    message: { role: "user", content: "I planted a plum tree", turn_id: "p1" },
    session: { session_id: "s1" },
  };
  const stored = await call<Schemas["IngestResponse"]>(
    "/himga.memory.v1.MemoryService/Ingest",
    ingest,
  );
  assert.equal(stored.answer.id, "p1");
  const request: Schemas["RetrieveRequest"] = { namespace: "openapi-ts", query: "plum", limit: 1 };
  const { answer } = await call<Schemas["RetrieveResponse"]>(
    "/himga.memory.v1.MemoryService/Retrieve",
    request,
  );
  const context: string = answer.context; // required in answers: no `undefined` to handle
  assert.equal(answer.hits.length, 1);
  assert.match(context, /plum tree/);
});

test("an episode's counts are JSON integers, read as number", async () => {
  const episode: Schemas["EpisodeTrace"] = {
    id: "ep-openapi-ts",
    task_id: "t1",
    timestamp: "2025-03-01T09:00:00Z",
    duration_seconds: 60,
    agent: "ts",
    context: { goal: "count things", phase: "ACT", files_involved: [] },
    action_log: [{ t: 5, action: "edit_file", target: "a.ts", result: "saved" }],
    tokens_used: 1234,
  };
  await call("/himga.memory.v1.EpisodeService/RecordEpisode", {
    namespace: "openapi-ts",
    episode,
  });
  const { raw, answer } = await call<Schemas["GetEpisodeResponse"]>(
    "/himga.memory.v1.EpisodeService/GetEpisode",
    { namespace: "openapi-ts", id: "ep-openapi-ts" },
  );
  const got = answer.episode;
  assert.ok(got);
  const counts: number[] = [
    got.access_count ?? -1,
    got.tokens_used ?? -1,
    got.duration_seconds ?? -1,
    got.action_log?.[0]?.t ?? -1,
  ];
  assert.deepEqual(counts, [1, 1234, 60, 5]);
  assert.ok(counts.every(Number.isInteger));
  // JSON.parse reads 1.0 as 1 too: the text itself must carry whole numbers.
  assert.doesNotMatch(raw, /"(access_count|tokens_used|duration_seconds|t)":\s*\d+\.\d/);
});
