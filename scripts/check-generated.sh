#!/usr/bin/env bash
# Fails when generated/ is not exactly what `make generate` makes of schemas/ and proto/:
# a hand edit of a generated file, or a source changed without regenerating.
# It regenerates into a scratch copy of the tree, so the working tree is left as it is.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT

# Copy the sources and the generator scripts (not generated/), then regenerate there.
cd "$root"
tar --exclude=./generated --exclude=./.venv --exclude=./.git --exclude='*/node_modules' \
    --exclude=./data -cf - . | tar -xf - -C "$scratch"
mkdir -p "$scratch/generated"
cp -a generated/. "$scratch/generated/"
# The pinned npm tools are reused as installed (generate-typescript.sh reinstalls them when the
# lock file is newer), so the check needs no network.
if [ -d node_modules ]; then ln -s "$root/node_modules" "$scratch/node_modules"; fi
bash "$scratch/scripts/generate.sh" >/dev/null 2>"$scratch/.generate.log" || {
  cat "$scratch/.generate.log" >&2; exit 1; }

if ! diff -r --exclude=node_modules --exclude=__pycache__ "$root/generated" "$scratch/generated" >"$scratch/.diff"; then
  cat "$scratch/.diff" >&2
  echo >&2
  echo "generated/ is stale or was edited by hand: run 'make generate' and commit the result." >&2
  exit 1
fi
echo "generated/ matches schemas/ and proto/."
