"""An exercise as a learner does it in JupyterLab: run check(...), fill in the answer, rerun.

The learner clicks into the exercise cell, replaces the stub with an answer (the reference
solution from solutions/, without its BEGIN/END SOLUTION markers), runs it with Shift-Enter,
runs the `check("exNN_...")` cell below with Shift-Enter, and must see the feedback rendered
as a table: failing cases with the stub, all public cases passing with the answer.

Two sources: the course's own exercises/ (skipped until one has a check(...) cell), and the
grading toolkit's demo fixture in tests/grading_fixtures/ (NumPy-only exercises, registered
for check() through MINIJIT_GRADING_EXERCISES in a kernel of their own).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import nbformat
import pytest

from . import lab

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.xdist_group("browser")]

HEADER_RE = re.compile(r"^\s*#\s*EXERCISE\s+(ex\d\d_[a-z0-9_]+)\b")
CHECK_RE = re.compile(r"""^check\(\s*(["'])(?P<id>[A-Za-z0-9_]+)\1\s*\)\s*;?$""")
MARKERS = ("### BEGIN SOLUTION", "### END SOLUTION")

FIXTURES = lab.REPO / "tests" / "grading_fixtures"


@dataclass
class Exercise:
    notebook: Path
    exercise_id: str
    exercise_cell: int
    check_cell: int
    answer: str | None  # the learner's answer, from the solution notebook (None: none found)


def _answer(solutions: Path, name: str, exercise_id: str) -> str | None:
    path = solutions / name
    if not path.is_file():
        return None
    for cell in nbformat.read(path, as_version=4).cells:
        m = HEADER_RE.match(cell.source.lstrip("\n").split("\n", 1)[0])
        if cell.cell_type == "code" and m and m.group(1) == exercise_id:
            return "\n".join(
                line for line in cell.source.split("\n") if line.strip() not in MARKERS
            )
    return None


def find_exercise(exercises: Path, solutions: Path) -> Exercise | None:
    """The first exercise (in file order) whose next code cell is its check(...) call."""
    for path in sorted(exercises.glob("*.ipynb")):
        cells = nbformat.read(path, as_version=4).cells
        code = [i for i, c in enumerate(cells) if c.cell_type == "code"]
        for before, after in zip(code, code[1:]):
            m = CHECK_RE.match(cells[after].source.strip())
            header = HEADER_RE.match(cells[before].source.lstrip("\n").split("\n", 1)[0])
            if m and header and header.group(1) == m["id"]:
                answer = _answer(solutions, path.name, m["id"])
                return Exercise(path, m["id"], before, after, answer)
    return None


SOURCES = {
    "course": (lab.REPO / "exercises", lab.REPO / "solutions", None),
    "demo": (FIXTURES / "exercises", FIXTURES / "solutions", FIXTURES / "demo_exercises.py"),
}


def _run_with_shift_enter(nb: lab.LabNotebook, index: int) -> dict:
    """Select cell `index` by clicking its prompt, press Shift-Enter, wait for the result."""
    page = nb.page
    before = nb.cell(index)["executionCount"]
    nb.activate_cell(index)
    page.locator(f'[data-minijit-cell="{index}"] .jp-InputPrompt').first.click()
    page.keyboard.press("Shift+Enter")
    page.wait_for_function(
        "([p, i, b]) => { const c = window.__minijit.cell(p, i);"
        " return c.executionCount !== null && c.executionCount !== b"
        " && window.__minijit.kernelStatus(p) === 'idle'; }",
        arg=[nb.path, index, before],
        timeout=lab.ms(lab.RUN_ALL_S),
        polling=100,
    )
    nb.wait_settled()
    return nb.cell(index)


def _feedback(nb: lab.LabNotebook, index: int) -> dict:
    """The rendered feedback of a check(...) cell: text, table rows, error outputs."""
    return nb.page.evaluate("([p, i]) => window.__minijit.feedback(p, i)", [nb.path, index])


@pytest.mark.timeout(lab.seconds(lab.RUN_ALL_S + 300))
@pytest.mark.parametrize("source", sorted(SOURCES))
def test_learner_sees_check_feedback(source, page, lab_server, record_property):
    exercises, solutions, module = SOURCES[source]
    ex = find_exercise(exercises, solutions)
    if ex is None:
        pytest.skip(f"{exercises} has no exercise notebook with a check(...) cell yet")
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
    _run_with_shift_enter(nb, ex.exercise_cell)  # raises NotImplementedError: expected
    _run_with_shift_enter(nb, ex.check_cell)
    stub = _feedback(nb, ex.check_cell)
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

    answered = _run_with_shift_enter(nb, ex.exercise_cell)
    errors = [o for o in answered["outputs"] if o["output_type"] == "error"]
    assert not errors, f"the answer raised: {errors[0]['ename']}: {errors[0]['evalue']}"
    _run_with_shift_enter(nb, ex.check_cell)
    good = _feedback(nb, ex.check_cell)
    shot = nb.screenshot(f"exercise-{source}-{ex.notebook.stem}")
    record_property(
        "browser_summary",
        f"{rel}: {ex.exercise_id} feedback {len(stub['rows'])} rows (stub), "
        f"{len(good['rows'])} rows (answer); screenshot {shot.name}",
    )
    assert not good["errors"], f"check() raised: {good['errors']}"
    assert good["table"] and good["rows"], f"no feedback table rendered:\n{good['text']}"
    assert "all public cases pass" in good["text"], good["text"]
    assert all("pass" in r for r in good["rows"]), good["rows"]
