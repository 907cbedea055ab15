#!/usr/bin/env bash
# The npm package himga-memory (packages/npm/): built with the pinned tsc, its package.json made
# from the root package.json's runtime dependencies and pyproject.toml's version (one source of
# each), packed with `npm pack` into OUTDIR. Prints the tarball's path.
set -euo pipefail
out="$(cd "${1:?usage: scripts/npm-package.sh OUTDIR}" && pwd)"
cd "$(dirname "$0")/.."
bash scripts/node-modules.sh
stage="$(mktemp -d)"
trap 'rm -rf "$stage"' EXIT
node_modules/.bin/tsc -p packages/npm --outDir "$stage/dist"
mkdir -p "$stage/schemas"
cp -r schemas/v1 "$stage/schemas/v1"
cp packages/npm/README.md "$stage/"
version="$(sed -n 's/^version = "\(.*\)"$/\1/p' pyproject.toml | head -n 1)"
VERSION="$version" node --input-type=module -e '
import { readFileSync } from "node:fs";
const root = JSON.parse(readFileSync("package.json", "utf8"));
const entry = "./dist/packages/npm/index";
console.log(JSON.stringify({
  name: "himga-memory",
  version: process.env.VERSION,
  description: "himga: a gRPC client of its MemoryService and EpisodeService, and a validator of its JSON Schemas",
  license: root.license,
  type: "module",
  engines: root.engines,
  exports: { ".": { types: `${entry}.d.ts`, import: `${entry}.js` } },
  types: `${entry}.d.ts`,
  files: ["dist", "schemas", "README.md"],
  dependencies: Object.fromEntries(Object.entries(root.dependencies).map(([n, v]) => [n, `^${v}`])),
}, null, 2));
' > "$stage/package.json"
(cd "$stage" && npm pack --pack-destination "$out" --loglevel=error --silent >/dev/null)
echo "$out/himga-memory-$version.tgz"
