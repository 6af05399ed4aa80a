"""Build script: Cython extensions (every nuvec/**/*.pyx) and the prebuilt element-wise kernels."""
from pathlib import Path

import numpy as np
from Cython.Build import cythonize
from setuptools import Extension, setup

ROOT = Path(__file__).parent


def cython_extensions() -> list[Extension]:
    exts = []
    for pyx in sorted(ROOT.glob("nuvec/**/*.pyx")):
        rel = pyx.relative_to(ROOT).with_suffix("")
        exts.append(Extension(".".join(rel.parts), [str(pyx.relative_to(ROOT))],
                              include_dirs=[np.get_include()],
                              extra_compile_args=["-O3"]))
    return cythonize(exts, language_level=3, compiler_directives={
        "boundscheck": False, "wraparound": False, "cdivision": True})


setup(ext_modules=cython_extensions())
