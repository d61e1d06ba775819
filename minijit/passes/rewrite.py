"""Small tools every pass uses: substitution, sub-Jaxpr recursion, effects (chapter 07).

Passes never edit a Jaxpr; they build new tuples of equations. These helpers keep that cheap
and uniform, so each pass file can be read for its one idea.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from minijit.ir import (
    Atom,
    ClosedJaxpr,
    Eqn,
    Jaxpr,
    JaxprTypeError,
    Var,
    subjaxprs,
    typecheck_jaxpr,
)


class Substitution:
    """A map from Vars to the atoms that replace them (following chains)."""

    def __init__(self):
        self._map: dict[int, Atom] = {}

    def __setitem__(self, v: Var, atom: Atom) -> None:
        self._map[id(v)] = atom

    def __call__(self, a: Atom) -> Atom:
        while isinstance(a, Var) and id(a) in self._map:
            a = self._map[id(a)]
        return a

    def eqn(self, eqn: Eqn) -> Eqn:
        invars = tuple(self(a) for a in eqn.invars)
        if all(x is y for x, y in zip(invars, eqn.invars)):
            return eqn
        return replace(eqn, invars=invars)


def until_unchanged(sweep: Callable[[Jaxpr], Jaxpr], jaxpr: Jaxpr) -> Jaxpr:
    """Apply `sweep` again and again until it returns its argument itself (a fixed point)."""
    while True:
        swept = sweep(jaxpr)
        if swept is jaxpr:
            return swept
        jaxpr = swept


def map_subjaxprs(eqn: Eqn, fn: Callable[[Jaxpr], Jaxpr]) -> Eqn:
    """`eqn` with `fn` applied to every Jaxpr in its params (branches, bodies, kernels)."""
    params, changed = {}, False
    for k, v in eqn.params.items():
        if isinstance(v, Jaxpr):
            new = fn(v)
            changed |= new is not v
        elif isinstance(v, tuple) and v and all(isinstance(x, Jaxpr) for x in v):
            new = tuple(fn(x) for x in v)
            changed |= any(a is not b for a, b in zip(new, v))
        else:
            new = v
        params[k] = new
    return replace(eqn, params=params) if changed else eqn


def has_effects(eqn: Eqn) -> bool:
    """True if running `eqn` does something besides computing its outputs (debug.print)."""
    if eqn.primitive.effectful:
        return True
    return any(has_effects(e) for j in subjaxprs(eqn) for e in j.eqns)


def jaxpr_pass(fn: Callable[[Jaxpr, dict], Jaxpr], *, name: str | None = None,
               doc: str | None = None):
    """Lift `fn(jaxpr, const_values) -> jaxpr` to a pass on ClosedJaxprs.

    `const_values` maps id(constvar) to its array; it is empty inside sub-Jaxprs. The pass
    may drop constvars; their values are kept in step here. The pass is called `name` and
    documented by `doc` (default: `fn`'s own), which `run_passes` and the course show:
    `cse = jaxpr_pass(lambda jaxpr, consts: cse_jaxpr(jaxpr), name="cse", doc=__doc__)`.
    """

    def run(closed: ClosedJaxpr) -> ClosedJaxpr:
        values = {id(v): c for v, c in zip(closed.jaxpr.constvars, closed.consts)}
        new = fn(closed.jaxpr, values)
        if new is closed.jaxpr:
            return closed
        return ClosedJaxpr(new, tuple(values[id(v)] for v in new.constvars))

    run.__name__ = name or fn.__name__
    run.__doc__ = doc if doc is not None else fn.__doc__
    run.__wrapped__ = fn
    return run



def count_effects(jaxpr: Jaxpr) -> int:
    """How many equations with an effect of their own (`debug.print`) `jaxpr` holds, nested
    ones included: no cleanup pass changes this number."""
    return sum(e.primitive.effectful + sum(map(count_effects, subjaxprs(e))) for e in jaxpr.eqns)


def rewritten_problem(out, jaxpr: Jaxpr) -> str | None:
    """What is wrong with `out` as a cleanup pass's rewrite of `jaxpr`, if anything: it must be
    a Jaxpr with the same invars, outputs of the same types and every equation with effects,
    and typecheck. (The check of the build track's pass pieces: `fold`, `cse`.)"""
    if not isinstance(out, Jaxpr):
        return f"returned a {type(out).__name__}; it must return a Jaxpr"
    if len(out.invars) != len(jaxpr.invars) or any(
            a is not b for a, b in zip(out.invars, jaxpr.invars)):
        return "changed the invars of the jaxpr; they are its signature and must stay as they are"
    if [a.aval for a in out.outvars] != [a.aval for a in jaxpr.outvars]:
        return (f"returned a jaxpr with outputs {[a.aval.str_short() for a in out.outvars]}, "
                f"where the program's are {[a.aval.str_short() for a in jaxpr.outvars]}")
    if count_effects(out) != count_effects(jaxpr):
        return (f"kept {count_effects(out)} of the {count_effects(jaxpr)} equations with effects "
                "(debug.print), counting those inside sub-jaxprs; every one must stay, and "
                "run as often as before")
    try:
        typecheck_jaxpr(out)
    except JaxprTypeError as e:  # usually: an equation removed whose output is still read
        return f"returned a program that does not typecheck: {e}"
    return None
