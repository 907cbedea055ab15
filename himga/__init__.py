"""himga: a language-agnostic contract for the memory of LLM agents, and its Python reference.

Kept free of himga's own imports on purpose: the generated models import `himga.model_base`,
which loads this package first, so it must not import them back.
"""

from importlib.metadata import PackageNotFoundError, version

# The distribution's name on PyPI (pyproject.toml's `project.name`); "himga" there is another
# project. The import name is `himga`.
DISTRIBUTION = "himga-memory"

try:
    __version__ = version(DISTRIBUTION)  # written once, in pyproject.toml
except PackageNotFoundError:  # run from a checkout that was never installed
    __version__ = "0+unknown"


def install_hint(extra: str) -> str:
    """The command that installs `extra` (a `project.optional-dependencies` key)."""
    return f"pip install '{DISTRIBUTION}[{extra}]'"
