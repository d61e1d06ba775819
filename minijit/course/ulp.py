"""Distances between floats in ulp (units in the last place): how far a math function's results
are from a reference's, counted in floats of the dtype (chapter 09, section 8, in the
chapter's optional part, measures minijit's own `tanh` against NumPy's with it).

The bits of an IEEE float, read as a signed integer of the same width, grow with the float
for positive floats and shrink as the float grows for negative ones. With the negative ones
mirrored below zero, the integer is in the order of the floats, and the number of floats
between two of them is the difference of their integers.
"""

from __future__ import annotations

import numpy as np

_SIGNED = {4: np.int32, 8: np.int64}  # the integer with a float's width: float32, float64


def ulp_distance(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """How many floats of the dtype lie between `a` and `b`, elementwise (int64): 0 where
    they are equal, -0.0 and 0.0 included; 1 between neighbours. `a` and `b` have one dtype,
    float32 or float64. Exact below 2**63 (for float64: between any two floats of one sign);
    a NaN gives a meaningless count, so compare NaNs apart."""
    a, b = np.asarray(a), np.asarray(b)
    if a.dtype != b.dtype or a.dtype.kind != "f" or a.dtype.itemsize not in _SIGNED:
        raise TypeError(f"ulp_distance needs two float32 or float64 arrays of one dtype, got "
                        f"{a.dtype} and {b.dtype}")
    signed = _SIGNED[a.dtype.itemsize]

    def ordered(v: np.ndarray) -> np.ndarray:
        bits = v.view(signed).astype(np.int64)
        # a negative float's magnitude bits, negated: -0.0 becomes 0, as +0.0 is
        return np.where(bits < 0, -(bits & np.iinfo(signed).max), bits)

    return np.abs(ordered(a) - ordered(b))
