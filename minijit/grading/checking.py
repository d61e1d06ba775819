"""``check("ex04_static_args")``: instant feedback in the learner's notebook.

Runs the exercise's *public* cases in the learner's own kernel, against the notebook's
globals, and shows one row per case: pass or fail, expected vs got, and for a failure a hint
that names the pitfall and the chapter section to reread. The expected values come from the
exercise's reference solution, run here too; that is fine because this is the learner's own
feedback, not a grade. Grades come from the batch grader, which runs the same probes in an
isolated kernel and compares outside it (see :mod:`minijit.grading.runner`).

The result renders as an HTML table in Jupyter and as plain text elsewhere.

(The module is ``checking``, not ``check``: a submodule named like the function would replace
``minijit.grading.check`` the moment it is imported.)

Under the batch grader (environment variable ``MINIJIT_GRADING=1``) ``check()`` does nothing:
the grader does not read its output, and skipping it keeps grading fast.
"""

from __future__ import annotations

import html
import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .cases import Case, Exercise, compare, describe
from .probing import run_probe

GRADING_ENV = "MINIJIT_GRADING"

# Expected values of public cases, computed once per process from the reference.
_expected_cache: dict[str, Any] = {}


@dataclass(frozen=True)
class CaseRow:
    name: str
    passed: bool
    expected: Any
    got: Any
    reason: str | None
    hint: str | None


@dataclass(frozen=True)
class CheckReport:
    """The outcome of ``check()``: one row per public case."""

    exercise: Exercise
    rows: tuple[CaseRow, ...]

    @property
    def passed(self) -> int:
        return sum(r.passed for r in self.rows)

    @property
    def all_passed(self) -> bool:
        return self.passed == len(self.rows)

    def _summary(self) -> str:
        ex = self.exercise
        mark = "all public cases pass" if self.all_passed else "some public cases fail"
        unit = "point" if ex.points == 1 else "points"
        return (f"{ex.id} ({ex.points:g} {unit}): {self.passed}/{len(self.rows)} public "
                f"cases pass - {mark}. The grader also runs hidden cases.")

    def __str__(self) -> str:
        lines = [self._summary()]
        for r in self.rows:
            lines.append(f"  [{'PASS' if r.passed else 'FAIL'}] {r.name}")
            if not r.passed:
                lines.append(f"      expected: {describe(r.expected)}")
                lines.append(f"      got:      {describe(r.got)}")
                if r.reason:
                    lines.append(f"      why:      {r.reason}")
                if r.hint:
                    lines.append(f"      hint:     {r.hint}")
        return "\n".join(lines)

    __repr__ = __str__

    def _repr_html_(self) -> str:
        esc = html.escape
        colour = "#1a7f37" if self.all_passed else "#cf222e"
        out = [f'<div class="minijit-check"><p style="color:{colour};font-weight:bold">'
               f"{esc(self._summary())}</p>",
               '<table><thead><tr><th>case</th><th>result</th><th>expected</th>'
               "<th>got</th></tr></thead><tbody>"]
        for r in self.rows:
            verdict = "\u2714 pass" if r.passed else "\u2718 fail"  # in every common font
            out.append(f"<tr><td><code>{esc(r.name)}</code></td><td>{verdict}</td>"
                       f"<td><code>{esc(describe(r.expected))}</code></td>"
                       f"<td><code>{esc(describe(r.got))}</code></td></tr>")
            if not r.passed:
                detail = esc(r.reason or "")
                if r.hint:
                    detail += f"<br><b>Hint:</b> {esc(r.hint)}"
                out.append(f'<tr><td></td><td colspan="3" style="text-align:left">{detail}'
                           "</td></tr>")
        out.append("</tbody></table></div>")
        return "".join(out)


@dataclass(frozen=True)
class SkippedCheck:
    """What ``check()`` returns under the batch grader."""

    exercise_id: str

    def __repr__(self) -> str:
        return f"check({self.exercise_id!r}) skipped: this notebook is being graded."


def expected_value(exercise: Exercise, key: str, case: Case) -> Any:
    """The expected plain data for a case: its literal, or the probe run on the reference."""
    if case.has_literal_expected:
        return case.expected
    if key not in _expected_cache:
        _expected_cache[key] = run_probe(exercise.probe_for(case), exercise.reference(),
                                         case.args)
    return _expected_cache[key]


def run_public_cases(exercise: Exercise, ns: Mapping[str, Any]) -> CheckReport:
    """Run the public cases of ``exercise`` against namespace ``ns``."""
    rows = []
    for key, case, _public in exercise.cases()[: len(exercise.public)]:
        expected = expected_value(exercise, key, case)
        got = run_probe(exercise.probe_for(case), ns, case.args)
        reason = compare(expected, got, case.rtol, case.atol)
        hint = exercise.hint_for(case, got) if reason else None
        rows.append(CaseRow(case.name, reason is None, expected, got, reason, hint))
    return CheckReport(exercise, tuple(rows))


def check(exercise_id: str, *, namespace: Mapping[str, Any] | None = None
          ) -> CheckReport | SkippedCheck:
    """Run the public cases of ``exercise_id`` against the calling notebook's globals."""
    if os.environ.get(GRADING_ENV) == "1":
        return SkippedCheck(exercise_id)
    from .registry import default_exercises  # lazy: loads the exercises and minijit core

    exercises = default_exercises()
    if exercise_id not in exercises:
        known = ", ".join(sorted(exercises))
        raise KeyError(f"unknown exercise {exercise_id!r}; known exercises: {known}")
    ns = namespace if namespace is not None else sys._getframe(1).f_globals
    return run_public_cases(exercises[exercise_id], ns)
