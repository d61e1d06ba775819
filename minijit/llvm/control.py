"""Control flow for the LLVM backend (`emit.py`): `while`, `fori_loop` and `cond`.

A loop's carry and a `cond`'s results have homes that each iteration or branch writes its
results into: a stack slot for a rank-0 part, buffers for an array part. An array part has
two buffers, current and spare: the body computes the part's new value in the spare one
where it can, and the two swap at the end of the iteration; any other new value is copied
into the current one, through a temporary where it is another part's current value
(`(a, b) -> (b, a)`), so that no buffer is overwritten before it is read. Every buffer is
allocated once, when the kernel starts (`Program.buffer`).
"""

from __future__ import annotations

from llvmlite import ir

from minijit.ir import Eqn, Jaxpr, Lit
from minijit.llvm.rules import BOOL, I32, I64, memory_type, value_type


def carry(prog, outvars, values) -> list:
    """A loop's carry, holding `values` to start with. A rank-0 part is a stack slot. An
    array part is two buffers and two stack slots that say which one is current and which
    is spare: the body computes the part's new value in the spare one where it can, and
    the two swap at the end of the iteration, so no copy is made (`write_carry`)."""
    parts = []
    for v, x in zip(outvars, values):
        a, name = v.aval, prog.names(v)
        if not a.shape:
            slot = prog.prologue.alloca(value_type(a.dtype), name=name)
            prog.b.store(x, slot)
            parts.append((slot, None))
            continue
        pointer = memory_type(a.dtype).as_pointer()
        current = prog.prologue.alloca(pointer, name=f"{name}.current")
        spare = prog.prologue.alloca(pointer, name=f"{name}.spare")
        first = prog.buffer(a, f"{name}.one")
        prog.b.store(first, current)  # at every entry to the loop: it may have swapped
        prog.b.store(prog.buffer(a, f"{name}.two"), spare)
        prog.copy_into(first, x, a)
        parts.append((current, spare))
    return parts


def read_carry(prog, parts) -> list:
    """The carry's current values: a rank-0 part's value, an array part's buffer."""
    return [prog.b.load(current) for current, _ in parts]


def spare_buffers(prog, body: Jaxpr, parts) -> tuple[list, dict]:
    """Each array part's spare buffer, where the body computes that part's new value
    itself (an equation's result, returned once), and `where` for `prog.jaxpr`."""
    spares, where = [], {}
    for v, (_, spare) in zip(body.outvars, parts):
        computed = (spare is not None and not isinstance(v, Lit)
                    and body.outvars.count(v) == 1 and v not in body.invars)
        spares.append(prog.b.load(spare) if computed else None)
        if computed:
            where[id(v)] = spares[-1]
    return spares, where


def write_carry(prog, parts, values, avals, carried, spares):
    """The body's results become the carry. A result computed in its spare buffer swaps
    with the current one; any other is copied into the current one, and a result that is
    another part's current value goes through a temporary first (`(a, b) -> (b, a)`),
    so that no buffer is overwritten before it is read."""
    staged = []
    for k, (x, a) in enumerate(zip(values, avals)):
        if a.shape and any(x is c for j, c in enumerate(carried) if j != k):
            temp = prog.buffer(a)
            prog.copy_into(temp, x, a)
            x = temp
        staged.append(x)
    swaps = []
    for (current, spare), x, a, old, fresh in zip(parts, staged, avals, carried, spares):
        if not a.shape:
            prog.b.store(x, current)
        elif fresh is not None and x is fresh:
            swaps.append((current, spare, x, old))
        else:
            prog.copy_into(old, x, a)
    for current, spare, new, old in swaps:
        prog.b.store(new, current)
        prog.b.store(old, spare)


def while_loop(prog, eqn: Eqn, args) -> list:
    cn, bn = eqn.params["cond_nconsts"], eqn.params["body_nconsts"]
    cond, body = eqn.params["cond_jaxpr"], eqn.params["body_jaxpr"]
    avals = [v.aval for v in eqn.outvars]
    parts = carry(prog, eqn.outvars, args[cn + bn:])
    b = prog.b
    head, loop, end = (prog.kernel.append_basic_block(n) for n in ("while", "do", "done"))
    b.branch(head)
    b.position_at_end(head)
    carried = read_carry(prog, parts)
    (go,) = prog.jaxpr(cond, [*args[:cn], *carried])
    b.cbranch(go, loop, end)
    b.position_at_end(loop)
    spares, where = spare_buffers(prog, body, parts)
    new = prog.jaxpr(body, [*args[cn:cn + bn], *carried], where)
    write_carry(prog, parts, new, avals, carried, spares)
    b.branch(head)
    b.position_at_end(end)
    return read_carry(prog, parts)


def fori_loop(prog, eqn: Eqn, args) -> list:
    n = eqn.params["body_nconsts"]
    lower, upper, consts, init = args[0], args[1], args[2:2 + n], args[2 + n:]
    body = eqn.params["body_jaxpr"]
    index_type = lower.type
    avals = [v.aval for v in eqn.outvars]
    parts = carry(prog, eqn.outvars, init)
    with prog.counted(prog.b.sext(lower, I64) if index_type != I64 else lower,
                      prog.b.sext(upper, I64) if index_type != I64 else upper) as i:
        carried = read_carry(prog, parts)
        index = prog.b.trunc(i, index_type) if index_type != I64 else i
        spares, where = spare_buffers(prog, body, parts)
        new = prog.jaxpr(body, [*consts, index, *carried], where)
        write_carry(prog, parts, new, avals, carried, spares)
    return read_carry(prog, parts)


def cond(prog, eqn: Eqn, args) -> list:
    """`branches[clamp(index, 0, n - 1)]`, as `cond`'s impl rule picks it. Each result has a
    home that every branch writes: a buffer, or a stack slot for rank 0."""
    index, operands = args[0], args[1:]
    branches = eqn.params["branches"]
    avals = [v.aval for v in eqn.outvars]
    slots = [prog.buffer(a) if a.shape else prog.prologue.alloca(value_type(a.dtype))
             for a in avals]
    b = prog.b
    blocks = [prog.kernel.append_basic_block(f"branch{k}") for k in range(len(branches))]
    end = prog.kernel.append_basic_block("merge")
    last = len(branches) - 1
    if index.type == BOOL:
        index = b.zext(index, I32)
    # below 0: the first branch; above the last: the switch's default, the last branch
    index = b.select(b.icmp_signed("<", index, ir.Constant(index.type, 0)),
                     ir.Constant(index.type, 0), index)
    switch = b.switch(index, blocks[last])
    for k, block in enumerate(blocks[:last]):
        switch.add_case(ir.Constant(index.type, k), block)
    for branch, block in zip(branches, blocks):
        b.position_at_end(block)
        for s, x, a in zip(slots, prog.jaxpr(branch, operands), avals):
            prog.copy_into(s, x, a)
        b.branch(end)
    b.position_at_end(end)
    return [b.load(s) if not a.shape else s for s, a in zip(slots, avals)]
