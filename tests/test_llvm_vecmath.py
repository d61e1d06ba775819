"""minijit's vector math on the LLVM backend (`minijit/llvm/vecmath.py`): compiled from the
Python source the Numba backend compiles, so the two backends must agree bit for bit.

Every function and dtype runs on the same inputs through both backends: the special values
(signed zeros, infinities, NaN, subnormals, the overflow and underflow edges, tanh's clamp)
and 20,000 random bit patterns, which cover every binade. `tests/test_vecmath.py` holds the
Numba functions themselves to NumPy.
"""

from __future__ import annotations

import numpy as np
import pytest
from llvmlite import ir

import minijit as mj
import minijit.numpy as mnp
from minijit import lax
from minijit.llvm import LLVMExecutable, LLVMUnsupported
from minijit.llvm import vecmath as V

FUNCTIONS = {"exp": mnp.exp, "expm1": mnp.expm1, "log": mnp.log, "log1p": mnp.log1p,
             "tanh": mnp.tanh, "logistic": lax.logistic}
EDGES = [0.0, -0.0, np.inf, -np.inf, np.nan, -np.nan, 1.0, -1.0, 0.5, 2.0, 1e-310, -1e-310,
         5e-324, 1e-45, 1.17549435e-38, 2.2250738585072014e-308, 709.78, 709.79, 710.0,
         -745.13, -745.14, -746.0, 88.72, 88.73, 89.0, -103.9, -104.0, 20.0, -20.0, 10.0,
         -10.0, 40.0, -50.0, 56.0, 1e-9, -1e-9, 5.551115123125783e-17, 2.9802322e-08,
         -0.9999999, 1e300, -1e300, 3.4e38, -3.4e38]


def _inputs(dtype) -> np.ndarray:
    ints = np.int64 if dtype == np.float64 else np.int32
    rng = np.random.default_rng(7)
    patterns = rng.integers(np.iinfo(ints).min, np.iinfo(ints).max, 20_000, dtype=ints)
    with np.errstate(over="ignore"):
        edges = np.array(EDGES, dtype=dtype)
    return np.concatenate([edges, patterns.view(dtype), rng.uniform(-30, 30, 2_000)
                           .astype(dtype)])


@pytest.mark.parametrize("dtype", [np.float64, np.float32], ids=["float64", "float32"])
@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_both_backends_compute_the_same_bits(name, dtype):
    x = _inputs(dtype)
    fn = FUNCTIONS[name]
    on_llvm = mj.jit(lambda v: fn(v), backend="llvm")
    on_numba = mj.jit(lambda v: fn(v), backend="numba", parallel=False)
    got, want = np.asarray(on_llvm(x)), np.asarray(on_numba(x))
    (entry,) = on_llvm.cache_entries()
    assert isinstance(entry.executable, LLVMExecutable), entry.executable.llvm_declined
    assert got.dtype == want.dtype == dtype
    ints = np.int64 if dtype == np.float64 else np.int32
    same = (got.view(ints) == want.view(ints)) | (np.isnan(got) & np.isnan(want))
    assert same.all(), (x[~same][:5], got[~same][:5], want[~same][:5])


def test_the_c_library_where_vector_math_is_off():
    x = np.linspace(-3.0, 3.0, 50)
    with_vecmath = mj.jit(lambda v: mnp.tanh(v), backend="llvm").lower(x).as_text()
    assert "@\"tanh\"" not in with_vecmath and "@tanh" not in with_vecmath
    with mj.config.override("vector_math", False):
        jf = mj.jit(lambda v: mnp.tanh(v) + 0.0, backend="llvm")
        text = jf.lower(x).as_text()
        got = jf(x)
    assert "declare double @\"tanh\"(double" in text
    np.testing.assert_allclose(got, np.tanh(x), rtol=1e-15)


def test_what_it_does_not_compile_is_named():
    b = ir.IRBuilder(ir.Function(ir.Module(), ir.FunctionType(ir.VoidType(), []), "f")
                     .append_basic_block())
    x = ir.Constant(ir.DoubleType(), 1.0)
    with pytest.raises(LLVMUnsupported, match="vector math sin of float64"):
        V.call(b, "sin", x)

    def with_a_loop(v):
        for _ in range(2):
            v = v * 2.0
        return v

    with pytest.raises(LLVMUnsupported, match="the statement `for _ in range"):
        V._Inliner(b).call(with_a_loop, [x])
