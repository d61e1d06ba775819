"""A catalogue of small example programs, each written once over the array namespace.

Every program is a function `fn(xnp, *args)`: called with `xnp=numpy` it is the NumPy
reference, called with `xnp=minijit.numpy` it is the minijit program (traced by `make_jaxpr`,
run by `eval_jaxpr`, compiled by `jit`). Where the two APIs differ (`x.at[i].set(v)`, JAX's
clamping of out-of-bounds traced indices) a program gives a separate NumPy `reference`.

minijit follows NumPy's dtypes, with one deliberate difference: float functions (`sqrt`,
`exp`, `/`, `mean`) of int8, int16, uint8, uint16 and bool give float64 where NumPy picks
float16 or float32. Programs that hit it state minijit's output dtypes in `dtypes`.

`tests/test_catalogue.py` runs every program every way; `tests/test_rules.py` checks that
together they exercise every primitive. Keep arrays small: the catalogue runs on every CI job.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

import minijit as mj
import minijit.numpy as mnp
from minijit import lax


@dataclass(frozen=True)
class Program:
    """One example program.

    `fn(xnp, *args)` is the program; `args(rng)` makes its arguments (arrays, Python scalars,
    pytrees, and static values at `static_argnums`). `reference(*args)` replaces
    `fn(numpy, *args)` where minijit's API differs from NumPy's. `dtypes` lists minijit's
    output dtypes where they deliberately differ from NumPy's. Every program also runs eagerly,
    where out-of-bounds indices clamp exactly as they do traced.
    """

    name: str
    fn: Callable[..., Any]
    args: Callable[[np.random.Generator], tuple]
    static_argnums: tuple[int, ...] = ()
    reference: Callable[..., Any] | None = None
    dtypes: tuple[str, ...] | None = None

    def numpy_fn(self) -> Callable[..., Any]:
        return self.reference if self.reference is not None else functools.partial(self.fn, np)

    def minijit_fn(self) -> Callable[..., Any]:
        return functools.partial(self.fn, mnp)

    def make_args(self, seed: int = 0) -> tuple:
        return self.args(np.random.default_rng(seed))


PROGRAMS: list[Program] = []


def program(name: str, fn, args, **kw) -> Program:
    p = Program(name, fn, args, **kw)
    PROGRAMS.append(p)
    return p


# --------------------------------------------------------------------------- argument makers


def normal(*shape, dtype=np.float64):
    return lambda rng: (rng.standard_normal(shape).astype(dtype),)


def normal2(shape_x, shape_y, dtype=np.float64):
    return lambda rng: (rng.standard_normal(shape_x).astype(dtype),
                        rng.standard_normal(shape_y).astype(dtype))


def positive(*shape, dtype=np.float64):
    return lambda rng: (rng.uniform(0.1, 3.0, shape).astype(dtype),)


def ints(*shape, lo=-9, hi=10, dtype=np.int32):
    return lambda rng: (rng.integers(lo, hi, shape).astype(dtype),)


def nonzero_ints(shape, dtype=np.int32):
    def make(rng):
        x = rng.integers(-20, 21, shape).astype(dtype)
        y = rng.integers(1, 6, shape) * rng.choice([-1, 1], shape)
        return x, y.astype(dtype)

    return make


def bools(*shape):
    return lambda rng: (rng.random(shape) < 0.5,)


def jax_index(i: int, n: int) -> int:
    """Where JAX reads `x[i]` for a traced `i`: negative counts from the end, then clamps."""
    i = i + n if i < 0 else i
    return min(max(i, 0), n - 1)


def numpy_at_set(x, i, v, how="set"):
    """NumPy model of `x.at[i].set(v)` / `.add(v)` for a traced int `i` (out of bounds: no-op)."""
    out = np.array(x, copy=True)
    n = x.shape[0]
    if -n <= i < n:
        if how == "set":
            out[i] = v
        else:
            out[i] += v
    return out


# Values that tempt rewrites and code generators into mistakes.
SPECIAL_FLOATS = np.array([0.0, -0.0, 1.5, -2.0, np.inf, -np.inf, np.nan, 1e-300, 1e300])

# Closed-over constants: a NumPy array becomes a constvar, Python scalars become literals.
W1 = np.random.default_rng(1).standard_normal((4, 8))
B1 = np.random.default_rng(2).standard_normal(8)
SCALE = 0.5
OFFSET = 3


# --------------------------------------------------------------------------- arithmetic

program("arith_add_sub_mul", lambda xnp, x, y: (x + y, x - y, x * y, x + y * x - y),
        normal2((3, 4), (3, 4)))
program("arith_true_divide", lambda xnp, x, y: (x / y, xnp.divide(y, x), xnp.true_divide(x, 2)),
        lambda rng: (rng.uniform(1, 2, (5,)), rng.uniform(-2, -1, (5,))))
program("arith_floordiv_mod_int", lambda xnp, x, y: (x // y, x % y, xnp.floor_divide(x, 3),
                                                      xnp.remainder(x, -4), xnp.mod(x, y)),
        nonzero_ints((12,)))
program("arith_floordiv_mod_float", lambda xnp, x, y: (x // y, x % y, x % 1.5, -7.5 // y),
        lambda rng: (rng.uniform(-5, 5, (10,)), rng.uniform(0.5, 2, (10,))
                     * rng.choice([-1, 1], 10)))
program("arith_power_float", lambda xnp, x, y: (x ** y, xnp.power(x, 0.5), 2.0 ** y),
        lambda rng: (rng.uniform(0.5, 2, (6,)), rng.uniform(-2, 2, (6,))))
program("arith_integer_pow", lambda xnp, x: (x ** 2, x ** 3, x ** 0, x ** 1, x ** -2,
                                             xnp.square(x)),
        positive(2, 3))
program("arith_integer_pow_int32", lambda xnp, x: (x ** 2, x ** 3, x ** 0),
        ints(7, lo=-5, hi=6))
program("arith_unary_float", lambda xnp, x: (-x, abs(x), xnp.abs(x), xnp.negative(x),
                                             xnp.absolute(x), +x),
        normal(2, 5))
program("arith_unary_int32", lambda xnp, x: (-x, abs(x), xnp.abs(x), xnp.sign(x)), ints(9))
program("arith_uint8_wraps", lambda xnp, x, y: (x + y, x - y, x * y, x // (y + 1)),
        lambda rng: (rng.integers(0, 256, 8).astype(np.uint8),
                     rng.integers(0, 255, 8).astype(np.uint8)))
program("arith_python_scalars", lambda xnp, x: (x * 2 + 1, 3 - x, 1 / x, 2 ** x, 10 // x,
                                                7.5 % x, x - True),
        positive(5))
program("arith_reflected_numpy_operand",
        lambda xnp, x: (np.arange(4.0) + x, np.ones(4) * x, np.full(4, 2.0) - x,
                        np.arange(1.0, 5.0) / x),
        positive(4))

# --------------------------------------------------------------------------- comparisons, logic

program("compare_int", lambda xnp, x, y: (x < y, x <= y, x > y, x >= y, x == y, x != y),
        lambda rng: (rng.integers(0, 3, (4, 3)).astype(np.int32),
                     rng.integers(0, 3, (4, 3)).astype(np.int32)))
program("compare_float_scalar", lambda xnp, x: (x < 0.5, 0 > x, x == 0.0, xnp.less(x, 1),
                                                xnp.greater_equal(x, x), xnp.not_equal(x, 1.0)),
        lambda rng: (np.array([-1.0, 0.0, 0.5, 1.0, 2.0, np.nan]),))
program("logical_bool", lambda xnp, a, b: (xnp.logical_and(a, b), xnp.logical_or(a, b),
                                           xnp.logical_not(a), xnp.logical_xor(a, b),
                                           a & b, a | b, a ^ b, ~a),
        lambda rng: (rng.random(8) < 0.5, rng.random(8) < 0.5))
program("logical_numbers", lambda xnp, x, y: (xnp.logical_and(x, y), xnp.logical_or(x > 0, y),
                                              xnp.logical_not(x), xnp.logical_and(x, True)),
        lambda rng: (rng.integers(-1, 2, 9).astype(np.int32), rng.integers(0, 2, 9) * 1.5))
program("bitwise_int", lambda xnp, x, y: (x & y, x | y, x ^ y, ~x, x & 6),
        lambda rng: (rng.integers(-50, 50, 6).astype(np.int32),
                     rng.integers(0, 100, 6).astype(np.int32)))
program("shift_operators", lambda xnp, x, y, u: (
    x << y, x >> y, x << 3, x >> 2, 3 << y, u >> 3, u << 5, xnp.left_shift(x, 1),
    xnp.right_shift(u, y), xnp.bitwise_left_shift(u, 7), xnp.bitwise_right_shift(-x, 1)),
    lambda rng: (rng.integers(-3000, 3000, 8).astype(np.int16),
                 rng.integers(0, 16, 8).astype(np.int16),
                 rng.integers(0, 256, 8).astype(np.uint8)))
# Amounts of at least the bit width, and negative ones: NumPy's result is undefined (x86
# shifts by the amount mod 64), XLA's is not. Values from JAX 0.10.2 (jax_enable_x64, CPU):
# jax.jit(lambda a, b, u, v: (lax.shift_left(a, b), ...))(*args).
program("shift_out_of_range", lambda xnp, a, b, u, v: (
    lax.shift_left(a, b), lax.shift_right_logical(a, b), lax.shift_right_arithmetic(a, b),
    a >> b, u << v, u >> v, lax.shift_right_arithmetic(u, v), a << 300, a >> -1),
    lambda rng: (np.array([1, -3, 127, -128, 5, -1], np.int8),
                 np.array([8, -1, 7, 9, 0, 100], np.int8),
                 np.array([1, 2**31, 2**32 - 1, 7], np.uint32),
                 np.array([32, 2**32 - 1, 31, 3], np.uint32)),
    reference=lambda a, b, u, v: (
        np.array([0, 0, -128, 0, 5, 0], np.int8), np.array([0, 0, 0, 0, 5, 0], np.int8),
        np.array([0, -1, 0, -1, 5, -1], np.int8), np.array([0, -1, 0, -1, 5, -1], np.int8),
        np.array([0, 0, 2**31, 56], np.uint32), np.array([0, 0, 1, 0], np.uint32),
        np.array([0, 2**32 - 1, 2**32 - 1, 0], np.uint32), np.zeros(6, np.int8),
        np.array([0, -1, 0, -1, 0, -1], np.int8)))

# --------------------------------------------------------------------------- elementwise functions

program("exp_log", lambda xnp, x: (xnp.exp(x), xnp.log(x), xnp.log1p(x), xnp.expm1(x)),
        positive(2, 4))
program("trig_sqrt", lambda xnp, x: (xnp.sin(x), xnp.cos(x), xnp.tan(x), xnp.tanh(x),
                                     xnp.sqrt(xnp.abs(x))),
        normal(7))


def _logistic_reference(x):
    with np.errstate(over="ignore"):  # exp(-x) overflows to inf for x < -709: 1 / inf is 0
        return 1 / (1 + np.exp(-x))


def _erf_reference(x):
    from scipy.special import erf

    return erf(x)


# lax only, as in JAX (jax.nn.sigmoid and jax.scipy.special.erf bind them; jax.numpy has
# neither): wide arguments, where a naive 1 / (1 + exp(-x)) would overflow, and both dtypes.
program("logistic_erf", lambda xnp, x, y: (lax.logistic(x), lax.erf(x), lax.logistic(y),
                                           lax.erf(y), lax.logistic(x * 2.0) + lax.erf(x)),
        lambda rng: (np.concatenate([rng.uniform(-6, 6, 8), [-800.0, 800.0, -40.0, 0.0]]),
                     rng.uniform(-100, 100, 6).astype(np.float32)),
        reference=lambda x, y: (_logistic_reference(x), _erf_reference(x),
                                _logistic_reference(y), _erf_reference(y),
                                _logistic_reference(x * 2.0) + _erf_reference(x)))
program("floor_ceil_sign", lambda xnp, x: (xnp.floor(x), xnp.ceil(x), xnp.sign(x)),
        lambda rng: (np.concatenate([rng.uniform(-3, 3, 6), [0.0, -0.0, 2.0, -2.5]]),))
program("floor_ceil_int", lambda xnp, x: (xnp.floor(x), xnp.ceil(x), xnp.sign(x)), ints(6))
program("maximum_minimum_clip",
        lambda xnp, x, y: (xnp.maximum(x, y), xnp.minimum(x, y), xnp.clip(x, -0.5, 0.5),
                           xnp.clip(x, 0.0, None), xnp.maximum(x, 0), xnp.minimum(1, y)),
        normal2((3, 4), (3, 4)))
program("maximum_propagates_nan",
        lambda xnp, x, y: (xnp.maximum(x, y), xnp.minimum(x, y), xnp.max(x), xnp.min(y)),
        lambda rng: (np.array([1.0, np.nan, 3.0, -1.0]), np.array([np.nan, 0.0, 4.0, -2.0])))
program("where", lambda xnp, x, y: (xnp.where(x > 0, x, y), xnp.where(x > 0, x, 0.0),
                                    xnp.where(y < 0, 1, 2), xnp.where(x > y, x, True)),
        normal2((2, 5), (2, 5)))
program("where_broadcast", lambda xnp, c, x: xnp.where(c, x, -1.0),
        lambda rng: (rng.random((3, 1)) < 0.5, rng.standard_normal((1, 4))))
program("relu_gelu", lambda xnp, x: (
    xnp.maximum(x, 0.0),
    0.5 * x * (1 + xnp.tanh(0.7978845608 * (x + 0.044715 * x ** 3)))),
    normal(100))

program("special_float_pairs", lambda xnp, x, y: (
    x / y, x // y, x % y, x ** y, x < y, x == y, x != y, x >= y),
    lambda rng: (SPECIAL_FLOATS[:, None], SPECIAL_FLOATS[None, :]))
# Which zero max(0.0, -0.0) returns is unspecified (NumPy and Numba differ), so no -0.0 here.
program("special_float_max_min", lambda xnp, x, y: (xnp.maximum(x, y), xnp.minimum(x, y)),
        lambda rng: (SPECIAL_FLOATS[:, None], SPECIAL_FLOATS[None, SPECIAL_FLOATS != 0]))
program("special_float_unary", lambda xnp, x: (
    xnp.floor(x), xnp.ceil(x), xnp.sign(x), abs(x), -x, xnp.sqrt(x), xnp.exp(x), xnp.log(x),
    xnp.log1p(x), xnp.expm1(x), xnp.tanh(x), xnp.sin(x), xnp.clip(x, -1.0, 1.0),
    xnp.where(x > 0, x, -x), xnp.max(x), xnp.argmax(x), xnp.argmin(x)),
    lambda rng: (SPECIAL_FLOATS,))
program("special_float_logistic_erf", lambda xnp, x: (lax.logistic(x), lax.erf(x)),
        lambda rng: (SPECIAL_FLOATS,),
        reference=lambda x: (_logistic_reference(x), _erf_reference(x)))
program("int_division_by_zero", lambda xnp, x, y: (x // y, x % y, x // 0, x % 0),
        lambda rng: (np.array([7, -7, 0, 5, -(2**31), 2**31 - 1], np.int32),
                     np.array([0, 0, 0, -1, -1, 2], np.int32)))
program("int64_uint64_wraparound", lambda xnp, i, u: (
    i * i, i + 2**62, -i, abs(i), i // 3, i % -3, u * u, u + u, u - (u + 1), u // 7, u % 7, u > 5),
    lambda rng: (np.array([2**62, -(2**63), 2**63 - 1, -5, 12345678912345], np.int64),
                 np.array([2**64 - 1, 2**63, 0, 5, 98765432109876], np.uint64)))


def _strided(rng):
    return rng.standard_normal((4, 3)).T, rng.standard_normal(8)[::2], np.asfortranarray(
        rng.standard_normal((2, 3)))


program("noncontiguous_arguments", lambda xnp, a, b, f: (
    a + 1.0, a @ b, a.sum(axis=0), b * 2, f * a[:2, :3], xnp.exp(f).T, f.reshape(-1)),
    _strided)
program("zero_size_arrays", lambda xnp, x, y: (
    x + 1.0, xnp.exp(x), x.sum(axis=0), x.sum(), y * 2, xnp.concatenate([y, y]), x.T,
    x.reshape(3, 0), xnp.maximum(x, 0.0), x @ xnp.ones((3, 2))),
    lambda rng: (np.zeros((0, 3)), np.zeros(0, np.int32)))

# --------------------------------------------------------------------------- dtypes

program("dtype_weak_scalars", lambda xnp, i, f: (i * 2, i + 0.5, f * 2.0, f + 1, i > 1.5,
                                                 i / 2, f / 2),
        lambda rng: (rng.integers(-5, 5, 4).astype(np.int32),
                     rng.standard_normal(4).astype(np.float32)),
        # as JAX 0.10.2 gives them; NumPy: i / 2 is float64
        dtypes=("int32", "float64", "float32", "float32", "bool", "float32", "float32"))
program("dtype_mixed_arrays", lambda xnp, i, f, b, u: (i + f, i * b, b + b, u + i, f * b,
                                                       u - b, xnp.maximum(u, f)),
        lambda rng: (rng.integers(-5, 5, 4).astype(np.int32),
                     rng.standard_normal(4).astype(np.float32), rng.random(4) < 0.5,
                     rng.integers(0, 9, 4).astype(np.uint8)),
        # JAX's lattice: int32 with float32 is float32 (NumPy: float64), so NumPy computes
        # the first output at that dtype
        reference=lambda i, f, b, u: (i.astype(np.float32) + f, i * b, b + b, u + i, f * b,
                                      u - b, np.maximum(u, f)))
program("dtype_int8_uint8_promote", lambda xnp, a, b: (a + b, a * b, b - a),
        lambda rng: (rng.integers(-5, 5, 4).astype(np.int8),
                     rng.integers(0, 9, 4).astype(np.uint8)))
program("arctan2", lambda xnp, y, x: (xnp.arctan2(y, x), xnp.arctan2(y, 2.0)),
        lambda rng: (rng.standard_normal(5), rng.standard_normal(5)))
program("isfinite", lambda xnp, x, i: (xnp.isfinite(x), xnp.isfinite(x * 2.0), xnp.isfinite(i),
                                       xnp.isfinite(x[0])),
        lambda rng: (np.array([1.5, np.inf, -np.inf, np.nan, 0.0, -2.0]),
                     rng.integers(-5, 5, 3).astype(np.int32)))
program("lax_div_rem", lambda xnp, a, b, f, g: (lax.div(a, b), lax.rem(a, b), lax.div(f, g),
                                                 lax.rem(f, g)),
        lambda rng: (np.array([-7, 7, -7, 7, 0, -128, 5, -5], np.int8),
                     np.array([3, 3, -3, -3, 3, -1, 0, 0], np.int8),
                     np.array([-7.0, 7.0, -0.0, 5.5]), np.array([3.0, -3.0, 3.0, 2.0])),
        # JAX 0.10.2: C's division and remainder; ints / 0 give -1, rem 0 gives the dividend
        reference=lambda a, b, f, g: (np.array([-2, 2, 2, -2, 0, -128, -1, -1], np.int8),
                                      np.array([-1, 1, -1, 1, 0, 0, 5, -5], np.int8),
                                      f / g, np.fmod(f, g)))
program("lax_clamp", lambda xnp, x, i: (lax.clamp(-0.5, x, 0.5), lax.clamp(0.0, x, 1.0),
                                       lax.clamp(np.int32(0), i, np.int32(3))),
        lambda rng: (np.array([-2.0, -0.0, 0.25, np.nan, 3.0]),
                     np.array([-5, 0, 2, 9], np.int32)),
        reference=lambda x, i: (np.clip(x, -0.5, 0.5), np.array([0.0, 0.0, 0.25, np.nan, 1.0]),
                                np.clip(i, 0, 3)))
program("dtype_float_functions_of_ints",
        lambda xnp, i32, i8, b, i16, u8: (xnp.sin(i32), xnp.sqrt(i8), xnp.exp(b), i8 / i8,
                                          xnp.mean(i8), xnp.mean(b), xnp.log(i16),
                                          xnp.tanh(u8)),
        lambda rng: (rng.integers(1, 5, 3).astype(np.int32),
                     rng.integers(1, 5, 3).astype(np.int8), rng.random(3) < 0.5,
                     rng.integers(1, 5, 3).astype(np.int16),
                     rng.integers(1, 5, 3).astype(np.uint8)),
        # NumPy: f64 f16 f16 f64 f64 f64 f32 f16; JAX 0.10.2 (and minijit): float32 for bools
        # and ints narrower than 64 bits
        dtypes=("float32",) * 8)
program("dtype_bool_arithmetic", lambda xnp, a, b: (a + b, a * b, a // b, a % b, a ** 2,
                                                   xnp.square(a)),
        lambda rng: (np.array([True, False, True, True]), np.array([True, True, True, True])),
        dtypes=("bool", "bool", "int32", "int32", "int32", "int32"))  # JAX's; NumPy's: int8
program("dtype_float32_stays", lambda xnp, x, y: (x * y + 1.0, xnp.exp(x), x / 3, xnp.sum(x),
                                                  x @ y, xnp.mean(x)),
        lambda rng: (rng.standard_normal(5).astype(np.float32),
                     rng.standard_normal(5).astype(np.float32)))
program("astype", lambda xnp, x: (x.astype(xnp.int32), x.astype(xnp.float32),
                                  (x > 0).astype(xnp.float64), x.astype(bool),
                                  xnp.astype(x, xnp.uint8), x.astype(xnp.float64)),
        lambda rng: (rng.uniform(-0.9, 9.9, 6).round(1),))
# Float to int where NumPy's cast is undefined (NaN, inf, out of range): XLA saturates.
# Values from JAX 0.10.2 (jax_enable_x64, CPU): jax.jit(lambda x: (x.astype(jnp.int32), ...))(x)
program("astype_saturates", lambda xnp, x: (
    x.astype(xnp.int32), x.astype(xnp.uint8), x.astype(xnp.int64), x.astype(xnp.uint64),
    x.astype(bool), x.astype(xnp.float32).astype(xnp.int8), x.astype(xnp.int16)),
    lambda rng: (np.array([np.nan, np.inf, -np.inf, -1.5, 255.9, 256.0, 1e10, -0.0, 2.0**63]),),
    reference=lambda x: (
        np.array([0, 2**31 - 1, -2**31, -1, 255, 256, 2**31 - 1, 0, 2**31 - 1], np.int32),
        np.array([0, 255, 0, 0, 255, 255, 255, 0, 255], np.uint8),
        np.array([0, 2**63 - 1, -2**63, -1, 255, 256, 10**10, 0, 2**63 - 1], np.int64),
        np.array([0, 2**64 - 1, 0, 0, 255, 256, 10**10, 0, 2**63], np.uint64),
        np.array([True] * 7 + [False, True]),
        np.array([0, 127, -128, -1, 127, 127, 127, 0, 127], np.int8),
        np.array([0, 32767, -32768, -1, 255, 256, 32767, 0, 32767], np.int16)))

# --------------------------------------------------------------------------- reductions

program("sum_axes", lambda xnp, x: (xnp.sum(x), xnp.sum(x, axis=0), xnp.sum(x, axis=1),
                                    xnp.sum(x, axis=-1, keepdims=True), x.sum(),
                                    x.sum(axis=(0, 2)), xnp.sum(x, axis=(0, 1, 2),
                                                                keepdims=True)),
        normal(2, 3, 4))
program("sum_int_dtypes", lambda xnp, i, b, u: (xnp.sum(i), xnp.sum(b), xnp.sum(u, axis=0),
                                                i.sum(dtype=xnp.int32), xnp.prod(i)),
        lambda rng: (rng.integers(-5, 5, (3, 2)).astype(np.int32), rng.random((3, 2)) < 0.5,
                     rng.integers(0, 9, (3, 2)).astype(np.uint8)))
program("mean_axes", lambda xnp, x: (xnp.mean(x), xnp.mean(x, axis=0), x.mean(axis=1),
                                     xnp.mean(x, axis=-1, keepdims=True)),
        normal(3, 4))
program("max_min_axes", lambda xnp, x: (xnp.max(x), xnp.min(x, axis=0),
                                        xnp.max(x, axis=1, keepdims=True), x.max(), x.min(1),
                                        xnp.amax(x, axis=(0, 1))),
        normal(3, 4))
program("max_min_int_bool", lambda xnp, i, b: (xnp.max(i), xnp.min(i, axis=0), xnp.max(b),
                                               xnp.min(b, axis=1)),
        lambda rng: (rng.integers(-9, 9, (3, 4)).astype(np.int32), rng.random((3, 4)) < 0.5))
program("prod_axes", lambda xnp, x: (xnp.prod(x), xnp.prod(x, axis=0),
                                     x.prod(axis=1, keepdims=True)),
        lambda rng: (rng.uniform(0.5, 1.5, (3, 4)),))
program("argmax_argmin", lambda xnp, x: (xnp.argmax(x), xnp.argmin(x), xnp.argmax(x, axis=0),
                                         xnp.argmin(x, axis=1), x.argmax(axis=-1),
                                         xnp.argmax(x, axis=1, keepdims=True)),
        normal(3, 5))
program("var_std", lambda xnp, x: (xnp.var(x), xnp.std(x, axis=0), x.var(axis=1, ddof=1)),
        normal(4, 3))
program("reduce_empty", lambda xnp, x: (xnp.sum(x, axis=0), xnp.prod(x, axis=0),
                                        xnp.sum(x, axis=1)),
        lambda rng: (np.zeros((0, 3)),))

# --------------------------------------------------------------------------- linear algebra

program("dot_1d", lambda xnp, x, y: (xnp.dot(x, y), x @ y, x.dot(y)), normal2((5,), (5,)))
program("matmul_2d", lambda xnp, a, b: (a @ b, xnp.matmul(a, b), xnp.dot(a, b)),
        normal2((3, 4), (4, 2)))
program("matmul_mixed_rank", lambda xnp, a, v, w: (a @ v, w @ a, xnp.dot(w, a), xnp.dot(a, 2.0)),
        lambda rng: (rng.standard_normal((3, 4)), rng.standard_normal(4),
                     rng.standard_normal(3)))
program("matmul_int32", lambda xnp, a, b: a @ b,
        lambda rng: (rng.integers(-5, 5, (2, 3)).astype(np.int32),
                     rng.integers(-5, 5, (3, 4)).astype(np.int32)))
program("matmul_int_float", lambda xnp, a, b: (a @ b, xnp.dot(b.T, a.T)),
        lambda rng: (rng.integers(-5, 5, (2, 3)).astype(np.int32),
                     rng.standard_normal((3, 2)).astype(np.float32)),
        reference=lambda a, b: (a.astype(np.float32) @ b,  # JAX: int32 @ float32 is float32
                                np.dot(b.T, a.T.astype(np.float32))))

# --------------------------------------------------------------------------- shapes

program("reshape", lambda xnp, x: (xnp.reshape(x, (3, 4)), x.reshape(-1), x.reshape(2, -1),
                                   x.reshape((4, 3)), xnp.ravel(x), x.reshape(12, 1)),
        normal(2, 6))
program("transpose", lambda xnp, x: (x.T, xnp.transpose(x), xnp.transpose(x, (1, 0, 2)),
                                     x.transpose(2, 0, 1), x.transpose((0, 2, 1))),
        normal(2, 3, 4))
program("expand_squeeze", lambda xnp, x: (xnp.expand_dims(x, 0), xnp.expand_dims(x, -1),
                                          xnp.expand_dims(x, (0, 2)), xnp.squeeze(x[None]),
                                          xnp.squeeze(x[:, None], axis=1)),
        normal(3, 2))
program("broadcast_to", lambda xnp, x, s: (xnp.broadcast_to(x, (2, 3, 4)),
                                           xnp.broadcast_to(s, (3,)),
                                           xnp.broadcast_to(x[:1], (5, 4))),
        lambda rng: (rng.standard_normal((3, 4)), np.float64(2.5)))
program("concatenate_stack", lambda xnp, a, b: (xnp.concatenate([a, b]),
                                                xnp.concatenate((a, b, a), axis=1),
                                                xnp.concatenate([a, b], axis=-1),
                                                xnp.stack([a, b]), xnp.stack((a, b), axis=1),
                                                xnp.stack([a, b, a], axis=-1)),
        normal2((2, 3), (2, 3)))
program("concatenate_promotes", lambda xnp, a, b: (xnp.concatenate([a, b]), xnp.stack([b, a])),
        lambda rng: (rng.integers(0, 5, 3).astype(np.int32), rng.standard_normal(3)))
program("pad", lambda xnp, x: (xnp.pad(x, 1), xnp.pad(x, ((0, 2), (1, 0))),
                               xnp.pad(x, ((1, 1), (2, 2)), constant_values=-1.5)),
        normal(2, 3))


def _written_in_place(xnp, u, y, m):
    """Elementwise results that only a concatenation, pad or update reads are written in
    their rows of the bigger array (codegen/in_place.py); a later kernel of the same shape
    must not reuse those rows as a dead buffer."""
    inner = 0.5 * (u[:-2] + u[2:])
    joined = xnp.concatenate([u[:1], inner, u[-1:]])
    later = xnp.sin(y) * 2.0  # the shape of `inner`, computed after it died
    later = xnp.concatenate([later, later])
    padded = xnp.pad(xnp.cos(u), (2, 0), constant_values=7.0)
    rows = xnp.pad(m * 3.0, ((1, 2), (0, 0)))
    if xnp is np:
        updated, clamped = u.copy(), m.copy()
        updated[1:-1] = xnp.tanh(u[:-2])
        clamped[1:] = m[:-1] + 1.0  # start 7 clamped to the last possible row
    else:
        updated = u.at[1:-1].set(xnp.tanh(u[:-2]))
        clamped = lax.dynamic_update_slice(m, m[:-1] + 1.0, (7, 0))
    return joined, later, padded, rows, updated, clamped


program("written_in_place", _written_in_place,
        lambda rng: (rng.standard_normal(9), rng.standard_normal(7),
                     rng.standard_normal((4, 3))))
program("static_slicing", lambda xnp, x: (x[1:3], x[::2], x[::-1], x[-2:], x[::-2], x[4:1:-2],
                                          x[1:1], x[-100:100], x[5:]),
        normal(7))
program("static_slicing_2d", lambda xnp, x: (x[1:, ::-1], x[:, 1], x[None], x[..., 0], x[2],
                                             x[-1], x[1, 2], x[:, None, 1:3], x[::-1, ::-2]),
        normal(4, 5))
program("shape_methods", lambda xnp, x: (x.reshape(x.shape[0] * x.shape[1]) * x.ndim,
                                         xnp.zeros(x.shape[::-1]) + x.size, x.flatten(),
                                         x.squeeze(), xnp.shape(x)[0] * x),
        normal(2, 3))
program("iterate_rows", lambda xnp, x: (sum(row for row in x), len(x) * x[0]), normal(3, 2))

# --------------------------------------------------------------------------- indexing, traced


def _take(xnp, x, i):
    return x[i]


for _i in (1, -2, 7, -10):
    program(f"traced_index_1d[{_i}]", _take, lambda rng, i=_i: (normal(5)(rng)[0], i),
            reference=lambda x, i: x[jax_index(i, x.shape[0])])

program("traced_index_2d_row", lambda xnp, x, i: (x[i], x[i, 1:], x[1:, i], x[i, ::-1]),
        lambda rng: (rng.standard_normal((4, 3)), np.int32(-1)),
        reference=lambda x, i: (x[i], x[i, 1:], x[1:, i], x[i, ::-1]))
program("traced_index_two", lambda xnp, x, i, j: (x[i, j], x[j, i]),
        lambda rng: (rng.standard_normal((3, 3)), np.int32(5), np.int64(-1)),
        reference=lambda x, i, j: (x[jax_index(i, 3), j], x[j, jax_index(i, 3)]))
program("at_set_static", lambda xnp, x, v: (x.at[1].set(v), x.at[-1].add(1.0),
                                            x.at[2:4].set(0.0), x.at[:].multiply(2.0)),
        normal2((5,), ()),
        reference=lambda x, v: (numpy_at_set(x, 1, v), numpy_at_set(x, -1, 1.0, "add"),
                                np.concatenate([x[:2], [0.0, 0.0], x[4:]]), x * 2.0))
program("at_set_row_2d", lambda xnp, x, r: (x.at[1].set(r), x.at[:, 0].add(r[:3]),
                                            x.at[2, 3].set(-1.0)),
        normal2((3, 4), (4,)),
        reference=lambda x, r: (np.vstack([x[0], r, x[2]]),
                                np.column_stack([x[:, 0] + r[:3], x[:, 1:]]),
                                np.where(np.arange(12).reshape(3, 4) == 11, -1.0, x)))


def _at_traced(xnp, x, i, v):
    return x.at[i].set(v), x.at[i].add(v)


for _i in (2, -1, 9, -9):
    program(f"at_traced[{_i}]", _at_traced,
            lambda rng, i=_i: (rng.standard_normal(4), i, 10.0),
            reference=lambda x, i, v: (numpy_at_set(x, i, v), numpy_at_set(x, i, v, "add")))

program("traced_index_narrow_dtypes", lambda xnp, x, i, j: (x[i], x[j], x.at[i].set(-1.0)),
        lambda rng: (np.arange(300.0), np.uint8(200), np.int8(-100)),
        reference=lambda x, i, j: (x[200], x[200], numpy_at_set(x, 200, -1.0)))
program("at_traced_int32_dtype", lambda xnp, x, i: x.at[i].add(2.7),
        lambda rng: (rng.integers(0, 9, 4).astype(np.int32), np.int32(3)),
        reference=lambda x, i: numpy_at_set(x, int(i), np.int32(2.7), "add"))

# --------------------------------------------------------------------------- creation

program("creation_static_n", lambda xnp, x, n: (xnp.zeros(n) + x[0], xnp.ones((n, 2)),
                                                xnp.full((2, n), 7.0), xnp.full(n, 3),
                                                xnp.zeros((n,), xnp.int32), xnp.arange(n) * x[1],
                                                xnp.eye(n) * x[2]),
        lambda rng: (rng.standard_normal(3), 4), static_argnums=(1,))
program("arange", lambda xnp, x: (xnp.arange(5), xnp.arange(2, 10, 3), xnp.arange(0.0, 1.0, 0.25),
                                  xnp.arange(5, dtype=xnp.float32), xnp.arange(6, 0, -2),
                                  xnp.arange(x.shape[0]) + x),
        normal(3))
program("linspace", lambda xnp, x: (xnp.linspace(0, 1, 5), xnp.linspace(-1, 1, 4, endpoint=False),
                                    xnp.linspace(2.0, 3.0, 1), xnp.linspace(0, 10, 6) + x),
        normal(6))
program("eye_ones_like", lambda xnp, x: (xnp.eye(3), xnp.eye(3, 4, k=1),
                                         xnp.eye(2, dtype=xnp.int32), xnp.eye(3, k=-1) @ x,
                                         xnp.ones_like(x), xnp.zeros_like(x), xnp.full_like(x, 2)),
        normal(3, 3))

# --------------------------------------------------------------------------- closures, statics

program("closed_over_constants", lambda xnp, x: x @ W1 * SCALE + B1 - OFFSET, normal(2, 4))
program("closed_over_constants_reused",
        lambda xnp, x: (W1 @ x + W1.sum(0) @ W1.T, B1 * 2, x @ W1.T), normal(8))
program("scalar_argument", lambda xnp, x, s, n: (x * s, x + n, s * n),
        lambda rng: (rng.standard_normal(3).astype(np.float32), 2.5, 3))
program("zero_d_array_argument", lambda xnp, x, s: (x * s, s + 1, xnp.sum(s)),
        lambda rng: (rng.standard_normal(3), np.array(1.5)))


def _power_loop(xnp, x, n):
    out = xnp.ones_like(x)
    for _ in range(n):  # a static Python loop: unrolled while tracing
        out = out * x
    return out


program("static_int_loop", _power_loop, lambda rng: (rng.standard_normal(4), 3),
        static_argnums=(1,))
program("static_string_mode", lambda xnp, x, mode: xnp.max(x) if mode == "max" else xnp.min(x),
        lambda rng: (rng.standard_normal(4), "min"), static_argnums=(1,))

# --------------------------------------------------------------------------- control flow (lax)


def _cond(xnp, x):
    return lax.cond(x.sum() > 0, lambda v: v * 2.0, lambda v: -v, x)


for _s in (1, -1):
    program(f"cond[{_s:+d}]", _cond, lambda rng, s=_s: (s * rng.uniform(0.1, 1.0, 4),),
            reference=lambda x: x * 2.0 if x.sum() > 0 else -x)

program("cond_closure_pytree", lambda xnp, p, x: lax.cond(
    p, lambda v: {"a": v @ W1, "b": v.sum()}, lambda v: {"a": v @ W1 * SCALE, "b": v.max()},
    x), lambda rng: (np.bool_(False), rng.standard_normal(4)),
    reference=lambda p, x: {"a": x @ W1 * (1.0 if p else SCALE), "b": x.sum() if p else x.max()})


def _switch(xnp, i, x):
    return lax.switch(i, [lambda v: v + 1.0, lambda v: v * v, xnp.sin], x)


def _switch_reference(i, x):
    return [lambda v: v + 1.0, lambda v: v * v, np.sin][min(max(int(i), 0), 2)](x)


for _i in (0, 2, 5, -1):  # out-of-range indices clamp, as in JAX
    program(f"switch[{_i}]", _switch, lambda rng, i=_i: (i, rng.standard_normal(3)),
            reference=_switch_reference)


def _doublings_reference(x, limit):
    n = 0
    while x.sum() < limit:
        n, x = n + 1, x * 2.0
    return n, x


program("while_loop", lambda xnp, x, limit: lax.while_loop(
    lambda c: c[1].sum() < limit, lambda c: (c[0] + 1, c[1] * 2.0), (0, x)),
    lambda rng: (rng.uniform(0.1, 0.2, 3), 50.0), reference=_doublings_reference)


def _fori_reference(n, x):
    acc = np.zeros_like(x)
    for i in range(n):
        acc = acc + i * x
    return acc


program("fori_loop_traced_bound", lambda xnp, n, x: lax.fori_loop(
    0, n, lambda i, acc: acc + i * x, xnp.zeros_like(x)),
    lambda rng: (5, rng.standard_normal(3)), reference=_fori_reference)


def _carries_in_place(xnp, u, steps):
    """Loop carries written over themselves (`u.at[i].set`) and held in two arrays in turn
    (a sweep that reads its neighbours): codegen/in_place.py."""
    def fill(i, acc):
        return acc.at[i].set(acc[i - 1] * 0.5 + u[i])

    def sweep(state):
        k, v, w = state
        inner = 0.5 * (v[:-2] + v[2:])
        return k + 1, xnp.concatenate([v[:1], inner, v[-1:]]), xnp.pad(w[1:] - w[:-1], (1, 0))

    filled = lax.fori_loop(1, u.shape[0], fill, xnp.zeros_like(u))
    return filled, lax.while_loop(lambda s: s[0] < steps, sweep, (0, u, u))[1:]


def _carries_in_place_reference(u, steps):
    filled = np.zeros_like(u)
    for i in range(1, u.shape[0]):
        filled[i] = filled[i - 1] * 0.5 + u[i]
    v, w = u, u
    for _ in range(steps):
        v = np.concatenate([v[:1], 0.5 * (v[:-2] + v[2:]), v[-1:]])
        w = np.pad(w[1:] - w[:-1], (1, 0))
    return filled, (v, w)


program("carries_in_place", _carries_in_place, lambda rng: (rng.standard_normal(7), 3),
        reference=_carries_in_place_reference)


def _scan_reference(xs):
    c, ys = 0.0, []
    for v in xs:
        ys.append(c * v)
        c = c + v
    return np.float64(c), np.stack(ys)


program("scan_cumulative", lambda xnp, xs: lax.scan(lambda c, v: (c + v, c * v), 0.0, xs),
        lambda rng: (rng.standard_normal(6),), reference=_scan_reference)



def _batched_map(xnp, xs):
    return (lax.map(lambda x: x.sum() * x, xs, batch_size=2),
            lax.map(lambda t: (t[0] * t[1], t[1] - 1), (xs, xs[:, 0]), batch_size=4))


def _batched_map_reference(xs):
    return xs.sum(axis=1, keepdims=True) * xs, (xs * xs[:, :1], xs[:, 0] - 1)


program("lax_map_batched", _batched_map, normal(5, 3), reference=_batched_map_reference)
program("lax_map_nested_scan", lambda xnp, xs: lax.map(
    lambda row: lax.scan(lambda c, v: (c + v, c), 0.0, row), xs),
    normal(3, 4), reference=lambda xs: (xs.sum(axis=1), np.cumsum(xs, axis=1) - xs))


def _associative_scans(xnp, x, b):
    affine = lax.associative_scan(lambda p, q: (p[0] * q[0], p[1] * q[0] + q[1]), (x, x + 1))
    return (lax.associative_scan(xnp.add, x), lax.associative_scan(xnp.maximum, x, reverse=True),
            lax.associative_scan(xnp.add, b, axis=1), lax.associative_scan(xnp.logical_or, b > 0),
            affine[1])


def _associative_scans_reference(x, b):
    affine = [x[0] + 1]  # a[i] = a[i-1] * x[i] + (x[i] + 1): the recurrence the pairs compose
    for v in x[1:]:
        affine.append(affine[-1] * v + v + 1)
    return (np.cumsum(x), np.maximum.accumulate(x[::-1])[::-1], np.cumsum(b, axis=1),
            np.logical_or.accumulate(b > 0, axis=0), np.array(affine))


program("associative_scan", _associative_scans,
        lambda rng: (rng.standard_normal(7), rng.integers(-3, 4, (3, 5))),
        reference=_associative_scans_reference)

# --------------------------------------------------------------------------- shapes of data
# Results whose length depends on the data need a static `size=` under jit (as in JAX), so
# these programs give NumPy references that truncate and pad as `size=` does.


def _pad_to(index, size: int, fill):
    return np.concatenate([index[:size], np.full(max(0, size - len(index)), fill, index.dtype)])


def _nonzero_reference(x):
    rows, cols = np.nonzero(x)
    return ((_pad_to(rows, 4, -1), _pad_to(cols, 4, 7)), _pad_to(np.flatnonzero(x), 9, 0),
            np.stack([_pad_to(rows, 2, 0), _pad_to(cols, 2, 0)], axis=1),
            _pad_to(np.nonzero(x[0] > 0)[0], 3, 0))


program("nonzero_sized", lambda xnp, x: (
    xnp.nonzero(x, size=4, fill_value=(-1, 7)), xnp.flatnonzero(x, size=9),
    xnp.argwhere(x, size=2), xnp.where(x[0] > 0, size=3)[0]),
    lambda rng: (rng.integers(0, 2, (3, 4)) * rng.integers(-5, 6, (3, 4)),),
    reference=_nonzero_reference)
program("convolve_correlate", lambda xnp, a, v: (
    xnp.convolve(a, v), xnp.convolve(a, v, "same"), xnp.convolve(v, a, "valid"),
    xnp.correlate(a, v), xnp.correlate(a, v, "full"), xnp.correlate(v, a, "same")),
    normal2((7,), (3,)))
program("convolve_ints", lambda xnp, a, v: xnp.convolve(a, v, "same"),
        lambda rng: (rng.integers(-5, 6, 6), rng.integers(-5, 6, 4)),
        reference=lambda a, v: np.convolve(a, v, "same").astype(np.float64))
program("split_swapaxes_moveaxis", lambda xnp, x: (
    xnp.split(x, 2, axis=2), xnp.split(x, [1, 1, 2], axis=1), xnp.array_split(x, 3, axis=2),
    np.split(x, [1]), xnp.swapaxes(x, 0, 2), x.swapaxes(-1, 1), xnp.moveaxis(x, 0, -1),
    xnp.moveaxis(x, [0, 1], [2, 0])),
    normal(2, 3, 4))

# --------------------------------------------------------------------------- nested jit
# A jitted function called inside a traced one is one `jit` equation (tests/test_nested_jit.py)
# until the optimizer inlines it. These programs run the calls every way: static arguments,
# keywords, pytrees, calls inside calls, inside a loop body and a branch.


@functools.partial(mj.jit, static_argnums=1)
def _jit_power_sum(x, n):
    total = x
    for _ in range(n - 1):  # a static n: unrolled while tracing
        total = total * x + x
    return total


@mj.jit
def _jit_scale(x, *, by):
    return x * by


@mj.jit
def _jit_affine(params, x):  # a pytree in and out; calls two jitted functions itself
    y = _jit_scale(_jit_power_sum(x, 3), by=params["w"]) + params["b"][0]
    return {"y": y, "b1": params["b"][1]}


def _nested_jit(xnp, x, w):
    out = _jit_affine({"w": w, "b": (1.0, x)}, x)
    return out["y"] - out["b1"]


def _nested_jit_reference(x, w):
    return ((x * x + x) * x + x) * w + 1.0 - x


@mj.jit
def _jit_newton_step(y, a):
    return 0.5 * (y + a / y)


def _nested_jit_in_control_flow(xnp, a):
    y = lax.fori_loop(0, 4, lambda i, y: _jit_newton_step(y, a), a)
    return lax.cond(a.sum() > 0, lambda v: _jit_newton_step(v, a), lambda v: -v, y)


def _nested_jit_in_control_flow_reference(a):
    y = a
    for _ in range(5):
        y = 0.5 * (y + a / y)
    return y


program("nested_jit_static_kwargs_pytree", _nested_jit, normal2((5,), ()),
        reference=_nested_jit_reference)
program("nested_jit_in_fori_and_cond", _nested_jit_in_control_flow, positive(5),
        reference=_nested_jit_in_control_flow_reference)

# --------------------------------------------------------------------------- optimizer bait
# Programs shaped to tempt the passes (fold_constants, simplify, cse, dce, fusion, buffer
# planning) into rewrites that are wrong for NaN, infinities, -0.0 or overflowing ints.

def special_floats(rng):
    return (rng.permutation(SPECIAL_FLOATS),)


program("passes_float_identities", lambda xnp, x: (
    x * 1.0, 1.0 * x, x + 0.0, 0.0 + x, x - 0.0, 0.0 - x, x / 1.0, x * 0.0, 0.0 * x, x - x,
    x / x, xnp.negative(-x), x.astype(x.dtype), x ** 1, x ** 0, x ** 2.0, x ** 3, x ** 4,
    x ** -1, x ** -2, xnp.maximum(x, x), xnp.where(True, x, 0.0)),
    special_floats)
program("passes_int_identities", lambda xnp, i: (
    i * 1, i + 0, 0 + i, i * 0, 0 * i, i - 0, xnp.negative(-i), ~~i, i ** 3, i ** 4, i ** 0,
    xnp.sum(i * 0), i // 1, i % 1),
    lambda rng: (np.array([0, 1, -1, 7, 2**31 - 1, -(2**31), 46341], np.int32),))
program("passes_cse", lambda xnp, x, y: ((x * y) + (x * y), xnp.sin(x) - xnp.sin(x),
                                         (x + 1) * (x + 1), xnp.sum(x) * xnp.sum(x), x @ y + x @ y),
        lambda rng: (rng.permutation(SPECIAL_FLOATS), rng.standard_normal(9)))
program("passes_constant_folding", lambda xnp, x: (
    xnp.arange(4) * 2.0 + xnp.ones(4) + x, W1.sum() * x, xnp.eye(4) @ x,
    (xnp.ones(4) * 3).sum(), xnp.ones(4) * 3, xnp.full(4, 2.0) ** 2 - x, -xnp.arange(4)),
    normal(4))


def _dead_code(xnp, x, y):
    unused = xnp.exp(x) @ y  # noqa: F841 - computed, never used: dce removes it
    z = x * 2.0
    _ = z + y
    return z.sum()


program("passes_dead_code", _dead_code, normal2((3,), (3,)))


def _buffer_reuse(xnp, x, y):
    a = x + 1.0  # an output that is also used later
    b = a * y
    c = xnp.exp(b) - a
    d = c * c + b  # b dies here: its buffer may be reused in place
    e = xnp.tanh(d) + c
    return a, e, d.sum(), e[::-1], xnp.maximum(e, a)


program("buffer_reuse_chain", _buffer_reuse, normal2((2, 5), (2, 5)))
program("outputs_alias_inputs", lambda xnp, x, y: (x, y, x, x * 1.0, y + 0, (x, y)),
        lambda rng: (rng.standard_normal(3), rng.integers(0, 5, 3)))
program("broadcast_then_reduce_fusion", lambda xnp, x, v: (
    xnp.sum((x - v[None, :]) ** 2, axis=1), xnp.exp(x * 0.5 + v).max(axis=0),
    (x + v) * (x - v) / 2.0, xnp.sqrt(xnp.abs(x)) + v.sum()),
    normal2((4, 3), (3,)))

# --------------------------------------------------------------------------- real programs


def _softmax(xnp, x):
    z = x - xnp.max(x, axis=-1, keepdims=True)
    e = xnp.exp(z)
    return e / xnp.sum(e, axis=-1, keepdims=True)


def _layer_norm(xnp, x, gamma, beta):
    mu = xnp.mean(x, axis=-1, keepdims=True)
    var = xnp.mean((x - mu) ** 2, axis=-1, keepdims=True)
    return (x - mu) / xnp.sqrt(var + 1e-5) * gamma + beta


def _logsumexp(xnp, x):
    m = xnp.max(x, axis=1)
    return m + xnp.log(xnp.sum(xnp.exp(x - m[:, None]), axis=1))


def _mlp(xnp, params, x):
    h = xnp.tanh(x @ params["w1"] + params["b1"])
    logits = h @ params["w2"] + params["b2"]
    return {"logits": logits, "pred": xnp.argmax(logits, axis=1)}


def _mlp_args(rng):
    params = {"w1": rng.standard_normal((4, 8)), "b1": rng.standard_normal(8),
              "w2": rng.standard_normal((8, 3)), "b2": rng.standard_normal(3)}
    return params, rng.standard_normal((5, 4))


def _mse(xnp, pred, target):
    return xnp.mean((pred - target) ** 2)


def _polyval(xnp, coeffs, x):
    out = xnp.zeros_like(x)
    for c in coeffs:  # Horner's rule; `coeffs` is a static tuple
        out = out * x + c
    return out


def _cumsum(xnp, x):
    total = x[0]
    parts = [total]
    for i in range(1, x.shape[0]):  # shapes are static: this unrolls
        total = total + x[i]
        parts.append(total)
    return xnp.stack(parts)


def _pairwise_distances(xnp, a, b):
    diff = a[:, None, :] - b[None, :, :]
    return xnp.sqrt(xnp.sum(diff * diff, axis=-1))


def _normalize_rows(xnp, x):
    return x / xnp.sqrt((x ** 2).sum(axis=1, keepdims=True))


def _layer_norm_axis1(xnp, x):
    """Normalised over the middle axis of (B, T, D): both reductions keep rows and columns,
    so their accumulators are whole arrays that one loop over the rows fills."""
    mu = xnp.mean(x, axis=1, keepdims=True)
    return (x - mu) / xnp.sqrt(xnp.var(x, axis=1, keepdims=True) + 1e-5)


def _reduce_twice_middle_axes(xnp, x):
    s = xnp.sum(x, axis=(1, 2), keepdims=True)
    return xnp.max(xnp.abs(x - s), axis=(1, 2)), xnp.std(x, axis=2)


program("softmax", _softmax, normal(3, 5))
program("variance_middle_axis", lambda xnp, x: xnp.var(x, axis=1), normal(2, 3, 4))
program("layer_norm_axis1", _layer_norm_axis1, normal(3, 4, 5))
program("reduce_twice_middle_axes", _reduce_twice_middle_axes, normal(2, 3, 2, 4))
program("layer_norm", _layer_norm, lambda rng: (rng.standard_normal((2, 6)),
                                                rng.standard_normal(6), rng.standard_normal(6)))
program("logsumexp", _logsumexp, normal(4, 6))
program("mlp_forward", _mlp, _mlp_args)
program("mean_squared_error", _mse, normal2((10,), (10,)))
program("polyval_static_loop", _polyval,
        lambda rng: ((1.0, -2.0, 0.5, 3.0), rng.standard_normal(6)), static_argnums=(0,))
program("cumsum_unrolled", _cumsum, normal(6))
program("pairwise_distances", _pairwise_distances, normal2((4, 3), (5, 3)))
program("normalize_rows", _normalize_rows, normal(3, 4))
program("one_hot_accuracy", lambda xnp, logits, labels: xnp.mean(
    (xnp.argmax(logits, axis=1) == labels).astype(xnp.float64)),
    lambda rng: (rng.standard_normal((8, 3)), rng.integers(0, 3, 8)))
program("pytree_in_out", lambda xnp, d, t: {"s": d["a"] + t[0], "p": (d["b"] * t[1], t[0])},
        lambda rng: ({"a": rng.standard_normal(2), "b": rng.standard_normal(2)},
                     (rng.standard_normal(2), 2.0)))

PROGRAMS_BY_NAME: dict[str, Program] = {p.name: p for p in PROGRAMS}
