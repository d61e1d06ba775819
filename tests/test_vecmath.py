"""minijit.codegen.vecmath: accuracy against NumPy over the full range, special values, and
evidence that a Numba loop calling each function is vectorized by LLVM."""

from __future__ import annotations

import re

import numba
import numpy as np
import pytest

from minijit.codegen.vecmath import FUNCTIONS

MAX_ULP = 4
DTYPES = ("float64", "float32")
NAMES = ("exp", "expm1", "log", "log1p", "tanh", "logistic")


def _logistic_ref(x):
    """1 / (1 + exp(-x)) in NumPy, written so that neither tail overflows or cancels."""
    e = np.exp(-np.abs(x))
    return np.where(x >= 0, np.ones_like(x), e) / (1 + e)


REFERENCE = {"exp": np.exp, "expm1": np.expm1, "log": np.log, "log1p": np.log1p,
             "tanh": np.tanh, "logistic": _logistic_ref}

_LOOPS: dict = {}


def _loop(name, dtype):
    """An njit loop `out[i] = f(x[i])` over a 1-D array, compiled once per (name, dtype)."""
    key = (name, dtype)
    if key not in _LOOPS:
        f = FUNCTIONS[key]

        @numba.njit
        def loop(x, out):
            for i in range(x.size):
                out[i] = f(x[i])

        loop.compile((numba.types.Array(numba.from_dtype(np.dtype(dtype)), 1, "C"),) * 2)
        _LOOPS[key] = loop
    return _LOOPS[key]


def _apply(name, dtype, x):
    x = np.ascontiguousarray(x, dtype=dtype)
    out = np.empty_like(x)
    _loop(name, dtype)(x, out)
    return out


def ulp_distance(a, b):
    """Number of representable values between a and b (0 for two nans, inf for one nan).

    The bits are mapped to integers that order like the floats (negative floats: flip them
    below zero), so the distance counts every float in between, subnormals included, and
    +0.0 and -0.0 are 0 apart (their signs are checked separately)."""
    a, b = np.asarray(a), np.asarray(b)
    itype = np.int64 if a.dtype == np.float64 else np.int32
    lo = np.iinfo(itype).min
    ia, ib = a.view(itype).astype(np.int64), b.view(itype).astype(np.int64)
    ka = np.where(ia < 0, lo - ia, ia)
    kb = np.where(ib < 0, lo - ib, ib)
    d = np.abs(ka - kb).astype(np.float64)
    d[np.isnan(a) & np.isnan(b)] = 0
    d[np.isnan(a) ^ np.isnan(b)] = np.inf
    return d


def full_range_sample(dtype):
    """Seeded random bit patterns (uniform over every binade, both signs, subnormals, inf, nan)
    plus dense grids over the interesting ranges and near the over/underflow thresholds."""
    dt = np.dtype(dtype)
    utype = np.uint64 if dt == np.float64 else np.uint32
    rng = np.random.default_rng(20261201)
    bits = rng.integers(0, np.iinfo(utype).max, 300_000, dtype=utype, endpoint=True)
    tiny = np.finfo(dt).smallest_subnormal
    grids = [
        np.linspace(-800.0, 800.0, 100_001),
        np.linspace(-5.0, 5.0, 100_001),
        np.linspace(-1.0, 1.0, 50_001),
        np.linspace(-1e-3, 1e-3, 10_001),
        np.linspace(0.5, 2.0, 50_001),
        np.linspace(-750.0, -700.0, 20_001),  # float64 exp: subnormal results, then 0
        np.linspace(700.0, 712.0, 10_001),  # float64 exp: the overflow threshold
        np.linspace(-110.0, -80.0, 20_001),  # float32 exp: subnormal results, then 0
        np.linspace(85.0, 92.0, 10_001),  # float32 exp: the overflow threshold
        np.geomspace(tiny, 1e-290 if dt == np.float64 else 1e-36, 10_001),  # subnormal inputs
    ]
    return np.concatenate([bits.view(dt)] + [g.astype(dt) for g in grids])


@pytest.fixture(scope="module", params=DTYPES)
def sample(request):
    return request.param, full_range_sample(request.param)


@pytest.mark.parametrize("name", NAMES)
def test_max_ulp_over_full_range(name, sample):
    dtype, x = sample
    got = _apply(name, dtype, x)
    with np.errstate(all="ignore"):
        want = REFERENCE[name](x)
    assert got.dtype == x.dtype
    d = ulp_distance(got, want)
    worst = int(np.argmax(d))
    assert d[worst] <= MAX_ULP, (name, dtype, x[worst], got[worst], want[worst], d[worst])


INF, NAN = np.inf, np.nan
SPECIALS = {
    "exp": [(NAN, NAN), (INF, INF), (-INF, 0.0), (0.0, 1.0), (-0.0, 1.0), (710.0, INF),
            (1000.0, INF), (-746.0, 0.0), (-1000.0, 0.0)],
    "expm1": [(NAN, NAN), (INF, INF), (-INF, -1.0), (0.0, 0.0), (-0.0, -0.0), (710.0, INF),
              (-100.0, -1.0)],
    "log": [(NAN, NAN), (INF, INF), (-INF, NAN), (0.0, -INF), (-0.0, -INF), (-1.0, NAN),
            (1.0, 0.0)],
    "log1p": [(NAN, NAN), (INF, INF), (-INF, NAN), (-1.0, -INF), (-2.0, NAN), (0.0, 0.0),
              (-0.0, -0.0)],
    "tanh": [(NAN, NAN), (INF, 1.0), (-INF, -1.0), (0.0, 0.0), (-0.0, -0.0), (30.0, 1.0),
             (-30.0, -1.0)],
    "logistic": [(NAN, NAN), (INF, 1.0), (-INF, 0.0), (0.0, 0.5), (-0.0, 0.5), (800.0, 1.0),
                 (-800.0, 0.0)],
}
# Where the result is the input itself (tiny and subnormal x, both signs).
IDENTITY_NEAR_ZERO = ("expm1", "log1p", "tanh")


def _same(a, b):
    """Bitwise-equal up to nan payloads: same value, same sign of zero, nan iff nan."""
    return bool((np.isnan(a) & np.isnan(b)) | ((a == b) & (np.signbit(a) == np.signbit(b))))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", NAMES)
def test_special_values(name, dtype):
    dt = np.dtype(dtype)
    x = np.array([v for v, _ in SPECIALS[name]], dtype=dt)
    want = np.array([w for _, w in SPECIALS[name]], dtype=dt)
    got = _apply(name, dtype, x)
    for xi, gi, wi in zip(x, got, want):
        assert _same(gi, wi), (name, dtype, xi, gi, wi)
    # The specials agree with NumPy too.
    with np.errstate(all="ignore"):
        ref = REFERENCE[name](x)
    assert all(_same(g, r) for g, r in zip(got, ref))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", IDENTITY_NEAR_ZERO)
def test_subnormal_inputs_map_to_themselves(name, dtype):
    fi = np.finfo(dtype)
    pos = np.array([fi.smallest_subnormal, 3 * fi.smallest_subnormal,
                    fi.smallest_normal / 2, fi.smallest_normal], dtype=dtype)
    x = np.concatenate([pos, -pos])
    got = _apply(name, dtype, x)
    assert all(_same(g, v) for g, v in zip(got, x)), (name, dtype, got)


@pytest.mark.parametrize("dtype", DTYPES)
def test_exp_underflows_gradually(dtype):
    """exp's results pass through every subnormal scale before reaching 0, as NumPy's do."""
    fi = np.finfo(dtype)
    lo = np.log(float(fi.smallest_subnormal))  # exp(lo) is the smallest subnormal
    x = np.linspace(lo - 1.0, np.log(float(fi.smallest_normal)) + 1.0, 5001).astype(dtype)
    got = _apply("exp", dtype, x)
    want = np.exp(x)
    assert np.count_nonzero((got > 0) & (got < fi.smallest_normal)) > 1000
    assert (got[x < lo - 1.0 + 0.3] == 0).all()
    assert ulp_distance(got, want).max() <= MAX_ULP


@pytest.mark.parametrize("dtype, largest_finite", [("float64", 709.782712893384),
                                                     ("float32", 88.72283)])  # ln(max float)
def test_exp_overflow_threshold(dtype, largest_finite):
    dt = np.dtype(dtype).type
    first_inf = np.nextafter(dt(largest_finite), dt(np.inf))
    beyond = 89.0 if dtype == "float32" else 710.0
    x = np.array([largest_finite, first_inf, beyond, 1e30], dtype=dtype)
    got = _apply("exp", dtype, x)
    with np.errstate(over="ignore"):
        want = np.exp(x)
    assert np.isfinite(got[0]) and ulp_distance(got[:1], want[:1])[0] <= MAX_ULP
    assert np.isinf(want[1:]).all() and (got[1:] == np.inf).all()
    assert (_apply("expm1", dtype, x[1:]) == np.inf).all()


@pytest.mark.parametrize("dtype", DTYPES)
def test_log_of_subnormals(dtype):
    fi = np.finfo(dtype)
    x = np.geomspace(float(fi.smallest_subnormal), float(fi.smallest_normal), 2001)
    x = x.astype(dtype)
    got = _apply("log", dtype, x)
    assert ulp_distance(got, np.log(x)).max() <= MAX_ULP


VECTOR_FP = re.compile(r"= (?:fmul|fadd|fsub|fdiv)(?: \w+)* <(\d+) x (double|float)>")


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", NAMES)
def test_loop_is_vectorized(name, dtype):
    """LLVM's loop vectorizer widened the loop: its IR has vector fmul/fadd on <N x double> or
    <N x float> (N >= 2, the x86-64 baseline), and the function was inlined, not called."""
    loop = _loop(name, dtype)
    llvm = loop.inspect_llvm(loop.signatures[0])
    widths = {int(n) for n, _ in VECTOR_FP.findall(llvm)}
    assert widths and min(widths) >= 2, (name, dtype, "no vector arithmetic in the loop")
    mangled_name = FUNCTIONS[(name, dtype)].py_func.__name__
    assert not re.search(rf"call [^\n]*@\w*{mangled_name}", llvm), "not inlined"


@pytest.mark.parametrize("dtype", DTYPES)
def test_gelu_loop_is_vectorized(dtype):
    """The loop the task is about: GELU's tanh form, float constants of the array's dtype."""
    dt = np.dtype(dtype).type
    tanh = FUNCTIONS[("tanh", dtype)]
    c0, c1, half, one = dt(0.7978845608), dt(0.044715), dt(0.5), dt(1.0)

    @numba.njit(error_model="numpy")
    def gelu(x, out):
        for i in range(x.size):
            v = x[i]
            out[i] = half * v * (one + tanh(c0 * (v + c1 * v * v * v)))

    x = np.linspace(-6, 6, 1001).astype(dtype)
    out = np.empty_like(x)
    gelu(x, out)
    assert {int(n) for n, _ in VECTOR_FP.findall(gelu.inspect_llvm(gelu.signatures[0]))}
    with np.errstate(all="ignore"):
        want = 0.5 * x * (1 + np.tanh(c0 * (x + c1 * x**3)))
    # 1 + tanh(...) cancels for x << 0, so the error is relative to |x|, not to the result.
    err = np.abs(out.astype(np.float64) - want.astype(np.float64))
    assert (err <= 8 * np.finfo(dtype).eps * np.abs(x.astype(np.float64))).all()


def test_registry_covers_every_function_and_dtype():
    assert {(n, d) for n in NAMES for d in DTYPES} <= set(FUNCTIONS)
    for (name, dtype), f in FUNCTIONS.items():
        assert f.py_func.__name__ == f"{name}_{'f64' if dtype == 'float64' else 'f32'}"


def test_the_package_names_are_numba_functions_in_a_new_process():
    """`vecmath.tanh_f64` is a Numba function wherever it is read, Numba's backend loaded or
    not (the modules hold plain Python until then: vecmath/deferred.py), so a learner's own
    njit loop can call it, as chapter 09 does."""
    import subprocess
    import sys

    code = ("import sys, numpy as np, numba\n"
            "from minijit.codegen import vecmath\n"
            "assert 'minijit.codegen.compile' not in sys.modules\n"
            "@numba.njit(error_model='numpy')\n"
            "def f(x):\n"
            "    return vecmath.tanh_f64(x) + vecmath.exp_f32(np.float32(x))\n"
            "print(repr(f(0.5)))\n")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=300)
    assert run.returncode == 0, run.stderr
    assert float(run.stdout) == pytest.approx(np.tanh(0.5) + np.exp(0.5), rel=1e-6)
