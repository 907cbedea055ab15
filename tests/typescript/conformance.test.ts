// Node.js conformance: ajv gives every conformance vector the verdict its `valid` field states
// (the verdict the Python validators are held to), so a document means the same in both languages:
// through the separate schema files, through each type's bundle (generated/bundled/v1), and
// through the bundle with format assertion off, where only `needs_format_assertion` vectors pass.
import assert from "node:assert/strict";
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative } from "node:path";
import { describe, test } from "node:test";

import { Ajv2020, type ValidateFunction } from "ajv/dist/2020.js";
import addFormats from "ajv-formats";

import { findSchemaDir, SchemaValidator } from "../../examples/typescript/schemas.js";

interface Vector {
  description: string;
  data: unknown;
  valid: boolean;
  needs_format_assertion?: true;
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

const bundleDir = join(findSchemaDir(), "..", "..", "generated", "bundled", "v1");

/** The validator of one type's bundle, alone in an ajv of its own (the bundles share $ids). */
function bundleValidator(ref: string, formats: boolean): ValidateFunction {
  const ajv = new Ajv2020({ allErrors: true, strict: true, validateFormats: formats });
  if (formats) addFormats(ajv);
  const file = ref.slice(ref.lastIndexOf("/") + 1);
  return ajv.compile(JSON.parse(readFileSync(join(bundleDir, file), "utf8")) as object);
}

function verdict(name: string, got: boolean, expected: boolean, data: unknown, errors: unknown) {
  assert.equal(
    got,
    expected,
    `${name} says ${got ? "valid" : "invalid"} for ${JSON.stringify(data)}` +
      (got ? "" : `: ${JSON.stringify(errors)}`),
  );
}

const validator = new SchemaValidator();
for (const file of vectorFiles) {
  describe(file.name, () => {
    for (const group of file.json as Group[]) {
      const bundled = bundleValidator(group.schema.$ref, true);
      const bundledWithoutFormats = bundleValidator(group.schema.$ref, false);
      describe(group.description, () => {
        for (const vector of group.tests) {
          test(vector.description, () => {
            const problems = validator.violations(group.schema.$ref, vector.data);
            verdict("ajv", problems.length === 0, vector.valid, vector.data, problems);
            const inBundle = bundled(vector.data);
            verdict("ajv on its bundle", inBundle, vector.valid, vector.data, bundled.errors);
            verdict(
              "ajv on its bundle without format assertion",
              bundledWithoutFormats(vector.data),
              vector.needs_format_assertion ? true : vector.valid,
              vector.data,
              bundledWithoutFormats.errors,
            );
          });
        }
      });
    }
  });
}
