#!/usr/bin/env bash
# The C modules (himga/memory/_ranking.c, _sketch.c, _exact.c, _fusion.c) built with
# AddressSanitizer and UndefinedBehaviorSanitizer, and the memory tests, which drive them through
# every store, run over that build: a read or write out of bounds, a use after free or an
# overflow stops the run with the line that did it. The build is made in a copy of the working
# tree in a temporary directory, so the package's own modules are left as they were.
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
# The sanitizers' runtime must be loaded before the interpreter's own libraries, so that every
# allocation gets its guard zones. The runner takes it out of the environment of the children the
# tests start, so PostgreSQL's programs run as they are; a Python child (a killed writer) loads it
# with the modules it imports, too late to guard the heap: there undefined behaviour and the
# modules' stack and globals are checked, the heap in the tests' own process.
preload=""
for runtime in libasan.so libubsan.so; do
  found="$(gcc -print-file-name="$runtime")"
  [ -f "$found" ] || { echo "sanitize: gcc has no $runtime (Debian: apt-get install gcc)" >&2; exit 1; }
  preload="$preload $found"
done
# PYTHONMALLOC=malloc: every object and buffer the interpreter allocates comes from malloc, which
# the sanitizer guards, not from the interpreter's own pools of small blocks, where an overflow
# into the next block would go unseen. A finding ends the process at once with its report on
# stderr, which pytest then leaves to the process (--capture=sys: only Python's output is
# captured).
LD_PRELOAD="${preload# }" \
  PYTHONMALLOC=malloc \
  ASAN_OPTIONS="detect_leaks=0:halt_on_error=1:verify_asan_link_order=0" \
  UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1" \
  PYTHONPATH="$work" \
  "$python" scripts/sanitized_pytest.py -p no:cacheprovider --capture=sys -q "$@"
