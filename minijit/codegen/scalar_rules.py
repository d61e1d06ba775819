"""How each elementwise primitive is written as a Numba scalar expression (chapter 09).

The `Expression` entries of the rule table (`codegen/rules.py`): `numba_rules[p] =
Expression(rule)`, where `rule(args, eqn) -> str` gets the operands as Python expressions
(already per-element scalars) and returns the expression for one element of the result. Loop
nests (`kernels.py`) wrap these expressions; a rank-0 equation uses them directly.

Numba computes small ints in int64 and mixes literal types like NumPy's scalars do, so every
result whose dtype is not int64, float64 or bool is wrapped in its dtype's constructor
(`np.int32(...)`): the generated code then wraps around and rounds exactly as NumPy does.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from minijit import primitives as P
from minijit.codegen.rules import Expression, numba_rules
from minijit.codegen.vecmath import DEFAULT, SOURCES
from minijit.config import config
from minijit.dtypes import int_range_as_floats
from minijit.ir import Eqn, Lit

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
    if dtype == np.int64 and value == np.iinfo(np.int64).min:
        # Python reads -9223372036854775808 as -(2**63), and 2**63 does not fit in int64:
        # Numba would type it uint64. This spelling stays in int64 throughout.
        return f"({value + 1} - 1)"
    if dtype in NATIVE:
        return text if not text.startswith("-") else f"({text})"
    return f"np.{dtype_name(dtype)}({text})"


Rule = Callable[[list[str], Eqn], str]  # an Expression entry's rule (codegen/rules.py)


def _binop(op: str) -> Rule:
    return lambda a, eqn: f"({a[0]} {op} {a[1]})"


def wrapping(op: str, x: str, y: str, dtype) -> str:
    """`x op y` for `+ - *`, wrapping around on overflow as NumPy and JAX do.

    Numba marks int64 `+ - *` as unable to overflow (LLVM's `nsw` flag), which makes an
    overflow undefined behaviour: LLVM may then fold a later comparison as if it had not
    happened (the sum of [int64_min, -2] came out right, but `sum > 0` False). Unsigned
    arithmetic wraps by definition, so int64 goes through uint64 and back (both casts are
    free). Narrower ints compute in int64, where they cannot overflow, and are cast back."""
    if np.dtype(dtype) == np.int64:
        return f"np.int64(np.uint64({x}) {op} np.uint64({y}))"
    return f"({x} {op} {y})"


def _wrapping(op: str) -> Rule:
    return lambda a, eqn: wrapping(op, a[0], a[1], eqn.outvars[0].aval.dtype)


def _call(fn: str) -> Rule:
    return lambda a, eqn: f"{fn}({', '.join(a)})"


numba_rules[P.sub_p] = Expression(_wrapping("-"))
for _p, _op in {P.remainder_p: "%",
                P.and_p: "&", P.or_p: "|", P.xor_p: "^", P.eq_p: "==", P.ne_p: "!=",
                P.lt_p: "<", P.le_p: "<=", P.gt_p: ">", P.ge_p: ">="}.items():
    numba_rules[_p] = Expression(_binop(_op))

# The libm functions are written `math.sin`, not `np.sin`: on a float32 or float64 scalar Numba
# calls the same libm function for both (the same bits, tests/test_codegen.py), but typing a
# NumPy ufunc call costs Numba about a millisecond each, and a chain of 1,000 operations, a
# third of them `sin`, compiled in 2.2 to 3.1 s this way against 4.2 to 5.7 s. `math.floor`
# and `math.ceil` are not used: in Numba, as in Python, they return integers.
for _p, _fn in {P.exp_p: "math.exp", P.log_p: "math.log", P.log1p_p: "math.log1p",
                P.expm1_p: "math.expm1", P.sin_p: "math.sin", P.cos_p: "math.cos",
                P.tan_p: "math.tan", P.tanh_p: "math.tanh", P.sqrt_p: "math.sqrt",
                P.floor_p: "np.floor", P.ceil_p: "np.ceil", P.abs_p: "abs",
                P.atan2_p: "math.atan2", P.is_finite_p: "np.isfinite"}.items():
    numba_rules[_p] = Expression(_call(_fn))


def _logistic(a, eqn):
    """1 / (1 + exp(-x)) with no overflow: exp(-|x|) is at most 1, and for x < 0 the same
    value is written exp(x) / (1 + exp(x)); LLVM computes the one exp once (it is pure).
    The constants are in x's dtype, so float32 stays float32."""
    x, one = a[0], literal(1, eqn.invars[0].aval.dtype)
    e = f"math.exp(-abs({x}))"
    return f"(({one} if {x} >= 0 else {e}) / ({one} + {e}))"


numba_rules[P.logistic_p] = Expression(_logistic)
numba_rules[P.erf_p] = Expression(_call("math.erf"))


def _vector_math(p, otherwise: Rule) -> Rule:
    """`vecmath.exp_f64(x)` for float64 and float32 elements (minijit's own vectorizable
    exp, see `codegen/vecmath`), else `otherwise`, the libm call. libm's scalar functions
    keep a loop from vectorizing: pip's Numba has no vector math library.
    `config.update("vector_math", False)` keeps libm for programs compiled afterwards;
    "all" adds sin, cos and erf, whose inlined code is slow to compile (`vecmath.DEFAULT`)."""
    def rule(a, eqn):
        dtype = eqn.invars[0].aval.dtype
        mode = config.vector_math
        if mode and (p.name, dtype.name) in SOURCES and (mode == "all" or p.name in DEFAULT):
            return f"vecmath.{p.name}_f{dtype.itemsize * 8}({a[0]})"
        return otherwise(a, eqn)

    return rule


for _p in (P.exp_p, P.expm1_p, P.log_p, P.log1p_p, P.tanh_p, P.logistic_p, P.sin_p, P.cos_p,
           P.erf_p):
    numba_rules[_p] = Expression(_vector_math(_p, numba_rules[_p].rule))


def _kind(eqn: Eqn) -> str:
    return eqn.invars[0].aval.dtype.kind


# --------------------------------------------------------------------------- bools
# On bools, + and * are logical or and and, and so are max and min (NumPy and JAX agree).
# Numba would compute `True + True` as the int 2 and store that byte into a bool array, where
# it reads back as True but sums as 2; `|` and `&` keep every value a real bool.

def _logical_or_else(bool_op: str, otherwise: Rule) -> Rule:
    def rule(a, eqn):
        return f"({a[0]} {bool_op} {a[1]})" if _kind(eqn) == "b" else otherwise(a, eqn)

    return rule


# --------------------------------------------------------------------------- max and min


def float_max(x: str, y: str) -> str:
    """max of two float expressions as JAX computes it: NaN wins, and +0.0 beats -0.0 (IEEE
    754's maximum). np.maximum returns its second operand on a tie, so its sign of zero
    depends on the order; but max is COMMUTATIVE, and cse takes max(x, y) and max(y, x) for
    one value. On a tie between zeros, x + y is -0.0 only when both are -0.0."""
    return (f"({x} if {x} > {y} or {x} != {x} else {y} if {y} > {x} or {y} != {y} "
            f"else {x} + {y} if {x} == 0 else {x})")


def float_min(x: str, y: str) -> str:
    """As `float_max`: -0.0 wins, and -(-x - y) is +0.0 only when both zeros are +0.0."""
    return (f"({x} if {x} < {y} or {x} != {x} else {y} if {y} < {x} or {y} != {y} "
            f"else -(-{x} - {y}) if {x} == 0 else {x})")


def _max(a, eqn):
    return float_max(*a) if _kind(eqn) == "f" else f"np.maximum({a[0]}, {a[1]})"


def _min(a, eqn):
    return float_min(*a) if _kind(eqn) == "f" else f"np.minimum({a[0]}, {a[1]})"


numba_rules[P.add_p] = Expression(_logical_or_else("|", _wrapping("+")))
numba_rules[P.mul_p] = Expression(_logical_or_else("&", _wrapping("*")))
numba_rules[P.max_p] = Expression(_logical_or_else("|", _max))
numba_rules[P.min_p] = Expression(_logical_or_else("&", _min))


# --------------------------------------------------------------------------- integer corners


def _floor_divide(a, eqn):
    x, y = a
    if _kind(eqn) != "i":
        return f"({x} // {y})"
    # Numba returns 0 for int64_min // -1 (the one quotient that overflows); NumPy wraps
    # around to int64_min, which is what -x gives.
    return f"(-{x} if {y} == -1 else {x} // {y})"


numba_rules[P.floor_divide_p] = Expression(_floor_divide)


def _div(a, eqn):
    """lax.div: `/` for floats; for ints the floor quotient moved toward zero (by one where
    the signs differ and the division is not exact), and XLA's x / 0 == -1."""
    x, y = a
    if _kind(eqn) == "f":
        return f"({x} / {y})"
    t = dtype_name(eqn.outvars[0].aval.dtype)
    floor = _floor_divide(a, eqn)
    inexact = f"(({x} % {y} != 0) and (({x} < 0) != ({y} < 0)))"
    return (f"(np.{t}(-1) if {y} == 0 else np.{t}({floor} + np.{t}(1 if {inexact} else 0)))")


def _rem(a, eqn):
    """lax.rem: C's remainder (the sign of the dividend): Python's `%` (the sign of the
    divisor) moved back by one divisor where the two signs differ; for ints x rem 0 is x."""
    x, y = a
    if _kind(eqn) == "f":
        return f"np.fmod({x}, {y})"
    r = f"({x} % {y})"
    return f"({x} if {y} == 0 else ({r} - {y} if {r} != 0 and ({r} < 0) != ({x} < 0) else {r}))"


numba_rules[P.div_p] = Expression(_div)
numba_rules[P.rem_p] = Expression(_rem)


# Shifts: LLVM's (and C's) shift by the bit width or more is undefined, so each rule selects
# XLA's result for those amounts (and for negative ones, which read as huge unsigned ones)
# and shifts only by amounts in range. The bits are shifted as the unsigned (or, for the
# arithmetic shift, signed) int of the operand's width, so Numba never mixes signed with
# unsigned operands (which it would compute in float64).


def _shift_types(eqn: Eqn) -> tuple[str, str, str, int]:
    dtype = eqn.invars[0].aval.dtype
    bits = dtype.itemsize * 8
    return dtype_name(dtype), f"uint{bits}", f"int{bits}", bits


def _amount_in_range(y: str, eqn: Eqn, unsigned: str, bits: int) -> str:
    """The test that the amount is in range; a literal amount (`x << 2`) is tested here."""
    amount = eqn.invars[1]
    if isinstance(amount, Lit):
        in_range = int(np.asarray(amount.val, amount.aval.dtype).view(unsigned)) < bits
        return repr(in_range)
    return f"(np.{unsigned}({y}) < {literal(bits, unsigned)})"


def _selected(in_range: str, shifted: str, otherwise: str) -> str:
    if in_range in ("True", "False"):
        return shifted if in_range == "True" else otherwise
    return f"({shifted} if {in_range} else {otherwise})"


def _shift_left(a, eqn):
    x, y = a
    t, u, _, bits = _shift_types(eqn)
    return _selected(_amount_in_range(y, eqn, u, bits), f"np.{t}(np.{u}({x}) << np.{u}({y}))",
                     f"np.{t}(0)")


def _shift_right_logical(a, eqn):
    x, y = a
    t, u, _, bits = _shift_types(eqn)
    return _selected(_amount_in_range(y, eqn, u, bits), f"np.{t}(np.{u}({x}) >> np.{u}({y}))",
                     f"np.{t}(0)")


def _shift_right_arithmetic(a, eqn):
    x, y = a
    t, u, s, bits = _shift_types(eqn)
    amount = _selected(_amount_in_range(y, eqn, u, bits), f"np.{s}({y})", literal(bits - 1, s))
    return f"np.{t}(np.{s}({x}) >> {amount})"


numba_rules[P.shift_left_p] = Expression(_shift_left)
numba_rules[P.shift_right_logical_p] = Expression(_shift_right_logical)
numba_rules[P.shift_right_arithmetic_p] = Expression(_shift_right_arithmetic)

# Numba's integer `**` switches to float `math.pow` for exponents above 2**16, which turns
# 2 ** 2**62 into int64_min where NumPy's repeated squaring wraps around to 0. Exponents up
# to 2**16 are safe, so a bigger one is split into 16-bit digits and combined Horner-style:
# x**e = (((x**e3)**K * x**e2)**K * x**e1)**K * x**e0 with K = 2**16. Integer `**` wraps
# around at every step, so the result agrees with NumPy's in every width.
_SAFE_EXPONENT = 1 << 16


def _as_int64(expr: str, dtype: np.dtype) -> str:
    """Integer powers compute in int64 (uint64 keeps its bits) and are cast back at the end:
    wrapping products agree with NumPy's in every width, and no shift exceeds the width."""
    return expr if dtype == np.int64 else f"np.int64({expr})"


def _wide_power(x: str, digits: list[str]) -> str:
    """`x ** e` from the base-2**16 digits of e (most significant first), without floats."""
    expr = f"{x} ** {digits[0]}"
    for d in digits[1:]:
        expr = f"({expr}) ** {_SAFE_EXPONENT} * {x} ** {d}"
    return f"({expr})"


def _negative_power(x: str, y: str) -> str:
    """x ** y for integers and y < 0: the integer part of 1 / x**|y|.

    NumPy raises ValueError here, and so does `mnp.power` on concrete values, but inside a
    compiled program the exponent is data: both backends then give 1 for x == 1, +-1 for
    x == -1, and 0 otherwise (0 ** -1 too, which is what JAX gives for those bases).
    """
    return f"(1 if {x} == 1 else (1 - 2 * ({y} & 1)) if {x} == -1 else 0)"


def _pow(a, eqn):
    x, y = a
    dtype = eqn.invars[0].aval.dtype
    if dtype.kind not in "iu":
        return f"({x} ** {y})"
    x, y = _as_int64(x, dtype), _as_int64(y, dtype)
    digits = [f"(({y} >> {s}) & {_SAFE_EXPONENT - 1})" for s in (48, 32, 16)]
    digits.append(f"({y} & {_SAFE_EXPONENT - 1})")
    big = _wide_power(x, digits)
    # A uint64 exponent seen as int64 is "negative" when it is at least 2**63.
    negative = _negative_power(x, y) if dtype.kind == "i" else big
    return (f"({x} ** {y} if 0 <= {y} <= {_SAFE_EXPONENT} else {negative} if {y} < 0 "
            f"else {big})")


numba_rules[P.pow_p] = Expression(_pow)

numba_rules[P.neg_p] = Expression(lambda a, eqn: f"(-{a[0]})")


def _sign(a, eqn):
    # Numba's np.sign(-0.0) is -0.0, NumPy's is 0.0; adding 0.0 turns only -0.0 into 0.0.
    dtype = eqn.invars[0].aval.dtype
    if dtype.kind == "u":  # Numba's np.sign treats the top bit as a sign: 255 -> 255
        return f"(1 if {a[0]} > 0 else 0)"
    return f"(np.sign({a[0]}) + {literal(0, dtype)})" if dtype.kind == "f" else f"np.sign({a[0]})"


numba_rules[P.sign_p] = Expression(_sign)


def _not(a, eqn):
    return f"(not {a[0]})" if eqn.invars[0].aval.dtype == np.bool_ else f"(~{a[0]})"


def _integer_pow(a, eqn):
    y = eqn.params["y"]
    dtype = eqn.outvars[0].aval.dtype
    if y == 0:
        return literal(1, dtype)
    if 0 < y <= 4:  # as products, which `wrapping` keeps defined on int64 overflow
        expr = a[0]
        for _ in range(y - 1):
            expr = wrapping("*", expr, a[0], dtype)
        return expr if y > 1 else f"({expr})"
    if y > _SAFE_EXPONENT and dtype.kind in "iu":  # see _wide_power
        x = _as_int64(a[0], dtype)
        digits, e = [], y
        while e:
            digits.insert(0, str(e % _SAFE_EXPONENT))
            e //= _SAFE_EXPONENT
        return _wide_power(x, digits)
    return f"({a[0]} ** {y})"


def _convert(a, eqn):
    """XLA's conversion (as `interpret.convert_element_type`): a cast, but for float to int.

    LLVM's float-to-int cast of NaN, inf or a value out of range is undefined (poison), so
    those are selected explicitly, as XLA defines them: NaN is 0, beyond the range is its
    nearest end. Only float to int pays for the comparisons; every other conversion stays one
    cast (int to int wraps, float64 to float32 rounds to nearest, to bool is `!= 0`)."""
    new = np.dtype(eqn.params["new_dtype"])
    x = a[0]
    if new == np.bool_:
        return f"({x} != 0)"
    t = dtype_name(new)
    if _kind(eqn) != "f" or new.kind not in "iu":
        return f"np.{t}({x})"
    lo, hi = int_range_as_floats(new)
    info = np.iinfo(new)
    return (f"(np.{t}({x}) if {lo!r} <= {x} < {hi!r} else {literal(info.max, new)} "
            f"if {x} >= {hi!r} else {literal(info.min, new)} if {x} < {lo!r} "
            f"else {literal(0, new)})")


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


numba_rules[P.not_p] = Expression(_not)
numba_rules[P.integer_pow_p] = Expression(_integer_pow)
numba_rules[P.convert_element_type_p] = Expression(_convert)
numba_rules[P.select_n_p] = Expression(_select_n)


def _clamp(a, eqn):
    """min(max(x, lo), hi), with max and min's NaN and signed-zero rules."""
    lo, x, hi = a
    return _min([_max([x, lo], eqn), hi], eqn)


numba_rules[P.clamp_p] = Expression(_clamp)


def scalar_expr(eqn: Eqn, args: list[str]) -> str:
    """The per-element expression for an elementwise equation, in its output dtype."""
    expr = numba_rules[eqn.primitive].rule(args, eqn)
    if eqn.primitive is P.convert_element_type_p:
        return expr
    return cast(expr, eqn.outvars[0].aval.dtype)
