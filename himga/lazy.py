"""Classes a package names but loads on first use: `__getattr__ = lazy_classes(...)` in its
`__init__`, from the same (module, "Class.factory") table its registry loads them by."""

import importlib
from collections.abc import Callable, Mapping
from typing import Any


def lazy_classes(package: str, builtin: Mapping[str, tuple[str, str]]) -> Callable[[str], Any]:
    """A module `__getattr__` for `package` that imports each class of `builtin` (name ->
    (module, "Class.attribute")) from its module when it is first asked for."""
    modules = {attribute.split(".")[0]: module for module, attribute in builtin.values()}

    def get(name: str) -> Any:
        module = modules.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return getattr(importlib.import_module(module), name)

    return get
