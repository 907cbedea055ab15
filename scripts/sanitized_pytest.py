"""pytest in a process whose C modules were built with the sanitizers (scripts/sanitize.sh).

The sanitizers' runtime is preloaded into this interpreter only: it is taken out of the
environment the tests' children inherit (PostgreSQL's programs do not run under it; a Python
child loads it with the modules it imports, too late to guard its heap)."""

import os
import sys


def _runtime_loaded() -> bool:
    """Whether AddressSanitizer's runtime is in this process already (before any sanitized
    module is imported, so only a working preload can have put it there)."""
    with open("/proc/self/maps") as maps:
        return "libasan" in maps.read()


if not _runtime_loaded():
    sys.exit("AddressSanitizer's runtime was not preloaded: the heap would go unguarded")

import pytest  # noqa: E402

import himga.memory._ranking  # noqa: E402

os.environ.pop("LD_PRELOAD", None)
if not himga.memory._ranking.__file__.startswith(os.environ["PYTHONPATH"]):
    sys.exit(f"the sanitized modules are not the ones imported: {himga.memory._ranking.__file__}")
sys.exit(pytest.main(sys.argv[1:]))
