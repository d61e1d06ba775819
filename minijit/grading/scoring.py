"""Expected values and scores: everything about a grade that is decided in trusted code.

:func:`build_plan` runs each case's probe on the exercise's reference solution, here in the
grader's process, and keeps the expected values; the kernels only ever receive the probes
(:class:`~minijit.grading.runner.ExercisePlan`). Each probe runs *as shipped*: its source and
its arguments go through :func:`minijit.grading.channel.run_locally`, the very code path of a
kernel, so a probe that calls a helper of its own file (not shipped with it), or arguments
that are not literal data, fail here, before grading starts, with one clear line.
:func:`score_exercise` compares what a kernel sent back with those values, on plain data
(:func:`minijit.grading.cases.compare`).

An exercise earns ``points * passed cases / all cases``, public and hidden together,
rounded to 2 decimals: partial credit, but a hard-coded answer to the public cases still
fails the hidden ones. An exercise whose tests could not run (a timeout, a dead kernel, an
unreadable answer) fails all its cases. So does a build exercise whose piece is minijit's
own code (:func:`minijit.grading.build_pieces.own_work_case`, a probe run with the public
cases, never on the reference): its finding is every case's reason. A failed hidden case is
named by its category only (:func:`minijit.grading.cases.category_of`).

Feedback files follow the tiers of ``check()`` (:mod:`minijit.grading.checking`) as they
stand after one failed check: an exercise not attempted (a stub left, or a name undefined)
gets the section to read only, any other failed case the pitfall and the section. The
code-level tier is never written to feedback: it is for a learner still working, in the
notebook.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .build_pieces import own_work_case
from .cases import (
    PITFALL,
    SECTION,
    Case,
    Exercise,
    compare,
    describe,
    error_of,
    not_attempted,
    not_own,
    probe_source,
)
from .channel import ProbeCall, run_locally
from .registry import RegistryError, literal_args
from .runner import ExercisePlan, RunResult


class GradingSetupError(RuntimeError):
    """The exercises or options are wrong (an instructor's mistake): nothing was graded."""


# ----------------------------------------------------------------------------------------
# Plan: what every kernel runs, and what we expect back (kept in this process)
# ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class CaseInfo:
    exercise: Exercise
    case: Case
    public: bool


@dataclass(frozen=True)
class Plan:
    exercises: tuple[Exercise, ...]
    probes: tuple[ExercisePlan, ...]
    expected: dict[str, Any]
    cases: dict[str, CaseInfo]
    # exercise id -> the key of its own-work probe's result (build exercises only)
    own_work: dict[str, str] = field(default_factory=dict)


def build_plan(exercises: Sequence[Exercise],
               extra_hidden: dict[str, tuple[Case, ...]] | None = None) -> Plan:
    """Probe calls and expected values for ``exercises``; raises GradingSetupError when a
    reference solution fails, a probe cannot be shipped or fails as shipped, a case's
    arguments are not literal data, or the reference does not pass a case with a literal
    expected value."""
    extra_hidden = extra_hidden or {}
    probes, expected, infos, own_work = [], {}, {}, {}
    for ex in exercises:
        try:
            reference = ex.reference()
        except Exception as exc:  # noqa: BLE001 - reported with the exercise's name
            raise GradingSetupError(f"{ex.id}: the reference solution failed: {exc!r}") from exc
        calls, hidden, cases = [], [], {}
        for key, case, public in ex.cases(extra_hidden.get(ex.id, ())):
            probe = ex.probe_for(case)
            try:
                source, name = probe_source(probe)
                args = literal_args(case.args, f"{key} ({case.name})")
            except (TypeError, OSError) as exc:
                raise GradingSetupError(f"{key} ({case.name}): {exc}") from exc
            except RegistryError as exc:
                raise GradingSetupError(str(exc)) from None
            call = ProbeCall(key, source, name, args)
            (calls if public else hidden).append(call)
            cases[key] = case
            infos[key] = CaseInfo(ex, case, public)
        shipped = run_locally(calls + hidden, reference)
        for call in calls + hidden:
            expected[call.key] = _expected(call, cases[call.key], shipped.get(call.key))
        own = own_work_case(ex.id)
        if own is not None:  # first, before any case can switch the piece in
            own_work[ex.id] = f"{ex.id}/own"
            calls.insert(0, ProbeCall(own_work[ex.id], *probe_source(own.probe), own.args))
        probes.append(ExercisePlan(ex.id, tuple(calls), tuple(hidden)))
    return Plan(tuple(exercises), tuple(probes), expected, infos, own_work)


def _expected(call: ProbeCall, case: Case, got: Any) -> Any:
    """The expected value of one case, from the shipped probe's run on the reference."""
    where = f"{call.key} ({case.name})"
    err = error_of(got)
    if err is not None and err.get("origin") == "probe":
        if err.get("type") == "NameError" and "run the exercise cell" not in err["message"]:
            missing = err["message"].split("'")[1] if "'" in err["message"] else "a name"
            raise GradingSetupError(
                f"{where}: probe {call.name} uses {missing}, which is not shipped with it "
                "(a probe may use only the prelude's names and what it imports in its body)")
        raise GradingSetupError(f"{where}: probe {call.name} fails on the reference: "
                                f"{err['type']}: {err['message']}")
    if case.has_literal_expected:
        reason = compare(case.expected, got, case.rtol, case.atol)
        if reason is not None:
            raise GradingSetupError(f"{where}: the reference does not pass its own case "
                                    f"({reason}; it gave {describe(got)})")
        return case.expected
    if err is not None:
        raise GradingSetupError(
            f"{where}: the reference raised {err['type']}: {err['message']}; give the case a "
            "literal expected=raises(...) if raising is the point")
    return got


# ----------------------------------------------------------------------------------------
# Scoring
# ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class FailedCase:
    name: str
    expected: Any
    got: Any
    reason: str
    hint: str


@dataclass
class ExerciseScore:
    exercise: Exercise
    points: float = 0.0
    public: tuple[int, int] = (0, 0)  # (passed, total)
    hidden: tuple[int, int] = (0, 0)
    failed_public: list[FailedCase] = field(default_factory=list)
    outcome: str = "ran"
    # the hidden (and private) cases that failed, for their categories only
    failed_hidden: list[Case] = field(default_factory=list)
    # what makes the learner's piece minijit's own code (then every case failed), if anything
    not_own: str | None = None
    # some case passed, so a failed one's category may say what went wrong (hint_tiers)
    specific: bool = False
    # every case of the exercise, in the plan's order: its key -> whether it passed
    cases: dict[str, bool] = field(default_factory=dict)


OUTCOME_WORDS = {
    "timeout": "its tests ran past the time limit",
    "kernel_died": "the kernel died while it was tested",
    "tampered": "the notebook interfered with the grader's request",
    "not_run": "it was not tested (the submission stopped earlier)",
}


def score_exercise(ex: Exercise, plan: Plan, run: RunResult) -> ExerciseScore:
    outcome = run.outcome.get(ex.id, "not_run")
    sc = ExerciseScore(ex, outcome=outcome)
    if outcome == "ran" and ex.id in plan.own_work:
        sc.not_own = not_own(run.results.get(plan.own_work[ex.id]))
    passed = {True: 0, False: 0}
    totals = {True: 0, False: 0}
    failed = []
    for key, info in plan.cases.items():
        if info.exercise.id != ex.id:
            continue
        totals[info.public] += 1
        got = run.results.get(key) if outcome == "ran" else None
        if outcome == "ran" and key in run.results:
            reason = sc.not_own or compare(plan.expected[key], got, info.case.rtol,
                                           info.case.atol)
        else:
            reason = OUTCOME_WORDS.get(outcome, "no result came back")
        sc.cases[key] = reason is None
        if reason is None:
            passed[info.public] += 1
        elif info.public:
            failed.append((info.case, plan.expected[key], got, reason))
        else:
            sc.failed_hidden.append(info.case)
    # as check() does: one stub left (or one undefined name) and the exercise is not
    # attempted, so every case gets the section to read only
    tier = (SECTION if not sc.not_own and any(not_attempted(got) for *_, got, _r in failed)
            else PITFALL)
    sc.specific = passed[True] + passed[False] > 0  # as check() decides (hint_tiers)
    for case, expected, got, reason in failed:
        sc.failed_public.append(FailedCase(case.name, expected, got, reason,
                                           ex.hint_for(case, got, tier, sc.specific)))
    n = totals[True] + totals[False]
    sc.points = round(ex.points * (passed[True] + passed[False]) / n, 2) if n else 0.0
    sc.public = (passed[True], totals[True])
    sc.hidden = (passed[False], totals[False])
    return sc


@dataclass
class Row:
    student: str
    path: Path
    scores: dict[str, ExerciseScore]
    status: str
    seconds: float
    events: list[Any]
    # the instructor's overrides and late penalty, in words (minijit.grading.adjust)
    adjustments: list[str] = field(default_factory=list)
    # the total after those adjustments (the gradebook's ``total``), where it differs
    final_total: float | None = None

    @property
    def total(self) -> float:
        return round(sum(s.points for s in self.scores.values()), 2)

    @property
    def max_total(self) -> float:
        return round(sum(s.exercise.points for s in self.scores.values()), 2)

    @property
    def detail(self) -> str:
        return "; ".join(e.message for e in self.events)


def make_row(student: str, path: Path, plan: Plan, run: RunResult) -> Row:
    scores = {ex.id: score_exercise(ex, plan, run) for ex in plan.exercises}
    return Row(student, path, scores, run.status, run.seconds, list(run.events))
