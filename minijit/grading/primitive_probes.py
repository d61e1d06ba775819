"""What the probes of chapter 10's build exercise (ex10_new_primitive) share: a learner's
primitive registered for one probe and removed after it, and a program run eagerly and by
both backends.

A probe runs in the learner's kernel and imports these at run time, so they live in a module
that ships with every copy of minijit, the student release included: they register, run and
measure, and hold no exercise's answer (the graded programs and implementations are text in
the case list).

Invariant of `registered`: after the block, every rule table (core's `*_rules`, the Numba
backend's `numba_rules`, the simplifier's `RULES`) and every op group holds exactly what it
held before, whatever the learner's `register` added, replaced or removed, and even when it
or the block raised. So no probe leaks a primitive (or a rule of its) into the next one.
"""

from __future__ import annotations

import contextlib

import numpy as np


def _tables() -> list[dict]:
    """Every table keyed by primitive that minijit reads while it traces, runs or compiles."""
    import importlib

    from minijit import core
    from minijit.codegen.rules import numba_rules

    # the package attribute `minijit.passes.simplify` is the pass; the table is in its module
    simplify_module = importlib.import_module("minijit.passes.simplify")
    tables = [t for name, t in vars(core).items()
              if name.endswith("_rules") and isinstance(t, dict)]
    return [*tables, numba_rules, simplify_module.RULES]


def _groups() -> list[set]:
    from minijit import core

    return [core.UNARY, core.BINARY, core.ELEMENTWISE, core.COMMUTATIVE, core.COMPARISONS,
            core.REDUCTIONS]


def snapshot() -> list[tuple]:
    """`(table or group, copy)` for every rule table and op group (a table's lists copied
    too). Each copy stays paired with its object, so a table that appears meanwhile (a new
    `*_rules` dict) cannot shift one copy onto another table."""
    tables = [(t, {k: list(v) if isinstance(v, list) else v for k, v in t.items()})
              for t in _tables()]
    return tables + [(g, set(g)) for g in _groups()]


def restore(saved: list[tuple]) -> None:
    """Put every table and op group back as `snapshot` found it (the same objects, refilled:
    the rest of minijit holds references to them)."""
    for live, copy in saved:
        live.clear()
        live.update(copy)


@contextlib.contextmanager
def registered(register):
    """`register()` (the learner's: it fills minijit's tables) for the block, then every table
    and op group exactly as before (the module's invariant)."""
    saved = snapshot()
    try:
        register()
        yield
    finally:
        restore(saved)


@contextlib.contextmanager
def own_pieces():
    """Every build-track piece minijit's own, `disable_jit` off and `debug_nans` off for the
    block: what another exercise switched in, or a config the notebook set, takes no part in
    this one's grade (infinities and NaNs are graded inputs, not errors)."""
    import minijit as mj
    import minijit.codegen.kernels  # noqa: F401 - registers the piece loop_nest
    from minijit import build

    with contextlib.ExitStack() as stack:
        for piece in build.PIECES.values():
            stack.enter_context(build.use(piece.name, piece.reference, verify=False))
        stack.enter_context(mj.config.override("disable_jit", False))
        stack.enter_context(mj.config.override("debug_nans", False))
        yield


def _listed(outs) -> list[np.ndarray]:
    outs = outs if isinstance(outs, tuple) else (outs,)
    return [np.asarray(o) for o in outs]


def program(source: str, logaddexp):
    """The case's program: `source` is a lambda of the case list (trusted text), which may use
    `logaddexp` (the learner's), `mnp` and `lax`."""
    import minijit.numpy as mnp
    from minijit import lax

    return eval(source, {"np": np, "mnp": mnp, "lax": lax, "logaddexp": logaddexp})


def run_everywhere(fun, arrays) -> dict:
    """`fun(*arrays)` eagerly, then under `jit` with each backend (a fresh compile for each)."""
    import minijit as mj

    out = {}
    with own_pieces(), np.errstate(all="ignore"):
        out["eager"] = _listed(fun(*arrays))
        for backend in ("interpreter", "numba"):
            out[backend] = _listed(mj.jit(fun, backend=backend)(*arrays))
    return out


def optimized(fun, arrays):
    """The optimized program that `mj.jit(fun, backend="numba")` would compile for `arrays`
    (`.lower(...).jaxpr`: traced and optimized, not compiled)."""
    import minijit as mj

    with own_pieces(), np.errstate(all="ignore"):
        return mj.jit(fun, backend="numba").lower(*arrays).jaxpr
