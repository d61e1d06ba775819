"""The batch grader: many submissions in parallel, one gradebook CSV, one feedback file each.

The work is split by trust:

- the grader's main process (trusted) loads the exercises, computes every expected value by
  running the probes on the reference solutions, and later compares and scores;
- worker processes (a pool, ``jobs`` of them) each drive one submission's kernel at a time
  with :func:`minijit.grading.runner.run_submission`, and receive only the probes to run,
  never the expected values;
- the kernels (untrusted) run the learner's code and the probes, and answer with plain data;
  each runs in a sandbox of its own (:mod:`minijit.grading.sandbox`), unless ``sandbox=False``.

Every submission produces a row, whatever happened: the submissions whose worker died are
graded again one at a time, in a worker each (the one that kills its worker again gets
``tampered``), and a run interrupted with Ctrl-C still writes rows for the submissions it did
not reach (status ``not_graded``).

Worker processes start with ``forkserver`` (or ``spawn``), which imports the caller's main
module: a script that calls :func:`grade` must do so under ``if __name__ == "__main__":``.

CSV columns: ``student`` (file stem, or the relative path when two stems collide), one
column per exercise id (points earned, see :mod:`minijit.grading.scoring`), ``total``,
``max_total``, ``status`` (one word, the worst thing that happened: see
:data:`minijit.grading.runner.STATUS_ORDER`), ``seconds``, and ``detail`` (what happened, in
words).
"""

from __future__ import annotations

import csv
import dataclasses
import multiprocessing
import os
import re
import shutil
import tempfile
import warnings
from collections.abc import Iterable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path

from .cases import Case, Exercise, describe
from .runner import NOTE, Limits, RunResult, run_submission
from .sandbox import INSTALL_HINT, Sandbox, unavailable
from .scoring import OUTCOME_WORDS, GradingSetupError, Plan, Row, build_plan, make_row

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
    chosen = [ex for i, ex in exercises.items() if i in mentioned] or list(exercises.values())
    chapters = sorted({ex.chapter for ex in chosen})
    if len(chapters) > 1:
        warnings.warn(f"the submissions mention exercises of {len(chapters)} chapters "
                      f"({', '.join(chapters)}); every notebook is graded on all of them. "
                      "Grade one assignment at a time, or choose with --assignment.",
                      stacklevel=3)
    return chosen


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
          limits: Limits | None = None, progress: bool = True,
          sandbox: bool | Sandbox = True) -> list[Row]:
    """Grade ``submissions`` (files or folders); write the CSV and feedback; return rows.

    Each kernel runs in a :mod:`minijit.grading.sandbox` (``sandbox=True``, or a
    :class:`Sandbox` with other limits); where none can start, GradingSetupError says how to
    get one. ``sandbox=False`` runs the kernels as the grader, as ``--no-sandbox`` does.
    """
    from tqdm.auto import tqdm

    limits = _with_sandbox(limits or Limits(), sandbox)
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

    limits = _socket_root(limits)
    runs: dict[int, RunResult] = {}
    bar = tqdm(total=len(paths), unit="nb", desc="grading", disable=not progress)

    def done(i: int, run: RunResult) -> None:
        runs[i] = run
        bar.update(1)
        bar.set_postfix_str(f"{names[i]}: {run.status}", refresh=False)

    try:
        # At most jobs + 1 submissions in the pool at a time (one queued, so no worker
        # waits): if a notebook kills its worker, the pool breaks, and only those few are
        # suspects; the rest go on in a fresh pool.
        queue = list(range(len(paths)))
        in_flight: dict[Future, int] = {}
        suspects: list[int] = []
        while queue or in_flight:
            while queue and len(in_flight) <= jobs:
                try:
                    fut = pool.submit(run_submission, paths[queue[0]], plan.probes, limits)
                except BrokenProcessPool:  # the in-flight ones will fail too: see below
                    break
                in_flight[fut] = queue.pop(0)
            if not in_flight:  # the pool broke with nothing left in it
                pool.shutdown(wait=False, cancel_futures=True)
                pool = _pool(jobs)
                continue
            finished, _ = wait(in_flight, return_when=FIRST_COMPLETED)
            broken = False
            for fut in finished:
                i = in_flight.pop(fut)
                try:
                    done(i, fut.result())
                except BrokenProcessPool:
                    suspects.append(i)
                    broken = True
                except Exception as exc:  # noqa: BLE001 - one row per submission, always
                    done(i, _failed(f"{type(exc).__name__}: {exc}"))
            if broken:
                for fut in list(in_flight):  # all fail once the pool is broken
                    suspects.append(in_flight.pop(fut))
                pool.shutdown(wait=False, cancel_futures=True)
                pool = _pool(jobs)
        pool.shutdown(wait=False, cancel_futures=True)
        # Again one at a time, each in a worker of its own: a notebook that kills its
        # worker (os.kill(os.getppid(), 9) from the kernel) now only hurts itself.
        for i in sorted(suspects):
            pool = _pool(1)
            try:
                done(i, pool.submit(run_submission, paths[i], plan.probes, limits).result())
            except BrokenProcessPool:
                done(i, _failed("the notebook killed the grader's worker process",
                                kind="tampered"))
            except Exception as exc:  # noqa: BLE001
                done(i, _failed(f"{type(exc).__name__}: {exc}"))
            pool.shutdown(wait=False, cancel_futures=True)
    finally:
        bar.close()
        if limits.sandbox is not None:  # the socket folders, even those of killed workers
            shutil.rmtree(limits.sandbox.sockets_in, ignore_errors=True)
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


def _with_sandbox(limits: Limits, sandbox: bool | Sandbox) -> Limits:
    if sandbox is False:
        return dataclasses.replace(limits, sandbox=None)
    chosen = sandbox if isinstance(sandbox, Sandbox) else limits.sandbox or Sandbox()
    problem = unavailable(chosen)  # before any worker starts: one clear message
    if problem:
        raise GradingSetupError(f"cannot sandbox the kernels: {problem} {INSTALL_HINT}")
    return dataclasses.replace(limits, sandbox=chosen)


def _socket_root(limits: Limits) -> Limits:
    """One folder for the batch's socket folders, which grade() removes when it ends."""
    if limits.sandbox is None:
        return limits
    sockets = tempfile.mkdtemp(prefix="minijit-sockets-", dir="/tmp")
    return dataclasses.replace(limits, sandbox=dataclasses.replace(limits.sandbox,
                                                                   sockets_in=sockets))


def _failed(message: str, kind: str = "grader_error") -> RunResult:
    result = RunResult()
    result.add(kind, message)
    return result


# ----------------------------------------------------------------------------------------
# Outputs
# ----------------------------------------------------------------------------------------


def _num(x: float) -> str:
    return f"{x:g}"


def _cell(text: str) -> str:
    # A file named "=HYPERLINK(...).ipynb" must not become a formula in a spreadsheet.
    return "'" + text if text[:1] in ("=", "+", "-", "@", "\t", "\r") else text


def write_csv(rows: Sequence[Row], plan: Plan, path: str | os.PathLike) -> None:
    ids = [ex.id for ex in plan.exercises]
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["student", *ids, "total", "max_total", "status", "seconds", "detail"])
        for r in rows:
            w.writerow([_cell(r.student), *(_num(r.scores[i].points) for i in ids),
                        _num(r.total), _num(r.max_total), r.status, f"{r.seconds:.2f}",
                        _cell(r.detail)])


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
            lines.append(f"Not graded further: {OUTCOME_WORDS.get(sc.outcome, sc.outcome)}.")
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
