"""The name `himga.data.schema` had before it was `himga.data.conversation` (Message, Session,
Sample, QAPair); kept so that code written against it keeps working, with a DeprecationWarning
naming the new one."""

import warnings

from himga.data.conversation import *  # noqa: F403
from himga.data.conversation import __all__ as __all__

warnings.warn(
    "himga.data.schema is deprecated: import himga.data.conversation instead",
    DeprecationWarning,
    stacklevel=2,
)
