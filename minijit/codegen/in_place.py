"""Writing a kernel's result where it ends up: in its rows of a bigger array (chapter 09).

`u_new = concatenate([u[:1], kernel(u), u[-1:]])`, `pad(kernel(u), ((1, 1, 0),))` and
`u.at[1:-1].set(kernel(u))` (a `dynamic_update_slice`) each build a bigger array whose middle
rows are the kernel's result. Written naively, the kernel fills an array of its own and the
bigger one copies it. Instead the bigger array is allocated first and the kernel writes its
rows directly, through a C-contiguous view; the bigger array's own rule then writes only the
rows around them (the other operands, the padding value, the operand's other rows).

When (`written_in_place`). The kernel is elementwise (a fused elementwise kernel or a lone
elementwise equation), has at least one row, and nothing but that one equation reads its
result (not another equation, not the program's outputs), which takes it along axis 0:
- `concatenate` along axis 0;
- `pad` whose only padding is low and high (both >= 0) along axis 0, no interior padding;
- `dynamic_update_slice` of the kernel's result as the update (not the operand), the update
  spanning every axis but the first, with a literal start along axis 0 (clamped as the
  primitive clamps it, so the rows are known when the code is written).
The view is not a buffer of its own: `Lowering.plan_reuse` neither gives it a dead array nor
offers its memory to later values (its memory is the bigger array's, still alive).

Loop carries. A loop body may write a carry's next value over the carry itself where the
carry is dead by then (`plan_buffers` treats the carries as donated: `u.at[i].set(v)` changes
one row). Where it is not (a Jacobi sweep reads `u` after computing `u_new`), the next value
needs other memory, and allocating it every iteration costs more than the sweep on small
arrays. `spare_carries` gives such a carry a second array, allocated once before the loop:
the carry holds its two arrays in turn (double buffering), each iteration writing the next
value into the one the carry does not hold. Which one is chosen by a flag flipped every
iteration, not by swapping two variables: LLVM does not vectorize a loop that writes into
an array variable the outer loop reassigns (a Numba model of 5,000 Jacobi sweeps: 3.6 ms
swapped, 1.0 ms with the flag). When (for carry
j, body input c, output o):
- o's array is one the body allocates at its top level: o's own (its only root, `storage`)
  or that of a dead value o is written over (`plan_reuse`: `j = i  # reused`), made by a loop
  kernel, a concatenation, a pad or an update, the equations that write into a given array;
  that value then writes into the spare (o written over a carry needs no memory at all);
- o is returned once as a carry, no other carry is a view of it or shares its array, and no
  carry is c, a view of c or an array written over c: at the end of the iteration nothing
  alive sees c's array (a scan's ys are copied into their rows before the next iteration).
Carries are owned by the loop (copies of their initial values, `_init_carries`), so c's array
is the loop's to reuse, and the spare is never a carry's, a constant's or a result's.
"""

from __future__ import annotations

from minijit import primitives as P
from minijit.codegen.kernels import is_loop_kernel
from minijit.core import ELEMENTWISE
from minijit.ir import Jaxpr, Lit, Var
from minijit.passes.fuse_elementwise import fused_p
from minijit.passes.plan_buffers import storage

# Equations whose result the rules can write into a given array (`Lowering.reuse`).
TAKES_AN_ARRAY = (P.concatenate_p, P.pad_p, P.dynamic_update_slice_p)


def _elementwise_kernel(e) -> bool:
    return ((e.primitive is fused_p and e.params["kind"] == "elementwise")
            or (e.primitive in ELEMENTWISE and is_loop_kernel(e.primitive)))


def leading_pad(config) -> tuple[int, int] | None:
    """(low, high) if a `pad`'s `padding_config` pads only axis 0, by amounts >= 0 and
    without interior padding; else None."""
    (low, high, interior), *rest = config
    if low < 0 or high < 0 or interior or any(tuple(c) != (0, 0, 0) for c in rest):
        return None
    return low, high


def update_start(e) -> int | None:
    """The first row a `dynamic_update_slice` writes, if the code can know it: the update
    spans every other axis and its start along axis 0 is a literal (clamped into range)."""
    x, u, start, *_ = e.invars
    if tuple(u.aval.shape[1:]) != tuple(x.aval.shape[1:]) or not isinstance(start, Lit):
        return None
    return min(max(int(start.val), 0), x.aval.shape[0] - u.aval.shape[0])


def written_in_place(jaxpr: Jaxpr) -> dict[Var, tuple]:
    """{kernel output: (the equation that alone reads it, the output's first row in that
    equation's result)} (see the module docstring)."""
    uses: dict[int, int] = {}
    for a in [a for e in jaxpr.eqns for a in e.invars] + list(jaxpr.outvars):
        if isinstance(a, Var):
            uses[id(a)] = uses.get(id(a), 0) + 1
    producer = {id(v): e for e in jaxpr.eqns for v in e.outvars}

    def eligible(a) -> bool:
        k = producer.get(id(a)) if isinstance(a, Var) else None
        return (k is not None and _elementwise_kernel(k) and uses[id(a)] == 1
                and bool(a.aval.shape) and a.aval.shape[0] > 0)

    found = {}
    for e in jaxpr.eqns:
        if e.primitive is P.concatenate_p and e.params["dimension"] == 0:
            offset = 0
            for a in e.invars:
                if eligible(a):
                    found[a] = (e, offset)
                offset += a.aval.shape[0]
        elif e.primitive is P.pad_p and eligible(e.invars[0]):
            pads = leading_pad(e.params["padding_config"])
            if pads is not None:
                found[e.invars[0]] = (e, pads[0])
        elif (e.primitive is P.dynamic_update_slice_p and eligible(e.invars[1])
              and e.invars[1] is not e.invars[0]):
            start = update_start(e)
            if start is not None:
                found[e.invars[1]] = (e, start)
    return found


def spare_carries(lo, body: Jaxpr, carries: list[Var]) -> dict[int, Var]:
    """{k: the body's value that allocates the array of carry k's next value}, for the
    carries that get a spare array (see the module docstring): the next value itself, or
    the dead value it is written over (`plan_reuse`: `j = i  # reused`), whose producer
    then writes into the spare. `carries` are the body's carry inputs, `body.outvars[k]` the
    next value of `carries[k]` (a scan's body returns its ys after them); call after
    `lo.plan_reuse(body, ...)`."""
    roots = storage(body)
    producer = {id(v): e for e in body.eqns for v in e.outvars}
    by_name = {lo.name(v): v for e in body.eqns for v in e.outvars}

    def memory(a) -> str:  # the name of the value whose array `a` is written into
        name = lo.name(a)
        while name in lo.reuse:
            name = lo.reuse[name]
        return name

    # the next carries; a scan's other outputs (its ys) are copied into their rows at the end
    # of the iteration, so they are not alive after it
    outs = list(body.outvars[:len(carries)])
    seen = {id(a): sum(b is a for b in outs) for a in outs}
    found = {}
    for k, (c, o) in enumerate(zip(carries, outs)):
        if not isinstance(o, Var) or not o.aval.shape or o.aval.size == 0:
            continue
        owner = by_name.get(memory(o))  # None: written over an input (a carry) in place
        e = producer.get(id(owner)) if owner is not None else None
        if (e is None or roots[id(o)] != frozenset((id(o),)) or seen[id(o)] != 1
                or roots[id(owner)] != frozenset((id(owner),))
                or not (is_loop_kernel(e.primitive) or e.primitive in TAKES_AN_ARRAY)):
            continue
        others = [a for a in outs if isinstance(a, Var) and a is not o]
        if any(id(o) in roots[id(a)] or memory(a) == memory(o) for a in others):
            continue  # another output is a view of o, or shares its array
        if any(id(c) in roots[id(a)] or memory(a) == lo.name(c)
               for a in outs if isinstance(a, Var)):
            continue  # c's array is still seen after the iteration
        found[k] = owner
    return found
