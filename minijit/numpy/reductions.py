"""Reductions (`sum`, `mean`, `var`, `argmax`, `all`, `any`, the `nan*` ones, ...), running
reductions (`cumsum`, `cumprod`), and linear algebra (`dot`, `matmul`, `tensordot`, `kron`,
...), as JAX's `jax/_src/numpy/reductions.py` (which has the reductions; `dot` and the other
products, which sum over an axis too, live in its `lax_numpy.py`).

Invariants, as in NumPy and JAX: `axis` is normalized by `util._axes` (negative axes count
from the end, a duplicate is an error); `keepdims=True` reshapes the result to keep each
reduced axis with size 1; small ints and bools are summed in the default int (`_sum_dtype`);
a reduction's result is never weakly typed (`_strong`). A running reduction keeps its input's
dtype, as JAX's does (NumPy widens small ints), and adds in `lax.associative_scan`'s order:
floats may differ from JAX's (XLA's reduce_window) and NumPy's (left to right) in the last
bits, and a zero sum may lose its sign.
"""

from __future__ import annotations

import builtins  # `sum`, `max` and `min` below shadow the builtins
import math

import numpy as np

from minijit import dtypes, lax
from minijit.numpy._edge import api_edge
from minijit.numpy.lax_numpy import (
    diagonal,
    diff,
    expand_dims,
    moveaxis,
    ravel,
    reshape,
    transpose,
)
from minijit.numpy.ufuncs import (
    _as_bool,
    _float_operands,
    add,
    equal,
    isclose,
    isnan,
    less_equal,
    logical_and,
    logical_not,
    logical_or,
    multiply,
    not_equal,
    sqrt,
    subtract,
    true_divide,
    where,
)
from minijit.numpy.util import (
    _aval,
    _axes,
    _convert,
    _operand,
    _operand_array,
    _promote,
    _shape,
    astype,
    broadcast_shapes,
    broadcast_to,
)

# --------------------------------------------------------------------------- reductions


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


def ptp(x, axis=None, keepdims=False):
    """The range, `max - min` (bools are refused by the subtraction, as in JAX)."""
    return subtract(max(x, axis=axis, keepdims=keepdims), min(x, axis=axis, keepdims=keepdims))


def count_nonzero(x, axis=None, keepdims=False):
    x = _operand_array(x)
    return sum(not_equal(x, _aval(x).dtype.type(0)), axis=axis, dtype=dtypes.int_,
               keepdims=keepdims)


def _truth_reduction(x, axis, keepdims, reduce, identity: bool):
    """`all` (`reduce_min` of the truth values) or `any` (`reduce_max`), as JAX's
    `reduce_and` / `reduce_or`: a reduction over no elements is the identity."""
    x = astype(_operand_array(x), dtypes.bool_)  # NaN is true, as in NumPy and JAX
    shape = _shape(x)
    axes = _axes(axis, x.ndim)
    if builtins.any(shape[a] == 0 for a in axes):
        kept = tuple(d for i, d in enumerate(shape) if i not in axes)
        out = broadcast_to(np.bool_(identity), kept)
    else:
        out = reduce(x, axes)
    return _keep(out, shape, axes, keepdims)


def all(x, axis=None, keepdims=False):  # noqa: A001
    """Whether every element is nonzero; True for no elements."""
    return _truth_reduction(x, axis, keepdims, lax.reduce_min, True)


def any(x, axis=None, keepdims=False):  # noqa: A001
    """Whether some element is nonzero; False for no elements."""
    return _truth_reduction(x, axis, keepdims, lax.reduce_max, False)


def _zero_nans(x, fill):
    """`x` with its NaNs replaced by `fill` (ints and bools have none: `x` itself)."""
    return where(isnan(x), fill, x) if dtypes.is_float(_aval(x).dtype) else x


def _nan_if_all_nan(x, out, axis, keepdims):
    if not dtypes.is_float(_aval(x).dtype):
        return out
    return where(all(isnan(x), axis=axis, keepdims=keepdims), np.nan, out)


def nansum(x, axis=None, dtype=None, keepdims=False):
    x = _operand_array(x)
    return sum(_zero_nans(x, 0), axis=axis, dtype=dtype, keepdims=keepdims)


def nanprod(x, axis=None, dtype=None, keepdims=False):
    x = _operand_array(x)
    return prod(_zero_nans(x, 1), axis=axis, dtype=dtype, keepdims=keepdims)


def nanmax(x, axis=None, keepdims=False):
    """The largest element that is not NaN; NaN where every element is NaN, as in JAX."""
    x = _operand_array(x)
    out = max(_zero_nans(x, -np.inf), axis=axis, keepdims=keepdims)
    return _nan_if_all_nan(x, out, axis, keepdims)


def nanmin(x, axis=None, keepdims=False):
    x = _operand_array(x)
    out = min(_zero_nans(x, np.inf), axis=axis, keepdims=keepdims)
    return _nan_if_all_nan(x, out, axis, keepdims)


def nanmean(x, axis=None, dtype=None, keepdims=False):
    x = _operand_array(x)
    if not dtypes.is_float(_aval(x).dtype):
        return mean(x, axis=axis, dtype=dtype, keepdims=keepdims)
    target = dtypes.canonicalize(dtype) if dtype else _aval(x).dtype
    count = sum(logical_not(isnan(x)), axis=axis, dtype=target, keepdims=keepdims)
    return true_divide(nansum(x, axis=axis, dtype=target, keepdims=keepdims), count)


def nanvar(x, axis=None, ddof=0, keepdims=False):
    x = _operand_array(x)
    if not dtypes.is_float(_aval(x).dtype):
        return var(x, axis=axis, ddof=ddof, keepdims=keepdims)
    centered = where(isnan(x), 0, subtract(x, nanmean(x, axis=axis, keepdims=True)))
    count = subtract(sum(logical_not(isnan(x)), axis=axis, keepdims=keepdims), ddof)
    empty = less_equal(count, 0)
    total = where(empty, np.nan, sum(multiply(centered, centered), axis=axis, keepdims=keepdims))
    return true_divide(total, astype(where(empty, 1, count), _aval(total).dtype))


def nanstd(x, axis=None, ddof=0, keepdims=False):
    return sqrt(nanvar(x, axis=axis, ddof=ddof, keepdims=keepdims))


def average(x, axis=None, weights=None, returned=False, keepdims=False):
    """`mean`, or with `weights` the weighted mean `sum(x * w) / sum(w)`; with `returned`,
    also the sum of the weights (broadcast to the average's shape)."""
    x = _operand_array(x)
    axes = _axes(axis, x.ndim)
    if weights is None:
        (x,) = _float_operands(x)
        avg = mean(x, axis=axis, keepdims=keepdims)
        total = _operand_array(_aval(avg).dtype.type(math.prod(_shape(x)[a] for a in axes)))
    else:
        x, w = _float_operands(x, weights)
        if _shape(w) != _shape(x):
            if axis is None:
                raise ValueError("Axis must be specified when shapes of a and weights differ.")
            if _shape(w) != tuple(_shape(x)[a] for a in axes):
                raise ValueError("Shape of weights must be consistent with shape of a along "
                                 "specified axis.")
            w = reshape(w, tuple(d if i in axes else 1 for i, d in enumerate(_shape(x))))
        total = sum(w, axis=axis, keepdims=keepdims)
        avg = true_divide(sum(multiply(x, w), axis=axis, keepdims=keepdims), total)
    if not returned:
        return avg
    return avg, broadcast_to(total, _shape(avg))


def _nan_arg(fn, x, axis, keepdims, fill):
    x = _operand_array(x)
    if not dtypes.is_float(_aval(x).dtype):
        return fn(x, axis=axis, keepdims=keepdims)
    out = fn(where(isnan(x), fill, x), axis=axis, keepdims=keepdims)
    return where(all(isnan(x), axis=axis, keepdims=keepdims), -1, out)  # -1: all NaN (JAX)


def nanargmax(x, axis=None, keepdims=False):
    return _nan_arg(argmax, x, axis, keepdims, -np.inf)


def nanargmin(x, axis=None, keepdims=False):
    return _nan_arg(argmin, x, axis, keepdims, np.inf)


# --------------------------------------------------------------------------- cumulative


def _cumulative(combine, x, axis, dtype, promote_integers: bool, fill_nan=None):
    """JAX's `_cumulative_reduction`: the running `combine` along `axis` (the whole array
    flattened when `axis` is None), computed by `lax.associative_scan`, as JAX computes its
    `cumsum` primitive on the CPU. Without `dtype` the input's dtype is kept (NumPy widens
    small ints; JAX does not), bools count in the default int; `dtype=bool` counts in the
    default int and then tests for nonzero."""
    scalar = isinstance(_operand(x), (bool, int, float))
    x = _operand_array(x)
    if axis is None or scalar:
        x, axis = reshape(x, (-1,)), 0 if axis is None else axis
    (axis,) = _axes(axis, x.ndim)
    if fill_nan is not None:
        x = _zero_nans(x, fill_nan)
    if dtype is None:
        own = _aval(x).dtype
        result = _sum_dtype(own) if promote_integers or own == dtypes.bool_ else own
        compute = result
    elif np.dtype(dtype) == dtypes.bool_:
        result = dtypes.bool_
        compute = dtypes.int_
        x = _as_bool(x)
    else:
        result = compute = dtypes.canonicalize(dtype)
    out = lax.associative_scan(combine, _convert(x, compute, False), axis=axis)
    return _convert(_strong(out), result, False)


def cumsum(x, axis=None, dtype=None):
    """Running sums along `axis`, in `x`'s dtype (int8 stays int8, as in JAX)."""
    return _cumulative(lax.add, x, axis, dtype, False)


def cumprod(x, axis=None, dtype=None):
    return _cumulative(lax.mul, x, axis, dtype, False)


def nancumsum(x, axis=None, dtype=None):
    return _cumulative(lax.add, x, axis, dtype, False, fill_nan=0)


def nancumprod(x, axis=None, dtype=None):
    return _cumulative(lax.mul, x, axis, dtype, False, fill_nan=1)


def _array_api_cumulative(combine, x, axis, dtype, include_initial: bool, initial: int):
    """`cumulative_sum` / `cumulative_prod`, the array API's: small ints widen as `sum`
    does; `axis` may be left out for a 1-D array only; `include_initial` prepends the
    identity."""
    x = _operand_array(x)
    if x.ndim == 0:
        raise ValueError("The input must be non-scalar to take a cumulative sum, however a "
                         "scalar value or scalar array was given.")
    if axis is None:
        if x.ndim > 1:
            raise ValueError(f"The input array has rank {x.ndim}, however axis was not set "
                             "to an explicit value. The axis argument is only optional for "
                             "one-dimensional arrays.")
        axis = 0
    (axis,) = _axes(axis, x.ndim)
    out = _cumulative(combine, x, axis, dtype, True)
    if not include_initial:
        return out
    first = tuple(1 if i == axis else d for i, d in enumerate(_shape(x)))
    start = broadcast_to(_aval(out).dtype.type(initial), first)
    return lax.concatenate([start, out], axis)


def cumulative_sum(x, axis=None, dtype=None, include_initial=False):
    return _array_api_cumulative(lax.add, x, axis, dtype, include_initial, 0)


def cumulative_prod(x, axis=None, dtype=None, include_initial=False):
    return _array_api_cumulative(lax.mul, x, axis, dtype, include_initial, 1)


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
    for k, operand in enumerate((a, b)):
        if operand.ndim == 0:  # JAX's words; `*` multiplies by a scalar
            raise ValueError(f"matmul input operand {k} must have ndim at least 1, but it "
                             "has ndim 0\n  (to multiply by a scalar, use *)")
    if a.ndim > 2 or b.ndim > 2:
        raise NotImplementedError(
            f"minijit's matmul supports 1-D and 2-D arrays, got shapes {a.shape} and {b.shape}"
        )
    if a.shape[-1] != b.shape[0]:  # JAX's class, TypeError (NumPy's is a ValueError)
        raise TypeError(
            f"matmul: shapes {a.shape} and {b.shape} are not aligned: "
            f"{a.shape[-1]} (last axis of the first) != {b.shape[0]} (first axis of the second)"
        )
    dn = (((a.ndim - 1,), (0,)), ((), ()))
    return lax.dot_general(a, b, dn, preferred_element_type=_aval(a).dtype)


def vdot(a, b):
    """The dot product of `a` and `b` flattened (minijit has no complex numbers to conjugate)."""
    return dot(ravel(a), ravel(b))


def _contract(a, b, a_axes, b_axes):
    a, b = _promote(a, b)
    a, b = _operand_array(a), _operand_array(b)
    a_axes = tuple(i % a.ndim for i in a_axes)
    b_axes = tuple(i % b.ndim for i in b_axes)
    if len(a_axes) != len(b_axes):
        raise ValueError("tensordot requires axes lists to have the same length, got "
                         f"{a_axes} and {b_axes}")
    if [_shape(a)[i] for i in a_axes] != [_shape(b)[j] for j in b_axes]:
        raise TypeError("dot_general requires contracting dimensions to have the same shape, "
                        f"got {tuple(_shape(a)[i] for i in a_axes)} and "
                        f"{tuple(_shape(b)[j] for j in b_axes)}.")
    # As a matrix product, which every backend has: `a` as (free elements, contracted
    # ones), `b` as (contracted, free), then the free axes unfolded (XLA does the same).
    a_free = [i for i in range(a.ndim) if i not in a_axes]
    b_free = [j for j in range(b.ndim) if j not in b_axes]
    k = math.prod(_shape(a)[i] for i in a_axes)
    left = reshape(transpose(a, a_free + list(a_axes)), (-1, k) if k else (
        math.prod(_shape(a)[i] for i in a_free), 0))
    right = reshape(transpose(b, list(b_axes) + b_free), (k, -1) if k else (
        0, math.prod(_shape(b)[j] for j in b_free)))
    out = lax.dot_general(left, right, (((1,), (0,)), ((), ())),
                          preferred_element_type=_aval(a).dtype)
    return reshape(out, tuple(_shape(a)[i] for i in a_free) + tuple(_shape(b)[j] for j in b_free))


def tensordot(a, b, axes=2):
    """Sum of products over `axes`: the last `axes` of `a` with the first of `b` (an int),
    or the given pairs (two sequences); one `dot_general`."""
    a, b = _operand_array(a), _operand_array(b)
    if isinstance(axes, (int, np.integer)):
        n = int(axes)
        if not 0 <= n <= builtins.min(a.ndim, b.ndim):
            raise ValueError(f"Number of tensordot axes (axes={n}) exceeds input ranks "
                             f"({a.ndim} and {b.ndim})")
        a_axes, b_axes = tuple(range(a.ndim - n, a.ndim)), tuple(range(n))
    else:
        a_axes, b_axes = axes
        a_axes = (a_axes,) if isinstance(a_axes, (int, np.integer)) else tuple(a_axes)
        b_axes = (b_axes,) if isinstance(b_axes, (int, np.integer)) else tuple(b_axes)
    return _contract(a, b, a_axes, b_axes)


def inner(a, b):
    """Sum of products over the last axes of `a` and `b` (a scalar multiplies)."""
    a, b = _operand_array(a), _operand_array(b)
    if a.ndim == 0 or b.ndim == 0:
        return multiply(a, b)
    return _contract(a, b, (-1,), (-1,))


def outer(a, b):
    a, b = _operand_array(a), _operand_array(b)
    return multiply(expand_dims(ravel(a), 1), expand_dims(ravel(b), 0))


def vecdot(x, y, axis=-1):
    """Sum of products along `axis` (broadcasting the rest), in the operands' common dtype."""
    x, y = _promote(x, y)
    x, y = _operand_array(x), _operand_array(y)
    out = multiply(x, y)
    return sum(out, axis=axis, dtype=_aval(out).dtype)


def kron(a, b):
    """The Kronecker product: every element of `a` times the whole of `b`, laid out as NumPy
    does (each axis of the result is an axis of `a` times the same axis of `b`)."""
    a, b = _promote(a, b)
    a, b = _operand_array(a), _operand_array(b)
    ndim = builtins.max(a.ndim, b.ndim)
    a = reshape(a, (1,) * (ndim - a.ndim) + _shape(a))
    b = reshape(b, (1,) * (ndim - b.ndim) + _shape(b))
    shape = tuple(i * j for i, j in zip(_shape(a), _shape(b)))
    spread_a = reshape(a, tuple(d for n in _shape(a) for d in (n, 1)))
    spread_b = reshape(b, tuple(d for n in _shape(b) for d in (1, n)))
    return reshape(multiply(spread_a, spread_b), shape)


def trace(x, offset=0, axis1=0, axis2=1, dtype=None):
    """The sum along a diagonal (`diagonal` takes the same `offset` and axes)."""
    return sum(diagonal(x, offset, axis1, axis2), axis=-1, dtype=dtype)


def trapezoid(y, x=None, dx=1.0, axis=-1):
    """The integral of `y` by the trapezoidal rule, at sample points `x` or spacing `dx`
    (JAX's arithmetic: a constant spacing is `dx * (sum(y) - (y[0] + y[-1]) / 2)`)."""
    if x is None:
        (y,) = _float_operands(y)
        step = _operand_array(dx)
        if step.ndim > 0:
            step = moveaxis(reshape(step, (1,) * (y.ndim - step.ndim) + _shape(step)), axis, -1)
    else:
        y, x = _float_operands(y, x)
        step = diff(x) if x.ndim == 1 else moveaxis(diff(x, axis=axis), axis, -1)
    y = moveaxis(y, axis, -1)
    n = _shape(y)[-1]

    def part(v, start, stop):
        lo, hi = [0] * v.ndim, list(_shape(v))
        lo[-1], hi[-1] = start, stop
        return lax.slice(v, lo, hi)

    if step.ndim == 0 or _shape(step)[-1] == 1:
        step = step if step.ndim == 0 else reshape(part(step, 0, 1), _shape(step)[:-1])
        ends = add(reshape(part(y, 0, 1), _shape(y)[:-1]), reshape(part(y, n - 1, n),
                                                                   _shape(y)[:-1]))
        return multiply(step, subtract(sum(y, axis=-1), multiply(0.5, ends)))
    return multiply(0.5, sum(multiply(step, add(part(y, 1, n), part(y, 0, n - 1))), axis=-1))


def allclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    return all(isclose(a, b, rtol=rtol, atol=atol, equal_nan=equal_nan))


def array_equal(a1, a2, equal_nan=False):
    """Whether `a1` and `a2` have one shape and equal elements (NaNs equal with
    `equal_nan`); different shapes are False, not an error."""
    a1, a2 = _operand_array(a1), _operand_array(a2)
    if _shape(a1) != _shape(a2):
        return _operand_array(np.bool_(False))
    same = equal(a1, a2)
    if equal_nan:
        same = logical_or(same, logical_and(isnan(a1), isnan(a2)))
    return all(same)


def array_equiv(a1, a2):
    """Whether `a1` and `a2` broadcast to one shape and are equal there."""
    a1, a2 = _operand_array(a1), _operand_array(a2)
    try:
        broadcast_shapes(_shape(a1), _shape(a2))
    except ValueError:
        return _operand_array(np.bool_(False))
    return all(equal(a1, a2))


def isin(element, test_elements, invert=False):
    """Whether each element of `element` is among `test_elements`: every pair compared,
    O(n * m), which is JAX's way on the CPU for all but large inputs (it sorts those)."""
    element, test_elements = _operand_array(element), _operand_array(test_elements)
    pairs = equal(expand_dims(ravel(element), 1), expand_dims(ravel(test_elements), 0))
    found = reshape(any(pairs, axis=1), _shape(element))
    return logical_not(found) if invert else found


# Keep last: every public function above becomes a checked API boundary (see _edge).
api_edge(globals())
