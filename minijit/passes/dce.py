"""Dead code elimination: drop what no output needs.

Assumes: a typechecked Jaxpr. Guarantees: every remaining equation has an output that an
output of the Jaxpr depends on, or has effects (`debug.print`); unused constvars are gone.
Inside control flow it also drops outputs nobody uses: a `cond` output unused outside is
removed from every branch, a `scan` output `ys` unused outside is removed from the body, and
then the sub-Jaxprs are cleaned in turn. Invars are never removed (they are the signature).

    before: { lambda ; a:f64[3]. let b:f64[3] = sin a; c:f64[3] = cos a in (c,) }
    after:  { lambda ; a:f64[3]. let c:f64[3] = cos a in (c,) }
"""

from __future__ import annotations

from dataclasses import replace

from minijit.ir import Eqn, Jaxpr, Var
from minijit.lax.control_flow import cond_p, scan_p
from minijit.passes.rewrite import has_effects, jaxpr_pass


def dce_jaxpr(jaxpr: Jaxpr, used_outputs: list[bool] | None = None) -> Jaxpr:
    """Remove dead equations; with `used_outputs`, also drop the unused outputs."""
    outvars = jaxpr.outvars if used_outputs is None else tuple(
        a for a, u in zip(jaxpr.outvars, used_outputs) if u)
    live = {id(a) for a in outvars if isinstance(a, Var)}
    kept = []
    for eqn in reversed(jaxpr.eqns):
        used = [id(v) in live for v in eqn.outvars]
        if not any(used) and not has_effects(eqn):
            continue
        eqn = _shrink(eqn, used)
        kept.append(eqn)
        live.update(id(a) for a in eqn.invars if isinstance(a, Var))
    kept.reverse()
    constvars = tuple(v for v in jaxpr.constvars if id(v) in live)
    if (len(kept) == len(jaxpr.eqns) and all(a is b for a, b in zip(kept, jaxpr.eqns))
            and len(constvars) == len(jaxpr.constvars) and outvars == jaxpr.outvars):
        return jaxpr
    return Jaxpr(constvars, jaxpr.invars, tuple(kept), outvars)


def _shrink(eqn: Eqn, used: list[bool]) -> Eqn:
    """Clean an equation's sub-Jaxprs, dropping outputs its users do not need."""
    if eqn.primitive is cond_p and not all(used):
        branches = tuple(dce_jaxpr(b, used) for b in eqn.params["branches"])
        outvars = tuple(v for v, u in zip(eqn.outvars, used) if u)
        return replace(eqn, outvars=outvars, params={**eqn.params, "branches": branches})
    if eqn.primitive is scan_p:
        n_carry = eqn.params["num_carry"]
        keep = [True] * n_carry + used[n_carry:]
        if not all(keep):
            body = dce_jaxpr(eqn.params["jaxpr"], keep)
            outvars = tuple(v for v, k in zip(eqn.outvars, keep) if k)
            return replace(eqn, outvars=outvars, params={**eqn.params, "jaxpr": body})
    new_params, changed = {}, False
    for k, v in eqn.params.items():
        if isinstance(v, Jaxpr):
            new_params[k] = dce_jaxpr(v)
        elif isinstance(v, tuple) and v and all(isinstance(x, Jaxpr) for x in v):
            new_params[k] = tuple(dce_jaxpr(x) for x in v)
        else:
            new_params[k] = v
        changed |= new_params[k] is not v
    return replace(eqn, params=new_params) if changed else eqn


def _dce(jaxpr: Jaxpr, const_values: dict) -> Jaxpr:
    return dce_jaxpr(jaxpr)


dce = jaxpr_pass(_dce, name="dce", doc=__doc__)
