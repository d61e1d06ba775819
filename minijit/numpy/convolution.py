"""`convolve` and `correlate` of two 1-D arrays (JAX's `jnp.convolve`/`jnp.correlate`, in its
`jax/_src/numpy/lax_numpy.py`).

JAX lowers both to one `conv_general_dilated`; minijit has no convolution primitive, so this
writes the sliding window with shape primitives and one `dot_general`. Correlating `x`
(padded to length P) with the shorter `y` (length m) is `out[k] = sum_j y[j] * x[k + j]`.
The m windows are the rows of a matrix built without a gather: m + 1 copies of `x` laid end to
end and re-read in rows of P + 1 elements shift each row one further to the left, so row j
starts at `x[j]`. Then `out = y @ windows`: O(m * P) work, as the direct sum is.

Both follow JAX: inputs are promoted to an inexact dtype (ints and bools compute in a float)
unless `preferred_element_type` is given; when `v` is longer than `a` the two swap (for
`correlate` the result is then reversed, as NumPy's is); 'same' has the longer one's length.
"""

from __future__ import annotations

import numpy as np

from minijit import dtypes, lax
from minijit.numpy._edge import api_edge
from minijit.numpy.util import _aval, _convert, _operand_array, _promote, _promoted_type

_MODES = ("full", "same", "valid")


def _inexact(x, y):
    """`x` and `y` in their common dtype, made a float if it is not one (JAX's
    `promote_dtypes_inexact`: float32 for bools and narrow ints, float64 for 64-bit ints)."""
    target, weak = _promoted_type([x, y])
    target = target if dtypes.is_float(target) else dtypes.float_result(target)
    return _convert(x, target, weak), _convert(y, target, weak)


def _windows(x, m: int):
    """The `(m, P - m + 1)` matrix whose row j is `x[j : j + P - m + 1]` (P = len(x) >= m)."""
    p = _aval(x).shape[0]
    copies = lax.reshape(lax.broadcast_in_dim(x, (m + 1, p), (1,)), ((m + 1) * p,))
    # element q of `copies` is x[q % p], so row j of the (m, p + 1) re-reading starts at x[j]
    rows = lax.reshape(lax.slice(copies, (0,), (m * (p + 1),)), (m, p + 1))
    return lax.slice(rows, (0, 0), (m, p - m + 1))


def _conv(a, v, mode: str, op: str, preferred_element_type):
    x, y = _operand_array(a), _operand_array(v)
    if _aval(x).ndim != 1 or _aval(y).ndim != 1:
        raise ValueError(f"{op}() only support 1-dimensional inputs; got shapes "
                         f"{_aval(x).shape} and {_aval(y).shape} (mnp.ravel makes a 1-D array).")
    x, y = _inexact(x, y) if preferred_element_type is None else _promote(x, y)
    x, y = _operand_array(x), _operand_array(y)
    n, m = _aval(x).shape[0], _aval(y).shape[0]
    if n == 0 or m == 0:
        raise ValueError(f"{op}: inputs cannot be empty, got shapes {(n,)} and {(m,)}.")
    reverse_out = False
    if n < m:  # slide the shorter one along the longer one
        x, y, n, m = y, x, m, n
        reverse_out = op == "correlate"
    if op == "convolve":
        y = lax.rev(y, (0,))  # convolving is correlating with the kernel reversed
    if mode not in _MODES:
        raise ValueError(f"mode must be one of {list(_MODES)}, got {mode!r}")
    lo, hi = {"valid": (0, 0), "same": (m // 2, m - m // 2 - 1), "full": (m - 1, m - 1)}[mode]
    if lo or hi:
        x = lax.pad(x, np.zeros((), _aval(x).dtype), ((lo, hi, 0),))
    out_dtype = (dtypes.canonicalize(preferred_element_type) if preferred_element_type
                 is not None else _aval(x).dtype)
    out = lax.dot_general(y, _windows(x, m), (((0,), (0,)), ((), ())),
                          preferred_element_type=out_dtype)
    return lax.rev(out, (0,)) if reverse_out else out


def convolve(a, v, mode="full", *, precision=None, preferred_element_type=None):
    """The discrete convolution `out[k] = sum_j a[j] * v[k - j]` of two 1-D arrays. `mode`:
    'full' (length n + m - 1), 'same' (length max(n, m), centred) or 'valid' (where they
    overlap fully). `precision` is accepted for JAX's signature: on the CPU every float
    product is computed in its own dtype."""
    return _conv(a, v, mode, "convolve", preferred_element_type)


def correlate(a, v, mode="valid", *, precision=None, preferred_element_type=None):
    """The cross-correlation `out[k] = sum_j a[k + j] * v[j]` (NumPy's, with its default mode
    'valid'); see `convolve` for the modes."""
    return _conv(a, v, mode, "correlate", preferred_element_type)


# Keep last: every public function above becomes a checked API boundary (see _edge).
api_edge(globals())
