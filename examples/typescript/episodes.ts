// An agent's episodes in a himga server from Node.js: record an EpisodeTrace after a task, and
// search the episodes that matter with the next task's TaskContext before it starts. Documents
// are the schema types; a schema document is the proto message's ProtoJSON, so none of their
// fields is copied by hand.
import { type JsonObject } from "@bufbuild/protobuf";
import { createClient, type Client } from "@connectrpc/connect";

import {
  EpisodeService,
  EpisodeTraceSchema,
  TaskContextSchema,
  type EpisodeHit,
  type EpisodeTraceJson,
  type TaskContextJson,
} from "../../generated/typescript/himga_proto/memory/v1/memory_pb.js";
import type { EpisodeTrace, TaskContext } from "../../generated/typescript/schema/v1.js";
import { documentMessage, grpcTransport, type ConnectOptions } from "./memory.js";

/** An EpisodeService client of the himga server at `target` ("host:port"): plaintext gRPC, or
 * TLS when `options.ca` is given, with `options.token` on every call; the options and the
 * transport are connectMemory's (grpcTransport). */
export function connectEpisodes(
  target: string,
  options: ConnectOptions = {},
): Client<typeof EpisodeService> {
  return createClient(EpisodeService, grpcTransport(target, options));
}

/** The proto of a schema-valid EpisodeTrace document (`git_commit: null` is the unset field).
 * Its date-times are read as connectMemory's ingestItem reads them (documentMessage): `t` and
 * `z` in lower case are taken, and one a proto Timestamp cannot hold is thrown as the server
 * answers it, naming the field (`timestamp`, `last_accessed`). */
export function episodeMessage(episode: EpisodeTrace) {
  return episodeAt(episode, "");
}

/** episodeMessage, its fields named under `at`. */
function episodeAt(episode: EpisodeTrace, at: string) {
  const { $schema: _schema, git_commit: commit, ...fields } = episode;
  const json: EpisodeTraceJson =
    commit === null || commit === undefined ? fields : { ...fields, git_commit: commit };
  return documentMessage(EpisodeTraceSchema, json as JsonObject, at);
}

/** Store the episode of a task that just ended. An episode the request cannot carry is refused
 * as the server refuses it, naming `episode.timestamp` (episodeMessage). */
export async function recordAfterTask(
  client: Client<typeof EpisodeService>,
  namespace: string,
  episode: EpisodeTrace,
): Promise<void> {
  await client.recordEpisode({ namespace, episode: episodeAt(episode, "episode") });
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
    task: documentMessage(TaskContextSchema, taskJson as JsonObject, "task"),
    query: text,
    limit: 3,
    maxContextTokens: budget,
  });
  return { context: answer.context, hits: answer.hits };
}
