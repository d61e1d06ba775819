"""Structured control flow: `cond`, `switch`, `while_loop`, `fori_loop`, `scan` (chapter 05).

Python's `if` and `for` run while tracing, so they can only look at static things (shapes,
static arguments). To branch or loop on a *traced* value, the branch or loop body itself must
be staged: each function here traces its Python callables once into sub-Jaxprs and binds a
primitive whose params hold them. One IR, not two: the printer, `eval_jaxpr`, the optimizer
and code generation all see the sub-Jaxprs as params.

Three modules, named after JAX's `jax/_src/lax/control_flow/`, each read on its own:
- `common.py`: staging a callable as a closed sub-jaxpr (closure conversion, a build-track
  piece) and comparing two bodies' types;
- `conditionals.py`: `cond` and `switch`, one primitive `cond`, staged by `stage_cond` (a
  build-track piece);
- `loops.py`: `while_loop` and `scan` (primitives `while` and `scan`), `fori_loop` (either of
  them), and `map` and `associative_scan`, built from `scan` and from slicing; the impl rule
  of `while` is a build-track piece, `while_impl`.

Invariants of every primitive here:
- a sub-Jaxpr has no constvars: values it captures from outside become leading operands
  (closure conversion, `closure_convert`), so each primitive lists `*consts` before its real
  operands;
- branch outputs, and loop carries before and after one iteration, have identical types
  (shape and dtype; weak types are joined), checked with a message that names the leaf.
"""

from minijit.lax.control_flow.common import (
    capture_key,
    closure_convert,
    reference_closure_convert,
)
from minijit.lax.control_flow.conditionals import (
    cond,
    cond_p,
    reference_stage_cond,
    stage_cond,
    switch,
    trace_branch,
)
from minijit.lax.control_flow.loops import (
    associative_scan,
    fori_loop,
    map,  # noqa: A004 - JAX's name, lax.map
    reference_while_impl,
    scan,
    scan_p,
    while_loop,
    while_p,
)

CONTROL_FLOW = {cond_p, while_p, scan_p}

__all__ = ["CONTROL_FLOW", "associative_scan", "capture_key", "closure_convert", "cond",
           "cond_p", "fori_loop", "map", "reference_closure_convert", "reference_stage_cond",
           "reference_while_impl", "scan", "scan_p", "stage_cond", "switch", "trace_branch",
           "while_loop", "while_p"]
