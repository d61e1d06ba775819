"""Matrix products for generated code, on NumPy's own BLAS (chapter 09).

Numba compiles `np.dot` to a call into SciPy's BLAS. NumPy's wheels carry their own OpenBLAS
(the `scipy-openblas64` build: 64-bit integers, symbols named `scipy_cblas_dgemm64_`), a newer
one, and products called through it were faster. On the 13-core machine of
benchmarks/README.md, with every OpenBLAS's threads sleeping at once after a product (as the
benchmark sets them), a 256x512 times 512x512 float64 product took 0.75-0.80 ms on NumPy's
against 0.85-0.89 ms on SciPy's, and the benchmark's MLP went from 1.25-1.29 (float64) and
1.45-1.52 (float32) times JAX's time to 1.11-1.18 and 1.13-1.19. So generated code calls
`matmul` here, which calls NumPy's `cblas_dgemm` or `cblas_sgemm`, where

- NumPy's BLAS is that build (`AVAILABLE`): others (a conda NumPy on MKL, a system BLAS) keep
  `np.dot` and SciPy's BLAS;
- its thread count is the one compiled code should use (`usable`): OpenBLAS has one count for
  the whole process, so minijit never changes NumPy's (the user's NumPy would follow it);
  where they differ (`config.update("threads", 1)` with NumPy on every core), products go to
  SciPy's BLAS, whose count minijit sets (`threads.follow_blas`);
- and it runs on one thread, or its threads do not spin after a product (`spins`). NumPy's
  spin by default, and minijit cannot stop them, as it does SciPy's: NumPy loaded its BLAS
  first. Spinning, they hold the cores the program's next loop needs: there, the MLP's layer
  (a product, then its bias and `tanh` on 13 threads) took 1.12-1.18 ms against 0.87-0.92 ms
  with them sleeping, and the whole MLP 2.47-2.50 ms against 2.29-2.35 ms on SciPy's BLAS
  (two probes on the same host).

The library's functions are given to LLVM under names of minijit's own (`add_symbol`), and the
compiled code calls them by name, so Numba's disk cache can store it: a new process registers
the names again when generated code imports this module, before Numba loads the cached code.

Invariants: `matmul(a, b, ta, tb)` returns a new C-contiguous array equal to `op(a) @ op(b)`,
`op(x)` being `x.T` where the flag is 1; `a` and `b` are 2-D and are only read; a zero-size
dimension gives an empty or an all-zero result without calling BLAS.
`compile._library_hash` covers this file.
"""

from __future__ import annotations

import ctypes
import glob
import os

import numba
import numpy as np
from numba import types
from numba.extending import overload

# CBLAS's enumerations
ROW_MAJOR, NO_TRANS, TRANS = 101, 111, 112


def _find_library() -> ctypes.CDLL | None:
    """NumPy's scipy-openblas64 library, already loaded by NumPy; None for another BLAS."""
    info = np.show_config(mode="dicts").get("Build Dependencies", {}).get("blas", {})
    if info.get("name") != "scipy-openblas" or "USE64BITINT" not in str(
            info.get("openblas configuration", "")):
        return None
    libs = os.path.join(os.path.dirname(os.path.dirname(np.__file__)), "numpy.libs")
    for path in sorted(glob.glob(os.path.join(libs, "libscipy_openblas64_*.so"))):
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        if all(hasattr(lib, s) for s in ("scipy_cblas_dgemm64_", "scipy_cblas_sgemm64_",
                                         "scipy_openblas_get_num_threads64_")):
            return lib
    return None


def _register(lib: ctypes.CDLL | None) -> bool:
    if lib is None:
        return False
    from llvmlite import binding as llvm

    for ours, theirs in (("minijit_cblas_dgemm", "scipy_cblas_dgemm64_"),
                         ("minijit_cblas_sgemm", "scipy_cblas_sgemm64_")):
        llvm.add_symbol(ours, ctypes.cast(getattr(lib, theirs), ctypes.c_void_p).value)
    for name in ("scipy_openblas_get_num_threads64_", "openblas_thread_timeout"):
        if hasattr(lib, name):
            getattr(lib, name).restype = ctypes.c_int
    return True


try:
    _LIB = _find_library()
except Exception:  # whatever an unusual NumPy does here, minijit keeps SciPy's BLAS
    _LIB = None
AVAILABLE = _register(_LIB)


def spins() -> bool:
    """Whether NumPy's BLAS threads spin after a product before they sleep: OpenBLAS's default,
    about 2**28 cycles (0.1 s), unless `OPENBLAS_THREAD_TIMEOUT` of 16 or less (2**16 cycles)
    was set before NumPy loaded it. minijit cannot change it afterwards, as it does SciPy's."""
    if not hasattr(_LIB, "openblas_thread_timeout"):
        return True
    timeout = _LIB.openblas_thread_timeout()  # 0: not set
    return not 0 < timeout <= 16


def usable(threads: int) -> bool:
    """Whether products compiled now should call NumPy's BLAS: it is this build, it runs on the
    `threads` that compiled code may use, and it has no threads, or none that spin."""
    if not AVAILABLE:
        return False
    return _LIB.scipy_openblas_get_num_threads64_() == threads and (threads == 1 or not spins())


def _gemm_function(dtype):
    p = types.CPointer(dtype)
    i = types.int64
    return types.ExternalFunction(
        f"minijit_cblas_{'d' if dtype is types.float64 else 's'}gemm",
        types.void(types.intc, types.intc, types.intc, i, i, i, dtype, p, i, p, i, dtype, p, i))


_dgemm, _sgemm = _gemm_function(types.float64), _gemm_function(types.float32)


def _gemm(a, b, c, ta, tb, m, n, k):
    """`c = op(a) @ op(b)` by `cblas_?gemm`: a name for compiled code only."""
    raise NotImplementedError("called from compiled code only")


@overload(_gemm)
def _gemm_typed(a, b, c, ta, tb, m, n, k):
    gemm = _dgemm if a.dtype == types.float64 else _sgemm  # chosen when `matmul` is typed

    def impl(a, b, c, ta, tb, m, n, k):
        gemm(ROW_MAJOR, TRANS if ta else NO_TRANS, TRANS if tb else NO_TRANS, m, n, k, 1.0,
             a.ctypes, a.shape[1], b.ctypes, b.shape[1], 0.0, c.ctypes, n)
    return impl


@numba.njit(cache=True)
def matmul(a, b, ta, tb):
    """`op(a) @ op(b)` for float64 or float32, `op` transposing where `ta` / `tb` is 1."""
    a = np.ascontiguousarray(a)
    b = np.ascontiguousarray(b)
    m, k = (a.shape[1], a.shape[0]) if ta else (a.shape[0], a.shape[1])
    n = b.shape[0] if tb else b.shape[1]
    if k == 0:
        return np.zeros((m, n), a.dtype)
    c = np.empty((m, n), a.dtype)
    if m and n:
        _gemm(a, b, c, ta, tb, m, n, k)
    return c
