"""Backends: what turns an (optimized) ClosedJaxpr into something callable (chapters 04, 09).

A backend has a `name` and `compile(closed_jaxpr, fun_name, donated, parallel) -> Executable`,
and may have `text(...)` with the same arguments: what `compile` would run, as text.
An executable is called with the flat list of dynamic arguments and returns the flat list of
outputs, and can show what it runs with `as_text()`. `jit` looks backends up by name, so adding
one (Numba code generation in chapter 09) is one entry in `BACKENDS`.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from minijit.interpret import eval_jaxpr
from minijit.ir import ClosedJaxpr
from minijit.passes.plan_buffers import copy_outputs, outputs_to_copy


class InterpreterExecutable:
    """Runs the Jaxpr with `eval_jaxpr`, equation by equation, on NumPy."""

    def __init__(self, closed: ClosedJaxpr):
        self.closed = closed
        self.aliased = outputs_to_copy(closed.jaxpr)  # results never share memory

    def __call__(self, *args) -> Sequence[np.ndarray]:
        outs = eval_jaxpr(self.closed.jaxpr, self.closed.consts, *args)
        return copy_outputs(outs, self.aliased)

    def fast_call(self, args) -> Sequence[np.ndarray]:
        """Called with C-contiguous arrays of exactly the compiled types."""
        return self(*args)

    def as_text(self) -> str:
        return str(self.closed)


class InterpreterBackend:
    name = "interpreter"

    def compile(self, closed: ClosedJaxpr, fun_name: str = "f", donated: tuple = (),
                parallel: bool | None = None) -> InterpreterExecutable:
        return InterpreterExecutable(closed)  # one thread: `parallel` changes nothing here

    def text(self, closed: ClosedJaxpr, fun_name: str = "f", donated: tuple = (),
             parallel: bool | None = None) -> str:
        """What `compile` would run, as text (`f.lower(x).as_text()`): the Jaxpr itself."""
        return str(closed)


class NumbaBackend:
    """Numba code generation (`minijit.codegen`), imported on first use: Numba is slow to
    import, and a session that only interprets should not pay for it."""

    name = "numba"

    def compile(self, closed: ClosedJaxpr, fun_name: str = "f", donated: tuple = (),
                parallel: bool | None = None):
        from minijit.codegen import NumbaExecutable

        return NumbaExecutable(closed, fun_name, donated, parallel)

    def text(self, closed: ClosedJaxpr, fun_name: str = "f", donated: tuple = (),
             parallel: bool | None = None) -> str:
        """The source `compile` would hand to Numba."""
        from minijit.codegen import lower_jaxpr

        return lower_jaxpr(closed, fun_name, donated, parallel).text


class LLVMBackend:
    """LLVM IR written directly (`minijit.llvm`), for the programs it compiles: a first call
    without Numba's fixed cost, on one thread. A program it does not compile, or one asked
    to run on threads (`parallel=True`), goes to the Numba backend; the executable's
    `llvm_declined` then says why (None when LLVM compiled it)."""

    name = "llvm"
    # An error of the LLVM backend itself (not a program it declines) is raised here, where
    # it was asked for by name; the default backend hands the program to Numba instead.
    falls_back_on_errors = False

    def numba_reason(self, closed: ClosedJaxpr, donated: tuple, parallel: bool | None
                     ) -> str | None:
        """Why this program goes to Numba without trying LLVM, or None to try LLVM."""
        return "parallel=True asks for threads, which only the Numba backend runs" \
            if parallel else None

    def _on_llvm(self, make, closed: ClosedJaxpr, donated: tuple, parallel: bool | None):
        """(what `make()` gives, None) where LLVM takes the program, else (None, why not).
        `compile` and `text` both choose here, so `as_text()` shows what would run."""
        from minijit.llvm import LLVMUnsupported

        why = self.numba_reason(closed, donated, parallel)
        if why is None:
            try:
                return make(), None
            except LLVMUnsupported as e:
                why = str(e)
            except Exception as e:  # noqa: BLE001 - a fault of the LLVM backend, not the program
                if not self.falls_back_on_errors:
                    raise
                why = _failed(e)
        return None, why

    def compile(self, closed: ClosedJaxpr, fun_name: str = "f", donated: tuple = (),
                parallel: bool | None = None):
        from minijit.llvm import LLVMExecutable

        # LLVMExecutable never writes an argument
        executable, why = self._on_llvm(lambda: LLVMExecutable(closed, fun_name), closed,
                                        donated, parallel)
        if why is None:
            return executable
        executable = BACKENDS["numba"].compile(closed, fun_name, donated, parallel)
        executable.llvm_declined = why
        return executable

    def text(self, closed: ClosedJaxpr, fun_name: str = "f", donated: tuple = (),
             parallel: bool | None = None) -> str:
        """The LLVM IR `compile` would compile, or the Numba source of a program it leaves
        to Numba (the same choice)."""
        from minijit.llvm.emit import emit_program

        text, why = self._on_llvm(lambda: emit_program(closed, fun_name), closed, donated,
                                  parallel)
        return text if why is None else BACKENDS["numba"].text(closed, fun_name, donated,
                                                               parallel)


class AutoBackend(LLVMBackend):
    """`jit`'s default: the LLVM backend for a program whose run time it matches (a fast
    first call), the Numba backend for one that runs or compiles faster there (large arrays,
    windows in loops, donated arguments, hundreds of results): `minijit/backend_choice.py`
    has the rule. `llvm_declined` on the executable says why a program went to Numba."""

    name = "auto"
    falls_back_on_errors = True

    def numba_reason(self, closed: ClosedJaxpr, donated: tuple, parallel: bool | None
                     ) -> str | None:
        from minijit.backend_choice import numba_reason

        return numba_reason(closed, donated, parallel)


def _failed(e: Exception) -> str:
    return (f"the LLVM backend failed on this program ({type(e).__name__}: {e}), so the Numba "
            "backend compiled it; jit(f, backend='llvm') raises the error (a bug in minijit: "
            "please report it)")


BACKENDS = {"interpreter": InterpreterBackend(), "numba": NumbaBackend(), "llvm": LLVMBackend(),
            "auto": AutoBackend()}

# The backends that each run a program their own way, which the differential tests compare;
# "auto" only chooses between two of them (`tests/test_backend_choice.py` tests the choice).
DISTINCT_BACKENDS = sorted(name for name, b in BACKENDS.items() if not isinstance(b, AutoBackend))


def get_backend(name: str | None):
    from minijit.config import config

    name = name or config.default_backend
    if name not in BACKENDS:
        raise ValueError(f"unknown backend {name!r}; choose one of {sorted(BACKENDS)}")
    return BACKENDS[name]
