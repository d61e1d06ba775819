"""How each elementwise primitive is written as a Numba scalar expression (chapter 08).

`SCALAR_RULES[p](args, eqn) -> str` gets the operands as Python expressions (already
per-element scalars) and returns the expression for one element of the result. Loop nests
(`kernels.py`) wrap these expressions; a rank-0 equation uses them directly.

Numba computes small ints in int64 and mixes literal types like NumPy's scalars do, so every
result whose dtype is not int64, float64 or bool is wrapped in its dtype's constructor
(`np.int32(...)`): the generated code then wraps around and rounds exactly as NumPy does.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from minijit import primitives as P
from minijit.core import Primitive
from minijit.ir import Eqn

NATIVE = {np.dtype("int64"), np.dtype("float64"), np.dtype("bool")}


def dtype_name(dtype) -> str:
    return np.dtype(dtype).name if np.dtype(dtype) != np.bool_ else "bool_"


def cast(expr: str, dtype) -> str:
    """`expr` converted to `dtype` (nothing to do for Numba's native scalar types)."""
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return expr
    return expr if dtype in NATIVE else f"np.{dtype_name(dtype)}({expr})"


def literal(value, dtype) -> str:
    """A typed constant: `0.5`, `np.float32(0.5)`, `np.inf`, `True`."""
    dtype = np.dtype(dtype)
    value = np.asarray(value, dtype=dtype).item()
    if dtype == np.bool_:
        return repr(bool(value))
    if isinstance(value, float) and not math.isfinite(value):
        text = "np.nan" if math.isnan(value) else ("np.inf" if value > 0 else "-np.inf")
    else:
        text = repr(value)
    if dtype in NATIVE:
        return text if not text.startswith("-") else f"({text})"
    return f"np.{dtype_name(dtype)}({text})"


Rule = Callable[[list[str], Eqn], str]
SCALAR_RULES: dict[Primitive, Rule] = {}


def _binop(op: str) -> Rule:
    return lambda a, eqn: f"({a[0]} {op} {a[1]})"


def _call(fn: str) -> Rule:
    return lambda a, eqn: f"{fn}({', '.join(a)})"


for _p, _op in {P.add_p: "+", P.sub_p: "-", P.mul_p: "*", P.div_p: "/",
                P.floor_divide_p: "//", P.remainder_p: "%", P.pow_p: "**",
                P.and_p: "&", P.or_p: "|", P.xor_p: "^", P.eq_p: "==", P.ne_p: "!=",
                P.lt_p: "<", P.le_p: "<=", P.gt_p: ">", P.ge_p: ">="}.items():
    SCALAR_RULES[_p] = _binop(_op)

for _p, _fn in {P.exp_p: "np.exp", P.log_p: "np.log", P.log1p_p: "np.log1p",
                P.expm1_p: "np.expm1", P.sin_p: "np.sin", P.cos_p: "np.cos", P.tan_p: "np.tan",
                P.tanh_p: "np.tanh", P.sqrt_p: "np.sqrt", P.floor_p: "np.floor",
                P.ceil_p: "np.ceil", P.abs_p: "abs",
                P.max_p: "np.maximum", P.min_p: "np.minimum"}.items():
    SCALAR_RULES[_p] = _call(_fn)

SCALAR_RULES[P.neg_p] = lambda a, eqn: f"(-{a[0]})"


def _sign(a, eqn):
    # Numba's np.sign(-0.0) is -0.0, NumPy's is 0.0; adding 0.0 turns only -0.0 into 0.0.
    dtype = eqn.invars[0].aval.dtype
    return f"(np.sign({a[0]}) + {literal(0, dtype)})" if dtype.kind == "f" else f"np.sign({a[0]})"


SCALAR_RULES[P.sign_p] = _sign


def _not(a, eqn):
    return f"(not {a[0]})" if eqn.invars[0].aval.dtype == np.bool_ else f"(~{a[0]})"


def _integer_pow(a, eqn):
    y = eqn.params["y"]
    if y == 0:
        return literal(1, eqn.outvars[0].aval.dtype)
    if 0 < y <= 4:
        return "(" + " * ".join([a[0]] * y) + ")"
    return f"({a[0]} ** {y})"


def _convert(a, eqn):
    new = np.dtype(eqn.params["new_dtype"])
    if new == np.bool_:
        return f"({a[0]} != 0)"
    return f"np.{dtype_name(new)}({a[0]})"


def _select_n(a, eqn):
    pred, *cases = a
    if len(cases) == 1:
        return cases[0]
    if len(cases) == 2:
        return f"({cases[1]} if {pred} else {cases[0]})"
    expr = cases[-1]
    for k in range(len(cases) - 2, -1, -1):
        expr = f"({cases[k]} if {pred} == {k} else {expr})"
    return expr


SCALAR_RULES[P.not_p] = _not
SCALAR_RULES[P.integer_pow_p] = _integer_pow
SCALAR_RULES[P.convert_element_type_p] = _convert
SCALAR_RULES[P.select_n_p] = _select_n


def scalar_expr(eqn: Eqn, args: list[str]) -> str:
    """The per-element expression for an elementwise equation, in its output dtype."""
    expr = SCALAR_RULES[eqn.primitive](args, eqn)
    if eqn.primitive is P.convert_element_type_p:
        return expr
    return cast(expr, eqn.outvars[0].aval.dtype)
