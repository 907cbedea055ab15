"""The one part of himga that is not pure Python: the ranking's heavy part, in C.

Everything else about the package is in pyproject.toml; setuptools reads both. `make setup`
(pip install -e .) builds it with the C compiler Python was built with. No FMA contraction:
its scores are bit for bit those of the definition's Python (himga/memory/_ranking.c says why).
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "himga.memory._ranking",
            sources=["himga/memory/_ranking.c"],
            extra_compile_args=["-O2", "-ffp-contract=off"],
        )
    ]
)
