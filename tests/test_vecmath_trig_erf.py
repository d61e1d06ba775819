"""The vectorizable sin, cos and erf of `minijit.codegen.vecmath`: accuracy and vectorization.

Each function runs in a compiled loop `out[i] = f(x[i])` (error_model='numpy', as in the
generated code) over a dense grid, seeded samples log-uniform over every binade from the
smallest subnormal to the largest float (both signs), integers times pi/2 (the hardest
arguments for a range reduction) and the special values. Results are within 4 ulp of NumPy's
(sin, cos) and SciPy's (erf), computed in float64 and rounded for float32; the special values
are exact; and the loop's LLVM IR has vector floating-point arithmetic.
"""

from __future__ import annotations

import re

import numba
import numpy as np
import pytest
from scipy import special

from minijit.codegen.vecmath import cos_f32, cos_f64, erf_f32, erf_f64, sin_f32, sin_f64

FUNCTIONS = {
    "sin_f64": (sin_f64, np.float64, np.sin), "cos_f64": (cos_f64, np.float64, np.cos),
    "sin_f32": (sin_f32, np.float32, np.sin), "cos_f32": (cos_f32, np.float32, np.cos),
    "erf_f64": (erf_f64, np.float64, special.erf), "erf_f32": (erf_f32, np.float32, special.erf),
}
SPECIAL = [0.0, -0.0, np.inf, -np.inf, np.nan]


def _compiled_loop(f):
    @numba.njit(error_model="numpy")
    def loop(x, out):
        for i in range(x.shape[0]):
            out[i] = f(x[i])

    return loop


_LOOPS: dict[str, object] = {}


def run(name: str, x: np.ndarray) -> np.ndarray:
    f, dtype, _ = FUNCTIONS[name]
    if name not in _LOOPS:
        _LOOPS[name] = _compiled_loop(f)
    x = np.ascontiguousarray(x, dtype)
    out = np.empty_like(x)
    _LOOPS[name](x, out)
    return out


def ulp_distance(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """How many floats of a's dtype lie between a and b (0 for equal values, NaNs included)."""
    bits = {np.dtype(np.float64): np.int64, np.dtype(np.float32): np.int32}[a.dtype]
    ia, ib = a.view(bits).astype(np.int64), b.astype(a.dtype).view(bits).astype(np.int64)
    top = np.int64(np.iinfo(bits).min)  # sign-magnitude patterns onto one monotonic line
    ia, ib = np.where(ia < 0, top - ia, ia), np.where(ib < 0, top - ib, ib)
    return np.where(np.isnan(a) & np.isnan(b), 0, np.abs(ia - ib))


def samples(dtype) -> np.ndarray:
    rng = np.random.default_rng(2024)
    info = np.finfo(dtype)
    logs = rng.uniform(np.log(float(info.smallest_subnormal)), np.log(float(info.max)), 100000)
    wide = np.exp(logs)
    wide = wide[wide <= float(info.max)]
    grid = np.linspace(-20, 20, 100001)
    quadrants = np.arange(-20000, 20000) * (np.pi / 2)
    fixed = [1e22, 1e300, 1e6, 2e6, 5e-324, 1e-310, 0.84375, 1.25, 6.0, 1 / 0.35]
    with np.errstate(over="ignore"):
        x = np.concatenate([grid, wide, -wide, quadrants, fixed]).astype(dtype)
    return x[np.isfinite(x)]


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_within_4_ulp_over_every_binade(name):
    _, dtype, reference = FUNCTIONS[name]
    x = samples(dtype)
    with np.errstate(all="ignore"):
        want = reference(x.astype(np.float64)).astype(dtype)
    got = run(name, x)
    assert got.dtype == dtype
    err = ulp_distance(got, want)
    worst = int(err.argmax())
    assert err[worst] <= 4, f"{name}({x[worst]!r}) = {got[worst]!r}, want {want[worst]!r}"


EXACT = {
    "sin": [0.0, -0.0, np.nan, np.nan, np.nan], "cos": [1.0, 1.0, np.nan, np.nan, np.nan],
    "erf": [0.0, -0.0, 1.0, -1.0, np.nan],
}


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_special_values_exactly(name):
    _, dtype, _ = FUNCTIONS[name]
    got = run(name, np.array(SPECIAL, dtype))
    want = np.array(EXACT[name[:3]], dtype)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(np.signbit(got[:2]), np.signbit(want[:2]))  # -0.0 kept


@pytest.mark.parametrize("name", ["sin_f64", "sin_f32", "erf_f64", "erf_f32"])
def test_subnormals(name):
    """sin(x) = x and erf(x) = 2/sqrt(pi) x (to rounding) for subnormal x, signs kept."""
    _, dtype, reference = FUNCTIONS[name]
    tiny = np.finfo(dtype).smallest_subnormal
    x = np.array([tiny, -tiny, tiny * 1000, -tiny * 1000], dtype)
    got = run(name, x)
    want = reference(x.astype(np.float64)).astype(dtype)
    assert ulp_distance(got, want).max() <= 1
    np.testing.assert_array_equal(np.signbit(got), np.signbit(x))


def test_large_arguments():
    """Past the Cody-Waite bound (2**20 * pi/2) float64 reduces by Payne-Hanek; float32 always."""
    x = np.array([1e22, 1e300, -1e300, 2.0 ** 1000, 1e7, -3e38, 1647099.0, 1647100.0,
                  np.finfo(np.float64).max, -np.finfo(np.float64).max])
    assert ulp_distance(run("sin_f64", x), np.sin(x)).max() <= 1
    assert ulp_distance(run("cos_f64", x), np.cos(x)).max() <= 1
    x32 = np.array([3e38, -1e30, 1e20, 1e10, 16777216.0, np.finfo(np.float32).max], np.float32)
    for name, f in (("sin_f32", np.sin), ("cos_f32", np.cos)):
        want = f(x32.astype(np.float64)).astype(np.float32)
        assert ulp_distance(run(name, x32), want).max() <= 1


def _reference_sin_cos(x: float) -> tuple[float, float]:
    """sin(x) and cos(x) with the reduction done exactly: x mod pi/2 from 2/pi in integer
    arithmetic (1400 bits), then libm on the reduced argument as a double-double r + dr
    (sin(r + dr) = sin(r) + dr cos(r)). Within about 1 ulp, independently of libm's own
    reduction."""
    import math
    from fractions import Fraction

    from minijit.codegen.vecmath.trig import _two_over_pi_bits

    n = 1400
    p = _two_over_pi_bits(n)  # 2/pi * 2**n, and so pi/2 = 2**n / p
    m, e = math.frexp(abs(x))
    m, e = int(m * 2 ** 53), e - 53
    t = (m * p) << e if e >= 0 else (m * p) >> -e
    k, frac = t >> n, t & ((1 << n) - 1)
    if frac >= 1 << (n - 1):
        k, frac = k + 1, frac - (1 << n)
    exact = Fraction(frac, p)
    r = float(exact)
    dr = float(exact - Fraction(r))
    s, c = math.sin(r) + dr * math.cos(r), math.cos(r) - dr * math.sin(r)
    s, c = [(s, c), (c, -s), (-s, -c), (-c, s)][k % 4]
    return (-s if x < 0 else s), c


def test_hardest_float64_argument():
    """6381956970095103 * 2**797 is the float64 closest to a multiple of pi/2 (Kahan and
    McDonald): cos of it is about -4.7e-19, and only an accurate reduction gets it right
    (NumPy's and libm's cos miss by 8 ulp)."""
    x = 6381956970095103 * 2.0 ** 797
    for arg in (x, -x):
        sin_want, cos_want = _reference_sin_cos(arg)
        assert ulp_distance(run("sin_f64", np.array([arg])), np.array([sin_want])).max() <= 1
        assert ulp_distance(run("cos_f64", np.array([arg])), np.array([cos_want])).max() <= 1


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_large_arguments_against_an_exact_reduction(dtype):
    """Seeded arguments from 2**20 to the largest float, reduced exactly for the reference."""
    rng = np.random.default_rng(99)
    top = np.log2(float(np.finfo(dtype).max))
    x = (2.0 ** rng.uniform(20, top, 300) * rng.choice([-1, 1], 300)).astype(dtype)
    want = np.array([_reference_sin_cos(float(v)) for v in x]).astype(dtype)
    assert ulp_distance(run(f"sin_f{x.dtype.itemsize * 8}", x), want[:, 0]).max() <= 2
    assert ulp_distance(run(f"cos_f{x.dtype.itemsize * 8}", x), want[:, 1]).max() <= 2


_VECTOR_ARITHMETIC = re.compile(r"= f(mul|add|sub) [a-z ]*<\d+ x (double|float)>")


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_the_loop_vectorizes(name):
    run(name, np.ones(8))
    loop = _LOOPS[name]
    ir = loop.inspect_llvm(loop.signatures[0])
    assert _VECTOR_ARITHMETIC.search(ir), f"{name}: no vector arithmetic in the loop's IR"
