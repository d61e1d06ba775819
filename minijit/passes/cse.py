"""Common subexpression elimination: compute each distinct expression once.

Assumes: a typechecked Jaxpr. Guarantees: no two remaining equations have the same primitive,
params and inputs (inputs of commutative primitives compared as a set). Effectful equations
(and any whose sub-Jaxprs have effects) are never merged. Sub-Jaxprs are cleaned on their own;
nothing is shared across a branch or loop body boundary.

    before: b:f64[3] = sin a; c:f64[3] = sin a; d:f64[3] = add b c
    after:  b:f64[3] = sin a; d:f64[3] = add b b

The pass runs the build track's piece `cse` (`minijit/build.py`): `cse_jaxpr` below, or a
learner's `my_cse(jaxpr) -> Jaxpr` after `build.use("cse", ...)` (chapter 07's exercise
ex07_cse). A learner's result is checked before the pipeline goes on (`rewritten_problem`:
same invars, outputs of the same types, every equation with effects kept, well typed), so a
wrong one stops with a `PieceError` naming `cse`.
"""

from __future__ import annotations

import numpy as np

from minijit import build
from minijit import primitives as P
from minijit.core import COMMUTATIVE, ShapedArray
from minijit.ir import Atom, Eqn, Jaxpr, Lit, Var
from minijit.passes.rewrite import (
    Substitution,
    has_effects,
    jaxpr_pass,
    map_subjaxprs,
    rewritten_problem,
)


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
    """Keep the first of the equations with the same `eqn_key`, every level on its own."""
    build.guard("cse")  # fails when a learner's piece hands its work to this one
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


def _selftest(candidate) -> str | None:
    """Run a candidate on `{ lambda ; a:f64[3]. let b = sin a; c = sin a; d = mul b 2.0;
    e = mul 2.0 c; f = add d e; g = mul a 0.0; h = mul a -0.0; k = sub g h; m = add f k
    in (m,) }`: a chain of duplicates (the second `mul` is one once `c` reads as `b`), a
    commutative one, equal literals that are other objects, and `0.0` and `-0.0`, which are
    equal in Python but not the same literal (`1 / (a * -0.0)` is -inf)."""
    f64 = ShapedArray((3,), np.dtype(np.float64))
    a, b, c, d, e, f, g, h, k, m = (Var(f64) for _ in range(10))

    def lit(value):
        return Lit(value, ShapedArray((), np.dtype(np.float64), weak_type=True))

    jaxpr = Jaxpr((), (a,), (Eqn(P.sin_p, (a,), (b,)), Eqn(P.sin_p, (a,), (c,)),
                             Eqn(P.mul_p, (b, lit(2.0)), (d,)), Eqn(P.mul_p, (lit(2.0), c), (e,)),
                             Eqn(P.add_p, (d, e), (f,)), Eqn(P.mul_p, (a, lit(0.0)), (g,)),
                             Eqn(P.mul_p, (a, lit(-0.0)), (h,)), Eqn(P.sub_p, (g, h), (k,)),
                             Eqn(P.add_p, (f, k), (m,))), (m,))
    out = candidate(jaxpr)
    problem = rewritten_problem(out, jaxpr)
    want = ["sin", "mul", "add", "mul", "mul", "sub", "add"]
    if problem is None and [e.primitive.name for e in out.eqns] != want:
        problem = (f"kept {[e.primitive.name for e in out.eqns]} of sin, sin, mul, mul, add, "
                   f"mul, mul, sub, add, where {want} compute every distinct value (a * 0.0 "
                   "and a * -0.0 differ)")
    return problem


build.register("cse", cse_jaxpr, chapter="07_cleanup_passes",
               signature="my_cse(jaxpr) -> Jaxpr", check=rewritten_problem, selftest=_selftest)

cse = jaxpr_pass(lambda jaxpr, const_values: build.call("cse", jaxpr), name="cse", doc=__doc__)
