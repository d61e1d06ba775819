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
from minijit.array import wrap
from minijit.core import Tracer
from minijit.numpy._edge import api_edge
from minijit.numpy.ufuncs import (
    add,
    equal,
    greater_equal,
    imag,
    multiply,
    negative,
    not_equal,
    power,
    remainder,
    subtract,
    where,
)
from minijit.numpy.util import (
    _SCALARS,
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
    broadcast_shapes,
    broadcast_to,
)

# --------------------------------------------------------------------------- shapes


def reshape(x, shape, order="C"):
    """`x` with the same elements in `shape` (one axis may be -1). A shape that does not fit
    raises JAX's TypeError, in JAX's words (NumPy raises ValueError)."""
    if order != "C":
        raise NotImplementedError("minijit's reshape supports order='C' only")
    x = _operand_array(x)
    given = shape
    shape = (shape,) if isinstance(shape, int) else tuple(operator.index(d) for d in shape)
    size = _aval(x).size
    wrong = f"cannot reshape array of shape {_shape(x)} (size {size}) into shape {given}"
    if shape.count(-1) > 1:
        raise TypeError(f"can only specify one unknown axis size with a `-1` value, got {given}")
    if -1 in shape:
        known = math.prod(d for d in shape if d != -1)
        if known == 0 or size % known:
            raise TypeError(f"{wrong} because the product of specified axis sizes ({known}) "
                            f"does not evenly divide {size}")
        shape = tuple(size // known if d == -1 else d for d in shape)
    if math.prod(shape) != size:
        raise TypeError(f"{wrong} (size {math.prod(shape)})")
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
    shapes = ", ".join(str(_shape(a)) for a in arrays)
    if any(a.ndim != ndim for a in arrays):  # JAX's TypeError (NumPy's is a ValueError)
        raise TypeError("Cannot concatenate arrays with different numbers of dimensions: got "
                        f"{shapes}.")
    axis = axis % ndim
    if any(d != d0 for a in arrays[1:] for k, (d, d0) in enumerate(zip(_shape(a),
                                                                      _shape(arrays[0])))
           if k != axis):
        raise TypeError("Cannot concatenate arrays with shapes that differ in dimensions other "
                        f"than the one being concatenated: concatenating along dimension "
                        f"{axis} for shapes {shapes}.")
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


def copy(a):
    """`a` as a new array. Arrays are immutable, so a traced one is returned as it is (JAX
    stages a `copy` that changes nothing); an eager one is copied, so that a NumPy view of
    the result shares no memory with `a`."""
    a = _operand_array(a)
    if isinstance(a, Tracer):
        return a
    return wrap(np.array(a), _aval(a).weak_type)


def concat(arrays: Sequence, axis=0):
    """The array API's name for `concatenate`."""
    return concatenate(arrays, axis)


def permute_dims(a, axes):
    """The array API's name for `transpose`."""
    return transpose(a, axes)


def matrix_transpose(x):
    """The last two axes swapped (a stack of matrices, each transposed)."""
    x = _operand_array(x)
    if x.ndim < 2:
        raise ValueError(f"x must be at least two-dimensional for matrix_transpose; got "
                         f"ndim={x.ndim}")
    return swapaxes(x, -1, -2)


def rollaxis(a, axis, start=0):
    """NumPy's older `moveaxis`: `axis` moves to just before position `start`."""
    a = _operand_array(a)
    axis = _axis(axis, a.ndim, "rollaxis")
    start = operator.index(start)
    if start < 0:
        start += a.ndim
    if not 0 <= start <= a.ndim:
        raise np.exceptions.AxisError(f"start={start} must be in [0, {a.ndim}]")
    if axis < start:
        start -= 1
    return a if axis == start else moveaxis(a, axis, start)


def flip(m, axis=None):
    """The elements in reverse order along `axis` (every axis when None)."""
    m = _operand_array(m)
    axes = _axes(axis, m.ndim)
    return lax.rev(m, axes) if axes else m


def fliplr(m):
    m = _operand_array(m)
    if m.ndim < 2:
        raise ValueError(f"fliplr requires an array of at least two dimensions, got {m.ndim}")
    return flip(m, 1)


def flipud(m):
    m = _operand_array(m)
    if m.ndim < 1:
        raise ValueError("flipud requires an array of at least one dimension, got 0")
    return flip(m, 0)


def rot90(m, k=1, axes=(0, 1)):
    """`m` turned by `k` quarter turns from the first of `axes` towards the second."""
    m = _operand_array(m)
    k = operator.index(k) % 4
    if len(axes) != 2:
        raise ValueError("len(axes) must be 2.")
    ax0, ax1 = (_axis(a, m.ndim, "rot90") for a in axes)
    if ax0 == ax1:
        raise ValueError("Axes must be different.")
    if k == 0:
        return m
    if k == 2:
        return flip(flip(m, ax0), ax1)
    perm = list(range(m.ndim))
    perm[ax0], perm[ax1] = perm[ax1], perm[ax0]
    return transpose(flip(m, ax1), perm) if k == 1 else flip(transpose(m, perm), ax1)


def _slice_along(x, axis: int, start: int, stop: int):
    lo, hi = [0] * x.ndim, list(_shape(x))
    lo[axis], hi[axis] = start, stop
    return lax.slice(x, lo, hi)


def roll(a, shift, axis=None):
    """Elements shifted by `shift` along `axis` (the flattened array when None), those that
    leave one end coming back at the other. A traced `shift` works, as in JAX: the window of
    `a` joined to itself that starts at `-shift % n` (a `dynamic_slice`)."""
    a = _operand_array(a)
    if axis is None:
        return reshape(roll(ravel(a), shift, 0), _shape(a))
    shifts = shift if isinstance(shift, (tuple, list)) else (shift,)
    axes = axis if isinstance(axis, (tuple, list)) else (axis,)
    if len(shifts) == 1:
        shifts = shifts * len(axes)
    if len(axes) == 1:
        axes = tuple(axes) * len(shifts)
    if len(shifts) != len(axes):
        raise ValueError("Inconsistent number of shifts and axes")
    for s, ax in zip(shifts, axes):
        ax = _axis(ax, a.ndim, "roll")
        n = _shape(a)[ax]
        if n == 0:
            continue
        if isinstance(s, Tracer):
            starts = [0] * a.ndim
            starts[ax] = remainder(negative(s), n)
            a = lax.dynamic_slice(concatenate([a, a], ax), starts, _shape(a))
            continue
        start = -operator.index(s) % n
        if start:
            a = concatenate([_slice_along(a, ax, start, n), _slice_along(a, ax, 0, start)], ax)
    return a


def _at_least(arys, ndim: int, place):
    out = []
    for x in arys:
        x = _operand_array(x)
        out.append(x if x.ndim >= ndim else reshape(x, place(_shape(x))))
    return out[0] if len(out) == 1 else out


def atleast_1d(*arys):
    return _at_least(arys, 1, lambda s: (1,))


def atleast_2d(*arys):
    return _at_least(arys, 2, lambda s: (1,) * (2 - len(s)) + s)


def atleast_3d(*arys):
    return _at_least(arys, 3, lambda s: {0: (1, 1, 1), 1: (1, *s, 1), 2: (*s, 1)}[len(s)])


def _listed(tup, fn: str) -> list:
    if isinstance(tup, (Tracer, np.ndarray)):
        raise TypeError(f"mnp.{fn} takes a sequence of arrays (a list or a tuple), not one "
                        "array")
    return list(tup)


def hstack(tup, dtype=None):
    arrs = [atleast_1d(a) for a in _listed(tup, "hstack")]
    out = concatenate(arrs, 0 if arrs and arrs[0].ndim == 1 else 1)
    return out if dtype is None else astype(out, dtype)


def vstack(tup, dtype=None):
    out = concatenate([atleast_2d(a) for a in _listed(tup, "vstack")], 0)
    return out if dtype is None else astype(out, dtype)


def dstack(tup, dtype=None):
    out = concatenate([atleast_3d(a) for a in _listed(tup, "dstack")], 2)
    return out if dtype is None else astype(out, dtype)


def column_stack(tup):
    """1-D arrays as the columns of a 2-D one; 2-D arrays joined along their columns."""
    arrs = [_operand_array(a) for a in _listed(tup, "column_stack")]
    arrs = [transpose(atleast_2d(a)) if a.ndim < 2 else a for a in arrs]
    return concatenate(arrs, 1)


def hsplit(ary, indices_or_sections) -> list:
    ary = _operand_array(ary)
    return _split("hsplit", ary, indices_or_sections, 1 if ary.ndim > 1 else 0)


def vsplit(ary, indices_or_sections) -> list:
    ary = _operand_array(ary)
    if ary.ndim < 2:
        raise ValueError("vsplit only works on arrays of 2 or more dimensions")
    return _split("vsplit", ary, indices_or_sections, 0)


def dsplit(ary, indices_or_sections) -> list:
    ary = _operand_array(ary)
    if ary.ndim < 3:
        raise ValueError("dsplit only works on arrays of 3 or more dimensions")
    return _split("dsplit", ary, indices_or_sections, 2)


def unstack(x, axis=0) -> tuple:
    """The slices of `x` along `axis`, each without that axis."""
    x = _operand_array(x)
    if x.ndim == 0:
        raise ValueError("Unstack requires arrays with rank > 0, however a scalar array was "
                         "passed.")
    axis = _axis(axis, x.ndim, "unstack")
    return tuple(lax.squeeze(_slice_along(x, axis, i, i + 1), (axis,))
                 for i in range(_shape(x)[axis]))


def broadcast_arrays(*args) -> list:
    args = [_operand_array(a) for a in args]
    shape = broadcast_shapes(*[_shape(a) for a in args])
    return [broadcast_to(a, shape) for a in args]


def tile(A, reps):
    """`A` repeated `reps` times along each axis (reps lines up with A's last axes)."""
    A = _operand_array(A)
    reps = (reps,) if isinstance(reps, (int, np.integer, Tracer)) else tuple(reps)
    reps = tuple(_concrete_int(r, "tile", "number of repetitions") for r in reps)
    ndim = max(len(reps), A.ndim)
    reps = (1,) * (ndim - len(reps)) + reps
    A = reshape(A, (1,) * (ndim - A.ndim) + _shape(A))
    spread = reshape(A, tuple(d for n in _shape(A) for d in (1, n)))
    grown = broadcast_to(spread, tuple(d for r, n in zip(reps, _shape(A)) for d in (r, n)))
    return reshape(grown, tuple(r * n for r, n in zip(reps, _shape(A))))


def repeat(a, repeats, axis=None, *, total_repeat_length=None):
    """Each element repeated `repeats` times along `axis` (the flattened array when None).
    `repeats` must be concrete (an int, or one int per element), as in JAX without
    `total_repeat_length`; with it, the result is cut or padded (with the last value) to
    that length."""
    a = _operand_array(a)
    if isinstance(repeats, (list, tuple)):  # JAX's rule for array arguments
        raise TypeError(f"repeat requires ndarray or scalar arguments, got {type(repeats)} at "
                        "position 1. (Convert it explicitly: mnp.asarray(...).)")
    if axis is None:
        a, axis = ravel(a), 0
    if isinstance(repeats, Tracer):
        _concrete_int(repeats, "repeat", "repeats (a traced array of repeats needs a gather, "
                                         "which minijit does not have)")
    counts = np.asarray(repeats)
    if counts.dtype.kind not in "iu":
        raise TypeError(f"repeats must be integers, got {counts.dtype}")
    if (counts < 0).any():
        raise ValueError("repeats may not contain negative values.")
    if a.ndim == 0:
        if counts.size != 1:
            raise ValueError("`repeat` with a scalar parameter `a` is only implemented for "
                             "scalar values of the parameter `repeats`.")
        a, axis = reshape(a, (1,)), 0
    axis = _axis(axis, a.ndim, "repeat")
    n = _shape(a)[axis]
    if counts.ndim == 0:
        shape = list(_shape(a))
        wide = reshape(a, tuple(shape[:axis + 1]) + (1,) + tuple(shape[axis + 1:]))
        shape.insert(axis + 1, int(counts))
        out = reshape(broadcast_to(wide, tuple(shape)),
                      tuple(_shape(a)[:axis]) + (n * int(counts),) + tuple(_shape(a)[axis + 1:]))
    else:
        counts = np.broadcast_to(counts.ravel(), (n,))
        pieces = []
        for i, c in enumerate(counts):
            if c:
                row = _slice_along(a, axis, i, i + 1)
                shape = list(_shape(row))
                shape[axis] = int(c)
                pieces.append(broadcast_to(row, tuple(shape)))
        out = concatenate(pieces, axis) if pieces else _slice_along(a, axis, 0, 0)
    if total_repeat_length is None:
        return out
    total = operator.index(total_repeat_length)
    have = _shape(out)[axis]
    if total <= have:
        return _slice_along(out, axis, 0, total)
    last = _slice_along(out, axis, have - 1, have)
    shape = list(_shape(out))
    shape[axis] = total - have
    return concatenate([out, broadcast_to(last, tuple(shape))], axis)


def resize(a, new_shape):
    """`a` flattened, repeated as often as needed, cut to `new_shape`'s size and reshaped
    (all zeros if `a` is empty)."""
    flat = ravel(a)
    new_shape = (new_shape,) if isinstance(new_shape, (int, np.integer)) else tuple(new_shape)
    new_shape = tuple(_concrete_int(d, "resize", "shape") for d in new_shape)
    if any(d < 0 for d in new_shape):
        raise ValueError("all elements of `new_shape` must be non-negative")
    size, n = math.prod(new_shape), _shape(flat)[0]
    if size == 0 or n == 0:
        return broadcast_to(_operand_array(_aval(flat).dtype.type(0)), new_shape)
    return reshape(_slice_along(tile(flat, -(-size // n)), 0, 0, size), new_shape)


def append(arr, values, axis=None):
    arr, values = _operand_array(arr), _operand_array(values)
    if axis is None:
        return concatenate([ravel(arr), ravel(values)], 0)
    return concatenate([arr, values], axis)


def diff(a, n=1, axis=-1, prepend=None, append=None):  # noqa: A002 - NumPy's name
    """The `n`-th difference along `axis`: `a[1:] - a[:-1]`, `n` times (`!=` for bools),
    after joining `prepend` and `append` (a scalar is broadcast to one slice)."""
    a = _operand_array(a)
    n = operator.index(n)
    if n < 0:
        raise ValueError(f"order must be non-negative but got {n}")
    if n == 0:
        return a
    if a.ndim == 0:
        raise ValueError(f"diff requires input that is at least one dimensional; got {a}")
    axis = _axis(axis, a.ndim, "diff")

    def end(extra):
        extra = _operand_array(extra)
        if extra.ndim:
            return extra
        shape = list(_shape(a))
        shape[axis] = 1
        return broadcast_to(extra, tuple(shape))

    parts = ([end(prepend)] if prepend is not None else []) + [a] + (
        [end(append)] if append is not None else [])
    if len(parts) > 1:
        a = concatenate(parts, axis)
    op = not_equal if _aval(a).dtype == dtypes.bool_ else subtract
    for _ in range(n):
        size = _shape(a)[axis]
        a = op(_slice_along(a, axis, 1, size), _slice_along(a, axis, 0, max(size - 1, 0)))
    return a


def ediff1d(ary, to_end=None, to_begin=None):
    """The differences of consecutive elements of `ary` flattened, between `to_begin` and
    `to_end`."""
    flat = ravel(ary)
    n = _shape(flat)[0]
    parts = [subtract(_slice_along(flat, 0, 1, n), _slice_along(flat, 0, 0, max(n - 1, 0)))]
    if to_begin is not None:
        parts.insert(0, ravel(to_begin))
    if to_end is not None:
        parts.append(ravel(to_end))
    return concatenate(parts, 0) if len(parts) > 1 else parts[0]


def diagonal(a, offset=0, axis1=0, axis2=1):
    """The diagonal of `a` over `axis1` and `axis2` (now the last axis), `offset` above the
    main one: a strided slice of the two axes flattened (JAX gathers it)."""
    a = _operand_array(a)
    if a.ndim < 2:
        raise ValueError("diagonal requires an array of at least two dimensions.")
    offset = _concrete_int(offset, "diagonal", "offset")
    i, j = _axis(axis1, a.ndim, "diagonal"), _axis(axis2, a.ndim, "diagonal")
    if i == j:
        raise ValueError("axis1 and axis2 cannot be the same")
    rows, cols = _shape(a)[i], _shape(a)[j]
    a = moveaxis(a, (i, j), (-2, -1))
    batch = _shape(a)[:-2]
    k = max(0, min(rows + min(offset, 0), cols - max(offset, 0)))
    flat = reshape(a, batch + (rows * cols,))
    if k == 0:
        return _slice_along(flat, len(batch), 0, 0)
    start = offset if offset >= 0 else -offset * cols
    lo, hi, strides = [0] * flat.ndim, list(_shape(flat)), [1] * flat.ndim
    lo[-1], hi[-1], strides[-1] = start, start + (k - 1) * (cols + 1) + 1, cols + 1
    return lax.slice(flat, lo, hi, strides)


def _on_diagonal(n: int, m: int, k: int):
    """Booleans: `[i, j]` is on the `k`-th diagonal."""
    rows = lax.broadcasted_iota(np.int64, (n, m), 0)
    cols = lax.broadcasted_iota(np.int64, (n, m), 1)
    return equal(subtract(cols, rows), k)


def diag(v, k=0):
    """The `k`-th diagonal of a 2-D `v`, or a square matrix with a 1-D `v` on it."""
    v = _operand_array(v)
    k = _concrete_int(k, "diag", "k")
    if v.ndim == 2:
        return diagonal(v, k)
    if v.ndim != 1:
        raise ValueError("diag input must be 1d or 2d")
    n = _shape(v)[0] + abs(k)
    padded = lax.pad(v, _operand_array(_aval(v).dtype.type(0)), [(0, abs(k), 0)])
    # [i, j] on the diagonal holds v[i] above the main one (k >= 0), v[j] below it
    spread = lax.broadcast_in_dim(padded, (n, n), (0,) if k >= 0 else (1,))
    return where(_on_diagonal(n, n, k), spread, _aval(v).dtype.type(0))


def diagflat(v, k=0):
    return diag(ravel(v), k)


def _lower(n: int, m: int, k: int):
    """Booleans: `[i, j]` is on or below the `k`-th diagonal (`j <= i + k`)."""
    rows = lax.broadcasted_iota(np.int64, (n, m), 0)
    cols = lax.broadcasted_iota(np.int64, (n, m), 1)
    return greater_equal(add(rows, k), cols)


def tri(N, M=None, k=0, dtype=None):
    """Ones on and below the `k`-th diagonal. Float32 by default, even in 64-bit mode, as
    in JAX."""
    N = _concrete_int(N, "tri", "N")
    M = N if M is None else _concrete_int(M, "tri", "M")
    return astype(_lower(N, M, _concrete_int(k, "tri", "k")), dtype or np.float32)


def tril(m, k=0):
    """`m` with the elements above the `k`-th diagonal zeroed (of its last two axes)."""
    m = _operand_array(m)
    if m.ndim < 2:
        raise ValueError("Argument to jax.numpy.tril must be at least 2D")
    n, cols = _shape(m)[-2:]
    return where(_lower(n, cols, _concrete_int(k, "tril", "k")), m, 0)


def triu(m, k=0):
    """`m` with the elements below the `k`-th diagonal zeroed (of its last two axes)."""
    m = _operand_array(m)
    if m.ndim < 2:
        raise ValueError("Argument to jax.numpy.triu must be at least 2D")
    n, cols = _shape(m)[-2:]
    return where(_lower(n, cols, _concrete_int(k, "triu", "k") - 1), 0, m)


def select(condlist, choicelist, default=0):
    """Where the first true condition's choice is, that choice; elsewhere `default`."""
    if len(condlist) != len(choicelist):
        raise ValueError(f"condlist must have length equal to choicelist ({len(condlist)} "
                         f"vs {len(choicelist)})")
    if len(condlist) == 0:
        raise ValueError("condlist must be non-empty")
    choices = _promote(default, *choicelist)
    out = choices[0]
    for cond, choice in reversed(list(zip(condlist, choices[1:]))):
        out = where(cond, choice, out)
    return out


def vander(x, N=None, increasing=False):
    """Columns of powers of `x`: `x**(N-1), ..., x, 1` (the other way with `increasing`)."""
    x = _operand_array(x)
    if x.ndim != 1:
        raise ValueError("x must be a one-dimensional array")
    N = _shape(x)[0] if N is None else _concrete_int(N, "vander", "N")
    if N < 0:
        raise ValueError("N must be nonnegative")
    dtype = _aval(x).dtype  # the powers count in x's own dtype, as in JAX
    powers = lax.iota(dtype, N)
    if not increasing:
        powers = subtract(dtype.type(N - 1), powers)
    return power(reshape(x, (-1, 1)), reshape(powers, (1, N)))


def polyval(p, x):
    """The polynomial with coefficients `p` (highest power first) at `x`, by Horner's rule,
    one step per coefficient; the result has `x`'s dtype, as in JAX."""
    p, x = _operand_array(p), _operand_array(x)
    shape = broadcast_shapes(_shape(p)[1:], _shape(x))
    y = broadcast_to(_operand_array(_aval(x).dtype.type(0)), shape)
    for i in range(_shape(p)[0]):
        coefficient = lax.squeeze(_slice_along(p, 0, i, i + 1), (0,))
        y = astype(add(multiply(y, x), coefficient), _aval(x).dtype)
    return y


def indices(dimensions, dtype=None, sparse=False):
    """The index of each position of an array of shape `dimensions`, one array per axis
    (stacked into one, unless `sparse`)."""
    dims = tuple(_concrete_int(d, "indices", "dimension") for d in dimensions)
    target = dtypes.canonicalize(dtype or dtypes.int_)
    out = []
    for i, d in enumerate(dims):
        shape = tuple(d if j == i else 1 for j in range(len(dims))) if sparse else dims
        out.append(lax.broadcasted_iota(target, shape, i))
    if sparse:
        return tuple(out)
    return _stack(out, 0) if out else _operand_array(np.zeros((0,), target))


def meshgrid(*xi, copy=True, sparse=False, indexing="xy") -> list:  # noqa: A002
    """Coordinate arrays from 1-D ones; `indexing="xy"` swaps the first two axes
    (Cartesian), `"ij"` does not (matrix)."""
    args = [_operand_array(x) for x in xi]
    if indexing not in ("xy", "ij"):
        raise ValueError(f"Valid values for indexing are 'xy' and 'ij', got {indexing}")
    if any(a.ndim != 1 for a in args):
        raise ValueError("Arguments to jax.numpy.meshgrid must be 1D, got shapes "
                         f"{[_shape(a) for a in args]}")
    if indexing == "xy" and len(args) >= 2:
        args[0], args[1] = args[1], args[0]
    shape = tuple(_shape(a)[0] for a in args)
    out = []
    for i, a in enumerate(args):
        full = tuple(d if j == i else 1 for j, d in enumerate(shape)) if sparse else shape
        out.append(lax.broadcast_in_dim(a, full, (i,)))
    if indexing == "xy" and len(args) >= 2:
        out[0], out[1] = out[1], out[0]
    return out


def isscalar(element) -> bool:
    """True for Python and NumPy scalars and for 0-d arrays (NumPy says False for those;
    JAX says True, since jit turns a scalar into a 0-d array)."""
    if isinstance(element, (*_SCALARS, complex, np.generic)):
        return True
    return isinstance(element, (np.ndarray, Tracer)) and _aval(element).ndim == 0


def iscomplexobj(x) -> bool:
    """False: minijit has no complex dtypes."""
    return not isinstance(x, Tracer) and (isinstance(x, complex) or np.iscomplexobj(x))


def isrealobj(x) -> bool:
    return not iscomplexobj(x)


def isreal(x):
    """All True: minijit's dtypes are real."""
    return equal(imag(x), 0)


def iscomplex(x):
    """All False: minijit's dtypes are real."""
    return not_equal(imag(x), 0)


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


def identity(n, dtype=None):
    return eye(n, dtype=dtype)


# Keep last: every public function above becomes a checked API boundary (see _edge).
api_edge(globals())
