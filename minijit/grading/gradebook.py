"""The gradebook CSV: one row per student, never lost, always current.

Columns, found by name (the exercise columns are those between ``student`` and ``total``):

    student, <one column per exercise id>, total, max_total, late_penalty, status, seconds,
    submitted, sha256, overrides, detail, cases

``student`` is the file stem (see :func:`minijit.grading.submissions.student_names`); an
exercise column holds the points earned (:mod:`minijit.grading.scoring`), after any
instructor's override; ``total`` is their sum minus ``late_penalty``, never below 0;
``status`` is one word, the worst thing that happened
(:data:`minijit.grading.runner.STATUS_ORDER`); ``submitted`` is the submission time when a
late policy was given; ``sha256`` is the first 16 hex digits (64 bits: an accidental
collision between two versions of one notebook is out of reach) of the SHA-256 of the
graded notebook's bytes, empty for a file not read; ``overrides`` records each override as
``ex02_bind 1.5->2: comment`` (``; ``-separated), so the original points are recoverable
(:mod:`minijit.grading.adjust`); ``detail`` says what happened, in words; ``cases`` holds
each case's result as ``<case key>:<1|0>`` entries separated by spaces, keys as
:meth:`minijit.grading.cases.Exercise.cases` makes them (``ex02_bind/hidden/3:0``). No cell
can start a spreadsheet formula (:func:`_cell`).

Never lost: each row is appended to the CSV, flushed and fsync'd as its submission ends, so
a grader killed with SIGKILL leaves every finished row; at the end the CSV is rewritten
sorted by student. A run merges into the gradebook already at its path: the rows of
students it does not grade are kept, and the file it replaces is first copied to a
numbered backup (``gradebook.csv.~1~``, ``~2~``, ...: the state before every run stays
recoverable, not only before the last one; a file equal to the last backup adds none). A
gradebook written before some of these columns existed is read by name, its missing cells
empty.
"""

from __future__ import annotations

import csv
import io
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from .files import replace_file, write_all
from .runner import STATUS_ORDER
from .scoring import GradingSetupError, Plan, Row

Record = dict[str, str]  # one gradebook row, by column name

AFTER = ("total", "max_total", "late_penalty", "status", "seconds", "submitted", "sha256",
         "overrides", "detail", "cases")

_CASES = re.compile(r"(\S+:[01]( \S+:[01])*)?")


def number(x: float) -> str:
    """A number as a gradebook cell holds it (``4``, ``3.2``)."""
    return f"{x:g}"


def _cell(text: str) -> str:
    """A CSV cell that no spreadsheet reads as a formula (a file named
    ``=HYPERLINK(...).ipynb``), injectively: a leading ``'`` is escaped the same way."""
    text = text.encode("utf-8", "backslashreplace").decode("utf-8")  # lone surrogates
    return "'" + text if text[:1] in ("=", "+", "-", "@", "\t", "\r", "'") else text


def header(ids: Sequence[str]) -> list[str]:
    return ["student", *ids, *AFTER]


def exercise_columns(columns: Sequence[str]) -> list[str]:
    """The exercise ids of a gradebook's header: the columns between student and total."""
    if "student" not in columns or "total" not in columns:
        return []
    return list(columns[columns.index("student") + 1:columns.index("total")])


def case_results(row: Row) -> str:
    """The ``cases`` cell: every case of the row's exercises, in the plan's order, ``key:1``
    passed or ``key:0``, as :func:`minijit.grading.scoring.score_exercise` decided."""
    return " ".join(f"{key}:{int(ok)}" for sc in row.scores.values()
                    for key, ok in sc.cases.items())


def record(row: Row, ids: Sequence[str], sha256: str = "", cases: str = "") -> Record:
    """``row`` as the grader produced it, before any adjustment."""
    return {"student": _cell(row.student),
            **{i: number(row.scores[i].points) for i in ids},
            "total": number(row.total), "max_total": number(row.max_total), "late_penalty": "0",
            "status": row.status, "seconds": f"{row.seconds:.2f}", "submitted": "",
            "sha256": sha256, "overrides": "", "detail": _cell(row.detail), "cases": cases}


def _csv_bytes(records: Iterable[Sequence[str]]) -> bytes:
    buf = io.StringIO(newline="")
    csv.writer(buf).writerows(records)
    return buf.getvalue().encode("utf-8")


def _complete(columns: list[str], row: list[str]) -> bool:
    if len(row) != len(columns):
        return False
    if "status" in columns and row[columns.index("status")] not in STATUS_ORDER:
        return False
    return "cases" not in columns or _CASES.fullmatch(row[columns.index("cases")]) is not None


def read_gradebook(path: str | os.PathLike) -> tuple[list[str], list[list[str]]] | None:
    """The header and the complete rows of the gradebook at ``path``, or None when there is
    none. A row cut short (a crash while it was written) or malformed (wrong length, an
    unknown status, a ``cases`` cell that is not ``key:0|1`` entries) is left out. A
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
    columns, rows = records[0], records[1:]
    if rows and not text.endswith("\n"):
        rows.pop()  # the last row was being written
    return columns, [r for r in rows if _complete(columns, r)]


def read_records(path: str | os.PathLike) -> tuple[list[str], dict[str, Record]] | None:
    """The exercise ids and the rows (by student cell, the last row of a student winning) of
    the gradebook at ``path``, each with every column of today's header (cells a gradebook
    written before some column existed lacks are empty); None when there is none.
    GradingSetupError when the file is no gradebook (no ``student`` or ``total`` column)."""
    found = read_gradebook(path)
    if found is None:
        return None
    columns, rows = found
    if not {"student", "total", "status"} <= set(columns):
        raise GradingSetupError(f"{path} is not a gradebook (its first line has no student, "
                                "total and status columns); choose another --out")
    ids, student = exercise_columns(columns), columns.index("student")
    wanted = header(ids)
    return ids, {r[student]: {c: dict(zip(columns, r)).get(c, "") for c in wanted}
                 for r in rows}


def next_backup(path: Path) -> Path:
    """``path`` with the first free ``.~N~`` suffix (GNU ``cp --backup=numbered``)."""
    n = 1
    while os.path.lexists(f"{path}.~{n}~"):
        n += 1
    return Path(f"{path}.~{n}~")


class Gradebook:
    """The CSV at ``path``, written so that no finished row is ever lost.

    :meth:`load` reads the rows already there; :meth:`start` backs that file up, then makes
    ``path`` a regular file holding the header and the rows kept from it, and keeps it open;
    :meth:`append` adds one row and fsyncs it; :meth:`finish` rewrites the whole CSV sorted
    by student. Each step replaces the file through a temporary one or appends whole rows,
    so at any moment ``path`` holds a complete CSV with every row finished so far.
    """

    def __init__(self, path: str | os.PathLike, ids: Sequence[str]) -> None:
        self.path = Path(path)
        self.ids = list(ids)
        self.header = header(ids)
        self.old: dict[str, Record] = {}  # student cell -> its row, as found at path
        self.kept: dict[str, Record] = {}  # rows of students not graded in this run
        self.rows: dict[str, Record] = {}  # student cell -> its row, from this run
        self.backup: Path | None = None
        self.fd: int | None = None

    def load(self, resume: bool = False) -> None:
        """Read the rows already at ``path``. GradingSetupError when its exercise columns
        differ from this run's. A symlink there is no gradebook: it is replaced, never read
        (with ``resume``, where rows were wanted from it: an error)."""
        if os.path.islink(self.path) and not resume:
            return
        found = read_records(self.path)
        if found is None:
            return
        ids, rows = found
        if ids != self.ids:
            raise GradingSetupError(
                f"{self.path} grades the exercises {', '.join(ids) or '(none)'}; this run "
                f"grades {', '.join(self.ids)}. One gradebook holds one assignment: grade "
                "into another --out (or choose the same exercises with --assignment)")
        self.old = rows

    def start(self, kept: Mapping[str, Record]) -> None:
        """Back up the file at ``path`` (if any), then write the header and ``kept``."""
        self.kept = dict(kept)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        if os.path.isfile(self.path) and not os.path.islink(self.path):
            with open(self.path, "rb") as f:
                data = f.read()
            if data:
                self.backup = next_backup(self.path)
                last = Path(f"{self.path}.~{int(self.backup.name.rsplit('~', 2)[1]) - 1}~")
                if last.is_file() and not last.is_symlink() and last.read_bytes() == data:
                    self.backup = last  # a run that changed nothing adds no copy of it
                else:
                    replace_file(self.backup, data)
        self.fd = replace_file(self.path, self._bytes(self.kept.values()), keep_open=True)

    def _bytes(self, rows: Iterable[Record], with_header: bool = True) -> bytes:
        records = [[r.get(c, "") for c in self.header] for r in rows]
        return _csv_bytes([self.header, *records] if with_header else records)

    def append(self, row: Record) -> None:
        """Add ``row`` (again: a no-op) and write it through to the disk."""
        if self.rows.get(row["student"]) == row:
            return
        self.rows[row["student"]] = row  # first: finish() has it, even if the write fails
        if self.fd is not None:
            write_all(self.fd, self._bytes([row], with_header=False))
            os.fsync(self.fd)

    def finish(self) -> None:
        """Rewrite the CSV: every row, sorted by student (the same rows give the same
        file)."""
        rows = {**self.kept, **self.rows}
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None
        replace_file(self.path, self._bytes(rows[k] for k in sorted(rows)))


def write_records(path: str | os.PathLike, ids: Sequence[str],
                  rows: Mapping[str, Record]) -> Path | None:
    """Write a gradebook of ``rows`` at ``path`` at once (backing up the file there, whose
    backup is returned)."""
    book = Gradebook(path, ids)
    book.start({})
    for k in sorted(rows):
        book.append(rows[k])
    book.finish()
    return book.backup


def write_csv(rows: Sequence[Row], plan: Plan, path: str | os.PathLike) -> None:
    """Write the gradebook of ``rows`` at ``path`` at once (see :class:`Gradebook`)."""
    ids = [ex.id for ex in plan.exercises]
    write_records(path, ids, {_cell(r.student): record(r, ids) for r in rows})
