"""The Numba backend: optimized Jaxpr -> Python source -> one `numba.njit` function (ch. 08).

`lower.py` writes the source (`kernels.py` the loop nests, `scalar_rules.py` the per-element
expressions), `compile.py` compiles and caches it. The executable converts arguments at the
boundary: arrays become C-contiguous, rank-0 values become NumPy scalars of the right dtype.
"""

from __future__ import annotations

import time

import numpy as np

from minijit.codegen.compile import compile_source
from minijit.codegen.lower import CodegenError, lower_jaxpr
from minijit.ir import ClosedJaxpr


class NumbaExecutable:
    """Calls the compiled entry point; `as_text()` is the generated source."""

    def __init__(self, closed: ClosedJaxpr, fun_name: str = "f"):
        t0 = time.perf_counter()
        self.source = lower_jaxpr(closed, fun_name)
        t1 = time.perf_counter()
        avals = [v.aval for v in (*closed.jaxpr.constvars, *closed.jaxpr.invars)]
        self.entry = compile_source(self.source, avals, fun_name)
        self.timings = {"codegen": t1 - t0, "compile": time.perf_counter() - t1}
        self.consts = tuple(_boundary(c, v.aval) for c, v in
                            zip(closed.consts, closed.jaxpr.constvars))
        self.in_avals = [v.aval for v in closed.jaxpr.invars]
        self.out_avals = closed.jaxpr.out_avals
        self._scalar_out = [not a.shape for a in self.out_avals]
        self._any_scalar_out = any(self._scalar_out)

    def __call__(self, *args):
        args = [_boundary(x, a) for x, a in zip(args, self.in_avals)]
        outs = self.entry(*self.consts, *args)
        return [np.asarray(o, dtype=a.dtype) if s else o
                for o, a, s in zip(outs, self.out_avals, self._scalar_out)]

    def fast_call(self, args):
        """Called with C-contiguous arrays of exactly the compiled types: no conversion."""
        outs = self.entry(*self.consts, *args)
        if self._any_scalar_out:
            return [np.asarray(o, dtype=a.dtype) if s else o
                    for o, a, s in zip(outs, self.out_avals, self._scalar_out)]
        return outs

    def as_text(self) -> str:
        return self.source.text


def _boundary(x, aval):
    if not aval.shape:
        return aval.dtype.type(x)
    x = np.asarray(x)
    return x if x.flags.c_contiguous else np.ascontiguousarray(x)


class NumbaBackend:
    name = "numba"

    def compile(self, closed: ClosedJaxpr, fun_name: str = "f") -> NumbaExecutable:
        return NumbaExecutable(closed, fun_name)


__all__ = ["CodegenError", "NumbaBackend", "NumbaExecutable", "lower_jaxpr"]
