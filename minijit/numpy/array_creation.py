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
from minijit.numpy.ufuncs import (
    absolute,
    add,
    cos,
    equal,
    floor,
    multiply,
    power,
    subtract,
    true_divide,
    where,
)
from minijit.numpy.util import (
    _aval,
    _concrete_int,
    _convert,
    _operand,
    _operand_array,
    _promote,
    _promoted_type,
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


def empty(shape, dtype=None):
    """`zeros`: arrays are immutable, so there is nothing to gain from leaving them unset
    (JAX does the same)."""
    return zeros(shape, dtype)


def empty_like(prototype, dtype=None):
    return zeros_like(prototype, dtype)


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


def logspace(start, stop, num=50, endpoint=True, base=10.0, dtype=None):
    """`base ** linspace(start, stop, num)`: `num` points evenly spaced on a log scale."""
    start, stop = _operand(start), _operand(stop)
    target = dtypes.canonicalize(dtype) if dtype else dtypes.float_result(
        _promoted_type([start, stop])[0])
    compute = dtypes.float_result(target)
    lin = linspace(start, stop, num, endpoint=endpoint, dtype=compute)
    return astype(power(base, lin), target)


# Window functions (JAX's `window_functions.py`): the default float, and ones for M <= 1.


def _window(M, fn: str, formula):
    M = _concrete_int(M, fn, "M")
    if M <= 1:
        return full((max(M, 0),), 1.0, dtypes.float_)
    return formula(lax.iota(dtypes.float_, M), M)


def bartlett(M):
    return _window(M, "bartlett", lambda n, M: subtract(
        1, true_divide(absolute(subtract(add(multiply(2, n), 1), M)), M - 1)))


def blackman(M):
    return _window(M, "blackman", lambda n, M: add(subtract(
        0.42, multiply(0.5, cos(true_divide(multiply(2 * np.pi, n), M - 1)))),
        multiply(0.08, cos(true_divide(multiply(4 * np.pi, n), M - 1)))))


def hamming(M):
    return _window(M, "hamming", lambda n, M: subtract(
        0.54, multiply(0.46, cos(true_divide(multiply(2 * np.pi, n), M - 1)))))


def hanning(M):
    return _window(M, "hanning", lambda n, M: multiply(
        0.5, subtract(1, cos(true_divide(multiply(2 * np.pi, n), M - 1)))))


# Keep last: every public function above becomes a checked API boundary (see _edge).
api_edge(globals())
