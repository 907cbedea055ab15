// The proto mirrors the schemas: every valid conformance document of a type that is also a proto
// message (Message, Session: same name) reads as that message's ProtoJSON, keeps each of its
// fields, and the message's ProtoJSON output is again valid against the schema.
import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";

import { fromJson, toJson, type JsonObject } from "@bufbuild/protobuf";

import {
  file_himga_proto_memory_v1_memory,
  type MessageJson,
  type SessionJson,
} from "../../generated/typescript/himga_proto/memory/v1/memory_pb.js";
import type { Message, Session } from "../../generated/typescript/schema/v1.js";
import { findSchemaDir, SchemaValidator } from "../../examples/typescript/schemas.js";

// At compile time: the types generated from the schemas and from the proto have the same fields
// (`$schema` aside); tsc refuses to build the tests when they part.
type Equal<A, B> =
  (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false;
type DataKeys<T> = Exclude<keyof T, "$schema">;
export const sameFields: [
  Equal<DataKeys<Message>, keyof MessageJson>,
  Equal<DataKeys<Session>, keyof SessionJson>,
] = [true, true];

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

test("Message and Session are both schemas and proto messages", () => {
  assert.deepEqual(mirrored.map((m) => m.title).sort(), ["Message", "Session"]);
});

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
      const proto = fromJson(message, fields);
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
        assert.deepEqual(withoutEmpty(back[key]), withoutEmpty(value), `${description}: ${key}`);
      }
    }
  });
}

/** The value with every empty object and empty array inside it left out. */
function withoutEmpty(value: unknown): unknown {
  if (Array.isArray(value)) {
    return value.map(withoutEmpty);
  }
  if (value !== null && typeof value === "object") {
    const kept = Object.entries(value)
      .map(([key, inner]) => [key, withoutEmpty(inner)] as const)
      .filter(([, inner]) => !isEmpty(inner));
    return Object.fromEntries(kept);
  }
  return value;
}

function isEmpty(value: unknown): boolean {
  return (
    (Array.isArray(value) && value.length === 0) ||
    (value !== null && typeof value === "object" && Object.keys(value).length === 0)
  );
}
