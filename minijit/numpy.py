"""`minijit.numpy` (imported as `mnp`): a `jax.numpy`-like subset of NumPy (chapters 02-04).

Each function promotes dtypes and broadcasts shapes the way NumPy does, then calls the strict
primitives of `minijit.lax`, so a traced function's Jaxpr shows every conversion explicitly.
The same code runs eagerly outside `jit`: `bind` then evaluates on NumPy and returns `Array`s.
As in JAX, only `asarray`/`array` convert lists and tuples: any other function given one as
an array argument raises JAX's TypeError (`_requires_arraylike`), eagerly and traced alike.

Dtypes follow NumPy (float64 by default); float functions (`sqrt`, `exp`, `/`) turn ints into
float64 where NumPy would sometimes choose float16 or float32.
"""

from __future__ import annotations

import builtins
import functools
import inspect
import math
import operator
from collections.abc import Sequence

import numpy as np

from minijit import dtypes, lax
from minijit.array import Array, wrap
from minijit.core import Tracer, get_aval, is_tracing
from minijit.errors import ConcretizationTypeError, api_boundaries, user_line

# dtype names, so `mnp.float32` works as in JAX
bool_ = np.bool_
int8, int16, int32, int64 = np.int8, np.int16, np.int32, np.int64
uint8, uint16, uint32, uint64 = np.uint8, np.uint16, np.uint32, np.uint64
float32, float64 = np.float32, np.float64
pi, e, inf, nan = np.pi, np.e, np.inf, np.nan
newaxis = None
ndarray = Array
dtype = np.dtype

_SCALARS = (bool, int, float)


# --------------------------------------------------------------------------- conversions


def _is_array(x) -> bool:
    return isinstance(x, (Tracer, np.ndarray, np.generic))


def _reject_masked(x) -> None:
    """A masked array would lose its mask in np.asarray: say so instead of dropping it."""
    if isinstance(x, np.ma.MaskedArray):
        where = user_line()
        raise TypeError(
            "an argument of a minijit.numpy function is a masked array (np.ma.MaskedArray); "
            "minijit arrays have no mask (neither do JAX's), and converting it would silently "
            "drop the mask. Pass `x.filled(value)` to choose what the masked entries hold, or "
            "`np.asarray(x)` to use the data underneath." + (f"\n  at {where}" if where else "")
        )


def asarray(x, dtype=None):
    """An array (or tracer) for `x`; nested lists containing tracers are stacked."""
    _reject_masked(x)
    if isinstance(x, (Tracer, Array)):  # an Array keeps its weak type, as in JAX
        return x if dtype is None else astype(x, dtype)
    if isinstance(x, (list, tuple)) and any(isinstance(leaf, Tracer) for leaf in _flat(x)):
        return stack([asarray(v, dtype) for v in x])
    out = np.asarray(x, dtype=None if dtype is None else dtypes.canonicalize(dtype))
    if out.dtype == np.float16 or out.dtype.kind in "OUSc":
        raise TypeError(f"minijit does not support arrays of dtype {out.dtype}")
    dtypes.canonicalize(out.dtype)
    return wrap(out)


array = asarray


def _flat(x):
    if isinstance(x, (list, tuple)):
        for v in x:
            yield from _flat(v)
    else:
        yield x


def _operand(x):
    """Arrays and tracers pass through; Python scalars stay (weakly typed); the rest converts."""
    _reject_masked(x)
    if isinstance(x, np.generic):
        x = np.asarray(x)
    if isinstance(x, np.ndarray) and not isinstance(x, Array) and not is_tracing():
        return wrap(x)  # eagerly, even a no-op (`reshape` to the same shape) returns an Array
    if isinstance(x, (Tracer, np.ndarray)) or isinstance(x, _SCALARS):
        return x
    return asarray(x)


def _aval(x):
    return get_aval(x)


def astype(x, dtype):
    x = _operand_array(x)
    target = dtypes.canonicalize(dtype)
    if _aval(x).dtype == target and not _aval(x).weak_type:
        return x
    return lax.convert_element_type(x, target)


def _convert(x, target: np.dtype, weak: bool):
    """Give `x` dtype `target` (a conversion equation only where one is needed)."""
    if isinstance(x, _SCALARS):
        if weak:  # stays a Python scalar of the right kind, so the result stays weak
            return {"b": bool, "i": int, "u": int, "f": float}[target.kind](x)
        return target.type(x)  # NumPy raises OverflowError if it does not fit, as NumPy does
    aval = _aval(x)
    if aval.dtype == target:
        return x
    return lax.convert_element_type(x, target, weak_type=weak)


def _promoted_type(operands) -> tuple[np.dtype, bool]:
    """`(dtype, weak_type)` that `operands` (already through `_operand`) promote to."""
    return dtypes.result_type(*[(_aval(x).dtype, _aval(x).weak_type) for x in operands])


def _promote(*xs):
    xs = [_operand(x) for x in xs]
    target, weak = _promoted_type(xs)
    return [_convert(x, target, weak) for x in xs]


def result_type(*xs):
    return _promoted_type([_operand(x) for x in xs])[0]


def _shape(x) -> tuple[int, ...]:
    return _aval(x).shape


def broadcast_shapes(*shapes) -> tuple[int, ...]:
    try:
        return tuple(np.broadcast_shapes(*shapes))
    except ValueError:
        where = user_line()  # the learner's line: under jit the traceback is mostly minijit
        raise ValueError(
            "operands could not be broadcast together with shapes "
            + " ".join(str(tuple(s)) for s in shapes)
            + (f"\n  at {where}" if where else "")
        ) from None


def broadcast_to(x, shape):
    x = _operand(x)
    shape = (shape,) if isinstance(shape, int) else tuple(shape)
    old = _shape(x)
    if old == shape:
        return x
    if len(old) > len(shape) or any(
        o not in (1, n) for o, n in zip(old[::-1], shape[::-1])
    ):
        raise ValueError(f"cannot broadcast an array of shape {old} to shape {shape}")
    if isinstance(x, _SCALARS):
        x = np.asarray(x)
    dims = tuple(range(len(shape) - len(old), len(shape)))
    return lax.broadcast_in_dim(x, shape, dims)


def _broadcast(*xs):
    """Broadcast to a common shape; scalars stay scalars (primitives accept them as such)."""
    shape = broadcast_shapes(*[_shape(x) for x in xs])
    return [x if _shape(x) in ((), shape) else broadcast_to(x, shape) for x in xs]


# --------------------------------------------------------------------------- elementwise


def _binary(fn, x, y):
    return fn(*_broadcast(*_promote(x, y)))


def add(x, y):
    return _binary(lax.add, x, y)


def subtract(x, y):
    return _binary(lax.sub, x, y)


def multiply(x, y):
    return _binary(lax.mul, x, y)


def true_divide(x, y):
    xs = [_operand(x), _operand(y)]
    dtype, weak = _promoted_type(xs)
    target = dtypes.float_result(dtype)
    # Straight to the float dtype: through the int one, `uint8_array / 256` would need 256 as
    # a uint8 (an OverflowError, or 0 when 256 is a traced argument, so inf).
    x, y = (_convert(v, target, weak) for v in xs)
    return lax.div(*_broadcast(x, y))


divide = true_divide


def _no_bool(*xs):
    """NumPy's // % ** on two bools compute in int8."""
    if all(_aval(x).dtype == dtypes.bool_ for x in xs):
        return [_convert(x, np.dtype(np.int8), False) for x in xs]
    return list(xs)


def floor_divide(x, y):
    return lax.floor_divide(*_broadcast(*_no_bool(*_promote(x, y))))


def remainder(x, y):
    return lax.rem(*_broadcast(*_no_bool(*_promote(x, y))))


mod = remainder


def power(x, y):
    if isinstance(y, int) and not isinstance(y, bool) and not isinstance(x, _SCALARS):
        x = _operand(x)
        if _aval(x).dtype == dtypes.bool_:
            x = _convert(x, np.dtype(np.int8), False)
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


def _wrap_int(value: int, dtype: np.dtype) -> int:
    """`value` wrapped around into the range of the integer `dtype` (two's complement).

    Like a Python int passed to jit (and as in JAX), it must fit int64 in the first place."""
    dtypes.python_scalar_dtype(value)  # the OverflowError if it does not
    bits = 8 * dtype.itemsize
    value %= 2**bits
    return value - 2**bits if dtype.kind == "i" and value >= 2 ** (bits - 1) else value


def _compare(fn, x, y):
    """A comparison. A Python int that does not fit the other operand's integer dtype wraps
    around into it first, as in JAX: `uint8_array > -1` compares with 255 (all False).
    (NumPy 2 compares such ints exactly; minijit follows JAX, so that the int behaves the same
    closed over as passed to jit, where it is converted as a weakly typed int64.)"""
    xs = [_operand(x), _operand(y)]
    target, weak = _promoted_type(xs)
    if not weak and target.kind in "iu":
        info = np.iinfo(target)
        xs = [_wrap_int(v, target) if type(v) is int and not info.min <= v <= info.max else v
              for v in xs]
    return _binary(fn, *xs)


def equal(x, y):
    return _compare(lax.eq, x, y)


def not_equal(x, y):
    return _compare(lax.ne, x, y)


def less(x, y):
    return _compare(lax.lt, x, y)


def less_equal(x, y):
    return _compare(lax.le, x, y)


def greater(x, y):
    return _compare(lax.gt, x, y)


def greater_equal(x, y):
    return _compare(lax.ge, x, y)


def bitwise_and(x, y):
    return _binary(lax.bitwise_and, x, y)


def bitwise_or(x, y):
    return _binary(lax.bitwise_or, x, y)


def bitwise_xor(x, y):
    return _binary(lax.bitwise_xor, x, y)


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


def logical_and(x, y):
    return lax.bitwise_and(*_broadcast(*_promote(_as_bool(x), _as_bool(y))))


def logical_or(x, y):
    return lax.bitwise_or(*_broadcast(*_promote(_as_bool(x), _as_bool(y))))


def logical_xor(x, y):
    return lax.bitwise_xor(*_broadcast(*_promote(_as_bool(x), _as_bool(y))))


def logical_not(x):
    return lax.bitwise_not(_operand_array(_as_bool(x)))


def _operand_array(x):
    x = _operand(x)
    return np.asarray(x) if isinstance(x, _SCALARS) else x


def negative(x):
    return lax.neg(_operand_array(x))


def positive(x):
    return _operand_array(x)


def absolute(x):
    x = _operand_array(x)
    return x if _aval(x).dtype.kind in "bu" else lax.abs(x)


abs = absolute  # noqa: A001


def sign(x):
    return lax.sign(_operand_array(x))


def floor(x):
    x = _operand_array(x)  # ints and bools are their own floor, and keep their dtype (JAX)
    return x if _aval(x).dtype.kind in "biu" else lax.floor(x)


def ceil(x):
    x = _operand_array(x)
    return x if _aval(x).dtype.kind in "biu" else lax.ceil(x)


def _float_unary(fn):
    def wrapped(x):
        x = _operand_array(x)
        aval = _aval(x)
        return fn(_convert(x, dtypes.float_result(aval.dtype), aval.weak_type))

    wrapped.__name__ = fn.__name__
    wrapped.__doc__ = f"Elementwise {fn.__name__}; ints and bools compute in float64."
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
    return power(_operand_array(x), 2)  # power computes bools in int8, as NumPy does


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


def where(condition, x=None, y=None):
    """`x` where `condition` else `y`; both are computed (see lax.cond to compute one)."""
    if x is None or y is None:
        raise NotImplementedError(
            "mnp.where(condition) with one argument returns data-dependent shapes, which "
            "cannot be traced; use the three-argument form mnp.where(condition, x, y)"
        )
    c = _as_bool(condition)
    x, y = _promote(x, y)
    c, x, y = _broadcast(c, x, y)
    shape = broadcast_shapes(_shape(c), _shape(x), _shape(y))
    x, y = broadcast_to(x, shape), broadcast_to(y, shape)
    return lax.select(_operand_array(c), x, y)


# --------------------------------------------------------------------------- reductions


def _axes(axis, ndim: int) -> tuple[int, ...]:
    if axis is None:
        return tuple(range(ndim))
    axes = (axis,) if isinstance(axis, int) else tuple(axis)
    out = []
    for a in axes:
        a = operator.index(a)
        if not -ndim <= a < ndim:
            raise ValueError(f"axis {a} is out of bounds for array of dimension {ndim}")
        out.append(a % ndim)
    if len(set(out)) != len(out):
        raise ValueError("duplicate value in 'axis'")
    return tuple(sorted(out))


def _strong(x):
    """`x` without its weak type: a reduction's result is strongly typed, as in JAX.

    (Under jit, `mnp.sum(n)` of a Python int argument must be int64 as in JAX, not a weak int
    that a later `+ int32_array` would turn into int32.)"""
    aval = _aval(x)
    return lax.convert_element_type(x, aval.dtype, weak_type=False) if aval.weak_type else x


def _keep(out, shape, axes, keepdims: bool):
    if not keepdims:
        return out
    return reshape(out, tuple(1 if i in axes else d for i, d in enumerate(shape)))


def _sum_dtype(dt: np.dtype) -> np.dtype:
    # NumPy accumulates small ints and bools in the default int (unsigned in uint64).
    if dt.kind == "b" or (dt.kind == "i" and dt.itemsize < 8):
        return dtypes.int_
    if dt.kind == "u" and dt.itemsize < 8:
        return np.dtype(np.uint64)
    return dt


def sum(x, axis=None, dtype=None, keepdims=False):  # noqa: A001
    x = _operand_array(x)
    target = dtypes.canonicalize(dtype) if dtype else _sum_dtype(_aval(x).dtype)
    axes = _axes(axis, x.ndim)
    out = lax.reduce_sum(_strong(_convert(x, target, False)), axes)
    return _keep(out, _shape(x), axes, keepdims)


def prod(x, axis=None, dtype=None, keepdims=False):
    x = _operand_array(x)
    target = dtypes.canonicalize(dtype) if dtype else _sum_dtype(_aval(x).dtype)
    axes = _axes(axis, x.ndim)
    out = lax.reduce_prod(_strong(_convert(x, target, False)), axes)
    return _keep(out, _shape(x), axes, keepdims)


def _no_identity(x, axes, name: str):
    if builtins.any(_shape(x)[a] == 0 for a in axes):
        raise ValueError(f"zero-size array to reduction operation {name} which has no identity")


def max(x, axis=None, keepdims=False):  # noqa: A001
    x = _operand_array(x)
    axes = _axes(axis, x.ndim)
    _no_identity(x, axes, "maximum")
    return _keep(lax.reduce_max(_strong(x), axes), _shape(x), axes, keepdims)


def min(x, axis=None, keepdims=False):  # noqa: A001
    x = _operand_array(x)
    axes = _axes(axis, x.ndim)
    _no_identity(x, axes, "minimum")
    return _keep(lax.reduce_min(_strong(x), axes), _shape(x), axes, keepdims)


amax, amin = max, min


def mean(x, axis=None, dtype=None, keepdims=False):
    x = _operand_array(x)
    target = dtypes.canonicalize(dtype) if dtype else dtypes.float_result(_aval(x).dtype)
    axes = _axes(axis, x.ndim)
    n = math.prod(_shape(x)[a] for a in axes)
    total = sum(x, axis=axes, dtype=target, keepdims=keepdims)
    out = true_divide(total, target.type(n))
    return astype(out, target) if dtype else out  # NumPy casts back to a requested dtype


def var(x, axis=None, ddof=0, keepdims=False):
    x = _operand_array(x)
    axes = _axes(axis, x.ndim)
    centered = subtract(x, mean(x, axis=axes, keepdims=True))
    n = math.prod(_shape(x)[a] for a in axes)
    sq = sum(multiply(centered, centered), axis=axes, keepdims=keepdims)
    return true_divide(sq, _aval(sq).dtype.type(builtins.max(n - ddof, 0)))


def std(x, axis=None, ddof=0, keepdims=False):
    return sqrt(var(x, axis=axis, ddof=ddof, keepdims=keepdims))


def _arg_reduce(fn, x, axis, keepdims):
    x = _operand_array(x)
    if axis is None:
        flat = reshape(x, (-1,))
        out = fn(flat, 0)
        return reshape(out, (1,) * x.ndim) if keepdims else out
    if not isinstance(axis, (int, np.integer)):
        raise TypeError(f"axis must be an integer for argmax/argmin, got {axis!r}")
    (a,) = _axes(axis, x.ndim)
    if _shape(x)[a] == 0:
        raise ValueError("attempt to get argmax of an empty sequence")
    return _keep(fn(x, a), _shape(x), (a,), keepdims)


def argmax(x, axis=None, keepdims=False):
    return _arg_reduce(lax.argmax, x, axis, keepdims)


def argmin(x, axis=None, keepdims=False):
    return _arg_reduce(lax.argmin, x, axis, keepdims)


# --------------------------------------------------------------------------- linear algebra


def dot(a, b):
    a, b = _promote(a, b)
    a, b = _operand_array(a), _operand_array(b)
    if a.ndim == 0 or b.ndim == 0:
        return multiply(a, b)
    return matmul(a, b)


def matmul(a, b):
    a, b = _promote(a, b)
    a, b = _operand_array(a), _operand_array(b)
    if a.ndim == 0 or b.ndim == 0:
        raise ValueError("matmul: input operand does not have enough dimensions (use *)")
    if a.ndim > 2 or b.ndim > 2:
        raise NotImplementedError(
            f"minijit's matmul supports 1-D and 2-D arrays, got shapes {a.shape} and {b.shape}"
        )
    if a.shape[-1] != b.shape[0]:
        raise ValueError(
            f"matmul: shapes {a.shape} and {b.shape} are not aligned: "
            f"{a.shape[-1]} (last axis of the first) != {b.shape[0]} (first axis of the second)"
        )
    dn = (((a.ndim - 1,), (0,)), ((), ()))
    return lax.dot_general(a, b, dn, preferred_element_type=_aval(a).dtype)


# --------------------------------------------------------------------------- shapes


def reshape(x, shape, order="C"):
    if order != "C":
        raise NotImplementedError("minijit's reshape supports order='C' only")
    x = _operand_array(x)
    shape = (shape,) if isinstance(shape, int) else tuple(operator.index(d) for d in shape)
    size = _aval(x).size
    if shape.count(-1) > 1:
        raise ValueError("can only specify one unknown dimension")
    if -1 in shape:
        known = math.prod(d for d in shape if d != -1)
        if known == 0 or size % known:
            raise ValueError(f"cannot reshape array of size {size} into shape {shape}")
        shape = tuple(size // known if d == -1 else d for d in shape)
    if math.prod(shape) != size:
        raise ValueError(f"cannot reshape array of size {size} into shape {shape}")
    return x if _shape(x) == shape else lax.reshape(x, shape)


def ravel(x):
    return reshape(x, (-1,))


def transpose(x, axes=None):
    x = _operand_array(x)
    perm = tuple(reversed(range(x.ndim))) if axes is None else tuple(
        a % x.ndim for a in axes
    )
    return x if perm == tuple(range(x.ndim)) else lax.transpose(x, perm)


def expand_dims(x, axis):
    x = _operand_array(x)
    axes = (axis,) if isinstance(axis, int) else tuple(axis)
    ndim = x.ndim + len(axes)
    axes = sorted(a % ndim for a in axes)
    shape, it = [], iter(_shape(x))
    for i in range(ndim):
        shape.append(1 if i in axes else next(it))
    dims = [i for i in range(ndim) if i not in axes]
    return lax.broadcast_in_dim(x, shape, dims)


def squeeze(x, axis=None):
    x = _operand_array(x)
    if axis is None:
        axes = tuple(i for i, d in enumerate(_shape(x)) if d == 1)
    else:
        axes = _axes(axis, x.ndim)
        for a in axes:
            if _shape(x)[a] != 1:
                raise ValueError("cannot select an axis to squeeze out which has size "
                                 "not equal to one")
    return lax.squeeze(x, axes) if axes else x


def concatenate(arrays: Sequence, axis=0):
    arrays = [_operand_array(a) for a in arrays]
    if not arrays:
        raise ValueError("need at least one array to concatenate")
    if axis is None:
        arrays, axis = [ravel(a) for a in arrays], 0
    arrays = _promote(*arrays)
    ndim = arrays[0].ndim
    if ndim == 0:
        raise ValueError("zero-dimensional arrays cannot be concatenated")
    if builtins.any(a.ndim != ndim for a in arrays):
        raise ValueError("all the input arrays must have the same number of dimensions")
    axis = axis % ndim
    for a in arrays[1:]:
        for k, (d, d0) in enumerate(zip(_shape(a), _shape(arrays[0]))):
            if k != axis and d != d0:
                raise ValueError(
                    "all the input array dimensions except for the concatenation axis must "
                    f"match exactly, but along dimension {k}, the array at index 0 has size "
                    f"{d0} and another array has size {d}")
    return lax.concatenate(arrays, axis)


def stack(arrays: Sequence, axis=0):
    arrays = [_operand_array(a) for a in arrays]
    if not arrays:
        raise ValueError("need at least one array to stack")
    if len({_shape(a) for a in arrays}) > 1:
        raise ValueError("all input arrays must have the same shape")
    axis = axis % (arrays[0].ndim + 1)
    return concatenate([expand_dims(a, axis) for a in arrays], axis)


def pad(x, pad_width, mode="constant", constant_values=0):
    if mode != "constant":
        raise NotImplementedError(f"minijit's pad supports mode='constant' only, not {mode!r}")
    x = _operand_array(x)
    widths = np.broadcast_to(np.asarray(pad_width, dtype=np.int64), (x.ndim, 2))
    if (widths < 0).any():
        raise ValueError("index can't contain negative values")
    value = _convert(_operand(constant_values), _aval(x).dtype, False)
    if _aval(value).shape != ():
        raise NotImplementedError("minijit's pad takes one scalar constant_values")
    config = [(int(lo), int(hi), 0) for lo, hi in widths]
    return lax.pad(x, _operand_array(value), config)


def shape(x) -> tuple[int, ...]:
    return _shape(_operand(x))


def ndim(x) -> int:
    return len(shape(x))


def size(x) -> int:
    return math.prod(shape(x))


# --------------------------------------------------------------------------- creation


def _concrete_int(x, fn: str, what: str) -> int:
    if isinstance(x, Tracer):
        raise ConcretizationTypeError(
            f"mnp.{fn} needs a concrete {what}: shapes must be known while tracing, but it got "
            f"a traced value ({x.aval.str_short()}). Mark the argument it comes from static "
            "(static_argnums / static_argnames), or pass a Python int."
        )
    return operator.index(x)


def _shape_arg(shape, fn: str) -> tuple[int, ...]:
    if isinstance(shape, (int, Tracer, np.integer)):
        shape = (shape,)
    return tuple(_concrete_int(d, fn, "shape") for d in shape)


def full(shape, fill_value, dtype=None):
    shape = _shape_arg(shape, "full")
    fill = _operand(fill_value)
    if dtype is not None:
        fill = _convert(fill, dtypes.canonicalize(dtype), False)
    elif isinstance(fill, _SCALARS):
        fill = _convert(fill, dtypes.python_scalar_dtype(fill), False)
    return broadcast_to(_operand_array(fill), shape) if shape else _operand_array(fill)


def zeros(shape, dtype=None):
    return full(shape, 0, dtypes.canonicalize(dtype or dtypes.float_))


def ones(shape, dtype=None):
    return full(shape, 1, dtypes.canonicalize(dtype or dtypes.float_))


def full_like(x, fill_value, dtype=None):
    return full(shape(x), fill_value, dtype or _aval(_operand(x)).dtype)


def zeros_like(x, dtype=None):
    return full_like(x, 0, dtype)


def ones_like(x, dtype=None):
    return full_like(x, 1, dtype)


def arange(start, stop=None, step=None, dtype=None):
    for v, what in ((start, "start"), (stop, "stop"), (step, "step")):
        if isinstance(v, Tracer):
            _concrete_int(v, "arange", what)
    if stop is None:
        start, stop = 0, start
    step = 1 if step is None else step
    ref = np.arange(start, stop, step)  # NumPy decides length and dtype of the result
    target = dtypes.canonicalize(dtype or ref.dtype)
    ramp = lax.iota(target if target.kind in "iu" else ref.dtype, len(ref))
    if start == 0 and step == 1:
        return astype(ramp, target)
    out = add(multiply(ramp, ref.dtype.type(step)), ref.dtype.type(start))
    return astype(out, target)


def linspace(start, stop, num=50, endpoint=True, dtype=None):
    num = _concrete_int(num, "linspace", "num")
    div = (num - 1) if endpoint else num
    start, stop = _promote(start, stop, 0.0)[:2]
    ramp = lax.iota(dtypes.float_, num)
    step = true_divide(subtract(stop, start), builtins.max(div, 1))
    out = add(multiply(ramp, step), start)
    if endpoint and num > 1:
        out = where(equal(ramp, float(num - 1)), broadcast_to(stop, (num,)), out)
    target = dtypes.canonicalize(dtype or dtypes.float_)
    if dtypes.is_int(target):
        out = floor(out)
    return astype(out, target)


def eye(N, M=None, k=0, dtype=None):
    N = _concrete_int(N, "eye", "N")
    M = N if M is None else _concrete_int(M, "eye", "M")
    rows = lax.broadcasted_iota(np.int64, (N, M), 0)
    cols = lax.broadcasted_iota(np.int64, (N, M), 1)
    return astype(equal(add(rows, k), cols), dtype or dtypes.float_)


# --------------------------------------------------------------------------- the API's edge

# Parameters that take one array, and the one that takes a sequence of them.
_ARRAY_PARAMETERS = {"x", "y", "a", "b", "condition", "fill_value", "min", "max", "a_min",
                     "a_max", "constant_values"}
_CONVERTERS = {"asarray", "array", "shape", "ndim", "size", "result_type", "broadcast_shapes"}


def _requires_arraylike(fn):
    """`fn`, raising JAX's TypeError when an array argument is a list or a tuple (JAX's
    `check_arraylike`). Implicit conversion hides bugs (`x + [1, 2]` as a shape mistake) and
    costs a copy on every call; `mnp.asarray` is the one place that converts."""
    params = list(inspect.signature(fn).parameters)
    checked = [n for n in params if n in _ARRAY_PARAMETERS]
    sequence = "arrays" in params
    if fn.__name__ in _CONVERTERS or not (checked or sequence):
        return fn
    positions = {params.index(n): k for k, n in enumerate(checked)}

    def reject(arg, position):
        raise TypeError(
            f"{fn.__name__} requires ndarray or scalar arguments, got {type(arg)} at position "
            f"{position}. (Convert it explicitly: mnp.asarray(...).)")

    @functools.wraps(fn)
    def with_arraylike_arguments(*args, **kwargs):
        for i, arg in enumerate(args):
            if type(arg) in (list, tuple) and i in positions:
                reject(arg, positions[i])
        for name, arg in kwargs.items():
            if type(arg) in (list, tuple) and name in checked:
                reject(arg, checked.index(name))
        if sequence:
            arrays = args[0] if args else kwargs.get("arrays", ())
            for k, arg in enumerate(arrays if isinstance(arrays, (list, tuple)) else ()):
                if type(arg) in (list, tuple):
                    reject(arg, k)
        return fn(*args, **kwargs)

    return with_arraylike_arguments


_checked: dict[int, object] = {}  # aliases (`divide = true_divide`) stay one object
for _name, _value in list(globals().items()):
    if (not _name.startswith("_") and inspect.isfunction(_value)
            and _value.__module__ == __name__):
        globals()[_name] = _checked.setdefault(id(_value), _requires_arraylike(_value))

# Keep last: every public function above becomes an API boundary, so an error raised inside
# one shows the learner's frames only (errors.api_boundary).
api_boundaries(globals())
