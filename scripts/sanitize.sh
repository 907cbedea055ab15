#!/usr/bin/env bash
# The C modules (himga/memory/_ranking.c, _sketch.c, _fusion.c) built with AddressSanitizer and
# UndefinedBehaviorSanitizer, and the memory tests, which drive them through every store, run
# over that build: a read or write out of bounds, a use after free or an overflow stops the run
# with the line that did it. The build is made in a copy of the working tree in a temporary
# directory, so the package's own modules are left as they were.
#
# Usage: scripts/sanitize.sh PYTHON [PYTEST ARGS...] (default: tests/memory)
set -euo pipefail
cd "$(dirname "$0")/.."
python="$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"  # the venv's own, not its target
shift
[ $# -gt 0 ] || set -- tests/memory
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
# tracked and new files alike (not the ignored: the .venv, built modules, caches; nor a tracked
# file deleted from the working tree)
git ls-files -z --cached --others --exclude-standard \
  | while IFS= read -r -d '' file; do if [ -e "$file" ]; then printf '%s\0' "$file"; fi; done \
  | xargs -0 cp --parents -t "$work"
cd "$work"
rm -f himga/memory/*.so
CFLAGS="-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer -g" \
  LDFLAGS="-fsanitize=address,undefined" \
  "$python" setup.py -q build_ext --inplace >/dev/null
# The sanitizers' runtime must be loaded before the interpreter's own libraries. Children the
# tests start (servers, killed writers) load it with the modules instead: the runner takes it
# out of their environment, so PostgreSQL's programs run as they are.
preload="$(gcc -print-file-name=libasan.so) $(gcc -print-file-name=libubsan.so)"
# A finding ends the process at once with its report on stderr, which pytest then leaves to
# the process (--capture=sys: only Python's output is captured).
LD_PRELOAD="$preload" \
  ASAN_OPTIONS="detect_leaks=0:halt_on_error=1:verify_asan_link_order=0" \
  UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1" \
  PYTHONPATH="$work" \
  "$python" scripts/sanitized_pytest.py -p no:cacheprovider --capture=sys -q "$@"
