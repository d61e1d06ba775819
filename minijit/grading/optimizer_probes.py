"""What the probes of the optimizer's build-track exercises share (every exercise of chapters
07 and 08, and the exercises that must not see a piece the notebook switched in).

A probe runs in the learner's kernel and imports these at run time, so they live in a module
of their own that ships with every copy of minijit, the student release included: they trace
and optimize a case's program and measure the result, and hold no exercise's answer.
"""

from __future__ import annotations

import contextlib

import numpy as np

# The optimizer's build pieces (chapters 07 and 08), in the order the pipeline first runs them.
OPTIMIZER_PIECES = ("fold", "sub_self", "cse", "dce", "may_fuse", "fusion_groups")


@contextlib.contextmanager
def chapter_pieces(**mine):
    """Switch the optimizer's build pieces (`OPTIMIZER_PIECES`) to minijit's own, except
    those given as `name=function`, for one block: a piece the notebook switched in
    (`build.use`) must not take part in another exercise's grade."""
    import minijit.passes  # noqa: F401 - registers the optimizer's pieces
    from minijit import build

    with contextlib.ExitStack() as stack:
        for name in OPTIMIZER_PIECES:
            fn = mine.get(name, build.PIECES[name].reference)
            stack.enter_context(build.use(name, fn, verify=False))
        yield


def optimized_with(piece: str, fn, closed):
    """`closed` through PIPELINE (less `simplify`) with `fn` as minijit's piece `piece`."""
    from minijit.passes import PIPELINE, run_passes, simplify

    with np.errstate(all="ignore"), chapter_pieces(**{piece: fn}):
        return run_passes(closed, [p for p in PIPELINE if p is not simplify])


def dead_equations(jaxpr) -> list[str]:
    """The equations no output needs and without effects, at every level of `jaxpr`."""
    from minijit.ir import Var, pp_eqn_alone, subjaxprs
    from minijit.passes.rewrite import has_effects

    dead = []
    live = {id(a) for a in jaxpr.outvars if isinstance(a, Var)}
    for e in reversed(jaxpr.eqns):
        if not has_effects(e) and not any(id(v) in live for v in e.outvars):
            dead.append(pp_eqn_alone(e).split("\n")[0])
        live.update(id(a) for a in e.invars if isinstance(a, Var))
        for sub in subjaxprs(e):
            dead += dead_equations(sub)
    return dead


def kernels(jaxpr) -> list:
    """Each `fused` equation of `jaxpr`, at every level: its kind and its members' names."""
    from minijit.ir import subjaxprs
    from minijit.passes import fused_p

    out = []
    for e in jaxpr.eqns:
        if e.primitive is fused_p:
            out.append([e.params["kind"], [m.primitive.name for m in e.params["jaxpr"].eqns]])
        else:
            for sub in subjaxprs(e):
                out += kernels(sub)
    return out


def traced(source, args, dead_copy: bool = False):
    """A case's program, from the catalogue (`source` is its name, `args` the seed) or from
    source text that defines `f` (trusted text of the case list, `args` its arguments).

    With `dead_copy`, a catalogue program first runs once more, on `-(-x)` for each input
    `x`, and that result is never read: dead code that `cse` cannot merge away (`simplify`
    could, and is not in the graded pipeline), so every program has some for `dce`."""
    import minijit as mj
    import minijit.numpy as mnp
    from minijit import lax
    from minijit.grading.programs import PROGRAMS, make_args

    if source in PROGRAMS:
        fun, arrays = PROGRAMS[source][0], make_args(source, args)
        if dead_copy:
            program = fun

            def fun(*xs):
                program(*[mnp.negative(-x) for x in xs])  # traced, then never read
                return program(*xs)
    else:
        scope = {"np": np, "mj": mj, "mnp": mnp, "lax": lax}
        exec(source, scope)
        fun, arrays = scope["f"], [np.asarray(value, dtype=dtype) for value, dtype in args]
    closed = mj.make_jaxpr(fun)(*arrays)
    leaves = [np.asarray(x, dtype=v.aval.dtype) for x, v in zip(arrays, closed.jaxpr.invars)]
    return closed, leaves


@contextlib.contextmanager
def learners_errors():
    """Inside the block, an exception the learner's piece raised (which `build.call` hands on
    as a `PieceError`) is raised as itself, so the exercise's hints for it apply; a
    `PieceError` of minijit's own (a check that refused the piece's result) stays one."""
    from minijit import build

    try:
        yield
    except build.PieceError as e:
        cause = e.__cause__
        if cause is None or isinstance(cause, build.PieceError):
            raise
        raise cause from None
