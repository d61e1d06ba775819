"""The gradebook against attacks on the batch itself, not on one exercise.

Each scenario ends with a complete, honest gradebook: every given path has its row, graded
as it deserves, and no row was lost or rewritten, whatever the submissions (or the world)
did to the grader:

- names: links (to a classmate's file, to ``/etc/passwd``, to the instructor's solution),
  paths given twice, colliding stems (``x/carol`` and ``x__carol``), commas, quotes,
  newlines, leading ``=``/``+``/``-``/``@``, bytes that are not UTF-8;
- outputs: symlinks standing where the gradebook and a feedback file go;
- the assignment: markdown that mentions another chapter's exercises, a batch that spans two;
- processes: a notebook that SIGKILLs the grader (then ``--resume``), SIGTERM from outside,
  a worker killed once, a worker stopped with SIGSTOP.

Every batch is graded with ``--no-sandbox``: these are the gradebook's own guarantees, which
must hold without the sandbox too (and several scenarios need a kernel that can reach its
worker, which the sandbox prevents). Submissions are built from the numpy-only demo solution
(``tests/grading_fixtures``). No
test waits on a guess of how fast the machine is: they wait for events (a file appearing,
a process ending) under generous limits.
"""

from __future__ import annotations

import csv
import os
import shutil
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import nbformat
import pytest

from minijit.grading.batch import grade
from minijit.grading.feedback import md_text
from minijit.grading.files import replace_file
from minijit.grading.gradebook import _cell, read_gradebook
from minijit.grading.pool import DIED, DONE, FAILED, OVERRAN, WorkerPool
from minijit.grading.registry import load_exercises
from minijit.grading.runner import Limits
from minijit.grading.scoring import GradingSetupError
from minijit.grading.submissions import feedback_names, printable, select_exercises

FIXTURES = Path(__file__).parent / "grading_fixtures"
SOLUTION = FIXTURES / "solutions" / "00_demo.ipynb"
STUB = FIXTURES / "exercises" / "00_demo.ipynb"
DEMO = str(FIXTURES / "demo_exercises.py")
FULL = 4.0
LIMITS = Limits(cell_timeout=30, timeout=90, settle_timeout=2)

# A second chapter, for the assignment scenarios.
OTHER_CHAPTER = '''
from minijit.grading.cases import Case, Exercise
from minijit.grading.probing import get


def probe_twice(ns, x):
    return get(ns, "twice")(x)


EXERCISES = [
    Exercise(id="ex01_twice", points=5, title="Twice", chapter="01_other",
             section="Doubling", hint="Multiply by two.", probe=probe_twice,
             reference=lambda: {"twice": lambda x: 2 * x}, public=(Case("two", (2,)),)),
]
'''

@pytest.fixture(autouse=True)
def _own_ipython_dir(tmp_path, monkeypatch):
    """Kernels read no IPython profile but a fresh one: a startup file left in the user's
    profile (by anyone) must not change these grades."""
    monkeypatch.setenv("IPYTHONDIR", str(tmp_path / "ipython"))


needs_proc = pytest.mark.skipif(not Path("/proc/self/stat").exists(),
                                reason="the scenario watches processes through /proc")


def _solution(extra_cells: tuple[str, ...] = (), markdown: str | None = None):
    nb = nbformat.read(SOLUTION, as_version=4)
    if markdown is not None:
        nb.cells.insert(0, nbformat.v4.new_markdown_cell(markdown))
    nb.cells += [nbformat.v4.new_code_cell(c) for c in extra_cells]
    return nb


def _write(path: Path, nb) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, path)
    return path


def _exercises(tmp_path: Path, *chapters: str):
    extra = []
    if "01_other" in chapters:
        (tmp_path / "other_exercises.py").write_text(OTHER_CHAPTER)
        extra.append(str(tmp_path / "other_exercises.py"))
    return load_exercises([DEMO, *extra])


def _table(path: Path) -> list[dict[str, str]]:
    with open(path, newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def _cli(args: list[str], tag: str, margin: float | None = None,
         sigint_ignored: bool = False, **kwargs) -> subprocess.Popen:
    """The grader's command line, in a process of its own; ``tag`` marks (in their
    environment) every process it starts, kernels included. ``margin``: the seconds the
    main process waits for a worker past its submission's timeout and settle time, instead
    of ``batch.overrun_deadline``'s (for a test that waits for that deadline).
    ``sigint_ignored``: started with SIGINT ignored, as a script's background job is (by a
    shell's ``trap``, which ``exec`` keeps: no ``preexec_fn``, which would fork this
    process's threads' locks into the child)."""
    env = dict(os.environ, MINIJIT_TEST_BATCH=tag, PYTHONFAULTHANDLER="1")
    grader = ["-m", "minijit.grading"]
    if margin is not None:
        grader = ["-c", "import sys\nimport minijit.grading.batch as batch\n"
                  "batch.overrun_deadline = lambda limits: (limits.timeout + "
                  f"limits.settle_timeout + {margin!r})\n"
                  "from minijit.grading.__main__ import main\nsys.exit(main())\n"]
    shell = ["sh", "-c", 'trap "" INT; exec "$@"', "sh"] if sigint_ignored else []
    return subprocess.Popen(
        [*shell, sys.executable, *grader, "grade", *args, "--no-progress",
         "--no-sandbox", "--exercises", DEMO], env=env, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True, **kwargs)


def _tagged(tag: str) -> list[int]:
    mark = f"MINIJIT_TEST_BATCH={tag}".encode()
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/environ", "rb") as f:
                    if mark in f.read().split(b"\0"):
                        found.append(int(entry))
            except OSError:  # ended, or a zombie
                continue
    return found


def _wait_for(condition, what: str, timeout: float = 240.0) -> None:
    end = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > end:
            raise AssertionError(f"gave up waiting for {what}")
        time.sleep(0.1)


def _no_process_left(tag: str) -> None:
    """Every process of the batch ends (workers, kernels, the fork server): none orphaned."""
    _wait_for(lambda: not _tagged(tag), "the batch's processes to end", timeout=60)


# ---------------------------------------------------------------------------- no kernels


def test_printable_names_are_injective_and_one_line():
    names = ["alice", "a\\x", "a\\\\x", "new\nline", "new\\u000aline", "tab\there",
             os.fsdecode(b"bad\xff\xfe"), "bad\\xff\\xfe", "\x80", "\udc80", "\u200b",
             "caf\u00e9", "=1+2", "'=1+2", "'"]
    shown = [printable(n) for n in names]
    assert len(set(shown)) == len(names)
    for s in shown:
        assert s.isprintable() and s.encode("utf-8")
    assert printable(os.fsdecode(b"bad\xff")) == "bad\\xff"
    assert printable("new\nline") == "new\\u000aline"
    cells = [_cell(s) for s in shown]
    assert len(set(cells)) == len(cells)
    assert all(c[:1] not in "=+-@" for c in cells)
    assert _cell("=1+2") == "'=1+2" and _cell("'=1+2") == "''=1+2"


def test_feedback_names_are_injective_and_portable():
    students = ["x/carol", "x__carol", "x%2Fcarol", "Carol", "carol", "carol~2", ".hidden",
                "..", "a:b*c?", "gradebook", "e\u0301", "\u00e9", "long" * 100,
                "long" * 100 + "!"]
    files = feedback_names(students, taken=["gradebook.md"])
    keys = {f.casefold() for f in files}
    assert len(keys) == len(students)  # distinct even on a case-insensitive file system
    for f in files:
        assert f.endswith(".md") and "/" not in f and not f.startswith(".")
        assert len(f.encode()) <= 200
    assert files[:3] == ["x%2Fcarol.md", "x__carol.md", "x%252Fcarol.md"]
    assert files[students.index("gradebook")] != "gradebook.md"
    assert feedback_names(students, taken=["gradebook.md"]) == files  # deterministic
    # a page is never a taken name either (a gradebook named like a student's page)
    assert feedback_names(["carol"], taken=["carol.html"]) == ["carol~2.md"]


def test_submissions_are_given_paths_each_once(tmp_path):
    from minijit.grading.submissions import _find

    (tmp_path / "subs" / "x").mkdir(parents=True)
    (tmp_path / "subs" / "x" / "carol.ipynb").write_text("{}")
    (tmp_path / "subs" / "alice.ipynb").write_text("{}")
    (tmp_path / "subs" / "twin.ipynb").symlink_to("alice.ipynb")
    (tmp_path / "subs" / "away.ipynb").symlink_to(tmp_path / "outside.ipynb")
    (tmp_path / "outside.ipynb").write_text("{}")
    (tmp_path / "subs" / "more").symlink_to(tmp_path / "elsewhere", target_is_directory=True)
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "solution.ipynb").write_text("{}")
    subs = tmp_path / "subs"
    found = _find([subs, subs / "alice.ipynb", subs / "x" / ".." / "alice.ipynb",
                   subs / "away.ipynb", tmp_path / "outside.ipynb"])
    assert [s.path for s in found] == [subs / "alice.ipynb", subs / "away.ipynb",
                                       subs / "twin.ipynb", subs / "x" / "carol.ipynb",
                                       tmp_path / "outside.ipynb"]
    assert [s.read is None for s in found] == [False, True, False, False, False]
    assert found[2].read == subs / "alice.ipynb"  # read through the link, named after it
    # a link given by name is checked against its own folder
    [away] = _find([subs / "away.ipynb"])
    assert away.read is None and "outside" in away.problem


def test_replace_file_replaces_a_symlink_never_its_target(tmp_path):
    target = tmp_path / "precious.csv"
    target.write_text("precious")
    link = tmp_path / "feedback.md"
    link.symlink_to(target)
    replace_file(link, b"feedback")
    assert not link.is_symlink() and link.read_text() == "feedback"
    assert target.read_text() == "precious"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["feedback.md", "precious.csv"]


def test_read_gradebook_drops_a_row_cut_short(tmp_path):
    path = tmp_path / "gradebook.csv"
    path.write_text("student,total,status,detail\r\nalice,4,ok,\r\nbob,0,ok,cut sh")
    header, rows = read_gradebook(path)
    assert header == ["student", "total", "status", "detail"] and rows == [
        ["alice", "4", "ok", ""]]
    link = tmp_path / "link.csv"
    link.symlink_to(path)
    with pytest.raises(GradingSetupError, match="symbolic link"):
        read_gradebook(link)


def test_assignment_comes_from_headers_and_check_cells_only(tmp_path):
    exercises = _exercises(tmp_path, "01_other")
    mention = _write(tmp_path / "mention.ipynb", _solution(
        markdown='I also did ex01_twice: `check("ex01_twice")`, and # EXERCISE ex01_twice',
        extra_cells=("# talk about ex01_twice in a comment\nx = 'ex01_twice'",)))
    alice = _write(tmp_path / "alice.ipynb", _solution())
    assert [e.chapter for e in select_exercises([mention, alice], exercises)] == [
        "00_demo"] * 3
    other = _write(tmp_path / "other.ipynb", nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_code_cell("# EXERCISE ex01_twice (5 points)\ntwice = 2 .__mul__")]))
    with pytest.raises(GradingSetupError, match="--assignment") as err:
        select_exercises([mention, alice, other], exercises)
    assert "2 chapters" in str(err.value) and "other.ipynb" in str(err.value)
    assert [e.id for e in select_exercises([alice, other], exercises, ["01_other"])] == [
        "ex01_twice"]


def test_a_batch_spanning_two_chapters_stops_before_writing(tmp_path):
    exercises = _exercises(tmp_path, "01_other")
    subs = tmp_path / "subs"
    _write(subs / "alice.ipynb", _solution())
    _write(subs / "bob.ipynb", _solution(extra_cells=('check("ex01_twice")',)))
    out = tmp_path / "gradebook.csv"
    out.write_text("an earlier gradebook")
    with pytest.raises(GradingSetupError, match="--assignment"):
        grade([subs], exercises=exercises, out=out, feedback_dir=tmp_path / "fb", sandbox=False,
              progress=False)
    assert out.read_text() == "an earlier gradebook" and not (tmp_path / "fb").exists()


def _run_all(pool: WorkerPool, tasks: list[str]) -> dict:
    pending, got = dict(enumerate(tasks)), {}
    try:
        while pending or pool.busy():
            while pending and pool.free():
                i = min(pending)
                pool.submit(i, (pending.pop(i),))
            for o in pool.wait():
                got[o.index] = o
    finally:
        pool.close()
    return got


def test_worker_pool_reports_every_outcome():
    """eval as the target: each task is a line of Python run in a worker."""
    got = _run_all(WorkerPool(2, eval, deadline=600), [
        "6 * 7", "1 / 0", "__import__('os').kill(__import__('os').getpid(), 9)", "'after'"])
    assert (got[0].kind, got[0].value) == (DONE, 42)
    assert got[1].kind == FAILED and "ZeroDivisionError" in got[1].value
    assert got[2].kind == DIED and "SIGKILL" in got[2].value
    assert (got[3].kind, got[3].value) == (DONE, "after")  # a death costs one task only


def test_worker_pool_kills_a_stopped_worker():
    stop = "__import__('os').kill(__import__('os').getpid(), __import__('signal').SIGSTOP)"
    got = _run_all(WorkerPool(1, eval, deadline=3), [stop, "'next'"])
    assert got[0].kind == OVERRAN and got[0].seconds >= 3
    assert (got[1].kind, got[1].value) == (DONE, "next")  # in a new worker


# ---------------------------------------------------------------------------- one batch


def test_one_row_per_given_path_whatever_the_names_and_links(tmp_path):
    """Links, bad names, a worker killed once, markdown naming another chapter, symlinks
    where the outputs go: one batch, every row honest, every feedback file in place."""
    exercises = _exercises(tmp_path, "01_other")
    subs = tmp_path / "subs"
    solution = _solution()
    for name in ["alice", "mallory", "carol", "x/carol", "x__carol", 'a,b "q"', "new\nline",
                 '=HYPERLINK("x")', "+plus", "-minus", "@at"]:
        _write(subs / f"{name}.ipynb", solution)
    bad = os.fsdecode(b"bad\xff\xfe")
    _write(subs / f"{bad}.ipynb", solution)
    _write(subs / "mention.ipynb", _solution(
        markdown="Bonus: I also solved ex01_twice, see `check(\"ex01_twice\")`."))
    marker = tmp_path / "killed-once"
    _write(subs / "kill_worker_once.ipynb", _solution(extra_cells=(
        "import os, signal\n"
        f"if not os.path.exists({str(marker)!r}):\n"
        f"    open({str(marker)!r}, 'w').close()\n"
        "    os.kill(os.getppid(), signal.SIGKILL)\n",)))
    (subs / "twin1.ipynb").symlink_to("alice.ipynb")
    (subs / "twin2.ipynb").symlink_to(subs / "alice.ipynb")
    (subs / "link_passwd.ipynb").symlink_to("/etc/passwd")
    (subs / "link_solution.ipynb").symlink_to(SOLUTION)
    (subs / "dangling.ipynb").symlink_to("nowhere.ipynb")
    os.mkfifo(subs / "fifo.ipynb")  # reading it would block forever
    (subs / "folder_link").symlink_to(SOLUTION.parent, target_is_directory=True)

    out = tmp_path / "out"
    (out / "feedback").mkdir(parents=True)
    (out / "precious.csv").write_text("precious")
    (out / "gradebook.csv").symlink_to("precious.csv")
    (out / "feedback" / "mallory.md").symlink_to("../gradebook.csv")

    rows = {r.student: r for r in grade(
        [subs, subs / "alice.ipynb", subs / "twin1.ipynb", str(subs) + "/./"],
        exercises=exercises, out=out / "gradebook.csv", feedback_dir=out / "feedback",
        jobs=2, limits=LIMITS, progress=False, sandbox=False)}

    invalid = {"link_passwd", "link_solution", "dangling", "fifo"}
    graded = {"alice", "mallory", "carol", "x/carol", "x__carol", 'a,b "q"',
              "new\\u000aline", '=HYPERLINK("x")', "+plus", "-minus", "@at",
              "bad\\xff\\xfe", "mention", "kill_worker_once", "twin1", "twin2"}
    assert set(rows) == graded | invalid
    problems = []
    for name, row in rows.items():
        want = ("invalid_notebook", 0.0) if name in invalid else ("ok", FULL)
        if (row.status, row.total) != want or row.max_total != FULL:
            problems.append(f"{name}: {row.status} {row.total}/{row.max_total} {row.detail}")
    assert not problems, "\n".join(problems)
    assert "outside the submissions folder" in rows["link_passwd"].detail
    assert "outside the submissions folder" in rows["link_solution"].detail
    assert "not a regular file" in rows["fifo"].detail
    assert "graded again" in rows["kill_worker_once"].detail
    assert rows["twin1"].path.name == "twin1.ipynb"  # named after the link

    # the gradebook: a regular file where the symlink stood, complete, cells escaped
    assert not (out / "gradebook.csv").is_symlink()
    assert (out / "precious.csv").read_text() == "precious"
    table = _table(out / "gradebook.csv")
    students = [r["student"] for r in table]
    assert students == sorted(students) and len(students) == len(rows)
    assert set(students) == {_cell(n) for n in rows}
    assert "'=HYPERLINK(\"x\")" in students and "'-minus" in students
    assert {r["max_total"] for r in table} == {"4"}
    assert list(table[0]) == ["student", "ex00_add", "ex00_mean", "ex00_answer", "total",
                              "max_total", "late_penalty", "status", "seconds", "submitted",
                              "sha256", "overrides", "detail", "cases"]

    # feedback: one file per row (and its HTML page), the symlink replaced, x/carol apart
    # from x__carol
    names = sorted(p.name for p in (out / "feedback").iterdir())
    assert not any(n.endswith(".tmp") for n in names)
    files = [n for n in names if n.endswith(".md")]
    assert len(files) == len(rows) and sorted(n[:-5] for n in names if n.endswith(".html")) \
        == sorted(n[:-3] for n in files)
    mallory = out / "feedback" / "mallory.md"
    assert not mallory.is_symlink() and mallory.read_text().startswith("# Feedback: mallory")
    for file, student in [("x%2Fcarol.md", "x/carol"), ("x__carol.md", "x__carol"),
                          ("bad%5Cxff%5Cxfe.md", "bad\\xff\\xfe")]:
        heading = f"# Feedback: {md_text(student)}\n"
        assert (out / "feedback" / file).read_text().startswith(heading)


def test_two_runs_give_the_same_gradebook_through_the_command_line(tmp_path):
    """Two workers, then one (a worker process less to start): whatever order the rows
    finish in, the gradebook is the same."""
    subs = tmp_path / "subs"
    subs.mkdir()
    shutil.copy(SOLUTION, subs / "alice.ipynb")
    shutil.copy(STUB, subs / "bob.ipynb")
    shutil.copy(SOLUTION, subs / os.fsdecode(b"caf\xe9 =1.ipynb"))  # not UTF-8
    tables = []
    for run, jobs in enumerate(["2", "1"]):
        out = tmp_path / f"run{run}.csv"
        proc = _cli([str(subs), "--out", str(out), "--feedback-dir", str(tmp_path / "fb"),
                     "--jobs", jobs], tag=uuid.uuid4().hex)
        stdout, stderr = proc.communicate(timeout=300)
        assert proc.returncode == 0, stderr
        assert "graded 3 notebooks" in stdout
        tables.append([{k: v for k, v in r.items() if k != "seconds"} for r in _table(out)])
    assert tables[0] == tables[1]
    assert [(r["student"], r["total"]) for r in tables[0]] == [
        ("alice", "4"), ("bob", "0"), ("caf\\xe9 =1", "4")]


# ---------------------------------------------------------------------------- processes


@needs_proc
def test_grader_killed_from_a_cell_keeps_its_rows_and_resumes(tmp_path):
    """A cell finds the grader up its parent chain and SIGKILLs it (the first time only):
    the rows finished before are on disk, no worker or kernel is left, and --resume grades
    only what is missing, keeping the rows it found."""
    subs = tmp_path / "subs"
    _write(subs / "a_alice.ipynb", _solution())
    shutil.copy(STUB, subs / "b_bob.ipynb")
    marker = tmp_path / "killed"
    _write(subs / "zz_killer.ipynb", _solution(extra_cells=(
        "import os, signal\n"
        "pid = os.getpid()\n"
        "while True:\n"
        "    with open(f'/proc/{pid}/stat') as f:\n"
        "        pid = int(f.read().rsplit(')', 1)[1].split()[1])\n"
        "    if pid <= 1:\n"
        "        raise RuntimeError('the grader is not among my ancestors')\n"
        "    with open(f'/proc/{pid}/cmdline', 'rb') as f:\n"
        "        argv = f.read().split(b'\\0')\n"
        "    if b'minijit.grading' in argv and b'grade' in argv:\n"
        "        break\n"
        f"if not os.path.exists({str(marker)!r}):\n"
        f"    open({str(marker)!r}, 'w').close()\n"
        "    os.kill(pid, signal.SIGKILL)\n",)))
    out = tmp_path / "gradebook.csv"
    args = [str(subs), "--out", str(out), "--feedback-dir", str(tmp_path / "fb"),
            "--jobs", "1", "--timeout", "120"]

    tag = uuid.uuid4().hex
    proc = _cli(args, tag)
    proc.communicate(timeout=300)
    assert proc.returncode == -signal.SIGKILL and marker.exists()
    _no_process_left(tag)
    # With one worker each row is on disk before the next notebook starts.
    first = {r["student"]: r for r in _table(out)}
    assert {k: (v["status"], v["total"]) for k, v in first.items()} == {
        "a_alice": ("ok", "4"), "b_bob": ("ok", "0")}

    proc = _cli([*args, "--resume"], uuid.uuid4().hex)
    stdout, stderr = proc.communicate(timeout=300)
    assert proc.returncode == 0, stderr
    assert "graded 1 notebooks" in stdout and "2 kept" in stdout
    final = {r["student"]: r for r in _table(out)}
    assert list(final) == ["a_alice", "b_bob", "zz_killer"]
    assert final["a_alice"] == first["a_alice"] and final["b_bob"] == first["b_bob"]
    assert (final["zz_killer"]["status"], final["zz_killer"]["total"]) == ("ok", "4")
    assert (tmp_path / "fb" / "zz_killer.md").exists()


@needs_proc
@pytest.mark.parametrize("signum, group, resume, ignored", [
    (signal.SIGTERM, False, True, False), (signal.SIGINT, False, False, False),
    (signal.SIGTERM, True, False, False), (signal.SIGINT, False, False, True)],
    ids=["TERM", "INT", "TERM-to-the-group", "INT-ignored-at-start"])
def test_sigterm_is_ctrl_c_and_resume_finishes(tmp_path, signum, group, resume, ignored):
    """SIGTERM (or Ctrl-C) while a notebook runs: the finished rows stay, the others are
    not_graded, nothing is left running, the exit status says so; --resume grades what is
    missing. ``timeout`` and CI runners signal the whole process group, workers too. Each
    signal is checked to leave the same gradebook, which is what --resume starts from: it
    runs after one of them only. A grader started with SIGINT ignored (inherited, as a
    script's background job gets it) still stops on SIGINT."""
    subs = tmp_path / "subs"
    _write(subs / "a_alice.ipynb", _solution())
    started = tmp_path / "started"
    _write(subs / "b_slow.ipynb", _solution(extra_cells=(
        "import os, time\n"
        f"if not os.path.exists({str(started)!r}):\n"
        f"    open({str(started)!r}, 'w').close()\n"
        "    time.sleep(3600)\n",)))
    _write(subs / "c_carol.ipynb", _solution())
    out = tmp_path / "gradebook.csv"
    args = [str(subs), "--out", str(out), "--jobs", "1", "--cell-timeout", "3000",
            "--timeout", "3000", "--feedback-dir", str(tmp_path / "fb")]

    tag = uuid.uuid4().hex
    proc = _cli(args, tag, sigint_ignored=ignored, start_new_session=group)
    _wait_for(started.exists, "the slow notebook to start")
    # alice finished before b_slow started: her row is on disk already
    assert [r["student"] for r in _table(out)] == ["a_alice"]
    if group:
        os.killpg(proc.pid, signum)
    else:
        proc.send_signal(signum)
    try:
        _, stderr = proc.communicate(timeout=120)
    except subprocess.TimeoutExpired:  # say where it hangs: its signal masks and stacks
        masks = [line for line in Path(f"/proc/{proc.pid}/status").read_text().splitlines()
                 if line.startswith(("State", "SigBlk", "SigIgn", "SigCgt"))]
        proc.send_signal(signal.SIGABRT)  # PYTHONFAULTHANDLER (`_cli`): every thread's stack
        _, stderr = proc.communicate(timeout=60)
        pytest.fail(f"the grader went on for 120 s after {signal.Signals(signum).name}: "
                    f"{masks}\n{stderr[-8000:]}")
    assert proc.returncode == 128 + signum, stderr
    assert "--resume" in stderr
    _no_process_left(tag)
    first = {r["student"]: r for r in _table(out)}
    assert {k: v["status"] for k, v in first.items()} == {
        "a_alice": "ok", "b_slow": "not_graded", "c_carol": "not_graded"}
    if not resume:
        return

    proc = _cli([*args, "--resume"], uuid.uuid4().hex)
    stdout, stderr = proc.communicate(timeout=300)
    assert proc.returncode == 0, stderr
    final = {r["student"]: r for r in _table(out)}
    assert final["a_alice"] == first["a_alice"]
    assert {k: (v["status"], v["total"]) for k, v in final.items()} == {
        "a_alice": ("ok", "4"), "b_slow": ("ok", "4"), "c_carol": ("ok", "4")}


@needs_proc
def test_a_stopped_worker_is_killed_at_its_deadline(tmp_path):
    """A notebook SIGSTOPs its worker: the worker can no longer enforce any limit, so the
    main process does, and the classmate graded next to it is unharmed. (The first cell
    stops the worker: only a kernel start must fit in the limit, not the notebook.) The
    main's deadline here is the timeout and settle time plus 2 s, not the grader's 15 s
    margin for a worker's last interrupt and kernel stop, which a stopped worker never
    makes: what is proved is that the main kills at the deadline, not the margin's size."""
    subs = tmp_path / "subs"
    _write(subs / "alice.ipynb", _solution())
    stopper = _solution()
    stopper.cells.insert(0, nbformat.v4.new_code_cell(
        "import os, signal\nos.kill(os.getppid(), signal.SIGSTOP)\n"))
    _write(subs / "stopper.ipynb", stopper)
    out = tmp_path / "gradebook.csv"
    tag = uuid.uuid4().hex
    proc = _cli([str(subs), "--out", str(out), "--feedback-dir", str(tmp_path / "fb"),
                 "--jobs", "2", "--timeout", "10"], tag, margin=2.0)
    _, stderr = proc.communicate(timeout=300)  # without the main's deadline: never ends
    assert proc.returncode == 0, stderr
    _no_process_left(tag)
    rows = {r["student"]: r for r in _table(out)}
    assert (rows["alice"]["status"], rows["alice"]["total"]) == ("ok", "4")
    assert (rows["stopper"]["status"], rows["stopper"]["total"]) == ("timeout", "0")
    assert "did not stop" in rows["stopper"]["detail"]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="child subreapers: Linux")
def test_a_detached_child_dies_with_its_submission(tmp_path):
    """A notebook double-forks a child that would rewrite the gradebook later: the child
    is re-parented to its worker, and killed when its submission ends."""
    out = tmp_path / "gradebook.csv"
    pid_file = tmp_path / "child.pid"
    subs = tmp_path / "subs"
    _write(subs / "forger.ipynb", _solution(extra_cells=(
        "import os, time\n"
        "if os.fork() == 0:\n"
        "    os.setsid()\n"
        "    if os.fork() == 0:\n"
        f"        with open({str(pid_file)!r} + '.tmp', 'w') as f:\n"
        "            f.write(str(os.getpid()))\n"
        f"        os.rename({str(pid_file)!r} + '.tmp', {str(pid_file)!r})\n"
        "        while True:\n"
        "            time.sleep(0.1)\n"
        f"            if os.path.exists({str(out)!r}):\n"
        f"                with open({str(out)!r}, 'a') as f:\n"
        "                    f.write('mallory,1,2,1,4,4,ok,0.00,forged\\n')\n"
        "    os._exit(0)\n"
        "os.wait()\n"
        f"while not os.path.exists({str(pid_file)!r}):\n"
        "    time.sleep(0.05)\n",)))
    [row] = grade([subs], exercises=_exercises(tmp_path), out=out, limits=LIMITS, jobs=1,
                  progress=False, sandbox=False)
    assert (row.status, row.total) == ("ok", FULL)
    pid = int(pid_file.read_text())
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)  # killed, and reaped by its worker
    assert [r["student"] for r in _table(out)] == ["forger"]
