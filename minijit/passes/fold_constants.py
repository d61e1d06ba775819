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
"""

from __future__ import annotations

import numpy as np

from minijit.core import impl_rules
from minijit.ir import Jaxpr, Lit, Var, subjaxprs
from minijit.passes.rewrite import Substitution, has_effects, jaxpr_pass, map_subjaxprs

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


fold_constants = jaxpr_pass(_fold, name="fold_constants", doc=__doc__)
