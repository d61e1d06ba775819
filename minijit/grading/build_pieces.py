"""The build track's exercises, as the grader sees them: each writes one piece of minijit
(`minijit.build`), and one public case of each asks what `build.use` asks before it switches
a piece in, so that `check()` never passes a piece that `use_mine()` then refuses.

The case runs the piece's selftest (its small example, `build.selftest`): it passes with the
value "ok"; otherwise its value is what is wrong, in the selftest's words. A piece that hands
its work to minijit's own fails it (`build.guard`).
"""

from __future__ import annotations

from minijit.grading.cases import Case
from minijit.grading.probing import (
    get,  # noqa: F401 - the probe's `get`, in the kernel too
    probe_own_work,
)

# exercise id -> (the piece it writes, the function its cell defines)
BUILD_PIECES = {
    "ex02_process_primitive": ("process_primitive", "process_primitive"),
    "ex02_bind": ("bind", "bind"),
    "ex03_eval_jaxpr": ("eval_jaxpr", "eval_jaxpr"),
    "ex03_pp_jaxpr": ("pp_jaxpr", "pp_jaxpr"),
    "ex04_cache_key": ("cache_key", "cache_key"),
    "ex04_jit_call": ("jit_call", "jit_call"),
    "ex05_while_impl": ("while_impl", "my_while_impl"),
    "ex05_closure_convert": ("closure_convert", "closure_convert"),
    "ex05_stage_cond": ("stage_cond", "stage_cond"),
    "ex07_fold": ("fold", "my_fold"),
    "ex07_rule": ("sub_self", "sub_self"),
    "ex07_cse": ("cse", "my_cse"),
    "ex07_dce": ("dce", "dce_jaxpr"),
    "ex08_may_fuse": ("may_fuse", "may_fuse"),
    "ex08_fusion_groups": ("fusion_groups", "fusion_groups"),
    "ex09_loop_nest": ("loop_nest", "loop_nest"),
}


def probe_switches_in(ns, piece, function):
    import minijit.codegen.kernels  # noqa: F401 - registers loop_nest
    from minijit import build

    problem = build.selftest(piece, get(ns, function))
    if problem and "NotImplementedError" in problem:
        raise NotImplementedError(problem)  # the stub: not attempted yet
    return problem or "ok"


def switch_in_case(exercise_id: str) -> Case:
    """The public case of a build exercise that its piece passes `build.use`'s check."""
    piece, function = BUILD_PIECES[exercise_id]
    return Case(f"build.use switches it in: minijit's small example for {piece}",
                (piece, function), probe=probe_switches_in, expected="ok")


def own_work_case(exercise_id: str) -> Case | None:
    """For a build exercise, the probe that `check()` and the grader run besides its cases:
    None, or the learner's piece is not their own work (minijit's code, or a hand-over to
    minijit's own piece: `probing.probe_own_work`) and every case fails with that reason.
    Not a case itself: the reference, minijit's own, never runs it."""
    if exercise_id not in BUILD_PIECES:
        return None
    piece, function = BUILD_PIECES[exercise_id]
    return Case(f"{function} is your own code", (piece, function), probe=probe_own_work)
