"""The optimizer: a pipeline of passes, each a function ClosedJaxpr -> ClosedJaxpr (chapters 07-08).

A pass takes and returns a ClosedJaxpr (a Jaxpr plus the arrays its constvars are bound to)
because constant folding needs those arrays; inside sub-Jaxprs there are none. `run_passes`
typechecks after every pass and names the pass that broke the program, so a learner's own pass
can be dropped into the pipeline safely (minijit's own pipeline is checked once, at the end,
and again pass by pass only if that fails).

Adding a pass: write it in a file of its own as a function on a `Jaxpr` that returns a new
one (recursing into sub-Jaxprs with `rewrite.map_subjaxprs` where it should), lift it with
`jaxpr_pass(fn, name=..., doc=__doc__)`, and give the module docstring the Assumes /
Guarantees / before: / after: paragraphs that tests/test_passes.py checks every pass for.
Put it in PIPELINE where its assumptions hold; tests/test_passes.py then runs it on the whole
catalogue and on random programs (semantics kept, typechecks, idempotent).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from minijit import build
from minijit.core import Primitive
from minijit.ir import ClosedJaxpr, JaxprTypeError, typecheck_jaxpr
from minijit.jit_call import jit_p
from minijit.passes.counted_loops import counted_loops, fori_loop_p
from minijit.passes.cse import cse
from minijit.passes.dce import dce
from minijit.passes.fold_constants import fold_constants
from minijit.passes.fuse_elementwise import fuse_elementwise, fused_p
from minijit.passes.fuse_siblings import fuse_siblings
from minijit.passes.inline_jit import inline_jit
from minijit.passes.plan_buffers import BufferPlan, plan_buffers
from minijit.passes.simplify import simplify

Pass = Callable[[ClosedJaxpr], ClosedJaxpr]

PIPELINE: tuple[Pass, ...] = (inline_jit, fold_constants, simplify, cse, dce, counted_loops,
                              fuse_elementwise, fuse_siblings)

# Primitives that PIPELINE removes (`inline_jit` flattens every `jit` call). They have impl
# and abstract-eval rules, since `eval_jaxpr` and `typecheck_jaxpr` take a program as traced,
# but no code-generation rule: a backend only ever sees the optimized program.
REMOVED_BEFORE_CODEGEN: frozenset[Primitive] = frozenset({jit_p})

# Primitives that only PIPELINE introduces, never tracing: the backends have rules for them,
# and a traced program never holds one.
INTRODUCED_BY_PIPELINE: frozenset[Primitive] = frozenset({fori_loop_p, fused_p})


class PassError(RuntimeError):
    """A pass produced a program that does not typecheck."""


def run_passes(closed: ClosedJaxpr, passes: Sequence[Pass] | None = None,
               record: list | None = None) -> ClosedJaxpr:
    """Run `passes` (default: PIPELINE) in order, typechecking after each.

    If `record` is a list, `(pass name, program after it)` is appended for every pass.

    minijit's own PIPELINE with minijit's own pieces (nothing switched in with
    `minijit.build.use`) is typechecked once, after the last pass: typechecking is most of
    the optimizer's time (GELU: 2 of its 3 ms), and these passes are tested to keep programs
    well typed. Should the end result not typecheck anyway, the passes run again, checked
    one by one, so the error still names the pass that broke the program.
    """
    if passes is None and record is None and all(map(build.is_reference, build.PIECES)):
        try:
            out = closed
            for p in PIPELINE:
                out = p(out)
                if not isinstance(out, ClosedJaxpr) or len(out.consts) != len(
                        out.jaxpr.constvars):
                    break
            else:
                typecheck_jaxpr(out.jaxpr)
                return out
        except Exception:  # noqa: BLE001 - the checked run below raises it, naming the pass
            pass
    passes = PIPELINE if passes is None else passes
    done: list[str] = []
    for p in passes:
        name = getattr(p, "__name__", repr(p))
        out = p(closed)
        if not isinstance(out, ClosedJaxpr):
            raise PassError(f"pass `{name}` returned {type(out).__name__}, not a ClosedJaxpr")
        try:
            typecheck_jaxpr(out.jaxpr)
        except JaxprTypeError as e:
            before = ", ".join(done) or "none"
            raise PassError(f"pass `{name}` produced an ill-typed program "
                            f"(passes before it: {before}): {e}") from e
        if len(out.consts) != len(out.jaxpr.constvars):
            raise PassError(f"pass `{name}` left {len(out.consts)} consts for "
                            f"{len(out.jaxpr.constvars)} constvars")
        closed = out
        done.append(name)
        if record is not None:
            record.append((name, closed))
    return closed


__all__ = [
    "INTRODUCED_BY_PIPELINE", "PIPELINE", "REMOVED_BEFORE_CODEGEN", "BufferPlan", "PassError",
    "counted_loops", "cse", "dce", "fold_constants", "fori_loop_p", "fuse_elementwise",
    "fuse_siblings", "fused_p",
    "inline_jit", "plan_buffers", "run_passes", "simplify",
]
