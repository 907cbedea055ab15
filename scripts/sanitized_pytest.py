"""pytest in a process whose C modules were built with the sanitizers (scripts/sanitize.sh).

The sanitizers' runtime is preloaded into this interpreter only: it is taken out of the
environment the tests' children inherit (PostgreSQL's programs do not run under it; a Python
child loads it with the modules it imports)."""

import os
import sys

import pytest

import himga.memory._ranking

os.environ.pop("LD_PRELOAD", None)
if not himga.memory._ranking.__file__.startswith(os.environ["PYTHONPATH"]):
    sys.exit(f"the sanitized modules are not the ones imported: {himga.memory._ranking.__file__}")
sys.exit(pytest.main(sys.argv[1:]))
