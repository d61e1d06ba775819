"""What every control-flow primitive shares: staging a Python callable as a closed sub-jaxpr.

Named after JAX's `jax/_src/lax/control_flow/common.py`. `cond`/`switch`
(`conditionals.py`) and `while_loop`/`fori_loop`/`scan` (`loops.py`) trace their callables
with `_trace`, turn each traced body into a closed sub-jaxpr with `closure_convert` (the
build track's chapter 05 piece, `minijit.build`), and check that two bodies agree on their
types with `_check_same_types`, whose message names the leaf that differs.

Invariants of the sub-jaxprs made here: no constvars (what a body captures from outside
becomes a leading operand, one per distinct outer value, `capture_key`), and weak types are
compared as strong ones.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from minijit import build
from minijit.core import (
    ShapedArray,
    get_aval,
)
from minijit.errors import api_boundaries
from minijit.ir import Jaxpr, Lit, Var
from minijit.tracing import trace_to_jaxpr
from minijit.tree_util import (
    PyTreeDef,
    keystr,
    tree_unflatten,
    treedef_paths,
)

# --------------------------------------------------------------------------- tracing helpers


def _avals(leaves) -> list[ShapedArray]:
    return [get_aval(x) for x in leaves]


def _trace(fun: Callable, in_tree: PyTreeDef, in_avals, names, fun_name: str):
    """Trace `fun(*pytree args)`; returns (jaxpr, consts, out_tree) with consts captured."""

    def flat_fun(*leaves):
        return fun(*tree_unflatten(in_tree, leaves))

    return trace_to_jaxpr(flat_fun, in_avals, names, fun_name)


def capture_key(c) -> int:
    """Which outer value a captured value stands for. Two sub-traces that capture one outer
    variable get two tracers for it (each wraps the same Var, `c.atom`), so compare keys,
    not the tracers themselves; a captured array is its own key."""
    return id(getattr(c, "atom", c))


def closure_convert(jaxpr: Jaxpr, consts: Sequence, all_consts: Sequence) -> Jaxpr:
    """The traced body `jaxpr` (constvars bound to `consts`, the outer values it captured)
    as a closed sub-jaxpr that takes the captured values as leading operands.

    Every call site of control flow comes through here, which runs the build track's piece:
    `reference_closure_convert` below, or yours after `build.use("closure_convert", ...)`.
    Invariants of the result (checked on a piece of yours, `_check_closed`): no constvars;
    one leading invar per entry of `all_consts`, in that order and of its type, then the
    body's own invars; the leading invar k stands for `all_consts[k]` wherever the body used
    a constvar for that outer value (`capture_key`), so one outer value captured by two
    branches is one operand; an entry this body never read gets a fresh Var.

    Its caller's part (checked here, for a `stage_cond` of yours): `all_consts` names each
    outer value once, and every value of `consts` among them."""
    keys = [capture_key(c) for c in all_consts]
    if len(set(keys)) != len(keys):
        raise ValueError("closure_convert: all_consts holds one outer value twice; join the "
                         "captured values by capture_key(c), each outer value once (two "
                         "tracers may stand for one value)")
    if not set(map(capture_key, consts)) <= set(keys):
        raise ValueError("closure_convert: all_consts lacks a value this body captured; it "
                         "must hold what every branch captured")
    return build.call("closure_convert", jaxpr, consts, all_consts)


def reference_closure_convert(jaxpr: Jaxpr, consts: Sequence, all_consts: Sequence) -> Jaxpr:
    """minijit's own `closure_convert`: reuse the constvars as leading invars."""
    build.guard("closure_convert")  # fails when a learner's piece hands its work to this one
    mine = {capture_key(c): v for c, v in zip(consts, jaxpr.constvars)}
    lead = tuple(mine.get(capture_key(c)) or Var(get_aval(c)) for c in all_consts)
    return Jaxpr((), lead + jaxpr.invars, jaxpr.eqns, jaxpr.outvars)


def _check_closed(got, jaxpr: Jaxpr, consts: Sequence, all_consts: Sequence) -> str | None:
    """What is wrong with `got` as `closure_convert(jaxpr, consts, all_consts)`, if anything:
    it must be minijit's result up to the names of its Vars (`_same_program`)."""
    if not isinstance(got, Jaxpr):
        return f"returned a {type(got).__name__}; it must return a Jaxpr"
    if got.constvars:
        return (f"returned a jaxpr with {len(got.constvars)} constvars; a closed sub-jaxpr has "
                "none: each captured value becomes a leading invar")
    n, m = len(all_consts), len(jaxpr.invars)
    if len(got.invars) != n + m:
        return (f"returned a jaxpr with {len(got.invars)} invars; it needs {n + m}: one per "
                f"entry of all_consts ({n}), then the body's own ({m})")
    for k, (v, c) in enumerate(zip(got.invars, all_consts)):
        if not isinstance(v, Var) or v.aval.strip_weak_type() != get_aval(c).strip_weak_type():
            what = v.aval.str_short() if isinstance(v, Var) else type(v).__name__
            return (f"made leading invar {k} a {what}, but all_consts[{k}] is a "
                    f"{get_aval(c).str_short()}")
    return _same_program(reference_closure_convert(jaxpr, consts, all_consts), got, n)


def _same_program(want: Jaxpr, got: Jaxpr, n_lead: int) -> str | None:
    """None if `got` is `want` with other Vars (the same equations, reading the same inputs)."""
    names: dict[int, Var] = {}  # id of a Var of `want` -> the Var of `got` in its place
    binders = [*want.invars] + [v for e in want.eqns for v in e.outvars]
    got_binders = [*got.invars] + [v for e in got.eqns for v in e.outvars]
    if len(got.eqns) != len(want.eqns) or len(binders) != len(got_binders):
        return (f"returned a body of {len(got.eqns)} equations where the traced body has "
                f"{len(want.eqns)}: keep its equations as they are")
    if len({id(v) for v in got_binders}) != len(got_binders):
        return "returned a jaxpr that binds one Var twice: each invar needs a Var of its own"
    names.update((id(w), g) for w, g in zip(binders, got_binders))

    def same(w, g) -> bool:
        if isinstance(w, Lit):
            return isinstance(g, Lit) and w.aval == g.aval and w.val == g.val
        return names.get(id(w)) is g

    def which(v) -> str:
        k = next((i for i, u in enumerate(got.invars) if u is v), None)
        if k is None:
            return "a Var that it does not bind (a constvar left in place?)"
        return f"invar {k} (all_consts[{k}])" if k < n_lead else f"invar {k}"

    for i, (w, g) in enumerate(zip(want.eqns, got.eqns)):
        if w is not g and (w.primitive is not g.primitive or w.params != g.params):
            return f"changed equation {i} ({w.primitive.name}): keep the body's equations"
        for a, b in zip(w.invars, g.invars):
            if not same(a, b):
                return (f"made equation {i} ({w.primitive.name}) read {which(b)}, where the "
                        f"traced body reads {which(names.get(id(a)))}: leading invar k must "
                        "be the body's constvar for all_consts[k], matched by capture_key")
    for k, (a, b) in enumerate(zip(want.outvars, got.outvars)):
        if not same(a, b):
            return (f"made output {k} {which(b)}, where the traced body returns "
                    f"{which(names.get(id(a)))}")
    return None


def _selftest(convert) -> str | None:
    """Run a candidate on the two branches of a cond nested in a loop body, which capture
    `x` and `y` from two traces out (so each branch gets tracers of its own for them)."""
    f64 = ShapedArray((2,), np.dtype(np.float64))
    w = np.array([1.0, 2.0])
    problems: list[str | None] = []

    def outer(x, y):
        def body(v):
            bodies = [trace_to_jaxpr(lambda u: (u * x + w,), [f64], ["u"]),
                      trace_to_jaxpr(lambda u: (u - y * x,), [f64], ["u"])]
            all_consts = _join_consts(*[c for _, c, _ in bodies])
            for jaxpr, consts, _ in bodies:
                problems.append(_check_closed(convert(jaxpr, consts, all_consts), jaxpr,
                                              consts, all_consts))
            return v

        trace_to_jaxpr(body, [f64], ["v"])
        return x

    trace_to_jaxpr(outer, [f64, f64], ["x", "y"])
    return next((p for p in problems if p), None)


build.register("closure_convert", reference_closure_convert, chapter="05_control_flow",
               signature="closure_convert(jaxpr, consts, all_consts) -> Jaxpr",
               check=_check_closed, selftest=_selftest)


def _join_consts(*const_lists) -> list:
    seen, out = set(), []
    for consts in const_lists:
        for c in consts:
            if capture_key(c) not in seen:
                seen.add(capture_key(c))
                out.append(c)
    return out


def _type_str(aval: ShapedArray) -> str:
    return aval.str_short()


def _strong(avals) -> list[ShapedArray]:
    return [a.strip_weak_type() for a in avals]


def _check_same_types(what: str, a_name: str, a_tree, a_avals, b_name: str, b_tree, b_avals,
                      paths: Sequence[str]):
    if a_tree != b_tree:
        raise TypeError(f"{what}: {a_name} and {b_name} must return the same structure, "
                        f"got {a_tree} and {b_tree}")
    for path, a, b in zip(paths, a_avals, b_avals):
        if a.strip_weak_type() != b.strip_weak_type():
            raise TypeError(
                f"{what}: {a_name} and {b_name} must have identical types, but at {path} "
                f"{a_name} gives {_type_str(a)} and {b_name} gives {_type_str(b)}. Convert one "
                "side explicitly (e.g. .astype(...)) so both agree."
            )


def _leaf_paths(tree: PyTreeDef) -> list[str]:
    return ["output" + keystr(p) for p in treedef_paths(tree)]


def _leaf_paths_raw(tree: PyTreeDef) -> list[str]:
    return [keystr(p) for p in treedef_paths(tree)]


# Keep last: every public function becomes an API boundary (errors.api_boundary).
api_boundaries(globals())
