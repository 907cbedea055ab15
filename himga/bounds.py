"""How much of a bad request the core looks at, and how much of it an answer tells.

A request is checked up to `MAX_VIOLATIONS` violations; a check that reaches them stops there
(the rest of the body is not walked) or, where telling the rest costs nothing more than a look
at a key, counts them. An answer carries at most `MAX_VIOLATIONS` violations and at most
`MAX_DETAIL_BYTES` of their text, then one more violation of the whole request saying how many
it left out ("and 799,900 more"), so that every door's answer stays small: a gRPC client refuses
trailing metadata past 8 KiB by default, and the whole of a refusal's details stays far under
64 KiB on every door.
"""

from himga.errors import (
    MAX_DETAIL_BYTES,
    MAX_TEXT,
    MAX_VIOLATIONS,
    MESSAGE_CHARS,
    Violations,
    left_out,
    message,
    shown,
)

__all__ = [
    "MAX_DETAIL_BYTES",
    "MAX_TEXT",
    "MAX_VIOLATIONS",
    "MESSAGE_CHARS",
    "Violations",
    "left_out",
    "message",
    "shown",
]
