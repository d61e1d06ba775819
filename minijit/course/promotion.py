"""Explore type promotion: pick two operands and an operator, see the result dtype in minijit
and in NumPy, and the jaxpr with its conversions (chapter 03, section 8).

    show_promotion("int8", "+", "Python int 300")   # minijit: int8   NumPy: OverflowError: ...
    promotion_explorer()                             # the same, with three dropdowns

The left operand is always an array; the right one is an array or a Python scalar, which is
weakly typed in minijit (it takes the array's dtype) as in JAX. minijit's result comes from
tracing alone (`make_jaxpr`), so nothing is computed on its side; NumPy's from running the
operation on arrays of ones.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

import minijit as mj

__all__ = ["ARRAY_DTYPES", "OPERATORS", "PYTHON_SCALARS", "promotion_explorer", "show_promotion"]

ARRAY_DTYPES = ("bool", "int8", "int32", "int64", "uint8", "uint64", "float32", "float64")
PYTHON_SCALARS: dict[str, object] = {
    "Python int 2": 2, "Python int 300": 300, "Python float 0.5": 0.5, "Python bool True": True,
}
OPERATORS: dict[str, Callable] = {
    "+": lambda a, b: a + b, "*": lambda a, b: a * b, "/": lambda a, b: a / b,
}


def show_promotion(left: str = "int32", op: str = "+", right: str = "Python float 0.5") -> None:
    """Print `left array <op> right` -> minijit's dtype and NumPy's (or the error each
    raises), then minijit's jaxpr. `right` is a dtype of `ARRAY_DTYPES` or a key of
    `PYTHON_SCALARS`."""
    fn = OPERATORS[op]
    a = np.ones(3, dtype=left)
    if right in PYTHON_SCALARS:
        scalar = PYTHON_SCALARS[right]

        def program(a):  # the scalar is a constant of the program, not an argument
            return fn(a, scalar)

        args = (a,)
    else:
        program, args = fn, (a, np.ones(3, dtype=right))
    numpy_result = _numpy_dtype(program, args)
    try:
        closed = mj.make_jaxpr(program)(*args)
    except Exception as e:  # a mix minijit refuses is an answer too
        print(f"{left} array {op} {right}: minijit raises {type(e).__name__}: {e}")
        print(f"NumPy: {numpy_result}")
        return
    print(f"{left} array {op} {right}  ->  minijit: {closed.out_avals[0].dtype.name}"
          f"   NumPy: {numpy_result}")
    print()
    print(closed)


def promotion_explorer(left: str = "int32", op: str = "+", right: str = "Python float 0.5"):
    """`show_promotion` under three dropdowns (ipywidgets' `interact`), starting at the
    given choice; returns the widget, so it shows as the value of a notebook cell."""
    from ipywidgets import Dropdown, interactive

    return interactive(
        show_promotion,
        left=Dropdown(options=ARRAY_DTYPES, value=left, description="left array"),
        op=Dropdown(options=list(OPERATORS), value=op, description="operator"),
        right=Dropdown(options=[*ARRAY_DTYPES, *PYTHON_SCALARS], value=right,
                       description="right"),
    )


def _numpy_dtype(program: Callable, args: tuple) -> str:
    """The dtype NumPy gives, or the error it raises (it refuses some mixes too)."""
    try:
        return np.asarray(program(*args)).dtype.name
    except Exception as e:
        return f"{type(e).__name__}: {e}"
