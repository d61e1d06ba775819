"""Data movement for the LLVM backend (`emit.py`): each result is a copy, element by element,
into a buffer of its own, so no value shares memory that another computation writes.

`reshape` and `squeeze` keep the same elements in the same C order, so they are the same
buffer; `slice`, `dynamic_slice`, `transpose`, `rev` and `concatenate` read each element of
the result where the operand holds it; `pad` reads it there too, or takes the padding value
where the result's index falls in padding; `dynamic_update_slice` copies its operand, then
writes the update over the copy. Dynamic starts are clamped so that the window fits, as
`interpret._clamped_starts` (and XLA) clamp them.
"""

from __future__ import annotations

from llvmlite import ir

from minijit import primitives as P
from minijit.ir import Eqn
from minijit.llvm.rules import I64, LLVMUnsupported

WINDOWS = {P.slice_p, P.dynamic_slice_p, P.dynamic_update_slice_p, P.transpose_p, P.rev_p,
           P.concatenate_p, P.pad_p}


def same_elements(prog, eqn: Eqn, x):
    """`reshape` and `squeeze`: the same elements in the same C order, so the same buffer
    (never written again: every value has its own). Only a rank-0 value changes home:
    it lives in a register, an array of one element in memory."""
    (a,), (out,) = eqn.invars, eqn.outvars
    if a.aval.shape and out.aval.shape:
        return x
    if a.aval.shape:  # one element, out of memory
        return prog.load(x, ir.Constant(I64, 0), a.aval.dtype, prog.names(out))
    buf = prog.buffer(out.aval, prog.names(out))  # one element, into memory
    prog.store(x, buf, ir.Constant(I64, 0), a.aval.dtype)
    return buf


def window(prog, eqn: Eqn, args, target):
    """Data movement, as copies element by element into a fresh buffer (`target`, if
    given): `slice`, `dynamic_slice` (its starts clamped so the window fits, as
    `interpret._clamped_starts`), `transpose`, `rev`, `concatenate`, and
    `dynamic_update_slice` (a copy of the operand, then the update written over it)."""
    p, out = eqn.primitive, eqn.outvars[0]
    if not eqn.invars[0].aval.shape or not out.aval.shape:
        raise LLVMUnsupported(f"{p.name} of a rank-0 value")
    x, shape = args[0], eqn.invars[0].aval.shape
    dst = target if target is not None else prog.buffer(out.aval, prog.names(out))
    dtype = out.aval.dtype
    if p is P.concatenate_p:
        base, d = 0, eqn.params["dimension"]
        for a, value in zip(eqn.invars, args):
            with prog.nest(a.aval.shape) as (index, i):
                at = [prog.b.add(j, ir.Constant(I64, base)) if k == d else j
                      for k, j in enumerate(index)]
                prog.store(prog.load(value, i, dtype), dst, prog.flat(at, out.aval.shape),
                           out.aval.dtype)
            base += a.aval.shape[d]
        return dst
    if p is P.dynamic_update_slice_p:
        update = eqn.invars[1]
        starts = clamped_starts(prog, shape, update.aval.shape, args[2:])
        prog.copy_into(dst, x, out.aval)
        with prog.nest(update.aval.shape) as (index, i):
            at = [prog.b.add(j, s) for j, s in zip(index, starts)]
            prog.store(prog.load(args[1], i, dtype), dst, prog.flat(at, shape), dtype)
        return dst
    if p is P.pad_p:
        return _pad(prog, eqn, args, dst)
    if p is P.dynamic_slice_p:
        starts = clamped_starts(prog, shape, eqn.params["slice_sizes"], args[1:])
    with prog.nest(out.aval.shape) as (index, i):
        if p is P.slice_p:
            strides = eqn.params["strides"] or (1,) * len(shape)
            at = [prog.b.add(ir.Constant(I64, lo), prog.b.mul(j, ir.Constant(I64, st)))
                  for j, lo, st in zip(index, eqn.params["start_indices"], strides)]
        elif p is P.dynamic_slice_p:
            at = [prog.b.add(j, s) for j, s in zip(index, starts)]
        elif p is P.transpose_p:
            at = [None] * len(shape)
            for d, k in enumerate(eqn.params["permutation"]):
                at[k] = index[d]
        else:  # rev
            at = [prog.b.sub(ir.Constant(I64, n - 1), j) if d in eqn.params["dimensions"]
                  else j for d, (j, n) in enumerate(zip(index, shape))]
        prog.store(prog.load(x, prog.flat(at, shape), dtype), dst, i, dtype)
    return dst


def _pad(prog, eqn: Eqn, args, dst):
    """`pad`: along each axis, the result's index j holds the operand's element (j - lo) / s
    (s = interior + 1) where j - lo is a multiple of s and that element exists, else the
    padding value (the test would crop for a negative lo or hi too, but the `pad` primitive
    has none: `lax.pad` crops with a `slice`). The operand is read at a clamped index, and the
    read is used only where every axis holds an element."""
    b, (x, pad_value) = prog.b, args
    shape, out = eqn.invars[0].aval.shape, eqn.outvars[0].aval
    dtype = out.dtype
    with prog.nest(out.shape) as (index, i):
        inside, at = ir.Constant(ir.IntType(1), 1), []
        for j, n, (lo, _, interior) in zip(index, shape, eqn.params["padding_config"]):
            t, step = b.sub(j, ir.Constant(I64, lo)), ir.Constant(I64, interior + 1)
            q = b.sdiv(t, step) if interior else t
            ok = b.and_(b.icmp_signed(">=", t, ir.Constant(I64, 0)),
                        b.icmp_signed("<", q, ir.Constant(I64, n)))
            if interior:
                ok = b.and_(ok, b.icmp_signed("==", b.srem(t, step), ir.Constant(I64, 0)))
            inside = b.and_(inside, ok)
            at.append(b.select(ok, q, ir.Constant(I64, 0)))
        if 0 in shape:  # nothing to read: all padding
            value = pad_value
        else:
            value = b.select(inside, prog.load(x, prog.flat(at, shape), dtype), pad_value)
        prog.store(value, dst, i, dtype)
    return dst


def clamped_starts(prog, shape, sizes, indices) -> list:
    """Each start index as i64, clamped to [0, dim - size] so that the window fits."""
    out = []
    for n, size, start in zip(shape, sizes, indices):
        if start.type != I64:
            start = prog.b.sext(start, I64)
        low = prog.b.select(prog.b.icmp_signed("<", start, ir.Constant(I64, 0)),
                            ir.Constant(I64, 0), start)
        high = ir.Constant(I64, n - size)
        out.append(prog.b.select(prog.b.icmp_signed(">", low, high), high, low))
    return out
