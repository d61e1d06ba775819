"""The batch grader against hostile or broken submissions.

One small notebook per attack, built here from the demo solution (numpy-only exercises in
``tests/grading_fixtures``), graded together in one batch with the solution itself. Each
attack targets ``ex00_add`` (so it must score 0 there) and leaves the other exercises
correct (so they must keep full marks, unless the attack itself destroys them), and every
notebook must get a row with the right status. Graded in the sandbox where one starts
(tests/test_grading_sandbox.py holds the attacks only the sandbox stops), as the grader
would be; else with ``sandbox=False``.
"""

from __future__ import annotations

import csv
from pathlib import Path

import nbformat

from minijit.grading.batch import grade
from minijit.grading.registry import load_exercises
from minijit.grading.runner import Limits
from minijit.grading.sandbox import unavailable

FIXTURES = Path(__file__).parent / "grading_fixtures"
SOLUTION = FIXTURES / "solutions" / "00_demo.ipynb"
ADD_CELL = "# EXERCISE ex00_add (1 point)\n"
STUB_ADD = ADD_CELL + "def add(a, b):\n    raise NotImplementedError('ex00_add')\n"
FULL = {"ex00_add": 1.0, "ex00_mean": 2.0, "ex00_answer": 1.0}

LIMITS = Limits(cell_timeout=5, timeout=40, settle_timeout=2)
SANDBOX = unavailable() is None


def _notebook(add_cell: str | None = None, check_cell: str | None = None,
              extra_last: str | None = None, drop_check: bool = False):
    nb = nbformat.read(SOLUTION, as_version=4)
    cells = []
    for cell in nb.cells:
        if cell.cell_type == "code" and cell.source.startswith(ADD_CELL) and add_cell:
            cell.source = add_cell
        if cell.cell_type == "code" and cell.source == 'check("ex00_add")':
            if drop_check:
                continue
            if check_cell is not None:
                cell.source = check_cell
        cells.append(cell)
    if extra_last:
        cells.append(nbformat.v4.new_code_cell(extra_last))
    nb.cells = cells
    return nb


# name -> (notebook or raw text, expected status, expected points by exercise)
ATTACKS = {
    "solution": (_notebook(), "ok", FULL),
    "loop_in_cell": (_notebook(ADD_CELL + "while True:\n    pass\n" + STUB_ADD[len(ADD_CELL):]),
                     "timeout", {**FULL, "ex00_add": 0}),
    "loop_in_function": (_notebook(ADD_CELL + "def add(a, b):\n    while True:\n        pass\n"),
                         "timeout", {**FULL, "ex00_add": 0}),
    "loop_ignoring_interrupt": (_notebook(
        ADD_CELL + "import time\nwhile True:\n    try:\n        time.sleep(0.05)\n"
        "    except KeyboardInterrupt:\n        pass\n"), "timeout", {**FULL, "ex00_add": 0}),
    "sys_exit": (_notebook(ADD_CELL + "import sys\nsys.exit()\n" + STUB_ADD[len(ADD_CELL):]),
                 "error", {**FULL, "ex00_add": 0}),
    "sys_exit_in_function": (_notebook(ADD_CELL + "def add(a, b):\n    import sys\n"
                                       "    sys.exit(0)\n"), "ok", {**FULL, "ex00_add": 0}),
    "ipython_exit": (_notebook(ADD_CELL + "exit()\n"), "kernel_died", {**FULL, "ex00_add": 0}),
    "os_exit": (_notebook(ADD_CELL + "import os\nos._exit(1)\n"), "kernel_died",
                {**FULL, "ex00_add": 0}),
    "os_exit_in_function": (_notebook(ADD_CELL + "def add(a, b):\n    import os\n"
                                      "    os._exit(3)\n"), "kernel_died",
                            {**FULL, "ex00_add": 0}),
    "segfault": (_notebook(ADD_CELL + "import ctypes\nctypes.string_at(0)\n"), "kernel_died",
                 {**FULL, "ex00_add": 0}),
    # The kernel's parent is the grader's worker process: kill it. (In a sandbox, the
    # parent is the sandbox's own first process, which the kernel may not signal.)
    "kill_grader_worker": (_notebook(ADD_CELL + "import os, signal\n"
                                     "os.kill(os.getppid(), signal.SIGKILL)\n"),
                           *(("error", {**FULL, "ex00_add": 0}) if SANDBOX else
                             ("tampered", dict.fromkeys(FULL, 0)))),
    "exception": (_notebook(ADD_CELL + "1 / 0\n" + STUB_ADD[len(ADD_CELL):]), "error",
                  {**FULL, "ex00_add": 0}),
    "edited_check_cell": (_notebook(STUB_ADD, check_cell="print('ex00_add: 2/2 passed')"),
                          "tampered", {**FULL, "ex00_add": 0}),
    "deleted_check_cell": (_notebook(STUB_ADD, drop_check=True), "tampered",
                           {**FULL, "ex00_add": 0}),
    "replaced_check": (_notebook(
        STUB_ADD + "def check(name):\n    print(name, 'all cases pass')\n"
        "import minijit.grading as g\nimport minijit.grading.cases as c\n"
        "g.check = check\nc.compare = lambda *a, **k: None\n"), "tampered",
        {**FULL, "ex00_add": 0}),
    "patched_probing": (_notebook(
        STUB_ADD + "import minijit.grading.probing as p\n"
        "p.run_probe = lambda probe, ns, args: {'__array__': {}}\n"
        "p.to_data = lambda x: x\n"), "tampered", {**FULL, "ex00_add": 0}),
    # Breaks the kernel's own messaging: the grader must restart it and carry on.
    "patched_json": (_notebook(
        STUB_ADD + "import json\njson.dumps = lambda *a, **k: '{}'\n"
        "json.loads = lambda *a, **k: {}\n"), "tampered", {**FULL, "ex00_add": 0}),
    "input_transformer": (_notebook(
        STUB_ADD, extra_last="get_ipython().input_transformers_cleanup.append(\n"
        "    lambda lines: ['print(\"ALL TESTS PASSED\")\\n'])\n"
        "get_ipython().ast_transformers.append(__import__('ast').NodeTransformer())\n"),
        "tampered", {**FULL, "ex00_add": 0}),
    "always_equal": (_notebook(
        ADD_CELL + "class AlwaysEqual:\n    def __eq__(self, other):\n        return True\n"
        "    def __ne__(self, other):\n        return False\n"
        "def add(a, b):\n    return AlwaysEqual()\n"), "ok", {**FULL, "ex00_add": 0}),
    "float_subclass": (_notebook(
        ADD_CELL + "import numpy as np\nclass Liar(np.ndarray):\n"
        "    def __eq__(self, other):\n        return True\n"
        "def add(a, b):\n    return np.zeros(3).view(Liar)\n"), "ok", {**FULL, "ex00_add": 0}),
    "invalid_json": ('{"cells": [ this is not json', "invalid_notebook",
                     dict.fromkeys(FULL, 0)),
    "not_a_notebook": ('{"hello": "world"}', "invalid_notebook", dict.fromkeys(FULL, 0)),
}


def test_adversarial_batch(tmp_path):
    """One batch, so that pytest-xdist never grades it twice; every check is collected
    before failing, so one report shows every attack that got through."""
    folder = tmp_path / "submissions"
    folder.mkdir()
    for name, (nb, _, _) in ATTACKS.items():
        path = folder / f"{name}.ipynb"
        if isinstance(nb, str):
            path.write_text(nb)
        else:
            nbformat.write(nb, path)
    (folder / "notes.txt").write_text("not a notebook, not graded")
    out = tmp_path / "out"
    exercises = load_exercises([str(FIXTURES / "demo_exercises.py")])
    rows = {r.student: r for r in grade([folder], exercises=exercises,
                                        out=out / "gradebook.csv",
                                        feedback_dir=out / "feedback", jobs=2,
                                        limits=LIMITS, progress=False, sandbox=SANDBOX)}
    problems = []

    # every submission has a row, in the CSV too
    assert set(rows) == set(ATTACKS)
    with open(out / "gradebook.csv", newline="") as f:
        table = list(csv.DictReader(f))
    assert {r["student"] for r in table} == set(ATTACKS)
    assert list(table[0]) == ["student", "ex00_add", "ex00_mean", "ex00_answer", "total",
                              "max_total", "late_penalty", "status", "seconds", "submitted",
                              "sha256", "overrides", "detail", "cases"]
    assert all(float(r["seconds"]) < LIMITS.timeout + 10 for r in table)

    # each attack: its status, 0 for ex00_add, the other exercises untouched
    for name, (_, status, points) in ATTACKS.items():
        row = rows[name]
        got = {i: s.points for i, s in row.scores.items()}
        if (row.status, got) != (status, points):
            problems.append(f"{name}: got {row.status} {got}, wanted {status} {points}; "
                            f"detail: {row.detail}")
        if row.total != sum(points.values()) or row.max_total != 4:
            problems.append(f"{name}: total {row.total} / {row.max_total}")

    # the details say what happened
    for name, words in [("loop_in_cell", "ran past 5 s"),
                        ("loop_ignoring_interrupt", "restarted"),
                        ("os_exit", "kernel died"), ("ipython_exit", "exit()"),
                        ("sys_exit", "SystemExit"), ("exception", "ZeroDivisionError"),
                        ("edited_check_cell", 'check("ex00_add")'),
                        ("input_transformer", "transformers"),
                        ("replaced_check", "replaced"),
                        ("patched_probing", "minijit.grading.probing.run_probe"),
                        ("patched_json", "could not be read"),
                        ("kill_grader_worker", "PermissionError" if SANDBOX
                         else "killed the grader's worker")]:
        if words not in rows[name].detail:
            problems.append(f"{name}: {words!r} not in {rows[name].detail!r}")
    if rows["solution"].detail:
        problems.append(f"solution: {rows['solution'].detail}")
    assert not problems, "\n".join(problems)

    # feedback shows the failed public cases, and never a hidden one
    text = (out / "feedback" / "always_equal.md").read_text()
    assert "cannot grade an object of type AlwaysEqual" in text
    assert "1-d" in text and "scalars" in text  # public cases of ex00_add are named
    assert "2-d broadcast" not in text  # its hidden case is not
    assert "1 of 1 hidden cases failed" in text
    assert (out / "feedback" / "invalid_json.md").exists()
