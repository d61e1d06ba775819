"""The batch grader: many submissions in parallel, one gradebook CSV, one feedback file each.

The work is split by trust:

- the grader's main process (trusted) loads the exercises, computes every expected value by
  running the probes on the reference solutions, and later compares and scores;
- worker processes (:mod:`minijit.grading.pool`, ``jobs`` of them) each drive one
  submission's kernel at a time with :func:`minijit.grading.runner.run_submission`, and
  receive only the probes to run, never the expected values;
- the kernels (untrusted) run the learner's code and the probes, and answer with plain data;
  each runs in a sandbox of its own (:mod:`minijit.grading.sandbox`), unless ``sandbox=False``.

**One row per given path.** Every file given, and every ``*.ipynb`` under a folder given
(checkpoints skipped, links to folders not followed), is one submission, de-duplicated on
its absolute path as given: the same path given twice is one row, two links to one notebook
are two. Names come from the path as given (a link is named after itself, not its target).
A link whose target lies outside the folder it was found in (for a file given by name: its
own folder), a dangling link and anything that is not a regular file are
``invalid_notebook`` without being read.

**A gradebook that survives anything.** Each row is appended to the CSV, flushed and
fsync'd as its submission ends, so a grader killed with SIGKILL leaves every finished row;
at the end the CSV is rewritten sorted by student. Ctrl-C and SIGTERM stop the batch the
same way: the workers and their kernels are killed, the submissions not finished get a
``not_graded`` row, the CSV is rewritten, and :class:`GradingInterrupted` (a
``KeyboardInterrupt``) is raised. With ``resume=True`` the students whose rows are already
in the gradebook (any status but ``not_graded``) are not graded again: rows are matched on
the ``student`` column, which the CSV holds (it has no path column), so a resumed run must
be given the same submissions (names derive from all the paths given). A worker that dies
costs only its own submission, which is graded once more in a fresh worker (if that one dies
too, the row is ``tampered``); a worker still busy past its submission's ``--timeout`` (plus
a grace period for its kernel to stop) is killed by the main process: ``timeout``.

Every output file (the CSV, each feedback file) is written to a temporary file in its
folder and moved into place with :func:`os.replace`: a symlink standing at the path is
replaced by a regular file, its target never written (``feedback/mallory.md ->
gradebook.csv`` cannot overwrite the gradebook).

Worker processes start with ``forkserver`` (or ``spawn``), which imports the caller's main
module: a script that calls :func:`grade` must do so under ``if __name__ == "__main__":``.

CSV columns: ``student`` (file stem, or the relative path when two stems collide), one
column per exercise id (points earned, see :mod:`minijit.grading.scoring`), ``total``,
``max_total``, ``status`` (one word, the worst thing that happened: see
:data:`minijit.grading.runner.STATUS_ORDER`), ``seconds``, and ``detail`` (what happened, in
words). Student names are shown escaped (:func:`printable`), and no cell can start a
spreadsheet formula (:func:`_cell`).
"""

from __future__ import annotations

import contextlib
import csv
import dataclasses
import hashlib
import io
import json
import os
import shutil
import signal
import stat
import tempfile
import threading
import unicodedata
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from .cases import Case, Exercise, category_of, count_categories, describe
from .notebook import check_call, exercise_header
from .pool import DIED, DONE, OVERRAN, Outcome, WorkerPool
from .runner import NOTE, STATUS_ORDER, Limits, RunResult, run_submission
from .sandbox import INSTALL_HINT, Sandbox, unavailable
from .scoring import OUTCOME_WORDS, GradingSetupError, Plan, Row, build_plan, make_row


class GradingInterrupted(KeyboardInterrupt):
    """Ctrl-C or SIGTERM stopped a batch; the gradebook was completed first (see above)."""

    def __init__(self, signum: int = signal.SIGINT) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


# ----------------------------------------------------------------------------------------
# Inputs: which files, which students, which exercises
# ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Submission:
    """One given path. ``read`` is the file to open (the path with links resolved, checked
    to stay inside its folder), or None when the submission is not read at all, and then
    ``problem`` says why."""

    path: Path  # absolute, links not resolved: the name comes from it
    read: Path | None
    problem: str | None = None


def _walk(folder: Path) -> list[Path]:
    # os.walk does not descend into links to folders: a link cannot pull another folder's
    # notebooks (the instructor's solutions, say) into the batch.
    found = []
    for top, dirs, files in os.walk(folder):
        dirs[:] = [d for d in dirs if d != ".ipynb_checkpoints"]
        found += [Path(top) / f for f in files if f.endswith(".ipynb")]
    return sorted(found)


def _vet(path: Path, folder: Path) -> Submission:
    real = Path(os.path.realpath(path))
    home = os.path.realpath(folder)
    try:
        inside = os.path.commonpath([str(real), home]) == home
    except ValueError:  # another drive
        inside = False
    if not inside:
        return Submission(path, None, "a link to a file outside the submissions folder; "
                                      "not read")
    try:
        mode = os.stat(real).st_mode
    except OSError:
        return Submission(path, None, "a link to nothing (or an unreadable file); not read")
    if not stat.S_ISREG(mode):
        return Submission(path, None, "not a regular file; not read")
    return Submission(path, real)


def _find(paths: Iterable[str | os.PathLike]) -> list[Submission]:
    found: dict[Path, Path] = {}  # absolute path as given -> the folder it must stay in
    for given in paths:
        p = Path(os.path.abspath(given))
        if p.is_dir():
            for q in _walk(p):
                found.setdefault(q, p)
        elif os.path.lexists(p):
            found.setdefault(p, p.parent)
        else:
            raise GradingSetupError(f"no such file or folder: {given}")
    return [_vet(p, folder) for p, folder in found.items()]


def find_submissions(paths: Iterable[str | os.PathLike]) -> list[Path]:
    """Files as given, plus every ``*.ipynb`` under given folders (checkpoints skipped),
    absolute, links not resolved, each path once (see the module docstring)."""
    return [s.path for s in _find(paths)]


def student_names(paths: Sequence[Path]) -> list[str]:
    """File stems; where two stems collide, the paths relative to the common folder (with
    their suffix, should that still collide). Unique for unique paths."""
    names = [p.stem for p in paths]
    if len(set(names)) == len(names):
        return names
    root = Path(os.path.commonpath([str(p.parent) for p in paths]))
    names = [p.relative_to(root).with_suffix("").as_posix() for p in paths]
    if len(set(names)) == len(names):
        return names
    return [p.relative_to(root).as_posix() for p in paths]


def printable(name: str) -> str:
    """``name`` as printable text on one line, injectively (two names never give one).

    A backslash is doubled; a byte that is not UTF-8 (kept by :func:`os.fsdecode` as a lone
    surrogate) becomes ``\\xNN``; any other character that is not printable (a newline, a
    control or format character) becomes ``\\uNNNN`` or ``\\UNNNNNNNN``.
    """
    out = []
    for ch in name:
        code = ord(ch)
        if ch == "\\":
            out.append("\\\\")
        elif 0xDC80 <= code <= 0xDCFF:
            out.append(f"\\x{code - 0xDC00:02x}")
        elif ch.isprintable():
            out.append(ch)
        elif code <= 0xFFFF:
            out.append(f"\\u{code:04x}")
        else:
            out.append(f"\\U{code:08x}")
    return "".join(out)


# Characters that cannot, or should not, appear in a file name on common systems.
_UNSAFE = set('/\\%:*?"<>|')


def _file_key(name: str) -> str:
    # Two names that one file system may store as one file: case-insensitive (macOS,
    # Windows), normalizing Unicode (macOS).
    return unicodedata.normalize("NFC", name).casefold()


def feedback_names(students: Sequence[str], taken: Iterable[str] = ()) -> list[str]:
    """A feedback file name (``<name>.md``) for each student, injective and portable.

    ``students`` are printable names (:func:`printable`): ``/``, ``%`` and the characters
    Windows refuses become ``%XX``, and a leading ``.`` too (no hidden file, no ``..``).
    Names that a case-insensitive file system would merge (or one of ``taken``, such as the
    gradebook's own name) get ``~2``, ``~3``, ... in sorted order; long names are shortened
    and end with a hash of the full name.
    """
    def encode(name: str) -> str:
        text = "".join(f"%{ord(c):02X}" if c in _UNSAFE else c for c in name)
        if text.startswith("."):
            text = "%2E" + text[1:]
        if len(text.encode("utf-8", "surrogatepass")) > 180:
            digest = hashlib.sha256(name.encode("utf-8", "surrogatepass")).hexdigest()[:16]
            while len(text.encode("utf-8", "surrogatepass")) > 160:
                text = text[:-1]
            text = f"{text}~{digest}"
        return text or "%"

    used = {_file_key(t) for t in taken}
    chosen: dict[int, str] = {}
    for i in sorted(range(len(students)), key=lambda i: students[i]):
        base = encode(students[i])
        name, n = base, 1
        while _file_key(name + ".md") in used:
            n += 1
            name = f"{base}~{n}"
        used.add(_file_key(name + ".md"))
        chosen[i] = name + ".md"
    return [chosen[i] for i in range(len(students))]


_MAX_INFER_BYTES = 64 << 20  # bigger notebooks are graded, but not read for the assignment


def _code_sources(path: Path) -> list[str]:
    """The code cells' sources of a notebook (nbformat 3 to 5), [] for anything else."""
    try:
        with open(path, "rb") as f:
            data = f.read(_MAX_INFER_BYTES + 1)
        if len(data) > _MAX_INFER_BYTES:
            return []
        nb = json.loads(data.decode("utf-8", errors="replace"))
    except (OSError, ValueError, RecursionError):
        return []
    if not isinstance(nb, dict):
        return []
    cells = nb.get("cells")
    if not isinstance(cells, list):  # nbformat 3: worksheets of cells, "input" for source
        sheets = nb.get("worksheets")
        cells = [c for ws in sheets if isinstance(ws, dict)
                 for c in (ws.get("cells") if isinstance(ws.get("cells"), list) else [])
                 ] if isinstance(sheets, list) else []
    sources = []
    for cell in cells:
        if not isinstance(cell, dict) or cell.get("cell_type") != "code":
            continue
        source = cell.get("source", cell.get("input", ""))
        if isinstance(source, list):
            source = "".join(s for s in source if isinstance(s, str))
        if isinstance(source, str):
            sources.append(source)
    return sources


def exercise_ids(path: Path) -> set[str]:
    """The exercise ids a notebook holds: its ``# EXERCISE`` headers and ``check("...")``
    cells. Markdown, outputs and comments never count (anyone can write an id there)."""
    found = set()
    for source in _code_sources(path):
        header = exercise_header(source)
        checked = check_call(source)
        found |= {header[0]} if header else set()
        found |= {checked} if checked else set()
    return found


def _some(names: Sequence[str], limit: int = 4) -> str:
    shown = ", ".join(names[:limit])
    return shown + (f" and {len(names) - limit} more" if len(names) > limit else "")


def select_exercises(paths: Sequence[Path], exercises: dict[str, Exercise],
                     assignment: Sequence[str] | None = None,
                     names: Sequence[str] | None = None) -> list[Exercise]:
    """The exercises to grade, in registry order.

    ``assignment`` names exercise ids or chapters (``04_jit_and_the_cache``). Without it:
    every exercise whose header or check cell appears in a submission (one student deleting
    a cell does not remove the column), or all of them if none does; and these must belong
    to one chapter, or :class:`GradingSetupError` asks for ``--assignment`` (names, one per
    path, label the submissions in that message).
    """
    if assignment:
        chosen = set()
        for name in assignment:
            hits = {i for i, ex in exercises.items() if name in (i, ex.chapter)}
            if not hits:
                raise GradingSetupError(f"--assignment {name}: no such exercise or chapter")
            chosen |= hits
        return [ex for i, ex in exercises.items() if i in chosen]
    names = list(names) if names is not None else [p.name for p in paths]
    holders: dict[str, list[str]] = {}  # exercise id -> the submissions that hold it
    for path, name in zip(paths, names):
        for i in exercise_ids(path):
            if i in exercises:
                holders.setdefault(i, []).append(name)
    chosen = [ex for i, ex in exercises.items() if i in holders] or list(exercises.values())
    chapters: dict[str, list[str]] = {}
    for ex in chosen:
        chapters.setdefault(ex.chapter, [])
        for name in holders.get(ex.id, []):
            if name not in chapters[ex.chapter]:
                chapters[ex.chapter].append(name)
    if len(chapters) > 1:
        if not holders:
            raise GradingSetupError(
                "no submission holds an exercise (no EXERCISE header, no check cell), so "
                "the assignment is unknown; choose it with --assignment CHAPTER")
        found = "; ".join(f"{chapter} ({_some(sorted(who)) or 'no submission'})"
                          for chapter, who in sorted(chapters.items()))
        raise GradingSetupError(
            f"the submissions hold exercises of {len(chapters)} chapters: {found}. Grade "
            "one assignment per run: choose it with --assignment CHAPTER (or exercise ids)")
    return chosen


# ----------------------------------------------------------------------------------------
# Writing files: temporary file, then os.replace
# ----------------------------------------------------------------------------------------


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _fsync_folder(folder: Path) -> None:
    with contextlib.suppress(OSError, AttributeError):
        fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def replace_file(path: str | os.PathLike, data: bytes, keep_open: bool = False) -> int | None:
    """Make ``path`` a regular file holding ``data``, atomically: written to a temporary
    file in the same folder, fsync'd, then moved over ``path`` with :func:`os.replace`. A
    symlink at ``path`` is replaced, never followed. ``keep_open``: return a descriptor of
    the new file (positioned at its end), for appending to it."""
    path = Path(path)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name[:40]}.", suffix=".tmp")
    try:
        with contextlib.suppress(OSError, AttributeError):
            os.fchmod(fd, 0o666 & ~_umask())  # as open() would have made it
        _write_all(fd, data)
        os.fsync(fd)
        os.replace(tmp, path)
    except BaseException:
        os.close(fd)
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    _fsync_folder(path.parent)
    if keep_open:
        return fd
    os.close(fd)
    return None


# ----------------------------------------------------------------------------------------
# The gradebook CSV
# ----------------------------------------------------------------------------------------


def _num(x: float) -> str:
    return f"{x:g}"


def _cell(text: str) -> str:
    """A CSV cell that no spreadsheet reads as a formula (a file named
    ``=HYPERLINK(...).ipynb``), injectively: a leading ``'`` is escaped the same way."""
    text = text.encode("utf-8", "backslashreplace").decode("utf-8")  # lone surrogates
    return "'" + text if text[:1] in ("=", "+", "-", "@", "\t", "\r", "'") else text


def _header(ids: Sequence[str]) -> list[str]:
    return ["student", *ids, "total", "max_total", "status", "seconds", "detail"]


def _fields(row: Row, ids: Sequence[str]) -> list[str]:
    return [_cell(row.student), *(_num(row.scores[i].points) for i in ids),
            _num(row.total), _num(row.max_total), row.status, f"{row.seconds:.2f}",
            _cell(row.detail)]


def _csv_bytes(records: Iterable[Sequence[str]]) -> bytes:
    buf = io.StringIO(newline="")
    csv.writer(buf).writerows(records)
    return buf.getvalue().encode("utf-8")


def read_gradebook(path: str | os.PathLike) -> tuple[list[str], list[list[str]]] | None:
    """The header and the complete rows of the gradebook at ``path``, or None when there is
    none. A row cut short (a crash while it was written) or malformed is left out. A
    symlink at ``path`` is refused (:class:`GradingSetupError`), never followed."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except FileNotFoundError:
        return None
    except OSError as exc:
        if os.path.islink(path):
            raise GradingSetupError(f"{path} is a symbolic link; a gradebook is only read "
                                    "from a regular file") from None
        raise GradingSetupError(f"cannot read {path}: {exc}") from None
    with os.fdopen(fd, "rb") as f:
        text = f.read().decode("utf-8", errors="replace")
    records = list(csv.reader(io.StringIO(text, newline="")))
    if not records:
        return None
    header, rows = records[0], records[1:]
    if rows and not text.endswith("\n"):
        rows.pop()  # the last row was being written
    status = header.index("status") if "status" in header else -1
    complete = [r for r in rows if len(r) == len(header) and r[status] in STATUS_ORDER]
    return header, complete


class Gradebook:
    """The CSV at ``path``, written so that no finished row is ever lost.

    :meth:`start` makes ``path`` a regular file holding the header and the rows kept from
    an earlier run, and keeps it open; :meth:`append` adds one row and fsyncs it;
    :meth:`finish` rewrites the whole CSV sorted by student. Each step replaces the file
    through a temporary one or appends whole rows, so at any moment ``path`` holds a
    complete CSV with every row finished so far.
    """

    def __init__(self, path: str | os.PathLike, ids: Sequence[str]) -> None:
        self.path = Path(path)
        self.header = _header(ids)
        self.kept: dict[str, list[str]] = {}  # student cell -> its row, from an earlier run
        self.rows: dict[str, list[str]] = {}  # student cell -> its row, from this run
        self.fd: int | None = None

    def load(self) -> None:
        """Keep the rows of the gradebook already at ``path`` (for ``--resume``)."""
        found = read_gradebook(self.path)
        if found is None:
            return
        header, rows = found
        if header != self.header:
            raise GradingSetupError(
                f"--resume: {self.path} has the columns {', '.join(header)}; this run's are "
                f"{', '.join(self.header)}. Grade into another --out, or without --resume")
        self.kept = {r[0]: r for r in rows}

    def done(self, student_cell: str) -> bool:
        """Whether an earlier run graded this student (``not_graded`` rows do not count)."""
        row = self.kept.get(student_cell)
        return row is not None and row[self.header.index("status")] != "not_graded"

    def start(self, regrade: Iterable[str]) -> None:
        """Write the header and the kept rows, except those of ``regrade`` (students graded
        again in this run)."""
        for cell in regrade:
            self.kept.pop(cell, None)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.fd = replace_file(self.path, _csv_bytes([self.header, *self.kept.values()]),
                               keep_open=True)

    def append(self, row: Row) -> None:
        """Add ``row`` (again: a no-op) and write it through to the disk."""
        fields = _fields(row, self.header[1:-5])
        if self.rows.get(fields[0]) == fields:
            return
        self.rows[fields[0]] = fields  # first: finish() has it, even if the write fails
        if self.fd is not None:
            _write_all(self.fd, _csv_bytes([fields]))
            os.fsync(self.fd)

    def finish(self) -> None:
        """Rewrite the CSV: every row, sorted by student (the same rows give the same
        file)."""
        rows = {**self.kept, **self.rows}
        records = [self.header] + [rows[k] for k in sorted(rows)]
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None
        replace_file(self.path, _csv_bytes(records))


def write_csv(rows: Sequence[Row], plan: Plan, path: str | os.PathLike) -> None:
    """Write the gradebook of ``rows`` at ``path`` at once (see :class:`Gradebook`)."""
    book = Gradebook(path, [ex.id for ex in plan.exercises])
    book.start(())
    for r in rows:
        book.append(r)
    book.finish()


# ----------------------------------------------------------------------------------------
# The batch
# ----------------------------------------------------------------------------------------


def _failed(message: str, kind: str = "grader_error") -> RunResult:
    result = RunResult()
    result.add(kind, message)
    return result


@contextlib.contextmanager
def _sigterm_interrupts() -> Iterator[None]:
    """SIGTERM (``kill``, ``timeout``, a CI cancel) raises GradingInterrupted, as Ctrl-C
    raises KeyboardInterrupt. Only the main thread can handle signals: elsewhere, no-op."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum: int, frame: object) -> None:
        raise GradingInterrupted(signum)

    old = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, old)


@contextlib.contextmanager
def _signals_held() -> Iterator[None]:
    """While the batch winds down (workers killed, rows and CSV written), a second Ctrl-C
    or SIGTERM must not cut it short: they are remembered and raised at the end."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    caught: list[int] = []
    old = {s: signal.signal(s, lambda signum, frame: caught.append(signum))
           for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for s, h in old.items():
            signal.signal(s, h)
    if caught:
        raise GradingInterrupted(caught[0])


def overrun_deadline(limits: Limits) -> float:
    """Seconds after which the main process kills a worker still busy with a submission.
    The worker stops its submission at ``limits.timeout`` itself; the grace is for its last
    interrupt to settle and its kernel to stop. Past it, the worker cannot stop (SIGSTOP,
    stuck in C code)."""
    return limits.timeout + limits.settle_timeout + 15.0


def grade(submissions: Sequence[str | os.PathLike], *, exercises: dict[str, Exercise],
          out: str | os.PathLike | None = None, feedback_dir: str | os.PathLike | None = None,
          hidden_cases: dict[str, tuple[Case, ...]] | None = None,
          assignment: Sequence[str] | None = None, jobs: int | None = None,
          limits: Limits | None = None, progress: bool = True,
          resume: bool = False, sandbox: bool | Sandbox = True) -> list[Row]:
    """Grade ``submissions`` (files or folders); write the CSV and feedback; return the rows
    graded in this run, sorted by student (``resume``: those kept are in the CSV only).

    Each kernel runs in a :mod:`minijit.grading.sandbox` (``sandbox=True``, or a
    :class:`Sandbox` with other limits); where none can start, GradingSetupError says how to
    get one. ``sandbox=False`` runs the kernels as the grader, as ``--no-sandbox`` does.
    """
    from tqdm.auto import tqdm

    limits = _with_sandbox(limits or Limits(), sandbox)
    subs = _find(submissions)
    if not subs:
        raise GradingSetupError("no notebooks to grade")
    students = [printable(n) for n in student_names([s.path for s in subs])]
    readable = [i for i, s in enumerate(subs) if s.read is not None]
    chosen = select_exercises([subs[i].read for i in readable], exercises, assignment,
                              names=[students[i] for i in readable])
    ids = [ex.id for ex in chosen]
    book = Gradebook(out, ids) if out is not None else None
    if book is not None and resume:
        book.load()
    todo = [i for i in range(len(subs))
            if not (book is not None and book.done(_cell(students[i])))]
    feedback: dict[int, Path] = {}
    if feedback_dir is not None:
        root = Path(feedback_dir)
        taken = ([Path(out).name] if out is not None and
                 Path(os.path.abspath(out)).parent == Path(os.path.abspath(root)) else [])
        names = feedback_names([students[i] for i in todo], taken)
        feedback = {i: root / name for i, name in zip(todo, names)}
    queue = [i for i in todo if subs[i].read is not None]
    pool = WorkerPool(max(1, min(jobs or os.cpu_count() or 1, len(queue) or 1)),
                      run_submission, overrun_deadline(limits)) if queue else None
    # The workers boot while the expected values compute. A setup error stops here, before
    # any file is written.
    try:
        plan = build_plan(chosen, hidden_cases)
        try:
            if book is not None:
                book.start(_cell(students[i]) for i in todo)
            if feedback:
                Path(feedback_dir).mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise GradingSetupError(f"cannot write the outputs: {exc}") from None
    except BaseException:
        if pool is not None:
            pool.close(graceful=False)
        raise

    limits = _socket_root(limits)
    rows: dict[int, Row] = {}
    fed: set[int] = set()  # rows whose feedback file is written
    bar = tqdm(total=len(todo), unit="nb", desc="grading", disable=not progress)

    def write_out(i: int) -> None:
        # Idempotent, so that the wind-down can call it again for a row whose writing an
        # interrupt cut short.
        if book is not None:
            book.append(rows[i])
        if i in feedback and i not in fed:
            replace_file(feedback[i], feedback_markdown(rows[i]).encode("utf-8",
                                                                        "backslashreplace"))
            fed.add(i)

    def finish(i: int, run: RunResult) -> None:
        rows[i] = make_row(students[i], subs[i].path, plan, run)
        write_out(i)
        bar.update(1)
        bar.set_postfix_str(f"{students[i]}: {run.status}", refresh=False)

    died: dict[int, str] = {}  # submissions whose worker died once, and how
    interrupted = False
    try:
        with _sigterm_interrupts():
            for i in todo:
                if subs[i].read is None:
                    finish(i, _failed(subs[i].problem or "not read", kind="invalid_notebook"))
            while pool is not None and (queue or pool.busy()):
                if pool.failed:
                    while queue:
                        finish(queue.pop(0), _failed(f"the grader could not start its worker "
                                                     f"processes: {pool.failed}"))
                    if not pool.busy():
                        break
                # Rows are written as results come in, before the next submission starts:
                # with one worker, each row is on disk before the next notebook runs.
                while queue and pool.free():
                    pool.submit(queue[0], (subs[queue[0]].read, plan.probes, limits))
                    queue.pop(0)
                for o in pool.wait():
                    _conclude(o, died, limits, queue, finish)
    except KeyboardInterrupt:
        interrupted = True
        raise
    finally:
        with _signals_held():
            bar.close()
            if pool is not None:
                pool.close(graceful=not interrupted)
            if limits.sandbox is not None:  # the socket folders, even those of killed workers
                shutil.rmtree(limits.sandbox.sockets_in, ignore_errors=True)
            # Ctrl-C, SIGTERM or a grader bug: the submissions not finished get their row.
            for i in todo:
                if i not in rows:
                    finish(i, _failed("the grader stopped before this notebook",
                                      kind="not_graded"))
                write_out(i)
            if book is not None:
                book.finish()
    return sorted(rows.values(), key=lambda r: r.student)


def _with_sandbox(limits: Limits, sandbox: bool | Sandbox) -> Limits:
    if sandbox is False:
        return dataclasses.replace(limits, sandbox=None)
    chosen = sandbox if isinstance(sandbox, Sandbox) else limits.sandbox or Sandbox()
    problem = unavailable(chosen)  # before any worker starts: one clear message
    if problem:
        raise GradingSetupError(f"cannot sandbox the kernels: {problem} {INSTALL_HINT}")
    return dataclasses.replace(limits, sandbox=chosen)


def _socket_root(limits: Limits) -> Limits:
    """One folder for the batch's socket folders, which grade() removes when it ends."""
    if limits.sandbox is None:
        return limits
    sockets = tempfile.mkdtemp(prefix="minijit-sockets-", dir="/tmp")
    return dataclasses.replace(limits, sandbox=dataclasses.replace(limits.sandbox,
                                                                   sockets_in=sockets))


def _conclude(o: Outcome, died: dict[int, str], limits: Limits, queue: list[int],
              finish: Callable[[int, RunResult], None]) -> None:
    """What one pool outcome means for its submission's row."""
    if o.kind == DONE:
        run = o.value
        if o.index in died:
            run.add(NOTE, f"the grader's worker process died while grading this notebook "
                          f"({died[o.index]}); it was graded again")
        finish(o.index, run)
    elif o.kind == DIED:
        if o.index in died:  # twice: the notebook does it
            finish(o.index, _failed(f"the notebook killed the grader's worker process "
                                    f"(twice: {died[o.index]}, then {o.value})",
                                    kind="tampered"))
        else:  # once: maybe the notebook, maybe something else; once more, fresh worker
            died[o.index] = o.value
            queue.insert(0, o.index)
    elif o.kind == OVERRAN:
        run = _failed(f"the submission ran past its {limits.timeout:g} s limit and its "
                      f"grading process did not stop; it was killed after {o.seconds:.0f} s",
                      kind="timeout")
        run.seconds = o.seconds
        finish(o.index, run)
    else:  # FAILED: the worker itself raised
        finish(o.index, _failed(str(o.value)))


# ----------------------------------------------------------------------------------------
# Feedback
# ----------------------------------------------------------------------------------------


def feedback_markdown(row: Row) -> str:
    """The feedback a student sees: scores, failed *public* cases, and the failed hidden ones
    counted by category (with the exercise's hint for a category, where it has one), never
    their inputs or values. A build piece that is minijit's own code gets that one line."""
    lines = [f"# Feedback: {row.student}", "",
             f"**Total: {_num(row.total)} / {_num(row.max_total)} points.** "
             f"Status: `{row.status}`.", ""]
    happened = [e for e in row.events if e.kind != NOTE] + [
        e for e in row.events if e.kind == NOTE]
    if happened:
        lines += ["## What happened when your notebook ran", ""]
        lines += [f"- {e.message}" for e in happened] + [""]
    lines += ["| exercise | points | public cases | hidden cases |", "|---|---|---|---|"]
    for sc in row.scores.values():
        lines.append(f"| {sc.exercise.id} | {_num(sc.points)} / {_num(sc.exercise.points)} | "
                     f"{sc.public[0]}/{sc.public[1]} | {sc.hidden[0]}/{sc.hidden[1]} |")
    for sc in row.scores.values():
        if sc.points == sc.exercise.points:
            continue
        lines += ["", f"## {sc.exercise.id}: {sc.exercise.title}", ""]
        if sc.outcome != "ran":
            lines.append(f"Not graded further: {OUTCOME_WORDS.get(sc.outcome, sc.outcome)}.")
        if sc.not_own:
            lines.append(f"- Every case failed: {sc.not_own}.")
            continue
        for fc in sc.failed_public:
            lines += [f"- **{fc.name}**: expected `{describe(fc.expected)}`, got "
                      f"`{describe(fc.got)}`.", f"  - Why: {fc.reason}",
                      f"  - Hint: {fc.hint}"]
        if sc.failed_hidden and sc.outcome == "ran":
            lines += _hidden_lines(sc.exercise, sc.failed_hidden, sc.hidden[1], sc.specific)
    return "\n".join(lines) + "\n"


def _hidden_lines(ex: Exercise, failed: list[Case], total: int, specific: bool
                  ) -> list[str]:
    """``- 2 of 24 hidden cases failed: a loop body (2) ...``, then, when some case passed
    (``specific``), the exercise's hint for each of those categories that has one
    (``Exercise.case_hints``)."""
    lines = [f"- {len(failed)} of {total} hidden cases failed: {count_categories(failed)} "
             "(their inputs are not shown; test your code beyond the public cases)."]
    for category in dict.fromkeys(category_of(c) for c in failed) if specific else ():
        hint = ex.category_hint(category)
        if hint is not None:
            lines.append(f"  - Hint for {category}: {hint.pitfall}")
    return lines


def write_feedback(rows: Sequence[Row], folder: str | os.PathLike) -> None:
    """One ``<student>.md`` per row in ``folder`` (names: :func:`feedback_names`), each
    written through a temporary file (a symlink in the folder is replaced, not followed)."""
    root = Path(folder)
    root.mkdir(parents=True, exist_ok=True)
    for r, name in zip(rows, feedback_names([r.student for r in rows])):
        replace_file(root / name, feedback_markdown(r).encode("utf-8", "backslashreplace"))
