"""Shapes, and the creation functions JAX keeps here: `reshape`, `transpose`, `concatenate`,
`split`, `pad`, ..., and `arange`, `eye` (as in JAX's `jax/_src/numpy/lax_numpy.py`; `full`,
`zeros`, `linspace`, ... are in `array_creation.py`, as in JAX).

Shape functions move elements, they never compute with them (`shape`, `ndim` and `size` only
look): each checks its arguments with NumPy's error messages, then calls a `lax` shape
primitive; `reshape`, `transpose` and `squeeze` return their argument when there is nothing
to do. Joining arrays (`concatenate`, `stack`) promotes them to one dtype first.

`arange` and `eye` need concrete sizes, as in JAX, because a Jaxpr's shapes are static: a
traced bound or `N` is a ConcretizationTypeError (`util._concrete_int`). Their values are
computed with `lax` (`iota`, `broadcasted_iota`) and `ufuncs`, so under `jit` they are
equations of the Jaxpr, not constants.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Sequence

import numpy as np

from minijit import dtypes, lax
from minijit.core import Tracer
from minijit.numpy._edge import api_edge
from minijit.numpy.ufuncs import add, equal, multiply
from minijit.numpy.util import (
    _aval,
    _axes,
    _concrete_int,
    _convert,
    _operand,
    _operand_array,
    _promote,
    _shape,
    _stack,
    astype,
)

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


def _axis(axis, ndim: int, fn: str) -> int:
    """`axis` in [0, ndim); NumPy's AxisError (an IndexError and a ValueError) if it is not."""
    axis = operator.index(axis)
    if not -ndim <= axis < ndim:
        raise np.exceptions.AxisError(f"mnp.{fn}: axis {axis} is out of bounds for array of "
                                      f"dimension {ndim}")
    return axis % ndim


def swapaxes(a, axis1, axis2):
    a = _operand_array(a)
    perm = list(range(a.ndim))
    i, j = _axis(axis1, a.ndim, "swapaxes"), _axis(axis2, a.ndim, "swapaxes")
    perm[i], perm[j] = j, i
    return transpose(a, perm)


def moveaxis(a, source, destination):
    a = _operand_array(a)
    source = [source] if isinstance(source, int) else list(source)
    destination = [destination] if isinstance(destination, int) else list(destination)
    if len(source) != len(destination):
        raise ValueError("Inconsistent number of elements: "
                         f"{len(source)} vs {len(destination)}")
    source = [_axis(s, a.ndim, "moveaxis") for s in source]
    destination = [_axis(d, a.ndim, "moveaxis") for d in destination]
    if len(set(source)) != len(source) or len(set(destination)) != len(destination):
        raise ValueError("mnp.moveaxis: repeated axis in source or destination")
    perm = [i for i in range(a.ndim) if i not in source]
    for d, s in sorted(zip(destination, source)):
        perm.insert(d, s)
    return transpose(a, perm)


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
    if any(a.ndim != ndim for a in arrays):
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
    return _stack(arrays, axis)  # in util, because `asarray` stacks too


def _split(fn: str, ary, indices_or_sections, axis) -> list:
    """The pieces of `ary` along `axis`, one static `lax.slice` each (JAX has a `split`
    primitive; its pieces are these slices)."""
    ary = _operand_array(ary)
    if ary.ndim == 0:
        raise IndexError(f"mnp.{fn} needs an array with at least one axis, got a 0-d array")
    axis = _axis(_concrete_int(axis, fn, "axis"), ary.ndim, fn)
    n = _shape(ary)[axis]
    if isinstance(indices_or_sections, (list, tuple)) or np.ndim(indices_or_sections) > 0:
        cuts = [_concrete_int(i, fn, "split index") for i in indices_or_sections]
        bounds = [0, *cuts, n]
        sizes = [b - a for a, b in zip(bounds, bounds[1:])]
        if any(s < 0 for s in sizes):  # NumPy would give empty pieces; JAX refuses
            raise ValueError(f"Sizes passed to split must be nonnegative, got {sizes}: the "
                             f"indices {cuts} must increase and lie in [0, {n}]")
    else:
        sections = _concrete_int(indices_or_sections, fn, "number of sections")
        part, rest = divmod(n, sections)
        if rest and fn == "split":
            raise ValueError(f"array split does not result in an equal division: rest is "
                             f"{rest} ({n} elements into {sections}; mnp.array_split allows it)")
        sizes = [part + 1] * rest + [part] * (sections - rest)
    pieces, start = [], 0
    for size in sizes:
        lo, hi = [0] * ary.ndim, list(_shape(ary))
        lo[axis], hi[axis] = start, start + size
        pieces.append(lax.slice(ary, lo, hi))
        start += size
    return pieces


def split(ary, indices_or_sections, axis=0) -> list:
    """`ary` cut along `axis` into equal pieces (an int) or at the given indices (a list)."""
    return _split("split", ary, indices_or_sections, axis)


def array_split(ary, indices_or_sections, axis=0) -> list:
    """As `split`, but n elements into k pieces need not divide: the first n % k are longer."""
    return _split("array_split", ary, indices_or_sections, axis)


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


# --------------------------------------------------------------------------- creation (the
# rest is in array_creation.py)


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


def eye(N, M=None, k=0, dtype=None):
    N = _concrete_int(N, "eye", "N")
    M = N if M is None else _concrete_int(M, "eye", "M")
    rows = lax.broadcasted_iota(np.int64, (N, M), 0)
    cols = lax.broadcasted_iota(np.int64, (N, M), 1)
    return astype(equal(add(rows, k), cols), dtype or dtypes.float_)


# Keep last: every public function above becomes a checked API boundary (see _edge).
api_edge(globals())
