"""The name `himga.schemas` had before it was `himga.validation` (loading the shipped JSON
Schemas and validating documents); kept so that code written against it keeps working."""

from himga.validation import *  # noqa: F403
from himga.validation import __all__ as __all__
