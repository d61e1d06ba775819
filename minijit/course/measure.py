"""Counting and timing what a program costs: equations, temporary arrays, bytes, milliseconds
(chapters 07 and 08 measure every pass with these).

A *temporary array* is an array written by a top-level equation that is not an output of the
program: memory that has to be allocated, written and read back. Scalars live in registers,
and inside a fused kernel values are per element, so neither counts.
"""

from __future__ import annotations

import numpy as np

from minijit.interpret import eval_jaxpr
from minijit.ir import ClosedJaxpr, Jaxpr, Var, subjaxprs

MiB = 2**20


def temporaries(closed: ClosedJaxpr) -> list[Var]:
    """The arrays written by top-level equations, minus the program's outputs."""
    outputs = {id(v) for v in closed.jaxpr.outvars}
    return [v for e in closed.jaxpr.eqns for v in e.outvars
            if v.aval.shape != () and id(v) not in outputs]


def nbytes(var: Var) -> int:
    return var.aval.size * var.aval.dtype.itemsize


def traffic(closed: ClosedJaxpr) -> int:
    """Bytes of arrays read and written by top-level equations (inside a kernel: registers)."""
    return sum(nbytes(a) for e in closed.jaxpr.eqns for a in (*e.invars, *e.outvars)
               if isinstance(a, Var) and a.aval.shape != ())


def count_eqns(jaxpr: Jaxpr) -> int:
    """Equations, counting those inside sub-jaxprs (loop bodies, branches, fused kernels)."""
    return sum(1 + sum(count_eqns(s) for s in subjaxprs(e)) for e in jaxpr.eqns)


def fmt_bytes(n: int) -> str:
    if n >= MiB:
        return f"{n / MiB:.1f} MiB"
    return f"{n / 1024:.1f} KiB" if n >= 1024 else f"{n} bytes"


def plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def describe(closed: ClosedJaxpr) -> str:
    """`9 equations (12 counting sub-jaxprs), 8 temporary arrays, 8.0 MiB`."""
    n, n_all = len(closed.jaxpr.eqns), count_eqns(closed.jaxpr)
    temps = temporaries(closed)
    inner = f" ({n_all} counting sub-jaxprs)" if n_all != n else ""
    return (f"{plural(n, 'equation')}{inner}, {plural(len(temps), 'temporary array')}, "
            f"{fmt_bytes(sum(map(nbytes, temps)))}")


def stage_summary(closed: ClosedJaxpr) -> str:
    """`9 eqns (12) · 8 temps · 8.0 MiB`: `describe`, short enough for a table cell."""
    n, n_all = len(closed.jaxpr.eqns), count_eqns(closed.jaxpr)
    temps = temporaries(closed)
    eqns = f"{n} eqns" + (f" ({n_all})" if n_all != n else "")
    return f"{eqns} · {len(temps)} temps · {fmt_bytes(sum(map(nbytes, temps)))}"


def max_difference(before: ClosedJaxpr, after: ClosedJaxpr, *args) -> float:
    """Run both programs with `eval_jaxpr` on `args`; the largest absolute difference of
    their outputs (0.0: the pass did not change what the program computes, on these)."""
    old = eval_jaxpr(before.jaxpr, before.consts, *args)
    new = eval_jaxpr(after.jaxpr, after.consts, *args)
    return max(float(np.max(np.abs(a - b))) for a, b in zip(old, new))
