"""Buffer planning: which arrays share memory, and which may be reused (an analysis, not a rewrite).

The rule every backend keeps, stated once here: **a compiled function never writes memory it
did not allocate unless that argument was donated, and never writes memory that a value still
live (a returned value, or a view of one) can see.** Three facts make it checkable:

- Storage. Each array value has a set of *roots*, the allocations whose memory it may share
  (`storage`). A root is an input, a constant, or the result of an equation that allocates a
  new array. A view (reshape, transpose, squeeze, slice, dynamic_slice, rev) has its
  operand's roots. Control flow may hand an operand straight back (a branch returning its
  argument, a carry passed through, a captured array returned), so each result has, besides
  its own, the roots of the operands its sub-Jaxprs can return (`_handed_back`).
- Liveness. A root is live from the equation that defines it to the last use of any value that
  has it among its roots: a live view keeps its base alive.
- Ownership. Only roots this function allocated, and donated inputs, are ever handed out.
  Inputs, constants and the roots of returned values never are.

When a root dies its buffer goes back to a pool, and a later equation's output of the same byte
size may take it instead of allocating. An elementwise equation (or elementwise fused kernel)
may write its output into an operand of the same shape whose root dies at that very equation,
since each element is read before it is written: not into a broadcast operand (read again after
being overwritten), and not when another operand of the equation is a view of the same root.
A `dynamic_update_slice` may write its update over its operand the same way (`u.at[i].set(v)`
in a loop body changes one row of the carry, not a copy of it), unless the update is a view
of the operand.

Assumes: a typechecked Jaxpr. Guarantees: the plan never gives two simultaneously live roots
the same buffer and never hands out an input's or constant's memory unless it was donated.
Codegen follows the plan (`Lowering.plan_reuse`); the course shows its report.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

import numpy as np

from minijit import primitives as P
from minijit.core import ELEMENTWISE
from minijit.ir import ClosedJaxpr, Jaxpr, Var, subjaxprs
from minijit.passes.fuse_elementwise import fused_p

# Primitives whose result may share memory with their operand: NumPy returns views for all
# of them, and generated code for reshape and squeeze and for slices of whole rows (its
# transpose is a copy, but the interpreter's is NumPy's view).
VIEWS = frozenset({P.reshape_p, P.squeeze_p, P.transpose_p, P.slice_p, P.rev_p,
                   P.dynamic_slice_p})


def storage(jaxpr: Jaxpr) -> dict[int, frozenset[int]]:
    """id(var) -> the ids of the roots whose memory `var` may share (see the module docstring).

    Every constvar, invar and equation output of `jaxpr` has an entry; a fresh allocation is
    its own only root."""
    roots: dict[int, frozenset[int]] = {id(v): frozenset((id(v),))
                                        for v in (*jaxpr.constvars, *jaxpr.invars)}
    for eqn in jaxpr.eqns:
        operands = [roots[id(a)] for a in eqn.invars if isinstance(a, Var)]
        if eqn.primitive in VIEWS:
            shared = frozenset().union(*operands)
            for v in eqn.outvars:
                roots[id(v)] = shared
        elif subjaxprs(eqn) and eqn.primitive is not fused_p:
            # Control flow: each result is new, or an operand (or a view of one) handed back.
            handed = _handed_back(eqn, [roots[id(a)] if isinstance(a, Var) else frozenset()
                                        for a in eqn.invars])
            if handed is None:  # a primitive this does not know: any operand
                handed = [frozenset().union(*operands)] * len(eqn.outvars)
            for v, shared in zip(eqn.outvars, handed):
                roots[id(v)] = shared | {id(v)}
            for k, m in _made_together(eqn):  # one array the sub-Jaxpr made, handed out twice
                roots[id(eqn.outvars[m])] |= {id(eqn.outvars[k])}
        else:  # a fused kernel, like every other primitive, writes a new array
            for v in eqn.outvars:
                roots[id(v)] = frozenset((id(v),))
    return roots


def _passed_through(body: Jaxpr) -> list[set[int]]:
    """For each output of `body`, the positions of the inputs whose memory it may share."""
    inner = storage(body)
    position = {id(v): k for k, v in enumerate(body.invars)}
    return [{position[r] for r in inner[id(a)] if r in position} if isinstance(a, Var)
            else set() for a in body.outvars]


def _made_together(eqn) -> list[tuple[int, int]]:
    """Pairs (k, m), k < m, of results of a control-flow equation that a sub-Jaxpr may give
    one array it made itself: a loop body returning `(i, i)` for two carries (CSE joins two
    equal computations into one), a branch returning one new array twice. (An operand handed
    back is `_handed_back`'s; a scan's ys are stacked into new arrays.)"""
    p = eqn.params
    subs = {"cond": lambda: p["branches"], "jit": lambda: [p["jaxpr"]],
            "while": lambda: [p["body_jaxpr"]], "fori_loop": lambda: [p["body_jaxpr"]],
            "scan": lambda: [p["jaxpr"]]}.get(eqn.primitive.name)
    if subs is None:
        return []
    n = p["num_carry"] if eqn.primitive.name == "scan" else len(eqn.outvars)
    pairs = set()
    for sub in subs():
        sub = getattr(sub, "jaxpr", sub)  # a closed jaxpr's own
        inner = storage(sub)
        made = [inner[id(a)] - {id(v) for v in (*sub.constvars, *sub.invars)}
                if isinstance(a, Var) else frozenset() for a in sub.outvars[:n]]
        pairs |= {(k, m) for m in range(len(made)) for k in range(m) if made[k] & made[m]}
    return sorted(pairs)


def _handed_back(eqn, operand_roots: list[frozenset]) -> list[frozenset] | None:
    """For each result of a control-flow equation, the roots of the operands its sub-Jaxprs
    can hand back (a branch returning its argument, a loop carry passed through, a captured
    array returned), found from the sub-Jaxprs themselves; None for an unknown primitive.

    A loop's carry may hold, after any number of iterations, its initial value or whatever the
    body returns for it: a constant, or (after a further iteration) what another carry held;
    the sets grow until they stop changing."""
    name, p = eqn.primitive.name, eqn.params
    if name == "cond":
        outs = [set() for _ in eqn.outvars]
        for branch in p["branches"]:
            for k, passed in enumerate(_passed_through(branch)):
                outs[k] |= {r for i in passed for r in operand_roots[1 + i]}
        return [frozenset(o) for o in outs]
    if name == "jit":
        return [frozenset(r for i in passed for r in operand_roots[i])
                for passed in _passed_through(p["jaxpr"])]
    # A loop body's inputs, in order: ("outer", roots) for a constant (and for a scan's row
    # of xs, a view of it), ("carry", j) for carry j, None for fori_loop's index (a scalar).
    if name == "while":
        nc, nb = p["cond_nconsts"], p["body_nconsts"]
        body, init = p["body_jaxpr"], operand_roots[nc + nb:]
        inputs = [("outer", r) for r in operand_roots[nc:nc + nb]]
    elif name == "fori_loop":
        nb = p["body_nconsts"]
        body, init = p["body_jaxpr"], operand_roots[2 + nb:]
        inputs = [("outer", r) for r in operand_roots[2:2 + nb]] + [None]
    elif name == "scan":
        nc, nk = p["num_consts"], p["num_carry"]
        body, init = p["jaxpr"], operand_roots[nc:nc + nk]
        inputs = [("outer", r) for r in operand_roots[:nc]]
    else:
        return None
    inputs += [("carry", j) for j in range(len(init))]
    if name == "scan":
        inputs += [("outer", r) for r in operand_roots[nc + nk:]]
    passed = _passed_through(body)
    carries = [set(r) for r in init]
    changed = True
    while changed:
        changed = False
        for j, held in enumerate(carries):
            for i in passed[j]:
                source = inputs[i]
                more = (() if source is None else source[1] if source[0] == "outer"
                        else carries[source[1]])
                if not held.issuperset(more):
                    held.update(more)
                    changed = True
    # a scan's ys are stacked into new arrays
    return [frozenset(c) for c in carries] + [frozenset()] * (len(eqn.outvars) - len(carries))


def owns_its_memory(roots: dict[int, frozenset[int]], v: Var) -> bool:
    """Is `v` a fresh allocation that no other value can see (its own only root)?"""
    return roots.get(id(v)) == frozenset((id(v),))


def outputs_to_copy(jaxpr: Jaxpr, owned=()) -> list[bool]:
    """Which outputs must be copied so that every array output owns distinct memory.

    An output is copied if it may share memory with an input or constant not listed in
    `owned`, or with an earlier output (rank 0 included: the interpreter returns 0-d
    arrays, and a reshape of one is a view). A jitted function's results are new arrays, as in
    JAX (`jit(lambda x: x)(a)` must not change when `a` is later modified); a loop body's
    next carries must not share memory either, since the next iteration may write one of
    them in place (`owned` then lists the carries, which the body may hand on)."""
    roots = storage(jaxpr)
    owned_ids = {id(v) for v in owned}
    foreign = {id(v) for v in (*jaxpr.constvars, *jaxpr.invars)} - owned_ids
    taken: set[int] = set()
    flags = []
    for a in jaxpr.outvars:
        if not isinstance(a, Var):
            flags.append(False)  # a literal is a value, not memory
            continue
        r = roots[id(a)]
        copy = bool(r & foreign or r & taken)
        flags.append(copy)
        if not copy:
            taken |= r
    return flags


def copy_outputs(outs: list, flags: list[bool]) -> list:
    """Apply `outputs_to_copy`'s verdict to a call's results: executables call this."""
    return [np.array(o) if f else o for o, f in zip(outs, flags)]


@dataclass
class BufferPlan:
    buffer_of: dict[int, int] = field(default_factory=dict)  # id(root var) -> buffer number
    buffer_bytes: list[int] = field(default_factory=list)
    reused_from_input: dict[int, int] = field(default_factory=dict)  # buffer -> invar index
    roots: dict[int, frozenset[int]] = field(default_factory=dict)  # see `storage`
    bytes_before: int = 0  # every allocated intermediate and output in its own buffer
    bytes_after: int = 0  # the buffers the plan allocates

    def report(self) -> str:
        saved = self.bytes_before - self.bytes_after
        pct = 100 * saved / self.bytes_before if self.bytes_before else 0.0
        return (f"temporaries and outputs: {self.bytes_before:,} bytes before planning, "
                f"{self.bytes_after:,} after ({saved:,} saved, {pct:.0f}%); "
                f"{_count(len(self.buffer_bytes), 'buffer')}, "
                f"{len(self.reused_from_input)} reused from donated inputs")


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" + ("" if n == 1 else "s")


def _nbytes(v: Var) -> int:
    return v.aval.size * v.aval.dtype.itemsize


def _may_overwrite(eqn) -> list:
    """The operands `eqn` may write its result over (see the module docstring)."""
    if eqn.primitive in ELEMENTWISE or (
            eqn.primitive is fused_p and eqn.params.get("kind") == "elementwise"):
        return [a for a in dict.fromkeys(eqn.invars) if isinstance(a, Var)]
    if eqn.primitive is P.dynamic_update_slice_p and isinstance(eqn.invars[0], Var):
        return [eqn.invars[0]]  # the update's rows written over the operand's, in place
    return []


def plan_buffers(program: ClosedJaxpr | Jaxpr, donated: tuple[bool, ...] = ()) -> BufferPlan:
    jaxpr = program.jaxpr if isinstance(program, ClosedJaxpr) else program
    roots = storage(jaxpr)
    end = len(jaxpr.eqns)
    last_use: dict[int, int] = {}  # root -> index of the last equation that can see it
    for i, eqn in enumerate(jaxpr.eqns):
        for a in eqn.invars:
            if isinstance(a, Var):
                for r in roots[id(a)]:
                    last_use[r] = i
    for a in jaxpr.outvars:
        if isinstance(a, Var):
            for r in roots[id(a)]:
                last_use[r] = end  # returned values live past the end

    plan = BufferPlan(roots=roots)
    pool: dict[int, list[int]] = defaultdict(list)  # byte size -> free buffers
    donated_input = {id(v): (k, v) for k, (v, d) in enumerate(zip(jaxpr.invars, donated)) if d}

    def release(r: int, nbytes: int):
        if r in plan.buffer_of:
            pool[nbytes].append(plan.buffer_of[r])
        elif r in donated_input:  # a donated input: its buffer becomes available
            b = len(plan.buffer_bytes)
            plan.buffer_bytes.append(0)  # owned by the caller: costs nothing here
            plan.reused_from_input[b] = donated_input[r][0]
            pool[nbytes].append(b)

    sizes = {id(v): _nbytes(v) for v in (*jaxpr.constvars, *jaxpr.invars)}
    for i, eqn in enumerate(jaxpr.eqns):
        operands = [a for a in dict.fromkeys(eqn.invars) if isinstance(a, Var)]
        dying = {r for a in operands for r in roots[id(a)] if last_use.get(r) == i}
        in_place = set()
        if eqn.outvars:
            for a in _may_overwrite(eqn):
                others = [roots[id(b)] for b in operands if b is not a]
                if (owns_its_memory(roots, a) and id(a) in dying
                        and a.aval.shape == eqn.outvars[0].aval.shape
                        and not any(id(a) in o for o in others)):
                    in_place.add(id(a))
        for r in in_place:
            release(r, sizes[r])
        for v in eqn.outvars:
            sizes[id(v)] = size = _nbytes(v)
            if id(v) not in roots[id(v)] or not v.aval.shape or size == 0:
                continue  # views share their operand's buffer; scalars live in registers
            plan.bytes_before += size
            if pool[size]:
                plan.buffer_of[id(v)] = pool[size].pop()
            else:
                plan.buffer_of[id(v)] = len(plan.buffer_bytes)
                plan.buffer_bytes.append(size)
        for v in eqn.outvars:  # never used: free once every output of the equation has a buffer
            if id(v) in plan.buffer_of and id(v) not in last_use:
                pool[sizes[id(v)]].append(plan.buffer_of[id(v)])
        for r in dying - in_place:
            release(r, sizes[r])
    plan.bytes_after = sum(plan.buffer_bytes)
    return plan


plan_buffers.__doc__ = __doc__
