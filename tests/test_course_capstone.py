"""Chapter 10's helpers for the capstone: `load_softplus` takes the learner's chapter-09
softplus rule from their exercise notebook, or the course's reference with the reason, and
never raises; `record_stepper` steps through a recorded run of the passes.

The exercise folders are temporary: the solution notebook 09 (the rule written), or a copy
with the exercise's cell edited.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np

import minijit as mj
import minijit.numpy as mnp
from minijit.codegen.rules import numba_rules
from minijit.core import ELEMENTWISE, abstract_eval_rules, impl_rules
from minijit.course.capstone import record_stepper, stage_html
from minijit.course.softplus import EXERCISE, NOTEBOOK, lines_written, load_softplus, reference
from minijit.passes import run_passes

REPO = Path(__file__).resolve().parent.parent


def exercises(tmp_path: Path, edit=None) -> Path:
    """An exercises folder holding the solution notebook 09, its exercise cell `edit`ed."""
    folder = tmp_path / "exercises"
    folder.mkdir(parents=True)
    shutil.copy(REPO / "solutions" / NOTEBOOK, folder / NOTEBOOK)
    if edit is not None:
        nb = json.loads((folder / NOTEBOOK).read_text(encoding="utf-8"))
        (cell,) = [c for c in nb["cells"] if "".join(c["source"]).startswith(
            f"# EXERCISE {EXERCISE}")]
        cell["source"] = edit("".join(cell["source"]))
        (folder / NOTEBOOK).write_text(json.dumps(nb), encoding="utf-8")
    return folder


def tables_hold_no_softplus() -> bool:
    return not any(p.name == "softplus" for table in (abstract_eval_rules, impl_rules,
                                                      numba_rules, ELEMENTWISE) for p in table)


def test_the_solutions_softplus_is_loaded_and_its_rule_writes_the_kernels_line(tmp_path):
    sp = load_softplus(exercises(tmp_path))
    assert sp.whose == "yours"
    x = np.array([-1000.0, -1.0, 0.0, 2.0, 1000.0])
    with sp.registered() as written:
        f = mj.jit(lambda x: sp.softplus(2.0 * x) / 2.0, backend="numba")
        source = f.lower(x).as_text()
        got = f(x)
    assert tables_hold_no_softplus()
    lines = lines_written(source, written)
    assert lines and all("log1p" in line for line in lines)  # the solution's expression
    np.testing.assert_allclose(got, np.logaddexp(0.0, 2.0 * x) / 2.0, rtol=1e-12)


def test_an_overflowing_rule_falls_back_to_the_reference_with_the_reason(tmp_path):
    def naive(source):
        head = source.split("def softplus_rule", 1)[0]
        return head + ("def softplus_rule(args, eqn):\n"
                       "    return f'np.log(1.0 + np.exp({args[0]}))'\n")

    sp = load_softplus(exercises(tmp_path, naive))
    assert sp.whose.startswith("the course's reference answer (its rule computes other values")
    assert "\n" not in sp.whose
    assert tables_hold_no_softplus()
    with sp.registered():
        got = mj.jit(sp.softplus, backend="numba")(np.array([1000.0]))
    assert got[0] == 1000.0  # the reference rule does not overflow


def test_a_stub_a_broken_cell_and_a_missing_notebook_each_say_why(tmp_path):
    def stub(source):  # the exercise notebook's own stub
        return source.split("    ### BEGIN SOLUTION")[0] + "    raise NotImplementedError\n"

    assert "(not written yet)" in load_softplus(exercises(tmp_path / "a", stub)).whose

    def broken(source):
        return source + "\n1 / 0\n"

    assert "ZeroDivisionError" in load_softplus(exercises(tmp_path / "b", broken)).whose
    assert f"no exercises/{NOTEBOOK}" in load_softplus(tmp_path / "exercises").whose
    assert tables_hold_no_softplus()


def test_nothing_is_read_while_grading(tmp_path, monkeypatch):
    monkeypatch.setenv("MINIJIT_GRADING", "1")
    assert "off while grading" in load_softplus(exercises(tmp_path)).whose


def test_the_reference_is_a_fresh_primitive_each_time():
    a, b = reference(), reference()
    with a.registered():
        assert tables_hold_no_softplus() is False
    assert a.softplus is not b.softplus and tables_hold_no_softplus()


def test_the_stepper_shows_each_recorded_pass_before_and_after():
    x = np.ones(3)
    traced = mj.make_jaxpr(lambda x: mnp.exp(x) * 1.0 + 0.0)(x)
    record = [("traced", traced)]
    run_passes(traced, record=record)
    assert "step 0 of" in stage_html(record, 0) and "before" not in stage_html(record, 0)
    assert f"before {record[1][0]}" in stage_html(record, 1)
    widget = record_stepper(record, start=2)
    assert f"step 2 of {len(record) - 1}: {record[2][0]}" in widget.children[-1].value


def test_without_the_reference_rule_numpys_logaddexp_stands_in(monkeypatch):
    from minijit.grading.exercises import ch09_code_generation

    monkeypatch.delattr(ch09_code_generation, "_reference_softplus_rule")  # as in a release
    sp = reference()
    assert "np.logaddexp" in sp.whose
    x = np.array([-1000.0, -40.0, 0.0, 1000.0])
    with sp.registered() as written:
        got = mj.jit(sp.softplus, backend="numba")(x)
    assert written and "np.logaddexp" in written[0]
    np.testing.assert_allclose(got, np.logaddexp(0.0, x), rtol=1e-15)


def test_without_the_reference_answer_a_stand_in_runs_the_capstone(monkeypatch):
    """A student release ships no reference answers: chapter 10's capstone then runs on a
    stand-in that is not the exercise's answer, on both backends."""
    import sys

    from minijit.course import capstone

    monkeypatch.setitem(sys.modules, "minijit.grading.exercises.ch10_putting_it_together",
                        None)  # importing it raises ImportError, as in a release
    found = capstone._reference("not written yet")
    assert found.whose.startswith("minijit's stand-in")
    assert capstone._problem(found) is None
    x = np.array([[1000.0, 1000.0, 999.0], [0.0, -1.0, 2.0]])
    with capstone.registered(found):
        got = mj.jit(found.logsumexp, backend="numba")(x)
    np.testing.assert_allclose(got, np.logaddexp.reduce(x, axis=1), rtol=1e-12)
