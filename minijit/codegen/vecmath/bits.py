"""Bit-level helpers for the vector math functions: reinterpret casts and exact powers of two.

Everything here compiles to one or two integer or bit-cast instructions, which LLVM's loop
vectorizer widens lane by lane; nothing calls libm. The casts are `numba.extending.intrinsic`s
(applied by `deferred.compile_all`, like every Numba decorator of the package) that emit an
LLVM `bitcast`, the same bits read as another type (what C does with a union or
`memcpy`, and what NumPy's `.view` does for whole arrays).

Invariants:
- `f64_bits(x)` / `f64_from_bits(i)` and `f32_bits(x)` / `f32_from_bits(i)` are exact inverses.
  `f32_bits` returns an int32; `f32_from_bits` accepts any integer and keeps its low 32 bits
  (Numba computes `int32 + int32` in int64, so the f32 code does its integer work in int64).
- `pow2_f64(k)` is exactly 2**k for integer k in [-1022, 1023] (normal doubles), `pow2_f32(k)`
  exactly 2**k for k in [-126, 127]. Outside those ranges the result is garbage, so callers
  clamp `k` first or split the scaling into two factors (see `exp_log.exp_f64`).
- `f64_from_small_int(k)` is exactly float(k) for |k| < 2**51, without an int64 -> double
  conversion instruction (AVX2 has none for vectors; the add-a-shifter trick needs only an
  integer add and a float subtract); `f32_from_small_int(k)` likewise for |k| < 2**22.
- `copysign_f64(m, s)` / `copysign_f32(m, s)` put the sign bit of s on a non-negative m
  (bitwise, so -0.0 and nan signs are copied too).
The helpers are `inline="always"` (inlined by Numba into the calling function's IR): they
contain no division, so that cannot add an error-model branch.
"""

from __future__ import annotations

import numpy as np
from llvmlite import ir

from minijit.codegen.vecmath.deferred import intrinsic, jit

# 1.5 * 2**52: adding it to a double of magnitude below 2**51 rounds that double to an integer
# (round-to-nearest-even, the current rounding mode) and leaves the integer in the low
# mantissa bits, so `bits(x + SHIFTER) - bits(SHIFTER)` is that integer as an int64.
SHIFTER_F64 = 6755399441055744.0
SHIFTER_F64_BITS = 0x4338000000000000


@intrinsic
def f64_bits(typingctx, x):
    """The 64 bits of a float64 as an int64 (LLVM `bitcast double to i64`)."""
    from numba import types

    if x != types.float64:
        return None

    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], ir.IntType(64))

    return types.int64(types.float64), codegen


@intrinsic
def f64_from_bits(typingctx, i):
    """The float64 whose bits are the int64 `i` (LLVM `bitcast i64 to double`)."""
    from numba import types

    if not isinstance(i, types.Integer):
        return None

    def codegen(context, builder, signature, args):
        v = args[0]
        if signature.args[0].bitwidth < 64:
            v = builder.sext(v, ir.IntType(64))
        return builder.bitcast(v, ir.DoubleType())

    return types.float64(i), codegen


@intrinsic
def f32_bits(typingctx, x):
    """The 32 bits of a float32 as an int32 (LLVM `bitcast float to i32`)."""
    from numba import types

    if x != types.float32:
        return None

    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], ir.IntType(32))

    return types.int32(types.float32), codegen


@intrinsic
def f32_from_bits(typingctx, i):
    """The float32 whose bits are the low 32 bits of the integer `i` (trunc, then bitcast)."""
    from numba import types

    if not isinstance(i, types.Integer):
        return None

    def codegen(context, builder, signature, args):
        v = args[0]
        width = signature.args[0].bitwidth
        if width > 32:
            v = builder.trunc(v, ir.IntType(32))
        elif width < 32:
            v = builder.sext(v, ir.IntType(32))
        return builder.bitcast(v, ir.FloatType())

    return types.float32(i), codegen


@jit(inline="always")
def pow2_f64(k):
    """2.0**k for int k in [-1022, 1023]: the biased exponent k + 1023 in bits 52..62."""
    return f64_from_bits((k + 1023) << 52)


@jit(inline="always")
def pow2_f32(k):
    """np.float32(2.0**k) for int k in [-126, 127]: the biased exponent k + 127 in bits 23..30."""
    return f32_from_bits((k + 127) << 23)


@jit(inline="always")
def f64_from_small_int(k):
    """float(k) for int k with |k| < 2**51, exactly (see SHIFTER_F64)."""
    return f64_from_bits(k + SHIFTER_F64_BITS) - SHIFTER_F64


@jit(inline="always")
def copysign_f64(mag, sign_source):
    """|mag| with the sign bit of `sign_source` (both float64; `mag` must have its sign clear).

    `(bits >> 63) << 63` keeps only the sign bit: the arithmetic shift smears it over the word,
    the left shift clears the rest. Written this way to avoid a 2**63 literal, which Numba
    would type as uint64 (and int64 & uint64 promotes to float64)."""
    return f64_from_bits(f64_bits(mag) | ((f64_bits(sign_source) >> 63) << 63))


# 1.5 * 2**23, the float32 counterpart of SHIFTER_F64.
SHIFTER_F32 = 12582912.0
SHIFTER_F32_BITS = 0x4B400000


@jit(inline="always")
def f32_from_small_int(k):
    """np.float32(k) for int k with |k| < 2**22, exactly (see SHIFTER_F64)."""
    return f32_from_bits(k + SHIFTER_F32_BITS) - np.float32(SHIFTER_F32)


@jit(inline="always")
def copysign_f32(mag, sign_source):
    """|mag| with the sign bit of `sign_source` (both float32; `mag` must have its sign clear).

    The int32 sign bit is the int32 minimum; `f32_bits(x) & -2**31` keeps only it (the
    arithmetic happens in int64 in Numba; the low 32 bits are what counts)."""
    return f32_from_bits(f32_bits(mag) | (f32_bits(sign_source) & -2147483648))
