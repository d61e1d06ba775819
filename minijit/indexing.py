"""`x[idx]` and `x.at[idx].set(v)` in terms of slicing primitives (chapter 04), and the rules
of dynamic indices, stated here once for all of minijit.

Eager arrays and tracers index the same way, here (`array_methods.py` attaches `getitem` and
`at` to both). Supported index components: Python ints (and 0-d integer arrays, which are
ints), slices with static bounds (any step), `None`, `...`, and traced integer scalars. A
traced index becomes a `dynamic_slice`. Updates build a new array with
`dynamic_update_slice`: `x` itself never changes.

Eagerly, and only eagerly, an index of another kind (a boolean mask, an integer array) is
NumPy's (`numpy_index`), as JAX allows both outside `jit`.

Dynamic indices: the rules. They are JAX's (0.10.2, with `jax_enable_x64`), and minijit's
eagerly, under `disable_jit`, and under `jit` on both backends, for static and traced
indices alike (tests/test_dynamic_index.py checks them all against JAX). `d` is the length
of the axis.

1. A negative start of `lax.dynamic_slice` or `lax.dynamic_update_slice` counts from the end
   first (JAX's default `allow_negative_indices=True`): `lax/ops.py` does it in Python for a
   static start, and for a traced one records what JAX records (for a weakly typed `b`, a
   Python int argument, `convert_element_type` makes it strong before the `add`),
       c:bool[] = lt b 0:i64[]
       d:i64[] = add b 4:i64[]
       e:i64[] = select_n c b d
   An unsigned start is never negative and is used as it is: a uint64 2**64-1 is a start far
   past the end, not -1.
2. Then the primitive clamps each start so that the window fits, `min(max(start, 0), d -
   size)` (its impl rule in `interpret.py`, its Numba rule in `codegen/array_rules.py`, which
   compares an unsigned start as unsigned). On `arange(4.)` with size 2: start -1 gives
   `[2., 3.]` (-1 counts to 3, clamped to 2), -9 gives `[0., 1.]` (-5, clamped to 0), 9 and
   `np.uint8(255)` give `[2., 3.]`; `dynamic_update_slice(zeros(4), ones(1), (-1,))` writes
   the last element.
3. `x[i]` reads the window of size 1 at `i` by rules 1 and 2: a negative index counts from
   the end, one out of bounds is clamped. `arange(4.)[i]` is 0. for i = -9, 3. for i = -1,
   9 and `np.uint64(2**64 - 1)`; a static index reads the same (statically sliced, `_parse`).
4. `x.at[i].set(v)` (and `add`, `multiply`, `min`, `max`, `divide`, `power`) drops an update
   whose index is out of bounds, as JAX's scatter does (mode FILL_OR_DROP): `-d <= i < d`
   writes (a negative i counting from the end), anything else returns `x` unchanged, so
   `x.at[-9].set(9.)`, `x.at[4].set(9.)` and `x.at[np.uint64(2**64 - 1)].set(9.)` change
   nothing and `x.at[-1].set(9.)` writes the last element. The keywords of `IndexUpdateRef`
   change this: `mode="clip"` clamps the index into bounds, `get(mode="fill")` reads a fill
   value out of bounds, `wrap_negative_indices=False` makes a negative index out of bounds.
5. A slice needs static bounds: `x[i:i + 2]` with a traced `i` is an IndexError, as in JAX;
   the window it means is `lax.dynamic_slice(x, (i,), (2,))`.

Where minijit keeps these rules and JAX 0.10.2 does not (artefacts of its lowering):
- JAX's scatter converts the index of `x.at[i]` updates to int32 first, so an index past the
  int32 range wraps: `x.at[np.uint64(2**63)].set(9.)` writes element 0 and
  `x.at[2**32 + 1].set(9.)` element 1 (with `mode="clip"` too). minijit drops both (rule 4),
  and with `mode="clip"` writes the last element.
- Under `jax.jit`, XLA folds a `dynamic_slice` at a constant unsigned start >= 2**(bits - 1)
  as if it were negative: `dynamic_slice(arange(4.), (np.uint8(255),), (2,))` is `[0., 1.]`
  jitted, `[2., 3.]` eagerly or with the start traced. minijit gives `[2., 3.]` everywhere.
- A traced signed index whose dtype cannot hold `d` (an int8 into 200 elements): JAX adds
  `d` in that dtype, which wraps, so jitted `y[np.int8(-1)]` reads element 0 (eagerly, 199).
  minijit counts in int64 and reads element 199 everywhere.
"""

from __future__ import annotations

import operator
from dataclasses import dataclass

import numpy as np

from minijit import dtypes, errors, lax
from minijit import numpy as mnp
from minijit.core import Tracer
from minijit.errors import api_boundary
from minijit.lax.ops import _dynamic_slice_indices

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
    for pos, i in enumerate(index):
        if isinstance(i, slice) and any(isinstance(b, Tracer) for b in (i.start, i.stop, i.step)):
            raise IndexError(  # JAX's error, and the fix
                f"Slice entries must be static integers. Got {i} at position {pos}. A window "
                "of static size at a traced start is lax.dynamic_slice(x, (i,), (size,)) "
                "(lax.dynamic_update_slice to write one).")
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
                if isinstance(i, str):  # JAX's errors: no index is a string or a float
                    raise TypeError(f"JAX does not support string indexing; got idx={i!r}"
                                    ) from None
                if isinstance(i, (float, np.floating)):
                    raise TypeError("Indexer must have integer or boolean type, got indexer "
                                    f"with type {np.result_type(i)}") from None
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


def _signed_wide_enough(i, d: int):
    """A traced signed index, widened to int64 if its dtype cannot hold -d..d (int8 with
    d > 127); an unsigned one as it is (it is never negative)."""
    info = np.iinfo(i.dtype)
    return mnp.astype(i, np.int64) if i.dtype.kind == "i" and info.max < d else i


def _in_bounds(i, d: int, lowest: int):
    """Whether the traced index `i` is in lowest..d-1 (lowest is -d, or 0 without negative
    indices), compared in `i`'s own dtype: a uint64 2**64-1 is not -1. True (a Python bool)
    when the dtype cannot hold a value out of bounds."""
    info, checks = np.iinfo(i.dtype), []
    if info.min < lowest:
        checks.append(mnp.greater_equal(i, lowest))
    if info.max >= d:
        checks.append(mnp.less(i, d))
    if not checks:
        return True
    return checks[0] if len(checks) == 1 else mnp.logical_and(*checks)


def _clipped(i, d: int):
    """A traced index counted from the end when negative, then clamped into 0..d-1."""
    if i.dtype.kind == "u":
        return mnp.minimum(i, d - 1) if np.iinfo(i.dtype).max >= d else i
    i = _signed_wide_enough(i, d)
    return mnp.clip(mnp.where(mnp.less(i, 0), mnp.add(i, d), i), 0, d - 1)


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
    # 2. traced integer indices: one dynamic_slice (which counts a negative one from the end).
    if any(a.dynamic for a in axes):
        cur = tuple(x.shape)
        dyn_starts = [a.start if a.dynamic else 0 for a in axes]
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
    # The starts, a negative one counted from the end once, for both the read and the write.
    starts = _dynamic_slice_indices(x, [a.start for a in axes], True)
    dynamic = any(a.dynamic for a in axes)
    current = (lax.dynamic_slice(x, starts, window, allow_negative_indices=False)
               if how != "set" or dynamic else None)
    if how != "set":
        combine = {"add": mnp.add, "multiply": mnp.multiply, "min": mnp.minimum,
                   "max": mnp.maximum}[how]
        update = mnp.astype(combine(current, update), x.dtype)
    if dynamic:
        # Out-of-bounds updates are dropped: write back what is there instead.
        ok = True
        for a, d in zip(axes, shape):
            if a.dynamic:
                inside = _in_bounds(a.start, d, -d)
                ok = inside if ok is True else ok if inside is True else mnp.logical_and(
                    ok, inside)
        if ok is not True:
            update = mnp.where(ok, update, current)
    return lax.dynamic_update_slice(x, update, starts, allow_negative_indices=False)


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
    `power`, `min`, `max`. Each method returns a new array; `x` itself never changes. The
    rules for out-of-bounds, negative and unsigned indices are in the module docstring.

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
                inside = _in_bounds(i, d, -d if wrap_negative else 0)
                ok = inside if ok is True else ok if inside is True else mnp.logical_and(
                    ok, inside)
            if not wrap_negative and i.dtype.kind == "i":
                i = _signed_wide_enough(i, d)
                i = mnp.where(mnp.less(i, 0), negative_to, i)
            if mode == "clip" and d:
                i = _clipped(i, d)
        else:
            i = operator.index(i)
            ok = ok and (-d if wrap_negative else 0) <= i < d
            if not wrap_negative and i < 0:
                i = negative_to
            elif mode == "clip" and d:
                i = _clamped(i, d)
        parts[k] = i
    return (tuple(parts) if isinstance(index, tuple) else parts[0]), ok
