"""The checks that a primitive's rules agree with each other, one primitive at a time.

tests/test_rules.py holds every primitive of minijit to them; a primitive made elsewhere (the
course's ex10_new_primitive, which adds `logaddexp`) goes through the same functions, so
"a full primitive" means the same thing for both. Each function raises AssertionError (or
pytest's failure) with a message that names the primitive and what disagrees.
"""

from __future__ import annotations

import numpy as np
import pytest

from minijit import dtypes
from minijit.core import ShapedArray, abstract_eval_rules, impl_rules


def sample(dtype: np.dtype, shape=(2, 3), seed=0) -> np.ndarray:
    """Values every primitive accepts: positive (log, sqrt), nonzero (div, %), small (pow)."""
    rng = np.random.default_rng(seed)
    if dtype.kind == "b":
        return rng.random(shape) < 0.5
    if dtype.kind in "iu":
        return rng.integers(1, 5, shape).astype(dtype)
    return rng.uniform(0.5, 1.5, shape).astype(dtype)


def accepts(prim, avals, params) -> list[ShapedArray] | None:
    """The shape rule's answer, or None where it refuses the operands (a TypeError)."""
    try:
        return abstract_eval_rules[prim](*avals, **params)
    except TypeError:
        return None


def check_impl_matches_abstract_eval(prim, n_args: int, params=None) -> int:
    """For every dtype the shape rule accepts (equal shapes, and for two operands a rank-0 one
    on either side), the impl gives exactly that shape and dtype. Returns how many operand
    types were accepted; none at all fails."""
    params = params or {}
    accepted = 0
    for dt in dtypes.SUPPORTED:
        for shapes in [[(2, 3)] * n_args] + ([[(2, 3), ()], [(), (2, 3)]] if n_args == 2 else []):
            xs = [sample(dt, s, seed=k) for k, s in enumerate(shapes)]
            out_avals = accepts(prim, [ShapedArray(x.shape, x.dtype) for x in xs], params)
            if out_avals is None:
                continue
            accepted += 1
            with np.errstate(all="ignore"):
                (out,) = impl_rules[prim](*xs, **params)
            out = np.asarray(out)
            (aval,) = out_avals
            assert (out.shape, out.dtype) == (aval.shape, aval.dtype), (
                f"{prim.name} on {dt.name}{shapes}: impl gives {out.dtype}{out.shape}, "
                f"abstract eval says {aval}"
            )
    assert accepted, f"{prim.name} accepts no dtype at all"
    return accepted


def check_binary_rejects_mixed_dtypes_and_shapes(prim) -> None:
    """A binary primitive is strict: unequal dtypes, and unequal shapes neither of them rank
    0, are TypeErrors that say so ("equal dtypes", "equal shapes")."""
    with pytest.raises(TypeError, match="equal dtypes"):
        abstract_eval_rules[prim](ShapedArray((3,), np.float64), ShapedArray((3,), np.float32))
    dt = next(d for d in map(np.dtype, (np.int64, np.float64, np.bool_))
              if accepts(prim, [ShapedArray((3,), d)] * 2, {}))  # a dtype it takes
    with pytest.raises(TypeError, match="equal shapes"):
        abstract_eval_rules[prim](ShapedArray((3,), dt), ShapedArray((4,), dt))
