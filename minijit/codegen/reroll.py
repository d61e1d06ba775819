"""Rolling a kernel's repeated equations back into a loop (chapter 09).

A Python loop in a traced function is unrolled by tracing: `for _ in range(1000): x = f(x)`
leaves 1,000 copies of `f`'s equations in the Jaxpr, and a fused kernel of them became 1,000
copies of the same statements in the generated source. Numba's compile time grows with the
statements it reads (1.3 to 2.6 ms each, most of it Numba's own typing and lowering, not
LLVM), so such a kernel took seconds to compile. Here a run of identical blocks becomes one
`for` loop over one block:

    e = a[i0]                                  _c0_0 = a[i0]
    f = (e * 1.0001)                           for _r0 in range(1000):
    g = math.sin(f)           becomes              f = (_c0_0 * 1.0001)
    h = (g * 1.0001)                               g = math.sin(f)
    k = math.sin(h)                                _c0_0 = g
    ...

The loop computes the same operations in the same order, so its results are identical.

What counts as a repeated block: `repeated_runs` gives each equation a signature that does
not depend on where it stands (its primitive, params, literals, output types, and for each
operand either "the value k equations back" or, for a value from outside the kernel body,
that value itself), and looks for a stretch whose signatures repeat with a period p. Invariants
of a run it returns:
- every operand of a block is a constant of the run (a literal, or the same outside value in
  every block), a value of the same block, or a value of the block before it (a *carry*: in
  the first block, the value just before the run);
- nothing after the run reads a value of any block but the last.
So the loop's carries are the values one block hands the next, and after the loop, each value
of the last block is the loop body's variable of that name.

A second kind of run, `output_runs`: blocks that do not hand each other anything but each
compute one output, identical but for their literals (`[x * c + k for ...]`). The literals go
to tables, and the loop stores each block's row itself.

Run time: LLVM vectorizes innermost loops only, and the rolled loop is now the innermost one,
but a chain of dependent operations did not vectorize as straight-line code either: chains of
300 ops on 2**20 elements (`* 1.0001`, `+ 0.001`, with and without `sin`) ran in the same
time rolled and straight (benchmarks/README.md, "Where a first call's time goes"). Runs
shorter than `MIN_EQNS` equations stay straight-line code, as the learner wrote them.
"""

from __future__ import annotations

import numpy as np

from minijit.codegen.scalar_rules import cast, dtype_name, literal
from minijit.ir import Lit, Var

MIN_EQNS = 48  # a run this long or longer becomes a loop (Numba: 60 to 120 ms of compile)
MAX_PERIOD = 32  # the longest block looked for


def repeated_runs(eqns, live_after: set[int], unique=frozenset()) -> dict[int, tuple[int, int]]:
    """{start: (period, repeats)} of the runs of `eqns` to roll into loops (see the module
    docstring). `live_after` holds the ids of values read after `eqns`; equations whose ids
    are in `unique` are never part of a run (their code depends on more than the equation)."""
    n = len(eqns)
    if n < MIN_EQNS:
        return {}
    where = {id(v): (k, j) for k, e in enumerate(eqns) for j, v in enumerate(e.outvars)}
    kinds: dict[tuple, int] = {}  # each distinct signature, numbered: ints compare fast
    sig = [kinds.setdefault(_signature(eqns, k, where, unique), len(kinds)) for k in range(n)]
    read_at: dict[int, int] = {}  # id(value) -> the last equation that reads it
    for k, e in enumerate(eqns):
        for a in e.invars:
            if isinstance(a, Var):
                read_at[id(a)] = k
    return _longest_runs(sig, lambda i, p, repeats: _closed(eqns, i, p, repeats, where,
                                                           read_at, live_after))


def _longest_runs(sig: list[int], close) -> dict[int, tuple[int, int]]:
    """{start: (period, repeats)}: from each place, the period whose blocks of equal
    signatures cover the most equations, as far as `close(start, period, repeats)` (the
    number of those blocks that may form a run) allows; runs do not overlap, and each covers
    at least `MIN_EQNS` equations."""
    n = len(sig)
    runs, i = {}, 0
    while i < n:
        best = None
        for p in range(1, min(MAX_PERIOD, (n - i) // 2) + 1):
            length = 0
            while i + length + p < n and sig[i + length] == sig[i + length + p]:
                length += 1
            repeats = (length + p) // p
            if repeats * p < MIN_EQNS or best and repeats * p <= best[0] * best[1]:
                continue  # too short, or no longer than the best run found
            repeats = close(i, p, repeats)
            if repeats >= 2 and repeats * p >= MIN_EQNS and (
                    best is None or repeats * p > best[0] * best[1]):
                best = (p, repeats)
        if best:
            runs[i] = best
            i += best[0] * best[1]
        else:
            i += 1
    return runs


def _signature(eqns, k: int, where: dict, unique, literal_values: bool = True) -> tuple:
    """What equation k does, wherever it stands: `literal_values=False` leaves a literal's
    value out (only its dtype counts), for runs whose literals go to tables."""
    e = eqns[k]
    if id(e) in unique:
        return ("unique", k)
    operands = []
    for a in e.invars:
        if isinstance(a, Lit):
            operands.append(("literal", repr(a.val) if literal_values else None,
                             a.aval.dtype))
        elif id(a) in where:  # k - d: how far back it was computed, and which output
            d, j = where[id(a)]
            operands.append((k - d, j))
        else:
            operands.append(("outside", id(a)))
    params = tuple(sorted((key, repr(v)) for key, v in e.params.items())) if e.params else ()
    outs = tuple((v.aval.shape, v.aval.dtype) for v in e.outvars)
    return (e.primitive.name, id(e.primitive), params, tuple(operands), outs)


def _closed(eqns, start: int, p: int, repeats: int, where, read_at, live_after) -> int:
    """How many of the `repeats` blocks of `p` equations from `start` can be rolled: 0 if a
    block reads a value older than the block before it, else up to the first block that a
    later equation (or `live_after`) reads other than through the next block."""
    for pos, e in enumerate(eqns[start:start + p]):
        for a in e.invars:
            if isinstance(a, Var) and id(a) in where and start + pos - where[id(a)][0] > pos + p:
                return 0
    for b in range(repeats - 1):
        next_end = start + p * (b + 2)
        for e in eqns[start + p * b:start + p * (b + 1)]:
            if any(id(v) in live_after or read_at.get(id(v), -1) >= next_end
                   for v in e.outvars):
                return b + 1  # this block's values are read later: it is the last one
    return repeats


def emit_loop(out, eqns, start: int, p: int, repeats: int, env: dict, emit_block) -> int:
    """Write the run of `repeats` blocks of `p` equations from `start` as one loop; return
    the index of the equation after it. `emit_block(eqns)` writes straight-line code for a
    block and names its values in `env`."""
    count = getattr(out, "rolled_loops", 0)
    out.rolled_loops = count + 1
    block = eqns[start:start + p]
    defined_before = {id(v): (k, j) for k, e in enumerate(eqns[:start]) for j, v in
                      enumerate(e.outvars)}
    carries: dict[tuple[int, int], str] = {}  # (equation in the block, output) -> its carry
    saved: dict[int, str] = {}
    for e in block:
        for a in e.invars:
            if isinstance(a, Var) and id(a) in defined_before and id(a) not in saved:
                k, j = defined_before[id(a)]
                carry = f"_c{count}_{len(carries)}"
                carries[(k - (start - p), j)] = carry
                out.line(f"{carry} = {cast(env[id(a)], a.aval.dtype)}")
                saved[id(a)] = env[id(a)]
                env[id(a)] = carry  # the first block reads the carry, as every later one
    out.line(f"for _r{count} in range({repeats}):")
    out.indent += 1
    emit_block(block)
    for (k, j), carry in carries.items():
        v = block[k].outvars[j]
        out.line(f"{carry} = {cast(env[id(v)], v.aval.dtype)}")
    out.indent -= 1
    env.update(saved)
    end = start + p * repeats
    for first, last in zip(block, eqns[end - p:end]):  # after the loop: the last block's
        for v, w in zip(first.outvars, last.outvars):  # values are the body's variables
            env[id(w)] = env[id(v)]
    return end


def output_runs(eqns, stores: dict[int, tuple[str, int]], live_after: set[int],
                unique=frozenset()) -> dict[int, tuple[int, int]]:
    """{start: (period, repeats)} of runs of independent blocks that each compute one output
    into the next row of one stacked buffer, and differ only in their literals:

        n = (l * 1.1)                   for _r0 in range(1000):
        o = (n + 1.0)                       n = (l * _T0[_r0])
        outs0[1, i0] = o      becomes       o = (n + _T1[_r0])
        p = (l * 1.2)                       outs0[1 + _r0, i0] = o
        q = (p + 2.0)
        ...

    `[x * c + k for k, c in ...]` traces into such blocks, and 1,000 of them were 3,000
    statements for Numba (about 11 s to compile). `stores` maps the id of a value stored
    into a row of a stacked buffer to (buffer, row). Invariants of a run it returns: every
    operand of a block is a literal (its values, one per block, go to a table), a value of
    the same block, or the same value from before the run in every block; each block's
    last equation has one output, stored into row r0 + b of the same buffer for block b and
    read nowhere else; no other value of a block is read outside it."""
    n = len(eqns)
    if n < MIN_EQNS:
        return {}
    where = {id(v): (k, j) for k, e in enumerate(eqns) for j, v in enumerate(e.outvars)}
    read_outside: dict[int, int] = {}  # id(value) -> how many equations read it
    for e in eqns:
        for a in e.invars:
            if isinstance(a, Var):
                read_outside[id(a)] = read_outside.get(id(a), 0) + 1
    kinds: dict[tuple, int] = {}
    single = unique | {id(e) for e in eqns if len(e.outvars) != 1}  # one value per equation
    sig = [kinds.setdefault(_signature(eqns, k, where, single, literal_values=False),
                            len(kinds)) for k in range(n)]
    return _longest_runs(sig, lambda i, p, repeats: _independent(
        eqns, i, p, repeats, where, read_outside, stores, live_after))


def _independent(eqns, start: int, p: int, repeats: int, where, reads: dict, stores,
                 live_after) -> int:
    """How many of the `repeats` blocks from `start` form an output run (see `output_runs`):
    0 unless the first block reads nothing of an earlier block but through an operand that
    is the same in every block; then the blocks up to the first that breaks the rule."""
    if repeats < 2:
        return 0
    first = eqns[start:start + p]
    for pos, e in enumerate(first):  # a value from before the block: the same one in all
        for j, a in enumerate(e.invars):
            if isinstance(a, Var) and id(a) in where and where[id(a)][0] < start:
                if any(eqns[start + b * p + pos].invars[j] is not a for b in range(repeats)):
                    return 0
    head = None
    for b in range(repeats):
        block = eqns[start + b * p:start + (b + 1) * p]
        inside = {id(v) for e in block for v in e.outvars}
        last = block[-1].outvars[0]
        target = stores.get(id(last))
        if target is None or reads.get(id(last), 0) or (
                head is not None and target != (head[0], head[1] + b)):
            return b
        head = head or target
        for e in block[:-1]:  # the block's other values: read only inside the block
            for v in e.outvars:
                if id(v) in live_after or id(v) in stores:
                    return b
        used = sum(1 for e in block for a in e.invars
                   if isinstance(a, Var) and id(a) in inside)
        if used != sum(reads.get(i, 0) for i in inside if i != id(last)):
            return b
    return repeats


def emit_output_loop(out, eqns, start: int, p: int, repeats: int, env: dict, stores: dict,
                      stored: set, emit_block) -> int:
    """Write an output run (`output_runs`) as one loop; return the index of the
    equation after it. A literal that differs from block to block is read from a table, a
    module-level array of its values (Numba compiles a global array in as a constant); one
    that is the same in every block stays a literal. The table holds exactly the values
    the literals had, in their dtype, so each row is computed as before."""
    count = getattr(out, "rolled_loops", 0)
    out.rolled_loops = count + 1
    r = f"_r{count}"
    block = eqns[start:start + p]
    tables = {}
    for pos, e in enumerate(block):
        for j, a in enumerate(e.invars):
            if not isinstance(a, Lit):
                continue
            values = [eqns[start + b * p + pos].invars[j].val for b in range(repeats)]
            dtype = np.dtype(a.aval.dtype)
            column = np.asarray(values, dtype=dtype)
            if len({x.tobytes() for x in column}) == 1:
                continue  # the same literal in every block
            table = f"_T{len(out.tables)}"
            items = ", ".join(literal(v, dtype) for v in column.tolist())
            out.tables.append(f"{table} = np.array([{items}], dtype=np.{dtype_name(dtype)})")
            tables[(id(e), j)] = f"{table}[{r}]"
    buffer, row, index = stores[id(block[-1].outvars[0])]
    out.line(f"for {r} in range({repeats}):  # {repeats} outputs, one row each (reroll.py)")
    out.indent += 1
    emit_block(block, tables)
    first_row = f"{row} + " if row else ""
    out.line(f"{buffer}[{first_row}{r}, {index}] = {env[id(block[-1].outvars[0])]}")
    out.indent -= 1
    for b in range(repeats):
        stored.add(id(eqns[start + (b + 1) * p - 1].outvars[0]))
    return start + p * repeats
