"""`x[idx]` and `x.at[idx].set(v)` in terms of slicing primitives (chapter 04).

Eager arrays and tracers index the same way, here (`array_methods.py` attaches `getitem` and
`at` to both). Supported index components: Python ints (and 0-d integer arrays, which are
ints), slices with static bounds (any step), `None`, `...`, and traced integer scalars. A
traced index becomes a `dynamic_slice`. As in JAX, negative indices count from the end, an
out-of-bounds read clamps into bounds (`arange(10)[11]` is 9, static index or traced), and an
update at an out-of-bounds index is dropped. Updates build a new array with
`dynamic_update_slice`: `x` itself never changes.

Eagerly, and only eagerly, an index of another kind (a boolean mask, an integer array) is
NumPy's (`numpy_index`), as JAX allows both outside `jit`.
"""

from __future__ import annotations

import operator
from dataclasses import dataclass

import numpy as np

from minijit import dtypes, errors, lax
from minijit import numpy as mnp
from minijit.core import Tracer
from minijit.errors import api_boundary

_UNSUPPORTED = (
    "minijit supports indexing with ints, slices, None, ... and traced integer scalars; got {}."
    " For a boolean mask use mnp.where(mask, x, 0); for several indices, index one at a time."
)


@dataclass
class _Axis:
    """How one axis of the array is indexed."""

    start: object  # int, or a traced integer scalar
    size: int  # elements kept along this axis
    step: int = 1
    drop: bool = False  # an integer index removes the axis
    dynamic: bool = False


def _is_int_scalar_array(i) -> bool:
    return isinstance(i, np.ndarray) and i.ndim == 0 and dtypes.is_int(i.dtype)


def _parse(shape, index, updating: bool = False) -> tuple[list[_Axis], list[int]]:
    """Per-axis plan, and the positions (in the result) where `None` adds an axis.

    A static out-of-bounds int is clamped into bounds when reading and dropped (an empty
    window) when updating, as in JAX; only an axis of length 0 has nothing to clamp to."""
    index = index if isinstance(index, tuple) else (index,)
    # A concrete 0-d integer array (`np.array(1)`, `mnp.array(1)`) is an int, as in NumPy and
    # JAX, under jit and eagerly alike; operator.index below reads its value.
    index = tuple(i.item() if _is_int_scalar_array(i) else i for i in index)
    for i in index:
        if isinstance(i, Tracer) and i.dtype == np.bool_:  # JAX's error, and the fix
            raise errors.NonConcreteBooleanIndexError(
                f"Array boolean indices must be concrete; got {i.aval.str_short()}: the "
                "result's shape would depend on the mask's values. "
                + _UNSUPPORTED.format("a traced boolean mask"))
        if isinstance(i, (list, np.ndarray)) or (
            isinstance(i, Tracer) and (i.ndim != 0 or not dtypes.is_int(i.dtype))
        ) or isinstance(i, bool):
            raise IndexError(_UNSUPPORTED.format(f"an index of type {type(i).__name__}"))
    n_real = sum(1 for i in index if i is not None and i is not Ellipsis)
    n_ellipsis = sum(1 for i in index if i is Ellipsis)
    if n_ellipsis > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    if n_real > len(shape):
        raise IndexError(f"too many indices for array: array is {len(shape)}-dimensional, "
                         f"but {n_real} were indexed")
    expanded = []
    for i in index:
        if i is Ellipsis:
            expanded += [slice(None)] * (len(shape) - n_real)
        else:
            expanded.append(i)
    if not n_ellipsis:
        expanded += [slice(None)] * (len(shape) - n_real)

    axes, new_axes, out_pos, dim = [], [], 0, 0
    for i in expanded:
        if i is None:
            new_axes.append(out_pos)
            out_pos += 1
            continue
        d = shape[dim]
        if isinstance(i, Tracer):
            axes.append(_Axis(i, 1, drop=True, dynamic=True))
        elif isinstance(i, slice):
            start, stop, step = i.indices(d)
            axes.append(_Axis(start, len(range(start, stop, step)), step))
            out_pos += 1
        else:
            try:
                k = operator.index(i)
            except TypeError:
                raise IndexError(_UNSUPPORTED.format(f"{i!r}")) from None
            if not -d <= k < d:
                if updating:
                    axes.append(_Axis(0, 0, drop=True))
                elif d == 0:
                    raise IndexError(f"index {k} is out of bounds for axis {dim} with size 0")
                else:  # negative counts from the end first: -11 of 10 is -1, clamped to 0
                    axes.append(_Axis(min(max(k + d if k < 0 else k, 0), d - 1), 1, drop=True))
            else:
                axes.append(_Axis(k % d, 1, drop=True))
        dim += 1
    return axes, new_axes


def _wide_enough(i, d: int):
    """`i`, widened to int64 if its dtype cannot hold -d..d (uint8, or int8 with d > 127)."""

    info = np.iinfo(i.dtype)
    return mnp.astype(i, np.int64) if info.min > -d or info.max < d else i


def _normalize(i, d: int):
    """A traced index counts from the end when negative, as in NumPy."""

    i = _wide_enough(i, d)
    return mnp.where(mnp.less(i, 0), mnp.add(i, d), i)


def numpy_index(index) -> bool:
    """Whether `index` has a component only NumPy's indexing takes (a mask, an int array)."""
    for i in index if isinstance(index, tuple) else (index,):
        if isinstance(i, list) or (isinstance(i, np.ndarray) and not _is_int_scalar_array(i)):
            return True
    return False


def getitem(x, index):
    """`x[index]` for a tracer or an eager array, using the primitives of `lax`."""
    shape = tuple(x.shape)
    axes, new_axes = _parse(shape, index)
    # 1. static slicing: reverse axes with negative steps, then one `slice`.
    rev = [k for k, a in enumerate(axes) if a.step < 0]
    if rev:
        x = lax.rev(x, rev)
    starts, limits, strides = [], [], []
    for k, a in enumerate(axes):
        if a.dynamic:
            starts.append(0), limits.append(shape[k]), strides.append(1)
            continue
        step = abs(a.step)
        start = shape[k] - 1 - a.start if a.step < 0 else a.start
        starts.append(start if a.size else 0)
        limits.append(start + (a.size - 1) * step + 1 if a.size else 0)
        strides.append(step)
    if (starts, limits) != ([0] * len(shape), list(shape)) or any(s != 1 for s in strides):
        x = lax.slice(x, starts, limits, None if all(s == 1 for s in strides) else strides)
    # 2. traced integer indices: one dynamic_slice.
    if any(a.dynamic for a in axes):
        cur = tuple(x.shape)
        dyn_starts = [_normalize(a.start, cur[k]) if a.dynamic else 0 for k, a in enumerate(axes)]
        sizes = [1 if a.dynamic else cur[k] for k, a in enumerate(axes)]
        x = lax.dynamic_slice(x, dyn_starts, sizes)
    # 3. drop integer-indexed axes, then add the `None` axes.
    dropped = [k for k, a in enumerate(axes) if a.drop]
    if dropped:
        x = lax.squeeze(x, dropped)
    if new_axes:
            x = mnp.expand_dims(x, new_axes)
    return x


_COMBINE = {"add": "add", "multiply": "multiply", "min": "minimum", "max": "maximum"}


def _strided_update(x, axes: list[_Axis], values, how: str):
    """`x.at[::2, 1:].set(v)` for static indices with steps: spread the update with
    `pad`'s interior padding onto x's shape, and select it where a padded mask is True."""

    shape = tuple(x.shape)
    window = [a.size for a in axes]
    kept = tuple(a.size for a in axes if not a.drop)
    update = mnp.reshape(mnp.astype(mnp.broadcast_to(mnp.asarray(values), kept), x.dtype),
                         window)
    if how != "set":
        current = lax.slice(x, [a.start for a in axes],
                            [a.start + (a.size - 1) * a.step + 1 for a in axes],
                            [a.step for a in axes])
        update = mnp.astype(getattr(mnp, _COMBINE[how])(current, update), x.dtype)
    config = [(a.start, d - (a.start + (a.size - 1) * a.step + 1), a.step - 1)
              for a, d in zip(axes, shape)]
    spread = lax.pad(update, mnp.asarray(x.dtype.type(0)), config)
    mask = lax.pad(mnp.ones(window, bool), mnp.asarray(False), config)
    return lax.select(mask, spread, x)


def index_update(x, index, values, how: str):
    """The array `x` with `x[index]` combined with `values` (`how`: set, add, ...)."""

    x = mnp.asarray(x)
    shape = tuple(x.shape)
    axes, new_axes = _parse(shape, index, updating=True)
    if new_axes or any(a.step < 0 for a in axes):
        raise IndexError(
            "x.at[...] updates support ints, traced ints, slices with positive steps and "
            f"...; got {index!r}"
        )
    if any(not a.dynamic and a.size == 0 for a in axes):
        return x  # an empty slice updates nothing
    if any(a.step > 1 for a in axes):
        return _strided_update(x, axes, values, how)
    window = [a.size for a in axes]
    kept = tuple(a.size for a in axes if not a.drop)
    values = mnp.astype(mnp.broadcast_to(mnp.asarray(values), kept), x.dtype)
    update = mnp.reshape(values, window)
    starts = [_normalize(a.start, d) if a.dynamic else a.start for a, d in zip(axes, shape)]
    dynamic = [(_wide_enough(a.start, d), d) for a, d in zip(axes, shape) if a.dynamic]
    current = lax.dynamic_slice(x, starts, window) if how != "set" or dynamic else None
    if how != "set":
        combine = {"add": mnp.add, "multiply": mnp.multiply, "min": mnp.minimum,
                   "max": mnp.maximum}[how]
        update = mnp.astype(combine(current, update), x.dtype)
    if dynamic:
        # Out-of-bounds updates are dropped: write back what is there instead.
        ok = None
        for i, d in dynamic:
            in_bounds = mnp.logical_and(mnp.greater_equal(i, -d), mnp.less(i, d))
            ok = in_bounds if ok is None else mnp.logical_and(ok, in_bounds)
        update = mnp.where(ok, update, current)
    return lax.dynamic_update_slice(x, update, starts)


# --------------------------------------------------------------------------- x.at[...]


class IndexUpdateHelper:
    """`x.at`: indexing it gives a reference that can `.set`, `.add`, `.get` ..."""

    __slots__ = ("array",)

    def __init__(self, array):
        self.array = array

    def __getitem__(self, index) -> IndexUpdateRef:
        return IndexUpdateRef(self.array, index)

    def __repr__(self) -> str:
        return f"_IndexUpdateHelper({self.array!r})"


class IndexUpdateRef:
    """`x.at[idx]`. Each method returns a new array; `x` itself never changes.

    Updates at out-of-bounds indices are dropped and reads clamp, as in JAX.
    """

    __slots__ = ("array", "index")

    def __init__(self, array, index):
        self.array, self.index = array, index

    @api_boundary
    def get(self):
        return getitem(mnp.asarray(self.array), self.index)

    @api_boundary
    def set(self, values):
        return index_update(self.array, self.index, values, "set")

    @api_boundary
    def add(self, values):
        return index_update(self.array, self.index, values, "add")

    @api_boundary
    def multiply(self, values):
        return index_update(self.array, self.index, values, "multiply")

    mul = multiply

    @api_boundary
    def min(self, values):
        return index_update(self.array, self.index, values, "min")

    @api_boundary
    def max(self, values):
        return index_update(self.array, self.index, values, "max")
