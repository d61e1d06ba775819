"""Elementwise fusion: group chains of elementwise work into one `fused` equation.

The rule for what may fuse (tested in tests/test_passes.py):
1. Elementwise equations (`ELEMENTWISE`: unary, binary, select_n, convert_element_type) and
   `broadcast_in_dim` (a change of indexing, not of data) may fuse, if they are not effectful.
2. They fuse into a group when they consume a value the group produced and share its
   iteration shape (their output shape); scalar (rank-0) work is never fused.
3. A reduction (`reduce_sum/max/min/prod`) may join a group as its last member when it
   consumes a value of the group's shape: the group then computes the reduction without
   materialising its input. Nothing joins after a reduction.
4. A group closes as soon as an equation outside it uses one of its values; closed groups take
   no new members (this keeps the program acyclic).
5. Groups of one equation are left unfused.
6. The sweep repeats until nothing changes: emitting a group where its last member was can
   bring together equations that rule 4 kept apart, and running the pass again must find
   nothing left to fuse.

Rule 1 is the build track's piece `may_fuse`, rules 2-5 its piece `fusion_groups`
(`minijit/build.py`): a learner's version of either, switched in, decides the kernels of
`run_passes` and `mj.jit`, and minijit checks its answers before it builds a kernel.

Assumes: a typechecked Jaxpr. Guarantees: same values; each group becomes
`outs = fused[jaxpr={...} kind=elementwise|reduction] ins`, whose sub-Jaxpr holds the group's
equations, takes the group's outside inputs, and returns every value used outside the group.

    before: { lambda ; a:f64[3]. let b:f64[3] = sin a; c:f64[3] = mul b 2.0:f64[] in (c,) }
    after:  { lambda ; a:f64[3]. let c:f64[3] = fused[jaxpr={ lambda ; d:f64[3]. let
                e:f64[3] = sin d; f:f64[3] = mul e 2.0:f64[] in (f,) } kind=elementwise] a in (c,) }
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from minijit import build
from minijit import primitives as P
from minijit.core import Primitive, ShapedArray, abstract_eval_rules, impl_rules
from minijit.interpret import eval_jaxpr
from minijit.ir import Eqn, Jaxpr, Lit, Var, pp_eqn_alone
from minijit.passes.rewrite import (
    Substitution,
    has_effects,
    jaxpr_pass,
    map_subjaxprs,
    until_unchanged,
)

fused_p = Primitive("fused", multiple_results=True)


def _fused_abstract_eval(*avals: ShapedArray, jaxpr: Jaxpr, kind: str):
    if [a.strip_weak_type() for a in avals] != [a.strip_weak_type() for a in jaxpr.in_avals]:
        raise TypeError("fused: operands do not match the kernel's inputs")
    return jaxpr.out_avals


abstract_eval_rules[fused_p] = _fused_abstract_eval
impl_rules[fused_p] = lambda *args, jaxpr, kind: eval_jaxpr(jaxpr, (), *args)

FUSIBLE_REDUCTIONS = {P.reduce_sum_p, P.reduce_max_p, P.reduce_min_p, P.reduce_prod_p}


def may_fuse(eqn: Eqn) -> bool:
    """Rule 1: may this equation be part of an elementwise kernel? The build track's piece
    `may_fuse`: minijit's `reference_may_fuse`, or a learner's after `build.use("may_fuse",
    ...)` (chapter 08's exercise ex08_may_fuse), whose every True is checked (`_why_not`)."""
    if build.is_reference("may_fuse"):  # the common case, one call: fusion asks per equation
        return reference_may_fuse(eqn)
    if build.running("may_fuse") is not None:  # the learner's may_fuse asks minijit's
        build.guard("may_fuse")
    return build.call("may_fuse", eqn)


def reference_may_fuse(eqn: Eqn) -> bool:
    """minijit's own rule 1: per element (`ELEMENTWISE` or `broadcast_in_dim`), without
    effects, with an array (not rank-0) output."""
    build.guard("may_fuse")  # fails when a learner's piece hands its work to this one
    out_shape = eqn.outvars[0].aval.shape if eqn.outvars else ()
    return P.per_element(eqn.primitive) and not has_effects(eqn) and out_shape != ()


def _why_not(eqn: Eqn) -> str | None:
    """Why rule 1 forbids `eqn` to fuse, in words; None if it may fuse."""
    if not eqn.outvars:
        return "it has no outputs (an effect)"
    if not P.per_element(eqn.primitive):
        return "it is neither elementwise nor a broadcast_in_dim"
    if has_effects(eqn):
        return "it has effects"
    if eqn.outvars[0].aval.shape == ():
        return "its output is a scalar (rank 0)"
    return None


def _check_may_fuse(answer, eqn: Eqn) -> str | None:
    """A learner's answer must be a bool, and True only where rule 1 allows it: a kernel
    cannot compute anything else (False where it allows is legal, only less fused)."""
    if type(answer) not in (bool, np.bool_):
        return f"returned {answer!r}; it must answer True or False"
    why = _why_not(eqn) if answer else None
    if why:
        return (f"said True for `{pp_eqn_alone(eqn)}`, which may not fuse: {why}. An "
                "elementwise kernel computes only per-element work without effects on arrays")
    return None


def _selftest_may_fuse(candidate) -> str | None:
    """Ask a candidate about sin of an array, of a scalar and of one element, a broadcast,
    a reduction, a transpose and an equation with an effect and no outputs."""
    f64 = np.dtype(np.float64)
    x, s, one = (Var(ShapedArray(shape, f64)) for shape in ((2, 3), (), (1,)))

    def eqn(prim, ins, out_shape, **params):
        outs = (Var(ShapedArray(out_shape, f64)),) if out_shape is not None else ()
        return Eqn(prim, ins, outs, params)

    cases = [(eqn(P.sin_p, (x,), (2, 3)), True), (eqn(P.sin_p, (s,), ()), False),
             (eqn(P.sin_p, (one,), (1,)), True),
             (eqn(P.broadcast_in_dim_p, (s,), (2, 3), shape=(2, 3), broadcast_dimensions=()),
              True),
             (eqn(P.reduce_sum_p, (x,), (3,), axes=(0,)), False),
             (eqn(P.transpose_p, (x,), (3, 2), permutation=(1, 0)), False),
             (eqn(Primitive("print", effectful=True), (x,), None), False)]
    for e, want in cases:
        answer = candidate(e)
        problem = _check_may_fuse(answer, e)
        if problem is None and bool(answer) != want:
            problem = f"said {answer} for `{pp_eqn_alone(e)}`, where rule 1 says {want}"
        if problem:
            return problem
    return None


build.register("may_fuse", reference_may_fuse, chapter="08_fusion_and_buffers",
               signature="may_fuse(eqn) -> bool", check=_check_may_fuse,
               selftest=_selftest_may_fuse)


@dataclass(eq=False)
class _Group:
    shape: tuple[int, ...]
    eqns: list[Eqn] = field(default_factory=list)
    open: bool = True
    reduction: bool = False


def fuse_jaxpr(jaxpr: Jaxpr) -> Jaxpr:
    """Fuse sweep after sweep until a sweep changes nothing (rule 6)."""
    return until_unchanged(_fuse_once, jaxpr)


def as_kernel(eqn: Eqn) -> Eqn:
    """`eqn` as a `fused` equation of one member, with fresh variables for the kernel's own
    scope (a `fused` equation is returned as it is)."""
    if eqn.primitive is fused_p:
        return eqn
    inputs = list(dict.fromkeys(a for a in eqn.invars if isinstance(a, Var)))
    inner = Substitution()
    for a in inputs:
        inner[a] = Var(a.aval)
    outs = tuple(Var(v.aval) for v in eqn.outvars)
    body = Eqn(eqn.primitive, tuple(inner(a) for a in eqn.invars), outs, eqn.params,
               eqn.source)
    kind = "reduction" if eqn.primitive in FUSIBLE_REDUCTIONS else "elementwise"
    return Eqn(fused_p, tuple(inputs), eqn.outvars,
               {"jaxpr": Jaxpr((), tuple(inner(a) for a in inputs), (body,), outs),
                "kind": kind}, eqn.source)


def fusion_groups(jaxpr: Jaxpr) -> list[list[int]]:
    """Rules 2-5: which equations of `jaxpr` (its own, not its sub-Jaxprs') form one kernel.

    Returns groups of equation indices, each in program order; a group of one is no kernel
    and may be left out. This is the build track's piece `fusion_groups`: `_fuse_once` asks
    `build.call("fusion_groups", jaxpr)`, so a learner's version (`build.use`) decides the
    kernels of `mj.jit` and `run_passes` too; `_check_groups` vets what it returns.
    """
    build.guard("fusion_groups")  # fails when a learner's piece hands its work to this one
    groups: list[_Group] = []
    owner: dict[int, _Group] = {}  # id(var) -> the group that produces it
    index = {id(e): i for i, e in enumerate(jaxpr.eqns)}

    def merge(into: _Group, other: _Group):
        into.eqns.extend(other.eqns)
        for e in other.eqns:
            for v in e.outvars:
                owner[id(v)] = into
        groups.remove(other)

    for eqn in jaxpr.eqns:
        feeding = []
        for a in eqn.invars:
            g = owner.get(id(a)) if isinstance(a, Var) else None
            if g is not None and g not in feeding:
                feeding.append(g)
        target = None
        if may_fuse(eqn):
            shape = eqn.outvars[0].aval.shape
            joinable = [g for g in feeding if g.open and not g.reduction and g.shape == shape]
            if joinable:  # rule 2
                target = joinable[0]
                for g in joinable[1:]:
                    merge(target, g)
            else:
                target = _Group(shape)
                groups.append(target)
        elif eqn.primitive in FUSIBLE_REDUCTIONS and not has_effects(eqn):
            g = owner.get(id(eqn.invars[0])) if isinstance(eqn.invars[0], Var) else None
            if g is not None and g.open and not g.reduction and g.shape == eqn.invars[0].aval.shape:
                target = g  # rule 3
                target.reduction = True
        for g in feeding:  # rule 4
            if g is not target:
                g.open = False
        if target is not None:
            target.eqns.append(eqn)
            for v in eqn.outvars:
                owner[id(v)] = target
            if target.reduction:
                target.open = False
    return [sorted(index[id(e)] for e in g.eqns) for g in groups if len(g.eqns) > 1]  # rule 5


def _fuse_once(jaxpr: Jaxpr) -> Jaxpr:
    # every equation, sub-Jaxprs already fused (a kernel is already fused: do not nest another)
    program = [e if e.primitive is fused_p else map_subjaxprs(e, fuse_jaxpr)
               for e in jaxpr.eqns]
    groups = []
    for members in build.call("fusion_groups", jaxpr):
        if len(members) > 1:  # rule 5
            g = _Group(program[members[-1]].outvars[0].aval.shape)
            g.eqns = [program[i] for i in sorted(members)]
            g.reduction = g.eqns[-1].primitive in FUSIBLE_REDUCTIONS
            groups.append(g)
    if not groups:
        return jaxpr if all(a is b for a, b in zip(program, jaxpr.eqns)) else Jaxpr(
            jaxpr.constvars, jaxpr.invars, tuple(program), jaxpr.outvars)
    return _emit(jaxpr, program, groups)


def _check_groups(groups, jaxpr: Jaxpr) -> str | None:
    """What is wrong with `groups` as the kernels of `jaxpr`, if anything: each index once,
    each group fusible (`may_fuse`, one shape, a reduction only last), and no cycle (each
    group can run where its last member was: everything it reads is computed before)."""
    if not isinstance(groups, (list, tuple)) or not all(
            isinstance(g, (list, tuple)) for g in groups):
        return f"returned {type(groups).__name__}; it must return a list of lists of indices"
    n, seen = len(jaxpr.eqns), set()
    for k, members in enumerate(groups):
        if not all(isinstance(i, (int, np.integer)) and not isinstance(i, bool)
                   and 0 <= i < n for i in members):
            return f"returned group {k} = {list(members)}: indices must be ints in range({n})"
        if seen & set(members) or len(set(members)) < len(members):
            return f"returned group {k} = {list(members)}, with an equation in two groups"
        seen |= set(members)
        if len(members) < 2:
            continue
        eqns = [jaxpr.eqns[i] for i in sorted(members)]
        *body, last = eqns
        reduction = last.primitive in FUSIBLE_REDUCTIONS and not has_effects(last)
        shape = last.invars[0].aval.shape if reduction else last.outvars[0].aval.shape
        for i, e in zip(sorted(members), eqns if not reduction else body):
            if _why_not(e):  # rule 1 itself: a learner's may_fuse may say False more often
                return (f"returned group {k} = {list(members)}, whose equation {i} "
                        f"({e.primitive.name}) may not fuse (may_fuse is False)")
            if e.outvars[0].aval.shape != shape:
                return (f"returned group {k} = {list(members)}, whose equations iterate over "
                        f"different shapes ({e.outvars[0].aval.shape} and {shape})")
    member_of = {i: k for k, members in enumerate(groups) if len(members) > 1 for i in members}
    last_of = {k: max(members) for k, members in enumerate(groups) if len(members) > 1}
    defined = {id(v) for v in (*jaxpr.constvars, *jaxpr.invars)}
    for i, e in enumerate(jaxpr.eqns):  # emit the program as _emit does, in this order
        k = member_of.get(i)
        if k is not None and last_of[k] != i:
            continue
        eqns = [jaxpr.eqns[m] for m in sorted(groups[k])] if k is not None else [e]
        inside = {id(v) for m in eqns for v in m.outvars}
        for m in eqns:
            for a in m.invars:
                if isinstance(a, Var) and id(a) not in defined and id(a) not in inside:
                    what = f"group {k} = {list(groups[k])}" if k is not None else f"equation {i}"
                    return (f"returned groups with a cycle: {what} reads a value that is "
                            "computed only after it (a group must close when an equation "
                            "outside it reads one of its values)")
        defined |= inside
    return None


def _selftest(candidate) -> str | None:
    """Run a candidate on `{ lambda ; a:f64[3]. let b = sin a; c = mul b 2.0; d = sum c }`."""
    f64, scalar = ShapedArray((3,), np.dtype(np.float64)), ShapedArray((), np.dtype(np.float64))
    a, b, c, d = Var(f64), Var(f64), Var(f64), Var(scalar)
    two = Lit(2.0, ShapedArray((), np.dtype(np.float64), weak_type=True))
    jaxpr = Jaxpr((), (a,), (Eqn(P.sin_p, (a,), (b,)), Eqn(P.mul_p, (b, two), (c,)),
                             Eqn(P.reduce_sum_p, (c,), (d,), {"axes": (0,)})), (d,))
    groups = candidate(jaxpr)
    problem = _check_groups(groups, jaxpr)
    if problem is None and [sorted(g) for g in groups if len(g) > 1] != [[0, 1, 2]]:
        problem = f"returned {groups}, where sin, mul and the sum form one kernel, [[0, 1, 2]]"
    return problem


build.register("fusion_groups", fusion_groups, chapter="08_fusion_and_buffers",
               signature="fusion_groups(jaxpr) -> list of lists of equation indices",
               check=_check_groups, selftest=_selftest)


def _emit(jaxpr: Jaxpr, program: list[Eqn], groups: list[_Group]) -> Jaxpr:
    """Rebuild the program with one `fused` equation per group, where its last member was.

    That position is valid: every outside input of the group is defined before the member
    that reads it, and (rule 4) no outside equation reads the group before it closed.
    """
    position = {id(e): i for i, e in enumerate(program)}
    member_of = {id(e): g for g in groups for e in g.eqns}
    readers: dict[int, set] = {}  # id(var) -> ids of the groups (None: no group) reading it
    for e in program:
        g = member_of.get(id(e))
        for a in e.invars:
            if isinstance(a, Var):
                readers.setdefault(id(a), set()).add(id(g) if g else None)
    for a in jaxpr.outvars:
        if isinstance(a, Var):
            readers.setdefault(id(a), set()).add(None)
    last = {id(g): max(position[id(e)] for e in g.eqns) for g in groups}

    subst = Substitution()
    eqns = []
    for i, e in enumerate(program):
        g = member_of.get(id(e))
        if g is None:
            eqns.append(subst.eqn(e))
        elif last[id(g)] == i:
            members = sorted(g.eqns, key=lambda m: position[id(m)])
            eqns.append(_fused_eqn(g, members, subst, readers))
    return Jaxpr(jaxpr.constvars, jaxpr.invars, tuple(eqns),
                 tuple(subst(a) for a in jaxpr.outvars))


def _fused_eqn(g: _Group, members: list[Eqn], subst: Substitution, readers) -> Eqn:
    """The `fused` equation for a group, with fresh Vars for the kernel's own scope."""
    defined = {id(v) for e in members for v in e.outvars}
    inner = Substitution()
    outer_ins, inner_ins = [], []
    for e in members:
        for a in e.invars:
            if isinstance(a, Var) and id(a) not in defined and all(a is not x for x in outer_ins):
                outer_ins.append(a)
                fresh = Var(a.aval)
                inner_ins.append(fresh)
                inner[a] = fresh
    exported = [v for e in members for v in e.outvars if readers.get(id(v), set()) - {id(g)}]
    outer_outs = []
    for v in exported:
        outer_outs.append(Var(v.aval))
        subst[v] = outer_outs[-1]
    kernel = Jaxpr((), tuple(inner_ins), tuple(inner.eqn(e) for e in members), tuple(exported))
    kind = "reduction" if g.reduction else "elementwise"
    return Eqn(fused_p, tuple(subst(a) for a in outer_ins), tuple(outer_outs),
               {"jaxpr": kernel, "kind": kind}, members[-1].source)


fuse_elementwise = jaxpr_pass(lambda jaxpr, const_values: fuse_jaxpr(jaxpr),
                               name="fuse_elementwise", doc=__doc__)
