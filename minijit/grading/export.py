"""A gradebook as the file a learning management system imports, through a roster.

    python -m minijit.grading export gradebook.csv --roster roster.csv --format canvas \\
        --out canvas.csv [--assignment-name NAME] [--points-possible] [--zero-missing]

**The roster** (:func:`read_roster`) is a CSV with a header row naming its columns, in any
order (names are matched without regard to case or surrounding spaces; a UTF-8 byte-order
mark, as Excel writes, is fine):

    student   the gradebook's ``student`` cell: the notebook's file stem, or the nbgrader
              student folder (required)
    id        the student ID: Canvas's "SIS User ID", Moodle's "ID number", Gradescope's
              "SID" (required)
    name      the full name (required)
    email     optional: Moodle and Gradescope can match on it
    section   optional
    login     optional: Canvas's "SIS Login ID", Moodle's "username"

Any other column is an error (a misspelt ``e-mail`` must not vanish silently), and so is a
missing required value, a repeated student, id, email or login, or an id, email or login that
starts with ``=``, ``+``, ``-`` or ``@`` (a spreadsheet would read it as a formula, and the
escaped value would match no one): each error names the line.

**The formats** (the score is the gradebook's ``total``: exercise points less any late
penalty, after overrides). Every cell is written so that no spreadsheet reads it as a formula
(:func:`minijit.grading.gradebook._cell`).

- ``canvas``: ``Student, ID, SIS User ID, SIS Login ID, Section, <assignment>``, and with
  ``--points-possible`` a second row ``Points Possible, , , , , <max_total>``. Canvas's
  guide "How do I import grades in the Gradebook?"
  (https://community.canvaslms.com/t5/Instructor-Guide/How-do-I-import-grades-in-the-Gradebook/ta-p/807);
  its importer (``lib/gradebook_importer.rb`` in instructure/canvas-lms) wants the first
  column to name the student, the second ``ID``, then ``SIS User ID`` and ``SIS Login ID``,
  and ``Section`` last before the assignments; a row whose first cell is ``Points Possible``
  sets the points of a new assignment. ``ID`` (Canvas's own user number) is left empty, so
  Canvas matches each row on the SIS User ID, then the SIS Login ID, then the name. The
  assignment column ``Name (1234)`` updates the assignment with that Canvas id, a title
  updates the assignment of that title, and any other name creates a new assignment.
- ``moodle``: ``ID number``, ``Email address`` and ``Username`` (each only when every row
  has one), ``Full name``, ``<assignment>``. In Moodle's "Import grades from CSV"
  (https://docs.moodle.org/en/Grade_import) map "Identify user by" from the ``ID number``
  column to ``useridnumber`` (or ``Email address`` to ``useremail``, ``Username`` to
  ``username``), and the grade column to the grade item. Moodle's importer
  (``grade/import/csv/classes/load_data.php``) aborts the whole import when one row's user is
  not found, and gives a row with a blank identifier to the row before it, which is why a
  column is written only when every row has a value.
- ``gradescope``: ``Name, SID, Email, Section, <one column per exercise>, Total Score,
  Max Points``. Gradescope documents a CSV upload for its roster (``Name`` and ``Email``
  required, ``SID`` and section columns optional:
  https://guides.gradescope.com/hc/en-us/articles/21926598776333), and its grade download
  names the student ID ``SID`` and the score ``Total Score``; we found no documented CSV
  import of scores, so this file carries Gradescope's own column names for tools and scripts
  that read its grade downloads (``Max Points`` follows the same download, unchecked).
- ``csv``: ``student, id, name, email, section, login, <exercise ids>, total, max_total``,
  ``late_penalty`` when the gradebook has it, and ``status``: everything, for a spreadsheet.

**Who is written.** One row per roster student with a grade, in roster order. Nobody is
dropped silently; :class:`Export` lists, and the command prints on stderr:

- ``unknown``: gradebook students not in the roster (their grades are not in the file);
- ``ungraded``: roster students whose row is ``not_graded`` or ``grader_error`` (no grade to
  give: grade them again);
- ``absent``: roster students without a gradebook row (no submission); with
  ``--zero-missing`` they get 0, otherwise no row (an LMS keeps what it has).

The file is always written. The exit status is 0 when every grade in the gradebook reached
the file, 1 when some did not (``unknown`` or ``ungraded``: the file is incomplete), and 2
for a bad roster, gradebook or option (nothing written).
"""

from __future__ import annotations

import csv
import io
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from .stats import Book, ReportError

FORMATS = ("canvas", "moodle", "gradescope", "csv")
REQUIRED = ("student", "id", "name")
OPTIONAL = ("email", "section", "login")
IDENTIFIERS = ("id", "email", "login")  # values an LMS matches on, written verbatim
NO_GRADE = ("not_graded", "grader_error")  # rows whose total is no grade at all
_FORMULA = ("=", "+", "-", "@")


class RosterError(ReportError):
    """The roster cannot be used; the message names the line and what is wrong."""


@dataclass(frozen=True)
class Student:
    """One roster line (``line``: where it starts in the file, 1-based)."""

    student: str
    id: str
    name: str
    email: str = ""
    section: str = ""
    login: str = ""
    line: int = 0


def read_roster(path: str | os.PathLike) -> list[Student]:
    """The students of the roster CSV at ``path``, in file order (see the module docstring)."""
    try:
        text = Path(path).read_bytes().decode("utf-8-sig")
    except FileNotFoundError:
        raise RosterError(f"{path}: no such roster") from None
    except UnicodeDecodeError as exc:
        raise RosterError(f"{path}: not UTF-8 text (byte {exc.start}); save the roster as "
                          "'CSV UTF-8'") from None
    reader = csv.reader(io.StringIO(text, newline=""))
    try:
        records, line = [], 1
        for record in reader:
            records.append((line, record))
            line = reader.line_num + 1
    except csv.Error as exc:
        raise RosterError(f"{path}, line {reader.line_num}: not CSV ({exc})") from None
    records = [(n, r) for n, r in records if any(c.strip() for c in r)]
    if not records:
        raise RosterError(f"{path} is empty; its first line names the columns: "
                          f"{','.join(REQUIRED)} (and optionally {','.join(OPTIONAL)})")
    head_line, head = records[0]
    header = [c.strip().lower() for c in head]
    where = f"{path}, line {head_line}"
    for i, col in enumerate(header):
        if col not in REQUIRED + OPTIONAL:
            raise RosterError(f"{where}: unknown column {head[i]!r}; a roster has the columns "
                              f"{', '.join(REQUIRED)} and optionally {', '.join(OPTIONAL)}")
        if header.index(col) != i:
            raise RosterError(f"{where}: the column {col!r} appears twice")
    missing = [c for c in REQUIRED if c not in header]
    if missing:
        raise RosterError(f"{where}: the header lacks {', '.join(missing)} (it has "
                          f"{', '.join(header)}); the first line must name the columns")
    students: list[Student] = []
    seen: dict[tuple[str, str], int] = {}
    for line, record in records[1:]:
        where = f"{path}, line {line}"
        if len(record) != len(header):
            raise RosterError(f"{where}: {len(record)} fields, the header has {len(header)} "
                              "(a comma inside a name needs quotes)")
        values = {col: cell.strip() for col, cell in zip(header, record)}
        for col in REQUIRED:
            if not values[col]:
                raise RosterError(f"{where}: the {col} is empty")
        for col in IDENTIFIERS:
            value = values.get(col, "")
            if value[:1] in _FORMULA or "\n" in value or "\r" in value:
                raise RosterError(f"{where}: the {col} {value!r} starts with {value[:1]!r} or "
                                  "holds a line break; an LMS could not match it")
        for col in ("student", *IDENTIFIERS):
            value = values.get(col, "")
            if value and (col, value) in seen:
                raise RosterError(f"{where}: the {col} {value!r} is already on line "
                                  f"{seen[col, value]}")
            seen[col, value] = line
        students.append(Student(**values, line=line))
    return students


@dataclass
class Export:
    """The file to write (``records``, header first) and who is not in it, and why."""

    records: list[list[str]]
    unknown: list[str] = field(default_factory=list)  # gradebook students not in the roster
    ungraded: list[Student] = field(default_factory=list)  # rows not_graded / grader_error
    absent: list[Student] = field(default_factory=list)  # roster students without a row

    @property
    def complete(self) -> bool:
        """Whether every grade in the gradebook is in the file."""
        return not self.unknown and not self.ungraded

    def warnings(self) -> list[str]:
        def names(students: Sequence[Student]) -> str:
            return "; ".join(f"{s.student} ({s.name}, line {s.line})" for s in students)

        out = []
        if self.unknown:
            out.append(f"{len(self.unknown)} gradebook student(s) not in the roster, left "
                       f"out: {'; '.join(self.unknown)}")
        if self.ungraded:
            out.append(f"{len(self.ungraded)} student(s) not graded (not_graded or "
                       f"grader_error), left out: {names(self.ungraded)}")
        if self.absent:
            out.append(f"{len(self.absent)} roster student(s) without a submission: "
                       f"{names(self.absent)}")
        return out


def _match(book: Book, roster: Sequence[Student]) -> tuple[dict[str, Student], list[str]]:
    """Gradebook student cell -> roster entry, and the cells no roster entry names. A roster
    names a student by the stem as it is, or as the gradebook writes it (escaped)."""
    from .gradebook import _cell
    from .submissions import printable

    by_cell: dict[str, Student] = {}
    for s in roster:
        for form in {s.student, _cell(printable(s.student))}:
            other = by_cell.setdefault(form, s)
            if other is not s:
                raise RosterError(f"roster lines {other.line} and {s.line} name the same "
                                  f"gradebook student {form!r}")
    cells = [r["student"] for r in book.rows]
    return ({c: by_cell[c] for c in cells if c in by_cell},
            [c for c in cells if c not in by_cell])


def _max_total(book: Book) -> str:
    seen = [r["max_total"] for r in book.rows if r["status"] not in NO_GRADE]
    return max(set(seen), key=seen.count) if seen else ""


def build_export(book: Book, roster: Sequence[Student], fmt: str, assignment: str,
                 points_possible: bool = False, zero_missing: bool = False) -> Export:
    """The ``fmt`` file of ``book`` for the students of ``roster`` (see the module docstring)."""
    from .gradebook import _cell

    if fmt not in FORMATS:
        raise ReportError(f"unknown format {fmt!r}; choose one of {', '.join(FORMATS)}")
    if points_possible and fmt != "canvas":
        raise ReportError("--points-possible writes Canvas's Points Possible row; the csv and "
                          "gradescope formats always carry max_total, and Moodle takes the "
                          "maximum from its grade item")
    matched, unknown = _match(book, roster)
    rows = {matched[r["student"]].student: r for r in book.rows if r["student"] in matched}
    export = Export([], unknown=unknown)
    graded: list[tuple[Student, dict[str, str] | None]] = []
    for s in roster:
        row = rows.get(s.student)
        if row is None:
            export.absent.append(s)
            if zero_missing:
                graded.append((s, None))
        elif row["status"] in NO_GRADE:
            export.ungraded.append(s)
        else:
            graded.append((s, row))

    top = _max_total(book)
    late = "late_penalty" in book.header

    def cell(row: dict[str, str] | None, col: str) -> str:
        if row is None:  # a roster student without a submission, under --zero-missing
            return {"status": "no_submission", "max_total": top}.get(col, "0")
        return row.get(col, "")

    if fmt == "canvas":
        header = ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", assignment]
        body = [[s.name, "", s.id, s.login, s.section, cell(r, "total")] for s, r in graded]
        if points_possible:
            body.insert(0, ["Points Possible", "", "", "", "", top])
    elif fmt == "moodle":
        optional = [(title, col) for title, col in (("Email address", "email"),
                                                    ("Username", "login"))
                    if graded and all(getattr(s, col) for s, _ in graded)]
        header = ["ID number", *(t for t, _ in optional), "Full name", assignment]
        body = [[s.id, *(getattr(s, c) for _, c in optional), s.name, cell(r, "total")]
                for s, r in graded]
    elif fmt == "gradescope":
        header = ["Name", "SID", "Email", "Section", *book.exercises, "Total Score",
                  "Max Points"]
        body = [[s.name, s.id, s.email, s.section, *(cell(r, e) for e in book.exercises),
                 cell(r, "total"), cell(r, "max_total")] for s, r in graded]
    else:
        tail = ["total", "max_total", *(["late_penalty"] if late else []), "status"]
        header = ["student", "id", "name", "email", "section", "login", *book.exercises, *tail]
        body = [[s.student, s.id, s.name, s.email, s.section, s.login,
                 *(cell(r, c) for c in [*book.exercises, *tail])] for s, r in graded]
    export.records = [[_cell(c) for c in rec] for rec in [header, *body]]
    return export


def write_export(export: Export, path: str | os.PathLike) -> None:
    """Write ``export``'s records at ``path`` as UTF-8 CSV, atomically (links replaced)."""
    from .files import replace_file

    buf = io.StringIO(newline="")
    csv.writer(buf).writerows(export.records)
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    replace_file(path, buf.getvalue().encode("utf-8"))
