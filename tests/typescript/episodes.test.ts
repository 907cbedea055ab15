// The TypeScript agent's episodes against a real himga server: an episode recorded after a task
// comes back equal, is found first by the next task's TaskContext with its resolution in a
// context within the budget, and is NOT_FOUND (by its reason) once deleted; an invalid episode
// is refused naming its field.
//
// Needs HIMGA_TARGET (host:port of a running server); tests/languages/test_typescript.py sets it.
import assert from "node:assert/strict";
import { test } from "node:test";

import { toJson } from "@bufbuild/protobuf";

import {
  connectEpisodes,
  contextBeforeTask,
  episodeMessage,
  recordAfterTask,
} from "../../examples/typescript/episodes.js";
import { errorReason, fieldViolations, Reason } from "../../examples/typescript/memory.js";
import { SchemaValidator } from "../../examples/typescript/schemas.js";
import { EpisodeTraceSchema } from "../../generated/typescript/himga_proto/memory/v1/memory_pb.js";
import type { EpisodeTrace } from "../../generated/typescript/schema/v1.js";

const target = process.env.HIMGA_TARGET;
if (!target) throw new Error("set HIMGA_TARGET (tests/languages/test_typescript.py does)");
const episodes = connectEpisodes(target);
const schemas = new SchemaValidator();

function episode(id: string, goal: string, modified: string, resolution: string): EpisodeTrace {
  return {
    id,
    task_id: `task-${id}`,
    timestamp: "2025-03-01T09:00:00Z",
    duration_seconds: 60,
    agent: "ts-agent",
    context: { goal, phase: "ACT", files_involved: ["src/app.ts", modified] },
    action_log: [{ t: 5, action: "edit_file", target: modified, result: "saved" }],
    outcome: "success",
    errors_encountered: resolution
      ? [{ type: "test_failure", message: "expected 12.50, got 10.00", resolution }]
      : [],
    artifacts_produced: [],
    git_commit: null,
    tokens_used: 900,
    files_read: ["src/app.ts"],
    files_modified: [modified],
    importance: 0.5,
    access_count: 0,
  };
}

test("the next task finds the episode of the last one, with its resolution", async () => {
  const namespace = `ts-episodes-${process.pid}-find`;
  const wanted = episode("ep-1", "Fix stale prices in the cache", "src/cache/keys.ts", "key on currency");
  assert.deepEqual(schemas.violations("episode_trace", wanted), []);
  await recordAfterTask(episodes, namespace, wanted);
  await recordAfterTask(episodes, namespace, episode("ep-2", "Speed up the report export", "src/report.ts", ""));
  const { context, hits } = await contextBeforeTask(
    episodes,
    namespace,
    { goal: "Prices from the cache are wrong; fix it", files_involved: ["src/cache/keys.ts"] },
    "",
    60,
  );
  assert.equal(hits[0]?.episode?.id, "ep-1");
  assert.ok(context.includes("key on currency"), context);
  assert.ok(context.length <= 60 * 4, context);
});

test("an episode comes back equal, and is NOT_FOUND once deleted", async () => {
  const namespace = `ts-episodes-${process.pid}-trip`;
  const sent = episode("ep-3", "Document the cache", "docs/cache.md", "");
  await recordAfterTask(episodes, namespace, sent);
  const { episodes: listed } = await episodes.listEpisodes({ namespace, file: "docs/cache.md" });
  assert.equal(listed.length, 1);
  const back = toJson(EpisodeTraceSchema, listed[0]!, { alwaysEmitImplicit: true });
  assert.deepEqual(back, toJson(EpisodeTraceSchema, episodeMessage(sent), { alwaysEmitImplicit: true }));
  assert.deepEqual(schemas.violations("episode_trace", back), []);
  await episodes.deleteEpisode({ namespace, id: "ep-3" });
  await assert.rejects(episodes.getEpisode({ namespace, id: "ep-3" }), (error: unknown) => {
    assert.equal(errorReason(error), Reason.NotFound);
    return true;
  });
});

test("an invalid episode is refused naming its field", async () => {
  const bad = episode("ep-4", "", "src/x.ts", "");
  await assert.rejects(recordAfterTask(episodes, `ts-episodes-${process.pid}-bad`, bad), (error: unknown) => {
    assert.equal(errorReason(error), Reason.InvalidRequest);
    assert.deepEqual(
      fieldViolations(error).map((v) => v.field),
      ["episode.context.goal"],
    );
    return true;
  });
});
