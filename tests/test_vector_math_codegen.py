"""Generated code calls minijit's vectorizable math (codegen/vecmath), not libm, and its loops
vectorize; config "vector_math" chooses (True: exp, expm1, log, log1p, tanh, logistic; "all":
sin, cos and erf too; False: libm). The functions' own accuracy is tests/test_vecmath.py's."""

from __future__ import annotations

import re

import numpy as np
import pytest

import minijit as mj
import minijit.lax as lax
import minijit.numpy as mnp


def gelu(x):
    return 0.5 * x * (1 + mnp.tanh(0.7978845608 * (x + 0.044715 * x ** 3)))


def _ulps(a, b):
    a, b = np.asarray(a), np.asarray(b)
    bits = {4: np.int32, 8: np.int64}[a.dtype.itemsize]
    ia, ib = a.view(bits).astype(np.int64), b.view(bits).astype(np.int64)
    ia = np.where(ia < 0, np.iinfo(bits).min - ia, ia)  # order the bit patterns like floats
    ib = np.where(ib < 0, np.iinfo(bits).min - ib, ib)
    return int(np.max(np.abs(ia - ib)))


@pytest.fixture
def vector_math():
    def use(mode):
        mj.config.update("vector_math", mode)

    yield use
    mj.config.update("vector_math", True)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_gelu_calls_vecmath_and_its_loop_is_vectorized(dtype):
    # compiled here, not loaded from the disk cache, which keeps machine code but no LLVM IR
    mj.config.update("disk_cache", False)
    try:
        _check_gelu(dtype)
    finally:
        mj.config.update("disk_cache", True)


def _check_gelu(dtype):
    f = mj.jit(lambda x: gelu(x) * 1.0000000001, backend="numba")
    x = np.linspace(-6, 6, 4097).astype(dtype)
    suffix = "f64" if dtype == np.float64 else "f32"
    assert f"vecmath.tanh_{suffix}(" in f.lower(x).as_text()
    y = f(x)
    want = 0.5 * x * (1 + np.tanh(dtype(0.7978845608) * (x + dtype(0.044715) * x ** 3)))
    want = want * dtype(1.0000000001)
    # near x = -6, 1 + tanh(...) cancels: a few ulp of tanh there are absolute, not relative
    np.testing.assert_allclose(y, want, rtol=4 * np.finfo(dtype).eps,
                               atol=8 * np.finfo(dtype).eps * 6)
    (ir,) = f.cache_entries()[0].executable.entry.inspect_llvm().values()
    scalar = "double" if dtype == np.float64 else "float"
    assert re.search(rf"f(mul|add) (fast )?<\d+ x {scalar}>", ir), "the loop is not vectorized"
    assert not re.search(r"call [^\n]*@tanh", ir)  # no libm call left


@pytest.mark.parametrize("name", ["exp", "expm1", "log", "log1p", "tanh", "logistic"])
def test_each_default_function_is_within_4_ulp_of_numpy_under_jit(name):
    fun = getattr(lax, name)
    ref = (lambda x: 1 / (1 + np.exp(-x))) if name == "logistic" else getattr(np, name)
    x = np.concatenate([np.linspace(-30, 30, 20001), [0.0, -0.0, np.inf, -np.inf, np.nan,
                                                      1e-300, 5e-324]])
    if name in ("log", "log1p"):
        x = np.abs(x)
    f = mj.jit(fun, backend="numba")
    assert f"vecmath.{name}_f64(" in f.lower(x).as_text()
    with np.errstate(all="ignore"):
        assert _ulps(f(x), ref(x)) <= 4


def test_all_adds_sin_cos_and_erf(vector_math):
    def trig(x):
        return mnp.sin(x) + mnp.cos(x) * lax.erf(x)

    x = np.linspace(-10, 10, 1001)
    assert "math.sin(" in mj.jit(trig, backend="numba").lower(x).as_text()
    vector_math("all")
    f = mj.jit(trig, backend="numba")
    text = f.lower(x).as_text()
    assert all(f"vecmath.{n}_f64(" in text for n in ("sin", "cos", "erf"))
    np.testing.assert_allclose(f(x), mj.jit(trig, backend="interpreter")(x), rtol=1e-14,
                               atol=1e-15)


def test_false_keeps_libm(vector_math):
    vector_math(False)
    x = np.linspace(-3, 3, 9)
    f = mj.jit(gelu, backend="numba")
    assert "math.tanh(" in f.lower(x).as_text() and "vecmath." not in f.lower(x).as_text().split(
        "def entry")[1]
    want = 0.5 * x * (1 + np.tanh(0.7978845608 * (x + 0.044715 * x ** 3)))
    np.testing.assert_allclose(f(x), want, rtol=1e-15)
