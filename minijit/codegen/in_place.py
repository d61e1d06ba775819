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
"""

from __future__ import annotations

from minijit import primitives as P
from minijit.codegen.kernels import is_loop_kernel
from minijit.core import ELEMENTWISE
from minijit.ir import Jaxpr, Lit, Var
from minijit.passes.fuse_elementwise import fused_p


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
