"""The gradebook CSV: one row per student, never lost.

Each row is appended to the CSV, flushed and fsync'd as its submission ends, so a grader
killed with SIGKILL leaves every finished row; at the end the CSV is rewritten sorted by
student. With ``resume=True`` the students whose rows are already in the gradebook (any
status but ``not_graded``) are not graded again: rows are matched on the ``student``
column.

CSV columns: ``student`` (file stem, or the relative path when two stems collide), one
column per exercise id (points earned, see :mod:`minijit.grading.scoring`), ``total``,
``max_total``, ``status`` (one word, the worst thing that happened: see
:data:`minijit.grading.runner.STATUS_ORDER`), ``seconds``, and ``detail`` (what happened, in
words). No cell can start a spreadsheet formula (:func:`_cell`).
"""

from __future__ import annotations

import csv
import io
import os
from collections.abc import Iterable, Sequence
from pathlib import Path

from .files import replace_file, write_all
from .runner import STATUS_ORDER
from .scoring import GradingSetupError, Plan, Row


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
            write_all(self.fd, _csv_bytes([fields]))
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
