"""himga: a language-agnostic contract for the memory of LLM agents, and its Python reference.

Kept free of himga's own imports on purpose: the generated models import `himga.model_base`,
which loads this package first, so it must not import them back.
"""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("himga")  # written once, in pyproject.toml
except PackageNotFoundError:  # run from a checkout that was never installed
    __version__ = "0+unknown"
