"""The course's own exercises (chapters 01-04): in sync, consistent, and graded right.

- ``exercises/`` is exactly what ``python -m minijit.grading generate`` makes of
  ``solutions/`` (the drift check);
- every EXERCISE header matches a registered exercise with the same points, and back;
- every probe runs the same when shipped to a kernel as source (the self-containment rule)
  as when called directly: checked in-process, without kernels;
- in-notebook ``check()`` passes every public case on the solutions;
- through the real grader: solutions score full marks, untouched exercises zero.
"""

from __future__ import annotations

import contextlib
import io
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from minijit.grading.cases import compare, probe_source
from minijit.grading.channel import ProbeCall, expression, parse_reply, user_expression_key
from minijit.grading.checking import expected_value, run_public_cases
from minijit.grading.gradebook import grade
from minijit.grading.notebook import exercise_headers
from minijit.grading.registry import COURSE_MODULES, load_exercises
from minijit.grading.runner import Limits

REPO = Path(__file__).resolve().parent.parent
SOLUTIONS = sorted((REPO / "solutions").glob("*.ipynb"))
EXERCISES = load_exercises(COURSE_MODULES)


def test_exercises_in_sync_with_solutions():
    run = subprocess.run([sys.executable, "-m", "minijit.grading", "generate", "--check"],
                         cwd=REPO, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stdout + run.stderr


def test_headers_match_the_registry():
    found = {}
    for path in SOLUTIONS:
        for h in exercise_headers(nbformat.read(path, as_version=4)):
            found[h.id] = (h.points, path.stem)
    assert set(found) == set(EXERCISES)
    for ex_id, (points, notebook) in found.items():
        assert EXERCISES[ex_id].points == points, ex_id
        assert EXERCISES[ex_id].chapter == notebook, ex_id


def _headings(chapter: str) -> list[str]:
    nb = nbformat.read(REPO / "chapters" / f"{chapter}.ipynb", as_version=4)
    return [line.lstrip("#").strip() for cell in nb.cells if cell.cell_type == "markdown"
            for line in cell.source.splitlines() if line.startswith("#")]


@pytest.mark.parametrize("ex_id", sorted(EXERCISES))
def test_hints_name_a_real_section_of_the_chapter(ex_id):
    """A hint says "Reread chapters/NN.ipynb, section X": X must be one of its headings."""
    ex = EXERCISES[ex_id]
    headings = _headings(ex.chapter)
    assert ex.section in headings, (
        f"{ex_id} points at section {ex.section!r} of {ex.chapter}, whose headings are "
        f"{headings}")


def test_course_covers_the_pitfalls_and_builds():
    ids = set(EXERCISES)
    # one per pitfall row of the source chapter, and two that build a piece of minijit
    for needed in ["ex04_static_args", "ex02_where", "ex04_buckets", "ex03_dtype",
                   "ex02_print_count", "ex02_tiny_tracer", "ex03_broadcast_rule",
                   "ex05_cond_loop", "ex05_while_impl", "ex06_debug_print", "ex06_leak",
                   "ex06_recompiles", "ex07_fold", "ex07_cse", "ex07_rule", "ex07_may_fuse",
                   "ex08_softplus_rule", "ex09_cache_entries", "ex09_pays_off",
                   "ex03_eval_jaxpr", "ex03_pp_jaxpr"]:
        assert needed in ids
    for ex in EXERCISES.values():
        assert ex.public and ex.hidden, ex.id


def _ship(ex, key, case, ns):
    """Run one case the way the grading kernel does: source text through the channel."""
    source, name = probe_source(ex.probe_for(case))
    nonce = "t"
    value = eval(expression([ProbeCall(key, source, name, tuple(case.args))], nonce), ns, ns)
    reply = {"status": "ok", "user_expressions": {user_expression_key(nonce): {
        "status": "ok", "data": {"text/plain": repr(value)}}}}
    return parse_reply(reply, nonce)[0][key]


@pytest.mark.parametrize("ex_id", sorted(EXERCISES))
def test_probes_are_self_contained(ex_id):
    ex = EXERCISES[ex_id]
    for key, case, _ in ex.cases():
        ns = dict(ex.reference())
        shipped = _ship(ex, key, case, ns)
        assert compare(expected_value(ex, key, case), shipped) is None, (key, shipped)


def _solution_namespace(path: Path) -> dict:
    """Execute a solution notebook's code cells in-process (cells that fail on purpose,
    tagged raises-exception, are skipped)."""
    ns: dict = {"__name__": "__main__"}
    with contextlib.redirect_stdout(io.StringIO()):
        for cell in nbformat.read(path, as_version=4).cells:
            if cell.cell_type == "code" and "raises-exception" not in cell.metadata.get(
                    "tags", []):
                exec(compile(cell.source, str(path), "exec"), ns)
    return ns


@contextlib.contextmanager
def _global_state_restored():
    """Solution notebooks register primitives and rules (a notebook's own `badd`), set
    config and switch in pieces of their own (`minijit.build`): restore minijit's tables
    and pieces afterwards, so other tests in this worker see none."""
    import importlib

    from minijit import build, config, core
    from minijit.codegen import rules

    # the package attribute `minijit.passes.simplify` is the pass; the table is in its module
    simplify_module = importlib.import_module("minijit.passes.simplify")
    tables = [core.abstract_eval_rules, core.impl_rules, rules.numba_rules]
    groups = [core.UNARY, core.BINARY, core.ELEMENTWISE, core.COMMUTATIVE, core.COMPARISONS,
              core.REDUCTIONS]
    saved = ([dict(t) for t in tables], [set(g) for g in groups], dict(config._values),
             {k: list(v) for k, v in simplify_module.RULES.items()})
    pieces = build.using()  # a solution switches its own pieces in (build.use)
    try:
        yield
    finally:
        build.reset()
        for name, fn in pieces.items():
            build.use(name, fn, verify=False)
        for table, copy in zip(tables, saved[0]):
            table.clear()
            table.update(copy)
        for group, copy in zip(groups, saved[1]):
            group.clear()
            group.update(copy)
        config._values.clear()
        config._values.update(saved[2])
        simplify_module.RULES.clear()
        simplify_module.RULES.update(saved[3])


@pytest.mark.parametrize("path", SOLUTIONS, ids=[p.stem for p in SOLUTIONS])
def test_check_passes_on_solutions(path):
    with _global_state_restored():
        ns = _solution_namespace(path)
        for h in exercise_headers(nbformat.read(path, as_version=4)):
            report = run_public_cases(EXERCISES[h.id], ns)
            assert report.all_passed, str(report)
            assert "<table>" in report._repr_html_()


@pytest.mark.slow
def test_solutions_full_marks_exercises_zero(tmp_path):
    """Each chapter as an instructor grades it: its solution and its untouched exercise."""
    problems = []
    for path in SOLUTIONS:
        subs = tmp_path / path.stem
        subs.mkdir()
        (subs / "solution.ipynb").write_bytes(path.read_bytes())
        (subs / "exercise.ipynb").write_bytes((REPO / "exercises" / path.name).read_bytes())
        rows = {r.student: r for r in grade(
            [subs], exercises=EXERCISES, assignment=[path.stem], jobs=2, progress=False,
            out=subs / "gradebook.csv", feedback_dir=subs / "feedback",
            limits=Limits(cell_timeout=60, timeout=240))}
        solution, exercise = rows["solution"], rows["exercise"]
        assert {s.exercise.chapter for s in solution.scores.values()} == {path.stem}
        if solution.status != "ok" or solution.total != solution.max_total:
            problems.append(f"{path.stem} solution: {solution.status} {solution.total}/"
                            f"{solution.max_total}: {solution.detail}")
        if exercise.status != "ok" or exercise.total != 0:
            problems.append(f"{path.stem} exercise: {exercise.status} {exercise.total}: "
                            f"{exercise.detail}")
        if "not attempted" not in exercise.detail:
            problems.append(f"{path.stem} exercise: {exercise.detail}")
        feedback = (subs / "feedback" / "exercise.md").read_text()
        if "NotImplementedError" not in feedback or "Hint:" not in feedback:
            problems.append(f"{path.stem} exercise feedback:\n{feedback}")
    assert not problems, "\n".join(problems)


def test_chapter05_references_match_the_python_originals():
    """The staged reference solutions compute what the plain Python versions do."""
    import numpy as np

    import minijit as mj
    from minijit.grading.exercises import ch05_control_flow as ch05

    ref = ch05._reference_cond_loop()
    grow, years_until = mj.jit(ref["grow"]), mj.jit(ref["years_until"])
    for x, rate, years in [([1.0, 2.0], 1.5, 10), ([30.0, 40.0], 2.0, 3), ([5.0], 1.1, 0)]:
        x = np.asarray(x)
        np.testing.assert_allclose(grow(x, rate, years), ch05._grow_numpy(x, rate, years))
    for x, rate, target in [([1.0, 2.0], 1.5, 50.0), ([10.0], 2.0, 5.0)]:
        x = np.asarray(x)
        assert int(years_until(x, rate, target)) == ch05._years_until_numpy(x, rate, target)
