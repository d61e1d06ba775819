"""check() and the batch grader give the same verdict on every public case.

A learner runs `check("exNN")` where its cell is, after the cells above it; the grader runs
every cell first, then each exercise's public cases. A later cell that runs the learner's
code again (a demonstration, another exercise) must not change a verdict, or `check()`
passes what the grade fails. Each solution notebook runs here twice, in this process, as
the grader's kernel runs it (cells in order, errors noted and passed over, `check()` cells
doing nothing): once as it is, once with each exercise's cell replaced by a wrong answer
of tests/test_grading_pitfalls.py (its first, for every exercise that has one). Where a
check cell stands, `check()`'s verdicts are taken (`run_public_cases`); after the last cell,
the grader's (the plan's public probe calls through `channel.run_locally`, then
`score_exercise`, its own-work probe included).
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import os

import nbformat
import pytest
from test_grading_course import SOLUTIONS, _global_state_restored
from test_grading_pitfalls import WRONG, _cell

from minijit import build
from minijit.grading.channel import run_locally
from minijit.grading.checking import GRADING_ENV, run_public_cases
from minijit.grading.notebook import check_call, exercise_header
from minijit.grading.registry import default_exercises
from minijit.grading.runner import RunResult
from minijit.grading.scoring import build_plan, score_exercise

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("minijits_own_pieces")]

EXERCISES = default_exercises()
FIRST_WRONG = {w.exercise: w for w in reversed(WRONG)}  # the first per exercise wins


def _verdicts(path, wrong: dict[str, str]) -> dict[str, tuple[list, list]]:
    """{exercise id: (check()'s verdicts, the grader's)} for the notebook at `path`, with
    the cells of the exercises in `wrong` replaced by the source given there."""
    cells = [c for c in nbformat.read(path, as_version=4).cells if c.cell_type == "code"]
    ids = [h[0] for c in cells if (h := exercise_header(c.source))]
    plan = build_plan([dataclasses.replace(EXERCISES[i], hidden=()) for i in ids])
    checked: dict[str, list] = {}
    ns: dict = {"__name__": "__main__"}
    with _global_state_restored(), contextlib.redirect_stdout(io.StringIO()), \
            contextlib.redirect_stderr(io.StringIO()):
        os.environ[GRADING_ENV] = "1"  # as in the grader's kernel
        try:
            for cell in cells:
                header, checks = exercise_header(cell.source), check_call(cell.source)
                if checks:  # check() where the learner runs it
                    report = run_public_cases(EXERCISES[checks], ns)
                    checked[checks] = [row.passed for row in report.rows]
                    continue
                source = wrong.get(header[0], cell.source) if header else cell.source
                try:
                    exec(compile(source, str(path), "exec"), ns)
                except Exception:  # noqa: BLE001 - the grader notes it and goes on
                    pass
            graded = {}
            for probes in plan.probes:  # after every cell, exercise by exercise
                results = run_locally(probes.calls, ns)
                score = score_exercise(next(e for e in plan.exercises if e.id == probes.id),
                                       plan, RunResult(results, {probes.id: "ran"}))
                failed = {f.name for f in score.failed_public}
                graded[probes.id] = [c.name not in failed for c in EXERCISES[probes.id].public]
        finally:
            del os.environ[GRADING_ENV]
            build.reset()
    return {i: (checked.get(i), graded[i]) for i in ids}


@pytest.mark.parametrize("path", SOLUTIONS, ids=[p.stem for p in SOLUTIONS])
def test_check_and_the_grader_agree(path):
    ids = {h[0] for c in nbformat.read(path, as_version=4).cells
           if c.cell_type == "code" and (h := exercise_header(c.source))}
    wrong = {i: _cell(FIRST_WRONG[i]) for i in ids if i in FIRST_WRONG}
    runs = {"solution": _verdicts(path, {})}
    if wrong:
        runs["wrong answers"] = _verdicts(path, wrong)
    problems = []
    for run, verdicts in runs.items():
        for ex_id, (checked, graded) in verdicts.items():
            names = [c.name for c in EXERCISES[ex_id].public]
            if checked != graded:
                problems.append(f"{run}, {ex_id}: check() {checked}, the grader {graded} "
                                f"on {names}")
            elif run == "solution" and not all(graded):
                problems.append(f"solution, {ex_id} fails {graded} on {names}")
            elif run != "solution" and ex_id in wrong and all(graded):
                problems.append(f"{ex_id}'s wrong answer ({FIRST_WRONG[ex_id].what}) passes")
    assert not problems, "\n".join(problems)
