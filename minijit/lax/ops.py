"""One thin, strict wrapper per primitive, as in `jax.lax` (chapter 03).

These functions do no promotion and no broadcasting: dtypes must already agree and shapes must
be equal (or scalar). `minijit.numpy` builds the forgiving NumPy-style API on top of them, and
the control flow of `control_flow/` (chapter 05) is written with them.
"""

from __future__ import annotations

import builtins  # this module defines its own `max` and `min`, as `jax.lax` does
from collections.abc import Sequence

import numpy as np

from minijit import dtypes
from minijit import primitives as P
from minijit.core import bind
from minijit.errors import api_boundaries as _api_boundaries  # private: not in __all__


def neg(x):
    return bind(P.neg_p, x)


def abs(x):  # noqa: A001 - the name JAX uses
    return bind(P.abs_p, x)


def sign(x):
    return bind(P.sign_p, x)


def floor(x):
    return bind(P.floor_p, x)


def ceil(x):
    return bind(P.ceil_p, x)


def exp(x):
    return bind(P.exp_p, x)


def log(x):
    return bind(P.log_p, x)


def log1p(x):
    return bind(P.log1p_p, x)


def expm1(x):
    return bind(P.expm1_p, x)


def sin(x):
    return bind(P.sin_p, x)


def cos(x):
    return bind(P.cos_p, x)


def tan(x):
    return bind(P.tan_p, x)


def tanh(x):
    return bind(P.tanh_p, x)


def logistic(x):
    """The logistic sigmoid 1 / (1 + exp(-x)), floats only (`jax.nn.sigmoid` binds it)."""
    return bind(P.logistic_p, x)


def erf(x):
    """The error function 2/sqrt(pi) * integral of exp(-t**2) from 0 to x, floats only
    (`jax.scipy.special.erf` binds it)."""
    return bind(P.erf_p, x)


def sqrt(x):
    return bind(P.sqrt_p, x)


def is_finite(x):
    return bind(P.is_finite_p, x)


def bitwise_not(x):
    return bind(P.not_p, x)


def add(x, y):
    return bind(P.add_p, x, y)


def sub(x, y):
    return bind(P.sub_p, x, y)


def mul(x, y):
    return bind(P.mul_p, x, y)


def atan2(x, y):
    return bind(P.atan2_p, x, y)


def div(x, y):
    """True division for floats; for ints, rounding toward zero, as JAX's (`div(-7, 2)` is
    -3; `x / 0` is -1)."""
    return bind(P.div_p, x, y)


def rem(x, y):
    """C's remainder, as JAX's: the sign of the dividend (`rem(-7, 3)` is -1)."""
    return bind(P.rem_p, x, y)


# minijit's own: NumPy's `//` and `%` as single primitives (JAX composes them from div, rem
# and selects), so that the jaxprs of `x // y` and `x % y` stay one equation each.


def floor_divide(x, y):
    return bind(P.floor_divide_p, x, y)


def remainder(x, y):
    """NumPy's and Python's %: the sign of the divisor (`remainder(-7, 3)` is 2)."""
    return bind(P.remainder_p, x, y)


def pow(x, y):  # noqa: A001
    return bind(P.pow_p, x, y)


def integer_pow(x, y: int):
    return bind(P.integer_pow_p, x, y=int(y))


def max(x, y):  # noqa: A001
    return bind(P.max_p, x, y)


def min(x, y):  # noqa: A001
    return bind(P.min_p, x, y)


def bitwise_and(x, y):
    return bind(P.and_p, x, y)


def bitwise_or(x, y):
    return bind(P.or_p, x, y)


def bitwise_xor(x, y):
    return bind(P.xor_p, x, y)


def shift_left(x, y):
    """`x << y` on ints of one dtype; as in JAX (XLA), an amount of at least the bit width,
    or a negative one, shifts every bit out: 0."""
    return bind(P.shift_left_p, x, y)


def shift_right_logical(x, y):
    """`x >> y` with zeros shifted in from the top, signed ints too (`-1 >> 1` on int8 is
    127); an amount of at least the bit width, or a negative one, gives 0, as in JAX."""
    return bind(P.shift_right_logical_p, x, y)


def shift_right_arithmetic(x, y):
    """`x >> y` with copies of the top bit shifted in (unsigned ints too, as in JAX); an
    amount of at least the bit width, or a negative one, leaves only those: -1 or 0."""
    return bind(P.shift_right_arithmetic_p, x, y)


def eq(x, y):
    return bind(P.eq_p, x, y)


def ne(x, y):
    return bind(P.ne_p, x, y)


def lt(x, y):
    return bind(P.lt_p, x, y)


def le(x, y):
    return bind(P.le_p, x, y)


def gt(x, y):
    return bind(P.gt_p, x, y)


def ge(x, y):
    return bind(P.ge_p, x, y)


def clamp(min, x, max):  # noqa: A002 - JAX's names
    """`x` limited to [min, max]: min(max(x, min), max); the bounds are scalars or x's shape."""
    return bind(P.clamp_p, min, x, max)


def select(pred, on_true, on_false):
    """`on_true` where `pred` else `on_false`, elementwise (both are computed)."""
    return bind(P.select_n_p, pred, on_false, on_true)


def select_n(which, *cases):
    return bind(P.select_n_p, which, *cases)


def convert_element_type(x, new_dtype, weak_type: bool = False):
    """`x` in `new_dtype`, as XLA converts (so JAX): float to int truncates toward 0 and
    saturates (NaN is 0, -1.0 to uint8 is 0, 1e10 to int32 is int32_max); int to a narrower
    int wraps; to bool is `x != 0`; float64 to float32 rounds to nearest (beyond: inf)."""
    return bind(P.convert_element_type_p, x, new_dtype=dtypes.canonicalize(new_dtype),
                weak_type=weak_type)


def reduce_sum(x, axes: Sequence[int]):
    return bind(P.reduce_sum_p, x, axes=tuple(axes))


def reduce_prod(x, axes: Sequence[int]):
    return bind(P.reduce_prod_p, x, axes=tuple(axes))


def reduce_max(x, axes: Sequence[int]):
    return bind(P.reduce_max_p, x, axes=tuple(axes))


def reduce_min(x, axes: Sequence[int]):
    return bind(P.reduce_min_p, x, axes=tuple(axes))


def argmax(x, axis: int, index_dtype=np.int64):
    return bind(P.argmax_p, x, axes=(axis,), index_dtype=dtypes.canonicalize(index_dtype))


def argmin(x, axis: int, index_dtype=np.int64):
    return bind(P.argmin_p, x, axes=(axis,), index_dtype=dtypes.canonicalize(index_dtype))


def dot_general(lhs, rhs, dimension_numbers, preferred_element_type=None):
    (lc, rc), (lb, rb) = dimension_numbers
    dn = ((tuple(lc), tuple(rc)), (tuple(lb), tuple(rb)))
    out_dtype = preferred_element_type or np.result_type(lhs.dtype, rhs.dtype)
    return bind(P.dot_general_p, lhs, rhs, dimension_numbers=dn,
                preferred_element_type=dtypes.canonicalize(out_dtype))


def reshape(x, new_sizes: Sequence[int]):
    return bind(P.reshape_p, x, new_sizes=tuple(int(d) for d in new_sizes))


def transpose(x, permutation: Sequence[int]):
    return bind(P.transpose_p, x, permutation=tuple(permutation))


def broadcast_in_dim(x, shape: Sequence[int], broadcast_dimensions: Sequence[int]):
    return bind(P.broadcast_in_dim_p, x, shape=tuple(int(d) for d in shape),
                broadcast_dimensions=tuple(broadcast_dimensions))


def squeeze(x, dimensions: Sequence[int]):
    return bind(P.squeeze_p, x, dimensions=tuple(dimensions))


def concatenate(operands: Sequence, dimension: int):
    return bind(P.concatenate_p, *operands, dimension=int(dimension))


def pad(x, padding_value, padding_config):
    """`x` with `padding_value` added: for each axis `(lo, hi, interior)` elements before,
    after and between its elements. As in JAX, a negative `lo` or `hi` removes that many
    elements from that end of the padded axis. The `pad` primitive pads by amounts of zero
    or more, so that removal is a `slice` of its result (where JAX's jaxpr has one `pad`)."""
    config = tuple(tuple(int(v) for v in c) for c in padding_config)
    if all(len(c) != 3 or c[0] >= 0 and c[1] >= 0 for c in config):
        return bind(P.pad_p, x, padding_value, padding_config=config)
    padded = bind(P.pad_p, x, padding_value, padding_config=tuple(
        (builtins.max(lo, 0), builtins.max(hi, 0), i) for lo, hi, i in config))
    starts = [builtins.max(-lo, 0) for lo, _, _ in config]
    limits = [n - builtins.max(-hi, 0) for n, (_, hi, _) in zip(padded.shape, config)]
    if any(stop < start for start, stop in zip(starts, limits)):
        shape = tuple(stop - start for start, stop in zip(starts, limits))
        operand = tuple(x.shape) if hasattr(x, "shape") else np.shape(x)
        raise ValueError(f"Dimension size after padding is not at least 0, got result shape "
                         f"{shape}, for padding_config {config} and operand shape {operand}")
    return slice(padded, starts, limits)


def slice(x, start_indices, limit_indices, strides=None):  # noqa: A001
    return bind(P.slice_p, x, start_indices=tuple(start_indices),
                limit_indices=tuple(limit_indices),
                strides=None if strides is None else tuple(strides))


def rev(x, dimensions: Sequence[int]):
    return bind(P.rev_p, x, dimensions=tuple(dimensions))


def dynamic_slice(x, start_indices: Sequence, slice_sizes: Sequence[int], *,
                  allow_negative_indices: bool | Sequence[bool] = True):
    """The window of `x` of shape `slice_sizes` at `start_indices` (ints or integer scalars,
    traced or not). A negative start counts from the end, then every start is clamped so the
    window fits: the rule, with JAX's examples, is in `minijit/indexing.py`'s docstring."""
    starts = _dynamic_slice_indices(x, start_indices, allow_negative_indices)
    return bind(P.dynamic_slice_p, x, *starts, slice_sizes=tuple(slice_sizes))


def dynamic_update_slice(x, update, start_indices: Sequence, *,
                         allow_negative_indices: bool | Sequence[bool] = True):
    """`x` with `update` written over the window at `start_indices`, whose starts follow
    `dynamic_slice`'s rule (`minijit/indexing.py`'s docstring)."""
    starts = _dynamic_slice_indices(x, start_indices, allow_negative_indices)
    return bind(P.dynamic_update_slice_p, x, update, *starts)


def _dynamic_slice_indices(x, start_indices: Sequence, allow_negative) -> list:
    """The starts of a `dynamic_slice` or `dynamic_update_slice` of `x`, a negative one
    counted from the end, as JAX's `lax._dynamic_slice_indices` does: an unsigned start as it
    is; a concrete one (an int, a NumPy or eager 0-d array) in Python, `-1` of 4 is `3`; a
    traced one with the equations `lt i 0`, `add i d`, `select_n`, so that neither the
    primitive's impl rule nor its code generation needs to know. Clamping is theirs."""
    shape = tuple(x.shape) if hasattr(x, "shape") else np.shape(x)
    starts = list(start_indices)
    if len(starts) != len(shape):
        return starts  # the primitive's abstract eval says what is wrong
    if isinstance(allow_negative, (bool, np.bool_)):
        allow_negative = [bool(allow_negative)] * len(starts)
    return [_start_index(i, d, allow) for i, d, allow in zip(starts, shape, allow_negative)]


def _start_index(i, d: int, allow_negative: bool):
    if isinstance(i, np.ndarray) and i.ndim == 0:  # a concrete 0-d array is its value
        i = i[()]
    if isinstance(i, (int, np.integer)) and not isinstance(i, (bool, np.bool_)):
        if isinstance(i, np.unsignedinteger):
            return i
        if i < 0 and not allow_negative:
            raise ValueError(f"Index {i} is out of bounds for dimension {d} if "
                             "allow_negative_indices=False")
        k = int(i) + d if i < 0 else int(i)
        if isinstance(i, np.integer):  # keeps its dtype, unless k does not fit in it
            return i.dtype.type(k) if k <= np.iinfo(i.dtype).max else np.int64(k)
        return k
    dtype = getattr(i, "dtype", None)
    if dtype is None or not dtypes.is_int(dtype) or getattr(i, "ndim", 0) != 0:
        return i  # not an integer scalar: the primitive's abstract eval refuses it
    if np.dtype(dtype).kind == "u" or not allow_negative:
        return i  # an unsigned start is never negative; XLA clamps a negative one to 0
    if np.iinfo(dtype).max < d:  # -1 + d would wrap (JAX wraps it): count in int64 instead
        i = convert_element_type(i, np.int64)
        dtype = np.dtype(np.int64)
    negative = lt(i, dtype.type(0))
    # `i + d` in a strong dtype: a weakly typed `i` (a Python int argument) is converted
    # first, as JAX's jaxpr shows.
    strong = convert_element_type(i, dtype) if getattr(i, "weak_type", False) else i
    return select_n(negative, i, add(strong, dtype.type(d)))


def iota(dtype, size: int):
    return bind(P.iota_p, dtype=dtypes.canonicalize(dtype), shape=(int(size),), dimension=0)


def broadcasted_iota(dtype, shape: Sequence[int], dimension: int):
    return bind(P.iota_p, dtype=dtypes.canonicalize(dtype), shape=tuple(shape),
                dimension=int(dimension))


__all__ = [name for name in dir() if not name.startswith("_") and name not in (
    "annotations", "np", "dtypes", "P", "bind", "Sequence")]

# Keep last: every public function becomes an API boundary, so an error raised inside one
# shows the learner's frames only (errors.api_boundary).
_api_boundaries(globals())
