"""sin and cos as branch-free `numba.njit` scalar functions, so that loops calling them vectorize.

Method: reduce x to r = x - k*pi/2 with |r| <= pi/4 (k the nearest integer to x*2/pi), then
evaluate fdlibm's minimax polynomials for sin and cos on [-pi/4, pi/4] (`__kernel_sin`,
`__kernel_cos`, which take r as a double-double hi + lo) and pick by the quadrant k mod 4.
Every choice is a select (`a if c else b`) on values computed unconditionally, so LLVM can
if-convert the loop body and vectorize it.

Range reduction:
- float64, |x| <= 2**20 * pi/2 (about 1.6e6): Cody-Waite with fdlibm's three-part split of
  pi/2 (33 bits per part, so k * part is exact for |k| < 2**20) plus a fourth tail, carried
  as a double-double with exact TwoSum steps: the reduced argument keeps full precision even
  next to a multiple of pi/2.
- float64 beyond that bound: `np.sin` / `np.cos` (libm, which reduces with Payne-Hanek). The
  call sits behind a select; LLVM still vectorizes the loop and calls libm per lane, so the
  common path stays vector code but every loop pays for scalarized calls (see the measured
  speed in tests/test_vecmath_trig_erf.py's module docstring). NaN and +-inf do not take it.
- float32: computed in float64. x (24 bits) times each 24-bit chunk of 2/pi is exact in
  float64, and each product is reduced mod 4 exactly; nine chunks (216 bits of 2/pi, from
  exact integer arithmetic below) cover every float32 exponent, so this is a branch-free
  Payne-Hanek reduction, valid over the whole float32 range.

Special values: sin(+-0.0) = +-0.0 (tiny |x| return x itself, which is also correctly rounded
there and keeps subnormals exact), cos(+-0.0) = 1, sin and cos of +-inf and NaN are NaN.

Accuracy, measured against NumPy (float64) and against float64 NumPy rounded to float32 (for
float32) over a dense grid on [-20, 20], seeded samples log-uniform over every binade from the
smallest subnormal to the largest float, and integers times pi/2 (the hardest arguments):
sin_f64 1 ulp, cos_f64 1 ulp, sin_f32 1 ulp, cos_f32 1 ulp.
"""

from __future__ import annotations

import numba
import numpy as np

# --------------------------------------------------------------------------- 2/pi, exactly


def _two_over_pi_bits(bits: int) -> int:
    """floor(2/pi * 2**bits), from Machin's formula pi = 16 atan(1/5) - 4 atan(1/239) in
    integer fixed point with 64 guard bits (so every returned bit is exact)."""
    scale = bits + 64
    one = 1 << scale

    def atan_inv(n: int) -> int:  # atan(1/n) * 2**scale, by its Taylor series
        total, term, k, sign = 0, one // n, 1, 1
        while term:
            total += sign * (term // k)
            term //= n * n
            k += 2
            sign = -sign
        return total

    pi = 16 * atan_inv(5) - 4 * atan_inv(239)
    return ((2 * one) << bits) // pi


# 2/pi in 24-bit chunks: 2/pi = sum(_C32[j]), _C32[j] = (24 bits) * 2**(-24 (j + 1)).
_CHUNK, _NCHUNKS = 24, 9
_BITS = _two_over_pi_bits(_CHUNK * _NCHUNKS)
_C32 = tuple(float((_BITS >> (_CHUNK * (_NCHUNKS - 1 - j))) & ((1 << _CHUNK) - 1))
             * 2.0 ** (-_CHUNK * (j + 1)) for j in range(_NCHUNKS))
C0, C1, C2, C3, C4, C5, C6, C7, C8 = _C32

# --------------------------------------------------------------------------- constants (fdlibm)

INV_PIO2 = 6.36619772367581382433e-01  # 2/pi rounded
PIO2_1 = 1.57079632673412561417e+00  # first 33 bits of pi/2
PIO2_2 = 6.07710050630396597660e-11  # next 33 bits
PIO2_3 = 2.02226624871116645580e-21  # next 33 bits
PIO2_3T = 8.47842766036889956997e-32  # pi/2 - (PIO2_1 + PIO2_2 + PIO2_3), rounded
PIO2_HI = 1.57079632679489655800e+00  # pi/2 = PIO2_HI + PIO2_LO to 107 bits
PIO2_LO = 6.12323399573676603587e-17
CW_BOUND = 1647099.3291652855  # 2**20 * pi/2: below it, k * PIO2_i is exact
ROUND = 6755399441055744.0  # 1.5 * 2**52: (t + ROUND) - ROUND rounds t to an integer

# __kernel_sin: sin(r) ~ r + S1 r^3 + ... + S6 r^13 on [-pi/4, pi/4], error < 2**-58.
S1, S2, S3 = -1.66666666666666324348e-01, 8.33333333332248946124e-03, -1.98412698298579493134e-04
S4, S5, S6 = 2.75573137070700676789e-06, -2.50507602534068634195e-08, 1.58969099521155010221e-10
# __kernel_cos: cos(r) ~ 1 - r^2/2 + C1 r^4 + ... + C6 r^14 on [-pi/4, pi/4], error < 2**-58.
C1_, C2_, C3_ = 4.16666666666666019037e-02, -1.38888888888741095749e-03, 2.48015872894767294178e-05
C4_, C5_, C6_ = -2.75573143513906633035e-07, 2.08757232129817482790e-09, -1.13596475577881948265e-11

_jit = numba.njit(inline="always", error_model="numpy", cache=True)


@_jit
def _kernel_sin(x, y):
    """sin(x + y) for |x + y| <= pi/4 and |y| <= ulp(x)/2 (fdlibm's __kernel_sin)."""
    z = x * x
    v = z * x
    r = S2 + z * (S3 + z * (S4 + z * (S5 + z * S6)))
    return x - ((z * (0.5 * y - v * r) - y) - v * S1)


@_jit
def _kernel_cos(x, y):
    """cos(x + y) for |x + y| <= pi/4 (fdlibm's __kernel_cos, FreeBSD's form)."""
    z = x * x
    w = z * z
    r = z * (C1_ + z * (C2_ + z * C3_)) + w * w * (C4_ + z * (C5_ + z * C6_))
    hz = 0.5 * z
    w = 1.0 - hz
    return w + (((1.0 - w) - hz) + (z * r - x * y))


@_jit
def _two_sum(a, b):
    """s + e == a + b exactly, s the rounded sum (Knuth's TwoSum, no ordering needed)."""
    s = a + b
    bp = s - a
    return s, (a - (s - bp)) + (b - bp)


@_jit
def _reduce_f64(x):
    """(k mod 4, hi, lo) with x = k*pi/2 + hi + lo, |hi + lo| <= pi/4: Cody-Waite, valid for
    |x| <= CW_BOUND (the caller substitutes 0 for other x)."""
    k = (x * INV_PIO2 + ROUND) - ROUND
    t = x - k * PIO2_1  # exact: k * PIO2_1 is exact and within a factor 2 of x
    r1, e1 = _two_sum(t, -(k * PIO2_2))
    r2, e2 = _two_sum(r1, -(k * PIO2_3))
    lo = (e1 + e2) - k * PIO2_3T
    hi = r2 + lo
    lo = lo - (hi - r2)  # Fast2Sum: |r2| >= |lo|
    return k - 4.0 * np.floor(k * 0.25), hi, lo


@_jit
def _by_quadrant(n, s, c, cos):
    """sin (cos=False) or cos of x from sin(r), cos(r) and the quadrant n = k mod 4."""
    m = n + 1.0 if cos else n  # cos(x) = sin(x + pi/2)
    m = m - 4.0 if m >= 4.0 else m
    v = c if (m == 1.0 or m == 3.0) else s
    return -v if m >= 2.0 else v


@_jit
def _sincos_f64(x, cos):
    finite = abs(x) <= CW_BOUND
    xr = x if finite else 0.0
    n, hi, lo = _reduce_f64(xr)
    v = _by_quadrant(n, _kernel_sin(hi, lo), _kernel_cos(hi, lo), cos)
    tiny = abs(x) < 7.450580596923828e-09  # 2**-27: sin(x) rounds to x, cos(x) to 1
    v = (1.0 if cos else x) if tiny else v
    big = np.cos(x) if cos else np.sin(x)
    return v if finite else (big if abs(x) < np.inf else x - x)  # inf - inf, NaN: NaN


@_jit
def sin_f64(x):
    """sin(x) for float64 x: within 1 ulp of NumPy's everywhere (measured; see module)."""
    return _sincos_f64(x, False)


@_jit
def cos_f64(x):
    """cos(x) for float64 x: within 1 ulp of NumPy's everywhere (measured; see module)."""
    return _sincos_f64(x, True)


@_jit
def _mod4(t):
    """t minus a multiple of 4, exactly, for an exact product t (result in [-2, 2], or 0 or
    -4 where t is so large that it is a multiple of 4 already)."""
    return t - 4.0 * np.floor(t * 0.25 + 0.5)


@_jit
def _sincos_f32(x32, cos):
    x = np.float64(x32)
    # Payne-Hanek in float64: x * 2/pi mod 4 as the sum of the exact products x * C_j, each
    # reduced mod 4 exactly; the sum is carried as a double-double (s, e).
    s, e = _two_sum(_mod4(x * C0), _mod4(x * C1))
    for c in (C2, C3, C4, C5, C6, C7, C8):  # unrolled by Numba: a tuple of constants
        s, d = _two_sum(s, _mod4(x * c))
        e += d
    s, d = _two_sum(s, e)
    k = (s + ROUND) - ROUND
    f = (s - k) + d  # the fraction in [-1/2, 1/2] (s - k is exact)
    r = f * PIO2_HI + f * PIO2_LO
    n = k - 4.0 * np.floor(k * 0.25)
    v = _by_quadrant(n, _kernel_sin(r, 0.0), _kernel_cos(r, 0.0), cos)
    tiny = abs(x) < 2.44140625e-04  # 2**-12: sin(x) rounds to x, cos(x) to 1 in float32
    v = (1.0 if cos else x) if tiny else v
    return np.float32(v)


@_jit
def sin_f32(x):
    """sin(x) for float32 x, returned as float32: within 1 ulp of the correctly rounded
    value over the whole float32 range (measured; see module)."""
    return _sincos_f32(x, False)


@_jit
def cos_f32(x):
    """cos(x) for float32 x, returned as float32 (accuracy as sin_f32)."""
    return _sincos_f32(x, True)
