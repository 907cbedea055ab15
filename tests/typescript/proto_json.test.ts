// The proto mirrors the schemas: every valid conformance document of a type that is also a proto
// message (Message, Session, EpisodeTrace, ActionEntry, ErrorEntry, TaskContext: same name)
// reads as that message's ProtoJSON, keeps each of its fields as data (an absent key and its
// default alike, a null the unset field, a date-time the same instant), and the message's
// ProtoJSON output is again valid against the schema.
import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";

import { fromJson, toJson, type JsonObject } from "@bufbuild/protobuf";

import {
  file_himga_proto_memory_v1_memory,
  type ActionEntryJson,
  type EpisodeTraceJson,
  type ErrorEntryJson,
  type MessageJson,
  type SessionJson,
  type TaskContextJson,
} from "../../generated/typescript/himga_proto/memory/v1/memory_pb.js";
import type {
  ActionEntry,
  EpisodeTrace,
  ErrorEntry,
  Message,
  Session,
  TaskContext,
} from "../../generated/typescript/schema/v1.js";
import { findSchemaDir, SchemaValidator } from "../../examples/typescript/schemas.js";

// At compile time: the types generated from the schemas and from the proto have the same fields
// (`$schema` aside); tsc refuses to build the tests when they part.
type Equal<A, B> =
  (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false;
type DataKeys<T> = Exclude<keyof T, "$schema">;
export const sameFields: [
  Equal<DataKeys<Message>, keyof MessageJson>,
  Equal<DataKeys<Session>, keyof SessionJson>,
  Equal<DataKeys<EpisodeTrace>, keyof EpisodeTraceJson>,
  Equal<DataKeys<ActionEntry>, keyof ActionEntryJson>,
  Equal<DataKeys<ErrorEntry>, keyof ErrorEntryJson>,
  Equal<DataKeys<TaskContext>, keyof TaskContextJson>,
] = [true, true, true, true, true, true];

interface Group {
  schema: { $ref: string };
  tests: { description: string; data: unknown; valid: boolean }[];
}

const schemaDir = findSchemaDir();
const conformanceDir = join(schemaDir, "..", "conformance");
const validator = new SchemaValidator(schemaDir);

// schema $id -> the proto message of the same name, for the schemas that have one
const mirrored = readdirSync(schemaDir)
  .filter((f) => f.endsWith(".json"))
  .flatMap((file) => {
    const schema = JSON.parse(readFileSync(join(schemaDir, file), "utf8")) as {
      $id: string;
      title: string;
    };
    const message = file_himga_proto_memory_v1_memory.messages.find((m) => m.name === schema.title);
    return message === undefined ? [] : [{ id: schema.$id, title: schema.title, message }];
  });

test("every record type is both a schema and a proto message", () => {
  assert.deepEqual(mirrored.map((m) => m.title).sort(), [
    "ActionEntry",
    "EpisodeTrace",
    "ErrorEntry",
    "Message",
    "Session",
    "TaskContext",
  ]);
});

const DATE_TIME = /^\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(\.\d+)?[Zz]$/;

/** The document as ProtoJSON parsers read it: their Timestamp parsers take only an upper-case
 * `T` and `Z`, one of RFC 3339's two spellings. */
function protojsonInput(value: unknown): unknown {
  if (typeof value === "string" && DATE_TIME.test(value)) return value.toUpperCase();
  if (Array.isArray(value)) return value.map(protojsonInput);
  if (value !== null && typeof value === "object") {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, protojsonInput(v)]));
  }
  return value;
}

/** Whether `back` holds the data of `sent`: the same values, date-times as instants, a null as
 * an absent key; keys only `back` has must be empty (defaults ProtoJSON writes). */
function sameData(back: unknown, sent: unknown): boolean {
  if (sent === null) return back === undefined || back === null;
  if (typeof sent === "string" && DATE_TIME.test(sent) && typeof back === "string") {
    return Date.parse(sent.toUpperCase()) === Date.parse(back);
  }
  if (Array.isArray(sent)) {
    return Array.isArray(back) && back.length === sent.length && sent.every((v, i) => sameData(back[i], v));
  }
  if (typeof sent === "object" && sent !== undefined) {
    if (back === null || typeof back !== "object") return false;
    const held = back as Record<string, unknown>;
    const given = sent as Record<string, unknown>;
    const extra = Object.keys(held).filter((k) => !(k in given));
    return (
      Object.entries(given).every(([k, v]) => sameData(held[k], v)) &&
      extra.every((k) => [0, "", false].includes(held[k] as never) || isEmptyArray(held[k]) || isDefaultObject(held[k]))
    );
  }
  return back === sent;
}

function isEmptyArray(value: unknown): boolean {
  return Array.isArray(value) && value.length === 0;
}

function isDefaultObject(value: unknown): boolean {
  return (
    value !== null &&
    typeof value === "object" &&
    !Array.isArray(value) &&
    Object.values(value).every((v) => [0, "", false].includes(v as never) || isEmptyArray(v))
  );
}

function vectorGroups(dir: string): Group[] {
  return readdirSync(dir, { recursive: true, encoding: "utf8" })
    .filter((name) => name.endsWith(".json"))
    .sort()
    .map((name) => JSON.parse(readFileSync(join(dir, name), "utf8")) as unknown)
    .filter((json): json is Group[] => Array.isArray(json))
    .flat();
}

for (const { id, title, message } of mirrored) {
  const documents = vectorGroups(conformanceDir)
    .filter((group) => group.schema.$ref === id)
    .flatMap((group) => group.tests.filter((t) => t.valid));

  test(`valid ${title} documents are ${title} ProtoJSON, and back`, () => {
    assert.ok(documents.length > 0, `no valid ${title} vectors`);
    for (const { description, data } of documents) {
      // `$schema` names the schema a document follows; it is no data, so the proto lacks it.
      const { $schema: _ignored, ...fields } = data as JsonObject;
      const proto = fromJson(message, protojsonInput(fields) as JsonObject);
      const back = toJson(message, proto, { alwaysEmitImplicit: true }) as JsonObject;
      assert.deepEqual(
        validator.violations(id, back),
        [],
        `${description}: ${JSON.stringify(back)}`,
      );
      // Each field comes back as it was; an empty map or list, which the proto cannot tell from
      // an absent one, may come back where the document left it out (a nested message's
      // metadata), so empty ones are left out of the comparison.
      for (const [key, value] of Object.entries(fields)) {
        assert.ok(sameData(back[key], value), `${description}: ${key}: ${JSON.stringify(back[key])}`);
      }
    }
  });
}
