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
                else:
                    axes.append(_Axis(_clamped(k, d), 1, drop=True))
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
    """`x.at[idx]`: `get`, and the updates `set`, `add`, `multiply` (`mul`), `divide`,
    `power`, `min`, `max`. Each method returns a new array; `x` itself never changes.

    The keywords are JAX's. `mode`: for `get`, reads clamp into bounds (None, "clip",
    "promise_in_bounds") or give `fill_value` out of bounds ("fill"; by default NaN for
    floats, the lowest int for signed ints, the highest for unsigned, True for bools); for
    updates, one out of bounds is dropped (None, "drop") or its index clamped ("clip",
    "promise_in_bounds"). `wrap_negative_indices=False` makes a negative index out of bounds
    instead of counting from the end. `indices_are_sorted` and `unique_indices` are
    accepted and ignored: they are promises that let XLA go faster, and minijit indexes
    with scalars, which are sorted and unique.
    """

    __slots__ = ("array", "index")

    def __init__(self, array, index):
        self.array, self.index = array, index

    @api_boundary
    def get(self, *, mode=None, fill_value=None, wrap_negative_indices=True,
            indices_are_sorted=False, unique_indices=False):
        x = mnp.asarray(self.array)
        _check_mode(mode, ("clip", "promise_in_bounds", "fill"))
        index, ok = _bounded(x.shape, self.index, "read", wrap_negative_indices,
                             want_ok=mode == "fill")
        out = getitem(x, index)
        if mode != "fill" or ok is True:
            return out
        filled = mnp.full_like(out, _default_fill(x.dtype) if fill_value is None else fill_value)
        return mnp.where(ok, out, filled)

    def _update(self, values, how, mode, wrap_negative_indices):
        x = mnp.asarray(self.array)
        _check_mode(mode, ("drop", "clip", "promise_in_bounds"))
        clip = "clip" if mode in ("clip", "promise_in_bounds") else "drop"
        index, _ = _bounded(x.shape, self.index, clip, wrap_negative_indices)
        return index_update(x, index, values, how)

    @api_boundary
    def set(self, values, *, mode=None, wrap_negative_indices=True, indices_are_sorted=False,
            unique_indices=False):
        return self._update(values, "set", mode, wrap_negative_indices)

    @api_boundary
    def add(self, values, *, mode=None, wrap_negative_indices=True, indices_are_sorted=False,
            unique_indices=False):
        return self._update(values, "add", mode, wrap_negative_indices)

    @api_boundary
    def multiply(self, values, *, mode=None, wrap_negative_indices=True,
                 indices_are_sorted=False, unique_indices=False):
        return self._update(values, "multiply", mode, wrap_negative_indices)

    mul = multiply

    @api_boundary
    def min(self, values, *, mode=None, wrap_negative_indices=True, indices_are_sorted=False,
            unique_indices=False):
        return self._update(values, "min", mode, wrap_negative_indices)

    @api_boundary
    def max(self, values, *, mode=None, wrap_negative_indices=True, indices_are_sorted=False,
            unique_indices=False):
        return self._update(values, "max", mode, wrap_negative_indices)

    # divide and power are written as JAX writes them: x op (ones with values multiplied in at
    # idx), so they share multiply's indexing and out-of-bounds rules, and an int x divides
    # into floats as `x / y` does.
    @api_boundary
    def divide(self, values, *, mode=None, wrap_negative_indices=True, indices_are_sorted=False,
               unique_indices=False):
        scale = mnp.ones_like(self.array).at[self.index].multiply(
            values, mode=mode, wrap_negative_indices=wrap_negative_indices)
        return mnp.true_divide(self.array, scale)

    @api_boundary
    def power(self, values, *, mode=None, wrap_negative_indices=True, indices_are_sorted=False,
              unique_indices=False):
        exponent = mnp.ones_like(self.array).at[self.index].multiply(
            values, mode=mode, wrap_negative_indices=wrap_negative_indices)
        return mnp.power(self.array, exponent)


def _check_mode(mode, allowed) -> None:
    if mode is not None and mode not in allowed:
        raise ValueError(f"mode={mode!r} is not one of {', '.join(map(repr, allowed))} here")


def _default_fill(dtype: np.dtype):
    """JAX's fill value for out-of-bounds reads in mode="fill"."""
    if dtype.kind == "f":
        return np.nan
    if dtype.kind == "b":
        return True
    info = np.iinfo(dtype)
    return int(info.min if dtype.kind == "i" else info.max)


def _clamped(k: int, d: int) -> int:
    """A static index into an axis of length `d > 0`, counted from the end when negative and
    then clamped into bounds (JAX's out-of-bounds read: -11 of 10 is -1, then 0)."""
    return min(max(k + d if k < 0 else k, 0), d - 1)


def _bounded(shape, index, mode: str, wrap_negative: bool, want_ok: bool = False):
    """`index` with its integer components (static or traced) made to follow `mode`, and,
    with `want_ok`, whether they were all in bounds (a Python bool, or a traced one; True
    otherwise).

    "read" and "drop" leave an in-bounds index as it is (reads clamp by themselves, and
    `index_update` drops an out-of-bounds update); "clip" clamps each into its axis. Without
    `wrap_negative`, a negative index is out of bounds rather than counted from the end: it
    reads as 0, and "drop" turns it into the axis length, which is dropped. With nothing to
    change or to report, the index is returned as it is, so no equation is staged."""
    if mode != "clip" and wrap_negative and not want_ok:
        return index, True
    parts = list(index) if isinstance(index, tuple) else [index]
    n_real = sum(1 for i in parts if i is not None and i is not Ellipsis)
    dim, ok = 0, True
    for k, i in enumerate(parts):
        if i is None:
            continue
        if i is Ellipsis:
            dim += len(shape) - n_real
            continue
        if dim >= len(shape):
            break  # too many indices: `_parse` says so
        d = shape[dim]
        dim += 1
        if isinstance(i, (bool, np.bool_)) or not isinstance(
                i, (int, np.integer, Tracer)) and not _is_int_scalar_array(i):
            continue  # a slice, or something `_parse` will refuse
        negative_to = d if mode == "drop" else 0
        if isinstance(i, Tracer):
            if i.ndim or not dtypes.is_int(i.dtype):
                continue
            if want_ok:
                lo = -d if wrap_negative else 0
                inside = mnp.logical_and(mnp.greater_equal(i, lo), mnp.less(i, d))
                ok = inside if ok is True else mnp.logical_and(ok, inside)
            if not wrap_negative:
                i = mnp.where(mnp.less(i, 0), negative_to, i)
            if mode == "clip" and d:
                i = mnp.clip(_normalize(i, d), 0, d - 1)
        else:
            i = operator.index(i)
            ok = ok and (-d if wrap_negative else 0) <= i < d
            if not wrap_negative and i < 0:
                i = negative_to
            elif mode == "clip" and d:
                i = _clamped(i, d)
        parts[k] = i
    return (tuple(parts) if isinstance(index, tuple) else parts[0]), ok
