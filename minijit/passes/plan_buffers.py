"""Buffer planning: which arrays can share memory (an analysis, not a rewrite).

Liveness: a value is live from the equation that defines it to its last use. When a value
dies its buffer goes back to a pool, and a later equation's output of the same byte size may
take it instead of allocating. A donated input (`donate_argnums`) joins the pool after its
last use. An elementwise equation (or elementwise fused kernel) may write its output into an
input of the same shape that dies at that very equation, since each element is read before it
is written (not into a broadcast input, which is read again after being overwritten).

Assumes: a typechecked Jaxpr. Guarantees: the plan never gives two simultaneously live values
the same buffer, and never hands out a non-donated input's buffer. Codegen uses the plan;
the course shows its report (bytes of temporaries before and after).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from minijit.core import ELEMENTWISE
from minijit.ir import ClosedJaxpr, Jaxpr, Var


@dataclass
class BufferPlan:
    buffer_of: dict[int, int] = field(default_factory=dict)  # id(var) -> buffer number
    buffer_bytes: list[int] = field(default_factory=list)
    reused_from_input: dict[int, int] = field(default_factory=dict)  # buffer -> invar index
    bytes_before: int = 0  # every intermediate and output in its own buffer
    bytes_after: int = 0  # the buffers the plan allocates

    def report(self) -> str:
        saved = self.bytes_before - self.bytes_after
        pct = 100 * saved / self.bytes_before if self.bytes_before else 0.0
        return (f"temporaries and outputs: {self.bytes_before:,} bytes before planning, "
                f"{self.bytes_after:,} after ({saved:,} saved, {pct:.0f}%); "
                f"{len(self.buffer_bytes)} buffers, "
                f"{len(self.reused_from_input)} reused from donated inputs")


def _nbytes(v: Var) -> int:
    return v.aval.size * v.aval.dtype.itemsize


def _in_place_ok(eqn) -> bool:
    if eqn.primitive in ELEMENTWISE:
        return True
    return eqn.primitive.name == "fused" and eqn.params.get("kind") == "elementwise"


def plan_buffers(program: ClosedJaxpr | Jaxpr, donated: tuple[bool, ...] = ()) -> BufferPlan:
    jaxpr = program.jaxpr if isinstance(program, ClosedJaxpr) else program
    last_use: dict[int, int] = {}
    for i, eqn in enumerate(jaxpr.eqns):
        for a in eqn.invars:
            if isinstance(a, Var):
                last_use[id(a)] = i
    end = len(jaxpr.eqns)
    for a in jaxpr.outvars:
        if isinstance(a, Var):
            last_use[id(a)] = end  # outputs live past the end

    plan = BufferPlan()
    pool: dict[int, list[int]] = defaultdict(list)  # byte size -> free buffers
    owner_of_input = {id(v): k for k, (v, d) in enumerate(zip(jaxpr.invars, donated)) if d}
    input_buffer: dict[int, int] = {}

    def release(v: Var):
        if id(v) in plan.buffer_of:
            pool[_nbytes(v)].append(plan.buffer_of[id(v)])
        elif id(v) in owner_of_input:  # a donated input: its buffer becomes available
            b = len(plan.buffer_bytes)
            plan.buffer_bytes.append(0)  # owned by the caller: costs nothing here
            plan.reused_from_input[b] = owner_of_input[id(v)]
            input_buffer[id(v)] = b
            pool[_nbytes(v)].append(b)

    for i, eqn in enumerate(jaxpr.eqns):
        dying = [a for a in dict.fromkeys(eqn.invars) if isinstance(a, Var)
                 and last_use.get(id(a)) == i]
        in_place = [a for a in dying if _in_place_ok(eqn) and eqn.outvars
                    and a.aval.shape == eqn.outvars[0].aval.shape]
        for a in in_place:
            release(a)
        for v in eqn.outvars:
            size = _nbytes(v)
            if not v.aval.shape or size == 0:
                continue  # scalars live in registers
            plan.bytes_before += size
            if pool[size]:
                plan.buffer_of[id(v)] = pool[size].pop()
            else:
                plan.buffer_of[id(v)] = len(plan.buffer_bytes)
                plan.buffer_bytes.append(size)
        for v in eqn.outvars:  # never used: free once every output of the equation has a buffer
            if id(v) in plan.buffer_of and id(v) not in last_use:
                pool[_nbytes(v)].append(plan.buffer_of[id(v)])
        for a in dying:
            if all(a is not b for b in in_place):
                release(a)
    plan.bytes_after = sum(plan.buffer_bytes)
    return plan


plan_buffers.__doc__ = __doc__
