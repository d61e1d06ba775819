"""Algebraic simplification: a table of small, exact rewrite rules.

Assumes: a typechecked Jaxpr. Guarantees: the result computes the same values bit for bit,
except where a rule says otherwise (`x**3 -> x*x*x` may differ from NumPy's `pow` in the last
bit: it is two multiplications instead of a call of the general power function, which chapter
07 times against them; and a product of a transposed matrix, which BLAS may sum in another
order once it reads the matrix itself). Rules that are not exact for floats are only applied to
integers: `x * 0 -> 0` is wrong for floats (`nan * 0` is nan, `-1.0 * 0` is `-0.0`) and
`x + 0.0 -> x` is wrong for `x = -0.0`.

    before: b:f64[3] = mul a 1.0:f64[]; c:f64[3] = integer_pow[y=2] b
    after:  c:f64[3] = mul a a
    before: c:f64[3,2] = transpose[permutation=(1, 0)] b; d:f64[4,2] = dot_general[(([1], [0]),
            ([], []))] a c
    after:  d:f64[4,2] = dot_general[(([1], [1]), ([], []))] a b

Extending it: write `def rule(eqn) -> None | Atom | list[Eqn]` and register it with
`@rule_for(some_p)`. Return an existing atom that equals the output, or new equations that
define the equation's own outvars (simplified in turn, so never the equation itself), or
None to leave the equation alone.

One rule is the build track's piece `sub_self` (`minijit/build.py`): `x - x -> 0` for
integers, minijit's `sub_self` below or a learner's after `build.use("sub_self", ...)`
(chapter 07's exercise ex07_rule). What a learner's rule returns is checked at once, so a
rewrite that is not exact (a float `x - x`, `x - y`, anything but zeros of the output's type)
stops with a `PieceError` naming `sub_self` instead of changing the program's values.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from minijit import build, dtypes
from minijit import primitives as P
from minijit.core import Primitive, ShapedArray, impl_rules
from minijit.ir import (
    Atom,
    Eqn,
    Jaxpr,
    JaxprTypeError,
    Lit,
    Var,
    pp_eqn_alone,
    typecheck_jaxpr,
)
from minijit.passes.rewrite import Substitution, jaxpr_pass, map_subjaxprs

Rule = Callable[[Eqn], "None | Atom | list[Eqn]"]
RULES: dict[Primitive, list[Rule]] = {}


def rule_for(*prims: Primitive):
    def register(fn: Rule) -> Rule:
        for p in prims:
            RULES.setdefault(p, []).append(fn)
        return fn

    return register


def _is(a: Atom, value) -> bool:
    """`a` is a literal equal to `value`, sign of zero included (`x - -0.0` is not `x`)."""
    return (isinstance(a, Lit) and a.val == value
            and math.copysign(1, a.val) == math.copysign(1, value))


def _same_type(a: Atom, out: Var) -> bool:
    return a.aval.shape == out.aval.shape and a.aval.dtype == out.aval.dtype


def _exact_int(eqn: Eqn) -> bool:
    return eqn.outvars[0].aval.dtype.kind in "iub"


@rule_for(P.add_p)
def _add_zero(eqn):
    x, y = eqn.invars
    if _exact_int(eqn):
        for a, b in ((x, y), (y, x)):
            if _is(b, 0) and _same_type(a, eqn.outvars[0]):
                return a
    return None


@rule_for(P.sub_p)
def _sub_zero(eqn):
    x, y = eqn.invars
    if _is(y, 0) and _same_type(x, eqn.outvars[0]):
        return x  # exact for floats too: -0.0 - 0.0 == -0.0
    return None


def sub_self(eqn: Eqn) -> None | Atom | list[Eqn]:
    """`x - x -> 0` for integer x (exact: for floats, `inf - inf` is NaN): a literal zero for
    a scalar, else one `broadcast_in_dim` of a scalar zero that defines the output."""
    build.guard("sub_self")  # fails when a learner's piece hands its work to this one
    x, y = eqn.invars
    (out,) = eqn.outvars
    if not isinstance(x, Var) or x is not y or out.aval.dtype.kind not in "iu":
        return None
    if out.aval.shape == ():
        return Lit(0, out.aval)
    zero = Lit(0, out.aval.update(shape=()))
    return [Eqn(P.broadcast_in_dim_p, (zero,), (out,),
                {"shape": out.aval.shape, "broadcast_dimensions": ()}, eqn.source)]


@rule_for(P.sub_p)
def _sub_self(eqn):
    return build.call("sub_self", eqn)


def _check_sub_self(result, eqn: Eqn) -> str | None:
    """What is wrong with `result` as the rule `x - x -> 0` for `eqn`, if anything: None is
    always allowed; anything else must be zeros of the output's type, and only for the same
    integer variable on both sides."""
    if result is None:
        return None
    x, y = eqn.invars
    (out,) = eqn.outvars
    where = f"`{pp_eqn_alone(eqn)}`"
    if not isinstance(x, Var) or x is not y:
        return (f"rewrote {where}, whose inputs are not the same variable: only x - x is "
                "known to be 0; return None for anything else")
    if out.aval.dtype.kind not in "iu":
        return (f"rewrote {where}, which is not an integer subtraction: for floats x - x is "
                "NaN where x is inf or NaN; return None unless the dtype kind is 'i' or 'u'")
    if isinstance(result, Lit):
        if result.aval != out.aval or result.val != 0:
            return (f"returned the literal {result.val!r}:{result.aval.str_short()} for {where}, "
                    f"where x - x is 0:{out.aval.str_short()} (a literal is a scalar: an "
                    "array needs a broadcast_in_dim equation)")
        return None
    if not isinstance(result, list) or not result or not all(
            isinstance(e, Eqn) for e in result):
        return (f"returned a {type(result).__name__} for {where}; a rule returns None, a "
                "literal, or a list of equations that define the equation's own output")
    if sum(v is out for e in result for v in e.outvars) != 1:
        return (f"returned equations for {where} that do not define its output (the same "
                "Var, which later equations read) exactly once")
    try:
        typecheck_jaxpr(Jaxpr((), (x,), tuple(result), (out,)))
    except JaxprTypeError as e:
        return f"returned equations for {where} that do not typecheck: {e}"
    values = {id(x): np.ones(x.aval.shape, x.aval.dtype)}
    for e in result:
        args = [np.asarray(a.val, a.aval.dtype) if isinstance(a, Lit) else values[id(a)]
                for a in e.invars]
        values.update(zip(map(id, e.outvars), impl_rules[e.primitive](*args, **e.params)))
    if np.any(np.asarray(values[id(out)]) != 0):
        return f"returned equations for {where} that do not compute zeros"
    return None


def _selftest(candidate) -> str | None:
    """Run a candidate on `sub a a` for an int64 array, an int64 scalar and a uint8 array
    (zeros), and on `sub a a` for floats and `sub a b` for integers (both stay: None)."""
    i64, f64 = np.dtype(np.int64), np.dtype(np.float64)
    a, b, s, f, u = (Var(ShapedArray((3,), i64)), Var(ShapedArray((3,), i64)),
                     Var(ShapedArray((), i64)), Var(ShapedArray((3,), f64)),
                     Var(ShapedArray((2,), np.dtype(np.uint8))))
    for x, y, zero in ((a, a, True), (s, s, True), (u, u, True), (f, f, False),
                       (a, b, False)):
        eqn = Eqn(P.sub_p, (x, y), (Var(x.aval),))
        result = candidate(eqn)
        problem = _check_sub_self(result, eqn)
        if problem is None and zero and result is None:
            problem = f"returned None for `{pp_eqn_alone(eqn)}`, which is 0"
        if problem:
            return problem
    return None


build.register("sub_self", sub_self, chapter="07_cleanup_passes",
               signature="sub_self(eqn) -> None | Lit | list of Eqn", check=_check_sub_self,
               selftest=_selftest)


@rule_for(P.mul_p)
def _mul_one_or_zero(eqn):
    x, y = eqn.invars
    out = eqn.outvars[0]
    for a, b in ((x, y), (y, x)):
        if _is(b, 1) and _same_type(a, out):
            return a
        if _is(b, 0) and _exact_int(eqn) and out.aval.shape == ():
            return Lit(0, out.aval)
    return None


@rule_for(P.div_p)
def _div_one(eqn):
    x, y = eqn.invars
    return x if _is(y, 1) and _same_type(x, eqn.outvars[0]) else None


def _power_eqns(x: Atom, n: int, out: Var, source=None) -> list[Eqn] | Atom:
    """`x ** n` for a small integer n, by multiplications (and one division if n < 0)."""
    if n == 1:
        return x
    eqns, aval = [], out.aval

    def mul(a, b, dst=None):
        v = dst or Var(aval)
        eqns.append(Eqn(P.mul_p, (a, b), (v,), {}, source))
        return v

    k, final = abs(n), (out if n > 0 else Var(aval))
    if k == 1:
        base = x
    elif k == 2:
        base = mul(x, x, final)
    elif k == 3:
        base = mul(mul(x, x), x, final)
    else:
        square = mul(x, x)
        base = mul(square, square, final)
    if n < 0:
        one = Lit(1.0, aval.update(shape=(), weak_type=True))
        eqns.append(Eqn(P.div_p, (one, base), (out,), {}, source))
    return eqns


@rule_for(P.integer_pow_p)
def _small_integer_pow(eqn):
    (x,), y, out = eqn.invars, eqn.params["y"], eqn.outvars[0]
    if y == 0 or not -2 <= y <= 4 or (y < 0 and not dtypes.is_float(out.aval.dtype)):
        return None
    return _power_eqns(x, y, out, eqn.source)


@rule_for(P.pow_p)
def _literal_pow(eqn):
    x, y = eqn.invars
    out = eqn.outvars[0]
    if isinstance(y, Lit) and float(y.val).is_integer() and 1 <= y.val <= 4 and (
            x.aval.shape == out.aval.shape):
        return _power_eqns(x, int(y.val), out, eqn.source)
    return None


@rule_for(P.convert_element_type_p)
def _convert_same(eqn):
    (x,) = eqn.invars
    return x if _same_type(x, eqn.outvars[0]) else None


@rule_for(P.reshape_p, P.broadcast_in_dim_p, P.squeeze_p, P.transpose_p, P.slice_p, P.rev_p,
          P.reduce_sum_p, P.reduce_max_p, P.reduce_min_p, P.reduce_prod_p)
def _identity_shape_op(eqn):
    x = eqn.invars[0]
    p = eqn.params
    out = eqn.outvars[0]
    if not _same_type(x, out):
        return None
    trivial = {
        P.reshape_p: True,
        P.broadcast_in_dim_p: tuple(p.get("broadcast_dimensions", ())) == tuple(
            range(len(out.aval.shape))),
        P.squeeze_p: not p.get("dimensions"),
        P.transpose_p: tuple(p.get("permutation", ())) == tuple(range(len(out.aval.shape))),
        P.slice_p: not p.get("strides") or all(s == 1 for s in p["strides"]),
        P.rev_p: not p.get("dimensions"),
    }.get(eqn.primitive, not p.get("axes"))
    if eqn.primitive is P.reduce_sum_p and not _exact_int(eqn):
        trivial = False  # a sum starts from 0.0, and 0.0 + -0.0 is 0.0 (as for `x + 0.0`)
    return x if trivial else None


@rule_for(P.select_n_p)
def _select_known(eqn):
    pred, *cases = eqn.invars
    out = eqn.outvars[0]
    if isinstance(pred, Lit):
        chosen = cases[int(pred.val)]
        return chosen if _same_type(chosen, out) else None
    if all(c is cases[0] for c in cases) and _same_type(cases[0], out):
        return cases[0]
    return None


def simplify_jaxpr(jaxpr: Jaxpr) -> Jaxpr:
    subst = Substitution()
    producers: dict[int, Eqn] = {}
    eqns: list[Eqn] = []
    changed = False
    pending = list(reversed(jaxpr.eqns))
    while pending:
        eqn = pending.pop()
        new = map_subjaxprs(subst.eqn(eqn), simplify_jaxpr)
        changed |= new is not eqn
        result = _double_application(new, producers)
        if result is None:
            result = _dot_of_transpose(new, producers)
        for fn in RULES.get(new.primitive, ()):
            if result is not None:
                break
            result = fn(new)
        if result is None:
            eqns.append(new)
            producers.update((id(v), new) for v in new.outvars)
        elif isinstance(result, list):  # simplified in turn: `1 ** 2 -> 1 * 1 -> 1`
            changed = True
            pending.extend(reversed(result))
        else:
            changed = True
            subst[new.outvars[0]] = result
    if not changed:
        return jaxpr
    return Jaxpr(jaxpr.constvars, jaxpr.invars, tuple(eqns),
                 tuple(subst(a) for a in jaxpr.outvars))


def _double_application(eqn: Eqn, producers: dict[int, Eqn]):
    """`neg (neg x) -> x` and `not (not x) -> x`: these need to see the producer."""
    if eqn.primitive not in (P.neg_p, P.not_p):
        return None
    (x,) = eqn.invars
    inner = producers.get(id(x))
    if inner is not None and inner.primitive is eqn.primitive:
        return inner.invars[0]
    return None


def _dot_of_transpose(eqn: Eqn, producers: dict[int, Eqn]):
    """`dot_general` of a transposed matrix reads the matrix itself, with the other axis
    contracted: `a @ b.T` becomes one product that BLAS computes with its transpose flag, with
    no transposed copy of `b` made first (the `transpose` goes too, if nothing else reads it).
    Only for 2-D operands. The products are the same; BLAS may add them up in another order
    for a transposed operand (small products have kernels of their own per transposition), so
    the last bit of a result can differ."""
    if eqn.primitive is not P.dot_general_p:
        return None
    (lc, rc), batch = eqn.params["dimension_numbers"]
    operands, contracting, changed = list(eqn.invars), [tuple(lc), tuple(rc)], False
    for side, x in enumerate(operands):
        inner = producers.get(id(x))
        if (inner is None or inner.primitive is not P.transpose_p
                or tuple(inner.params["permutation"]) != (1, 0)
                or len(contracting[side]) != 1):
            continue
        operands[side] = inner.invars[0]
        contracting[side] = (1 - contracting[side][0],)
        changed = True
    if not changed:
        return None
    params = {**eqn.params, "dimension_numbers": (tuple(contracting), batch)}
    return [Eqn(eqn.primitive, tuple(operands), eqn.outvars, params, eqn.source)]


simplify = jaxpr_pass(lambda jaxpr, const_values: simplify_jaxpr(jaxpr),
                       name="simplify", doc=__doc__)
