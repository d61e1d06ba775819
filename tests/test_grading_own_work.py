"""A build exercise's answer is the learner's own work, in check() and in the batch grader.

For every exercise in `BUILD_PIECES`, an answer that is minijit's own piece (the function
itself, a `functools.partial` of it, a `functools.wraps` wrapper of it) and one that calls it
(a plain wrapper, which `build.guard` catches) fail every public case of `check()` and score
0 in the batch grader. The grader is run in this process as its kernels run it: the plan's
probe calls, public then hidden, through `channel.run_locally` against the learner's
namespace, then `score_exercise`. The solutions' own pieces are not refused.
"""

from __future__ import annotations

import dataclasses
import functools
from pathlib import Path

import numpy as np
import pytest
from solution_cells import solution_namespace

import minijit as mj
import minijit.codegen.kernels  # noqa: F401 - registers loop_nest
from minijit import build, errors
from minijit.grading.__main__ import main
from minijit.grading.build_pieces import BUILD_PIECES
from minijit.grading.channel import run_locally
from minijit.grading.checking import run_public_cases
from minijit.grading.feedback import feedback_markdown
from minijit.grading.probing import minijits_code
from minijit.grading.registry import default_exercises
from minijit.grading.runner import RunResult
from minijit.grading.scoring import Row, build_plan, score_exercise
from minijit.tracing import JaxprTrace

pytestmark = pytest.mark.usefixtures("minijits_own_pieces")

EXERCISES = default_exercises()
MINIJIT = str(Path(mj.__file__).parent)


def _own(piece: str):
    return build.PIECES[piece].reference


def _answers(piece: str) -> dict:
    """Answers that are minijit's piece, or hand their work to it."""
    own = _own(piece)

    @functools.wraps(own)
    def wrapped(*args, **kwargs):
        return own(*args, **kwargs)

    return {"itself": own, "partial": functools.partial(own), "wraps": wrapped,
            "wrapper": lambda *args, **kwargs: own(*args, **kwargs)}


def _public_only(ex_id: str):
    return dataclasses.replace(EXERCISES[ex_id], hidden=())


def _graded(plan, ex_id: str, ns: dict, hidden_results: dict | None = None):
    """The batch grader's score of `ns`: the kernel's requests, run here, then scored (the
    hidden cases' results given as `hidden_results` instead, where it is given)."""
    probes = next(p for p in plan.probes if p.id == ex_id)
    try:
        results = run_locally(probes.calls, ns)
        if hidden_results is None:
            hidden_results = run_locally(probes.hidden, ns)
        results.update(hidden_results)
    finally:
        build.reset()
    exercise = next(ex for ex in plan.exercises if ex.id == ex_id)
    return score_exercise(exercise, plan, RunResult(results, {ex_id: "ran"}))


def _refused(ex_id: str, how: str, why: str) -> None:
    piece, function = BUILD_PIECES[ex_id]
    if how == "wrapper":  # no static sign: minijit's guard catches the hand-over, on its
        # small example (build.handed_over), so every case fails, not only those that call
        # it through minijit
        assert why.startswith(f"your {piece} calls minijit's own {piece}"), why
    else:
        assert f"your {function} is" in why and "write it yourself" in why, why
        assert "minijit's own piece" in why, why


def _solution(ex_id: str) -> dict:
    """The namespace of the exercise's cell in its solution notebook (with the other names
    the exercise asks for)."""
    return solution_namespace(f"{EXERCISES[ex_id].chapter}.ipynb", ex_id)


@pytest.mark.parametrize("ex_id", sorted(BUILD_PIECES))
def test_minijits_piece_as_the_answer_fails_every_public_case(ex_id):
    """check(), and the grader on the public cases (the hidden ones: the test below)."""
    piece, function = BUILD_PIECES[ex_id]
    plan = build_plan([_public_only(ex_id)])
    solution = _solution(ex_id)
    for how, answer in _answers(piece).items():
        ns = {**solution, function: answer}
        report = run_public_cases(EXERCISES[ex_id], ns)
        build.reset()
        assert report.attempted and report.passed == 0, (how, str(report))
        _refused(ex_id, how, report.rows[0].reason)
        if how not in ("itself", "wrapper"):
            continue  # the grader decides on the same probe: two kinds are enough
        score = _graded(plan, ex_id, ns)
        assert score.points == 0 and score.public[0] == 0, (how, score)
        assert score.not_own == report.rows[0].reason, (how, score.not_own)
        _refused(ex_id, how, score.failed_public[0].reason)


@pytest.mark.slow
def test_minijits_piece_as_the_answer_scores_zero_with_the_hidden_cases():
    """Every case of every build exercise, hidden ones too, fails for minijit's own piece,
    on which every case would pass but for the refusal. A wrapper of it is refused by the
    same probe before any case (the test above: the same ``score.not_own``), and that
    refusal scores every case alike, so it is not graded again on every hidden case.

    The refusal probe and the public cases run on minijit's piece; each hidden case is
    given its expected value as its result, a pass: minijit's piece computes what the
    reference does, and `build_plan` has just run those probes on the reference (running
    them again on the piece took a third of this test and could only give the same)."""
    plan = build_plan([EXERCISES[ex_id] for ex_id in BUILD_PIECES])
    for ex_id, (piece, function) in BUILD_PIECES.items():
        probes = next(p for p in plan.probes if p.id == ex_id)
        passing = {call.key: plan.expected[call.key] for call in probes.hidden}
        score = _graded(plan, ex_id, {**_solution(ex_id), function: _own(piece)}, passing)
        assert score.not_own, (ex_id, score)
        assert score.hidden == (0, len(passing)) and score.points == 0, (ex_id, score)


def test_the_feedback_says_so_once():
    ex_id = "ex03_eval_jaxpr"
    plan = build_plan([_public_only(ex_id)])
    score = _graded(plan, ex_id, {"eval_jaxpr": _own("eval_jaxpr")})
    text = feedback_markdown(Row("ann", None, {ex_id: score}, "ok", 1.0, []))
    assert text.count("reference_eval_jaxpr") == 1, text
    assert ("Every case failed: your eval_jaxpr is minijit's own piece reference_eval_jaxpr "
            "(in minijit/interpret.py): the exercise asks you to write it yourself") in text


@pytest.mark.parametrize("ex_id", sorted(BUILD_PIECES))
def test_the_solutions_pieces_are_their_own(ex_id):
    piece, function = BUILD_PIECES[ex_id]
    ns = _solution(ex_id)
    assert minijits_code(ns[function], _own(piece), MINIJIT) is None
    assert build.handed_over(piece, ns[function]) is None


def test_what_is_minijits_code():
    own = _own("eval_jaxpr")

    def mine(jaxpr, consts, *args):
        return own(jaxpr, consts, *args)

    assert minijits_code(mine, own, MINIJIT) is None
    assert minijits_code(functools.partial(mine), own, MINIJIT) is None
    assert minijits_code(np.add, own, MINIJIT) is None  # not a Python function: the cases say
    assert minijits_code(own, own, MINIJIT) == (
        "minijit's own piece reference_eval_jaxpr (in minijit/interpret.py)")
    assert minijits_code(functools.partial(own, consts=()), own, MINIJIT) == (
        "a functools.partial of minijit's own piece reference_eval_jaxpr "
        "(in minijit/interpret.py)")
    # minijit's public eval_jaxpr dispatches to the piece: minijit's code, not the piece
    assert minijits_code(mj.eval_jaxpr, own, MINIJIT) == (
        "minijit's eval_jaxpr (in minijit/interpret.py)")
    # a bound method of minijit's class
    bound = JaxprTrace().process_primitive
    assert minijits_code(bound, _own("process_primitive"), MINIJIT) == (
        "a method bound to minijit's process_primitive (in minijit/tracing.py)")
    # a decorator of minijit's around the learner's function leaves it theirs
    assert minijits_code(errors.api_boundary(mine), own, MINIJIT) is None


def test_list_names_the_build_pieces(capsys):
    assert main(["list"]) == 0
    out = capsys.readouterr().out
    assert "Build pieces" in out
    for ex_id, (piece, function) in BUILD_PIECES.items():
        line = next(line for line in out.splitlines() if line.startswith(ex_id + " "))
        assert f"[builds {piece}]" in line, line
        assert any(line.split() == [piece, ex_id, function] for line in out.splitlines()), (
            piece, out)
