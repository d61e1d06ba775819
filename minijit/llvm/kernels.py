"""Loop kernels for the LLVM backend: one loop nest over a kernel's elements (`emit.py`).

`fused(prog, eqn, args, targets)` emits a `fused` equation (or one elementwise equation, or
one reduction, as a kernel of one member) through the `Program` `prog`: a loop nest over its
iteration shape, the last index fastest, as C-ordered arrays are laid out, whose body
computes one element of every member with `rules.scalar_rules`. An input array is read at
the nest's flat index, or where a `broadcast_in_dim` maps the nest's index; an output is
stored at the flat index; a reduction folds each element into its accumulator, a stack slot
(over all axes) or its output buffer, at the index of the axes it keeps (the buffer is first
filled with the reduction's start). A float sum's additions carry LLVM's `reassoc` flag, so
the vectorizer may keep several partial sums, as NumPy's pairwise sum and Numba's backend do
(`codegen/folds.py`): one accumulator added in order is a chain that runs one element per
add's latency, several times slower. The result is equal to NumPy's up to rounding.
"""

from __future__ import annotations

from math import prod

import numpy as np
from llvmlite import ir

from minijit import primitives as P
from minijit.ir import Eqn, Jaxpr, Lit
from minijit.llvm.rules import I64, LLVMUnsupported, constant, intrinsic, scalar_rules, value_type

REDUCTIONS = {P.reduce_sum_p, P.reduce_prod_p, P.reduce_max_p, P.reduce_min_p}


def fused(prog, eqn: Eqn, args, targets, kernel: Jaxpr | None = None) -> list:
    """A loop kernel: one loop nest over its iteration shape (its members' output shape,
    or its reduction's operand shape), the last index fastest, as the arrays are laid
    out. Each output is stored at the nest's flat index; a reduction folds each element
    into its accumulator, a stack slot (over all axes) or its output buffer, indexed by the
    axes it keeps. Rank-0 work is computed once, outside any loop."""
    kernel = kernel or eqn.params["jaxpr"]
    shapes = {e.invars[0].aval.shape if e.primitive in REDUCTIONS else e.outvars[0].aval.shape
              for e in kernel.eqns}
    if len(shapes) != 1:
        raise LLVMUnsupported("a kernel over several shapes")
    (shape,) = shapes
    reductions = [e for e in kernel.eqns if e.primitive in REDUCTIONS]
    if not shape and not reductions:  # rank-0 work: no loop
        return elements(prog, kernel, args, None, None, None)
    reduced = {id(e.outvars[0]) for e in reductions}
    if any(not v.aval.shape and id(v) not in reduced for v in kernel.outvars):
        raise LLVMUnsupported("a kernel with a rank-0 output that is not a reduction")
    buffers = [t if t is not None else prog.buffer(v.aval, prog.names(o)) if v.aval.shape
               else None for t, v, o in zip(targets, kernel.outvars, eqn.outvars)]
    where = {id(v): buf for v, buf in zip(kernel.outvars, buffers)}
    accumulators = {}
    for e in reductions:
        out = e.outvars[0]
        if not out.aval.shape:  # over all axes: one value
            slot = prog.prologue.alloca(value_type(out.aval.dtype), name="acc")
            prog.b.store(_reduction_start(e), slot)
            accumulators[id(e)] = (slot, None)
            continue
        if id(out) not in where:  # a partial reduction is always an output of its kernel
            raise LLVMUnsupported("a reduction that its kernel does not return")
        buf = where[id(out)]
        with prog.counted(ir.Constant(I64, 0), ir.Constant(I64, prod(out.aval.shape))) as j:
            prog.store(_reduction_start(e), buf, j, out.aval.dtype)
        kept = [d for d in range(len(shape)) if d not in e.params["axes"]]
        accumulators[id(e)] = (buf, kept)
    with prog.nest(shape) as (index, i):
        values = elements(prog, kernel, args, index, i, accumulators)
        for value, v, buf in zip(values, kernel.outvars, buffers):
            if buf is not None and id(v) not in reduced:
                prog.store(value, buf, i, v.aval.dtype)
    by_var = {id(e.outvars[0]): prog.b.load(accumulators[id(e)][0], name=prog.names(o))
              for e, o in zip(reductions, _reduction_outvars(eqn, kernel, reductions))
              if not e.outvars[0].aval.shape}
    return [buf if buf is not None else by_var[id(v)]
            for buf, v in zip(buffers, kernel.outvars)]


def elements(prog, kernel: Jaxpr, args, index, i, accumulators) -> list:
    """One element of each of `kernel`'s outputs, at the nest's `index` and flat index `i`
    (None: rank-0 work). An input array is read where a member reads it: at `i`, or
    where a `broadcast_in_dim` maps the nest's index. A reduction folds its element into
    its accumulator, and has no value here."""
    env, arrays = {}, {}
    for v, x in zip(kernel.invars, args):
        (arrays if v.aval.shape else env)[id(v)] = x

    def read(a, shape):
        if isinstance(a, Lit) or id(a) not in arrays:
            return prog.atom(a, env)
        if a.aval.shape != shape:
            raise LLVMUnsupported("operands of different shapes")
        env[id(a)] = prog.load(arrays.pop(id(a)), i, a.aval.dtype, f"{prog.names(a)}[i]")
        return env[id(a)]

    for e in kernel.eqns:
        p, out_shape = e.primitive, e.outvars[0].aval.shape
        if p is P.broadcast_in_dim_p:
            (a,) = e.invars
            if not a.aval.shape:
                out = prog.atom(a, env)
            elif id(a) in arrays or (id(a) in env and a.aval.shape == out_shape):
                out = broadcast(prog, a, arrays.get(id(a)), env, e, index, i)
            else:
                raise LLVMUnsupported("broadcast_in_dim of a value computed in its kernel")
        elif p in REDUCTIONS:
            (a,) = e.invars
            slot, kept = accumulators[id(e)]
            x, dtype = read(a, a.aval.shape), e.outvars[0].aval.dtype
            if kept is None:  # a stack slot
                prog.b.store(_combine(prog.b, p, prog.b.load(slot), x, e), slot)
                continue
            at = prog.offset(index, [a.aval.shape[d] for d in kept], kept)
            prog.store(_combine(prog.b, p, prog.load(slot, at, dtype), x, e), slot, at, dtype)
            continue
        elif p in scalar_rules:
            out = scalar_rules[p](prog.b, [read(a, out_shape) for a in e.invars], e)
        else:
            raise LLVMUnsupported(f"the primitive {p.name} in a kernel")
        env[id(e.outvars[0])] = prog.named(out, e.outvars[0])
    return [read(a, a.aval.shape) if id(a) in env or id(a) in arrays or isinstance(a, Lit)
            else None for a in kernel.outvars]


def broadcast(prog, a, array, env, e: Eqn, index, i):
    """`broadcast_in_dim` of the input array `a`: its element where the nest's index maps."""
    if array is None:  # read at `i` already: the same shape, a broadcast that moves nothing
        return env[id(a)]
    dims = e.params["broadcast_dimensions"]
    return prog.load(array, prog.offset(index, a.aval.shape, dims), a.aval.dtype,
                     f"{prog.names(a)}[...]")


def _reduction_outvars(eqn: Eqn, kernel: Jaxpr, reductions) -> list:
    """The Var of the program for each reduction's result (its name is the printer's)."""
    outer = {id(k): o for k, o in zip(kernel.outvars, eqn.outvars)}
    return [outer.get(id(e.outvars[0]), e.outvars[0]) for e in reductions]


def _reduction_start(e: Eqn):
    dtype = e.outvars[0].aval.dtype
    p = e.primitive
    if p is P.reduce_sum_p:
        return constant(dtype, 0)
    if p is P.reduce_prod_p:
        return constant(dtype, 1)
    high = p is P.reduce_min_p
    if dtype.kind == "f":
        return constant(dtype, np.inf if high else -np.inf)
    if dtype.kind == "b":
        return constant(dtype, high)
    info = np.iinfo(dtype)
    return constant(dtype, info.max if high else info.min)


def _combine(b: ir.IRBuilder, p, acc, x, e: Eqn):
    kind = e.outvars[0].aval.dtype.kind
    if p is P.reduce_sum_p:
        if kind == "f":
            return b.fadd(acc, x, flags=("reassoc",))  # partial sums: see the docstring
        return b.or_(acc, x) if kind == "b" else b.add(acc, x)
    if p is P.reduce_prod_p:
        return b.fmul(acc, x) if kind == "f" else b.and_(acc, x) if kind == "b" else b.mul(acc, x)
    high = p is P.reduce_max_p
    if kind == "f":
        return intrinsic(b, "maximum" if high else "minimum", [acc, x])
    if kind == "b":
        return b.or_(acc, x) if high else b.and_(acc, x)
    return b.select(b.icmp_signed(">" if high else "<", x, acc), x, acc)
