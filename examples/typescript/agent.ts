// A TypeScript agent that learns from its episodes in a himga server: it records what it did
// in a task (validated with the schemas first), then searches its episodes with the next task's
// TaskContext and prints the context it would put in its prompt.
//
//   make serve &                                  # a server on 127.0.0.1:50051
//   npm ci && npx tsc -p examples/typescript
//   node build/typescript/examples/typescript/agent.js 127.0.0.1:50051
//
// HIMGA_TOKEN for a server with an auth file; HIMGA_TLS_CA (and HIMGA_TLS_CERT, HIMGA_TLS_KEY for
// mutual TLS) for a server that speaks TLS.
import { connectEpisodes, contextBeforeTask, recordAfterTask } from "./episodes.js";
import { optionsFromEnv } from "./memory.js";
import { SchemaValidator } from "./schemas.js";
import type { EpisodeTrace, TaskContext } from "../../generated/typescript/schema/v1.js";

const target = process.argv[2] ?? process.env.HIMGA_TARGET ?? "127.0.0.1:50051";
const namespace = "example-typescript-agent";

const done: EpisodeTrace = {
  id: "ep-2025-03-01-ts-cache",
  task_id: "task-cache-stale",
  timestamp: "2025-03-01T09:00:00Z",
  duration_seconds: 420,
  agent: "ts-agent",
  context: {
    goal: "Fix stale prices served from the product cache",
    phase: "ACT",
    files_involved: ["src/cache/products.ts", "src/cache/keys.ts"],
  },
  action_log: [
    { t: 20, action: "run_tests", target: "npm test -- cache", result: "2 failed" },
    { t: 200, action: "edit_file", target: "src/cache/keys.ts", result: "saved" },
  ],
  outcome: "success",
  errors_encountered: [
    {
      type: "test_failure",
      message: "expected price 12.50, got 10.00 from the cache",
      resolution: "put the currency in the cache key",
    },
  ],
  files_read: ["src/cache/products.ts"],
  files_modified: ["src/cache/keys.ts"],
};

const problems = new SchemaValidator().violations("episode_trace", done);
if (problems.length > 0) throw new Error(`invalid episode: ${JSON.stringify(problems)}`);

const episodes = connectEpisodes(target, optionsFromEnv());
await recordAfterTask(episodes, namespace, done);
console.log(`recorded episode ${done.id}`);

const next: TaskContext = {
  goal: "The cache returns prices in the wrong currency; fix it",
  phase: "ACT",
  files_involved: ["src/cache/keys.ts"],
};
const { context, hits } = await contextBeforeTask(episodes, namespace, next);
for (const hit of hits) console.log(`found ${hit.episode?.id} (score ${hit.score.toFixed(2)})`);
console.log(`context for the prompt:\n${context}`);
