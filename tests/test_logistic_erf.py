"""`lax.logistic` and `lax.erf`: float-only unary primitives, as in JAX.

Each is checked eagerly, compiled by both backends and against a reference (NumPy for the
logistic, SciPy for erf) over a wide range, at the special values exactly (NaN, +-inf, -0.0,
subnormals, arguments where a naive 1 / (1 + exp(-x)) overflows), and for JAX's dtype rules:
floats only, the dtype and weak type of the argument kept, and the jaxpr names `logistic`
and `erf`. The expected values were measured from JAX (64-bit mode).
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from scipy import special

import minijit as mj
from minijit import lax

BACKENDS = ["numba", "interpreter"]
FUNCTIONS = {"logistic": lax.logistic, "erf": lax.erf}


def reference(name: str, x: np.ndarray) -> np.ndarray:
    """SciPy's, computed in float64 and rounded to x's dtype (SciPy's float32 expit flushes
    subnormal results to 0)."""
    f = special.erf if name == "erf" else special.expit
    return f(x.astype(np.float64)).astype(x.dtype)


def ulp_distance(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """How many floats of a's dtype lie between a and b (0 for equal values, NaNs included)."""
    bits = {np.dtype(np.float64): np.int64, np.dtype(np.float32): np.int32}[a.dtype]
    ia, ib = a.view(bits).astype(np.int64), b.astype(a.dtype).view(bits).astype(np.int64)
    # Map the sign-magnitude bit patterns onto one monotonic integer line.
    top = np.int64(np.iinfo(bits).min)
    ia, ib = np.where(ia < 0, top - ia, ia), np.where(ib < 0, top - ib, ib)
    both_nan = np.isnan(a) & np.isnan(b)
    return np.where(both_nan, 0, np.abs(ia - ib))


def wide_sample(dtype) -> np.ndarray:
    rng = np.random.default_rng(0)
    dense = np.linspace(-30, 30, 20001)
    tiny, huge = np.finfo(dtype).smallest_subnormal, np.finfo(dtype).max
    big = np.exp(rng.uniform(np.log(tiny), np.log(huge), 2000))
    return np.concatenate([dense, big, -big]).astype(dtype)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_eager_and_both_backends_match_the_reference(name, dtype):
    x = wide_sample(dtype)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no overflow warning for any argument
        with np.errstate(over="ignore", under="ignore"):
            want = reference(name, x)
        eager = np.asarray(FUNCTIONS[name](x))
        results = {"eager": eager}
        for backend in BACKENDS:
            results[backend] = np.asarray(mj.jit(FUNCTIONS[name], backend=backend)(x))
    for how, got in results.items():
        assert got.dtype == dtype, how
        worst = int(ulp_distance(got, want).max())
        assert worst <= 4, f"{name} {how}: {worst} ulp from the reference"
    np.testing.assert_array_equal(results["interpreter"], eager)


# (x, logistic(x), erf(x)) in JAX, exactly; -0.0 and its sign are checked separately.
SPECIAL = [
    (np.inf, 1.0, 1.0), (-np.inf, 0.0, -1.0), (0.0, 0.5, 0.0), (800.0, 1.0, 1.0),
    (-800.0, 0.0, -1.0), (40.0, 1.0, 1.0)
]


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("how", ["eager", *BACKENDS])
def test_special_values(how, dtype):
    x = np.array([s[0] for s in SPECIAL] + [np.nan, -0.0], dtype)

    def run(f):
        return np.asarray(f(x) if how == "eager" else mj.jit(f, backend=how)(x))

    logistic, erf = run(lax.logistic), run(lax.erf)
    np.testing.assert_array_equal(logistic[:-2], np.array([s[1] for s in SPECIAL], dtype))
    np.testing.assert_array_equal(erf[:-2], np.array([s[2] for s in SPECIAL], dtype))
    assert np.isnan(logistic[-2]) and np.isnan(erf[-2])
    assert logistic[-1] == 0.5
    assert erf[-1] == 0 and np.signbit(erf[-1]), "erf(-0.0) is -0.0"


@pytest.mark.parametrize("how", ["eager", *BACKENDS])
def test_tails_keep_relative_accuracy(how):
    """logistic(-40) is exp(-40) to within rounding, not 0 (JAX: 4.24835425529159e-18)."""
    x = np.array([-40.0, -700.0, -745.0])
    f = lax.logistic if how == "eager" else mj.jit(lax.logistic, backend=how)
    got = np.asarray(f(x))
    assert ulp_distance(got, np.exp(x)).max() <= 2
    assert got[-1] > 0  # exp(-745) is the smallest subnormal, 5e-324


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_floats_only(name):
    for bad in (1, np.int32(1), np.arange(3), True, np.uint8(3)):
        with pytest.raises(TypeError, match=f"{name}: needs floating-point inputs"):
            FUNCTIONS[name](bad)
        with pytest.raises(TypeError, match=f"{name}: needs floating-point inputs"):
            mj.make_jaxpr(FUNCTIONS[name])(bad)


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_dtype_and_weak_type_are_the_arguments(name):
    f = FUNCTIONS[name]
    weak = f(1.0)
    assert weak.dtype == np.float64 and weak.weak_type  # JAX: f64, weak for a Python float
    strong = f(np.float32(1.0))
    assert strong.dtype == np.float32 and not strong.weak_type
    assert str(mj.make_jaxpr(f)(1.0)) == f"{{ lambda ; a:f64[]. let b:f64[] = {name} a in (b,) }}"
    assert str(mj.make_jaxpr(f)(np.float32(1.0))) == (
        f"{{ lambda ; a:f32[]. let b:f32[] = {name} a in (b,) }}")


def test_fused_with_other_elementwise_work():
    """Inside a fused kernel: logistic and erf compose with arithmetic in one loop."""
    def f(x):
        return lax.logistic(x * 2.0) * lax.erf(x) + 1.0

    x = np.linspace(-5, 5, 101)
    want = special.expit(x * 2.0) * special.erf(x) + 1.0
    for backend in BACKENDS:
        np.testing.assert_allclose(np.asarray(mj.jit(f, backend=backend)(x)), want, rtol=1e-15)
    source = mj.jit(f, backend="numba").lower(x).as_text()
    assert source.count("for i0 in range(_n0):") == 1  # one fused loop
    assert "math.erf(" in source and "vecmath.logistic_f64(" in source
