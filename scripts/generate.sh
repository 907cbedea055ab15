#!/usr/bin/env bash
# `make generate`: rewrites all of generated/ from schemas/ and proto/, one generator per
# language, then one bundled schema per type (every schema it references embedded), for tools
# that would otherwise download the references. Each generator clears its own output first,
# pins its tools and is repeatable.
set -euo pipefail
here="$(dirname "$0")"
bash "$here/generate-python.sh"
bash "$here/generate-go.sh"
bash "$here/generate-typescript.sh"
python "$here/bundle_schemas.py" "$here/../schemas/v1" "$here/../generated/bundled/v1"
