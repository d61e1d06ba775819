"""An instructor's term, through the command line alone (README, "Grading a term").

One class in nbgrader's layout (``submitted/<student>/00_demo.ipynb``), graded, then:
one student regraded, a notebook changed and the batch resumed, overrides and a late policy
added, the book exported for each LMS, statistics written, and the class graded again in 3
shards and merged. After every step the gradebook holds every student exactly once, and each
row's ``total`` is its exercise columns less its late penalty.

The demo exercises (numpy only) keep each run to a few seconds; no sandbox (the term's
chores are what is tested here, not the sandbox).
"""

from __future__ import annotations

import csv
import re
import shutil
from pathlib import Path

import pytest

from minijit.grading.__main__ import main

FIXTURES = Path(__file__).parent / "grading_fixtures"
SOLUTION = FIXTURES / "solutions" / "00_demo.ipynb"
STUB = FIXTURES / "exercises" / "00_demo.ipynb"
IDS = ["ex00_add", "ex00_mean", "ex00_answer"]
CLASS = ["alice", "bob", "carol", "dave"]
COMMON = ["--exercises", str(FIXTURES / "demo_exercises.py"), "--no-sandbox", "--jobs", "2",
          "--no-progress", "--cell-timeout", "30", "--timeout", "90"]


@pytest.fixture(autouse=True)
def _own_ipython_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("IPYTHONDIR", str(tmp_path / "ipython"))


def _book(path: Path) -> dict[str, dict[str, str]]:
    with open(path, newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    names = [r["student"] for r in rows]
    assert names == sorted(set(names)) == CLASS, f"{path.name}: rows {names}"
    for r in rows:  # complete and consistent, whatever the step
        assert r["status"] == "ok", r
        points = sum(float(r[i]) for i in IDS) - float(r["late_penalty"] or 0)
        assert float(r["total"]) == max(0.0, round(points, 2)), r
        assert r["max_total"] == "4" and len(r["sha256"]) == 16, r
    return {r["student"]: r for r in rows}


def _totals(book: dict[str, dict[str, str]]) -> dict[str, str]:
    return {name: r["total"] for name, r in book.items()}


def _wrong_add(path: Path) -> None:
    """Carol's first submission: ``add`` subtracts."""
    text = path.read_text()
    assert "return a + b" in text
    path.write_text(text.replace("return a + b", "return a - b"))


def test_a_term_of_grading(tmp_path, capsys):
    sub = tmp_path / "submitted"
    for name in CLASS:
        (sub / name).mkdir(parents=True)
        shutil.copy(STUB if name == "bob" else SOLUTION, sub / name / "00_demo.ipynb")
    _wrong_add(sub / "carol" / "00_demo.ipynb")
    book, feedback = tmp_path / "gradebook.csv", tmp_path / "feedback"

    def grade(*args: str) -> str:
        capsys.readouterr()
        assert main(["grade", str(sub), "--out", str(book), "--feedback-dir", str(feedback),
                     *COMMON, *args]) == 0
        return capsys.readouterr().err

    # 1. the class, graded: students named from their folders
    grade()
    first = _book(book)
    assert _totals(first) == {"alice": "4", "bob": "0", "carol": "3", "dave": "4"}
    assert sorted(p.name for p in feedback.iterdir()) == sorted(
        f"{n}.{ext}" for n in CLASS for ext in ("md", "html"))

    # 2. bob hands in his work late: regrade bob alone; the others' rows are kept as they were
    shutil.copy(SOLUTION, sub / "bob" / "00_demo.ipynb")
    grade("--regrade", "bob")
    second = _book(book)
    assert _totals(second) == {**_totals(first), "bob": "4"}
    assert all(second[n] == first[n] for n in CLASS if n != "bob")
    assert Path(f"{book}.~1~").exists()  # the book before this run, backed up

    # 3. carol fixes her notebook; --resume regrades her, and only her
    shutil.copy(SOLUTION, sub / "carol" / "00_demo.ipynb")
    grade("--resume")
    third = _book(book)
    assert _totals(third) == {n: "4" for n in CLASS}
    assert third["carol"]["sha256"] != second["carol"]["sha256"]
    assert all(third[n] == second[n] for n in CLASS if n != "carol")

    # 4. an override and a late policy; --resume applies them, regrading those they change
    overrides = tmp_path / "overrides.csv"
    overrides.write_text("student,exercise,points,comment\n"
                         "dave,ex00_mean,1,<b>copied</b> from the board\n")
    times = tmp_path / "times.csv"
    times.write_text("student,submitted\nalice,2026-03-01T20:00:00+00:00\n"
                     "bob,2026-03-03T08:00:00+00:00\ncarol,2026-03-01T21:00:00+00:00\n"
                     "dave,2026-03-01T22:00:00+00:00\n")
    late = ["--overrides", str(overrides), "--deadline", "2026-03-01T23:59:00+00:00",
            "--submission-times", str(times), "--late-penalty", "0.1"]
    grade("--resume", *late)
    fourth = _book(book)
    assert _totals(fourth) == {"alice": "4", "bob": "3.2", "carol": "4", "dave": "3"}
    assert fourth["bob"]["late_penalty"] == "0.8"  # 1 day 8 hours late: 2 days, 10% each
    assert fourth["dave"]["overrides"].startswith("ex00_mean 2->1")
    dave = (feedback / "dave.md").read_text()
    assert "Total: 3 / 4 points (4 before the adjustments below)" in dave
    assert "<b>" not in dave and "<b>" not in (feedback / "dave.html").read_text()
    assert "late by 2 days" in (feedback / "bob.md").read_text()
    # the same options again change nothing; without them the grader's points come back
    grade("--resume", *late)
    assert _book(book) == fourth

    # 5. exports for each LMS, through a roster
    roster = tmp_path / "roster.csv"
    roster.write_text("student,id,name,email\n" + "".join(
        f"{n},{100 + i},{n.title()} Doe,{n}@example.edu\n" for i, n in enumerate(CLASS)))
    for fmt in ("canvas", "moodle", "gradescope", "csv"):
        out = tmp_path / f"{fmt}.csv"
        assert main(["export", str(book), "--roster", str(roster), "--format", fmt,
                     "--out", str(out)]) == 0
        with open(out, newline="", encoding="utf-8") as f:
            rows = list(csv.reader(f))
        text = "\n".join(",".join(r) for r in rows)
        for i, name in enumerate(CLASS):  # every student, by their id, with their total
            line = next(r for r in rows if str(100 + i) in r or f"{name}@example.edu" in r)
            assert fourth[name]["total"] in line, (fmt, line)
        assert "3.2" in text and len(rows) >= len(CLASS) + 1

    # 6. statistics: per exercise, per case, pictures
    capsys.readouterr()
    assert main(["stats", str(book), "--out-dir", str(tmp_path / "stats"),
                 "--exercises", str(FIXTURES / "demo_exercises.py")]) == 0
    printed = capsys.readouterr().out
    assert re.search(r"ex00_mean\b.*\b4\b", printed)  # four rows graded
    assert {p.suffix for p in (tmp_path / "stats").iterdir()} >= {".md", ".csv", ".png"}

    # 7. the class again in 3 shards, merged: the book of one run (seconds aside)
    shards = [tmp_path / f"shard{k}.csv" for k in (1, 2, 3)]
    for k, shard in enumerate(shards, 1):
        assert main(["grade", str(sub), "--out", str(shard), "--feedback-dir",
                     str(tmp_path / "feedback3"), "--shard", f"{k}/3", *COMMON, *late]) == 0
    merged = tmp_path / "merged.csv"
    assert main(["merge", *map(str, shards), "--out", str(merged)]) == 0
    again = _book(merged)
    for name in CLASS:
        assert {k: v for k, v in again[name].items() if k != "seconds"} == {
            k: v for k, v in fourth[name].items() if k != "seconds"}, name
