"""Counted loops: give the code generator back the `for i in range(lower, upper)` that
`lax.fori_loop` means.

`lax.fori_loop` stages, as JAX's does, either a `scan` whose first carry counts the steps or a
`while` over `(i, upper, carry...)` whose condition is `i < upper`. A `while_loop` written by
hand often counts too: over `(i, carry...)` with the condition `i < 4`, or `i < n` for an `n`
the loop does not change (a constant of the condition). Each hides a counted loop behind a
general one: generated code would test a condition, and keep a counter it never reads, on
every iteration (that code is also what Numba compiles: control flow 1 deep, a `while` of
4 steps, compiled with about 8% fewer instructions as a `for`), and loop interchange (see
`codegen.control_rules.interchangeable`) could not apply. This pass recognises these
patterns and rewrites each into `fori_loop`, minijit's own counted-loop primitive, which only
the optimizer introduces (as XLA recognises known trip counts in its while loops).

Why it is the same loop: the body runs while `i < upper` and adds 1 to `i`, which starts at
`lower`, so it runs for `i` in `range(lower, upper)` (no step when `lower >= upper`); `i + 1`
cannot overflow, since `i < upper`.

Assumes: a typechecked Jaxpr. Guarantees: the same values and effects, with every loop of
either pattern, at any depth, a `fori_loop` whose body takes `(consts..., i, carry...)` and
returns the carry; a loop is rewritten only if nothing reads its counter (or, for a `while`,
its bound) after the loop; other loops are left as they are.

    before: { lambda ; a:f64[]. let
                _:i64[] b:f64[] = scan[jaxpr={ lambda ; c:i64[] d:f64[]. let
                  e:i64[] = add c 1:i64[]; f:f64[] = mul d 2.0:f64[] in (e, f) }
                  length=3 num_carry=2 num_consts=0 reverse=False unroll=1] 0:i64[] a
              in (b,) }
    after:  { lambda ; a:f64[]. let
                b:f64[] = fori_loop[body_jaxpr={ lambda ; c:i64[] d:f64[]. let
                  f:f64[] = mul d 2.0:f64[] in (f,) } body_nconsts=0] 0:i64[] 3:i64[] a
              in (b,) }
"""

from __future__ import annotations

import numpy as np

from minijit import build, dtypes
from minijit import primitives as P
from minijit.core import Primitive, ShapedArray, abstract_eval_rules, impl_rules
from minijit.interpret import eval_jaxpr
from minijit.ir import Eqn, Jaxpr, Lit, Var
from minijit.lax.control_flow import scan_p, while_p
from minijit.passes.rewrite import jaxpr_pass, map_subjaxprs

fori_loop_p = Primitive("fori_loop", multiple_results=True)


def _fori_abstract_eval(lower, upper, *args, body_jaxpr, body_nconsts):
    if lower.dtype != upper.dtype or not dtypes.is_int(lower.dtype):
        raise TypeError("fori_loop: bounds must be integers of one dtype")
    carry = list(args[body_nconsts:])
    want_in = [*args[:body_nconsts], ShapedArray((), lower.dtype), *carry]
    strong = [a.strip_weak_type() for a in body_jaxpr.in_avals]
    if strong != [a.strip_weak_type() for a in want_in] or [
            a.strip_weak_type() for a in body_jaxpr.out_avals] != [
            a.strip_weak_type() for a in carry]:
        raise TypeError("fori_loop: the body must take (consts, i, carry) and return the carry")
    return carry


def _fori_impl(lower, upper, *args, body_jaxpr, body_nconsts):
    consts, carry = args[:body_nconsts], list(args[body_nconsts:])
    for i in range(int(lower), int(upper)):
        carry = eval_jaxpr(body_jaxpr, (), *consts, np.asarray(i, lower.dtype), *carry)
    return carry


abstract_eval_rules[fori_loop_p] = _fori_abstract_eval
impl_rules[fori_loop_p] = _fori_impl


def _is_increment(eqn: Eqn, i: Var) -> bool:
    """Is `eqn` `add i 1` (either way round)?"""
    if eqn.primitive is not P.add_p:
        return False
    a, b = eqn.invars
    one = b if a is i else a if b is i else None
    return isinstance(one, Lit) and one.val == 1


def _counts(body: Jaxpr, i: Var) -> bool:
    """Does `body` return `i + 1` as its first output?"""
    first = body.outvars[0]
    return any(first in e.outvars and _is_increment(e, i) for e in body.eqns)


def _from_scan(eqn: Eqn, read: set[int]) -> Eqn | None:
    p = eqn.params
    nc, nk, body = p["num_consts"], p["num_carry"], p["jaxpr"]
    if (p["reverse"] or nk < 1 or len(eqn.invars) != nc + nk or len(eqn.outvars) != nk
            or id(eqn.outvars[0]) in read):
        return None
    lower, i = eqn.invars[nc], body.invars[nc]
    if not (isinstance(lower, Lit) and dtypes.is_int(i.aval.dtype) and _counts(body, i)):
        return None
    upper = Lit(int(lower.val) + p["length"], lower.aval)
    # the build track's dce (a learner's, once switched in): the counter's update is dead now
    new_body = build.call("dce", Jaxpr((), body.invars, body.eqns, body.outvars[1:]))
    return Eqn(fori_loop_p, (lower, upper, *eqn.invars[:nc], *eqn.invars[nc + 1:]),
               eqn.outvars[1:], {"body_jaxpr": new_body, "body_nconsts": nc}, eqn.source)


def _from_while(eqn: Eqn, read: set[int]) -> Eqn | None:
    p = eqn.params
    cc, bc, cond, body = p["cond_nconsts"], p["body_nconsts"], p["cond_jaxpr"], p["body_jaxpr"]
    carry_in = eqn.invars[cc + bc:]
    if not carry_in or id(eqn.outvars[0]) in read:
        return None
    if not (len(cond.eqns) == 1 and cond.eqns[0].primitive is P.lt_p
            and cond.eqns[0].invars[0] is cond.invars[cc] and cond.outvars == cond.eqns[0].outvars):
        return None
    bound = cond.eqns[0].invars[1]
    consts, i = body.invars[:bc], body.invars[bc]
    if not (dtypes.is_int(i.aval.dtype) and _counts(body, i)):
        return None
    if len(carry_in) >= 2 and bound is cond.invars[cc + 1]:
        return _bound_carried(eqn, read)
    # A bound the loop does not change: a literal, or a constant of the condition.
    fixed = [k for k, v in enumerate(cond.invars[:cc]) if v is bound]
    upper = bound if isinstance(bound, Lit) else eqn.invars[fixed[0]] if fixed else None
    if upper is None or upper.aval.dtype != carry_in[0].aval.dtype:
        return None
    new_body = build.call("dce", Jaxpr((), (*consts, i, *body.invars[bc + 1:]), body.eqns,
                                       body.outvars[1:]))
    return Eqn(fori_loop_p, (carry_in[0], upper, *eqn.invars[cc:cc + bc], *carry_in[1:]),
               eqn.outvars[1:], {"body_jaxpr": new_body, "body_nconsts": bc}, eqn.source)


def _bound_carried(eqn: Eqn, read: set[int]) -> Eqn | None:
    """A `while` over `(i, upper, carry...)`, as `lax.fori_loop` stages it: the bound is the
    second carry, which the body must pass on unchanged."""
    p = eqn.params
    cc, bc, body = p["cond_nconsts"], p["body_nconsts"], p["body_jaxpr"]
    carry_in = eqn.invars[cc + bc:]
    if id(eqn.outvars[1]) in read:
        return None
    consts, i, up, carry = body.invars[:bc], body.invars[bc], body.invars[bc + 1], \
        body.invars[bc + 2:]
    if body.outvars[1] is not up:
        return None
    # The bound, if the body reads it, becomes one more constant of the loop.
    uses_bound = any(up in e.invars for e in body.eqns) or up in body.outvars[2:]
    extra = (up,) if uses_bound else ()
    new_body = build.call("dce", Jaxpr((), (*consts, *extra, i, *carry), body.eqns,
                                       body.outvars[2:]))
    lower, upper = carry_in[:2]
    bound_consts = (upper,) if uses_bound else ()
    return Eqn(fori_loop_p, (lower, upper, *eqn.invars[cc:cc + bc], *bound_consts,
                             *carry_in[2:]),
               eqn.outvars[2:], {"body_jaxpr": new_body, "body_nconsts": bc + len(extra)},
               eqn.source)


def counted_loops_jaxpr(jaxpr: Jaxpr) -> Jaxpr:
    read = {id(a) for e in jaxpr.eqns for a in e.invars} | {id(a) for a in jaxpr.outvars}
    eqns, changed = [], False
    for eqn in jaxpr.eqns:
        new = map_subjaxprs(eqn, counted_loops_jaxpr)
        rewrite = {scan_p: _from_scan, while_p: _from_while}.get(new.primitive)
        new = (rewrite and rewrite(new, read)) or new
        changed |= new is not eqn
        eqns.append(new)
    return Jaxpr(jaxpr.constvars, jaxpr.invars, tuple(eqns), jaxpr.outvars) if changed \
        else jaxpr


counted_loops = jaxpr_pass(lambda jaxpr, const_values: counted_loops_jaxpr(jaxpr),
                           name="counted_loops", doc=__doc__)
