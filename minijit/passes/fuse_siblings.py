"""Sibling fusion: elementwise kernels that read the same input share one loop.

`fuse_elementwise` fuses a chain: a consumer joins its producer's kernel. Siblings are not a
chain: `[x * 2.0, x + 1.0, sin(x)]` are three kernels that each read `x`, so the generated
code would run three loops over it, and a program with K such outputs K loops in one
function (and Numba's compile time grows faster than the number of loops). This pass merges
them: one loop reads `x[i]` once and writes every output.

The rule: an elementwise kernel (a `fused` equation of kind elementwise, or a single
elementwise equation) joins the most recent open sibling group of the same iteration shape
that reads one of its inputs. A group closes when any equation outside it reads one of its
values (the merged kernel runs where its last member was, so nothing before that may need
its outputs), or when a reading member would have to be merged into it. Reductions are left
alone (a reduction ends its kernel). Groups of one are left as they were. Sweeps repeat until
nothing changes, as in `fuse_elementwise`.

Assumes: a typechecked Jaxpr, after `fuse_elementwise`. Guarantees: same values; each group
becomes one `fused[kind=elementwise]` equation whose inputs are its members' inputs (each
once) and whose outputs are theirs, in order, with the same Vars.

    before: { lambda ; a:f64[3]. let b:f64[3] = mul a 2.0:f64[]; c:f64[3] = sin a in (b, c) }
    after:  { lambda ; a:f64[3]. let b:f64[3] c:f64[3] = fused[jaxpr={ lambda ; d:f64[3]. let
                e:f64[3] = mul d 2.0:f64[]; f:f64[3] = sin d in (e, f) } kind=elementwise] a
              in (b, c) }
"""

from __future__ import annotations

from dataclasses import dataclass, field

from minijit.ir import Eqn, Jaxpr, Var
from minijit.passes.fuse_elementwise import as_kernel, fused_p, may_fuse
from minijit.passes.rewrite import Substitution, jaxpr_pass, map_subjaxprs, until_unchanged

# A kernel of many outputs is split: LLVM's loop passes compare every pair of memory accesses
# in a loop, so one loop writing 1,000 outputs compiles for minutes; loops of 32 stay fast.
MAX_OUTPUTS = 32


@dataclass(eq=False)
class _Siblings:
    shape: tuple
    kernels: list[Eqn] = field(default_factory=list)
    inputs: set = field(default_factory=set)  # ids of the Vars its members read
    outputs: set = field(default_factory=set)  # ids of the Vars its members write
    open: bool = True


def _is_elementwise_kernel(eqn: Eqn) -> bool:
    if eqn.primitive is fused_p:
        return eqn.params["kind"] == "elementwise"
    return may_fuse(eqn)


def _merged(kernels: list[Eqn]) -> Eqn:
    """One `fused` equation computing every kernel of `kernels` in one loop."""
    outer_ins: list[Var] = []
    inner_of: dict[int, Var] = {}
    body, inner_outs, outer_outs = [], [], []
    for k in map(as_kernel, kernels):
        jaxpr = k.params["jaxpr"]
        sub = Substitution()
        for outer, inner in zip(k.invars, jaxpr.invars):
            if id(outer) not in inner_of:
                inner_of[id(outer)] = Var(inner.aval)
                outer_ins.append(outer)
            sub[inner] = inner_of[id(outer)]
        body += [sub.eqn(e) for e in jaxpr.eqns]
        inner_outs += [sub(a) for a in jaxpr.outvars]
        outer_outs += list(k.outvars)
    kernel = Jaxpr((), tuple(inner_of[id(v)] for v in outer_ins), tuple(body),
                   tuple(inner_outs))
    return Eqn(fused_p, tuple(outer_ins), tuple(outer_outs),
               {"jaxpr": kernel, "kind": "elementwise"}, kernels[-1].source)


def _fuse_once(jaxpr: Jaxpr) -> Jaxpr:
    program = [e if e.primitive is fused_p else map_subjaxprs(e, fuse_siblings_jaxpr)
               for e in jaxpr.eqns]
    slots: list = []  # equations and groups, in program order; a moved group leaves None
    where: dict[int, int] = {}  # id(group) -> its slot
    groups: list[_Siblings] = []  # the open ones, oldest first
    writer: dict[int, _Siblings] = {}  # id(var) -> the group whose member writes it
    merged_any = False
    for eqn in program:
        reads = {id(a) for a in eqn.invars if isinstance(a, Var)}
        read_groups = {id(writer[r]): writer[r] for r in reads if r in writer}
        for g in read_groups.values():  # the group's outputs are needed here: it stays put
            g.open = False
        target = None
        if _is_elementwise_kernel(eqn):
            shape = eqn.outvars[0].aval.shape
            for g in reversed(groups):
                if g.open and g.shape == shape and g.inputs & reads and (
                        len(g.outputs) + len(eqn.outvars) <= MAX_OUTPUTS):
                    target = g
                    break
        if target is None:
            if _is_elementwise_kernel(eqn):
                target = _Siblings(eqn.outvars[0].aval.shape)
                groups.append(target)
                where[id(target)] = len(slots)
                slots.append(target)
            else:
                slots.append(eqn)
                continue
        else:  # the group moves down to here: nothing in between read its outputs
            merged_any = True
            slots[where[id(target)]] = None
            where[id(target)] = len(slots)
            slots.append(target)
        target.kernels.append(eqn)
        target.inputs |= reads
        for v in eqn.outvars:
            target.outputs.add(id(v))
            writer[id(v)] = target
        groups = [g for g in groups if g.open]
    if not merged_any:
        changed = any(a is not b for a, b in zip(program, jaxpr.eqns))
        return Jaxpr(jaxpr.constvars, jaxpr.invars, tuple(program), jaxpr.outvars) if (
            changed) else jaxpr
    eqns = []
    for s in slots:
        if s is None:
            continue
        if isinstance(s, _Siblings):
            eqns.append(s.kernels[0] if len(s.kernels) == 1 else _merged(s.kernels))
        else:
            eqns.append(s)
    return Jaxpr(jaxpr.constvars, jaxpr.invars, tuple(eqns), jaxpr.outvars)


def fuse_siblings_jaxpr(jaxpr: Jaxpr) -> Jaxpr:
    """Merge sibling kernels sweep after sweep until a sweep changes nothing."""
    return until_unchanged(_fuse_once, jaxpr)


fuse_siblings = jaxpr_pass(lambda jaxpr, const_values: fuse_siblings_jaxpr(jaxpr),
                           name="fuse_siblings", doc=__doc__)
