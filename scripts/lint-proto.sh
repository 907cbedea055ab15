#!/usr/bin/env bash
# Lints proto/ with buf (rules and their written exceptions in buf.yaml), then checks it against
# the newest release tag (v*) with `buf breaking`: a change that would break v1 clients fails.
# A clone without the tag compares with v0.1.0's commit, pinned below.
# buf is @bufbuild/buf from npm, pinned in package-lock.json (scripts/node-modules.sh installs
# it).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"

buf=node_modules/.bin/buf
bash scripts/node-modules.sh

"$buf" lint
echo "buf lint: proto/ follows the rules in buf.yaml."

if ! git rev-parse --git-dir >/dev/null 2>&1; then
  echo "buf breaking: not a git checkout, so no release tag to compare with; skipped."
  exit 0
fi
tag="$(git tag --list 'v*' --sort=-version:refname | head -n 1)"
if [ -n "$tag" ]; then
  "$buf" breaking --against ".git#tag=$tag"
  echo "buf breaking: proto/ is compatible with $tag."
  exit 0
fi
# A clone without tags still holds v0.1.0's commit: compare with it, so the guard never skips.
v010=9ec10dd30e147f5b4d3fd351d109ac5f30009a70
if ! git cat-file -e "$v010^{commit}" 2>/dev/null; then
  echo "buf breaking: neither a release tag nor v0.1.0's commit is in this clone (shallow?); skipped."
  exit 0
fi
"$buf" breaking --against "$(git rev-parse --git-common-dir)#ref=$v010"
echo "buf breaking: proto/ is compatible with v0.1.0 ($v010)."
