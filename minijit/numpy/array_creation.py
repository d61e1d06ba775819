"""Array creation: `full`, `zeros`, `ones`, `full_like`, `zeros_like`, `ones_like`,
`linspace` (as in JAX's `jax/_src/numpy/array_creation.py`; `arange` and `eye` stay in
`lax_numpy.py`, as in JAX).

Creation functions need concrete shapes, as in JAX, because a Jaxpr's shapes are static: a
traced `shape` or `num` is a ConcretizationTypeError (`util._concrete_int`). Their values are
computed with `lax` (`iota`, `broadcast_in_dim`) and `ufuncs`, so under `jit` they are
equations of the Jaxpr, not constants.
"""

from __future__ import annotations

import numpy as np

from minijit import dtypes, lax
from minijit.core import Tracer
from minijit.numpy._edge import api_edge
from minijit.numpy.ufuncs import add, equal, floor, multiply, subtract, true_divide, where
from minijit.numpy.util import (
    _aval,
    _concrete_int,
    _convert,
    _operand,
    _operand_array,
    _promote,
    _shape,
    astype,
    broadcast_to,
)


def _shape_arg(shape, fn: str) -> tuple[int, ...]:
    if isinstance(shape, (int, Tracer, np.integer)):
        shape = (shape,)
    return tuple(_concrete_int(d, fn, "shape") for d in shape)


def full(shape, fill_value, dtype=None):
    """`shape` filled with `fill_value`. Without `dtype`, a Python scalar fill is weakly typed
    and so is the result, as in JAX (`full(3, 2.0) + float32` is float32)."""
    shape = _shape_arg(shape, "full")
    fill = _operand(fill_value)
    if dtype is not None:
        fill = _convert(fill, dtypes.canonicalize(dtype), False)
    fill = _operand_array(fill)
    return broadcast_to(fill, shape) if shape else fill


def zeros(shape, dtype=None):
    return full(shape, 0, dtypes.canonicalize(dtype or dtypes.float_))


def ones(shape, dtype=None):
    return full(shape, 1, dtypes.canonicalize(dtype or dtypes.float_))


def full_like(x, fill_value, dtype=None):
    """Without `dtype`, `x`'s dtype and weak type (`zeros_like(2.0)` is weak, as in JAX)."""
    x = _operand(x)
    if dtype is not None:
        return full(_shape(x), fill_value, dtype)
    a = _aval(x)
    fill = _operand_array(_convert(_operand(fill_value), a.dtype, a.weak_type))
    return broadcast_to(fill, _shape(x)) if _shape(x) else fill


def zeros_like(x, dtype=None):
    return full_like(x, 0, dtype)


def ones_like(x, dtype=None):
    return full_like(x, 1, dtype)


def linspace(start, stop, num=50, endpoint=True, dtype=None):
    num = _concrete_int(num, "linspace", "num")
    div = (num - 1) if endpoint else num
    start, stop = _promote(start, stop, 0.0)[:2]
    ramp = lax.iota(dtypes.float_, num)
    step = true_divide(subtract(stop, start), max(div, 1))
    out = add(multiply(ramp, step), start)
    if endpoint and num > 1:
        out = where(equal(ramp, float(num - 1)), broadcast_to(stop, (num,)), out)
    target = dtypes.canonicalize(dtype or dtypes.float_)
    if dtypes.is_int(target):
        out = floor(out)
    return astype(out, target)



# Keep last: every public function above becomes a checked API boundary (see _edge).
api_edge(globals())
