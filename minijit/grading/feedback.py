"""The feedback file each student gets.

A student sees their scores, their failed *public* cases, and their failed hidden ones
counted by category (with the exercise's hint for a category, where it has one), never
the hidden cases' inputs or values.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from .cases import Case, Exercise, category_of, count_categories, describe
from .files import replace_file
from .runner import NOTE
from .scoring import OUTCOME_WORDS, Row
from .submissions import feedback_names


def _num(x: float) -> str:
    return f"{x:g}"


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
