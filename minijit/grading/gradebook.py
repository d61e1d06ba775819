"""The batch grader: many submissions in parallel, one gradebook CSV, one feedback file each.

The work is split by trust:

- the grader's main process (trusted) loads the exercises, computes every expected value by
  running the probes on the reference solutions, and later compares and scores;
- worker processes (a pool, ``jobs`` of them) each drive one submission's kernel at a time
  with :func:`minijit.grading.runner.run_submission`, and receive only the probes to run,
  never the expected values;
- the kernels (untrusted) run the learner's code and the probes, and answer with plain data.

Every submission produces a row, whatever happened: a worker that dies is retried once in a
fresh pool, and a run interrupted with Ctrl-C still writes rows for the submissions it did
not reach (status ``not_graded``).

CSV columns: ``student`` (file stem, or the relative path when two stems collide), one
column per exercise id (points earned), ``total``, ``max_total``, ``status`` (one word, the
worst thing that happened: see :data:`minijit.grading.runner.STATUS_ORDER`), ``seconds``,
and ``detail`` (what happened, in words). A case passes only if it matches exactly; an
exercise earns ``points * passed cases / all cases``, rounded to 2 decimals.
"""

from __future__ import annotations

import csv
import multiprocessing
import os
import re
from collections.abc import Iterable, Sequence
from concurrent.futures import Future, ProcessPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .cases import Case, Exercise, compare, describe, probe_source
from .channel import ProbeCall
from .probing import run_probe
from .runner import NOTE, ExercisePlan, Limits, RunResult, run_submission


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


def build_plan(exercises: Sequence[Exercise],
               extra_hidden: dict[str, tuple[Case, ...]] | None = None) -> Plan:
    """Probe calls and expected values for ``exercises``; raises GradingSetupError when a
    reference solution fails or a probe cannot be shipped."""
    extra_hidden = extra_hidden or {}
    probes, expected, infos = [], {}, {}
    for ex in exercises:
        try:
            reference = ex.reference()
        except Exception as exc:  # noqa: BLE001 - reported with the exercise's name
            raise GradingSetupError(f"{ex.id}: the reference solution failed: {exc!r}") from exc
        calls = []
        for key, case, public in ex.cases(extra_hidden.get(ex.id, ())):
            probe = ex.probe_for(case)
            try:
                source, name = probe_source(probe)
            except (TypeError, OSError) as exc:
                raise GradingSetupError(f"{key} ({case.name}): {exc}") from exc
            if case.has_literal_expected:
                expected[key] = case.expected
            else:
                expected[key] = run_probe(probe, reference, case.args)
                if isinstance(expected[key], dict) and "__error__" in expected[key]:
                    err = expected[key]["__error__"]
                    raise GradingSetupError(
                        f"{key} ({case.name}): the reference raised {err['type']}: "
                        f"{err['message']}; give the case a literal expected=raises(...) if "
                        "raising is the point")
            calls.append(ProbeCall(key, source, name, tuple(case.args)))
            infos[key] = CaseInfo(ex, case, public)
        probes.append(ExercisePlan(ex.id, tuple(calls)))
    return Plan(tuple(exercises), tuple(probes), expected, infos)


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


_OUTCOME_WORDS = {
    "timeout": "its tests ran past the time limit",
    "kernel_died": "the kernel died while it was tested",
    "tampered": "the notebook interfered with the grader's request",
    "not_run": "it was not tested (the submission stopped earlier)",
}


def score_exercise(ex: Exercise, plan: Plan, run: RunResult) -> ExerciseScore:
    outcome = run.outcome.get(ex.id, "not_run")
    sc = ExerciseScore(ex, outcome=outcome)
    passed = {True: 0, False: 0}
    totals = {True: 0, False: 0}
    for key, info in plan.cases.items():
        if info.exercise.id != ex.id:
            continue
        totals[info.public] += 1
        got = run.results.get(key) if outcome == "ran" else None
        if outcome == "ran" and key in run.results:
            reason = compare(plan.expected[key], got, info.case.rtol, info.case.atol)
        else:
            reason = _OUTCOME_WORDS.get(outcome, "no result came back")
        if reason is None:
            passed[info.public] += 1
        elif info.public:
            sc.failed_public.append(FailedCase(info.case.name, plan.expected[key], got,
                                               reason, ex.hint_for(info.case, got)))
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


# ----------------------------------------------------------------------------------------
# Inputs: which files, which students, which exercises
# ----------------------------------------------------------------------------------------


def find_submissions(paths: Iterable[str | os.PathLike]) -> list[Path]:
    """Files as given, plus every ``*.ipynb`` under given folders (checkpoints skipped)."""
    found: list[Path] = []
    for p in map(Path, paths):
        if p.is_dir():
            found += sorted(q for q in p.rglob("*.ipynb")
                            if ".ipynb_checkpoints" not in q.parts and q.is_file())
        elif p.exists():
            found.append(p)
        else:
            raise GradingSetupError(f"no such file or folder: {p}")
    unique = list(dict.fromkeys(q.resolve() for q in found))
    return unique


def student_names(paths: Sequence[Path]) -> list[str]:
    """File stems; where two stems collide, the paths relative to the common folder."""
    stems = [p.stem for p in paths]
    if len(set(stems)) == len(stems):
        return stems
    root = Path(os.path.commonpath([str(p.parent) for p in paths]))
    return [p.relative_to(root).with_suffix("").as_posix() for p in paths]


_ID_RE = re.compile(r"\bex\d\d_[a-z0-9_]+\b")


def select_exercises(paths: Sequence[Path], exercises: dict[str, Exercise],
                     assignment: Sequence[str] | None = None) -> list[Exercise]:
    """The exercises to grade, in registry order.

    ``assignment`` names exercise ids or chapters (``04_jit_and_the_cache``). Without it:
    every exercise whose id appears in any submission of the batch (one student deleting a
    cell does not remove the column), or all of them if none does.
    """
    if assignment:
        chosen = set()
        for name in assignment:
            hits = {i for i, ex in exercises.items() if name in (i, ex.chapter)}
            if not hits:
                raise GradingSetupError(f"--assignment {name}: no such exercise or chapter")
            chosen |= hits
        return [ex for i, ex in exercises.items() if i in chosen]
    mentioned: set[str] = set()
    for p in paths:
        try:
            mentioned |= set(_ID_RE.findall(p.read_text(encoding="utf-8", errors="replace")))
        except OSError:
            continue
    chosen = [ex for i, ex in exercises.items() if i in mentioned]
    return chosen or list(exercises.values())


# ----------------------------------------------------------------------------------------
# The batch
# ----------------------------------------------------------------------------------------


def _pool(jobs: int) -> ProcessPoolExecutor:
    # forkserver: workers fork from a server that imported nbclient once (it takes seconds),
    # without inheriting this process's threads or reference-solution state.
    methods = multiprocessing.get_all_start_methods()
    ctx = multiprocessing.get_context("forkserver" if "forkserver" in methods else "spawn")
    if "forkserver" in methods:
        ctx.set_forkserver_preload(["minijit.grading.runner"])
    return ProcessPoolExecutor(max_workers=jobs, mp_context=ctx)


def grade(submissions: Sequence[str | os.PathLike], *, exercises: dict[str, Exercise],
          out: str | os.PathLike | None = None, feedback_dir: str | os.PathLike | None = None,
          hidden_cases: dict[str, tuple[Case, ...]] | None = None,
          assignment: Sequence[str] | None = None, jobs: int | None = None,
          limits: Limits | None = None, progress: bool = True) -> list[Row]:
    """Grade ``submissions`` (files or folders); write the CSV and feedback; return rows."""
    from tqdm.auto import tqdm

    limits = limits or Limits()
    paths = find_submissions(submissions)
    if not paths:
        raise GradingSetupError("no notebooks to grade")
    names = student_names(paths)
    chosen = select_exercises(paths, exercises, assignment)
    jobs = max(1, min(jobs or os.cpu_count() or 1, len(paths)))
    pool = _pool(jobs)  # started first, so the workers boot while expected values compute
    try:
        plan = build_plan(chosen, hidden_cases)
    except BaseException:
        pool.shutdown(wait=False, cancel_futures=True)
        raise

    runs: dict[int, RunResult] = {}
    tries = dict.fromkeys(range(len(paths)), 0)
    bar = tqdm(total=len(paths), unit="nb", desc="grading", disable=not progress)
    try:
        todo = list(range(len(paths)))
        while todo:
            futures: dict[Future, int] = {}
            for i in todo:
                tries[i] += 1
                futures[pool.submit(run_submission, paths[i], plan.probes, limits)] = i
            todo = []
            for fut in as_completed(futures):
                i = futures[fut]
                try:
                    runs[i] = fut.result()
                except BrokenProcessPool:
                    if tries[i] < 2:
                        todo.append(i)
                        continue
                    runs[i] = _failed("the grading worker was killed (twice)")
                except Exception as exc:  # noqa: BLE001 - one row per submission, always
                    runs[i] = _failed(f"{type(exc).__name__}: {exc}")
                bar.update(1)
                bar.set_postfix_str(f"{names[i]}: {runs[i].status}", refresh=False)
            if todo:
                pool.shutdown(wait=False, cancel_futures=True)
                pool = _pool(jobs)
    finally:
        bar.close()
        pool.shutdown(wait=False, cancel_futures=True)
        # Ctrl-C or a grader bug: the submissions not reached still get their row.
        for i in range(len(paths)):
            runs.setdefault(i, _failed("the grader stopped before this notebook",
                                       kind="not_graded"))
        rows = [make_row(names[i], paths[i], plan, runs[i]) for i in range(len(paths))]
        rows.sort(key=lambda r: r.student)
        if out is not None:
            write_csv(rows, plan, out)
        if feedback_dir is not None:
            write_feedback(rows, feedback_dir)
    return rows


def _failed(message: str, kind: str = "grader_error") -> RunResult:
    result = RunResult()
    result.add(kind, message)
    return result


# ----------------------------------------------------------------------------------------
# Outputs
# ----------------------------------------------------------------------------------------


def _num(x: float) -> str:
    return f"{x:g}"


def write_csv(rows: Sequence[Row], plan: Plan, path: str | os.PathLike) -> None:
    ids = [ex.id for ex in plan.exercises]
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["student", *ids, "total", "max_total", "status", "seconds", "detail"])
        for r in rows:
            w.writerow([r.student, *(_num(r.scores[i].points) for i in ids), _num(r.total),
                        _num(r.max_total), r.status, f"{r.seconds:.2f}", r.detail])


def feedback_markdown(row: Row) -> str:
    """The feedback a student sees: scores, failed *public* cases, counts of hidden ones."""
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
            lines.append(f"Not graded further: {_OUTCOME_WORDS.get(sc.outcome, sc.outcome)}.")
        for fc in sc.failed_public:
            lines += [f"- **{fc.name}**: expected `{describe(fc.expected)}`, got "
                      f"`{describe(fc.got)}`.", f"  - Why: {fc.reason}",
                      f"  - Hint: {fc.hint}"]
        missed = sc.hidden[1] - sc.hidden[0]
        if missed and sc.outcome == "ran":
            lines.append(f"- {missed} of {sc.hidden[1]} hidden cases failed (hidden cases "
                         "are not shown; test your code beyond the public cases).")
    return "\n".join(lines) + "\n"


def write_feedback(rows: Sequence[Row], folder: str | os.PathLike) -> None:
    root = Path(folder)
    root.mkdir(parents=True, exist_ok=True)
    for r in rows:
        (root / (r.student.replace("/", "__") + ".md")).write_text(feedback_markdown(r),
                                                                   encoding="utf-8")
