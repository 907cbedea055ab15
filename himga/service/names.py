"""The rule a namespace's name follows, checked by clients before they call and by the server
on every call: a module of its own, so a client checks it without importing the server."""

import re

from himga.status import FieldViolation

NAMESPACE_RULE = "1 to 128 characters of letters, digits, '.', '_', '-' and ':'"
_NAMESPACE = re.compile(r"[A-Za-z0-9._:-]{1,128}", re.ASCII)


def namespace_violations(namespace: str, path: str = "namespace") -> list[FieldViolation]:
    """What is wrong with `namespace` as a namespace name (nothing: an empty list)."""
    if not namespace:
        return [FieldViolation(path, f"required: {NAMESPACE_RULE}")]
    if _NAMESPACE.fullmatch(namespace) is None:
        return [FieldViolation(path, f"must be {NAMESPACE_RULE}")]
    return []
