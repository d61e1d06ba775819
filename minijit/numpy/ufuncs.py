"""Elementwise functions, NumPy's ufuncs: arithmetic, comparisons, bitwise and logical
operations, unary float functions, rounding, and `where`/`clip` (as JAX's
`jax/_src/numpy/ufuncs.py`). Those with no primitive of their own (`round`, `hypot`,
`logaddexp`, `log2`, ...) are JAX's own formulas on minijit's primitives, so the values agree
with JAX's to the last bit or nearly.

Each one takes its operands through `util` (`_operand`, `_promote`, `_broadcast`), then calls
strict `lax` primitives (usually one), so the result's dtype and shape are NumPy's and the
Jaxpr holds every conversion. Where NumPy and JAX differ, these follow JAX (weak types, an int
beyond a comparison's dtype wraps around); the docstrings and comments say where.
"""

from __future__ import annotations

import operator

import numpy as np

from minijit import dtypes, lax
from minijit.core import is_tracing
from minijit.numpy._edge import api_edge
from minijit.numpy.searching import nonzero
from minijit.numpy.util import (
    _SCALARS,
    _aval,
    _broadcast,
    _convert,
    _operand,
    _operand_array,
    _promote,
    _promoted_type,
    _shape,
    broadcast_shapes,
    broadcast_to,
)

# Shapes that do not broadcast fail as in JAX: a TypeError naming the first primitive JAX's
# own implementation applies to both operands (`sub` for subtract, `rem` for floor_divide).
_OP_NAMES = {"bitwise_and": "and", "bitwise_or": "or", "bitwise_xor": "xor"}


def _op(fn) -> str:
    """The name JAX's error gives the primitive `fn` binds."""
    return _OP_NAMES.get(fn.__name__, fn.__name__)


def _binary(fn, x, y):
    return fn(*_broadcast(*_promote(x, y), op=_op(fn)))


def _float_operands(*xs):
    """The operands in their common dtype made a float one (`dtypes.float_result`), weak if
    they all are: JAX's `promote_dtypes_inexact`."""
    xs = [_operand(x) for x in xs]
    dtype, weak = _promoted_type(xs)
    target = dtypes.float_result(dtype)
    return [_convert(x, target, weak) for x in xs]


def _float_binary(fn, x, y):
    return fn(*_broadcast(*_float_operands(x, y), op=_op(fn)))


def add(x, y):
    # lax.add takes no bools (as in JAX); NumPy's and JAX's `+` on bools is a logical or.
    x, y = _promote(x, y)
    fn = lax.bitwise_or if _aval(x).dtype == dtypes.bool_ else lax.add
    return fn(*_broadcast(x, y, op=_op(fn)))


def subtract(x, y):
    return _binary(lax.sub, x, y)


def multiply(x, y):
    x, y = _promote(x, y)
    fn = lax.bitwise_and if _aval(x).dtype == dtypes.bool_ else lax.mul
    return fn(*_broadcast(x, y, op=_op(fn)))


def true_divide(x, y):
    xs = [_operand(x), _operand(y)]
    dtype, weak = _promoted_type(xs)
    target = dtypes.float_result(dtype)
    # Straight to the float dtype: through the int one, `uint8_array / 256` would need 256 as
    # a uint8 (an OverflowError, or 0 when 256 is a traced argument, so inf).
    x, y = (_convert(v, target, weak) for v in xs)
    return lax.div(*_broadcast(x, y, op="div"))


divide = true_divide


def arctan2(x, y):
    """Elementwise arctan(x / y) in the right quadrant; ints and bools compute in a float
    (`dtypes.float_result`)."""
    xs = [_operand(x), _operand(y)]
    dtype, weak = _promoted_type(xs)
    target = dtypes.float_result(dtype)
    return lax.atan2(*_broadcast(*(_convert(v, target, weak) for v in xs), op="atan2"))


def _no_bool(*xs):
    """JAX's // % ** << >> on two bools compute in int32 (NumPy's // % ** in int8)."""
    if all(_aval(x).dtype == dtypes.bool_ for x in xs):
        return [_convert(x, np.dtype(np.int32), False) for x in xs]
    return list(xs)


def floor_divide(x, y):
    x, y = _no_bool(*_promote(x, y))
    op = "div" if dtypes.is_int(_aval(x).dtype) else "rem"  # what JAX's error names
    return lax.floor_divide(*_broadcast(x, y, op=op))


def remainder(x, y):
    return lax.remainder(*_broadcast(*_no_bool(*_promote(x, y)), op="rem"))


mod = remainder


def divmod(x, y):  # noqa: A001 - NumPy's name
    """`(x // y, x % y)`, both rounding toward -inf as Python does."""
    return floor_divide(x, y), remainder(x, y)


def fmod(x, y):
    """C's remainder (`lax.rem`): the sign of the dividend. An integer divisor of 0 counts
    as 1, as in JAX (so the result is 0)."""
    x, y = _no_bool(*_promote(x, y))
    if dtypes.is_int(_aval(x).dtype):
        y = where(equal(y, 0), 1, y)
    return lax.rem(*_broadcast(*_promote(x, y), op="rem"))


def power(x, y):
    if isinstance(y, int) and not isinstance(y, bool) and not isinstance(x, _SCALARS):
        x = _operand(x)
        if _aval(x).dtype == dtypes.bool_:  # as in JAX: `bool_array ** 2` is int32
            x = _convert(x, np.dtype(np.int32), False)
        if y < 0 and dtypes.is_int(_aval(x).dtype):
            # NumPy's error; JAX raises a TypeError with the same meaning.
            raise ValueError("Integers to negative integer powers are not allowed.")
        return lax.integer_pow(x, y)
    x, y = _no_bool(*_promote(x, y))
    op = "and" if dtypes.is_int(_aval(x).dtype) else "pow"  # what JAX's error names
    x, y = _broadcast(x, y, op=op)
    if not is_tracing() and dtypes.is_int(_aval(y).dtype) and np.any(np.asarray(y) < 0):
        # NumPy's error, where the values are known. Inside jit they are data, and every
        # backend gives a value instead (see `_power` in interpret.py).
        raise ValueError("Integers to negative integer powers are not allowed.")
    return lax.pow(x, y)


def float_power(x, y):
    """`x ** y` computed in a float dtype (ints become float64 or float32, as JAX's
    `promote_args_inexact`), so a negative integer power is allowed."""
    return _float_binary(lax.pow, x, y)


pow = power  # noqa: A001 - the array API's name


def maximum(x, y):
    return _binary(lax.max, x, y)


def minimum(x, y):
    return _binary(lax.min, x, y)


def fmax(x, y):
    """The larger of `x` and `y`, ignoring a NaN (NaN only where both are), as JAX computes
    it: `x` where `x > y` or `y` is NaN, else `y`."""
    x, y = _promote(x, y)
    return where(logical_or(greater(x, y), isnan(y)), x, y)


def fmin(x, y):
    x, y = _promote(x, y)
    return where(logical_or(less(x, y), isnan(y)), x, y)


# Comparisons: a Python int that does not fit the other operand's integer dtype wraps around
# into it first, as in JAX (`_convert` does it for every operation): `uint8_array > -1`
# compares with 255 (all False). NumPy 2 compares such ints exactly; minijit follows JAX, so
# the int behaves the same closed over as passed to jit, where it is a weakly typed int64.


def equal(x, y):
    return _binary(lax.eq, x, y)


def not_equal(x, y):
    return _binary(lax.ne, x, y)


def less(x, y):
    return _binary(lax.lt, x, y)


def less_equal(x, y):
    return _binary(lax.le, x, y)


def greater(x, y):
    return _binary(lax.gt, x, y)


def greater_equal(x, y):
    return _binary(lax.ge, x, y)


def bitwise_and(x, y):
    return _binary(lax.bitwise_and, x, y)


def bitwise_or(x, y):
    return _binary(lax.bitwise_or, x, y)


def bitwise_xor(x, y):
    return _binary(lax.bitwise_xor, x, y)


def left_shift(x, y):
    """`x << y` (`lax.shift_left`) after JAX's promotion: two bools shift in int32, a float
    is refused (shifts take integers only), and an amount of at least the bit width, or a
    negative one, gives 0 (NumPy's is undefined)."""
    return lax.shift_left(*_broadcast(*_no_bool(*_promote(x, y)), op="shift_left"))


def right_shift(x, y):
    """`x >> y` after JAX's promotion: arithmetic for signed ints (`-8 >> 1` is -4; by the bit
    width or more, -1 or 0), logical for unsigned ones (zeros come in; by the width, 0)."""
    x, y = _no_bool(*_promote(x, y))
    fn = lax.shift_right_logical if _aval(x).dtype.kind == "u" else lax.shift_right_arithmetic
    return fn(*_broadcast(x, y, op=_op(fn)))  # floats fail here, with the primitive's error


bitwise_left_shift = left_shift  # NumPy 2's (and the array API's) names, as in JAX
bitwise_right_shift = right_shift


def invert(x):
    return lax.bitwise_not(_operand_array(x))


bitwise_not = invert
bitwise_invert = invert


def _as_bool(x):
    x = _operand(x)
    if isinstance(x, _SCALARS):
        dtypes.python_scalar_dtype(x)  # an int beyond int64 is an OverflowError, as in JAX
        return bool(x)
    return x if _aval(x).dtype == dtypes.bool_ else not_equal(x, _zero_like(x))


def _zero_like(x):
    return _aval(x).dtype.type(0)


def _logical(fn, x, y):
    """`fn` of the truth values of `x` and `y`, taken after promotion, as JAX takes them: an
    int that does not fit the other operand's dtype wraps into it first, as in a comparison
    (`logical_and(int8_array, 2**31)` tests 0, so it is all False; 2**31 + 1 tests 1)."""
    x, y = _promote(x, y)
    return fn(*_broadcast(*_promote(_as_bool(x), _as_bool(y)), op=_op(fn)))


def logical_and(x, y):
    return _logical(lax.bitwise_and, x, y)


def logical_or(x, y):
    return _logical(lax.bitwise_or, x, y)


def logical_xor(x, y):
    return _logical(lax.bitwise_xor, x, y)


def logical_not(x):
    return lax.bitwise_not(_operand_array(_as_bool(x)))


def _unary_operand(x):
    """`x` for a unary primitive: an array, or a Python scalar (not a bool), which the
    primitive then takes as a weak literal: `mnp.negative(2)` is a weak int64, as in JAX."""
    x = _operand(x)
    return x if isinstance(x, _SCALARS) and not isinstance(x, bool) else _operand_array(x)


def _identity(x):
    """`x` itself as an array; a Python scalar becomes a weakly typed one."""
    x = _unary_operand(x)
    if isinstance(x, _SCALARS):
        return lax.convert_element_type(x, dtypes.python_scalar_dtype(x), weak_type=True)
    return x


def negative(x):
    return lax.neg(_unary_operand(x))


def positive(x):
    return _identity(x)


def absolute(x):
    x = _unary_operand(x)
    return _identity(x) if _aval(x).dtype.kind in "bu" else lax.abs(x)


abs = absolute  # noqa: A001


def sign(x):
    return lax.sign(_unary_operand(x))


def floor(x):
    x = _unary_operand(x)  # ints and bools are their own floor, and keep their dtype (JAX)
    return _identity(x) if _aval(x).dtype.kind in "biu" else lax.floor(x)


def ceil(x):
    x = _unary_operand(x)
    return _identity(x) if _aval(x).dtype.kind in "biu" else lax.ceil(x)


def _float_unary(fn):
    def wrapped(x):
        x = _operand(x)  # a Python scalar stays one: `mnp.sqrt(2)` is weak, as in JAX
        aval = _aval(x)
        return fn(_convert(x, dtypes.float_result(aval.dtype), aval.weak_type))

    wrapped.__name__ = fn.__name__
    wrapped.__doc__ = (f"Elementwise {fn.__name__}; ints and bools compute in a float "
                       "(float32, or float64 for 64-bit ints), as in JAX.")
    return wrapped


exp = _float_unary(lax.exp)
log = _float_unary(lax.log)
log1p = _float_unary(lax.log1p)
expm1 = _float_unary(lax.expm1)
sin = _float_unary(lax.sin)
cos = _float_unary(lax.cos)
tan = _float_unary(lax.tan)
tanh = _float_unary(lax.tanh)
sqrt = _float_unary(lax.sqrt)


def square(x):
    return power(_identity(x), 2)  # power computes bools in int32, as JAX does


def _float_constant(x, value: float):
    """`value` in `x`'s (float) dtype, as a weak scalar when `x` is weak."""
    aval = _aval(x)
    return float(value) if aval.weak_type else aval.dtype.type(value)


def _in_float(x):
    (x,) = _float_operands(x)
    return _operand_array(x)


def fabs(x):
    """`abs` in a float dtype (ints and bools become floats, as in JAX)."""
    return lax.abs(_in_float(x))


def reciprocal(x):
    """`1 / x` in a float dtype (ints become floats, as in JAX: `integer_pow(x, -1)`)."""
    return lax.integer_pow(_in_float(x), -1)


def log2(x):
    x = _in_float(x)  # JAX's formula, log(x) / log(2), so that the bits agree
    return lax.div(lax.log(x), lax.log(_operand_array(_aval(x).dtype.type(2))))


def log10(x):
    x = _in_float(x)  # JAX's formula, log(x) * (1 / log(10)), with a strong constant
    return lax.mul(lax.log(x), _operand_array(_aval(x).dtype.type(1 / np.log(10))))


def exp2(x):
    x = _in_float(x)  # XLA's: exp(x * log(2))
    return lax.exp(lax.mul(x, _float_constant(x, np.log(2))))


def arctan(x):
    """The arctangent, as `arctan2(x, 1)` (C's atan2 with a divisor of 1 is atan)."""
    x = _in_float(x)
    return lax.atan2(x, _float_constant(x, 1.0))


atan = arctan
atan2 = arctan2  # the array API's name


def deg2rad(x):
    x = _in_float(x)
    return lax.mul(x, _float_constant(x, np.pi / 180))


def rad2deg(x):
    x = _in_float(x)
    return lax.mul(x, _float_constant(x, 180 / np.pi))


radians = deg2rad
degrees = rad2deg


def sinc(x):
    """`sin(pi x) / (pi x)`, and 1 at 0."""
    x = _in_float(x)
    zero = equal(x, 0)
    pi_x = lax.mul(_float_constant(x, np.pi), x)
    safe = where(zero, _float_constant(x, 1.0), pi_x)
    return where(zero, _float_constant(x, 1.0), lax.div(lax.sin(safe), safe))


def hypot(x, y):
    """`sqrt(x**2 + y**2)` without overflow, JAX's way: the larger side times
    `sqrt(1 + (smaller / larger)**2)`; inf if either is infinite."""
    # JAX's hypot first applies `or` to both operands (testing for infinities): its error
    x, y = (_operand_array(v) for v in _broadcast(*_float_operands(x, y), op="or"))
    x, y = lax.abs(x), lax.abs(y)
    infinite = logical_or(isposinf(x), isposinf(y))
    big, small = maximum(x, y), minimum(x, y)
    zero = equal(big, 0)
    ratio = true_divide(small, where(zero, _float_constant(big, 1.0), big))
    out = where(zero, big, multiply(big, lax.sqrt(add(_float_constant(big, 1.0),
                                                      multiply(ratio, ratio)))))
    return where(infinite, np.inf, out)


def logaddexp(x, y):
    """`log(exp(x) + exp(y))` without overflow: `max + log1p(exp(-|x - y|))` (JAX's)."""
    x, y = (_operand_array(v) for v in _broadcast(*_float_operands(x, y), op="max"))
    delta = subtract(x, y)
    tail = lax.log1p(lax.exp(lax.neg(lax.abs(delta))))
    return where(isnan(delta), add(x, y), add(maximum(x, y), tail))


def logaddexp2(x, y):
    """`log2(2**x + 2**y)` without overflow, as `logaddexp` (JAX's formula)."""
    x, y = (_operand_array(v) for v in _broadcast(*_float_operands(x, y), op="max"))
    delta = subtract(x, y)
    tail = multiply(_float_constant(x, 1 / np.log(2)), lax.log1p(exp2(lax.neg(lax.abs(delta)))))
    return where(isnan(delta), add(x, y), add(maximum(x, y), tail))


def heaviside(x, h):
    """0 where `x < 0`, 1 where `x > 0`, `h` where `x == 0` (NaN where `x` is)."""
    x, h = _float_operands(x, h)
    x = _operand_array(x)
    zero, one = _float_constant(x, 0.0), _float_constant(x, 1.0)
    return where(less(x, zero), zero, where(greater(x, zero), one, where(isnan(x), x, h)))


def _round_half_even(x):
    """`x` rounded to the nearest integer, ties to even (XLA's `round_nearest_even`): for
    `|x| < 2**52` (2**23 in float32), `(|x| + 2**52) - 2**52` is rounded so by the addition
    itself, in the default IEEE mode; larger floats, infinities, NaN and zeros (whose sign
    must stay) are their own rounding."""
    big = _float_constant(x, 2.0 ** (np.finfo(_aval(x).dtype).nmant))
    magnitude = lax.abs(x)
    rounded = lax.sub(lax.add(magnitude, big), big)
    signed = where(less(x, 0), lax.neg(rounded), rounded)
    return where(logical_and(less(magnitude, big), greater(magnitude, 0)), signed, x)


def round(x, decimals=0):  # noqa: A001 - NumPy's name
    """`x` rounded to `decimals` decimal places, halves to even as in NumPy and JAX (with
    JAX's arithmetic for decimals: `round(x * 10**d) / 10**d`). Ints are returned as they
    are; negative `decimals` for ints are refused, as in JAX."""
    x = _unary_operand(x)
    decimals = operator.index(decimals)
    kind = _aval(x).dtype.kind
    if kind == "b":
        raise ValueError("mnp.round needs numbers: bool is not a number type to round "
                         "(convert with .astype(int) first)")
    if kind in "iu":
        if decimals < 0:
            raise NotImplementedError("integer np.round not implemented for decimals < 0")
        return _identity(x)
    x = _identity(x)
    if decimals > np.log10(np.finfo(_aval(x).dtype).max):
        return x  # finer than the dtype can say: nothing to round
    if decimals == 0:
        return _round_half_even(x)
    factor = _float_constant(x, 10.0 ** decimals)
    return lax.div(_round_half_even(lax.mul(x, factor)), factor)


around = round


def rint(x):
    """`x` rounded to the nearest integer, halves to even; ints and bools become the
    default float, as in JAX."""
    x = _unary_operand(x)
    if _aval(x).dtype.kind in "biu":
        return lax.convert_element_type(x, dtypes.float_)
    return _round_half_even(_identity(x))


def trunc(x):
    """`x` rounded toward 0 (ints and bools are their own)."""
    x = _unary_operand(x)
    if _aval(x).dtype.kind in "biu":
        return _identity(x)
    x = _identity(x)
    return where(less(x, 0), lax.ceil(x), lax.floor(x))


def modf(x):
    """`(fractional part, whole part)`, both with `x`'s sign, in a float dtype; as JAX
    computes it (`x - whole`), an infinite `x` has a NaN fractional part (NumPy's is 0)."""
    x = _in_float(x)
    whole = where(greater_equal(x, 0), lax.floor(x), lax.ceil(x))
    return subtract(x, whole), whole


def nan_to_num(x, copy=True, nan=0.0, posinf=None, neginf=None):  # noqa: A002 - NumPy's
    """`x` with NaN replaced by `nan` and infinities by `posinf` / `neginf` (by default the
    largest and smallest values of the dtype); ints and bools are returned as they are."""
    x = _operand_array(x)
    dtype = _aval(x).dtype
    if not dtypes.is_float(dtype):
        return x
    info = np.finfo(dtype)
    out = where(isnan(x), dtype.type(nan), x)
    out = where(isposinf(out), dtype.type(info.max if posinf is None else posinf), out)
    return where(isneginf(out), dtype.type(info.min if neginf is None else neginf), out)


def conjugate(x):
    """`x` itself: minijit's dtypes are real, so the complex conjugate changes nothing."""
    return _identity(x)


conj = conjugate


def real(x):
    """`x` itself: minijit's dtypes are real."""
    return _identity(x)


def imag(x):
    """Zeros of `x`'s shape and dtype: minijit's dtypes are real."""
    x = _identity(x)
    zero = _operand_array(_convert(0, _aval(x).dtype, _aval(x).weak_type))
    return broadcast_to(zero, _shape(x))


def isfinite(x):
    """Neither inf nor NaN. Ints and bools are always finite: the result is then a broadcast
    True, with no equation that reads `x` (as in JAX)."""
    x = _operand_array(x)
    if dtypes.is_float(_aval(x).dtype):
        return lax.is_finite(x)
    return broadcast_to(_operand_array(np.bool_(True)), _aval(x).shape)


def isnan(x):
    x = _operand_array(x)
    return not_equal(x, x)


def _never(x):
    """All False, of `x`'s shape (ints and bools are never infinite)."""
    return broadcast_to(_operand_array(np.bool_(False)), _aval(x).shape)


def isinf(x):
    x = _operand_array(x)
    if not dtypes.is_float(_aval(x).dtype):
        return _never(x)
    return equal(lax.abs(x), _aval(x).dtype.type(np.inf))


def isposinf(x):
    x = _operand_array(x)
    return equal(x, _aval(x).dtype.type(np.inf)) if dtypes.is_float(_aval(x).dtype) else _never(x)


def isneginf(x):
    x = _operand_array(x)
    if not dtypes.is_float(_aval(x).dtype):
        return _never(x)
    return equal(x, _aval(x).dtype.type(-np.inf))


def isclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    """Whether `|a - b| <= atol + rtol * |b|` elementwise (equal infinities too; NaNs only
    with `equal_nan`), in the operands' common dtype, as JAX computes it; ints and bools are
    compared exactly."""
    a, b = _promote(a, b)
    a, b = _operand_array(a), _operand_array(b)
    dtype = _aval(a).dtype
    if not dtypes.is_float(dtype):
        return equal(a, b)
    rtol, atol = dtype.type(rtol), dtype.type(atol)
    near = less_equal(lax.abs(subtract(a, b)), add(atol, multiply(rtol, lax.abs(b))))
    out = logical_or(equal(a, b), logical_and(isfinite(b), near))
    if equal_nan:
        out = logical_or(out, logical_and(isnan(a), isnan(b)))
    return out


def clip(x, min=None, max=None, *, a_min=None, a_max=None):  # noqa: A002 - NumPy's names
    lo = min if min is not None else a_min
    hi = max if max is not None else a_max
    out = _operand_array(x)
    if lo is not None:
        out = maximum(out, lo)
    if hi is not None:
        out = minimum(out, hi)
    return out


def where(condition, x=None, y=None, *, size=None, fill_value=None):
    """`x` where `condition` else `y`; both are computed (see lax.cond to compute one).
    With `condition` alone it is `nonzero(condition, size=..., fill_value=...)`, as in JAX."""
    if x is None and y is None:
        return nonzero(condition, size=size, fill_value=fill_value)
    if x is None or y is None:
        raise TypeError("mnp.where takes both x and y, or neither (then it is nonzero): got "
                        f"only {'y' if x is None else 'x'}")
    if size is not None or fill_value is not None:
        raise ValueError("size and fill_value arguments cannot be used in three-term where "
                         "function.")
    c = _as_bool(condition)
    x, y = _promote(x, y)
    c, x, y = _broadcast(c, x, y)
    shape = broadcast_shapes(_shape(c), _shape(x), _shape(y))
    x, y = broadcast_to(x, shape), broadcast_to(y, shape)
    return lax.select(_operand_array(c), x, y)


# Keep last: every public function above becomes a checked API boundary (see _edge).
api_edge(globals())
