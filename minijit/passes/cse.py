"""Common subexpression elimination: compute each distinct expression once.

Assumes: a typechecked Jaxpr. Guarantees: no two remaining equations have the same primitive,
params and inputs (inputs of commutative primitives compared as a set). Effectful equations
(and any whose sub-Jaxprs have effects) are never merged. Sub-Jaxprs are cleaned on their own;
nothing is shared across a branch or loop body boundary.

    before: b:f64[3] = sin a; c:f64[3] = sin a; d:f64[3] = add b c
    after:  b:f64[3] = sin a; d:f64[3] = add b b
"""

from __future__ import annotations

import numpy as np

from minijit.core import COMMUTATIVE
from minijit.ir import Atom, Eqn, Jaxpr, Lit
from minijit.passes.rewrite import Substitution, has_effects, jaxpr_pass, map_subjaxprs


def _atom_key(a: Atom):
    if isinstance(a, Lit):  # by bits: 0.0 == -0.0 in Python, but `x * -0.0` is not `x * 0.0`
        return ("lit", np.asarray(a.val, a.aval.dtype).tobytes(), a.aval.dtype)
    return ("var", id(a))


def _param_key(value):
    if isinstance(value, (list, tuple)):
        return tuple(_param_key(v) for v in value)
    try:
        hash(value)
        return value
    except TypeError:
        return ("id", id(value))


def eqn_key(eqn: Eqn):
    args = [_atom_key(a) for a in eqn.invars]
    if eqn.primitive in COMMUTATIVE:
        args.sort(key=repr)
    params = tuple(sorted((k, _param_key(v)) for k, v in eqn.params.items()))
    return (eqn.primitive, tuple(args), params)


def cse_jaxpr(jaxpr: Jaxpr) -> Jaxpr:
    subst = Substitution()
    seen: dict = {}
    eqns = []
    for eqn in jaxpr.eqns:
        eqn = map_subjaxprs(subst.eqn(eqn), cse_jaxpr)
        if not has_effects(eqn):
            key = eqn_key(eqn)
            if key in seen:
                for old, new in zip(seen[key].outvars, eqn.outvars):
                    subst[new] = old
                continue
            seen[key] = eqn
        eqns.append(eqn)
    if len(eqns) == len(jaxpr.eqns) and all(a is b for a, b in zip(eqns, jaxpr.eqns)):
        return jaxpr
    return Jaxpr(jaxpr.constvars, jaxpr.invars, tuple(eqns),
                 tuple(subst(a) for a in jaxpr.outvars))


cse = jaxpr_pass(lambda jaxpr, const_values: cse_jaxpr(jaxpr), name="cse", doc=__doc__)
