// Node.js conformance: ajv gives every conformance vector the verdict its `valid` field states
// (the verdict the Python validators are held to), so a document means the same in both languages.
import assert from "node:assert/strict";
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative } from "node:path";
import { describe, test } from "node:test";

import { Ajv2020 } from "ajv/dist/2020.js";
import addFormats from "ajv-formats";

import { findSchemaDir, SchemaValidator } from "../../examples/typescript/schemas.js";

interface Vector {
  description: string;
  data: unknown;
  valid: boolean;
}
interface Group {
  description: string;
  schema: { $ref: string };
  tests: Vector[];
}

const conformanceDir = join(findSchemaDir(), "..", "conformance");

function jsonFiles(dir: string): string[] {
  return readdirSync(dir)
    .sort()
    .flatMap((name) => {
      const path = join(dir, name);
      if (statSync(path).isDirectory()) return jsonFiles(path);
      return name.endsWith(".json") ? [path] : [];
    });
}

// Files holding a JSON array are vector files; an object with an $id is the schema they follow.
const documents = jsonFiles(conformanceDir).map((path) => ({
  path,
  name: relative(conformanceDir, path),
  json: JSON.parse(readFileSync(path, "utf8")) as unknown,
}));
const vectorFiles = documents.filter((d) => Array.isArray(d.json));
const metaSchemas = documents.filter((d) => !Array.isArray(d.json));

test("the conformance folder holds vectors for every schema", () => {
  const covered = new Set(
    vectorFiles.flatMap((f) => (f.json as Group[]).map((group) => group.schema.$ref)),
  );
  const schemaFiles = readdirSync(findSchemaDir()).filter((f) => f.endsWith(".json"));
  assert.ok(schemaFiles.length > 0);
  for (const file of schemaFiles) {
    assert.ok(covered.has(`https://himga.dev/schemas/v1/${file}`), `no vectors for ${file}`);
  }
});

test("every vector file follows the vectors' own schema", () => {
  const ajv = new Ajv2020({ allErrors: true });
  addFormats(ajv);
  assert.ok(metaSchemas.length > 0, `no vectors schema in ${conformanceDir}`);
  for (const meta of metaSchemas) ajv.addSchema(meta.json as object);
  for (const file of vectorFiles) {
    const ok = metaSchemas.some((meta) => ajv.validate(meta.json as object, file.json));
    assert.ok(ok, `${file.name}: ${ajv.errorsText()}`);
  }
});

const validator = new SchemaValidator();
for (const file of vectorFiles) {
  describe(file.name, () => {
    for (const group of file.json as Group[]) {
      describe(group.description, () => {
        for (const vector of group.tests) {
          test(vector.description, () => {
            const problems = validator.violations(group.schema.$ref, vector.data);
            assert.equal(
              problems.length === 0,
              vector.valid,
              `ajv says ${problems.length === 0 ? "valid" : "invalid"} for ${JSON.stringify(vector.data)}` +
                (problems.length ? `: ${JSON.stringify(problems)}` : ""),
            );
          });
        }
      });
    }
  });
}
