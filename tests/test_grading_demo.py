"""The grader end to end through its command line, on the numpy-only demo exercises:
a solution grades to full marks, the generated exercise to zero, and an instructor's
private hidden cases count without ever showing up in feedback."""

from __future__ import annotations

import csv
import shutil
import subprocess
import sys
from pathlib import Path

from minijit.grading.__main__ import main
from minijit.grading.sandbox import unavailable

FIXTURES = Path(__file__).parent / "grading_fixtures"
# Sandboxed where a sandbox starts (tests/test_grading_sandbox.py tests it); else as before.
NO_SANDBOX = [] if unavailable() is None else ["--no-sandbox"]


def test_grade_command(tmp_path):
    subs = tmp_path / "submitted"
    subs.mkdir()
    shutil.copy(FIXTURES / "solutions" / "00_demo.ipynb", subs / "alice.ipynb")
    shutil.copy(FIXTURES / "exercises" / "00_demo.ipynb", subs / "bob.ipynb")
    private = tmp_path / "private"
    private.mkdir()
    (private / "more_cases.py").write_text(
        "from minijit.grading import Case\n"
        "HIDDEN_CASES = {'ex00_mean': [Case('secret-case-name', ([2, 4],))]}\n")
    out, feedback = tmp_path / "gradebook.csv", tmp_path / "feedback"
    run = subprocess.run(
        [sys.executable, "-m", "minijit.grading", "grade", str(subs), "--out", str(out),
         "--feedback-dir", str(feedback), "--hidden-cases", str(private), "--jobs", "2",
         "--cell-timeout", "20", "--timeout", "60",
         "--exercises", str(FIXTURES / "demo_exercises.py"), *NO_SANDBOX],
        capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    assert "graded 2 notebooks" in run.stdout
    assert "grading" in run.stderr  # the progress bar
    with open(out, newline="") as f:
        rows = {r["student"]: r for r in csv.DictReader(f)}
    alice, bob = rows["alice"], rows["bob"]
    assert (alice["total"], alice["max_total"], alice["status"]) == ("4", "4", "ok")
    assert (bob["ex00_add"], bob["ex00_mean"], bob["ex00_answer"]) == ("0", "0", "0")
    assert (bob["total"], bob["status"]) == ("0", "ok")
    assert "not attempted" in bob["detail"]
    text = (feedback / "bob.md").read_text()
    assert "NotImplementedError" in text and "four numbers" in text
    assert "3 of 3 hidden cases failed" in text  # two in the module, one private
    assert "secret-case-name" not in text
    assert "Total: 4 / 4 points" in (feedback / "alice.md").read_text()


def test_grade_command_reports_setup_errors(tmp_path, capsys):
    demo = str(FIXTURES / "demo_exercises.py")
    assert main(["grade", str(tmp_path / "nothing"), "--exercises", demo, *NO_SANDBOX]) == 2
    assert "no such file or folder" in capsys.readouterr().err
    (tmp_path / "typo.py").write_text("HIDDEN_CASES = {'ex00_nope': []}\n")
    assert main(["grade", str(FIXTURES / "solutions"), "--exercises", demo,
                 "--hidden-cases", str(tmp_path), *NO_SANDBOX]) == 2
    assert "unknown exercise id 'ex00_nope'" in capsys.readouterr().err


def test_list_command(capsys):
    assert main(["list", "--exercises", str(FIXTURES / "demo_exercises.py")]) == 0
    out = capsys.readouterr().out
    assert "ex00_mean" in out and "2 pts" in out and "chapters/00_demo.ipynb" in out
