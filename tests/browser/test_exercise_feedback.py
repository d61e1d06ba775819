"""An exercise as a learner does it in JupyterLab: run check(...), fill in the answer, rerun.

The learner clicks into the exercise cell, replaces the stub with an answer (the reference
solution from solutions/, without its BEGIN/END SOLUTION markers), runs it with Shift-Enter,
runs the `check("exNN_...")` cell below with Shift-Enter, and must see the feedback rendered
as a table: failing cases with the stub, all public cases passing with the answer.

One exercise: the first of the course's own exercises/ that has a check(...) cell, or, while
the course has none, the grading toolkit's demo fixture in tests/grading_fixtures/
(NumPy-only exercises, registered for check() through MINIJIT_GRADING_EXERCISES in a kernel
of their own). What only a browser sees (the table rendered, the editor typed into, the cells
rerun with Shift-Enter) is the same for every exercise: check() draws every table with the
same code, and a kernel registering the demo's exercises through MINIJIT_GRADING_EXERCISES
is tested without a browser (tests/test_grading_units.py, test_grading_release.py), so the
demo runs here only when the course cannot.
"""

from __future__ import annotations

import nbformat
import pytest

from . import lab

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.xdist_group("browser")]

FIXTURES = lab.REPO / "tests" / "grading_fixtures"


SOURCES = {
    "course": (lab.REPO / "exercises", lab.REPO / "solutions", None),
    "demo": (FIXTURES / "exercises", FIXTURES / "solutions", FIXTURES / "demo_exercises.py"),
}


def _first_exercise():
    """(source, its folders and module, the exercise) for the first source with one."""
    for source, (exercises, solutions, module) in SOURCES.items():
        ex = lab.find_exercise(exercises, solutions)
        if ex is not None:
            return source, exercises, solutions, module, ex
    return None


@pytest.mark.timeout(lab.seconds(lab.RUN_ALL_S + 300))
def test_learner_sees_check_feedback(page, lab_server, screenshot_dir, record_property):
    found = _first_exercise()
    if found is None:
        pytest.skip("no exercise notebook with a check(...) cell, in the course or the demo")
    source, exercises, solutions, module, ex = found
    nb_node = nbformat.read(ex.notebook, as_version=4)
    if module is not None:
        kernel = lab_server.add_kernelspec(
            "minijit-demo-exercises", {"MINIJIT_GRADING_EXERCISES": str(module)}
        )
        nb_node.metadata["kernelspec"] = {
            "name": kernel,
            "display_name": f"Python 3 ({kernel})",
            "language": "python",
        }
    rel = lab_server.add_notebook(nb_node, f"{source}-exercises/{ex.notebook.name}")

    nb = lab.LabNotebook(page, lab_server, rel).open()
    # The cells above the exercise (imports, set-up), as a learner would have run them.
    nb.activate_cell(ex.exercise_cell)
    nb.run_command("notebook:run-all-above")
    assert not nb.report().problems, nb.report().problems

    # 1. The stub as given: check() reports failing cases in a rendered table.
    nb.run_with_shift_enter(ex.exercise_cell)  # raises NotImplementedError: expected
    nb.run_with_shift_enter(ex.check_cell)
    stub = nb.feedback(ex.check_cell)
    assert not stub["errors"], f"check() itself raised on the stub: {stub['errors']}"
    assert stub["table"] and stub["rows"], f"no feedback table rendered:\n{stub['text']}"
    assert "fail" in stub["text"].lower(), stub["text"]

    if ex.answer is None:
        pytest.skip(f"no solution for {ex.exercise_id} in {solutions}: stub feedback checked only")

    # 2. The learner fills in the answer: click into the editor, select all, type it.
    nb.activate_cell(ex.exercise_cell)
    editor = page.locator(f'[data-minijit-cell="{ex.exercise_cell}"] .cm-content').first
    editor.click()
    page.keyboard.press("ControlOrMeta+a")
    page.keyboard.insert_text(ex.answer)
    typed = nb.cell(ex.exercise_cell)["source"]
    assert typed == ex.answer, f"the editor holds:\n{typed}\ninstead of:\n{ex.answer}"
    page.keyboard.press("Escape")

    answered = nb.run_with_shift_enter(ex.exercise_cell)
    errors = [o for o in answered["outputs"] if o["output_type"] == "error"]
    assert not errors, f"the answer raised: {errors[0]['ename']}: {errors[0]['evalue']}"
    nb.run_with_shift_enter(ex.check_cell)
    good = nb.feedback(ex.check_cell)
    shot = nb.screenshot(f"exercise-{source}-{ex.notebook.stem}", screenshot_dir)
    record_property(
        "browser_summary",
        f"{rel}: {ex.exercise_id} feedback {len(stub['rows'])} rows (stub), "
        f"{len(good['rows'])} rows (answer); screenshot {shot}",
    )
    assert not good["errors"], f"check() raised: {good['errors']}"
    assert good["table"] and good["rows"], f"no feedback table rendered:\n{good['text']}"
    assert "all public cases pass" in good["text"], good["text"]
    assert all("pass" in r for r in good["rows"]), good["rows"]
