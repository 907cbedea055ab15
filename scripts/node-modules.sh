#!/usr/bin/env bash
# Installs the pinned npm packages (package-lock.json) when node_modules is missing or older
# than the lock: the one place that decides, for make, the generators, buf and the tests.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -f node_modules/.package-lock.json ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  npm ci --prefer-offline --no-audit --no-fund --loglevel=error >&2
fi
