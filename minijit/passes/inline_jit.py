"""Inlining: replace each call of a jitted function (a `jit` equation) by the body it holds.

A jitted function called inside another traced function stays one `jit` equation in the
trace, as in JAX, so the printed program shows the call. To the optimizer a call is a wall:
`cse` cannot share work across it, `fuse_elementwise` cannot fuse through it, and code
generation would need a rule for it. So this pass runs first and flattens every call; the
passes after it, and the backends, see one program.

Assumes: a typechecked Jaxpr. Guarantees: no `jit` equation is left, at the top level or in
any sub-Jaxpr (branches, loop bodies, calls inside calls); each call's equations stand where
the call stood, in their order, with fresh output Vars (a body inlined twice defines nothing
twice), so values and effects (`debug.print` in the callee runs once per call) are unchanged.
A program without calls is returned as it is, so the pass is idempotent.

    before: { lambda ; a:f64[3]. let
                b:f64[3] = jit[name=inner jaxpr={ lambda ; a:f64[3]. let
                  c:f64[3] = sin a; b:f64[3] = mul c 2.0:f64[] in (b,) }] a
                d:f64[3] = add b 1.0:f64[] in (d,) }
    after:  { lambda ; a:f64[3]. let
                b:f64[3] = sin a; c:f64[3] = mul b 2.0:f64[]; d:f64[3] = add c 1.0:f64[] in (d,) }
"""

from __future__ import annotations

from dataclasses import replace

from minijit.ir import Eqn, Jaxpr, Var
from minijit.jit_call import jit_p
from minijit.passes.rewrite import Substitution, jaxpr_pass, map_subjaxprs


def inline_jaxpr(jaxpr: Jaxpr) -> Jaxpr:
    subst = Substitution()  # a call's outvars -> the atoms its body returns
    eqns: list[Eqn] = []
    changed = False
    for eqn in jaxpr.eqns:
        new = map_subjaxprs(subst.eqn(eqn), inline_jaxpr)  # bodies are flat from here on
        changed |= new is not eqn
        if new.primitive is not jit_p:
            eqns.append(new)
            continue
        changed = True
        body = new.params["jaxpr"]
        inner = Substitution()  # the body's Vars -> the caller's atoms, or fresh Vars
        for v, a in zip(body.invars, new.invars):
            inner[v] = a
        for e in body.eqns:
            outs = tuple(Var(v.aval) for v in e.outvars)
            eqns.append(replace(inner.eqn(e), outvars=outs))
            for v, fresh in zip(e.outvars, outs):
                inner[v] = fresh
        for v, a in zip(new.outvars, body.outvars):
            subst[v] = inner(a)
    if not changed:
        return jaxpr
    return Jaxpr(jaxpr.constvars, jaxpr.invars, tuple(eqns),
                 tuple(subst(a) for a in jaxpr.outvars))


inline_jit = jaxpr_pass(lambda jaxpr, const_values: inline_jaxpr(jaxpr),
                         name="inline_jit", doc=__doc__)
