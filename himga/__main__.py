"""`python -m himga ...` is the `himga` command."""

import sys

from himga.cli import main

sys.exit(main())
