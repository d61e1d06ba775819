"""The instructor's adjustments on top of the grader's points: overrides and late work.

Applied by every run to every gradebook row, the rows kept from an earlier run included,
always from the grader's own points: a row's ``overrides`` cell records each override as
``ex02_bind 1.5->2: comment`` (entries joined by ``; ``, a ``;`` in a comment written
``,``), so :meth:`Adjuster.apply` first puts the original points back, then applies this
run's overrides. The run's options say it all: a run without ``--overrides`` restores
every row's original points, one without a late policy removes every late penalty.

- **Overrides** (:func:`read_overrides`): a CSV ``student,exercise,points,comment`` (the
  comment column may be left out); ``student`` as in the gradebook's ``student`` column.
- **Late work** (:func:`late_policy`): a deadline, each student's submission time (a CSV
  with a ``student`` column and a ``submitted`` column; Canvas's ``submitted_at`` and
  Moodle's grading worksheet, ``Full name`` and ``Last modified (submission)``, are read
  too; names as in the gradebook's ``student`` column), and a penalty: a fraction of
  ``max_total`` per day late, a day begun counting as a day, up to a cap. A time without
  a UTC offset is in the deadline's time zone.

``total`` is the sum of the exercise columns minus ``late_penalty``, never below 0.
:func:`adjustments` says in words what was applied, for the student's feedback.
"""

from __future__ import annotations

import csv
import math
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from .gradebook import number
from .scoring import GradingSetupError

_ENTRY = re.compile(r"(\S+) (\S+)->(\S+)(?:: (.*))?")
_STUDENT = ("student", "Full name")
_TIME = ("submitted", "submitted_at", "Last modified (submission)")
_MOODLE_TIMES = ("%A, %d %B %Y, %I:%M %p", "%A, %B %d, %Y, %I:%M %p")


@dataclass(frozen=True)
class Override:
    points: float
    comment: str
    where: str  # "overrides.csv line 3"


@dataclass(frozen=True)
class LatePolicy:
    deadline: datetime
    per_day: float  # fraction of max_total per day late (a day begun counts)
    cap: float = 1.0  # the most a penalty takes, as a fraction of max_total
    times: dict[str, datetime] = field(default_factory=dict)  # student -> submitted

    def days_late(self, submitted: datetime) -> int:
        seconds = (submitted - self.deadline).total_seconds()
        return math.ceil(seconds / 86400) if seconds > 0 else 0

    def fraction(self, submitted: datetime) -> float:
        return min(self.cap, self.per_day * self.days_late(submitted))


def _rows(path: str | os.PathLike, what: str) -> tuple[list[str], list[tuple[int, dict]]]:
    try:
        with open(path, newline="", encoding="utf-8-sig") as f:
            reader = csv.DictReader(f)
            rows = [(reader.line_num, r) for r in reader]
            return list(reader.fieldnames or []), rows
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        raise GradingSetupError(f"cannot read the {what} file {path}: {exc}") from None


def _column(columns: list[str], names: Sequence[str], path: object, what: str) -> str:
    for name in names:
        if name in columns:
            return name
    raise GradingSetupError(f"{path}: the {what} file needs a {' or '.join(names)} column "
                            f"in its first line (found: {', '.join(columns) or 'nothing'})")


def read_overrides(path: str | os.PathLike, points: Mapping[str, float]
                   ) -> dict[str, dict[str, Override]]:
    """student -> exercise id -> Override, from the CSV at ``path``; ``points`` is each
    exercise's worth (an override must lie between 0 and it). GradingSetupError names the
    line and what is wrong with it."""
    columns, rows = _rows(path, "overrides")
    for name in ("student", "exercise", "points"):
        _column(columns, (name,), path, "overrides")
    found: dict[str, dict[str, Override]] = {}
    for line, r in rows:
        where = f"{path} line {line}"
        student, ex = (r.get("student") or "").strip(), (r.get("exercise") or "").strip()
        text = (r.get("points") or "").strip()
        if not student and not ex and not text:
            continue  # a blank line
        if not student:
            raise GradingSetupError(f"{where}: no student")
        if ex not in points:
            raise GradingSetupError(f"{where}: no exercise {ex!r} in this gradebook (its "
                                    f"exercises: {', '.join(points)})")
        try:
            value = float(text)
        except ValueError:
            raise GradingSetupError(f"{where}: points {text!r} is not a number") from None
        if not 0 <= value <= points[ex]:
            raise GradingSetupError(f"{where}: {value:g} points for {ex}, which is worth "
                                    f"{points[ex]:g}; give 0 to {points[ex]:g}")
        if ex in found.get(student, {}):
            raise GradingSetupError(f"{where}: {student} {ex} is overridden twice (also "
                                    f"{found[student][ex].where})")
        comment = " ".join((r.get("comment") or "").split()).replace(";", ",")
        found.setdefault(student, {})[ex] = Override(value, comment, where)
    return found


def parse_time(text: str, where: str) -> datetime | None:
    """An ISO 8601 time, or Moodle's ``Wednesday, 10 June 2026, 2:14 PM``; None for an
    empty cell or ``-`` (no submission)."""
    text = text.strip()
    if text in ("", "-"):
        return None
    try:
        return datetime.fromisoformat(text)
    except ValueError:
        pass
    for fmt in _MOODLE_TIMES:
        try:
            return datetime.strptime(text, fmt)
        except ValueError:
            continue
    raise GradingSetupError(f"{where}: {text!r} is not a time (write it as ISO 8601, "
                            "e.g. 2026-03-01T23:59:00+01:00)")


def _in_zone(t: datetime, deadline: datetime, where: str) -> datetime:
    if t.tzinfo is None:
        return t.replace(tzinfo=deadline.tzinfo)
    if deadline.tzinfo is None:
        raise GradingSetupError(f"{where}: this time has a UTC offset and the deadline has "
                                "none; give the deadline one (e.g. 2026-03-01T23:59+01:00)")
    return t


def late_policy(deadline: str, times: str | os.PathLike, per_day: float,
                cap: float = 1.0) -> LatePolicy:
    """The late policy of ``--deadline``, ``--submission-times`` and ``--late-penalty``
    (``--late-cap``), each checked; GradingSetupError names what is wrong."""
    when = parse_time(deadline, "--deadline")
    if when is None:
        raise GradingSetupError("--deadline: give a time, e.g. 2026-03-01T23:59:00+01:00")
    for name, value in (("--late-penalty", per_day), ("--late-cap", cap)):
        if not 0 <= value <= 1:
            raise GradingSetupError(f"{name} {value:g}: give a fraction of the full marks, "
                                    "between 0 and 1 (0.1 is 10%)")
    columns, rows = _rows(times, "submission times")
    who = _column(columns, _STUDENT, times, "submission times")
    column = _column(columns, _TIME, times, "submission times")
    found: dict[str, datetime] = {}
    for line, r in rows:
        where = f"{times} line {line}"
        student = (r.get(who) or "").strip()
        t = parse_time(r.get(column) or "", where)
        if student and t is not None:
            if student in found:
                raise GradingSetupError(f"{where}: a second time for {student}")
            found[student] = _in_zone(t, when, where)
    return LatePolicy(when, per_day, cap, found)


def _names(cell: str) -> tuple[str, ...]:
    """A student cell and the name it escapes (without the ``'`` that keeps a leading ``=``
    from being a formula): an instructor may write either."""
    return (cell, cell[1:]) if cell.startswith("'") else (cell,)


def recorded(cell: str, student: str = "") -> list[tuple[str, str, str, str]]:
    """The overrides a gradebook cell records: ``(exercise, original, new, comment)``."""
    entries = []
    for text in filter(None, (e.strip() for e in cell.split(";"))):
        m = _ENTRY.fullmatch(text)
        if m is None:
            raise GradingSetupError(f"the overrides cell of {student or 'a row'} reads "
                                    f"{text!r}, not 'exercise original->new: comment'")
        entries.append((m[1], m[2], m[3], m[4] or ""))
    return entries


class Adjuster:
    """One run's adjustments: ``overrides`` (:func:`read_overrides`) and ``late``."""

    def __init__(self, overrides: Mapping[str, Mapping[str, Override]] | None = None,
                 late: LatePolicy | None = None) -> None:
        self.overrides = overrides or {}
        self.late = late
        self.seen: set[str] = set()  # the students of the rows adjusted
        self.untimed: list[str] = []  # rows without a submission time, under a late policy

    def apply(self, rec: Mapping[str, str], ids: Sequence[str]) -> dict[str, str]:
        """``rec`` with its original points restored, then this run's adjustments made."""
        out = dict(rec)
        names = _names(out["student"])
        self.seen.update(names)
        for ex, original, _new, _comment in recorded(out.get("overrides", ""), names[-1]):
            if ex in out:
                out[ex] = original
        mine = next((self.overrides[n] for n in names if n in self.overrides), {})
        entries = []
        for ex in ids:
            if ex in mine:
                o = mine[ex]
                entries.append(f"{ex} {out[ex]}->{number(o.points)}"
                               + (f": {o.comment}" if o.comment else ""))
                out[ex] = number(o.points)
        out["overrides"] = "; ".join(entries)
        penalty, submitted = 0.0, None
        if self.late is not None:
            submitted = next((self.late.times[n] for n in names if n in self.late.times), None)
            if submitted is None:
                self.untimed.append(names[-1])
            else:
                penalty = round(self.late.fraction(submitted) * _float(out, "max_total"), 2)
        out["submitted"] = submitted.isoformat() if submitted is not None else ""
        out["late_penalty"] = number(penalty)
        points = sum(_float(out, ex) for ex in ids)
        out["total"] = number(max(0.0, round(points - penalty, 2)))
        return out

    def unused(self) -> list[str]:
        """The overrides' students that matched no row adjusted."""
        return sorted(s for s in self.overrides if s not in self.seen)


def _float(rec: Mapping[str, str], column: str) -> float:
    try:
        return float(rec[column] or 0)
    except ValueError:
        raise GradingSetupError(f"the gradebook's {column} cell of {rec['student']} reads "
                                f"{rec[column]!r}, not a number") from None


def adjustments(rec: Mapping[str, str], late: LatePolicy | None = None) -> list[str]:
    """What the adjustments of a gradebook row did, in words, one line each, for the
    student's feedback ([] when none): ``ex02_bind: 1.5 → 2 points (instructor: regraded by
    hand)``, ``late by 2 days: −10% (−0.4 points)``, then the total after them."""
    lines = []
    for ex, original, new, comment in recorded(rec.get("overrides", ""), rec["student"]):
        why = f"instructor: {comment}" if comment else "set by the instructor"
        lines.append(f"{ex}: {original} \u2192 {new} points ({why})")
    penalty = _float(rec, "late_penalty") if rec.get("late_penalty") else 0.0
    if penalty > 0:
        share = round(100 * penalty / _float(rec, "max_total"), 2)
        days = 0
        if late is not None and rec.get("submitted"):
            days = late.days_late(_in_zone(datetime.fromisoformat(rec["submitted"]),
                                           late.deadline, rec["student"]))
        when = f"late by {days} day{'s' if days != 1 else ''}" if days else "late"
        lines.append(f"{when}: \u2212{share:g}% (\u2212{penalty:g} points)")
    if lines:
        lines.append(f"total after these: {rec['total']} / {rec['max_total']} points")
    return lines
