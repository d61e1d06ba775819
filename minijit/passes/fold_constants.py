"""Constant folding: evaluate at compile time what does not depend on the arguments.

Assumes: a typechecked Jaxpr; `const_values` binds the top-level constvars to arrays.
Guarantees: every equation whose inputs are all known (literals, constvars, or results of
folded equations) and whose output is small is replaced by its value: a scalar becomes a
literal, an array a new constvar. Effectful equations, control flow, and large results
(more than `MAX_FOLDED_ELEMENTS`, so `mnp.zeros((10**8,))` is not materialised) are left
alone.
Sub-Jaxprs are folded too, but only into literals: they have no constvars to hold an array.

    before: { lambda ; a:f64[3]. let b:f64[] = mul 2.0:f64[] 3.0:f64[]; c:f64[3] = add a b in (c,) }
    after:  { lambda ; a:f64[3]. let c:f64[3] = add a 6.0:f64[] in (c,) }

The literal half of the pass is the build track's piece `fold` (`minijit/build.py`):
`fold_literals(jaxpr) -> Jaxpr` replaces each equation whose inputs are all literals, and
whose result is a scalar, by that literal, at every level. After `build.use("fold", ...)`
(chapter 07's exercise ex07_fold: `add`, `sub`, `mul`, `neg` and `exp`, at every level) the
learner's runs first and this pass folds what it left (other primitives, constvars, arrays);
its result is checked before (`rewritten_problem`), so a wrong one stops with a `PieceError`
naming `fold`. With minijit's own piece the pass is one walk: its folding includes the
piece's.
"""

from __future__ import annotations

import numpy as np

from minijit import build
from minijit import primitives as P
from minijit.core import ShapedArray, impl_rules
from minijit.ir import Eqn, Jaxpr, Lit, Var, subjaxprs
from minijit.passes.rewrite import (
    Substitution,
    has_effects,
    jaxpr_pass,
    map_subjaxprs,
    rewritten_problem,
)

MAX_FOLDED_ELEMENTS = 1 << 16


def _fold(jaxpr: Jaxpr, const_values: dict | None) -> Jaxpr:
    """`const_values` is None inside a sub-Jaxpr: there, only scalar results fold."""
    top_level = const_values is not None
    const_values = const_values if top_level else {}
    known: dict[int, np.ndarray] = {id(v): const_values[id(v)] for v in jaxpr.constvars
                                    if id(v) in const_values}
    subst = Substitution()
    new_constvars = list(jaxpr.constvars)
    eqns = []

    def value(a):
        if isinstance(a, Lit):
            return np.asarray(a.val, dtype=a.aval.dtype)
        return known.get(id(a))

    for eqn in jaxpr.eqns:
        eqn = map_subjaxprs(subst.eqn(eqn), lambda j: _fold(j, None))
        vals = [value(a) for a in eqn.invars]
        foldable = (
            all(v is not None for v in vals)
            and not has_effects(eqn)
            and not subjaxprs(eqn)  # a loop with known inputs could still run for ever
            and all(v.aval.size <= MAX_FOLDED_ELEMENTS for v in eqn.outvars)
            and (top_level or all(v.aval.shape == () for v in eqn.outvars))
        )
        if not foldable:
            eqns.append(eqn)
            continue
        with np.errstate(all="ignore"):
            outs = impl_rules[eqn.primitive](*vals, **eqn.params)
        for v, out in zip(eqn.outvars, outs):
            out = np.asarray(out, dtype=v.aval.dtype)
            if out.shape == ():
                subst[v] = Lit(out.item(), v.aval)
            else:
                const = Var(v.aval)
                new_constvars.append(const)
                const_values[id(const)] = out
                known[id(const)] = out
                subst[v] = const
    if len(eqns) == len(jaxpr.eqns) and all(a is b for a, b in zip(eqns, jaxpr.eqns)):
        return jaxpr
    outvars = tuple(subst(a) for a in jaxpr.outvars)
    return Jaxpr(tuple(new_constvars), jaxpr.invars, tuple(eqns), outvars)


def fold_literals(jaxpr: Jaxpr) -> Jaxpr:
    """Replace every equation whose inputs are all literals and whose result is a scalar by
    that literal, in sub-Jaxprs too (the build track's piece `fold`)."""
    build.guard("fold")  # fails when a learner's piece hands its work to this one
    return _fold(jaxpr, None)


def _selftest(candidate) -> str | None:
    """Run a candidate on `{ lambda ; a:i32[2]. let b = mul 70000 70000; c = neg b;
    d = add a c; e:f64[] = exp 1000.0 in (d, e) }` (int32): a chain, folded as the program
    computes it (the product wraps around), so `d = add a -605032704`, and an output that is
    a folded value (`inf`, as NumPy's exp gives it)."""
    i32, f64 = ShapedArray((), np.dtype(np.int32)), ShapedArray((), np.dtype(np.float64))
    a, d = Var(i32.update(shape=(2,))), Var(i32.update(shape=(2,)))
    b, c, e = Var(i32), Var(i32), Var(f64)
    n = Lit(70000, i32)
    jaxpr = Jaxpr((), (a,), (Eqn(P.mul_p, (n, n), (b,)), Eqn(P.neg_p, (b,), (c,)),
                             Eqn(P.add_p, (a, c), (d,)), Eqn(P.exp_p, (Lit(1000.0, f64),), (e,))),
                  (d, e))
    with np.errstate(all="ignore"):
        out = candidate(jaxpr)
    problem = rewritten_problem(out, jaxpr)
    if problem is None:
        want = -605032704  # -(70000 * 70000 - 2**32)
        shown = [(e.primitive.name, [x.val if isinstance(x, Lit) else "a" for x in e.invars])
                 for e in out.eqns]
        if shown != [("add", ["a", want])]:
            problem = (f"left {shown}, where the chain folds into [('add', ['a', {want}])] "
                       "(70000 * 70000 wraps around in int32) and exp 1000.0 into inf")
        elif not (isinstance(out.outvars[1], Lit) and out.outvars[1].val == np.inf):
            problem = ("returned a jaxpr whose second output is not the literal inf: an output "
                       "that is a folded value reads the literal too")
    return problem


build.register("fold", fold_literals, chapter="07_cleanup_passes",
               signature="my_fold(jaxpr) -> Jaxpr", check=rewritten_problem, selftest=_selftest)


def _fold_constants(jaxpr: Jaxpr, const_values: dict) -> Jaxpr:
    if not build.is_reference("fold"):  # the learner's literal folding first, then the rest
        jaxpr = build.call("fold", jaxpr)
    return _fold(jaxpr, const_values)


fold_constants = jaxpr_pass(_fold_constants, name="fold_constants", doc=__doc__)
