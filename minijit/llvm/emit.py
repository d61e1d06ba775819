"""Optimized Jaxpr -> one LLVM IR module: a kernel over data pointers, and its Python entry.

The module has two functions:

- `kernel(p_0, ..., p_n) -> i32`: the program, over the data pointers of its constants,
  arguments and output buffers (in that order; a rank-0 value arrives as a 0-d array). It
  returns 0, or 1 if it could not allocate its temporaries.
- `entry(self, args, nargs)`: a `METH_FASTCALL` built-in function (`engine.py`). It reads
  each argument's data pointer out of its `PyArrayObject` (at offset 16, NumPy's stable
  ABI), calls `kernel`, and returns None, or NULL with `MemoryError` set. It checks nothing:
  its caller (`LLVMExecutable`) passes C-contiguous arrays of exactly the compiled shapes and
  dtypes, and fresh output buffers.

Shapes are the compiled ones, so every loop's trip count is a constant. Every array value is
one buffer of its own, C-ordered: an output's is the caller's buffer where the program
computes it at top level, the others are allocated once, when the kernel starts, and freed
when it returns (a loop body's values reuse theirs on every iteration: each is dead before
the next one computes it). So the kernel writes only its output buffers and its own memory,
never an argument. A loop's carry and a `cond`'s results have buffers (rank-0: stack slots)
that each iteration or branch copies its results into, through temporaries where a result is
another carry's value (`(a, b) -> (b, a)`).

What it compiles (anything else is `LLVMUnsupported`, naming the equation): the elementwise
primitives of `rules.py`, unfused or in `fused` kernels, with `broadcast_in_dim` of a kernel's
input; reductions (`reduce_sum/prod/max/min`, also as a fused kernel's last member);
`reshape` and `squeeze`; slices (static and dynamic), `dynamic_update_slice`, `transpose`,
`rev` and `concatenate`; `while`, `fori_loop` and `cond`; dtypes bool, int32, int64, float32
and float64.
"""

from __future__ import annotations

from contextlib import ExitStack, contextmanager
from math import prod

import numpy as np
from llvmlite import ir

from minijit import primitives as P
from minijit.ir import ClosedJaxpr, Eqn, Jaxpr, Lit, VarNames, name_like_the_printer, pp_eqn_alone
from minijit.lax.control_flow import cond_p, while_p
from minijit.llvm.rules import (
    BOOL,
    I32,
    I64,
    LLVMUnsupported,
    constant,
    intrinsic,
    scalar_rules,
    value_type,
)
from minijit.passes.counted_loops import fori_loop_p
from minijit.passes.fuse_elementwise import fused_p

I8 = ir.IntType(8)
BYTES = I8.as_pointer()
REDUCTIONS = {P.reduce_sum_p, P.reduce_prod_p, P.reduce_max_p, P.reduce_min_p}
WINDOWS = {P.slice_p, P.dynamic_slice_p, P.dynamic_update_slice_p, P.transpose_p, P.rev_p,
           P.concatenate_p}


def memory_type(dtype) -> ir.Type:
    """One element in memory: a bool is NumPy's byte."""
    t = value_type(dtype)
    return I8 if t == BOOL else t


class Program:
    """Emits one closed Jaxpr as `kernel` and `entry` (see the module docstring)."""

    def __init__(self, closed: ClosedJaxpr, name: str):
        self.closed = closed
        self.module = ir.Module(name=name)
        jaxpr = closed.jaxpr
        self.params = [v.aval for v in (*jaxpr.constvars, *jaxpr.invars)] + list(jaxpr.out_avals)
        for k, a in enumerate(self.params):
            try:
                value_type(a.dtype)
            except LLVMUnsupported as e:
                n_consts, n_in = len(jaxpr.constvars), len(jaxpr.constvars) + len(jaxpr.invars)
                what = (f"result {k - n_in}" if k >= n_in else f"argument {k - n_consts}"
                        if k >= n_consts else f"captured constant {k}")
                raise LLVMUnsupported(f"{e}, in the program's {what} ({a.str_short()})") from None
        fnty = ir.FunctionType(I32, [memory_type(a.dtype).as_pointer() for a in self.params])
        self.kernel = ir.Function(self.module, fnty, "kernel")
        self.kernel.linkage = "internal"
        # values are named as the printed jaxpr names them, an element read at `i` as `a[i]`
        self.names = VarNames()
        name_like_the_printer(jaxpr, self.names)
        outs = [f"out{k}" for k in range(len(jaxpr.outvars))]
        for arg, name in zip(self.kernel.args, [*map(self.names, (*jaxpr.constvars,
                                                                 *jaxpr.invars)), *outs]):
            arg.add_attribute("noalias")  # no argument is written, every output is fresh
            arg.name = name
        self.prologue = ir.IRBuilder(self.kernel.append_basic_block("prologue"))
        self.b = ir.IRBuilder(self.kernel.append_basic_block("start"))
        self.allocated = []  # the buffers to free on the way out
        self.allocated_ok = ir.Constant(BOOL, 1)
        self._declare_libc()

    def _declare_libc(self):
        m = self.module
        self.malloc = ir.Function(m, ir.FunctionType(BYTES, [I64]), "malloc")
        self.free = ir.Function(m, ir.FunctionType(ir.VoidType(), [BYTES]), "free")
        self.memmove = ir.Function(m, ir.FunctionType(BYTES, [BYTES, BYTES, I64]), "memmove")

    def named(self, value, v):
        """`value`, named as the printer names the Var `v` if it is a new instruction."""
        if isinstance(value, ir.Instruction) and value.name.startswith("."):  # unnamed
            value.name = v if isinstance(v, str) else self.names(v)
        return value

    # -- memory
    def buffer(self, aval, name: str = ""):
        """A fresh buffer for one array value, allocated when the kernel starts."""
        nbytes = prod(aval.shape) * aval.dtype.itemsize
        elem = memory_type(aval.dtype).as_pointer()
        if nbytes == 0:  # nothing is read or written through it
            return ir.Constant(elem, None)
        p = self.prologue.call(self.malloc, [ir.Constant(I64, nbytes)],
                               name=name and f"{name}.bytes")
        self.allocated.append(p)
        self.allocated_ok = self.prologue.and_(
            self.allocated_ok, self.prologue.icmp_unsigned("!=", p, ir.Constant(BYTES, None)))
        return self.prologue.bitcast(p, elem, name=name)

    def slot(self, aval):
        """Where a result of a loop or `cond` lives: a buffer, or a stack slot for rank 0."""
        if aval.shape:
            return self.buffer(aval)
        return self.prologue.alloca(value_type(aval.dtype))

    def copy_into(self, slot, value, aval):
        """Write `value` (a buffer, or a scalar) into `slot`."""
        if not aval.shape:
            self.b.store(value, slot)
            return
        nbytes = prod(aval.shape) * aval.dtype.itemsize
        if value is not slot and nbytes:
            self.b.call(self.memmove, [self.b.bitcast(slot, BYTES),
                                       self.b.bitcast(value, BYTES), ir.Constant(I64, nbytes)])

    def read_slot(self, slot, aval):
        return self.b.load(slot) if not aval.shape else slot

    def load(self, ptr, index, dtype, name: str = ""):
        x = self.b.load(self.b.gep(ptr, [index]), name=name)
        return self.b.trunc(x, BOOL) if value_type(dtype) == BOOL else x

    def store(self, value, ptr, index, dtype):
        if value_type(dtype) == BOOL:
            value = self.b.zext(value, I8)
        self.b.store(value, self.b.gep(ptr, [index]))

    @contextmanager
    def counted(self, start, stop):
        """`for i in range(start, stop)` (i64 values); the body is emitted in the block."""
        b = self.b
        before = b.block
        head, body, end = (self.kernel.append_basic_block(n) for n in ("head", "body", "end"))
        b.branch(head)
        b.position_at_end(head)
        i = b.phi(I64, name="i")
        i.add_incoming(start, before)
        b.cbranch(b.icmp_signed("<", i, stop), body, end)
        b.position_at_end(body)
        yield i
        i.add_incoming(b.add(i, ir.Constant(I64, 1)), b.block)
        b.branch(head)
        b.position_at_end(end)

    # -- the program
    def emit(self) -> str:
        jaxpr = self.closed.jaxpr
        n_in = len(jaxpr.constvars) + len(jaxpr.invars)
        inputs = [self.param(p, a) for p, a in zip(self.kernel.args[:n_in], self.params)]
        for v, x in zip((*jaxpr.constvars, *jaxpr.invars), inputs):
            self.named(x, v)
        # (the dtypes of every argument and result were checked by `__init__`)
        outputs = self.kernel.args[n_in:]
        # an output computed at top level is computed in its own buffer (once, if it is two)
        where = {}
        for k, v in enumerate(jaxpr.outvars):
            if not isinstance(v, Lit) and v.aval.shape and jaxpr.outvars.count(v) == 1:
                where[id(v)] = outputs[k]
        results = self.jaxpr(jaxpr, inputs, where)
        for out, value, v in zip(outputs, results, jaxpr.outvars):
            if v.aval.shape:
                self.copy_into(out, value, v.aval)
            else:
                self.store(value, out, ir.Constant(I64, 0), v.aval.dtype)
        self.finish()
        self.entry()
        return str(self.module)

    def param(self, pointer, aval):
        """A constant or argument: its data pointer, or its value if it is rank 0."""
        if aval.shape:
            return pointer
        return self.load(pointer, ir.Constant(I64, 0), aval.dtype)

    def finish(self):
        """The ways out: free every buffer, return 0; or 1 if one could not be allocated."""
        exit_block = self.kernel.append_basic_block("exit")
        failed = self.kernel.append_basic_block("out_of_memory")
        self.b.branch(exit_block)
        start = self.kernel.blocks[1]
        self.prologue.cbranch(self.allocated_ok, start, failed)
        for block, status in ((exit_block, 0), (failed, 1)):
            self.b.position_at_end(block)
            for p in self.allocated:
                self.b.call(self.free, [p])  # free(NULL) does nothing
            self.b.ret(ir.Constant(I32, status))

    def entry(self):
        """The `METH_FASTCALL` entry: data pointers out of the array objects, then `kernel`."""
        m = self.module
        fn = ir.Function(m, ir.FunctionType(BYTES, [BYTES, BYTES.as_pointer(), I64]), "entry")
        for arg, name in zip(fn.args, ("self", "args", "nargs")):
            arg.name = name
        incref = ir.Function(m, ir.FunctionType(ir.VoidType(), [BYTES]), "Py_IncRef")
        no_memory = ir.Function(m, ir.FunctionType(BYTES, []), "PyErr_NoMemory")
        none = ir.GlobalVariable(m, I8, "_Py_NoneStruct")  # the object None
        b = ir.IRBuilder(fn.append_basic_block("start"))
        pointers = []
        for k, param in enumerate(self.kernel.args):
            obj = b.load(b.gep(fn.args[1], [ir.Constant(I64, k)]), name=f"object{k}")
            field = b.bitcast(b.gep(obj, [ir.Constant(I64, 16)]), param.type.as_pointer(),
                              name=f"object{k}.data")
            pointers.append(b.load(field, name=param.name))
        status = b.call(self.kernel, pointers, name="status")
        ok, failed = fn.append_basic_block("ok"), fn.append_basic_block("failed")
        b.cbranch(b.icmp_signed("==", status, ir.Constant(I32, 0)), ok, failed)
        b.position_at_end(ok)
        b.call(incref, [none])
        b.ret(none)
        b.position_at_end(failed)
        b.ret(b.call(no_memory, []))

    def jaxpr(self, jaxpr: Jaxpr, inputs, where=None) -> list:
        """Emit `jaxpr`'s equations with its invars bound to `inputs`; its outputs' values.
        `where` maps an outvar (by id) to the buffer its equation computes it in."""
        env = {id(v): x for v, x in zip((*jaxpr.constvars, *jaxpr.invars), inputs)}
        where = where or {}
        for eqn in jaxpr.eqns:
            args = [self.atom(a, env) for a in eqn.invars]
            try:
                outs = self.equation(eqn, args, [where.get(id(v)) for v in eqn.outvars])
            except LLVMUnsupported as e:
                raise LLVMUnsupported(f"{e}, in `{pp_eqn_alone(eqn)}`"
                                      + (f" (from {eqn.source})" if eqn.source else "")) from None
            env.update(zip(map(id, eqn.outvars), outs))
        return [self.atom(a, env) for a in jaxpr.outvars]

    def atom(self, a, env):
        if isinstance(a, Lit):
            return constant(a.aval.dtype, a.val)
        return env[id(a)]

    def equation(self, eqn: Eqn, args, targets) -> list:
        p = eqn.primitive
        if p is while_p:
            return self.while_loop(eqn, args)
        if p is fori_loop_p:
            return self.fori_loop(eqn, args)
        if p is cond_p:
            return self.cond(eqn, args)
        if p is fused_p:
            return self.fused(eqn, args, targets)
        if p in (P.reshape_p, P.squeeze_p):
            return [self.same_elements(eqn, args[0])]
        if p in WINDOWS:
            return [self.window(eqn, args, targets[0])]
        if p in scalar_rules or p is P.broadcast_in_dim_p or p in REDUCTIONS:
            # one equation is a kernel of one member, over its operands that are not literals
            vars_ = [(a, x) for a, x in zip(eqn.invars, args) if not isinstance(a, Lit)]
            kernel = Jaxpr((), tuple(a for a, _ in vars_), (eqn,), eqn.outvars)
            return self.fused(eqn, [x for _, x in vars_], targets, kernel)
        raise LLVMUnsupported(f"the primitive {p.name}")

    def same_elements(self, eqn: Eqn, x):
        """`reshape` and `squeeze`: the same elements in the same C order, so the same buffer
        (never written again: every value has its own). Only a rank-0 value changes home:
        it lives in a register, an array of one element in memory."""
        (a,), (out,) = eqn.invars, eqn.outvars
        if a.aval.shape and out.aval.shape:
            return x
        if a.aval.shape:  # one element, out of memory
            return self.load(x, ir.Constant(I64, 0), a.aval.dtype, self.names(out))
        buf = self.buffer(out.aval, self.names(out))  # one element, into memory
        self.store(x, buf, ir.Constant(I64, 0), a.aval.dtype)
        return buf

    def window(self, eqn: Eqn, args, target):
        """Data movement, as copies element by element into a fresh buffer (`target`, if
        given): `slice`, `dynamic_slice` (its starts clamped so the window fits, as
        `interpret._clamped_starts`), `transpose`, `rev`, `concatenate`, and
        `dynamic_update_slice` (a copy of the operand, then the update written over it)."""
        p, out = eqn.primitive, eqn.outvars[0]
        if any(not a.aval.shape for a in eqn.invars[:1]) or not out.aval.shape:
            raise LLVMUnsupported(f"{p.name} of a rank-0 value")
        x, shape = args[0], eqn.invars[0].aval.shape
        dst = target if target is not None else self.buffer(out.aval, self.names(out))
        dtype = out.aval.dtype
        if p is P.concatenate_p:
            base, d = 0, eqn.params["dimension"]
            for a, value in zip(eqn.invars, args):
                with self.nest(a.aval.shape) as (index, i):
                    at = [self.b.add(j, ir.Constant(I64, base)) if k == d else j
                          for k, j in enumerate(index)]
                    self.store(self.load(value, i, dtype), dst, self.flat(at, out.aval.shape),
                               out.aval.dtype)
                base += a.aval.shape[d]
            return dst
        if p is P.dynamic_update_slice_p:
            update, starts = eqn.invars[1], self.starts(shape, eqn.invars[1].aval.shape, args[2:])
            self.copy_into(dst, x, out.aval)
            with self.nest(update.aval.shape) as (index, i):
                at = [self.b.add(j, s) for j, s in zip(index, starts)]
                self.store(self.load(args[1], i, dtype), dst, self.flat(at, shape), dtype)
            return dst
        if p is P.dynamic_slice_p:
            starts = self.starts(shape, eqn.params["slice_sizes"], args[1:])
        with self.nest(out.aval.shape) as (index, i):
            if p is P.slice_p:
                strides = eqn.params["strides"] or (1,) * len(shape)
                at = [self.b.add(ir.Constant(I64, lo), self.b.mul(j, ir.Constant(I64, st)))
                      for j, lo, st in zip(index, eqn.params["start_indices"], strides)]
            elif p is P.dynamic_slice_p:
                at = [self.b.add(j, s) for j, s in zip(index, starts)]
            elif p is P.transpose_p:
                at = [None] * len(shape)
                for d, k in enumerate(eqn.params["permutation"]):
                    at[k] = index[d]
            else:  # rev
                at = [self.b.sub(ir.Constant(I64, n - 1), j) if d in eqn.params["dimensions"]
                      else j for d, (j, n) in enumerate(zip(index, shape))]
            self.store(self.load(x, self.flat(at, shape), dtype), dst, i, dtype)
        return dst

    def starts(self, shape, sizes, indices) -> list:
        """Each start index as i64, clamped to [0, dim - size] so that the window fits."""
        out = []
        for n, size, start in zip(shape, sizes, indices):
            if start.type != I64:
                start = self.b.sext(start, I64)
            low = self.b.select(self.b.icmp_signed("<", start, ir.Constant(I64, 0)),
                                ir.Constant(I64, 0), start)
            high = ir.Constant(I64, n - size)
            out.append(self.b.select(self.b.icmp_signed(">", low, high), high, low))
        return out

    def flat(self, index, shape):
        """The flat offset of the element at `index` (i64 values) of a C-ordered `shape`."""
        flat = ir.Constant(I64, 0)
        for j, n in zip(index, shape):
            flat = self.b.add(self.b.mul(flat, ir.Constant(I64, n)), j)
        return flat

    # -- loop kernels
    def fused(self, eqn: Eqn, args, targets, kernel: Jaxpr | None = None) -> list:
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
            return self.elements(kernel, args, None, None, None)
        reduced = {id(e.outvars[0]) for e in reductions}
        if any(not v.aval.shape and id(v) not in reduced for v in kernel.outvars):
            raise LLVMUnsupported("a kernel with a rank-0 output that is not a reduction")
        buffers = [t if t is not None else self.buffer(v.aval, self.names(o)) if v.aval.shape
                   else None for t, v, o in zip(targets, kernel.outvars, eqn.outvars)]
        where = {id(v): buf for v, buf in zip(kernel.outvars, buffers)}
        accumulators = {}
        for e in reductions:
            out = e.outvars[0]
            if not out.aval.shape:  # over all axes: one value
                slot = self.prologue.alloca(value_type(out.aval.dtype), name="acc")
                self.b.store(_reduction_start(e), slot)
                accumulators[id(e)] = (slot, None)
                continue
            if id(out) not in where:  # a partial reduction is always an output of its kernel
                raise LLVMUnsupported("a reduction that its kernel does not return")
            buf = where[id(out)]
            with self.counted(ir.Constant(I64, 0), ir.Constant(I64, prod(out.aval.shape))) as j:
                self.store(_reduction_start(e), buf, j, out.aval.dtype)
            kept = [d for d in range(len(shape)) if d not in e.params["axes"]]
            accumulators[id(e)] = (buf, kept)
        with self.nest(shape) as (index, i):
            values = self.elements(kernel, args, index, i, accumulators)
            for value, v, buf in zip(values, kernel.outvars, buffers):
                if buf is not None and id(v) not in reduced:
                    self.store(value, buf, i, v.aval.dtype)
        by_var = {id(e.outvars[0]): self.b.load(accumulators[id(e)][0], name=self.names(o))
                  for e, o in zip(reductions, _reduction_outvars(eqn, kernel, reductions))
                  if not e.outvars[0].aval.shape}
        return [buf if buf is not None else by_var[id(v)]
                for buf, v in zip(buffers, kernel.outvars)]

    @contextmanager
    def nest(self, shape):
        """`for i0 in range(n0): for i1 in range(n1): ...`: the indices, and the flat index
        `(i0 * n1 + i1) * n2 + ...` of the element in a C-ordered array of `shape`."""
        index, flat = [], ir.Constant(I64, 0)
        with ExitStack() as loops:
            for n in shape:
                index.append(loops.enter_context(self.counted(ir.Constant(I64, 0),
                                                              ir.Constant(I64, n))))
            for d, n in enumerate(shape):
                flat = self.b.add(self.b.mul(flat, ir.Constant(I64, n)), index[d])
            yield index, flat

    def offset(self, index, shape, dims):
        """The flat offset in a C-ordered array of `shape`, whose axis k is indexed by
        `index[dims[k]]` (by 0 where its size is 1, as broadcasting reads it)."""
        flat = ir.Constant(I64, 0)
        for n, d in zip(shape, dims):
            at = ir.Constant(I64, 0) if n == 1 else index[d]
            flat = self.b.add(self.b.mul(flat, ir.Constant(I64, n)), at)
        return flat

    def elements(self, kernel: Jaxpr, args, index, i, accumulators) -> list:
        """One element of each of `kernel`'s outputs, at the nest's `index` and flat index `i`
        (None: rank-0 work). An input array is read where a member reads it: at `i`, or
        where a `broadcast_in_dim` maps the nest's index. A reduction folds its element into
        its accumulator, and has no value here."""
        env, arrays = {}, {}
        for v, x in zip(kernel.invars, args):
            (arrays if v.aval.shape else env)[id(v)] = x

        def read(a, shape):
            if isinstance(a, Lit) or id(a) not in arrays:
                return self.atom(a, env)
            if a.aval.shape != shape:
                raise LLVMUnsupported("operands of different shapes")
            env[id(a)] = self.load(arrays.pop(id(a)), i, a.aval.dtype, f"{self.names(a)}[i]")
            return env[id(a)]

        for e in kernel.eqns:
            p, out_shape = e.primitive, e.outvars[0].aval.shape
            if p is P.broadcast_in_dim_p:
                (a,) = e.invars
                if not a.aval.shape:
                    out = self.atom(a, env)
                elif id(a) in arrays or (id(a) in env and a.aval.shape == out_shape):
                    out = self.broadcast(a, arrays.get(id(a)), env, e, index, i)
                else:
                    raise LLVMUnsupported("broadcast_in_dim of a value computed in its kernel")
            elif p in REDUCTIONS:
                (a,) = e.invars
                slot, kept = accumulators[id(e)]
                x, dtype = read(a, a.aval.shape), e.outvars[0].aval.dtype
                if kept is None:  # a stack slot
                    self.b.store(_combine(self.b, p, self.b.load(slot), x, e), slot)
                    continue
                at = self.offset(index, [a.aval.shape[d] for d in kept], kept)
                self.store(_combine(self.b, p, self.load(slot, at, dtype), x, e), slot, at, dtype)
                continue
            elif p in scalar_rules:
                out = scalar_rules[p](self.b, [read(a, out_shape) for a in e.invars], e)
            else:
                raise LLVMUnsupported(f"the primitive {p.name} in a kernel")
            env[id(e.outvars[0])] = self.named(out, e.outvars[0])
        return [read(a, a.aval.shape) if id(a) in env or id(a) in arrays or isinstance(a, Lit)
                else None for a in kernel.outvars]

    def broadcast(self, a, array, env, e: Eqn, index, i):
        """`broadcast_in_dim` of the input array `a`: its element where the nest's index maps."""
        if array is None:  # read at `i` already: the same shape, a broadcast that moves nothing
            return env[id(a)]
        dims = e.params["broadcast_dimensions"]
        return self.load(array, self.offset(index, a.aval.shape, dims), a.aval.dtype,
                         f"{self.names(a)}[...]")

    # -- control flow
    def carry(self, outvars, values) -> list:
        """A loop's carry, holding `values` to start with. A rank-0 part is a stack slot. An
        array part is two buffers and two stack slots that say which one is current and which
        is spare: the body computes the part's new value in the spare one where it can, and
        the two swap at the end of the iteration, so no copy is made (`write_carry`)."""
        parts = []
        for v, x in zip(outvars, values):
            a, name = v.aval, self.names(v)
            if not a.shape:
                slot = self.prologue.alloca(value_type(a.dtype), name=name)
                self.b.store(x, slot)
                parts.append((slot, None))
                continue
            pointer = memory_type(a.dtype).as_pointer()
            current = self.prologue.alloca(pointer, name=f"{name}.current")
            spare = self.prologue.alloca(pointer, name=f"{name}.spare")
            first = self.buffer(a, f"{name}.one")
            self.b.store(first, current)  # at every entry to the loop: it may have swapped
            self.b.store(self.buffer(a, f"{name}.two"), spare)
            self.copy_into(first, x, a)
            parts.append((current, spare))
        return parts

    def read_carry(self, parts) -> list:
        """The carry's current values: a rank-0 part's value, an array part's buffer."""
        return [self.b.load(current) for current, _ in parts]

    def spares(self, body: Jaxpr, parts) -> tuple[list, dict]:
        """Each array part's spare buffer, where the body computes that part's new value
        itself (an equation's result, returned once), and `where` for `self.jaxpr`."""
        spares, where = [], {}
        for v, (_, spare) in zip(body.outvars, parts):
            computed = (spare is not None and not isinstance(v, Lit)
                        and body.outvars.count(v) == 1 and v not in body.invars)
            spares.append(self.b.load(spare) if computed else None)
            if computed:
                where[id(v)] = spares[-1]
        return spares, where

    def write_carry(self, parts, values, avals, carried, spares):
        """The body's results become the carry. A result computed in its spare buffer swaps
        with the current one; any other is copied into the current one, and a result that is
        another part's current value goes through a temporary first (`(a, b) -> (b, a)`),
        so that no buffer is overwritten before it is read."""
        staged = []
        for k, (x, a) in enumerate(zip(values, avals)):
            if a.shape and any(x is c for j, c in enumerate(carried) if j != k):
                temp = self.buffer(a)
                self.copy_into(temp, x, a)
                x = temp
            staged.append(x)
        swaps = []
        for (current, spare), x, a, old, fresh in zip(parts, staged, avals, carried, spares):
            if not a.shape:
                self.b.store(x, current)
            elif fresh is not None and x is fresh:
                swaps.append((current, spare, x, old))
            else:
                self.copy_into(old, x, a)
        for current, spare, new, old in swaps:
            self.b.store(new, current)
            self.b.store(old, spare)

    def while_loop(self, eqn: Eqn, args) -> list:
        cn, bn = eqn.params["cond_nconsts"], eqn.params["body_nconsts"]
        cond, body = eqn.params["cond_jaxpr"], eqn.params["body_jaxpr"]
        avals = [v.aval for v in eqn.outvars]
        parts = self.carry(eqn.outvars, args[cn + bn:])
        b = self.b
        head, loop, end = (self.kernel.append_basic_block(n) for n in ("while", "do", "done"))
        b.branch(head)
        b.position_at_end(head)
        carried = self.read_carry(parts)
        (go,) = self.jaxpr(cond, [*args[:cn], *carried])
        b.cbranch(go, loop, end)
        b.position_at_end(loop)
        spares, where = self.spares(body, parts)
        new = self.jaxpr(body, [*args[cn:cn + bn], *carried], where)
        self.write_carry(parts, new, avals, carried, spares)
        b.branch(head)
        b.position_at_end(end)
        return self.read_carry(parts)

    def fori_loop(self, eqn: Eqn, args) -> list:
        n = eqn.params["body_nconsts"]
        lower, upper, consts, init = args[0], args[1], args[2:2 + n], args[2 + n:]
        body = eqn.params["body_jaxpr"]
        index_type = lower.type
        avals = [v.aval for v in eqn.outvars]
        parts = self.carry(eqn.outvars, init)
        with self.counted(self.b.sext(lower, I64) if index_type != I64 else lower,
                          self.b.sext(upper, I64) if index_type != I64 else upper) as i:
            carried = self.read_carry(parts)
            index = self.b.trunc(i, index_type) if index_type != I64 else i
            spares, where = self.spares(body, parts)
            new = self.jaxpr(body, [*consts, index, *carried], where)
            self.write_carry(parts, new, avals, carried, spares)
        return self.read_carry(parts)

    def cond(self, eqn: Eqn, args) -> list:
        """`branches[clamp(index, 0, n - 1)]`, as `cond`'s impl rule picks it."""
        index, operands = args[0], args[1:]
        branches = eqn.params["branches"]
        avals = [v.aval for v in eqn.outvars]
        slots = [self.slot(a) for a in avals]
        b = self.b
        blocks = [self.kernel.append_basic_block(f"branch{k}") for k in range(len(branches))]
        end = self.kernel.append_basic_block("merge")
        last = len(branches) - 1
        if index.type == BOOL:
            index = b.zext(index, I32)
        low = b.icmp_signed("<", index, ir.Constant(index.type, 0))
        high = b.icmp_signed(">", index, ir.Constant(index.type, last))
        index = b.select(low, ir.Constant(index.type, 0),
                         b.select(high, ir.Constant(index.type, last), index))
        switch = b.switch(index, blocks[last])
        for k, block in enumerate(blocks[:last]):
            switch.add_case(ir.Constant(index.type, k), block)
        for branch, block in zip(branches, blocks):
            b.position_at_end(block)
            for s, x, a in zip(slots, self.jaxpr(branch, operands), avals):
                self.copy_into(s, x, a)
            b.branch(end)
        b.position_at_end(end)
        return [self.read_slot(s, a) for s, a in zip(slots, avals)]


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
        return b.fadd(acc, x) if kind == "f" else b.or_(acc, x) if kind == "b" else b.add(acc, x)
    if p is P.reduce_prod_p:
        return b.fmul(acc, x) if kind == "f" else b.and_(acc, x) if kind == "b" else b.mul(acc, x)
    high = p is P.reduce_max_p
    if kind == "f":
        return intrinsic(b, "maximum" if high else "minimum", [acc, x])
    if kind == "b":
        return b.or_(acc, x) if high else b.and_(acc, x)
    return b.select(b.icmp_signed(">" if high else "<", x, acc), x, acc)


def emit_program(closed: ClosedJaxpr, name: str = "f") -> str:
    """The LLVM IR text of `closed`; raises `LLVMUnsupported` for what it cannot compile."""
    return Program(closed, name).emit()
