"""Reductions (`sum`, `mean`, `var`, `argmax`, ...) and linear algebra (`dot`, `matmul`), as
JAX's `jax/_src/numpy/reductions.py` (which has the reductions; `dot` and `matmul`, which sum
over an axis too, live in its `lax_numpy.py`).

Invariants, as in NumPy and JAX: `axis` is normalized by `util._axes` (negative axes count
from the end, a duplicate is an error); `keepdims=True` reshapes the result to keep each
reduced axis with size 1; small ints and bools are summed in the default int (`_sum_dtype`);
a reduction's result is never weakly typed (`_strong`).
"""

from __future__ import annotations

import builtins  # `sum`, `max` and `min` below shadow the builtins
import math

import numpy as np

from minijit import dtypes, lax
from minijit.numpy._edge import api_edge
from minijit.numpy.lax_numpy import reshape
from minijit.numpy.ufuncs import multiply, sqrt, subtract, true_divide
from minijit.numpy.util import (
    _aval,
    _axes,
    _convert,
    _operand_array,
    _promote,
    _shape,
    astype,
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


# Keep last: every public function above becomes a checked API boundary (see _edge).
api_edge(globals())
