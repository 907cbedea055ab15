"""The parts of himga that are not pure Python, in C: the ranking's heavy part, the vector
sketches' scan, the exact cosines of its candidates and the hybrid fusion's scores.

Everything else about the package is in pyproject.toml; setuptools reads both. `make setup`
(pip install -e .) builds them with the C compiler Python was built with. No FMA contraction in
the ranking and the fusion: their scores are bit for bit those of the definition's Python
(himga/memory/_ranking.c says why); nor in the exact cosines, added in one fixed order (_exact.h,
which the scan's re-scoring shares), so the same on every machine. The scan itself is integer
arithmetic, the same on every machine at any optimisation.
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "himga.memory._ranking",
            sources=["himga/memory/_ranking.c"],
            extra_compile_args=["-O2", "-ffp-contract=off"],
        ),
        Extension(
            "himga.memory._fusion",
            sources=["himga/memory/_fusion.c"],
            extra_compile_args=["-O2", "-ffp-contract=off"],
        ),
        Extension(
            "himga.memory._exact",
            sources=["himga/memory/_exact.c"],
            depends=["himga/memory/_exact.h"],
            extra_compile_args=["-O3", "-ffp-contract=off"],
        ),
        Extension(
            "himga.memory._sketch",
            sources=["himga/memory/_sketch.c"],
            depends=["himga/memory/_exact.h"],
            extra_compile_args=["-O3", "-ffp-contract=off"],
        ),
    ]
)
