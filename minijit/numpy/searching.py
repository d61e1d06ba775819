"""Indices of nonzero elements: `nonzero`, `flatnonzero`, `argwhere` (NumPy's "searching"
routines; in JAX they live in `jax/_src/numpy/lax_numpy.py`). `mnp.where(condition)` with
one argument is `nonzero` too (`ufuncs.where` calls it).

How many elements are nonzero depends on the data, but a Jaxpr's shapes are static. So, as in
JAX, the caller says the length: with `size=k` the result always has k indices, the first
ones found (truncated if there are more; padded with `fill_value`, default 0, if fewer).
Without `size`, the count must be concrete: eagerly it is, and minijit computes it; under
`jit` it is a traced value, which is JAX's ConcretizationTypeError naming the fix.

Eager and traced code run the same staged computation, written with `lax` alone (JAX uses a
scatter, which minijit does not have): `ranks` = the running count of nonzeros (a cumulative
sum, `lax.associative_scan`), then slot j holds the number of positions whose rank is <= j,
which is the flat index of the (j+1)-th nonzero, or the length n when there is none (JAX's
padding index too, before `fill_value`). That comparison is a `(size, n)` array: O(size * n)
work, fine for the small `size` that padding is meant for.
"""

from __future__ import annotations

import math
import operator

import numpy as np

from minijit import lax
from minijit.core import Tracer
from minijit.errors import ConcretizationTypeError, user_line
from minijit.numpy._edge import api_edge
from minijit.numpy.util import _aval, _operand_array, _promote, broadcast_to

_INDEX = np.dtype(np.int64)  # JAX's index dtype with jax_enable_x64


def _static_size(count, size, fn: str) -> int:
    """`size`, or else the concrete number of nonzeros; a traced count is JAX's error."""
    if size is not None:
        return operator.index(size)
    if isinstance(count, Tracer):
        where = user_line()
        raise ConcretizationTypeError(
            "Abstract tracer value encountered where concrete value is expected: traced array "
            f"with shape {count.aval.str_short()}\nThe size argument of mnp.{fn} must be "
            f"statically specified to use mnp.{fn} within jit: the number of nonzero elements "
            f"depends on the data. Pass size=k (mnp.{fn}(x, size=k)) for k indices, padded "
            "with fill_value (default 0)." + (f"\n  at {where}" if where else ""))
    return int(count)


def _fill(indices, fill_value, count, size: int, ndim: int):
    """Each index array with its slots from `count` on replaced by its fill value."""
    fills = fill_value if isinstance(fill_value, tuple) else (fill_value,) * ndim
    if len(fills) != ndim or any(np.shape(f) != () for f in fills):
        raise ValueError(f"fill_value must be a scalar or a tuple of length {ndim}; "
                         f"got {fill_value}")
    padding = lax.ge(lax.iota(_INDEX, size), count)
    out = []
    for fill, index in zip(fills, indices):
        fill, index = _promote(fill, index)  # a float fill gives float indices, as in JAX
        out.append(lax.select(padding, broadcast_to(fill, (size,)), index))
    return tuple(out)


def _nonzero(a, size, fill_value, fn: str):
    a = _operand_array(a)
    aval = _aval(a)
    if aval.ndim == 0:
        raise ValueError(f"Calling {fn} on 0d arrays is not allowed. Use "
                         f"mnp.atleast_1d(scalar) or x.reshape(1) first.")
    n = aval.size
    mask = a if aval.dtype == np.bool_ else lax.ne(a, np.zeros((), aval.dtype))
    flat_mask = mask if aval.ndim == 1 else lax.reshape(mask, (n,))
    ones = lax.convert_element_type(flat_mask, _INDEX)
    count = lax.reduce_sum(ones, (0,))
    size = _static_size(count, size, fn)
    if n == 0 or size == 0:  # nothing to find, or no room: JAX returns zeros, unfilled
        return tuple(lax.broadcast_in_dim(np.zeros((), _INDEX), (size,), ()) for _ in aval.shape)
    ranks = lax.associative_scan(lax.add, ones)  # ranks[i]: nonzeros in positions 0..i
    slots = lax.iota(_INDEX, size)
    before = lax.le(lax.broadcast_in_dim(ranks, (size, n), (1,)),
                    lax.broadcast_in_dim(slots, (size, n), (0,)))
    flat = lax.reduce_sum(lax.convert_element_type(before, _INDEX), (1,))
    indices = []
    for k, dim in enumerate(aval.shape):  # unravel in C order; n itself unravels to all zeros
        stride = math.prod(aval.shape[k + 1:])
        i = flat if stride == 1 else lax.div(flat, np.asarray(stride, _INDEX))
        indices.append(lax.rem(i, np.asarray(dim, _INDEX)))
    if fill_value is None:
        return tuple(indices)
    return _fill(indices, fill_value, count, size, aval.ndim)


def nonzero(a, *, size=None, fill_value=None):
    """A tuple of index arrays, one per axis, of the nonzero elements in C order; under `jit`
    `size=` is required (see the module docstring)."""
    return _nonzero(a, size, fill_value, "nonzero")


def flatnonzero(a, *, size=None, fill_value=None):
    """Indices of the nonzero elements of `ravel(a)`."""
    a = _operand_array(a)
    flat = a if _aval(a).ndim == 1 else lax.reshape(a, (_aval(a).size,))
    return _nonzero(flat, size, fill_value, "flatnonzero")[0]


def argwhere(a, *, size=None, fill_value=None):
    """The nonzero indices as rows: shape `(size, a.ndim)`; a 0-d `a` gives `(size, 0)`."""
    a = _operand_array(a)
    ndim = _aval(a).ndim
    indices = _nonzero(a if ndim else lax.reshape(a, (1,)), size, fill_value, "argwhere")
    rows = _aval(indices[0]).shape[0]
    out = lax.concatenate([lax.broadcast_in_dim(i, (rows, 1), (0,)) for i in indices], 1)
    return out if ndim else lax.slice(out, (0, 0), (rows, 0))


# Keep last: every public function above becomes a checked API boundary (see _edge).
api_edge(globals())
