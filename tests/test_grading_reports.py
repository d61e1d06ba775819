"""Class statistics and LMS export, on gradebooks written by hand and on one graded for real.

The hand-written gradebooks use the columns of the grader's CSV (student, the exercise ids,
total, max_total, late_penalty, status, seconds, submitted, sha256, overrides, detail,
cases); one is of the older kind, without the cases column. Numbers are checked exactly.
"""

from __future__ import annotations

import csv
import io
import re
import shutil
from pathlib import Path

import pytest

from minijit.grading.__main__ import main
from minijit.grading.cases import Case
from minijit.grading.export import RosterError, build_export, read_roster, write_export
from minijit.grading.registry import load_exercises
from minijit.grading.stats import ReportError, class_stats, format_text, read_book

FIXTURES = Path(__file__).parent / "grading_fixtures"
DEMO = str(FIXTURES / "demo_exercises.py")
IDS = ("ex00_add", "ex00_mean", "ex00_answer")
HEADER = ["student", *IDS, "total", "max_total", "late_penalty", "status", "seconds",
          "submitted", "sha256", "overrides", "detail", "cases"]
KEYS = ("ex00_add/public/0", "ex00_add/public/1", "ex00_add/hidden/0", "ex00_mean/public/0",
        "ex00_mean/hidden/0", "ex00_mean/hidden/1", "ex00_answer/public/0")


def _cases(flags: str, extra: str = "") -> str:
    return " ".join(f"{k}:{f}" for k, f in zip(KEYS, flags)) + extra


ROWS = [  # student, points per exercise, total, status, cases
    ("alice", ("1", "2", "1"), "4", "ok", _cases("1111111")),
    ("bob", ("0", "0", "0"), "0", "ok", _cases("0000000")),
    ("carol", ("0.67", "1.33", "1"), "3", "error",
     _cases("1101101", " ex00_mean/private/0:0")),
    ("dan", ("0.67", "0", "1"), "1.67", "timeout",
     _cases("1100001", " ex00_mean/private/0:1")),
    ("erin", ("0", "0", "0"), "0", "not_graded", ""),
]


def _book(path: Path, rows=ROWS, header=HEADER) -> Path:
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(header)
        for student, points, total, status, cases in rows:
            full = dict(zip(HEADER, [student, *points, total, "4", "0", status, "1.00", "",
                                     "0123456789abcdef", "", "", cases]))
            w.writerow([full[c] for c in header])
    return path


@pytest.fixture(scope="module")
def demo():
    return load_exercises([DEMO])


def _by(items, attr="id"):
    return {getattr(x, attr): x for x in items}


def test_exercise_statistics_exactly(tmp_path, demo):
    s = class_stats(read_book(_book(tmp_path / "book.csv")), demo)
    assert (s.rows, s.left_out) == (5, 1)  # erin's not_graded row is left out
    assert s.statuses == {"error": 1, "ok": 2, "timeout": 1}
    ex = _by(s.exercises)
    add = ex["ex00_add"]
    assert (add.max_points, add.graded, add.zeros, add.full) == (1, 4, 1, 1)
    assert add.mean == pytest.approx((1 + 0 + 0.67 + 0.67) / 4)
    assert add.median == pytest.approx(0.67)
    mean = ex["ex00_mean"]
    assert (mean.zeros, mean.full, mean.median) == (2, 1, pytest.approx(0.665))
    answer = ex["ex00_answer"]
    assert (answer.mean, answer.median, answer.zeros, answer.full) == (0.75, 1, 1, 3)
    total = ex["total"]
    assert (total.max_points, total.graded, total.zeros, total.full) == (4, 4, 1, 1)
    assert total.mean == pytest.approx((4 + 0 + 3 + 1.67) / 4)
    assert total.median == pytest.approx((1.67 + 3) / 2)


def test_case_pass_rates_by_name(tmp_path, demo):
    hidden = {"ex00_mean": (Case("secret pair", ([2, 4],)),)}
    s = class_stats(read_book(_book(tmp_path / "book.csv")), demo, hidden)
    cases = _by(s.cases, "key")
    assert [(c.kind, c.name, c.passed, c.graded) for c in s.cases] == [
        ("public", "1-d", 3, 4), ("public", "scalars", 3, 4), ("hidden", "2-d broadcast", 1, 4),
        ("public", "four numbers", 2, 4), ("hidden", "one number", 2, 4),
        ("hidden", "negative", 1, 4), ("private", "secret pair", 1, 2),
        ("public", "the answer", 3, 4)]
    assert cases["ex00_add/public/0"].rate == 0.75
    assert [(c.name, c.rate) for c in s.hardest_hidden()] == [
        ("2-d broadcast", 0.25), ("negative", 0.25), ("one number", 0.5), ("secret pair", 0.5)]
    text = format_text(s)
    assert "1 not_graded row(s) left out" in text
    assert "The hidden cases the class fails most:" in text
    hardest = text.split("fails most:")[1]
    assert hardest.index("2-d broadcast") < hardest.index("one number")
    assert "25% (1/4)" in hardest and "note:" not in text


def test_unnamed_cases_and_unknown_exercises_are_shown_as_keys(tmp_path):
    s = class_stats(read_book(_book(tmp_path / "book.csv")))  # no exercises loaded
    assert _by(s.exercises)["ex00_add"].full is None
    assert _by(s.exercises)["total"].full == 1  # max_total is in the gradebook
    assert all(c.name == c.key for c in s.cases)
    text = format_text(s)
    assert "ex00_mean/private/0" in text and "pass --hidden-cases DIR" in text
    assert "pass --exercises MODULE" in text


def test_a_gradebook_without_cases_still_gives_exercise_statistics(tmp_path, demo, capsys):
    old = _book(tmp_path / "old.csv",
                header=["student", *IDS, "total", "max_total", "status", "seconds", "detail"])
    s = class_stats(read_book(old), demo)
    assert s.cases is None and _by(s.exercises)["total"].full == 1
    assert main(["stats", str(old), "--exercises", DEMO, "--out-dir",
                 str(tmp_path / "out")]) == 0
    out = capsys.readouterr().out
    assert "per-case pass rates need a gradebook written by this version" in out
    assert "ex00_answer" in out and "Public cases" not in out
    assert (tmp_path / "out" / "cases.csv").read_text().count("\n") == 1  # the header


def test_stats_command_writes_markdown_cases_csv_and_histograms(tmp_path, capsys):
    book = _book(tmp_path / "book.csv")
    private = tmp_path / "private"
    private.mkdir()
    (private / "more.py").write_text("from minijit.grading import Case\n"
                                     "HIDDEN_CASES = {'ex00_mean': [Case('secret', ([1],))]}\n")
    out = tmp_path / "stats"
    assert main(["stats", str(book), "--exercises", DEMO, "--hidden-cases", str(private),
                 "--out-dir", str(out)]) == 0
    assert "wrote 6 files" in capsys.readouterr().out
    names = sorted(p.name for p in out.iterdir())
    assert names == ["cases.csv", "hist_ex00_add.png", "hist_ex00_answer.png",
                     "hist_ex00_mean.png", "hist_total.png", "stats.md"]
    assert all((out / n).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" for n in names if "png" in n)
    md = (out / "stats.md").read_text()
    assert "| ex00\\_add | 1 | 4 | 0.58 | 0.67 | 1 | 1 |" in md
    assert "## The hidden cases the class fails most" in md
    rows = list(csv.DictReader(io.StringIO((out / "cases.csv").read_text())))
    assert len(rows) == 8
    assert rows[6] == {"exercise": "ex00_mean", "kind": "private", "key": "ex00_mean/private/0",
                       "name": "secret", "passed": "1", "graded": "2", "pass_rate": "0.5"}


def test_unreadable_gradebooks_are_clear_errors(tmp_path, capsys):
    assert main(["stats", str(tmp_path / "none.csv"), "--exercises", DEMO]) == 2
    assert "no such gradebook" in capsys.readouterr().err
    (tmp_path / "roster.csv").write_text("student,id,name\nalice,1,Alice\n")
    with pytest.raises(ReportError, match="lacks the column"):
        read_book(tmp_path / "roster.csv")
    bad = _book(tmp_path / "book.csv", rows=[("alice", ("1", "two", "1"), "4", "ok", "x:1")])
    s = class_stats(read_book(bad))
    assert _by(s.exercises)["ex00_mean"].graded == 0
    assert any("not numbers" in n and "alice" in n for n in s.notes)
    assert any("cases cell" in n for n in s.notes)


ROSTER = """\
Student , ID,Name,email,Section,LOGIN
alice,1001,"Liddell, Alice",alice@example.edu,A,aliddell
bob,1002,Bob Builder,bob@example.edu,B,bbuilder
erin,1005,Erin,erin@example.edu,A,erin
frank,1006,Frank,frank@example.edu,B,frank
"""


def _roster(tmp_path: Path, text: str = ROSTER) -> Path:
    path = tmp_path / "roster.csv"
    path.write_bytes(text.encode("utf-8"))
    return path


def _export(tmp_path, fmt, **kw):
    book = read_book(_book(tmp_path / "book.csv"))
    return build_export(book, read_roster(_roster(tmp_path)), fmt, "Tracing (77)", **kw)


def test_canvas_export(tmp_path):
    e = _export(tmp_path, "canvas", points_possible=True)
    assert e.records == [
        ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", "Tracing (77)"],
        ["Points Possible", "", "", "", "", "4"],
        ["Liddell, Alice", "", "1001", "aliddell", "A", "4"],
        ["Bob Builder", "", "1002", "bbuilder", "B", "0"]]
    assert e.unknown == ["carol", "dan"]
    assert [s.student for s in e.ungraded] == ["erin"]  # not_graded: no grade to give
    assert [(s.student, s.line) for s in e.absent] == [("frank", 5)]
    assert not e.complete


def test_moodle_gradescope_and_csv_exports(tmp_path):
    assert _export(tmp_path, "moodle").records == [
        ["ID number", "Email address", "Username", "Full name", "Tracing (77)"],
        ["1001", "alice@example.edu", "aliddell", "Liddell, Alice", "4"],
        ["1002", "bob@example.edu", "bbuilder", "Bob Builder", "0"]]
    assert _export(tmp_path, "gradescope", zero_missing=True).records == [
        ["Name", "SID", "Email", "Section", *IDS, "Total Score", "Max Points"],
        ["Liddell, Alice", "1001", "alice@example.edu", "A", "1", "2", "1", "4", "4"],
        ["Bob Builder", "1002", "bob@example.edu", "B", "0", "0", "0", "0", "4"],
        ["Frank", "1006", "frank@example.edu", "B", "0", "0", "0", "0", "4"]]
    assert _export(tmp_path, "csv").records == [
        ["student", "id", "name", "email", "section", "login", *IDS, "total", "max_total",
         "late_penalty", "status"],
        ["alice", "1001", "Liddell, Alice", "alice@example.edu", "A", "aliddell", "1", "2", "1",
         "4", "4", "0", "ok"],
        ["bob", "1002", "Bob Builder", "bob@example.edu", "B", "bbuilder", "0", "0", "0", "0",
         "4", "0", "ok"]]


def test_moodle_writes_an_identifier_column_only_when_every_row_has_one(tmp_path):
    book = read_book(_book(tmp_path / "book.csv"))
    roster = read_roster(_roster(tmp_path, "student,id,name,email\nalice,1001,Alice,a@x.edu\n"
                                           "bob,1002,Bob,\n"))
    assert build_export(book, roster, "moodle", "T").records[0] == ["ID number", "Full name",
                                                                     "T"]


def test_export_command_lists_who_is_missing_and_exits_1(tmp_path, capsys):
    book, roster = _book(tmp_path / "02_tracing.csv"), _roster(tmp_path)
    out = tmp_path / "lms" / "canvas.csv"
    code = main(["export", str(book), "--roster", str(roster), "--format", "canvas",
                 "--out", str(out)])
    captured = capsys.readouterr()
    assert code == 1 and "wrote 2 students' grades" in captured.out
    assert "not in the roster, left out: carol; dan" in captured.err
    assert "not graded" in captured.err and "erin (Erin, line 4)" in captured.err
    assert "without a submission: frank (Frank, line 5)" in captured.err
    assert out.read_text().splitlines()[0].endswith(",Section,02_tracing")  # default name
    assert main(["export", str(book), "--roster", str(roster), "--format", "moodle",
                 "--out", str(out), "--points-possible"]) == 2
    assert "Points Possible" in capsys.readouterr().err
    assert main(["export", str(book), "--roster", str(roster), "--format", "csv",
                 "--out", str(book)]) == 2
    assert "is an input" in capsys.readouterr().err and read_book(book).rows
    complete = _book(tmp_path / "ok.csv", rows=ROWS[:2])
    assert main(["export", str(complete), "--roster", str(roster), "--format", "csv",
                 "--out", str(out)]) == 0


def test_hostile_names_never_start_a_formula(tmp_path):
    evil = '=HYPERLINK("http://x","y")'
    # The gradebook escapes a leading = in the student cell; the roster may give either form.
    rows = [("'" + evil, ("1", "2", "1"), "4", "ok", ""),
            ("'+cmd", ("0", "0", "0"), "0", "ok", "")]
    book = read_book(_book(tmp_path / "book.csv", rows=rows))
    roster = read_roster(_roster(tmp_path, (
        "student,id,name,section\n"
        f'"{evil.replace(chr(34), chr(34) * 2)}",1,"=cmd|\' /C calc\'!A0",@sec\n'
        "'+cmd,2,\"Smith, \"\"Bob\"\"\nJr.\",-1\n")))
    for fmt in ("canvas", "moodle", "gradescope", "csv"):
        e = build_export(book, roster, fmt, "-assignment", points_possible=fmt == "canvas")
        assert e.complete and not e.absent
        write_export(e, tmp_path / f"{fmt}.csv")
        with open(tmp_path / f"{fmt}.csv", newline="") as f:
            back = list(csv.reader(f))
        assert back == e.records  # commas, quotes and the newline survive
        assert all(c[:1] not in "=+-@" for rec in back for c in rec if c), fmt
        text = "\n".join(",".join(r) for r in back)
        assert "'=cmd" in text and "Smith, \"Bob\"\nJr." in text
        assert ("'-assignment" in text) == (fmt in ("canvas", "moodle"))


@pytest.mark.parametrize("text, message", [
    ("", "is empty"),
    ("student,id,nom\n", "unknown column 'nom'"),
    ("student,id\n", "lacks name"),
    ("student,id,name,id\n", "appears twice"),
    ("student,id,name\nalice,1,Alice\nbob,,Bob\n", "line 3: the id is empty"),
    ("student,id,name\nalice,1,Alice\nbob,1,Bob\n", "line 3: the id '1' is already on line 2"),
    ("student,id,name\nalice,1,Alice\nalice,2,Al\n", "line 3: the student 'alice'"),
    ("student,id,name\n\nalice,1,Liddell, Alice\n", "line 3: 4 fields, the header has 3"),
    ("student,id,name\nalice,=1+1,Alice\n", "line 2: the id '=1+1' starts with '='"),
    ("student,id,name,email\nalice,1,Alice,a@x\nbob,2,Bob,a@x\n", "the email 'a@x'"),
])
def test_bad_rosters_say_which_line(tmp_path, text, message):
    with pytest.raises(RosterError, match=re.escape(message)):
        read_roster(_roster(tmp_path, text))


def test_roster_encoding_and_two_lines_naming_one_student(tmp_path):
    path = tmp_path / "roster.csv"
    path.write_bytes("student,id,name\nzoë,1,Zo\xeb\n".encode("latin-1"))
    with pytest.raises(RosterError, match="not UTF-8"):
        read_roster(path)
    path.write_bytes("\ufeffstudent,id,name\nzoë,1,Zoë\n".encode())  # Excel's BOM is fine
    assert read_roster(path)[0].name == "Zoë"
    book = read_book(_book(tmp_path / "book.csv"))
    both = read_roster(_roster(tmp_path, "student,id,name\n'=x,1,A\n=x,2,B\n"))
    with pytest.raises(RosterError, match="lines 2 and 3 name the same"):
        build_export(book, both, "csv", "T")


def test_a_real_gradebook(tmp_path, demo, capsys):
    """Grade the demo solution and its untouched exercise, then report and export."""
    from minijit.grading.batch import grade
    from minijit.grading.runner import Limits

    subs = tmp_path / "submitted"
    subs.mkdir()
    shutil.copy(FIXTURES / "solutions" / "00_demo.ipynb", subs / "alice.ipynb")
    shutil.copy(FIXTURES / "exercises" / "00_demo.ipynb", subs / "bob.ipynb")
    out = tmp_path / "gradebook.csv"
    grade([subs], exercises=demo, out=out, jobs=2, progress=False, sandbox=False,
          limits=Limits(cell_timeout=30, timeout=90))
    book = read_book(out)
    s = class_stats(book, demo)
    total = _by(s.exercises)["total"]
    assert (total.graded, total.mean, total.median, total.zeros, total.full) == (2, 2, 2, 1, 1)
    if "cases" in book.header:  # a gradebook of this version: every case 1 of 2
        assert len(s.cases) == len(KEYS) and {(c.passed, c.graded) for c in s.cases} == {(1, 2)}
        assert s.cases[2].name == "2-d broadcast"
    e = build_export(book, read_roster(_roster(tmp_path)), "gradescope", "Demo")
    assert [r[-2:] for r in e.records[1:]] == [["4", "4"], ["0", "4"]]
    assert not e.unknown and [s.student for s in e.absent] == ["erin", "frank"]
