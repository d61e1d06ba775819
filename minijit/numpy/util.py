"""What an argument becomes: conversion to an operand, dtype promotion, broadcasting.

The modules of functions (`ufuncs`, `lax_numpy`, `reductions`) all build on this one, as JAX's
build on `jax/_src/numpy/util.py`:
- `_operand` turns an argument into an operand: arrays and tracers pass through, Python
  scalars stay Python scalars (weakly typed), anything else converts with `asarray`;
- `_promote` gives operands their common dtype (`dtypes.result_type`, JAX's lattice), with a
  `convert_element_type` equation only where an operand's dtype changes;
- `_broadcast` gives them their common shape, with a `broadcast_in_dim` equation only where
  an operand's shape changes (a scalar stays a scalar: primitives accept one);
- `_axes` normalizes an `axis` argument (for the reductions and `squeeze`), and
  `_concrete_int` a size (a shape, a count), refusing a traced one.
So the primitives in `minijit.lax` stay strict, and a Jaxpr shows every conversion.

`asarray` is the one public function that converts lists and tuples (see `_edge`). It stacks
a list that holds tracers (`_stack`), so stacking lives here, not in `lax_numpy`.
"""

from __future__ import annotations

import operator

import numpy as np

from minijit import dtypes, lax
from minijit.array import Array, wrap
from minijit.core import ShapeDtypeStruct, Tracer, get_aval, is_tracing
from minijit.errors import ConcretizationTypeError, user_line
from minijit.interpret import convert_element_type
from minijit.numpy._edge import api_edge

_SCALARS = (bool, int, float)


def _reject_masked(x) -> None:
    """A masked array would lose its mask in np.asarray: say so instead of dropping it."""
    if isinstance(x, np.ma.MaskedArray):
        where = user_line()
        raise TypeError(
            "an argument of a minijit.numpy function is a masked array (np.ma.MaskedArray); "
            "minijit arrays have no mask (neither do JAX's), and converting it would silently "
            "drop the mask. Pass `x.filled(value)` to choose what the masked entries hold, or "
            "`np.asarray(x)` to use the data underneath." + (f"\n  at {where}" if where else "")
        )


def asarray(x, dtype=None):
    """An array (or tracer) for `x`; nested lists containing tracers are stacked.

    A Python int or float without a `dtype` gives a weakly typed 0-d array, as in JAX
    (`mnp.asarray(2.0) + mnp.float32(1)` is float32); a bool never does, since JAX has no
    weak bool. Everything else (lists, NumPy arrays and scalars, an explicit dtype) is strong.
    """
    _reject_masked(x)
    if isinstance(x, ShapeDtypeStruct):
        raise TypeError(
            f"{x!r} has a shape and a dtype but no data, so minijit.numpy cannot compute with "
            "it; trace a function on it instead: mj.eval_shape(f, x) or mj.jit(f).trace(x)")
    if isinstance(x, (Tracer, Array)):  # an Array keeps its weak type, as in JAX
        return x if dtype is None else astype(x, dtype)
    if dtype is None and isinstance(x, (int, float)) and not isinstance(x, bool):
        # python_scalar_dtype raises for an int beyond int64, as JAX does
        return wrap(np.asarray(x, dtypes.python_scalar_dtype(x)), weak_type=True)
    if isinstance(x, (list, tuple)) and any(isinstance(leaf, Tracer) for leaf in _flat(x)):
        return _stack([asarray(v, dtype) for v in x], 0)
    target = None if dtype is None else dtypes.canonicalize(dtype)
    out = np.asarray(x)
    if target is not None and out.dtype.kind == "f" and target.kind in "iu":
        # XLA's saturating cast, the one `x.astype(target)` makes, rather than NumPy's (which
        # JAX uses here, on host data: int_min for NaN, with a RuntimeWarning): host data
        # and traced data then convert alike.
        out = convert_element_type(out, target)
    elif target is not None:
        out = np.asarray(x, dtype=target)  # as NumPy: `asarray([300], int8)` is an error
    if out.dtype == np.float16 or out.dtype.kind in "OUSc":
        raise TypeError(f"minijit does not support arrays of dtype {out.dtype}")
    dtypes.canonicalize(out.dtype)
    return wrap(out)


array = asarray


def _flat(x):
    if isinstance(x, (list, tuple)):
        for v in x:
            yield from _flat(v)
    else:
        yield x


def _operand(x):
    """Arrays and tracers pass through; Python scalars stay (weakly typed); the rest converts."""
    _reject_masked(x)
    if isinstance(x, np.generic):
        x = np.asarray(x)
    if isinstance(x, np.ndarray) and not isinstance(x, Array) and not is_tracing():
        return wrap(x)  # eagerly, even a no-op (`reshape` to the same shape) returns an Array
    if isinstance(x, (Tracer, np.ndarray)) or isinstance(x, _SCALARS):
        return x
    return asarray(x)


def _operand_array(x):
    """`_operand`, with a Python scalar as a weakly typed 0-d array (for shape functions,
    which keep the weak type: `mnp.reshape(2.0, (1,))` is weak, as in JAX)."""
    x = _operand(x)
    return asarray(x) if isinstance(x, _SCALARS) else x


def _aval(x):
    return get_aval(x)


def astype(x, dtype):
    x = _operand_array(x)
    target = dtypes.canonicalize(dtype)
    if _aval(x).dtype == target and not _aval(x).weak_type:
        return x
    return lax.convert_element_type(x, target)


def _convert(x, target: np.dtype, weak: bool):
    """Give `x` dtype `target` (a conversion equation only where one is needed)."""
    if isinstance(x, _SCALARS):
        if weak:  # stays a Python scalar of the right kind, so the result stays weak
            return {"b": bool, "i": int, "u": int, "f": float}[target.kind](x)
        if isinstance(x, int) and not isinstance(x, bool) and target.kind in "iu":
            # JAX's behaviour for a weak int that does not fit: it wraps around into the
            # target dtype, two's complement (`int8_array + 300` adds 44, `uint8_array > -1`
            # compares with 255), where NumPy raises OverflowError (or compares exactly). It
            # must fit int64 first, as for a Python int passed to jit: else OverflowError.
            return np.asarray(x, dtypes.python_scalar_dtype(x)).astype(target)[()]
        return target.type(x)
    aval = _aval(x)
    if aval.dtype == target:
        return x
    return lax.convert_element_type(x, target, weak_type=weak)


def _promoted_type(operands) -> tuple[np.dtype, bool]:
    """`(dtype, weak_type)` that `operands` (already through `_operand`) promote to."""
    return dtypes.result_type(*[(_aval(x).dtype, _aval(x).weak_type) for x in operands])


def _promote(*xs):
    xs = [_operand(x) for x in xs]
    target, weak = _promoted_type(xs)
    return [_convert(x, target, weak) for x in xs]


def result_type(*xs):
    return _promoted_type([_operand(x) for x in xs])[0]


def promote_types(a, b) -> np.dtype:
    """The dtype two dtypes promote to, on JAX's lattice (`float32` with `int64` is
    float32; NumPy says float64)."""
    return dtypes.result_type((dtypes.canonicalize(a), False), (dtypes.canonicalize(b), False))[0]


def _shape(x) -> tuple[int, ...]:
    return _aval(x).shape


def broadcast_shapes(*shapes, op: str | None = None) -> tuple[int, ...]:
    """The shape `shapes` broadcast to. Shapes that do not broadcast raise JAX's errors:
    from a binary operation (`op`: the name of the primitive JAX reports, `"add"` for
    `x + y`) on operands of one rank, a TypeError, `add got incompatible shapes for
    broadcasting: (3,), (4,).` (JAX's primitive finds it); otherwise (ranks differ, or
    `where`, `mnp.broadcast_shapes`) a ValueError, `Incompatible shapes for broadcasting:
    shapes=[(2, 3), (4,)]` (JAX finds it before any primitive runs). Both name the learner's
    line."""
    try:
        return tuple(np.broadcast_shapes(*shapes))
    except ValueError:
        pass
    shown = [tuple(s) for s in shapes]
    where = user_line()  # the learner's line: under jit the traceback is mostly minijit
    at = f"\n  at {where}" if where else ""
    if op is not None and len({len(s) for s in shown}) == 1:
        raise TypeError(f"{op} got incompatible shapes for broadcasting: "
                        f"{', '.join(map(str, shown))}.{at}") from None
    raise ValueError(f"Incompatible shapes for broadcasting: shapes={shown}{at}") from None


def broadcast_to(x, shape):
    x = _operand(x)
    shape = (shape,) if isinstance(shape, int) else tuple(shape)
    old = _shape(x)
    if old == shape:
        return x
    if len(old) > len(shape) or any(
        o not in (1, n) for o, n in zip(old[::-1], shape[::-1])
    ):
        raise ValueError(f"cannot broadcast an array of shape {old} to shape {shape}")
    if isinstance(x, _SCALARS):
        x = asarray(x)  # weakly typed, and so is the broadcast result, as in JAX
    dims = tuple(range(len(shape) - len(old), len(shape)))
    return lax.broadcast_in_dim(x, shape, dims)


def _broadcast(*xs, op: str | None = None):
    """Broadcast to a common shape; scalars stay scalars (primitives accept them as such).
    `op`: the primitive a failure names (see `broadcast_shapes`)."""
    shape = broadcast_shapes(*[_shape(x) for x in xs], op=op)
    return [x if _shape(x) in ((), shape) else broadcast_to(x, shape) for x in xs]


def _axes(axis, ndim: int) -> tuple[int, ...]:
    if axis is None:
        return tuple(range(ndim))
    axes = (axis,) if isinstance(axis, (int, Tracer)) else tuple(axis)
    out = []
    for a in axes:
        if isinstance(a, Tracer):  # JAX's error for a traced axis
            where = user_line()
            raise ConcretizationTypeError(
                f"Abstract tracer value encountered where concrete value is expected: traced "
                f"array with shape {a.aval.str_short()}. The axis argument must be known "
                "statically: mark the argument it comes from static (static_argnums / "
                "static_argnames), or pass a Python int." + (f"\n  at {where}" if where else ""))
        a = operator.index(a)
        if not -ndim <= a < ndim:
            # NumPy's AxisError is both a ValueError (what JAX raises for most functions) and
            # an IndexError (what it raises for some, such as argmax): either except catches it
            raise np.exceptions.AxisError(a, ndim)
        out.append(a % ndim)
    if len(set(out)) != len(out):
        raise ValueError("duplicate value in 'axis'")
    return tuple(sorted(out))


def _concrete_int(x, fn: str, what: str) -> int:
    """`x` as a Python int; a traced `x` (a shape, a size, a count) is a ConcretizationTypeError
    naming the fix, because a Jaxpr's shapes are static."""
    if isinstance(x, Tracer):
        raise ConcretizationTypeError(
            f"mnp.{fn} needs a concrete {what}: shapes must be known while tracing, but it got "
            f"a traced value ({x.aval.str_short()}). Mark the argument it comes from static "
            "(static_argnums / static_argnames), or pass a Python int."
        )
    return operator.index(x)


def _stack(arrays, axis: int):
    """Arrays of one shape (already through `_operand_array`) joined along a new `axis`: each
    gets a unit axis there (`broadcast_in_dim`), then they promote and concatenate.

    `lax_numpy.stack` is this after its argument checks. It is written here, on `lax` rather
    than with `expand_dims` and `concatenate`, because `asarray` stacks a list that holds
    tracers, and `lax_numpy` converts its arguments with this module: `lax_numpy` builds on
    `util`, never the other way round."""
    if len({_shape(a) for a in arrays}) > 1:
        raise ValueError("all input arrays must have the same shape")
    shape = list(_shape(arrays[0]))
    axis = axis % (len(shape) + 1)
    shape.insert(axis, 1)
    dims = [i for i in range(len(shape)) if i != axis]
    return lax.concatenate(_promote(*[lax.broadcast_in_dim(a, shape, dims) for a in arrays]),
                           axis)


# Keep last: every public function above becomes a checked API boundary (see _edge).
api_edge(globals())
