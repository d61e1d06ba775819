"""Class statistics from a gradebook: how each exercise went, and which cases the class fails.

    python -m minijit.grading stats gradebook.csv [--out-dir stats/] [--hidden-cases DIR]

Per exercise (and for the total): how many rows were graded, the mean and median points, how
many scored zero and how many full marks. Per case: the share of graded rows that passed it,
public and hidden cases apart, each named by the case's name (the exercises are loaded to map
a key such as ``ex02_bind/hidden/3`` to its name; a key that cannot be named is shown as is).
Then the hidden cases the class fails most. With ``--out-dir``: ``stats.md`` (the same tables
in markdown), ``cases.csv`` (one row per case) and one histogram PNG per exercise and one for
the total.

The gradebook is read by column name (:func:`read_book`): the exercise columns are those
between ``student`` and ``total``; ``cases`` holds each case's result as ``<key>:<1|0>``
entries separated by spaces. Rows whose status is ``not_graded`` are left out (and counted).
A gradebook written before the ``cases`` column existed still gives the per-exercise tables,
and one line saying that per-case rates need a gradebook written by this version.
"""

from __future__ import annotations

import csv
import io
import math
import os
import re
import statistics
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from .cases import Case, Exercise

LEFT_OUT = "not_graded"  # the batch stopped before these rows were graded: not a score
KINDS = ("public", "hidden", "private")


class ReportError(ValueError):
    """A gradebook (or roster) that cannot be read; the message says which and why."""


@dataclass(frozen=True)
class Book:
    """A gradebook read by column name: ``rows`` as dicts, ``exercises`` the exercise ids."""

    path: str
    header: list[str]
    rows: list[dict[str, str]]
    exercises: list[str]


def read_book(path: str | os.PathLike) -> Book:
    """The gradebook at ``path``, complete rows only (see :func:`gradebook.read_gradebook`)."""
    from .gradebook import read_gradebook
    from .scoring import GradingSetupError

    try:
        found = read_gradebook(path)
    except GradingSetupError as exc:
        raise ReportError(str(exc)) from None
    if found is None:
        raise ReportError(f"{path}: no such gradebook (or it is empty)")
    header, rows = found
    missing = [c for c in ("student", "total", "max_total", "status") if c not in header]
    if missing or header.index("student") > header.index("total"):
        raise ReportError(f"{path} is not a gradebook: it lacks the column(s) "
                          f"{', '.join(missing) or 'student before total'}")
    ids = header[header.index("student") + 1:header.index("total")]
    return Book(str(path), header, [dict(zip(header, r)) for r in rows], ids)


@dataclass(frozen=True)
class ExerciseStats:
    """One exercise's column (or ``total``). ``max_points`` and ``full`` are None when the
    exercise is not among those loaded."""

    id: str
    max_points: float | None
    graded: int
    mean: float
    median: float
    zeros: int
    full: int | None


@dataclass(frozen=True)
class CaseStats:
    """One case: ``passed`` of ``graded`` rows (rows without this case's entry not counted)."""

    key: str
    exercise: str
    kind: str  # public, hidden or private
    name: str  # the case's name, or its key when it cannot be named
    passed: int
    graded: int

    @property
    def rate(self) -> float:
        return self.passed / self.graded if self.graded else math.nan


@dataclass
class ClassStats:
    """Everything ``stats`` reports. ``cases`` is None for a gradebook without a ``cases``
    column; ``points`` keeps each column's graded values (for the histograms)."""

    path: str
    rows: int
    left_out: int
    statuses: dict[str, int]
    exercises: list[ExerciseStats]
    cases: list[CaseStats] | None
    points: dict[str, list[float]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def hardest_hidden(self, n: int = 10) -> list[CaseStats]:
        """The hidden and private cases that fewest rows pass, below 100 %, worst first."""
        hidden = [c for c in self.cases or () if c.kind != "public" and c.passed < c.graded]
        return sorted(hidden, key=lambda c: (c.rate, c.key))[:n]


def case_names(exercises: Mapping[str, Exercise],
               hidden: Mapping[str, tuple[Case, ...]] | None = None) -> dict[str, str]:
    """Case key -> case name, for every case of ``exercises`` (and private ``hidden`` ones)."""
    hidden = hidden or {}
    return {key: case.name for ex in exercises.values()
            for key, case, _ in ex.cases(hidden.get(ex.id, ()))}


def _number(text: str) -> float | None:
    try:
        x = float(text)
    except ValueError:
        return None
    return x if math.isfinite(x) else None


def _column(rows: list[dict[str, str]], col: str, notes: list[str]) -> list[float]:
    values = [_number(r[col]) for r in rows]
    bad = [r["student"] for r, v in zip(rows, values) if v is None]
    if bad:
        notes.append(f"{col}: {len(bad)} cell(s) that are not numbers left out "
                      f"({', '.join(bad[:5])}{', ...' if len(bad) > 5 else ''})")
    return [v for v in values if v is not None]


def _summary(col: str, values: list[float], max_points: float | None) -> ExerciseStats:
    full = None if max_points is None else sum(v >= max_points - 1e-9 for v in values)
    return ExerciseStats(col, max_points, len(values),
                         statistics.fmean(values) if values else math.nan,
                         statistics.median(values) if values else math.nan,
                         sum(v == 0 for v in values), full)


def _parse_cases(cell: str) -> dict[str, bool] | None:
    out = {}
    for entry in cell.split():
        key, sep, flag = entry.rpartition(":")
        if not sep or flag not in ("0", "1") or key.count("/") != 2:
            return None
        out[key] = flag == "1"
    return out


def class_stats(book: Book, exercises: Mapping[str, Exercise] | None = None,
                hidden: Mapping[str, tuple[Case, ...]] | None = None) -> ClassStats:
    """The statistics of ``book``; ``exercises`` (and ``hidden``, the private cases) give
    each exercise's full marks and each case's name."""
    exercises = exercises or {}
    graded = [r for r in book.rows if r["status"] != LEFT_OUT]
    notes: list[str] = []
    result = ClassStats(book.path, len(book.rows), len(book.rows) - len(graded),
                        dict(sorted(Counter(r["status"] for r in graded).items())), [], None,
                        notes=notes)
    for col in book.exercises:
        values = _column(graded, col, notes)
        known = exercises.get(col)
        result.points[col] = values
        result.exercises.append(_summary(col, values, known.points if known else None))
    unknown = [c for c in book.exercises if c not in exercises]
    if unknown:
        notes.append(f"full marks unknown for {', '.join(unknown)}: not among the loaded "
                     "exercises (pass --exercises MODULE)")
    totals = _column(graded, "total", notes)
    maxima = Counter(r["max_total"] for r in graded)
    top = _number(maxima.most_common(1)[0][0]) if maxima else None
    result.points["total"] = totals
    result.exercises.append(_summary("total", totals, top))

    if "cases" not in book.header:
        notes.append("per-case pass rates need a gradebook written by this version of the "
                     "grader (this one has no cases column); regrade to get them")
        return result
    names = case_names(exercises, hidden)
    counts: dict[str, list[int]] = {}
    unreadable = 0
    for r in graded:
        parsed = _parse_cases(r["cases"])
        if parsed is None:
            unreadable += 1
            continue
        for key, ok in parsed.items():
            c = counts.setdefault(key, [0, 0])
            c[0] += ok
            c[1] += 1
    if unreadable:
        notes.append(f"cases: {unreadable} row(s) whose cases cell is not `key:1|0 ...` "
                     "left out of the case rates")
    order = {ex_id: i for i, ex_id in enumerate(book.exercises)}

    def sort_key(key: str):
        ex_id, kind, index = key.split("/")
        return (order.get(ex_id, len(order)), ex_id, KINDS.index(kind) if kind in KINDS
                else len(KINDS), int(index) if index.isdigit() else 0, key)

    result.cases = [CaseStats(k, k.split("/")[0], k.split("/")[1], names.get(k, k), *counts[k])
                    for k in sorted(counts, key=sort_key)]
    nameless = [c for c in result.cases if c.name == c.key]
    if nameless:
        private = sum(c.kind == "private" for c in nameless)
        why = " (pass --hidden-cases DIR to name the private ones)" if private else ""
        notes.append(f"{len(nameless)} case(s) shown by key: not among the loaded "
                     f"exercises' cases{why}")
    return result


def _fmt(x: float | None, digits: int = 2) -> str:
    if x is None:
        return "?"
    return "-" if math.isnan(x) else f"{round(x, digits):g}"


def _rate(c: CaseStats) -> str:
    return f"{100 * c.rate:.0f}% ({c.passed}/{c.graded})" if c.graded else "-"


def _tables(s: ClassStats) -> list[tuple[str, list[str], list[list[str]]]]:
    """(title, header, rows) of each table, shared by the text and the markdown."""
    ex_rows = [[e.id, _fmt(e.max_points), str(e.graded), _fmt(e.mean), _fmt(e.median),
                str(e.zeros), "?" if e.full is None else str(e.full)] for e in s.exercises]
    tables = [("Exercises", ["exercise", "max", "graded", "mean", "median", "zeros", "full"],
               ex_rows)]
    if s.cases is not None:
        for kind in KINDS:
            rows = [[c.exercise, c.name, _rate(c)] for c in s.cases if c.kind == kind]
            if rows:
                tables.append((f"{kind.capitalize()} cases, pass rates",
                               ["exercise", "case", "pass rate"], rows))
        hard = [[c.exercise, c.name, _rate(c)] for c in s.hardest_hidden()]
        tables.append(("The hidden cases the class fails most",
                       ["exercise", "case", "pass rate"], hard))
    return tables


_TEXT = ("exercise", "case")  # the columns aligned left; numbers align right


def _headline(s: ClassStats) -> str:
    statuses = ", ".join(f"{n} {k}" for k, n in s.statuses.items())
    return (f"{s.path}: {s.rows - s.left_out} rows graded ({statuses or 'none'}); "
            f"{s.left_out} not_graded row(s) left out")


def format_text(s: ClassStats) -> str:
    """The statistics as plain-text tables, for a terminal."""
    lines = [_headline(s)]
    for title, header, rows in _tables(s):
        lines += ["", title + ":"]
        if not rows:
            lines.append("  (none: every graded row passes every hidden case)")
            continue
        widths = [max(len(x) for x in col) for col in zip(header, *rows)]
        for row in [header, *rows]:
            cells = [x.ljust(w) if h in _TEXT else x.rjust(w)
                     for x, w, h in zip(row, widths, header)]
            lines.append("  " + "  ".join(cells).rstrip())
    lines += ["", *(f"note: {n}" for n in s.notes)] if s.notes else []
    return "\n".join(lines) + "\n"


def _md(text: str) -> str:
    # Case names and ids come from exercise modules: keep them from breaking the table.
    return re.sub(r"([\\`*_\[\]<>|#])", r"\\\1", text).replace("\n", " ")


def format_markdown(s: ClassStats) -> str:
    """The statistics as markdown tables (``stats.md``)."""
    out = ["# Class statistics", "", _md(_headline(s))]
    for title, header, rows in _tables(s):
        out += ["", f"## {title}", ""]
        if not rows:
            out.append("None: every graded row passes every hidden case.")
            continue
        out.append("| " + " | ".join(header) + " |")
        out.append("|" + "|".join("---" if h in _TEXT else "---:" for h in header) + "|")
        out += ["| " + " | ".join(_md(x) for x in row) + " |" for row in rows]
    out += ["", *(f"- {_md(n)}" for n in s.notes)] if s.notes else []
    return "\n".join(out) + "\n"


def cases_csv(s: ClassStats) -> bytes:
    """One row per case: exercise, kind, key, name, passed, graded, pass_rate."""
    from .gradebook import _cell

    buf = io.StringIO(newline="")
    w = csv.writer(buf)
    w.writerow(["exercise", "kind", "key", "name", "passed", "graded", "pass_rate"])
    for c in s.cases or ():
        w.writerow([_cell(c.exercise), c.kind, _cell(c.key), _cell(c.name), c.passed,
                    c.graded, _fmt(c.rate, 4)])
    return buf.getvalue().encode("utf-8")


def histogram_png(values: list[float], top: float | None, title: str) -> bytes:
    """A histogram of ``values`` over ten bins from 0 to ``top``, as PNG bytes."""
    import numpy as np
    from matplotlib.figure import Figure  # no pyplot: no global backend is chosen

    top = top if top and top > 0 else max(values + [1.0])
    fig = Figure(figsize=(5, 3), dpi=100)
    ax = fig.subplots()
    ax.hist(values, bins=np.linspace(0, top, 11), color="#4c72b0", edgecolor="white")
    ax.set(title=title, xlabel="points", ylabel="rows")
    ax.yaxis.get_major_locator().set_params(integer=True)
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", metadata={"Software": None})
    return buf.getvalue()


def write_outputs(s: ClassStats, out_dir: str | os.PathLike) -> list[Path]:
    """Write ``stats.md``, ``cases.csv`` and the histograms into ``out_dir``; their paths."""
    from .files import replace_file

    folder = Path(out_dir)
    folder.mkdir(parents=True, exist_ok=True)
    files = {"stats.md": format_markdown(s).encode("utf-8"), "cases.csv": cases_csv(s)}
    for e in s.exercises:
        safe = re.sub(r"[^A-Za-z0-9_.-]", "_", e.id)
        title = f"{e.id}: {e.graded} rows, out of {_fmt(e.max_points)} points"
        files[f"hist_{safe}.png"] = histogram_png(s.points[e.id], e.max_points, title)
    for name, data in files.items():
        replace_file(folder / name, data)
    return [folder / name for name in files]
