"""``check("ex04_static_args")``: instant feedback in the learner's notebook.

Runs the exercise's *public* cases in the learner's own kernel, against the notebook's
globals, and shows one row per case: pass or fail, expected vs got, and for a failure a hint.
A build exercise's piece that is minijit's own code fails every row, whatever it gives, with
the reason (:func:`minijit.grading.build_pieces.own_work_case`), as it does in the grader.
The expected values reach it as data: a case's literal (the student release stores them),
or values computed by the reference solution in a separate interpreter
(:mod:`minijit.grading.expected`), once per chapter and kernel; the reference never runs in
the learner's kernel, where the notebook could patch what it uses. Grades come from the batch
grader, which runs the same probes in an isolated kernel and compares outside it (see
:mod:`minijit.grading.runner`).

The cases run on minijit's own build pieces, as the grader runs them: a piece the notebook
switched in (``build.use``) for one exercise never grades another; it is back afterwards.

Each case runs under a time limit (:data:`CASE_TIME_LIMIT` seconds, ``check(...,
time_limit=N)`` to change it, ``None`` for none): an endless loop in the learner's code stops
that case with "took longer than N s" and the next case runs. The limit is a ``SIGALRM``
timer, so it works where IPython runs cells, in the main thread (elsewhere cases run without
one), and it interrupts Python code only: a loop inside C code (a long NumPy call, a
``time.sleep``) ends only when that call returns.

The result renders as an HTML table in Jupyter and as plain text elsewhere.

Hints come in tiers (:data:`~minijit.grading.cases.HINT_TIERS`), so that a learner thinks
before reading code:

- **not attempted yet** (a stub still raises ``NotImplementedError``, or a name it must
  define is undefined): only the *section* of the chapter to read;
- **the first failed check** of an exercise in this session: the section and the *pitfall*;
- **the second and later failed checks**, or ``check("exNN_name", hint=True)``: the *code*
  hint as well.

The count of failed checks lives in this process (one per kernel: a restart starts over);
:func:`reset_attempts` empties it.

(The module is ``checking``, not ``check``: a submodule named like the function would replace
``minijit.grading.check`` the moment it is imported.)

Under the batch grader (environment variable ``MINIJIT_GRADING=1``) ``check()`` does nothing:
the grader does not read its output, and skipping it keeps grading fast.
"""

from __future__ import annotations

import contextlib
import html
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .cases import (
    CODE,
    HINT_TIERS,
    PITFALL,
    SECTION,
    Case,
    Exercise,
    compare,
    describe,
    not_attempted,
    not_own,
)
from .messages import language, tr, translate
from .probing import ProbeTimeLimit, error_data, minijits_own_pieces, run_probe

GRADING_ENV = "MINIJIT_GRADING"
# Seconds each public case of check() may take (see the module docstring).
CASE_TIME_LIMIT = 10.0
# Seconds the separate interpreter gets to compute a chapter's expected values.
EXPECTED_TIMEOUT = 300.0

# Expected values of public cases, computed once per process from the reference.
_expected_cache: dict[str, Any] = {}
# Failed (attempted) checks per exercise id in this session: the code tier shows from the
# second one on.
_failed_checks: dict[str, int] = {}
CODE_AFTER_FAILED_CHECKS = 2
# The words of the table: a failed row's labels (text form), the columns (HTML form)
LABELS = ("expected", "got", "why", "hint", "code")
COLUMNS = ("case", "result", "expected", "got")


def reset_attempts(exercise_id: str | None = None) -> None:
    """Forget the failed checks of one exercise (or all): its hints start over."""
    if exercise_id is None:
        _failed_checks.clear()
    else:
        _failed_checks.pop(exercise_id, None)


@dataclass(frozen=True)
class CaseRow:
    name: str
    passed: bool
    expected: Any
    got: Any
    reason: str | None
    hints: Mapping[str, str]  # the tiers shown for this row (empty when it passed)

    @property
    def hint(self) -> str | None:
        """The pitfall and code tiers shown, in one string (``None`` when there are none)."""
        shown = [self.hints[t] for t in (PITFALL, CODE) if t in self.hints]
        return " ".join(shown) or None


@dataclass(frozen=True)
class CheckReport:
    """The outcome of ``check()``: one row per public case, and the hint tier reached.

    ``tier`` is the last hint tier shown (``section``, ``pitfall`` or ``code``), or
    ``None`` when every case passed; ``attempted`` is false while the stub is untouched.
    """

    exercise: Exercise
    rows: tuple[CaseRow, ...]
    tier: str | None = None
    attempted: bool = True
    code_withheld: bool = False
    lang: str = "en"  # the language it is shown in (minijit.grading.messages)

    @property
    def passed(self) -> int:
        return sum(r.passed for r in self.rows)

    @property
    def all_passed(self) -> bool:
        return self.passed == len(self.rows)

    def _t(self, english: str, **fields: Any) -> str:
        return tr(english, self.lang, **fields)

    def _summary(self) -> str:
        ex, t = self.exercise, self._t
        mark = t("all public cases pass") if self.all_passed else t("some public cases fail")
        unit = t("point") if ex.points == 1 else t("points")
        return t("{id} ({points} {unit}): {passed}/{total} public cases pass - {mark}. The "
                 "grader also runs hidden cases.", id=ex.id, points=f"{ex.points:g}",
                 unit=unit, passed=self.passed, total=len(self.rows), mark=mark)

    def __str__(self) -> str:
        t = self._t
        labels = {k: t(k) for k in LABELS}
        width = max(map(len, labels.values())) + 1
        lines = [self._summary()]
        for r in self.rows:
            lines.append(f"  [{'PASS' if r.passed else 'FAIL'}] {translate(r.name, self.lang)}")
            if not r.passed:
                shown = [("expected", describe(r.expected)), ("got", describe(r.got)),
                         ("why", r.reason and translate(r.reason, self.lang)),
                         ("hint", r.hints.get(PITFALL)), ("code", r.hints.get(CODE))]
                lines += [f"      {(labels[k] + ':').ljust(width)} {v}" for k, v in shown if v]
        lines += [f"  {line}" for line in self._footer()]
        return "\n".join(lines)

    def _footer(self) -> list[str]:
        """Where to read, and what the next hint tier takes (nothing when all pass)."""
        if self.tier is None:
            return []
        section = next((r.hints[SECTION] for r in self.rows if SECTION in r.hints), "")
        ex_id, t = self.exercise.id, self._t
        if not self.attempted:
            return [t("Not attempted yet: read {section}, then replace the raise "
                      "NotImplementedError(...) line(s) with your code and run the cell.",
                      section=section)]
        out = [t("Reread {section}.", section=section)]
        if self.code_withheld:
            out.append(t("Still stuck? check(\"{id}\", hint=True), in a new cell, shows a "
                         "code-level hint (so does the next failed check).", id=ex_id))
        return out

    __repr__ = __str__

    def _repr_html_(self) -> str:
        esc, t = html.escape, self._t
        colour = "#1a7f37" if self.all_passed else "#cf222e"
        out = [f'<div class="minijit-check"><p style="color:{colour};font-weight:bold">'
               f"{esc(self._summary())}</p>",
               "<table><thead><tr>" + "".join(f"<th>{esc(t(h))}</th>" for h in COLUMNS)
               + "</tr></thead><tbody>"]
        for r in self.rows:
            # the marks are in every common font
            verdict = "\u2714 " + t("pass") if r.passed else "\u2718 " + t("fail")
            name = translate(r.name, self.lang)
            out.append(f"<tr><td><code>{esc(name)}</code></td><td>{esc(verdict)}</td>"
                       f"<td><code>{esc(describe(r.expected))}</code></td>"
                       f"<td><code>{esc(describe(r.got))}</code></td></tr>")
            if not r.passed:
                detail = esc(translate(r.reason or "", self.lang))
                if PITFALL in r.hints:
                    detail += f"<br><b>{esc(t('Hint:'))}</b> {esc(r.hints[PITFALL])}"
                if CODE in r.hints:
                    detail += f"<br><b>{esc(t('Code hint:'))}</b> {esc(r.hints[CODE])}"
                out.append(f'<tr><td></td><td colspan="3" style="text-align:left">{detail}'
                           "</td></tr>")
        out.append("</tbody></table>")
        out += [f"<p>{esc(line)}</p>" for line in self._footer()]
        out.append("</div>")
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


@contextlib.contextmanager
def case_time_limit(seconds: float | None) -> Iterator[None]:
    """Raise :class:`~minijit.grading.probing.ProbeTimeLimit` in the block after ``seconds``.

    A ``SIGALRM`` timer in the main thread (elsewhere, or with ``None``, no limit); an outer
    timer and handler are put back afterwards.
    """
    usable = (seconds is not None and hasattr(signal, "setitimer")
              and threading.current_thread() is threading.main_thread())
    if not usable:
        yield
        return

    def _alarm(signum: int, frame: Any) -> None:
        raise ProbeTimeLimit(f"took longer than {seconds:g} s and was stopped (an endless "
                             "loop?)")

    previous = signal.signal(signal.SIGALRM, _alarm)
    start = time.monotonic()
    outer, _interval = signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        if outer:
            signal.setitimer(signal.ITIMER_REAL, max(outer - (time.monotonic() - start), 0.001))


def _learner_result(exercise: Exercise, case: Case, ns: Mapping[str, Any],
                    seconds: float | None) -> Any:
    try:
        with case_time_limit(seconds):
            return run_probe(exercise.probe_for(case), ns, case.args)
    except ProbeTimeLimit as exc:  # the alarm came between the probe's end and the disarm
        return error_data(exc)


def _own_work(exercise: Exercise, ns: Mapping[str, Any], seconds: float | None
              ) -> str | None:
    """What makes the learner's build piece minijit's own code, if it is (as the grader's
    :func:`minijit.grading.scoring.score_exercise` decides it)."""
    from .build_pieces import own_work_case

    case = own_work_case(exercise.id)
    return None if case is None else not_own(_learner_result(exercise, case, ns, seconds))


def run_public_cases(exercise: Exercise, ns: Mapping[str, Any], *, hint: bool = False,
                     count: bool = False, expected: Mapping[str, Any] | None = None,
                     time_limit: float | None = None) -> CheckReport:
    """Run the public cases of ``exercise`` against namespace ``ns``.

    ``expected`` holds the expected values of the cases without a literal, by case key
    (what ``check()`` passes, computed in a separate interpreter); without it they are
    computed here from the reference (for trusted callers: tests, the grader's tools).
    ``time_limit``: seconds per case for the learner's code (``None``: no limit).

    The hint tier: ``section`` while nothing is attempted, ``pitfall`` on a failure, and
    ``code`` when ``hint`` is true or, with ``count`` (what ``check()`` does), from the
    second failed check of this exercise in this process on.
    """
    results = []
    with minijits_own_pieces():  # as the grader runs them, whatever the notebook switched in
        refused = _own_work(exercise, ns, time_limit)
        for key, case, _public in exercise.cases()[: len(exercise.public)]:
            if expected is not None and not case.has_literal_expected:
                want = expected[key]
            else:
                want = expected_value(exercise, key, case)
            got = _learner_result(exercise, case, ns, time_limit)
            results.append((case, want, got,
                            refused or compare(want, got, case.rtol, case.atol)))
    failed = [(case, got) for case, _e, got, reason in results if reason]
    # One stub left (or one name undefined) and the exercise is not attempted yet: its
    # other cases may fail only because they run code given in the notebook.
    attempted = refused is not None or not any(not_attempted(got) for _c, got in failed)
    tier = None
    if failed:
        if count and attempted:
            _failed_checks[exercise.id] = _failed_checks.get(exercise.id, 0) + 1
        if hint or _failed_checks.get(exercise.id, 0) >= CODE_AFTER_FAILED_CHECKS:
            tier = CODE
        else:
            tier = PITFALL if attempted else SECTION
    shown = HINT_TIERS[: HINT_TIERS.index(tier) + 1] if tier else ()
    specific = len(failed) < len(results)  # a failure of some cases, not of all
    rows, withheld = [], False
    for case, expected, got, reason in results:
        hints = {}
        if reason:
            tiers = exercise.hint_tiers(case, got, specific)
            hints = {t: text for t, text in tiers.items() if t in shown}
            withheld = withheld or (CODE in tiers and CODE not in hints and attempted)
        rows.append(CaseRow(case.name, reason is None, expected, got, reason, hints))
    return CheckReport(exercise, tuple(rows), tier, attempted, withheld, language())


def public_expected(exercises: Mapping[str, Exercise], exercise_id: str,
                    modules: tuple[str, ...]) -> dict[str, Any]:
    """Expected values of the public cases of ``exercise_id`` that have no literal.

    Computed in a separate interpreter (:mod:`minijit.grading.expected`) for every exercise
    of the same module at once (a notebook is one chapter), and kept for this process.
    """
    ex = exercises[exercise_id]
    needed = [key for key, case, _p in ex.cases()[: len(ex.public)]
              if not case.has_literal_expected]
    if any(key not in _expected_cache for key in needed):
        module = getattr(ex.probe, "__module__", None)
        group = [e.id for e in exercises.values()
                 if e.id == exercise_id or getattr(e.probe, "__module__", None) == module]
        _expected_cache.update(_expected_from_child(modules, group))
    return {key: _expected_cache[key] for key in needed}


def _expected_from_child(modules: tuple[str, ...], ids: list[str]) -> dict[str, Any]:
    root = str(Path(__file__).resolve().parents[2])  # the folder that holds this minijit
    env = dict(os.environ)
    env.pop(GRADING_ENV, None)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH")) if p)
    run = subprocess.run([sys.executable, "-m", "minijit.grading.expected"],
                         input=json.dumps({"modules": list(modules), "ids": ids}),
                         capture_output=True, text=True, env=env, cwd=os.getcwd(),
                         timeout=EXPECTED_TIMEOUT)
    try:
        answer = json.loads(run.stdout)
    except ValueError:
        tail = (run.stderr or run.stdout).strip().splitlines()[-1:] or ["no output"]
        raise RuntimeError(f"computing the expected values failed: {tail[0]}") from None
    if "error" in answer:
        raise RuntimeError(f"computing the expected values failed: {answer['error']}")
    return answer["expected"]


def check(exercise_id: str, *, hint: bool = False,
          namespace: Mapping[str, Any] | None = None,
          time_limit: float | None = CASE_TIME_LIMIT) -> CheckReport | SkippedCheck:
    """Run the public cases of ``exercise_id`` against the calling notebook's globals.

    Hints come in tiers (see the module docstring): ``hint=True`` asks for all of them now,
    the code-level hint included. Each case may take ``time_limit`` seconds (``None``: no
    limit).
    """
    if os.environ.get(GRADING_ENV) == "1":
        return SkippedCheck(exercise_id)
    from .registry import COURSE_MODULES, default_exercises, env_modules

    exercises = default_exercises()
    if exercise_id not in exercises:
        known = ", ".join(sorted(exercises))
        raise KeyError(f"unknown exercise {exercise_id!r}; known exercises: {known}")
    ns = namespace if namespace is not None else sys._getframe(1).f_globals
    expected = public_expected(exercises, exercise_id, COURSE_MODULES + env_modules())
    return run_public_cases(exercises[exercise_id], ns, hint=hint, count=True,
                            expected=expected, time_limit=time_limit)
