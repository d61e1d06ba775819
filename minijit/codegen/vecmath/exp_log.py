"""exp, expm1, log and log1p for float64 and float32, without libm, so that loops vectorize.

Method (the classic one of Cody & Waite, fdlibm, Cephes, SLEEF and Eigen):

exp / expm1: x = k*ln2 + r with k = round(x/ln2) and |r| <= ln2/2 (Cody-Waite: ln2 split into
    a high part with 21 trailing zero bits, so k*LN2_HI is exact for |k| < 2**21, and a low
    part), exp(r) or expm1(r) from a polynomial, then a scale by 2**k built from exponent bits.
    The polynomials are the Taylor series of exp truncated where the remainder is below a
    quarter ulp on |r| <= ln2/2: degree 13 for float64 (r**14/14! < 2**-57), degree 7 for
    float32 (r**8/8! < 2**-27; degree 8 in the float64-internal variants).
log / log1p: x = 2**k * m with m in [sqrt(1/2), sqrt(2)), found with integer arithmetic on
    the bits (fdlibm's trick: add the bits of 1 - bits of sqrt(1/2) so the exponent field
    carries into k exactly when m >= sqrt(2)); with f = m - 1 and s = f/(2+f),
    log(1+f) = 2*atanh(s) = f - f*f/2 + s*(f*f/2 + R(s*s)), where R is fdlibm's degree-7
    minimax polynomial in s*s on [0, 0.1716**2] (float64; degree 4 for float32, fdlibm's
    logf). log1p forms u = 1 + x and adds the rounding error of that sum back, c/u with
    c = (1 + x) - u computed exactly (Sterbenz), as fdlibm's log1p does.

The float32 functions run the same method in float32 arithmetic, with float32 coefficients
(Cephes' split of ln2 for exp, fdlibm's float minimax polynomial for log) and shorter
polynomials. Converting to float64, running a shorter float64 polynomial and rounding once
is as accurate, but was measured 1.2-1.9x slower in vectorized loops (half the lanes per
vector), so the float32 functions compute in float32.

Branch-free: every special case is a conditional expression whose both sides are cheap and
safe to compute (the compiled code holds `select`s, not branches), so LLVM's loop vectorizer
if-converts loops that call these functions. NaN inputs are replaced by 0 before the integer
work and put back at the end. The functions are compiled with `error_model="numpy"`, so a
division never carries a ZeroDivisionError check (which would be a branch).

Special values (as NumPy): nan -> nan; exp(-inf) = 0, exp(inf) = inf, overflow -> inf
(x > 709.78 in float64, x > 88.72 in float32), gradual underflow to subnormals then 0;
expm1(-inf) = -1, expm1(+-0) = +-0; log(0) = -inf, log(x < 0) = nan, log(inf) = inf,
log of subnormals exact in exponent; log1p(-1) = -inf, log1p(x < -1) = nan, log1p(+-0) = +-0.
"""

from __future__ import annotations

import numpy as np

from minijit.codegen.vecmath.bits import (
    SHIFTER_F32,
    SHIFTER_F32_BITS,
    SHIFTER_F64,
    SHIFTER_F64_BITS,
    f32_bits,
    f32_from_bits,
    f32_from_small_int,
    f64_bits,
    f64_from_bits,
    f64_from_small_int,
    pow2_f32,
    pow2_f64,
)
from minijit.codegen.vecmath.deferred import jit

_jit = jit(error_model="numpy", cache=True)  # a new process loads it, not compiles it

INF = np.inf
LOG2E = 1.4426950408889634  # 1/ln(2) rounded to double
# ln(2) = LN2_HI + LN2_LO; LN2_HI has its 21 low mantissa bits zero (bits 0x3fe62e42fee00000),
# so k*LN2_HI is exact for every k the reductions meet.
LN2_HI = 6.93147180369123816490e-01
LN2_LO = 1.90821492927058770002e-10
LN2 = 0.6931471805599453

# Taylor coefficients 1/n! of exp, n = 2..13.
_E2, _E3, _E4, _E5 = 1 / 2, 1 / 6, 1 / 24, 1 / 120
_E6, _E7, _E8, _E9 = 1 / 720, 1 / 5040, 1 / 40320, 1 / 362880
_E10, _E11, _E12, _E13 = 1 / 3628800, 1 / 39916800, 1 / 479001600, 1 / 6227020800

# fdlibm's minimax coefficients for log (e_log.c): R(z) = Lg1*z + ... + Lg7*z**7 approximates
# (log(1+f) - f + f*f/2)/s - f*f/2 for z = s*s in [0, 0.1716**2], far below an ulp.
_LG1 = 6.666666666666735130e-01
_LG2 = 3.999999999940941908e-01
_LG3 = 2.857142874366239149e-01
_LG4 = 2.222219843214978396e-01
_LG5 = 1.818357216161805012e-01
_LG6 = 1.531383769920937332e-01
_LG7 = 1.479819860511658591e-01

# Float64 exp: below EXP_LO the result is 0 (exp(-745.14) < 2**-1075), above EXP_HI inf.
# Clamping to these keeps k in [-1077, 1025], which the two-factor scaling handles.
EXP_LO_F64 = -746.0
EXP_HI_F64 = 710.0
MIN_NORMAL_F64 = 2.2250738585072014e-308
TWO54 = 18014398509481984.0

# Bits of 1.0 and of sqrt(1/2): see `_log_decompose`.
_ONE_BITS = 0x3FF0000000000000
_SQRTHALF_BITS = 0x3FE6A09E667F3BCD
_MANT_MASK = 0x000FFFFFFFFFFFFF


@_jit
def _exp_reduce(xs):
    """(k as float, k as int, r) with xs = k*ln2 + r, |r| <= ln2/2 (+ rounding), |xs| < 2**40."""
    t = xs * LOG2E + SHIFTER_F64  # rounds xs/ln2 to an integer k, kept in the low bits
    kf = t - SHIFTER_F64
    k = f64_bits(t) - SHIFTER_F64_BITS
    r = (xs - kf * LN2_HI) - kf * LN2_LO
    return kf, k, r


@_jit
def _expm1_poly(r):
    """expm1(r) for |r| <= ln2/2 + tiny, float64: r + r*r*(1/2 + r/6 + ... + r**11/13!).

    The polynomial in parentheses is evaluated by Estrin's scheme (pairs a + b*r, combined
    with r**2, r**4, r**8), not Horner's: eight dependent operations instead of 22, so a
    vectorized loop is not bound by their latency (the softmax's exp loop took 4.1 ns per
    element with Horner's rule). The high-order terms are tiny, so the different rounding
    order changes the result by less than the final `r + r*r*q` rounds (tests/test_vecmath)."""
    r2 = r * r
    r4 = r2 * r2
    p01 = (_E2 + _E3 * r) + r2 * (_E4 + _E5 * r)
    p23 = (_E6 + _E7 * r) + r2 * (_E8 + _E9 * r)
    p45 = (_E10 + _E11 * r) + r2 * (_E12 + _E13 * r)
    q = p01 + r4 * (p23 + r4 * p45)
    return r + r2 * q


@_jit
def exp_f64(x):
    """e**x for float64 x; within 1 ulp of the correctly rounded result (see package docs)."""
    xs = x if x == x else 0.0
    xs = EXP_HI_F64 if xs > EXP_HI_F64 else xs
    xs = EXP_LO_F64 if xs < EXP_LO_F64 else xs
    _, k, r = _exp_reduce(xs)
    p = 1.0 + _expm1_poly(r)
    # 2**k may not be a normal double (k in [-1077, 1025]): scale by 2**k1 (exact, the result
    # stays normal) then by 2**(k-k1), which rounds once, into a subnormal or to inf.
    k1 = k >> 1
    y = (p * pow2_f64(k1)) * pow2_f64(k - k1)
    return y if x == x else x


@_jit
def expm1_f64(x):
    """e**x - 1 for float64 x, accurate near 0 (no cancellation); expm1(+-0) = +-0."""
    xs = x if x == x else 0.0
    xs = EXP_HI_F64 if xs > EXP_HI_F64 else xs
    xs = -50.0 if xs < -50.0 else xs  # expm1(-50) rounds to -1
    _, k, r = _exp_reduce(xs)
    pm1 = _expm1_poly(r)
    # e**x - 1 = (2**k2 * expm1(r) + (2**k2 - 2**-k1)) * 2**k1 with k = k1 + k2. For k <= 56,
    # k1 = 0: the two terms never cancel badly (for k = 0 it is expm1(r) itself, with the
    # exact reduction r = x). For k > 56 the -1 is below half an ulp, and k (up to 1025) is
    # split in halves as in exp_f64 so both powers of two are normal doubles; the final
    # multiplication is exact or overflows to inf.
    k1 = (k >> 1) if k > 56 else 0
    k2 = k - k1
    t2 = pow2_f64(k2)
    y = (t2 * pm1 + (t2 - pow2_f64(-k1))) * pow2_f64(k1)
    y = x if x == 0.0 else y  # keeps the sign of -0.0
    return y if x == x else x


@_jit
def _log_decompose(x):
    """(k, f) with x = 2**k * (1 + f), 1 + f in [sqrt(1/2), sqrt(2)), for finite x > 0 normal.

    Adding bits(1) - bits(sqrt(1/2)) to the bits of x = 2**e * m0 (m0 in [1, 2)) carries into
    the exponent field exactly when m0 >= sqrt(2), so `ix >> 52` is k + 1023 (k = e or e + 1);
    the low 52 bits re-based at bits(sqrt(1/2)) give m = x / 2**k in [sqrt(1/2), sqrt(2))."""
    ix = f64_bits(x) + (_ONE_BITS - _SQRTHALF_BITS)
    k = (ix >> 52) - 1023
    m = f64_from_bits((ix & _MANT_MASK) + _SQRTHALF_BITS)
    return k, m - 1.0


@_jit
def _log_core(f, kf, c):
    """log(2**k * (1 + f)) + c for 1 + f in [sqrt(1/2), sqrt(2)), kf = float(k) (fdlibm)."""
    s = f / (2.0 + f)
    z = s * s
    w = z * z
    t1 = w * (_LG2 + w * (_LG4 + w * _LG6))
    t2 = z * (_LG1 + w * (_LG3 + w * (_LG5 + w * _LG7)))
    hfsq = 0.5 * f * f
    return kf * LN2_HI - ((hfsq - (s * (hfsq + (t1 + t2)) + (kf * LN2_LO + c))) - f)


@_jit
def log_f64(x):
    """Natural log for float64 x; log(0) = -inf, log(x<0) = nan, log(inf) = inf."""
    sub = x < MIN_NORMAL_F64  # subnormal (or <= 0, fixed up below): scale into the normals
    xn = x * TWO54 if sub else x
    k, f = _log_decompose(xn)
    k = k - 54 if sub else k
    y = _log_core(f, f64_from_small_int(k), 0.0)
    y = -INF if x == 0.0 else y
    y = np.nan if x < 0.0 else y
    return y if x < INF else x  # inf -> inf, nan -> nan


@_jit
def log1p_f64(x):
    """log(1 + x) for float64 x, accurate near 0; log1p(-1) = -inf, log1p(+-0) = +-0."""
    u = 1.0 + x
    # c = (1 + x) - u exactly: for x < 1, u - 1 is exact (u in [0, 2]); for x >= 1, u - x is.
    c = (x - (u - 1.0)) if x < 1.0 else (1.0 - (u - x))
    us = u if u > 0.0 else 1.0  # x <= -1 (fixed up below) or nan: any positive normal will do
    k, f = _log_decompose(us)
    y = _log_core(f, f64_from_small_int(k), c / us)
    y = x if abs(x) < 5.551115123125783e-17 else y  # 2**-54: log1p(x) rounds to x; keeps -0.0
    y = -INF if x == -1.0 else y
    y = np.nan if x < -1.0 else y
    return y if x < INF else x


# ----------------------------------------------------------------------------------------
# float32 kernels: float32 arithmetic throughout (every constant a np.float32, since a Python
# float would promote the expression to float64), same method as the float64 ones.

EXP_LO_F32 = -104.0  # exp(-104) < 2**-150: rounds to 0 in float32
EXP_HI_F32 = 89.0  # exp(89) > float32 max: rounds to inf
_F32 = np.float32
_ZERO_F32, _ONE_F32, _TWO_F32, _HALF_F32 = _F32(0.0), _F32(1.0), _F32(2.0), _F32(0.5)
_INF_F32 = _F32(np.inf)
_NAN_F32 = _F32(np.nan)
_LOG2E_F32 = _F32(1.44269504)
_SHIFTER_F32 = _F32(SHIFTER_F32)
# ln2 = _LN2_HI_F32 + _LN2_LO_F32 (Cephes' expf split: the high part has 9 significant
# bits, so k*_LN2_HI_F32 is exact for |k| < 2**15).
_LN2_HI_F32 = _F32(0.693359375)
_LN2_LO_F32 = _F32(-2.12194440e-4)
# Taylor coefficients 1/n!, n = 2..7: the remainder r**8/8! is below 2**-27 relative.
_C2, _C3, _C4 = _F32(1 / 2), _F32(1 / 6), _F32(1 / 24)
_C5, _C6, _C7 = _F32(1 / 120), _F32(1 / 720), _F32(1 / 5040)
_EXP_LO_F32 = _F32(EXP_LO_F32)
_EXP_HI_F32 = _F32(EXP_HI_F32)


@_jit
def _exp_reduce_f32(xs):
    """(k, r) with xs = k*ln2 + r, |r| <= ln2/2 (+ rounding), float32 xs with |xs| <= 104."""
    t = xs * _LOG2E_F32 + _SHIFTER_F32
    kf = t - _SHIFTER_F32
    k = f32_bits(t) - SHIFTER_F32_BITS  # an int64 in Numba's arithmetic
    return k, (xs - kf * _LN2_HI_F32) - kf * _LN2_LO_F32


@_jit
def _expm1_poly_f32(r):
    """expm1(r) for |r| <= ln2/2 + tiny, float32: r + r*r*(1/2 + r/6 + ... + r**5/7!)."""
    q = _C6 + r * _C7
    q = _C5 + r * q
    q = _C4 + r * q
    q = _C3 + r * q
    q = _C2 + r * q
    return r + (r * r) * q


@_jit
def exp_f32(x):
    """e**x for float32 x, float32 result; overflow (x > 88.72) -> inf, underflow to subnormals."""
    xs = x if x == x else _ZERO_F32
    xs = _EXP_HI_F32 if xs > _EXP_HI_F32 else xs
    xs = _EXP_LO_F32 if xs < _EXP_LO_F32 else xs
    k, r = _exp_reduce_f32(xs)
    p = _ONE_F32 + _expm1_poly_f32(r)
    k1 = k >> 1  # k in [-151, 129]: two normal float32 factors, one rounding (see exp_f64)
    y = (p * pow2_f32(k1)) * pow2_f32(k - k1)
    return y if x == x else x


@_jit
def _expm1_moderate_f32(y):
    """expm1(y) for float32 0 <= y <= 20 (k <= 29): 2**k * expm1(r) + (2**k - 1)."""
    k, r = _exp_reduce_f32(y)
    tk = pow2_f32(k)
    return tk * _expm1_poly_f32(r) + (tk - _ONE_F32)


@_jit
def expm1_f32(x):
    """e**x - 1 for float32 x, float32 result; expm1(+-0) = +-0."""
    xs = x if x == x else _ZERO_F32
    xs = _EXP_HI_F32 if xs > _EXP_HI_F32 else xs
    xs = _F32(-20.0) if xs < _F32(-20.0) else xs  # expm1(-20) rounds to -1
    k, r = _exp_reduce_f32(xs)
    pm1 = _expm1_poly_f32(r)
    k1 = (k >> 1) if k > 25 else 0  # as expm1_f64: the -1 is negligible once k > 25
    k2 = k - k1
    t2 = pow2_f32(k2)
    y = (t2 * pm1 + (t2 - pow2_f32(-k1))) * pow2_f32(k1)
    y = x if x == _ZERO_F32 else y
    return y if x == x else x


# fdlibm's float minimax coefficients for logf (the same R, degree 4), and its split of ln2:
# the high part has 17 significant bits, so k*LN2_HI is exact for |k| < 128; beyond (inputs
# below 2**-127 or above 2**127) it rounds once, below half an ulp of the result ~ +-88.
_LG1_F32 = _F32(0.66666662693)
_LG2_F32 = _F32(0.40000972152)
_LG3_F32 = _F32(0.28498786688)
_LG4_F32 = _F32(0.24279078841)
_LN2_HI_LOG_F32 = _F32(6.9313812256e-01)
_LN2_LO_LOG_F32 = _F32(9.0580006145e-06)
_MIN_NORMAL_F32 = _F32(1.17549435e-38)
_TWO25_F32 = _F32(33554432.0)
_SQRTHALF_BITS_F32 = 0x3F3504F3


@_jit
def _log_decompose_f32(x):
    """(k, f) with x = 2**k * (1 + f), 1 + f in [sqrt(1/2), sqrt(2)), float32 x > 0 normal."""
    ix = f32_bits(x) + (0x3F800000 - _SQRTHALF_BITS_F32)
    k = (ix >> 23) - 127
    return k, f32_from_bits((ix & 0x007FFFFF) + _SQRTHALF_BITS_F32) - _ONE_F32


@_jit
def _log_core_f32(f, kf, c):
    """log(2**k * (1 + f)) + c in float32, fdlibm's logf evaluation."""
    s = f / (_TWO_F32 + f)
    z = s * s
    w = z * z
    t1 = w * (_LG2_F32 + w * _LG4_F32)
    t2 = z * (_LG1_F32 + w * _LG3_F32)
    hfsq = _HALF_F32 * f * f
    return kf * _LN2_HI_LOG_F32 - (
        (hfsq - (s * (hfsq + (t1 + t2)) + (kf * _LN2_LO_LOG_F32 + c))) - f)


@_jit
def log_f32(x):
    """Natural log for float32 x, float32 result; log(0) = -inf, log(x<0) = nan, log(inf) = inf."""
    sub = x < _MIN_NORMAL_F32
    xn = x * _TWO25_F32 if sub else x
    k, f = _log_decompose_f32(xn)
    k = k - 25 if sub else k
    y = _log_core_f32(f, f32_from_small_int(k), _ZERO_F32)
    y = -_INF_F32 if x == _ZERO_F32 else y
    y = _NAN_F32 if x < _ZERO_F32 else y
    return y if x < _INF_F32 else x


@_jit
def log1p_f32(x):
    """log(1 + x) for float32 x, float32 result; log1p(-1) = -inf, log1p(+-0) = +-0."""
    u = _ONE_F32 + x
    c = (x - (u - _ONE_F32)) if x < _ONE_F32 else (_ONE_F32 - (u - x))  # as log1p_f64
    us = u if u > _ZERO_F32 else _ONE_F32
    k, f = _log_decompose_f32(us)
    y = _log_core_f32(f, f32_from_small_int(k), c / us)
    y = x if abs(x) < _F32(2.9802322e-08) else y  # 2**-25: rounds to x; keeps -0.0
    y = -_INF_F32 if x == -_ONE_F32 else y
    y = _NAN_F32 if x < -_ONE_F32 else y
    return y if x < _INF_F32 else x


__all__ = [
    "exp_f64", "expm1_f64", "log_f64", "log1p_f64",
    "exp_f32", "expm1_f32", "log_f32", "log1p_f32",
]
