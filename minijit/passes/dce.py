"""Dead code elimination: drop what no output needs.

Assumes: a typechecked Jaxpr. Guarantees: every remaining equation has an output that an
output of the Jaxpr depends on, or has effects (`debug.print`); unused constvars are gone.
Inside control flow it also drops outputs nobody uses: a `cond` output unused outside is
removed from every branch, a `scan` output `ys` unused outside is removed from the body, and
then the sub-Jaxprs are cleaned in turn. Invars are never removed (they are the signature).

    before: { lambda ; a:f64[3]. let b:f64[3] = sin a; c:f64[3] = cos a in (c,) }
    after:  { lambda ; a:f64[3]. let c:f64[3] = cos a in (c,) }

The pass runs the build track's piece `dce` (`minijit/build.py`): `dce_jaxpr` below, or a
learner's `dce_jaxpr(jaxpr) -> Jaxpr` after `build.use("dce", ...)` (chapter 07's exercise).
A learner's result is checked before the pipeline goes on: same invars, outputs of the same
types, only equations of the program (in its order, some outputs dropped at most), every
equation with effects kept, sub-Jaxprs included, and no dead code left (an equation that
writes nothing read), since fusion relies on it; `run_passes` then typechecks it.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from minijit import build
from minijit import primitives as P
from minijit.core import ShapedArray
from minijit.ir import Eqn, Jaxpr, JaxprTypeError, Lit, Var, subjaxprs, typecheck_jaxpr
from minijit.lax.control_flow import cond_p, scan_p
from minijit.passes.rewrite import has_effects, jaxpr_pass


def dce_jaxpr(jaxpr: Jaxpr, used_outputs: list[bool] | None = None) -> Jaxpr:
    """Remove dead equations; with `used_outputs`, also drop the unused outputs."""
    build.guard("dce")  # fails when a learner's piece hands its work to this one
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


def _effects(jaxpr: Jaxpr) -> int:
    """How many equations with an effect of their own (`debug.print`) `jaxpr` holds, nested
    ones included: dead code elimination never changes this number."""
    return sum(e.primitive.effectful + sum(map(_effects, subjaxprs(e))) for e in jaxpr.eqns)


def _check_dce(out, jaxpr: Jaxpr, *_) -> str | None:
    """What is wrong with `out` as the result of dead code elimination on `jaxpr`, if anything."""
    if not isinstance(out, Jaxpr):
        return f"returned a {type(out).__name__}; it must return a Jaxpr"
    if [a.aval for a in out.outvars] != [a.aval for a in jaxpr.outvars]:
        return (f"returned a jaxpr with outputs {[a.aval.str_short() for a in out.outvars]}, "
                f"where the program's are {[a.aval.str_short() for a in jaxpr.outvars]}")
    problem = _only_removes(out, jaxpr, "the jaxpr")
    if problem:
        return problem
    if _effects(out) != _effects(jaxpr):
        return (f"kept {_effects(out)} of the {_effects(jaxpr)} equations with effects "
                "(debug.print), counting those inside sub-jaxprs; every one must stay")
    try:
        typecheck_jaxpr(out)
    except JaxprTypeError as e:  # usually: an equation removed whose output is still read
        return f"returned a program that does not typecheck: {e}"
    left = _left_dead(out, "the jaxpr")
    if left:  # the later passes (fusion) assume every equation is needed
        return (f"left dead code: {left}. Later passes rely on dead code being gone; one walk "
                "from the last equation to the first, keeping what the live values need, "
                "removes a whole dead chain")
    return None


def _left_dead(jaxpr: Jaxpr, where: str) -> str | None:
    """An equation of `jaxpr` (or of a sub-jaxpr, whose own outputs count as used) that has no
    effect and writes nothing that a later equation or an output reads, described; else None."""
    read = {id(a) for a in jaxpr.outvars if isinstance(a, Var)}
    for k in reversed(range(len(jaxpr.eqns))):
        eqn = jaxpr.eqns[k]
        if not has_effects(eqn) and not any(id(v) in read for v in eqn.outvars):
            return f"equation {k} of {where} ({eqn.primitive.name}) writes nothing that is read"
        read.update(id(a) for a in eqn.invars if isinstance(a, Var))
        for sub in subjaxprs(eqn):
            problem = _left_dead(sub, f"a sub-jaxpr of {eqn.primitive.name}")
            if problem:
                return problem
    return None


def _only_removes(new: Jaxpr, old: Jaxpr, where: str, kept: list[int] | None = None):
    """What `new` does besides removing equations (and unused outputs) of `old`, if anything.

    `kept`: the positions of `old`'s outputs that `new` keeps (those its equation keeps, for
    the branches of a `cond` or the body of a `scan`); None for all of them."""
    if len(new.invars) != len(old.invars) or any(
            a is not b for a, b in zip(new.invars, old.invars)):
        return f"changed the invars of {where}; they are its signature and must stay as they are"
    if any(all(v is not c for c in old.constvars) for v in new.constvars):
        return f"returned constvars for {where} that are not its own; it may only drop some"
    want = old.outvars if kept is None else tuple(old.outvars[p] for p in kept)
    if len(new.outvars) != len(want) or not all(map(_same_atom, new.outvars, want)):
        return f"changed the outputs of {where}; dead code elimination keeps them as they are"
    original = iter(old.eqns)  # each kept equation is one of the program's, in its order
    for k, e in enumerate(new.eqns):
        o = next((o for o in original if o.primitive is e.primitive
                  and len(o.invars) == len(e.invars)
                  and all(a is b for a, b in zip(o.invars, e.invars))
                  and _subsequence(e.outvars, o.outvars)), None)
        if o is None:
            return (f"returned equation {k} of {where} ({e.primitive.name}), which is not "
                    "one of its own, or not in its order: dead code elimination only removes")
        positions = [next(p for p, b in enumerate(o.outvars) if a is b) for a in e.outvars]
        for key, value in e.params.items():
            subs, before = _jaxprs(value), _jaxprs(o.params.get(key))
            if len(subs) != len(before):
                return f"changed the sub-jaxprs of equation {k} of {where} ({e.primitive.name})"
            for sub, was in zip(subs, before):
                shrunk = (positions if len(positions) < len(o.outvars)
                          and len(was.outvars) == len(o.outvars) else None)
                problem = _only_removes(sub, was, f"a sub-jaxpr of {e.primitive.name}", shrunk)
                if problem:
                    return problem
    return None


def _jaxprs(value) -> tuple:
    if isinstance(value, Jaxpr):
        return (value,)
    if isinstance(value, tuple) and value and all(isinstance(x, Jaxpr) for x in value):
        return value
    return ()


def _same_atom(a, b) -> bool:
    if isinstance(a, Lit) and isinstance(b, Lit):
        return a.aval == b.aval and (np.asarray(a.val, a.aval.dtype).tobytes()
                                     == np.asarray(b.val, b.aval.dtype).tobytes())
    return a is b


def _subsequence(part, whole) -> bool:
    rest = iter(whole)
    return all(any(a is b for b in rest) for a in part)


def _selftest(candidate) -> str | None:
    """Run a candidate on `{ lambda ; a. let b = sin a; e = exp b; c = mul a 2.0;
    d = cos c in (d,) }`: `sin` and `exp` are a dead chain (a walk that only drops what
    nothing reads leaves `sin`)."""
    f64 = ShapedArray((3,), np.dtype(np.float64))
    a, b, c, d, e = Var(f64), Var(f64), Var(f64), Var(f64), Var(f64)
    two = Lit(2.0, ShapedArray((), np.dtype(np.float64), weak_type=True))
    jaxpr = Jaxpr((), (a,), (Eqn(P.sin_p, (a,), (b,)), Eqn(P.exp_p, (b,), (e,)),
                             Eqn(P.mul_p, (a, two), (c,)), Eqn(P.cos_p, (c,), (d,))), (d,))
    out = candidate(jaxpr)
    problem = _check_dce(out, jaxpr)
    if problem is None and [e.primitive for e in out.eqns] != [P.mul_p, P.cos_p]:
        problem = (f"kept {[e.primitive.name for e in out.eqns]} of sin, exp, mul, cos, where "
                   "only mul and cos are live")
    return problem


build.register("dce", dce_jaxpr, chapter="07_cleanup_passes",
               signature="dce_jaxpr(jaxpr) -> Jaxpr", check=_check_dce, selftest=_selftest)


def _dce(jaxpr: Jaxpr, const_values: dict) -> Jaxpr:
    return build.call("dce", jaxpr)


dce = jaxpr_pass(_dce, name="dce", doc=__doc__)
