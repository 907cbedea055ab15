// Keeping memory in a himga server from Node.js: a gRPC client of the generated MemoryService,
// documents built from the schema types and turned into proto messages by their JSON form.
import {
  create,
  fromJson,
  type DescMessage,
  type JsonObject,
  type JsonValue,
  type MessageShape,
} from "@bufbuild/protobuf";
import { TimestampSchema } from "@bufbuild/protobuf/wkt";
import { readFileSync } from "node:fs";

import {
  Code,
  ConnectError,
  createClient,
  type Client,
  type Interceptor,
  type Transport,
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

/** The options the examples read from the environment: HIMGA_TOKEN for a server with an auth
 * file; HIMGA_TLS_CA (and HIMGA_TLS_CERT with HIMGA_TLS_KEY, for mutual TLS) for one that speaks
 * TLS. */
export function optionsFromEnv(env: NodeJS.ProcessEnv = process.env): ConnectOptions {
  return {
    token: env.HIMGA_TOKEN,
    ca: env.HIMGA_TLS_CA,
    cert: env.HIMGA_TLS_CERT,
    key: env.HIMGA_TLS_KEY,
  };
}

/** The gRPC transport to the himga server at `target` ("host:port") that connectMemory and
 * connectEpisodes share: plaintext, or TLS when `options.ca` is given; every call carries
 * `options.token`. A client certificate without the CA, or without its key, is an error, not a
 * plaintext connection. Its HTTP/2 connection opens on the first call and does not keep the
 * process alive when idle. */
export function grpcTransport(target: string, options: ConnectOptions = {}): Transport {
  const { token, ca, cert, key } = options;
  if (!cert !== !key) {
    throw new Error("a client certificate and its key go together: give both or neither");
  }
  if (cert && !ca) throw new Error("a client certificate needs the server's CA as well");
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
        ...(cert && key ? { cert: readFileSync(cert), key: readFileSync(key) } : {}),
      }
    : undefined;
  return createGrpcTransport({
    baseUrl: `${tls ? "https" : "http"}://${target}`,
    interceptors,
    ...(tls ? { nodeOptions: tls } : {}),
  });
}

/** A MemoryService client of the himga server at `target` ("host:port"): plaintext gRPC, or TLS
 * when `options.ca` is given (grpcTransport). */
export function connectMemory(
  target: string,
  options: ConnectOptions = {},
): Client<typeof MemoryService> {
  return createClient(MemoryService, grpcTransport(target, options));
}

/**
 * One IngestBatch item from a schema-valid Message and Session. A schema document is the proto
 * message's ProtoJSON (the proto fields carry the schemas' names; tsc checks the types agree),
 * so no field is copied by hand. The session's messages stay out, as the service expects.
 * A date-time is read as the server's HTTP port reads it (documentMessage); one a proto
 * Timestamp cannot hold is thrown as the server answers it, naming `message.timestamp` or
 * `session.timestamp`.
 */
export function ingestItem(message: Message, session: Session): IngestItem {
  const { messages: _messages, $schema: _sessionSchema, ...sessionFields } = session;
  const { $schema: _messageSchema, ...messageFields } = message;
  const messageJson: MessageJson = messageFields;
  const sessionJson: SessionJson = sessionFields;
  const found: FieldViolation[] = [];
  const messageJsonHeld = readableJson(MessageSchema, messageJson, "message", found);
  const sessionJsonHeld = readableJson(SessionSchema, sessionJson, "session", found);
  if (found.length > 0) throw invalidRequest(found);
  return create(IngestItemSchema, {
    message: fromJson(MessageSchema, messageJsonHeld),
    session: fromJson(SessionSchema, sessionJsonHeld),
  });
}

/**
 * The proto message of a schema document's fields (`$schema` left out), read as the server's
 * HTTP port reads a request: a date-time may write `t` and `z` in lower case, as the schemas
 * allow and the Timestamp's ProtoJSON parser does not, so every Timestamp field is upper-cased
 * first. An RFC 3339 date-time a proto Timestamp cannot hold (more than 9 fraction digits, year
 * 0000, a leap second :60) is thrown as a ConnectError like the server's answer to it:
 * INVALID_ARGUMENT, reason INVALID_REQUEST, a BadRequest naming each such field (under `at`, the
 * document's path in its request) and its rule, before any call is made.
 */
export function documentMessage<Desc extends DescMessage>(
  schema: Desc,
  fields: JsonObject,
  at = "",
): MessageShape<Desc> {
  const found: FieldViolation[] = [];
  const json = readableJson(schema, fields, at, found);
  if (found.length > 0) throw invalidRequest(found);
  return fromJson(schema, json);
}

/** The rule the server gives for a Timestamp it cannot read. */
export const TIMESTAMP_RULE = "must be an RFC 3339 date-time in UTC, such as 2024-05-08T13:56:00Z";

const RFC_3339 =
  /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(?:\.(\d+))?(?:Z|[+-]\d{2}:\d{2})$/;

/** Why `text` (upper-cased) is no Timestamp's ProtoJSON, or undefined when it is one. A day the
 * calendar lacks (2023-02-30) or an hour 24, which the ProtoJSON parser here would roll over
 * into the next month or day, is refused as the server refuses it. */
function timestampProblem(text: string): string | undefined {
  const match = RFC_3339.exec(text);
  if (match === null) return TIMESTAMP_RULE;
  const [year, month, day, hour, minute, second] = match.slice(1, 7).map(Number) as number[];
  if (second === 60) return `${TIMESTAMP_RULE}; a proto Timestamp has no leap second (:60)`;
  if ((match[7] ?? "").length > 9) {
    return `${TIMESTAMP_RULE}; a proto Timestamp holds at most 9 fraction digits`;
  }
  const leap = year! % 4 === 0 && (year! % 100 !== 0 || year! % 400 === 0);
  const days = [31, leap ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][month! - 1];
  if (days === undefined || day! < 1 || day! > days || hour! > 23 || minute! > 59 || second! > 59) {
    return TIMESTAMP_RULE;
  }
  try {
    fromJson(TimestampSchema, text);
  } catch {
    const range = "0001-01-01T00:00:00Z to 9999-12-31T23:59:59.999999999Z";
    return Number.isNaN(Date.parse(text.replace(/\.\d+/, "")))
      ? TIMESTAMP_RULE
      : `${TIMESTAMP_RULE}; a proto Timestamp holds ${range}`;
  }
  return undefined;
}

/** `json`, the ProtoJSON of a `desc` message at `at`, with every Timestamp field's string
 * upper-cased (a copy; the caller's document is left as it is); each one no Timestamp can hold
 * is added to `found`. Anything else is left for the parser to judge. */
function readableJson(
  desc: DescMessage,
  json: JsonObject,
  at: string,
  found: FieldViolation[],
): JsonObject {
  const out: JsonObject = {};
  for (const [key, value] of Object.entries(json)) {
    const field = desc.fields.find((f) => f.jsonName === key || f.name === key);
    const path = at ? `${at}.${key}` : key;
    let held: JsonValue | undefined = value;
    if (field?.fieldKind === "message") {
      held = readableValue(field.message, value, path, found);
    } else if (field?.fieldKind === "list" && field.listKind === "message" && Array.isArray(value)) {
      held = value.map((item, index) =>
        readableValue(field.message, item, `${path}[${index}]`, found),
      );
    }
    if (held !== undefined) out[key] = held;
  }
  return out;
}

function readableValue(
  desc: DescMessage,
  value: JsonValue,
  path: string,
  found: FieldViolation[],
): JsonValue {
  if (desc.typeName === TimestampSchema.typeName) {
    if (typeof value !== "string") return value; // the parser names the mistake
    const upper = value.toUpperCase();
    const problem = timestampProblem(upper);
    if (problem !== undefined) found.push({ field: path, description: problem });
    return upper;
  }
  if (desc.typeName.startsWith("google.protobuf.")) return value; // a JSON form of its own
  if (value === null || typeof value !== "object" || Array.isArray(value)) return value;
  return readableJson(desc, value, path, found);
}

/** The error the server answers a request with these field violations: INVALID_ARGUMENT,
 * reason INVALID_REQUEST, a google.rpc.BadRequest; its message is the server's one line. */
function invalidRequest(violations: FieldViolation[]): ConnectError {
  return new ConnectError(
    violations.map(({ field, description }) => `${field}: ${description}`).join("; "),
    Code.InvalidArgument,
    undefined,
    [
      { desc: ErrorInfoSchema, value: { reason: Reason.InvalidRequest, domain: ERROR_DOMAIN } },
      { desc: BadRequestSchema, value: { fieldViolations: violations } },
    ],
  );
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
