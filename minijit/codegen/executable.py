"""The Numba backend's executable: compiles a program's generated source and calls it.

The executable converts arguments at the boundary: arrays become C-contiguous, rank-0 values
become NumPy scalars of the right dtype. A program whose large kernels run on threads
(`minijit/threads.py`) is called through `_threaded_entry`, which keeps the threading layer's
rules.
"""

from __future__ import annotations

import time

import numpy as np

from minijit import threads
from minijit.codegen import buffers as memory  # reused between calls
from minijit.codegen.boundary import c_array
from minijit.codegen.compile import compile_source
from minijit.codegen.lower import lower_jaxpr
from minijit.ir import ClosedJaxpr
from minijit.passes.plan_buffers import copy_outputs, outputs_to_copy


class NumbaExecutable:
    """Calls the compiled entry point; `as_text()` is the generated source."""

    def __init__(self, closed: ClosedJaxpr, fun_name: str = "f", donated: tuple = (),
                 parallel: bool | None = None):
        t0 = time.perf_counter()
        memory.keep_freed_heap()  # once per process
        threads.quiet_blas()  # before compiling `np.dot` loads SciPy's BLAS
        self.source = lower_jaxpr(closed, fun_name, donated, parallel)
        t1 = time.perf_counter()
        avals = [v.aval for v in (*closed.jaxpr.constvars, *closed.jaxpr.invars)]
        avals += self.source.out_avals
        # Read-only: the constants and every argument not donated; the code writes only
        # donated arguments and the output buffers it is given.
        flags = list(donated) + [False] * (len(closed.jaxpr.invars) - len(donated))
        readonly = ([True] * len(closed.jaxpr.constvars) + [not d for d in flags]
                    + [False] * len(self.source.out_avals))
        self.entry = compile_source(self.source, avals, fun_name, readonly)  # Numba's dispatcher
        # what a call runs: the entry itself, or for threaded code the entry called as the
        # threading layer allows
        self._run = (_threaded_entry(self.entry, closed, fun_name, donated, avals, readonly)
                     if self.source.threaded else self.entry)
        if "np.dot(" in self.source.text:  # compiling it loaded SciPy's BLAS
            threads.follow_blas()
        self.timings = {"codegen": t1 - t0, "compile": time.perf_counter() - t1}
        self.consts = tuple(_boundary(c, v.aval) for c, v in
                            zip(closed.consts, closed.jaxpr.constvars))
        self.in_avals = [v.aval for v in closed.jaxpr.invars]
        self.out_avals = closed.jaxpr.out_avals
        self._scalar_out = [not a.shape for a in self.out_avals]
        self._any_scalar_out = any(self._scalar_out)
        self.aliased = outputs_to_copy(closed.jaxpr)  # results never share memory
        self._any_aliased = any(self.aliased)
        # each output buffer's shape, dtype and allocator: large ones reuse freed outputs
        self._buffer_specs = [(a.shape, a.dtype, memory.allocator(a.shape, a.dtype))
                              for a in self.source.out_avals]
        self._layout = self.source.out_layout  # None: the entry returns every output
        self._plain = not (self._any_scalar_out or self._any_aliased)
        self.fast_call = self._fast_call_for_this_program()

    def _buffers(self) -> list[np.ndarray]:
        return [empty(shape, dtype) for shape, dtype, empty in self._buffer_specs]

    def __call__(self, *args):
        args = [_boundary(x, a) for x, a in zip(args, self.in_avals)]
        buffers = self._buffers()
        outs = self._arrange(self._run(*self.consts, *args, *buffers), buffers)
        outs = [np.asarray(o, dtype=a.dtype) if s else o
                for o, a, s in zip(outs, self.out_avals, self._scalar_out)]
        return copy_outputs(outs, self.aliased) if self._any_aliased else outs

    def _arrange(self, returned, buffers) -> list:
        """The outputs in order, from what the entry returned and the buffers passed in."""
        if self._layout is None:  # the entry returns every output
            return returned
        return [returned[w[1]] if w[0] == "returned" else buffers[w[1]] if w[0] == "buffer"
                else buffers[w[1]][w[2]] for w in self._layout]

    def _fast_call_for_this_program(self):
        """`fast_call(args)`: called with C-contiguous arrays of exactly the compiled types, no
        conversion. Made once per program, so that a call decides nothing (0.1 to 0.2 us of
        a 2 us cached call went into asking which case this program is).

        "Exactly" includes the byte order: jit's fast-path key holds each argument's dtype
        (`>f8 != <f8`), so only native-endian arrays of the compiled dtypes get here."""
        consts = self.consts
        # serial code is called through its compiled entry point directly: the dispatcher's
        # matching of argument types is 40% of calling it, and here the types are exact
        entry = self._run if self.source.threaded else _entry_point(self.entry)
        if not self._plain:
            return lambda args: self(*args)
        if self._layout is None:  # the entry returns every output
            return lambda args: entry(*consts, *args)
        if consts or self._layout != [("buffer", 0)]:
            def any_outputs(args):
                buffers = self._buffers()
                return self._arrange(entry(*consts, *args, *buffers), buffers)
            return any_outputs
        shape, dtype, empty = self._buffer_specs[0]  # the common case: one output, in its buffer
        if len(self.in_avals) == 1:
            def one_in_one_out(args):  # f(x): no argument tuple built (3-6% of such a call)
                out = empty(shape, dtype)
                entry(args[0], out)
                return (out,)
            return one_in_one_out

        def one_output(args):
            out = empty(shape, dtype)
            entry(*args, out)
            return (out,)
        return one_output

    def as_text(self) -> str:
        return self.source.text


def _entry_point(dispatcher):
    """The compiled function of `dispatcher` (which has exactly one, see `compile_source`),
    without the dispatcher in front: Numba's CPython wrapper itself. It does not check what
    it is given, so it is called only with arguments of exactly the compiled types (an array
    of another dtype or rank would be read as if it were one of these). Should the dispatcher
    ever hold more than one, it is returned itself, to choose among them."""
    overloads = getattr(dispatcher, "overloads", {})
    if len(overloads) != 1:
        return dispatcher
    (compiled,) = overloads.values()
    return compiled.entry_point


def _threaded_entry(entry, closed, fun_name, donated, avals, readonly):
    """`entry`, a program with threaded kernels, called as the threading layer allows: one
    call at a time under `workqueue` (`threads.call_lock`), on `config.threads` threads where
    that is fewer than Numba started, and through its serial twin, compiled on first need, in
    a process forked after the threads started."""
    import numba

    n = threads.num_threads()
    fewer = n < numba.config.NUMBA_NUM_THREADS
    serial = []

    def call(*args):
        if threads.forked[0]:
            if not serial:
                serial.append(compile_source(lower_jaxpr(closed, fun_name, donated, False),
                                             avals, fun_name, readonly))
            return serial[0](*args)
        if fewer and numba.get_num_threads() != n:
            numba.set_num_threads(n)  # per calling thread, in Numba
        if threads.call_lock is not None:
            with threads.call_lock:
                return entry(*args)
        return entry(*args)
    return call


def _boundary(x, aval):
    """`x` as the compiled code reads it: a scalar of the dtype, or a C-contiguous, aligned
    array of the exact dtype (`c_array`: the entry takes no other array, see
    `compile_source`)."""
    if not aval.shape:
        return aval.dtype.type(x)
    return c_array(x, aval.dtype)
