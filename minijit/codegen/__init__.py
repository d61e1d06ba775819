"""The Numba backend: optimized Jaxpr -> Python source -> one `numba.njit` function (ch. 08).

`lower.py` writes the source (`kernels.py` the loop nests, `scalar_rules.py` the per-element
expressions), `compile.py` compiles and caches it, and `executable.py` calls it.

Importing this package loads no Numba: the LLVM backend uses some of its modules (`buffers`,
`vector_width`, `vecmath`'s source, `c_array` below), and a program it compiles does not pay
for importing Numba. `NumbaExecutable`, `lower_jaxpr` and `CodegenError` load on first use.
"""

from __future__ import annotations

import numpy as np


def c_array(x, dtype) -> np.ndarray:
    """`x` as a C-contiguous, aligned array of exactly `dtype`: `x` itself where it is one,
    else a copy (Fortran order, strides, misaligned data and another byte order are converted
    here). Both code generators' entries read their arrays this way."""
    x = np.asarray(x)
    if x.flags.c_contiguous and x.flags.aligned and x.dtype == dtype:
        return x
    return np.array(x, dtype=dtype, order="C")


_LAZY = {"NumbaExecutable": "minijit.codegen.executable", "lower_jaxpr": "minijit.codegen.lower",
         "CodegenError": "minijit.codegen.lower"}


def __getattr__(name: str):
    """The Numba backend's names, imported (with Numba) when first asked for."""
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["CodegenError", "NumbaExecutable", "c_array", "lower_jaxpr"]
