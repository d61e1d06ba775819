"""Row folds (`minijit/codegen/folds.py`) and the reductions that generated code writes with them.

A reduction over trailing float axes folds each row by one call that LLVM vectorizes:
- the sum adds 128-element ranges as NumPy's pairwise summation does, so a row of up to 128
  elements sums to np.sum's result bit for bit, and a longer one stays within the pairwise
  bound of the exact sum;
- max and min compare integer keys, and follow JAX: NaN wins, -0.0 orders below +0.0 (NumPy
  returns whichever zero it meets last), an empty row gives -inf / +inf.
The interpreter gives JAX's zeros too, so eager, interpreted and compiled results agree.
"""

from __future__ import annotations

import math
import re

import numba
import numpy as np
import pytest

import minijit as mj
import minijit.lax as lax
import minijit.numpy as mnp
from minijit.codegen import folds
from minijit.interpret import eval_jaxpr

DTYPES = [np.float64, np.float32]
SUM = {np.float64: folds.sum_f64, np.float32: folds.sum_f32}
MAX = {np.float64: folds.max_f64, np.float32: folds.max_f32}
MIN = {np.float64: folds.min_f64, np.float32: folds.min_f32}


def _bits(x, dtype):
    return np.asarray(x, dtype).tobytes()


def _row(n, dtype, seed=0):
    rng = np.random.default_rng(seed + n)
    return (rng.standard_normal(n) * 10.0 ** rng.uniform(-3, 3, n)).astype(dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_short_rows_sum_as_numpy_bit_for_bit(dtype):
    for n in range(0, folds.BLOCK + 1):
        x = _row(n, dtype)
        assert _bits(SUM[dtype](x), dtype) == _bits(np.sum(x), dtype), n


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n", [129, 255, 1000, 1024, 4097, 100_003])
def test_long_rows_sum_within_the_blocked_bound(dtype, n):
    x = _row(n, dtype)
    exact = math.fsum(x.astype(np.float64))
    got = float(SUM[dtype](x))
    eps = float(np.finfo(dtype).eps)
    # each 128-element range: at most 16 roundings; the ranges' sums: one each
    bound = (16 + n / folds.BLOCK + 1) * eps * float(np.sum(np.abs(x.astype(np.float64))))
    assert abs(got - exact) <= bound
    assert abs(float(np.sum(x)) - exact) <= bound  # NumPy's is within it too


@pytest.mark.parametrize("dtype", DTYPES)
def test_sum_special_values(dtype):
    s = SUM[dtype]
    assert _bits(s(np.array([-0.0], dtype)), dtype) == _bits(0.0, dtype)  # as np.sum
    assert np.isnan(s(np.array([1.0, np.nan, 2.0] * 50, dtype)))
    assert s(np.array([np.inf] * 200, dtype)) == np.inf
    assert np.isnan(s(np.array([np.inf, -np.inf] * 100, dtype)))
    assert s(np.array([], dtype)) == 0.0


@pytest.mark.parametrize("dtype", DTYPES)
def test_max_min_equal_numpy_on_ordinary_rows(dtype):
    for n in [1, 2, 7, 8, 9, 100, 1024, 1031]:
        x = _row(n, dtype, seed=7)
        assert _bits(MAX[dtype](x), dtype) == _bits(np.max(x), dtype)
        assert _bits(MIN[dtype](x), dtype) == _bits(np.min(x), dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_max_min_special_values_as_jax(dtype):
    def bits(v):
        return _bits(v, dtype)

    for row in ([-0.0, 0.0], [0.0, -0.0], [-0.0] * 9 + [0.0], [0.0] + [-0.0] * 20):
        x = np.array(row, dtype)
        assert bits(MAX[dtype](x)) == bits(0.0) and bits(MIN[dtype](x)) == bits(-0.0)
    assert bits(MAX[dtype](np.array([-0.0, -0.0], dtype))) == bits(-0.0)
    assert bits(MIN[dtype](np.array([0.0, 0.0], dtype))) == bits(0.0)
    negative_nan = -np.abs(np.array([np.nan], dtype))  # the x86 default NaN has the sign set
    assert np.signbit(negative_nan[0])
    for nan in (np.array([np.nan], dtype), negative_nan):
        x = np.concatenate([np.array([1.0, np.inf, -np.inf], dtype), nan])
        assert np.isnan(MAX[dtype](x)) and np.isnan(MIN[dtype](x))
    assert MAX[dtype](np.array([], dtype)) == -np.inf
    assert MIN[dtype](np.array([], dtype)) == np.inf
    assert MAX[dtype](np.array([-np.inf, -np.inf], dtype)) == -np.inf
    tiny = np.finfo(dtype).smallest_subnormal
    assert MAX[dtype](np.array([-tiny, 0.0, -0.0, tiny], dtype)) == tiny
    assert MIN[dtype](np.array([tiny, 0.0, -tiny], dtype)) == -tiny


VECTOR = re.compile(r"<(\d+) x (?:double|float|i64|i32|i1)>")


@pytest.mark.parametrize("fold", ["max", "min"])
@pytest.mark.parametrize("dtype", DTYPES)
def test_max_and_min_are_vectorized(fold, dtype):
    """(The sum's eight partial sums are eight independent scalar chains: they keep up with
    memory without vectors, and are tested above for their values.)"""
    loop = folds._extreme_f64 if dtype == np.float64 else folds._extreme_f32
    # a copy that is not cached, so that its IR can be read
    copy = numba.njit(error_model="numpy")(loop.py_func)
    copy(np.arange(300, dtype=dtype), 0 if fold == "max" else -1, 0)
    llvm = copy.inspect_llvm(copy.signatures[0])
    assert VECTOR.search(llvm), (fold, dtype, "no vector instructions")


# --------------------------------------------------------------------------- generated code


def softmax(x):
    e = mnp.exp(x - mnp.max(x, axis=1, keepdims=True))
    return e / mnp.sum(e, axis=1, keepdims=True)


def test_softmax_folds_its_rows():
    x = np.random.default_rng(0).standard_normal((5, 300))
    text = mj.jit(softmax, backend="numba").lower(x).as_text()
    assert "folds.max_f64(a[i0])" in text and "folds.sum_f64(" in text
    assert "_acc" not in text  # no element-by-element accumulator is left


PROGRAMS = {
    "rows": lambda x: mnp.sum(x, axis=-1),
    "rows of computed": lambda x: mnp.max(mnp.exp(x) * 2.0, axis=-1),
    "min rows": lambda x: mnp.min(x * x - 1.0, axis=-1),
    "two trailing axes": lambda x: mnp.sum(mnp.sin(x), axis=(-2, -1)) if x.ndim > 2 else
    mnp.sum(x),
    "full": lambda x: mnp.max(mnp.abs(x - 0.5)),
    "full of input": lambda x: (mnp.sum(x), mnp.min(x)),
    "output and its fold": lambda x: (x * 3.0, mnp.sum(x * 3.0, axis=-1)),
    "axis 0 stays": lambda x: mnp.max(x, axis=0),
}
# max and min of nothing are errors in minijit, as in JAX ("zero-size array to reduction")
WITH_MAX_OR_MIN = {"rows of computed", "min rows", "full", "full of input", "axis 0 stays"}
SHAPES = [(7,), (3, 5), (4, 130), (2, 3, 129), (0, 4), (3, 0)]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("name", list(PROGRAMS))
def test_reductions_agree_with_the_interpreter(name, shape, dtype):
    f = PROGRAMS[name]
    x = np.random.default_rng(3).standard_normal(shape).astype(dtype)
    try:
        f(x)
    except ValueError as e:  # the max of nothing, eagerly: jit says the same
        assert name in WITH_MAX_OR_MIN and "zero-size" in str(e)
        with pytest.raises(ValueError, match="zero-size"):
            mj.jit(f)(x)
        return
    jaxpr = mj.make_jaxpr(f)(x)
    want = eval_jaxpr(jaxpr.jaxpr, jaxpr.consts, x)
    got = mj.jit(f)(x)
    got = got if isinstance(got, tuple) else (got,)
    tol = 1e-5 if dtype == np.float32 else 1e-12
    for g, w in zip(got, want):
        assert np.asarray(g).dtype == np.asarray(w).dtype
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=tol, atol=tol)


def test_row_sums_of_short_rows_equal_the_interpreter_bit_for_bit():
    x = np.random.default_rng(5).standard_normal((64, 100))
    f = mj.jit(lambda x: mnp.sum(x * 1.5, axis=1))
    assert np.array_equal(f(x), np.sum(x * 1.5, axis=1))


def test_parallel_row_folds_give_the_serial_values():
    from minijit.codegen.lower import Lowering

    x = np.random.default_rng(1).standard_normal((Lowering.PARALLEL_AT // 128, 128))

    def f(x):
        return mnp.max(mnp.exp(x) * 0.5, axis=1), mnp.sum(mnp.tanh(x), axis=1)

    serial = mj.jit(f, backend="numba", parallel=False)(x)
    threaded = mj.jit(f, backend="numba", parallel=True)
    assert "numba.prange" in threaded.lower(x).as_text()
    for a, b in zip(serial, threaded(x)):
        assert np.array_equal(a, b)


@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "jit"])
def test_signed_zeros_of_max_and_min_follow_jax(compiled):
    def wrap(f):
        return mj.jit(f) if compiled else f

    x = np.array([[-0.0, 0.0], [0.0, -0.0]])
    for f, want in [(lambda x: mnp.max(x, axis=1), 0.0), (lambda x: mnp.max(x, axis=0), 0.0),
                    (lambda x: mnp.min(x, axis=1), -0.0), (lambda x: mnp.min(x, axis=0), -0.0),
                    (lambda x: lax.reduce_max(x, (0, 1)), 0.0),
                    (lambda x: lax.reduce_min(x, (0, 1)), -0.0)]:
        got = np.asarray(wrap(f)(x))
        assert (got == 0).all() and (np.signbit(got) == np.signbit(want)).all(), got


def test_the_scalar_combine_keeps_nan_and_zeros():
    """Reductions the folds do not take (along the first axis) follow the same semantics."""
    x = np.array([[0.0, 1.0, -0.0], [-0.0, np.nan, 0.0]])
    got = mj.jit(lambda x: mnp.max(x, axis=0))(x)
    assert got[0] == 0.0 and not np.signbit(got[0]) and np.isnan(got[1]) and got[2] == 0.0
    assert not np.signbit(got[2])
    assert numba.config.DISABLE_JIT == 0  # the generated code ran compiled
