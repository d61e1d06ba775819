"""Elementwise functions, NumPy's ufuncs: arithmetic, comparisons, bitwise and logical
operations, unary float functions, and `where`/`clip` (as JAX's `jax/_src/numpy/ufuncs.py`).

Each one takes its operands through `util` (`_operand`, `_promote`, `_broadcast`), then calls
strict `lax` primitives (usually one), so the result's dtype and shape are NumPy's and the
Jaxpr holds every conversion. Where NumPy and JAX differ, these follow JAX (weak types, an int
beyond a comparison's dtype wraps around); the docstrings and comments say where.
"""

from __future__ import annotations

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


def _binary(fn, x, y):
    return fn(*_broadcast(*_promote(x, y)))


def add(x, y):
    # lax.add takes no bools (as in JAX); NumPy's and JAX's `+` on bools is a logical or.
    x, y = _promote(x, y)
    return (lax.bitwise_or if _aval(x).dtype == dtypes.bool_ else lax.add)(*_broadcast(x, y))


def subtract(x, y):
    return _binary(lax.sub, x, y)


def multiply(x, y):
    x, y = _promote(x, y)
    return (lax.bitwise_and if _aval(x).dtype == dtypes.bool_ else lax.mul)(*_broadcast(x, y))


def true_divide(x, y):
    xs = [_operand(x), _operand(y)]
    dtype, weak = _promoted_type(xs)
    target = dtypes.float_result(dtype)
    # Straight to the float dtype: through the int one, `uint8_array / 256` would need 256 as
    # a uint8 (an OverflowError, or 0 when 256 is a traced argument, so inf).
    x, y = (_convert(v, target, weak) for v in xs)
    return lax.div(*_broadcast(x, y))


divide = true_divide


def arctan2(x, y):
    """Elementwise arctan(x / y) in the right quadrant; ints and bools compute in a float
    (`dtypes.float_result`)."""
    xs = [_operand(x), _operand(y)]
    dtype, weak = _promoted_type(xs)
    target = dtypes.float_result(dtype)
    return lax.atan2(*_broadcast(*(_convert(v, target, weak) for v in xs)))


def _no_bool(*xs):
    """JAX's // % ** << >> on two bools compute in int32 (NumPy's // % ** in int8)."""
    if all(_aval(x).dtype == dtypes.bool_ for x in xs):
        return [_convert(x, np.dtype(np.int32), False) for x in xs]
    return list(xs)


def floor_divide(x, y):
    return lax.floor_divide(*_broadcast(*_no_bool(*_promote(x, y))))


def remainder(x, y):
    return lax.remainder(*_broadcast(*_no_bool(*_promote(x, y))))


mod = remainder


def power(x, y):
    if isinstance(y, int) and not isinstance(y, bool) and not isinstance(x, _SCALARS):
        x = _operand(x)
        if _aval(x).dtype == dtypes.bool_:  # as in JAX: `bool_array ** 2` is int32
            x = _convert(x, np.dtype(np.int32), False)
        if y < 0 and dtypes.is_int(_aval(x).dtype):
            # NumPy's error; JAX raises a TypeError with the same meaning.
            raise ValueError("Integers to negative integer powers are not allowed.")
        return lax.integer_pow(x, y)
    x, y = _broadcast(*_no_bool(*_promote(x, y)))
    if not is_tracing() and dtypes.is_int(_aval(y).dtype) and np.any(np.asarray(y) < 0):
        # NumPy's error, where the values are known. Inside jit they are data, and every
        # backend gives a value instead (see `_power` in interpret.py).
        raise ValueError("Integers to negative integer powers are not allowed.")
    return lax.pow(x, y)


def maximum(x, y):
    return _binary(lax.max, x, y)


def minimum(x, y):
    return _binary(lax.min, x, y)


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
    return lax.shift_left(*_broadcast(*_no_bool(*_promote(x, y))))


def right_shift(x, y):
    """`x >> y` after JAX's promotion: arithmetic for signed ints (`-8 >> 1` is -4; by the bit
    width or more, -1 or 0), logical for unsigned ones (zeros come in; by the width, 0)."""
    x, y = _broadcast(*_no_bool(*_promote(x, y)))
    if _aval(x).dtype.kind == "u":
        return lax.shift_right_logical(x, y)
    return lax.shift_right_arithmetic(x, y)  # floats fail here, with the primitive's error


bitwise_left_shift = left_shift  # NumPy 2's (and the array API's) names, as in JAX
bitwise_right_shift = right_shift


def invert(x):
    return lax.bitwise_not(_operand_array(x))


bitwise_not = invert


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
    return fn(*_broadcast(*_promote(_as_bool(x), _as_bool(y))))


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
