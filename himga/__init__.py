"""himga: a language-agnostic contract for the memory of LLM agents, and its Python reference.

Kept import-free on purpose: the generated models import `himga.model_base`, which loads this
package first, so it must not import them back.
"""

__version__ = "0.1.0"
