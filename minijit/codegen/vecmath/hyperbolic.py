"""tanh and logistic for float64 and float32, built on the exp/expm1 kernels of `exp_log`.

tanh(x) = sign(x) * e / (e + 2) with e = expm1(2|x|). Through expm1 the formula stays
accurate for small |x| too (e ~ 2|x|, no cancellation), so one branch-free path covers the
whole range: |x| is clamped where tanh rounds to 1 (20 in float64, 10 in float32), which
also maps +-inf to +-1, and the sign is copied back bitwise, which keeps tanh(-0.0) = -0.0.
Error: expm1's, plus the rounding of e + 2 and of the division, about 2 ulp at most.

logistic(x) = 1 / (1 + exp(-x)) (`jax.nn.sigmoid`, `lax.logistic`), evaluated as
num / (1 + e) with e = exp(-|x|) and num = 1 for x >= 0, e for x < 0: e never overflows, and
for very negative x the result e / (1 + e) underflows gradually to subnormals and 0 exactly
as exp does (logistic(-inf) = 0, logistic(inf) = 1, logistic(nan) = nan).

All four are branch-free (selects only) and compiled with `error_model="numpy"` (no
ZeroDivisionError branch), so loops calling them vectorize; see the package docstring.
The float32 versions compute in float32 (computing in float64 and rounding once was as
accurate, and measured slower: tanh about 1.7x, logistic 1.4x).
"""

from __future__ import annotations

import numpy as np

from minijit.codegen.vecmath.bits import copysign_f32, copysign_f64, pow2_f64
from minijit.codegen.vecmath.deferred import jit
from minijit.codegen.vecmath.exp_log import (
    _exp_reduce,
    _expm1_moderate_f32,
    _expm1_poly,
    exp_f32,
    exp_f64,
)

_jit = jit(error_model="numpy", cache=True)  # a new process loads it, not compiles it

TANH_CLAMP_F64 = 20.0  # tanh(20) = 1 - 8.5e-18: rounds to 1 in float64
TANH_CLAMP_F32 = 10.0  # tanh(10) = 1 - 4.1e-9: rounds to 1 in float32


@_jit
def _expm1_moderate(y):
    """expm1(y) for 0 <= y <= 40 (k <= 58): `expm1_f64` with k1 = 0, no clamping or specials."""
    _, k, r = _exp_reduce(y)
    tk = pow2_f64(k)
    return tk * _expm1_poly(r) + (tk - 1.0)


@_jit
def tanh_f64(x):
    """Hyperbolic tangent for float64 x; tanh(+-inf) = +-1, tanh(-0.0) = -0.0."""
    a = abs(x)
    a = a if a < TANH_CLAMP_F64 else TANH_CLAMP_F64  # also inf -> clamp; nan -> clamp (put back)
    e = _expm1_moderate(2.0 * a)
    y = copysign_f64(e / (e + 2.0), x)
    return y if x == x else x


@_jit
def logistic_f64(x):
    """1 / (1 + exp(-x)) for float64 x, accurate (relative) in both tails."""
    e = exp_f64(-abs(x))
    num = 1.0 if x >= 0.0 else e
    return num / (1.0 + e)


# float32 in float32 arithmetic (np.float32 constants: a Python float would promote to float64).

_F32 = np.float32
_ZERO_F32, _ONE_F32, _TWO_F32 = _F32(0.0), _F32(1.0), _F32(2.0)
_TANH_CLAMP_F32 = _F32(TANH_CLAMP_F32)


@_jit
def tanh_f32(x):
    """Hyperbolic tangent for float32 x, float32 result; tanh(+-inf) = +-1, tanh(-0.0) = -0.0."""
    a = abs(x)
    a = a if a < _TANH_CLAMP_F32 else _TANH_CLAMP_F32
    e = _expm1_moderate_f32(a + a)
    y = copysign_f32(e / (e + _TWO_F32), x)
    return y if x == x else x


@_jit
def logistic_f32(x):
    """1 / (1 + exp(-x)) for float32 x, float32 result."""
    e = exp_f32(-abs(x))
    num = _ONE_F32 if x >= _ZERO_F32 else e
    return num / (_ONE_F32 + e)


__all__ = ["tanh_f64", "tanh_f32", "logistic_f64", "logistic_f32"]

