// Validating himga documents in Node.js: ajv (draft 2020-12, formats checked) loaded with every
// schema of schemas/v1, so the cross-file $refs resolve offline by $id.
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

import { Ajv2020, type ErrorObject } from "ajv/dist/2020.js";
import addFormats from "ajv-formats";

export const SCHEMA_BASE = "https://himga.dev/schemas/v1/";

/** The schemas/v1 folder of the checkout this file sits in (its source or its build output). */
export function findSchemaDir(from: string = dirname(fileURLToPath(import.meta.url))): string {
  for (let dir = resolve(from); ; dir = dirname(dir)) {
    const candidate = join(dir, "schemas", "v1");
    if (existsSync(join(candidate, "message.json"))) return candidate;
    if (dirname(dir) === dir) throw new Error(`no schemas/v1 folder above ${from}`);
  }
}

/** A problem found in a document: where (a JSON pointer; "" is the document) and which rule. */
export interface Violation {
  path: string;
  message: string;
}

/** Validates documents against the himga schemas, by a type's file name or its full $id. */
export class SchemaValidator {
  private readonly ajv = new Ajv2020({ allErrors: true, strict: true });

  constructor(schemaDir: string = findSchemaDir()) {
    addFormats(this.ajv);
    for (const file of readdirSync(schemaDir)
      .filter((f) => f.endsWith(".json"))
      .sort()) {
      this.ajv.addSchema(JSON.parse(readFileSync(join(schemaDir, file), "utf8")));
    }
  }

  /** Every violation of `document` against the schema named `schema` ("message" or its $id). */
  violations(schema: string, document: unknown): Violation[] {
    const id = schema.includes("://") ? schema : `${SCHEMA_BASE}${schema}.json`;
    const validate = this.ajv.getSchema(id);
    if (validate === undefined) throw new Error(`unknown schema ${id}`);
    if (validate(document)) return [];
    return (validate.errors ?? []).map((e: ErrorObject) => ({
      path: e.instancePath,
      message: describe(e),
    }));
  }

  /** Whether `document` is valid against the schema named `schema`. */
  isValid(schema: string, document: unknown): boolean {
    return this.violations(schema, document).length === 0;
  }
}

/** ajv's message, naming the property it is about when the message does not. */
function describe(error: ErrorObject): string {
  const extra =
    error.keyword === "additionalProperties" ? `: ${error.params.additionalProperty}` : "";
  return `${error.message ?? error.keyword}${extra} (${error.schemaPath})`;
}
