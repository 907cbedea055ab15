// Keeping memory in a himga server from Node.js: a gRPC client of the generated MemoryService,
// documents built from the schema types and turned into proto messages by their JSON form.
import { create, fromJson } from "@bufbuild/protobuf";
import { readFileSync } from "node:fs";

import {
  Code,
  ConnectError,
  createClient,
  type Client,
  type Interceptor,
} from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";

import {
  BadRequestSchema,
  ErrorInfoSchema,
} from "../../generated/typescript/google/rpc/error_details_pb.js";
import {
  IngestItemSchema,
  MemoryService,
  MessageSchema,
  SessionSchema,
  type IngestItem,
  type MessageJson,
  type SessionJson,
} from "../../generated/typescript/himga_proto/memory/v1/memory_pb.js";
import type { Message, Session } from "../../generated/typescript/schema/v1.js";

/** How to reach a server: a bearer token (for a server with an auth file) and TLS files. */
export interface ConnectOptions {
  /** Sent as "authorization: Bearer TOKEN" with every call. */
  token?: string | undefined;
  /** TLS: the PEM file of the CA the server's certificate must come from. */
  ca?: string | undefined;
  /** Mutual TLS: the client's certificate and key, PEM files. */
  cert?: string | undefined;
  key?: string | undefined;
}

/** A MemoryService client of the himga server at `target` ("host:port"): plaintext gRPC, or TLS
 * when `options.ca` is given. Its HTTP/2 connection opens on the first call and does not keep the
 * process alive when idle. */
export function connectMemory(
  target: string,
  options: ConnectOptions = {},
): Client<typeof MemoryService> {
  const { token, ca, cert, key } = options;
  const interceptors: Interceptor[] = [];
  if (token) {
    interceptors.push((next) => async (request) => {
      request.header.set("authorization", `Bearer ${token}`);
      return await next(request);
    });
  }
  const tls = ca
    ? {
        ca: readFileSync(ca),
        ...(cert ? { cert: readFileSync(cert) } : {}),
        ...(key ? { key: readFileSync(key) } : {}),
      }
    : undefined;
  const transport = createGrpcTransport({
    baseUrl: `${tls ? "https" : "http"}://${target}`,
    interceptors,
    ...(tls ? { nodeOptions: tls } : {}),
  });
  return createClient(MemoryService, transport);
}

/**
 * One IngestBatch item from a schema-valid Message and Session. A schema document is the proto
 * message's ProtoJSON (the proto fields carry the schemas' names; tsc checks the types agree),
 * so no field is copied by hand. The session's messages stay out, as the service expects.
 */
export function ingestItem(message: Message, session: Session): IngestItem {
  const { messages: _messages, $schema: _sessionSchema, ...sessionFields } = session;
  const { $schema: _messageSchema, ...messageFields } = message;
  const messageJson: MessageJson = messageFields;
  const sessionJson: SessionJson = sessionFields;
  return create(IngestItemSchema, {
    message: fromJson(MessageSchema, messageJson),
    session: fromJson(SessionSchema, sessionJson),
  });
}

/** A field the server rejected, as its google.rpc.BadRequest detail names it. */
export interface FieldViolation {
  field: string;
  description: string;
}

/** The field violations of an INVALID_ARGUMENT error (empty for any other error). */
export function fieldViolations(error: unknown): FieldViolation[] {
  const connectError = ConnectError.from(error);
  if (connectError.code !== Code.InvalidArgument) return [];
  return connectError
    .findDetails(BadRequestSchema)
    .flatMap((badRequest) => badRequest.fieldViolations)
    .map(({ field, description }) => ({ field, description }));
}

/** The ErrorInfo domain of every error a himga server sends. */
export const ERROR_DOMAIN = "himga.dev";

/**
 * The reasons a himga server gives (the comments on MemoryService and EpisodeService in
 * memory.proto list them).
 * Branch on these, not on the status code: two kinds share FAILED_PRECONDITION.
 */
export const Reason = {
  /** INVALID_ARGUMENT: the request breaks a rule; `fieldViolations` names the fields. */
  InvalidRequest: "INVALID_REQUEST",
  /** FAILED_PRECONDITION: the namespace was opened with another memory than the call names. */
  MemoryMismatch: "MEMORY_MISMATCH",
  /** FAILED_PRECONDITION: the namespace's stored data is in a form this server does not read. */
  IncompatibleStore: "INCOMPATIBLE_STORE",
  /** NOT_FOUND: GetEpisode named an id the namespace does not hold. */
  NotFound: "NOT_FOUND",
  /** UNAUTHENTICATED: the server needs a bearer token and got none, or an unknown one. */
  Unauthenticated: "UNAUTHENTICATED",
  /** PERMISSION_DENIED: the token does not grant the call's right on its namespace. */
  PermissionDenied: "PERMISSION_DENIED",
  /** CANCELLED: the call ended before its write committed; nothing was stored. */
  CallerGone: "CALLER_GONE",
  /** UNAVAILABLE: the server is stopping; nothing was stored, send it again. */
  ServerStopping: "SERVER_STOPPING",
  /** UNAVAILABLE: the store cannot write (a full disk); nothing was stored. */
  StoreUnavailable: "STORE_UNAVAILABLE",
  /** RESOURCE_EXHAUSTED: out of file descriptors or memory for the call; nothing changed. */
  ResourceExhausted: "RESOURCE_EXHAUSTED",
  /** FAILED_PRECONDITION: the namespace's memory cannot do what the call asks (a filter, a
   * delete, a listing), and refuses rather than ignore part of the request. */
  Unsupported: "UNSUPPORTED",
  /** INTERNAL: the server failed unexpectedly (it logs why). */
  Internal: "INTERNAL",
} as const;

/** The ErrorInfo reason of a failed call, or undefined when it carries none (a status sent
 * before the server's code ran: RESOURCE_EXHAUSTED, UNAVAILABLE, DEADLINE_EXCEEDED). */
export function errorReason(error: unknown): string | undefined {
  return ConnectError.from(error)
    .findDetails(ErrorInfoSchema)
    .find((info) => info.domain === ERROR_DOMAIN)?.reason;
}
