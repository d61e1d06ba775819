"""Backends: what turns an (optimized) ClosedJaxpr into something callable (chapters 04, 08).

A backend has a `name` and `compile(closed_jaxpr) -> Executable`. An executable is called
with the flat list of dynamic arguments and returns the flat list of outputs, and can show
what it runs with `as_text()`. `jit` looks backends up by name, so adding one (Numba code
generation in chapter 08) is one entry in `BACKENDS`.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from minijit import primitives as P
from minijit.interpret import eval_jaxpr
from minijit.ir import ClosedJaxpr, Jaxpr, Var, subjaxprs
from minijit.passes.fuse_elementwise import fused_p

# Primitives whose result may be a view of their operand (NumPy reshapes and slices do not
# copy, and generated code does the same).
_VIEWS = {P.reshape_p, P.squeeze_p, P.transpose_p, P.slice_p, P.rev_p}


def outputs_that_may_alias(jaxpr: Jaxpr) -> list[bool]:
    """Which outputs may share memory with an argument or a constant.

    A jitted function's results are new arrays, as in JAX: `jit(lambda x: x)(a)` must not
    change when `a` is later modified. Executables copy exactly these outputs."""
    aliased = {id(v) for v in (*jaxpr.constvars, *jaxpr.invars)}
    for eqn in jaxpr.eqns:
        reads_alias = any(isinstance(a, Var) and id(a) in aliased for a in eqn.invars)
        # Control flow may hand an operand straight back; a fused kernel always writes anew.
        passes_through = subjaxprs(eqn) and eqn.primitive is not fused_p
        if reads_alias and (eqn.primitive in _VIEWS or passes_through):
            aliased.update(id(v) for v in eqn.outvars)
    return [isinstance(a, Var) and id(a) in aliased for a in jaxpr.outvars]


def copy_aliased(outs, flags) -> list:
    return [np.array(o) if f else o for o, f in zip(outs, flags)]


class InterpreterExecutable:
    """Runs the Jaxpr with `eval_jaxpr`, equation by equation, on NumPy."""

    def __init__(self, closed: ClosedJaxpr):
        self.closed = closed
        self.aliased = outputs_that_may_alias(closed.jaxpr)

    def __call__(self, *args) -> Sequence[np.ndarray]:
        outs = eval_jaxpr(self.closed.jaxpr, self.closed.consts, *args)
        return copy_aliased(outs, self.aliased)

    def fast_call(self, args) -> Sequence[np.ndarray]:
        """Called with C-contiguous arrays of exactly the compiled types."""
        return self(*args)

    def as_text(self) -> str:
        return str(self.closed)


class InterpreterBackend:
    name = "interpreter"

    def compile(self, closed: ClosedJaxpr, fun_name: str = "f",
                donated: tuple = ()) -> InterpreterExecutable:
        return InterpreterExecutable(closed)


class NumbaBackend:
    """Numba code generation (`minijit.codegen`), imported on first use: Numba is slow to
    import, and a session that only interprets should not pay for it."""

    name = "numba"

    def compile(self, closed: ClosedJaxpr, fun_name: str = "f", donated: tuple = ()):
        from minijit.codegen import NumbaExecutable

        return NumbaExecutable(closed, fun_name, donated)


BACKENDS = {"interpreter": InterpreterBackend(), "numba": NumbaBackend()}


def get_backend(name: str | None):
    from minijit.config import config

    name = name or config.default_backend
    if name not in BACKENDS:
        raise ValueError(f"unknown backend {name!r}; choose one of {sorted(BACKENDS)}")
    return BACKENDS[name]
