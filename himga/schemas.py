"""The name `himga.schemas` had before it was `himga.validation` (loading the shipped JSON
Schemas and validating documents); kept so that code written against it keeps working, with a
DeprecationWarning naming the new one."""

import warnings

from himga.validation import *  # noqa: F403
from himga.validation import __all__ as __all__

warnings.warn(
    "himga.schemas is deprecated: import himga.validation instead",
    DeprecationWarning,
    stacklevel=2,
)
