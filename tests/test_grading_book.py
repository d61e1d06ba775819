"""A gradebook for a whole term: never lost, always current, sharded, adjusted by hand.

- a run merges into the gradebook at ``--out`` (rows it does not grade are kept), backs the
  old file up first, and refuses a gradebook of other exercises;
- ``--resume`` regrades what changed (the notebook's ``sha256``, ``not_graded``, other
  adjustments), ``--regrade NAME`` the students named;
- ``--shard K/N`` grades a share of the batch; ``merge`` combines the shards into the book
  one run would write;
- names from nbgrader's folders, ``UPPER.IPYNB``, a folder named ``x.ipynb``;
- overrides and late penalties, reapplied from the original points on every run.

Submissions are built from the numpy-only demo exercises (``tests/grading_fixtures``) and
graded without the sandbox (it is not what these tests are about).
"""

from __future__ import annotations

import csv
import hashlib
import shutil
from pathlib import Path

import pytest

from minijit.grading.__main__ import main
from minijit.grading.adjust import Adjuster, adjustments, late_policy, read_overrides
from minijit.grading.batch import grade, running_text
from minijit.grading.gradebook import AFTER, read_gradebook, write_records
from minijit.grading.registry import load_exercises
from minijit.grading.runner import Limits
from minijit.grading.scoring import GradingSetupError
from minijit.grading.shards import in_shard, parse_shard
from minijit.grading.submissions import _find, student_names

FIXTURES = Path(__file__).parent / "grading_fixtures"
SOLUTION = FIXTURES / "solutions" / "00_demo.ipynb"
STUB = FIXTURES / "exercises" / "00_demo.ipynb"
DEMO = str(FIXTURES / "demo_exercises.py")
IDS = ["ex00_add", "ex00_mean", "ex00_answer"]
POINTS = {"ex00_add": 1.0, "ex00_mean": 2.0, "ex00_answer": 1.0}
LIMITS = Limits(cell_timeout=30, timeout=90, settle_timeout=2)


@pytest.fixture(autouse=True)
def _own_ipython_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("IPYTHONDIR", str(tmp_path / "ipython"))


def _grade(paths, out, **kwargs):
    kwargs.setdefault("progress", False)
    return grade(paths, exercises=load_exercises([DEMO]), out=out, limits=LIMITS, jobs=2,
                 sandbox=False, **kwargs)


def _table(path: Path) -> dict[str, dict[str, str]]:
    with open(path, newline="", encoding="utf-8") as f:
        return {r["student"]: r for r in csv.DictReader(f)}


def _copy(src: Path, dst: Path) -> Path:
    dst.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy(src, dst)
    return dst


def _record(student: str, add: str = "0.5", mean: str = "2", answer: str = "1",
            **cells: str) -> dict:
    rec = dict.fromkeys(["student", *IDS, *AFTER], "")
    rec.update(student=student, ex00_add=add, ex00_mean=mean, ex00_answer=answer,
               max_total="4", late_penalty="0", status="ok", **cells)
    return rec


# ---------------------------------------------------------------------------- no kernels


def test_nbgrader_folders_name_the_students(tmp_path):
    paths = [tmp_path / "submitted" / s / "02_tracing.ipynb" for s in ("alice", "bob")]
    assert student_names(paths) == ["alice", "bob"]
    deeper = [tmp_path / "submitted" / s / "ps1" / "02_tracing.ipynb" for s in ("al", "bo")]
    assert student_names(deeper) == ["al", "bo"]
    # two notebooks under one student's folder: the first folders are not unique
    twice = [tmp_path / "a" / "x" / "n.ipynb", tmp_path / "a" / "y" / "n.ipynb",
             tmp_path / "b" / "n.ipynb"]
    assert student_names(twice) == ["a/x/n", "a/y/n", "b/n"]
    # a notebook at the root has no first folder: paths, as before
    flat = [tmp_path / "carol.ipynb", tmp_path / "x" / "carol.ipynb"]
    assert student_names(flat) == ["carol", "x/carol"]


def test_upper_case_suffix_and_a_folder_named_like_a_notebook(tmp_path):
    subs = tmp_path / "subs"
    (subs / "erin.ipynb" / "inner").mkdir(parents=True)
    (subs / "erin.ipynb" / "inner" / "hidden.ipynb").write_text("{}")
    (subs / "DAVE.IPYNB").write_text("{}")
    found = _find([subs])
    assert [s.path.name for s in found] == ["DAVE.IPYNB", "erin.ipynb"]
    assert found[0].read is not None
    assert found[1].read is None and "a folder, not a notebook file" in found[1].problem
    assert student_names([s.path for s in found]) == ["DAVE", "erin"]
    [given] = _find([subs / "erin.ipynb"])  # given by name: the same row
    assert given.read is None and "folder" in given.problem


def test_progress_names_the_running_notebooks():
    assert running_text([]) == ""
    assert running_text(["alice", "bob"]) == "running: alice, bob"
    assert running_text(["a", "b", "c", "d", "e"]) == "running: a, b, c (+2)"


def test_shards_are_stable_and_cover_everyone():
    names = [f"student{i:03d}" for i in range(300)]
    shards = [[n for n in names if in_shard(n, (k, 3))] for k in (1, 2, 3)]
    assert sorted(sum(shards, [])) == names and all(len(s) > 60 for s in shards)
    more = [n for n in names + ["zoe", "adam"] if in_shard(n, (2, 3))]
    assert [n for n in more if n in names] == shards[1]  # adding students moves no one
    assert parse_shard("2/3") == (2, 3)
    for bad in ("0/3", "4/3", "x", "1/0", "3"):
        with pytest.raises(GradingSetupError, match="K/N"):
            parse_shard(bad)


def test_overrides_apply_from_the_original_points(tmp_path):
    path = tmp_path / "overrides.csv"
    path.write_text("student,exercise,points,comment\nalice,ex00_add,1,regraded; by hand\n"
                    "'=bob,ex00_mean,0,copied\n")
    adjust = Adjuster(read_overrides(path, POINTS))
    alice = _record("alice")
    once = adjust.apply(alice, IDS)
    assert (once["ex00_add"], once["total"]) == ("1", "4")
    assert once["overrides"] == "ex00_add 0.5->1: regraded, by hand"
    assert adjust.apply(once, IDS) == once  # applying again changes nothing
    assert adjustments(once) == ["ex00_add: 0.5 \u2192 1 points (instructor: regraded, by hand)",
                                 "total after these: 4 / 4 points"]
    # a name the CSV escapes can be written either way
    bob = adjust.apply(_record("'=bob"), IDS)
    assert (bob["ex00_mean"], bob["total"]) == ("0", "1.5")
    # a changed file is applied from the original points; no file restores them
    path.write_text("student,exercise,points\nalice,ex00_add,0.75\n")
    again = Adjuster(read_overrides(path, POINTS)).apply(once, IDS)
    assert (again["ex00_add"], again["overrides"]) == ("0.75", "ex00_add 0.5->0.75")
    restored = Adjuster().apply(once, IDS)
    assert (restored["ex00_add"], restored["overrides"], restored["total"]) == ("0.5", "", "3.5")
    assert adjustments(restored) == []
    assert Adjuster(read_overrides(path, POINTS)).unused() == ["alice"]


@pytest.mark.parametrize("text, error", [
    ("student,exercise,points\nalice,ex00_nope,1\n", "line 2: no exercise 'ex00_nope'"),
    ("student,exercise,points\n\nalice,ex00_add,lots\n", "line 3: points 'lots' is not"),
    ("student,exercise,points\nalice,ex00_add,1.5\n", "line 2: 1.5 points for ex00_add, which "
                                                      "is worth 1"),
    ("student,exercise,points\nalice,ex00_add,1\nalice,ex00_add,0\n", "line 3: alice ex00_add "
                                                                      "is overridden twice"),
    ("name,exercise,points\nalice,ex00_add,1\n", "needs a student column"),
    ("student,exercise,points\n,ex00_add,1\n", "line 2: no student"),
])
def test_a_bad_overrides_file_names_its_line(tmp_path, text, error):
    path = tmp_path / "overrides.csv"
    path.write_text(text)
    with pytest.raises(GradingSetupError, match=error.replace("(", r"\(")):
        read_overrides(path, POINTS)


def test_late_penalty_per_day_begun_capped_never_below_zero(tmp_path):
    times = tmp_path / "times.csv"
    times.write_text("student,submitted\nalice,2026-03-03T10:00:00Z\n"
                     "bob,2026-03-01T23:00:00+00:00\ncarol,2026-03-09T00:00:00\n")
    policy = late_policy("2026-03-01T23:59:00+00:00", times, 0.1, cap=0.5)
    adjust = Adjuster(late=policy)
    alice = adjust.apply(_record("alice", add="1"), IDS)  # 1 day 10 hours late: 2 days
    assert (alice["late_penalty"], alice["total"], alice["submitted"]) == (
        "0.8", "3.2", "2026-03-03T10:00:00+00:00")
    assert adjustments(alice, policy) == ["late by 2 days: \u221220% (\u22120.8 points)",
                                          "total after these: 3.2 / 4 points"]
    assert adjust.apply(_record("bob"), IDS)["late_penalty"] == "0"  # on time
    carol = adjust.apply(_record("carol", add="0", mean="0.5", answer="0"), IDS)
    assert (carol["late_penalty"], carol["total"]) == ("2", "0")  # capped; never below 0
    dave = adjust.apply(_record("dave"), IDS)
    assert (dave["late_penalty"], dave["submitted"]) == ("0", "") and adjust.untimed == ["dave"]
    # no late policy this run: the penalty is gone
    assert Adjuster().apply(alice, IDS)["total"] == "4"


def test_submission_times_from_canvas_and_moodle(tmp_path):
    canvas = tmp_path / "canvas.csv"
    canvas.write_text("student,submitted_at\nalice,2026-03-02T08:00:00Z\n")
    assert late_policy("2026-03-01T23:59Z", canvas, 0.1).times["alice"].day == 2
    moodle = tmp_path / "moodle.csv"
    moodle.write_text('\ufeffIdentifier,Full name,Last modified (submission)\n'
                      'Participant 1,alice,"Tuesday, 3 March 2026, 10:00 AM"\n'
                      'Participant 2,bob,-\n', encoding="utf-8")
    policy = late_policy("2026-03-01T23:59:00+01:00", moodle, 0.1)
    assert list(policy.times) == ["alice"]  # "-": no submission
    assert policy.times["alice"].utcoffset().total_seconds() == 3600  # the deadline's zone
    assert policy.days_late(policy.times["alice"]) == 2


@pytest.mark.parametrize("deadline, text, per_day, error", [
    ("2026-03-01T23:59Z", "student,submitted\nalice,yesterday\n", 0.1,
     "line 2: 'yesterday' is not a time"),
    ("2026-03-01T23:59", "student,submitted\nalice,2026-03-02T08:00Z\n", 0.1,
     "line 2: this time has a UTC offset and the deadline has none"),
    ("2026-03-01T23:59Z", "student,when\nalice,2026-03-02T08:00Z\n", 0.1,
     "needs a submitted or submitted_at"),
    ("2026-03-01T23:59Z", "student,submitted\n", 1.5, "--late-penalty 1.5"),
    ("soon", "student,submitted\n", 0.1, "--deadline: 'soon' is not a time"),
])
def test_a_bad_late_policy_says_what_is_wrong(tmp_path, deadline, text, per_day, error):
    times = tmp_path / "times.csv"
    times.write_text(text)
    with pytest.raises(GradingSetupError, match=error):
        late_policy(deadline, times, per_day)


def test_merge_refuses_other_columns_and_differing_rows(tmp_path, capsys):
    a, b, c = (tmp_path / f"{n}.csv" for n in "abc")
    write_records(a, IDS, {"alice": _record("alice"), "bob": _record("bob")})
    write_records(b, IDS, {"bob": _record("bob"), "carol": _record("carol")})
    out = tmp_path / "book.csv"
    assert main(["merge", str(a), str(b), "--out", str(out)]) == 0
    assert list(_table(out)) == ["alice", "bob", "carol"]
    write_records(c, IDS, {"bob": _record("bob", add="1")})
    assert main(["merge", str(a), str(c), "--out", str(out)]) == 2
    assert "bob has a row in" in capsys.readouterr().err
    write_records(c, IDS[:2], {"dan": _record("dan")})
    assert main(["merge", str(a), str(c), "--out", str(out)]) == 2
    assert "only gradebooks of one assignment merge" in capsys.readouterr().err
    assert list(_table(out)) == ["alice", "bob", "carol"]  # untouched by the refusals


def test_a_row_with_a_broken_cases_cell_is_left_out(tmp_path):
    path = tmp_path / "book.csv"
    write_records(path, IDS, {"alice": _record("alice", cases="ex00_add/public/0:1"),
                              "bob": _record("bob", cases="ex00_add/public/0:")})
    columns, rows = read_gradebook(path)
    assert columns == ["student", *IDS, *AFTER] and [r[0] for r in rows] == ["alice"]


def test_command_line_errors_name_what_is_wrong(tmp_path, capsys):
    subs = tmp_path / "subs"
    _copy(STUB, subs / "alice.ipynb")
    base = ["grade", str(subs), "--out", str(tmp_path / "book.csv"), "--no-sandbox",
            "--no-progress", "--exercises", DEMO]
    assert main([*base, "--regrade", "alise"]) == 2
    assert "--regrade alise: no submission of that name" in capsys.readouterr().err
    assert main([*base, "--deadline", "2026-03-01T23:59Z"]) == 2
    assert "needs all three" in capsys.readouterr().err
    assert main([*base, "--shard", "4/3"]) == 2
    assert "1 <= K <= N" in capsys.readouterr().err
    assert not (tmp_path / "book.csv").exists()


# ---------------------------------------------------------------------------- batches


def test_a_run_merges_backs_up_and_resume_follows_the_bytes(tmp_path, capsys):
    subs, out = tmp_path / "subs", tmp_path / "gradebook.csv"
    _copy(SOLUTION, subs / "alice.ipynb")
    _copy(STUB, subs / "bob.ipynb")
    _copy(SOLUTION, subs / "carol.ipynb")
    rows = _grade([subs], out, feedback_dir=tmp_path / "fb", progress=True)
    assert "running: " in capsys.readouterr().err  # the bar names the running notebooks
    first = _table(out)
    with open(out, newline="") as f:
        assert next(csv.reader(f)) == ["student", *IDS, *AFTER]
    assert first["alice"]["sha256"] == hashlib.sha256(SOLUTION.read_bytes()).hexdigest()[:16]
    for r in rows:  # the cases cell says what the scores say
        cases = dict(e.rsplit(":", 1) for e in first[r.student]["cases"].split())
        for ex, sc in r.scores.items():
            mine = [v for k, v in cases.items() if k.startswith(ex + "/")]
            assert len(mine) == sc.public[1] + sc.hidden[1]
            assert mine.count("1") == sc.public[0] + sc.hidden[0]

    # one notebook given alone: the others' rows are kept, the old book backed up
    before = out.read_bytes()
    assert [r.student for r in _grade([subs / "alice.ipynb"], out)] == ["alice"]
    assert "saved as" in capsys.readouterr().err
    assert Path(f"{out}.~1~").read_bytes() == before
    book = _table(out)
    assert list(book) == ["alice", "bob", "carol"]
    assert book["bob"] == first["bob"] and book["carol"] == first["carol"]

    # bob fixes his notebook: --resume regrades him only; nothing changed: nothing graded
    _copy(SOLUTION, subs / "bob.ipynb")
    assert [(r.student, r.total) for r in _grade([subs], out, resume=True)] == [("bob", 4)]
    assert _table(out)["carol"] == first["carol"]
    assert _grade([subs], out, resume=True) == []
    assert [r.student for r in _grade([subs], out, regrade=["carol"])] == ["carol"]
    with pytest.raises(GradingSetupError, match="--regrade dave"):
        _grade([subs], out, regrade=["dave"])

    # a gradebook of other exercises is refused, untouched
    before = out.read_bytes()
    with pytest.raises(GradingSetupError, match="another --out"):
        _grade([subs], out, assignment=["ex00_add"])
    assert out.read_bytes() == before
    # one backup per run that found a book, but none that would repeat the one before
    # (the --resume that graded nothing changed nothing)
    assert sorted(p.name for p in tmp_path.glob("gradebook.csv.~*~")) == [
        f"gradebook.csv.~{n}~" for n in range(1, 4)]


def test_an_old_gradebook_is_read_by_name_and_its_rows_regraded_on_resume(tmp_path):
    subs, out = tmp_path / "subs", tmp_path / "gradebook.csv"
    _copy(SOLUTION, subs / "alice.ipynb")
    out.write_text("student,ex00_add,ex00_mean,ex00_answer,total,max_total,status,seconds,"
                   "detail\r\nalice,0,0,0,0,4,ok,1.00,\r\nzed,1,1,1,3,4,error,2.00,a cell\r\n")
    assert [r.student for r in _grade([subs], out, resume=True)] == ["alice"]  # no sha256
    book = _table(out)
    assert book["alice"]["total"] == "4" and book["alice"]["sha256"]
    assert {k: book["zed"][k] for k in ("total", "status", "detail", "sha256", "cases")} == {
        "total": "3", "status": "error", "detail": "a cell", "sha256": "", "cases": ""}


def test_shards_merge_into_the_book_of_one_run(tmp_path):
    """nbgrader's layout (names from the folders), an upper-case suffix, a folder named
    like a notebook: one run, then three shards merged, give the same book and feedback."""
    sub = tmp_path / "submitted"
    _copy(SOLUTION, sub / "alice" / "00_demo.ipynb")
    _copy(STUB, sub / "bob" / "00_demo.ipynb")
    _copy(SOLUTION, sub / "carol" / "00_demo.IPYNB")
    (sub / "erin" / "00_demo.ipynb").mkdir(parents=True)
    _copy(SOLUTION, sub / "frank" / "00_demo.ipynb")
    single = tmp_path / "single.csv"
    _grade([sub], single, feedback_dir=tmp_path / "fb1")
    book = _table(single)
    assert list(book) == ["alice", "bob", "carol", "erin", "frank"]
    assert (book["carol"]["total"], book["erin"]["status"]) == ("4", "invalid_notebook")
    assert "a folder, not a notebook file" in book["erin"]["detail"]
    shards = [tmp_path / f"shard{k}.csv" for k in (1, 2, 3)]
    for k, path in enumerate(shards, 1):
        _grade([sub], path, feedback_dir=tmp_path / "fb3", shard=(k, 3))
    sizes = [len(_table(p)) for p in shards]
    assert sum(sizes) == 5 and sizes.count(0) <= 1
    merged = tmp_path / "merged.csv"
    assert main(["merge", *map(str, shards), "--out", str(merged)]) == 0

    def without_seconds(table):
        return {k: {c: v for c, v in r.items() if c != "seconds"} for k, r in table.items()}

    assert without_seconds(_table(merged)) == without_seconds(book)
    assert sorted(p.name for p in (tmp_path / "fb1").glob("*.md")) == [f"{n}.md" for n in book]
    files = sorted(p.name for p in (tmp_path / "fb1").iterdir())
    assert sorted(p.name for p in (tmp_path / "fb3").iterdir()) == files


def test_overrides_and_late_work_through_the_grader(tmp_path, capsys):
    subs, out = tmp_path / "subs", tmp_path / "gradebook.csv"
    _copy(SOLUTION, subs / "alice.ipynb")
    _copy(STUB, subs / "bob.ipynb")
    overrides = tmp_path / "overrides.csv"
    overrides.write_text("student,exercise,points,comment\nbob,ex00_mean,2,checked by hand\n")
    times = tmp_path / "times.csv"
    times.write_text("student,submitted\nalice,2026-03-03T10:00:00Z\nbob,2026-03-01T12:00Z\n")
    late = late_policy("2026-03-01T23:59:00Z", times, 0.1)
    rows = {r.student: r for r in _grade([subs], out, overrides=overrides, late=late)}
    book = _table(out)
    assert {k: (r["total"], r["late_penalty"], r["overrides"]) for k, r in book.items()} == {
        "alice": ("3.2", "0.8", ""), "bob": ("2", "0", "ex00_mean 0->2: checked by hand")}
    assert book["alice"]["submitted"] == "2026-03-03T10:00:00+00:00"
    assert rows["alice"].adjustments[0] == "late by 2 days: \u221220% (\u22120.8 points)"
    assert rows["bob"].adjustments[0] == (
        "ex00_mean: 0 \u2192 2 points (instructor: checked by hand)")

    # the file changes: under --resume bob is regraded (his feedback must say it), alice kept
    overrides.write_text("student,exercise,points,comment\nbob,ex00_mean,1.5,partly\n")
    again = _grade([subs], out, overrides=overrides, late=late, resume=True)
    assert [r.student for r in again] == ["bob"]
    assert _table(out)["bob"]["overrides"] == "ex00_mean 0->1.5: partly"
    assert _table(out)["alice"] == book["alice"]

    # a run without the options: the kept row gets its original points back, and says so
    capsys.readouterr()
    _grade([subs], out, regrade=["alice"])
    assert "updated for this run's overrides" in capsys.readouterr().err
    final = _table(out)
    assert (final["bob"]["ex00_mean"], final["bob"]["overrides"], final["bob"]["total"]) == (
        "0", "", "0")
    assert (final["alice"]["total"], final["alice"]["late_penalty"]) == ("4", "0")
