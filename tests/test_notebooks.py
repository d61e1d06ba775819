"""Every chapter and solution notebook is committed clean, and every chapter runs top to bottom.

Each solution notebook runs top to bottom once, in the grader (tests/test_grading_course.py,
test_solution_full_marks_exercise_zero): the same cells in order, and a row that must show no
error, no stub left and no tagged cell that did not raise; running it here too would only
repeat that run.

Collected from the notebooks present at collection time. Timings are printed (see them with
`-s`, or `-rP` for passed tests) and a chapter slower than 60 s gets a warning. No test fails
on time alone, so a busy machine cannot make the suite flaky; pytest-timeout's generous limit
below only stops a notebook that hangs.

The runner itself is tested on small synthetic notebooks at the end of this file, so a
runner that silently accepted everything would fail here.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook
from notebook_runner import RAISES_TAG, check_clean, find_notebooks, run_notebook

pytestmark = pytest.mark.notebook

REPO = Path(__file__).resolve().parent.parent
TARGET_S = 60  # what a chapter should take (a warning past it)
HANG_S = 240  # a notebook still running then is stuck, not slow


def _params(notebooks: list[Path]) -> list:
    return [pytest.param(p, id=f"{p.parent.name}/{p.name}") for p in notebooks] or [
        pytest.param(None, id="no-notebooks", marks=pytest.mark.skip(
            reason="no chapters/*.ipynb or solutions/*.ipynb yet (they are being written)"))
    ]


PARAMS = _params(find_notebooks(REPO))  # chapters and solutions
CHAPTERS = _params(find_notebooks(REPO, ("chapters",)))


@pytest.mark.parametrize("path", PARAMS)
def test_committed_clean_and_valid(path):
    problems = check_clean(path)
    assert not problems, f"{path.name}:\n  " + "\n  ".join(problems) + (
        "\nClear outputs before committing (e.g. `jupyter nbconvert --clear-output --inplace`).")


@pytest.mark.timeout(HANG_S)
@pytest.mark.parametrize("path", CHAPTERS)
def test_runs_top_to_bottom(path, record_property):
    before = path.read_bytes()
    run = run_notebook(path)
    record_property("seconds", round(run.seconds, 2))
    print(f"\n{path.parent.name}/{path.name}: {run.seconds:.1f} s"
          + (f", {len(run.expected_errors)} expected error(s)" if run.expected_errors else "")
          + f"; slowest {run.slowest()}")
    assert path.read_bytes() == before, "running the notebook changed the committed file"
    assert run.ok, run.report()
    if run.seconds > TARGET_S:
        warnings.warn(f"{path.name} took {run.seconds:.0f} s; a chapter should run in under "
                      f"{TARGET_S} s (slowest {run.slowest()})", stacklevel=1)


# --------------------------------------------------------------------------- the runner itself


def _write(tmp_path: Path, *cells, name="nb.ipynb") -> Path:
    folder = tmp_path / "chapters"
    folder.mkdir(exist_ok=True)
    nb = new_notebook(cells=list(cells))
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3",
                                 "language": "python"}
    path = folder / name
    nbformat.write(nb, str(path))
    return path


def _tagged(source: str):
    cell = new_code_cell(source)
    cell.metadata["tags"] = [RAISES_TAG]
    return cell


def test_runner_accepts_expected_errors_and_flags_tagged_cells_that_do_not_raise(tmp_path):
    path = _write(
        tmp_path,
        new_markdown_cell("# sample"),
        new_code_cell("import os, matplotlib\n"
                      "open('written.txt', 'w').write('x')\n"
                      "backend = matplotlib.get_backend()"),
        _tagged("1 / 0  # shown on purpose"),
        _tagged("x = 1  # the text says this fails, but it does not"),
        # pytest's conftest sets MPLBACKEND=Agg; the kernel must use its inline default
        new_code_cell("assert 'inline' in backend.lower(), backend\n"
                      "assert os.environ.get('MPLBACKEND', '').lower() != 'agg'"),
        new_code_cell("import helper  # a module next to the notebook\n"
                      "assert helper.VALUE == 42"),
    )
    (path.parent / "helper.py").write_text("VALUE = 42\n")
    run = run_notebook(path, timeout=30)
    assert run.failure is None, run.failure
    assert [e.ename for e in run.expected_errors] == ["ZeroDivisionError"]
    assert run.expected_errors[0].index == 2
    assert len(run.tagged_but_clean) == 1 and "cell 3" in run.tagged_but_clean[0]
    assert not run.ok and "did not raise" in run.report()
    # the notebook's own folder is untouched: the copy ran elsewhere
    assert not (path.parent / "written.txt").exists()
    assert check_clean(path) == []


def test_runner_reports_an_unexpected_error_and_stops(tmp_path):
    path = _write(
        tmp_path,
        new_code_cell("raise ValueError('chapter is broken')"),
        new_code_cell("open('should_not_run.txt', 'w')"),
    )
    run = run_notebook(path, timeout=30)
    assert not run.ok
    assert "ValueError" in run.failure and "chapter is broken" in run.failure
    assert "chapter is broken" in run.report()


def test_check_clean_finds_outputs_counts_and_invalid_files(tmp_path):
    cell = new_code_cell("print(1)")
    cell.execution_count = 3
    cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text="1\n")]
    path = _write(tmp_path, cell, new_code_cell("2"))
    problems = check_clean(path)
    assert any("stored outputs" in p and "cell 0" in p for p in problems)
    assert any("execution count" in p for p in problems)
    assert len(problems) == 2

    broken = path.parent / "broken.ipynb"
    broken.write_text('{"cells": "not a list", "nbformat": 4, "nbformat_minor": 5}')
    assert check_clean(broken)[0].startswith("not a valid notebook")


def test_find_notebooks_sorts_and_covers_solutions(tmp_path):
    for rel in ("chapters/01_b.ipynb", "chapters/00_a.ipynb", "solutions/00_a.ipynb",
                "chapters/.ipynb_checkpoints/00_a-checkpoint.ipynb", "exercises/00_a.ipynb"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("{}")
    found = [str(p.relative_to(tmp_path)) for p in find_notebooks(tmp_path)]
    assert found == ["chapters/00_a.ipynb", "chapters/01_b.ipynb", "solutions/00_a.ipynb"]


def test_runner_sends_nothing_to_the_kernel_while_a_widget_draws(tmp_path):
    # nbclient's stand-in for the Output widget (which `interact` draws into) sends comm
    # messages on the shell channel while it waits there for the cell's reply, and a reply
    # that arrives meanwhile can then wait for the cell timeout; the runner goes without it,
    # so what the widget shows lands in the cell's own outputs.
    path = _write(
        tmp_path,
        new_code_cell("from ipywidgets import Output\n"
                      "out = Output()\n"
                      "display(out)\n"
                      "with out:\n"
                      "    print('drawn inside the widget')"),
        new_code_cell("x = 1"),
    )
    run = run_notebook(path, timeout=30)
    assert run.ok, run.report()
    texts = [o.get("text", "") for o in run.executed.cells[0].outputs]
    assert any("drawn inside the widget" in t for t in texts), run.executed.cells[0].outputs
