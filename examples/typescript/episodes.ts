// An agent's episodes in a himga server from Node.js: record an EpisodeTrace after a task, and
// search the episodes that matter with the next task's TaskContext before it starts. Documents
// are the schema types; a schema document is the proto message's ProtoJSON, so none of their
// fields is copied by hand.
import { fromJson, type JsonObject } from "@bufbuild/protobuf";
import { createClient, type Client } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";

import {
  EpisodeService,
  EpisodeTraceSchema,
  TaskContextSchema,
  type EpisodeHit,
  type EpisodeTraceJson,
  type TaskContextJson,
} from "../../generated/typescript/himga_proto/memory/v1/memory_pb.js";
import type { EpisodeTrace, TaskContext } from "../../generated/typescript/schema/v1.js";

/** An EpisodeService client of the himga server at `target` ("host:port", plaintext gRPC). */
export function connectEpisodes(target: string): Client<typeof EpisodeService> {
  return createClient(EpisodeService, createGrpcTransport({ baseUrl: `http://${target}` }));
}

/** The proto of a schema-valid EpisodeTrace document (`git_commit: null` is the unset field). */
export function episodeMessage(episode: EpisodeTrace) {
  const { $schema: _schema, git_commit: commit, ...fields } = episode;
  const json: EpisodeTraceJson =
    commit === null || commit === undefined ? fields : { ...fields, git_commit: commit };
  return fromJson(EpisodeTraceSchema, json as JsonObject);
}

/** Store the episode of a task that just ended. */
export async function recordAfterTask(
  client: Client<typeof EpisodeService>,
  namespace: string,
  episode: EpisodeTrace,
): Promise<void> {
  await client.recordEpisode({ namespace, episode: episodeMessage(episode) });
}

/** What the agent's past says about its next task: the context for its prompt (at most
 * `budget` tokens of 4 characters) and the episodes behind it, best first. */
export async function contextBeforeTask(
  client: Client<typeof EpisodeService>,
  namespace: string,
  task: TaskContext,
  text = "",
  budget = 500,
): Promise<{ context: string; hits: EpisodeHit[] }> {
  const { $schema: _schema, ...fields } = task;
  const taskJson: TaskContextJson = fields;
  const answer = await client.searchEpisodes({
    namespace,
    task: fromJson(TaskContextSchema, taskJson),
    query: text,
    limit: 3,
    maxContextTokens: budget,
  });
  return { context: answer.context, hits: answer.hits };
}
