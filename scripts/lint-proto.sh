#!/usr/bin/env bash
# Lints proto/ with buf (rules and their written exceptions in buf.yaml), then checks it against
# the newest release tag (v*) with `buf breaking`: a change that would break v1 clients fails.
# Until a release is tagged there is nothing to compare with, and the script says so.
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
if [ -z "$tag" ]; then
  echo "buf breaking: no release tag (v*) exists yet; nothing to compare with."
  exit 0
fi
"$buf" breaking --against ".git#tag=$tag"
echo "buf breaking: proto/ is compatible with $tag."
