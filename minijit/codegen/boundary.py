"""How arrays cross into compiled code: both code generators' entries read C-contiguous,
aligned arrays of exactly the program's dtypes, and `c_array` makes them so.

Its own module, without Numba: the LLVM backend uses it, and a program it compiles does not
import Numba (`codegen/__init__.py`).
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
