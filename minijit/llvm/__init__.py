"""The LLVM backend: optimized Jaxpr -> LLVM IR -> machine code, without Numba's pipeline.

`jit(f, backend="llvm")`. Where the Numba backend writes Python source and has Numba type,
lower and compile it (70 ms or more for any function: its typing, its CPython wrapper, its
passes), this one writes LLVM IR itself (`emit.py`, one rule per primitive in `rules.py`)
and hands it to LLVM through llvmlite (`engine.py`): a first call costs LLVM's optimization
and machine code only. It compiles a subset (`emit.py` lists it: elementwise work with
broadcasting, reductions, `reshape`, slices, pads, transposes, concatenations, `while`, `fori_loop`
and `cond`, on bool, int32, int64, float32 and float64, with minijit's vector math:
`vecmath.py`), on one thread, for the exact shapes of the call. For anything else `emit.py`
raises `LLVMUnsupported`, naming the equation, and the backend (`minijit/backends.py`)
compiles the program with Numba instead.

The executable allocates the outputs and passes them, with the arguments as C-contiguous
arrays (rank-0 values as 0-d arrays), to the compiled entry, which writes only the outputs.
"""

from __future__ import annotations

import time

from minijit.codegen import buffers as memory
from minijit.codegen.boundary import c_array
from minijit.ir import ClosedJaxpr
from minijit.llvm.emit import emit_program
from minijit.llvm.engine import compile_ir
from minijit.llvm.rules import LLVMUnsupported


class LLVMExecutable:
    """Calls the compiled entry; `as_text()` is the LLVM IR it was compiled from."""

    llvm_declined = None  # compiled here (a program LLVM declines runs on Numba's executable)

    def __init__(self, closed: ClosedJaxpr, fun_name: str = "f"):
        t0 = time.perf_counter()
        memory.keep_freed_heap()  # once per process: freed outputs are reused
        self.text = emit_program(closed, fun_name)
        t1 = time.perf_counter()
        self.compiled = compile_ir(self.text, "entry")  # owns the machine code
        self.timings = {"codegen": t1 - t0, "compile": time.perf_counter() - t1}
        jaxpr = closed.jaxpr
        self.in_avals = [v.aval for v in jaxpr.invars]
        # every value, rank 0 too, as an array: the entry reads each through its data pointer
        self.consts = tuple(c_array(c, v.aval.dtype)
                            for c, v in zip(closed.consts, jaxpr.constvars))
        self._buffer_specs = [(a.shape, a.dtype, memory.allocator(a.shape, a.dtype))
                              for a in jaxpr.out_avals]
        self.fast_call = self._fast_call_for_this_program()

    def __call__(self, *args):
        return self.fast_call([c_array(x, a.dtype) for x, a in zip(args, self.in_avals)])

    def _fast_call_for_this_program(self):
        """`fast_call(args)`: called with C-contiguous arrays of exactly the compiled types."""
        entry, consts, specs = self.compiled.function, self.consts, self._buffer_specs
        if not consts and len(specs) == 1 and len(self.in_avals) == 1:
            shape, dtype, empty = specs[0]

            def one_in_one_out(args):  # f(x), the common call: no tuple built for it
                out = empty(shape, dtype)
                entry(args[0], out)
                return (out,)
            return one_in_one_out

        def any_call(args):
            outs = [empty(shape, dtype) for shape, dtype, empty in specs]
            entry(*consts, *args, *outs)
            return outs
        return any_call

    def as_text(self) -> str:
        return self.text


__all__ = ["LLVMExecutable", "LLVMUnsupported"]
