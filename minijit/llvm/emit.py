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
never an argument.

`Program` walks the equations and keeps the memory; each kind of equation is written by its
own module, through the `Program` it is given: loop kernels (`kernels.py`: the elementwise
primitives of `rules.py`, unfused or fused, with `broadcast_in_dim` of a kernel's input, and
`reduce_sum/prod/max/min`), data movement (`windows.py`: `reshape`, `squeeze`, static and
dynamic slices, `dynamic_update_slice`, `transpose`, `rev`, `concatenate`, `pad`) and control flow
(`control.py`: `while`, `fori_loop`, `cond`). Dtypes: bool, int32, int64, float32 and
float64. Anything else is `LLVMUnsupported`, naming the equation.
"""

from __future__ import annotations

from contextlib import ExitStack, contextmanager
from math import prod

from llvmlite import ir

from minijit import primitives as P
from minijit.codegen import vector_width
from minijit.ir import ClosedJaxpr, Eqn, Jaxpr, Lit, VarNames, name_like_the_printer, pp_eqn_alone
from minijit.lax.control_flow import cond_p, while_p
from minijit.llvm import (
    control,
    kernels,
    vecmath,  # noqa: F401  puts minijit's vector math in scalar_rules
    windows,
)
from minijit.llvm.kernels import REDUCTIONS
from minijit.llvm.rules import (
    BOOL,
    BYTES,
    I8,
    I32,
    I64,
    LLVMUnsupported,
    constant,
    memory_type,
    scalar_rules,
    value_type,
)
from minijit.llvm.windows import WINDOWS
from minijit.passes.counted_loops import fori_loop_p
from minijit.passes.fuse_elementwise import fused_p


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

    def copy_into(self, slot, value, aval):
        """Write `value` (a buffer, or a scalar) into `slot`."""
        if not aval.shape:
            self.b.store(value, slot)
            return
        nbytes = prod(aval.shape) * aval.dtype.itemsize
        if value is not slot and nbytes:
            self.b.call(self.memmove, [self.b.bitcast(slot, BYTES),
                                       self.b.bitcast(value, BYTES), ir.Constant(I64, nbytes)])

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
        # 512-bit vectors where they were measured faster; on both functions, as `kernel`'s
        # loops are vectorized where they end up, inlined into `entry`
        wanted = vector_width.attribute()
        for function in (self.kernel, fn):
            vector_width.mark(function, wanted)
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
            return control.while_loop(self, eqn, args)
        if p is fori_loop_p:
            return control.fori_loop(self, eqn, args)
        if p is cond_p:
            return control.cond(self, eqn, args)
        if p is fused_p:
            return kernels.fused(self, eqn, args, targets)
        if p in (P.reshape_p, P.squeeze_p):
            return [windows.same_elements(self, eqn, args[0])]
        if p in WINDOWS:
            return [windows.window(self, eqn, args, targets[0])]
        if p in scalar_rules or p is P.broadcast_in_dim_p or p in REDUCTIONS:
            # one equation is a kernel of one member, over its operands that are not literals
            vars_ = [(a, x) for a, x in zip(eqn.invars, args) if not isinstance(a, Lit)]
            kernel = Jaxpr((), tuple(a for a, _ in vars_), (eqn,), eqn.outvars)
            return kernels.fused(self, eqn, [x for _, x in vars_], targets, kernel)
        raise LLVMUnsupported(f"the primitive {p.name}")

    # -- loops and indices
    @contextmanager
    def nest(self, shape):
        """`for i0 in range(n0): for i1 in range(n1): ...`: the indices, and the flat index
        `(i0 * n1 + i1) * n2 + ...` of the element in a C-ordered array of `shape`."""
        index = []
        with ExitStack() as loops:
            for n in shape:
                index.append(loops.enter_context(self.counted(ir.Constant(I64, 0),
                                                              ir.Constant(I64, n))))
            yield index, self.flat(index, shape)

    def offset(self, index, shape, dims):
        """The flat offset in a C-ordered array of `shape`, whose axis k is indexed by
        `index[dims[k]]` (by 0 where its size is 1, as broadcasting reads it)."""
        return self.flat([ir.Constant(I64, 0) if n == 1 else index[d]
                          for n, d in zip(shape, dims)], shape)

    def flat(self, index, shape):
        """The flat offset of the element at `index` (i64 values) of a C-ordered `shape`."""
        flat = ir.Constant(I64, 0)
        for j, n in zip(index, shape):
            flat = self.b.add(self.b.mul(flat, ir.Constant(I64, n)), j)
        return flat


def emit_program(closed: ClosedJaxpr, name: str = "f") -> str:
    """The LLVM IR text of `closed`; raises `LLVMUnsupported` for what it cannot compile."""
    return Program(closed, name).emit()
