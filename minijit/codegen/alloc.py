"""Array allocation for generated code, compiled once per installation (chapter 09).

Generated functions allocate through these (`alloc.empty((_n0,), np.float64)`) rather than
calling `np.empty` themselves. The result is the same array; what changes is who compiles
the allocation. Numba types and lowers `np.empty`'s implementation afresh in every process,
once for each rank and dtype (about 40 to 80 ms each, measured in
benchmarks/README.md), plus its allocator the first time (about 40 ms): a small program
spends more on that than on its own loops. These functions are `njit(cache=True)`, so each
rank and dtype is compiled once, stored in Numba's disk cache, and later processes load it;
the caller only types a call. After linking, LLVM inlines them, so the generated machine code
is the same as with `np.empty` (no run-time cost).

Invariants: each returns a new C-contiguous array of the given shape (a tuple of sizes, `()`
for rank 0) and NumPy dtype, as `np.empty`, `np.full`, `np.zeros`, `np.empty_like` and `.copy()`
would.
`compile._library_hash` covers this file: editing it invalidates the programs on disk that
inlined it.
"""

from __future__ import annotations

import numba
import numpy as np


@numba.njit(cache=True)
def empty(shape, dtype):
    """`np.empty(shape, dtype)`."""
    return np.empty(shape, dtype)


@numba.njit(cache=True)
def full(shape, value, dtype):
    """`np.full(shape, value, dtype)`."""
    return np.full(shape, value, dtype)


@numba.njit(cache=True)
def zeros(shape, dtype):
    """`np.zeros(shape, dtype)`."""
    return np.zeros(shape, dtype)


@numba.njit(cache=True)
def empty_like(a):
    """`np.empty_like(a)` of a C-contiguous array."""
    return np.empty_like(a)


@numba.njit(cache=True)
def copy(a):
    """`a.copy()`: a C-contiguous copy of any array, a strided view included."""
    return a.copy()
