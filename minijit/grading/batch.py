"""The batch grader: many submissions in parallel, one gradebook CSV, one feedback file each.

The work is split by trust:

- the grader's main process (trusted) loads the exercises, computes every expected value by
  running the probes on the reference solutions, and later compares and scores;
- worker processes (:mod:`minijit.grading.pool`, ``jobs`` of them) each drive one
  submission's kernel at a time with :func:`minijit.grading.runner.run_submission`, and
  receive only the probes to run, never the expected values;
- the kernels (untrusted) run the learner's code and the probes, and answer with plain data;
  each runs in a sandbox of its own (:mod:`minijit.grading.sandbox`), unless ``sandbox=False``.

Which files and students: :mod:`minijit.grading.submissions`. The CSV:
:mod:`minijit.grading.gradebook`. Feedback: :mod:`minijit.grading.feedback`. Overrides and
late penalties: :mod:`minijit.grading.adjust`. Shards: :mod:`minijit.grading.shards`.

A run is one step of a term: it grades some submissions (all, ``--resume``'s, ``--regrade``'s,
one shard's: :func:`grade`) and merges their rows into the gradebook already at ``out``,
keeping every other row with this run's adjustments applied, after a backup of the file. A
student's feedback file is written when, and only when, the student is graded; its name is
chosen over all the submissions given, so that runs and shards never collide.

Ctrl-C and SIGTERM stop the batch the same way: the workers and their kernels are killed,
the submissions not finished get a ``not_graded`` row, the CSV is rewritten, and
:class:`GradingInterrupted` (a ``KeyboardInterrupt``) is raised. A worker that dies costs
only its own submission, which is graded once more in a fresh worker (if that one dies too,
the row is ``tampered``); a worker still busy past its submission's ``--timeout`` (plus a
grace period for its kernel to stop) is killed by the main process: ``timeout``.

Worker processes start with ``forkserver`` (or ``spawn``), which imports the caller's main
module: a script that calls :func:`grade` must do so under ``if __name__ == "__main__":``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import shutil
import signal
import sys
import tempfile
import threading
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

from minijit.threads import usable_cpus

from .adjust import Adjuster, LatePolicy, adjustments, read_overrides
from .cases import Case, Exercise
from .feedback_html import write_feedback
from .gradebook import Gradebook, Record, _cell, case_results, record
from .pool import DIED, DONE, OVERRAN, Outcome, WorkerPool
from .runner import NOTE, Limits, RunResult, run_submission
from .sandbox import INSTALL_HINT, Sandbox, unavailable
from .scoring import GradingSetupError, Row, build_plan, make_row
from .shards import in_shard
from .submissions import (
    _find,
    feedback_names,
    fingerprint,
    printable,
    select_exercises,
    student_names,
)


class GradingInterrupted(KeyboardInterrupt):
    """Ctrl-C or SIGTERM stopped a batch; the gradebook was completed first (see above)."""

    def __init__(self, signum: int = signal.SIGINT) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


def _failed(message: str, kind: str = "grader_error") -> RunResult:
    result = RunResult()
    result.add(kind, message)
    return result


@contextlib.contextmanager
def _signals_interrupt() -> Iterator[None]:
    """SIGTERM (``kill``, ``timeout``, a CI cancel) and SIGINT (Ctrl-C) raise
    GradingInterrupted. SIGINT gets its handler here too, not only Python's default one: a
    process started with SIGINT ignored (a background job of a script, some test runners'
    children) inherits that, and Python then installs none, so Ctrl-C and ``kill -INT``
    would leave the batch running. Only the main thread can handle signals: elsewhere,
    no-op."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum: int, frame: object) -> None:
        raise GradingInterrupted(signum)

    old = {s: signal.signal(s, handler) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for s, h in old.items():
            signal.signal(s, h)


@contextlib.contextmanager
def _signals_held() -> Iterator[None]:
    """While the batch winds down (workers killed, rows and CSV written), a second Ctrl-C
    or SIGTERM must not cut it short: they are remembered and raised at the end."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    caught: list[int] = []
    old = {s: signal.signal(s, lambda signum, frame: caught.append(signum))
           for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for s, h in old.items():
            signal.signal(s, h)
    if caught:
        raise GradingInterrupted(caught[0])


def overrun_deadline(limits: Limits) -> float:
    """Seconds after which the main process kills a worker still busy with a submission.
    The worker stops its submission at ``limits.timeout`` itself; the grace is for its last
    interrupt to settle and its kernel to stop. Past it, the worker cannot stop (SIGSTOP,
    stuck in C code)."""
    return limits.timeout + limits.settle_timeout + 15.0


def _note(message: str) -> None:
    print(f"note: {message}", file=sys.stderr)


def _some(names: Sequence[str], limit: int = 5) -> str:
    return ", ".join(names[:limit]) + (f" and {len(names) - limit} more"
                                        if len(names) > limit else "")


def running_text(names: Sequence[str], limit: int = 3) -> str:
    """The progress bar's postfix: the notebooks being graded now."""
    if not names:
        return ""
    return "running: " + ", ".join(names[:limit]) + (
        f" (+{len(names) - limit})" if len(names) > limit else "")


def _choose(students: list[str], mine: list[int], book: Gradebook | None,
            shas: dict[int, str], adjust: Adjuster, ids: list[str], resume: bool,
            regrade: Sequence[str] | None) -> list[int]:
    """The submissions this run grades, of those in its shard (``mine``)."""
    if regrade is not None:
        known = {n: i for i, n in enumerate(students)} | {
            _cell(n): i for i, n in enumerate(students)}
        unknown = [n for n in regrade if n not in known]
        if unknown:
            raise GradingSetupError(
                f"--regrade {_some(unknown)}: no submission of that name among the "
                f"{len(students)} given (names come from the paths: {_some(sorted(students))})")
        wanted = {known[n] for n in regrade}
        return [i for i in mine if i in wanted]
    if not resume or book is None:
        return list(mine)

    def current(i: int) -> bool:
        # kept when graded (not not_graded), from the same bytes, and its adjustments are
        # this run's (else its feedback file would not say them)
        old = book.old.get(_cell(students[i]))
        return (old is not None and old["status"] != "not_graded" and old["sha256"] == shas[i]
                and adjust.apply(old, ids) == old)

    return [i for i in mine if not current(i)]


def grade(submissions: Sequence[str | os.PathLike], *, exercises: dict[str, Exercise],
          out: str | os.PathLike | None = None, feedback_dir: str | os.PathLike | None = None,
          hidden_cases: dict[str, tuple[Case, ...]] | None = None,
          assignment: Sequence[str] | None = None, jobs: int | None = None,
          limits: Limits | None = None, progress: bool = True,
          resume: bool = False, regrade: Sequence[str] | None = None,
          shard: tuple[int, int] | None = None, overrides: str | os.PathLike | None = None,
          late: LatePolicy | None = None, sandbox: bool | Sandbox = True) -> list[Row]:
    """Grade ``submissions`` (files or folders); write the CSV and feedback; return the rows
    graded in this run, sorted by student (rows kept are in the CSV only).

    Which are graded: all of them; with ``resume``, those without a row in ``out``, or a
    ``not_graded`` one, or a row of other bytes (its ``sha256``) or of other adjustments;
    with ``regrade``, the students named (each must be among the submissions); with
    ``shard=(K, N)``, only those of shard K (:mod:`minijit.grading.shards`). Every other row
    already in ``out`` is kept, with this run's ``overrides`` (a CSV, see
    :mod:`minijit.grading.adjust`) and ``late`` policy applied; the file replaced is first
    backed up (:mod:`minijit.grading.gradebook`).

    Each kernel runs in a :mod:`minijit.grading.sandbox` (``sandbox=True``, or a
    :class:`Sandbox` with other limits); where none can start, GradingSetupError says how to
    get one. ``sandbox=False`` runs the kernels as the grader, as ``--no-sandbox`` does.
    """
    from tqdm.auto import tqdm

    if resume and regrade is not None:
        raise GradingSetupError("--resume and --regrade: choose one (--regrade NAME grades "
                                "the students named, --resume those whose row is not current)")
    limits = _with_sandbox(limits or Limits(), sandbox)
    subs = _find(submissions)
    if not subs:
        raise GradingSetupError("no notebooks to grade")
    students = [printable(n) for n in student_names([s.path for s in subs])]
    readable = [i for i, s in enumerate(subs) if s.read is not None]
    chosen = select_exercises([subs[i].read for i in readable], exercises, assignment,
                              names=[students[i] for i in readable])
    ids = [ex.id for ex in chosen]
    adjust = Adjuster(read_overrides(overrides, {ex.id: ex.points for ex in chosen})
                      if overrides is not None else None, late)
    book = Gradebook(out, ids) if out is not None else None
    if book is not None:
        book.load(resume)
    mine = [i for i in range(len(subs)) if shard is None or in_shard(students[i], shard)]
    shas = {i: fingerprint(subs[i].read) for i in mine}
    todo = _choose(students, mine, book, shas, adjust, ids, resume, regrade)
    graded_now = {_cell(students[i]) for i in todo}
    kept: dict[str, Record] = {}
    if book is not None:
        kept = {k: adjust.apply(r, ids) for k, r in book.old.items() if k not in graded_now}
        changed = sorted(k for k, r in kept.items() if r != book.old[k])
        if changed:
            _note(f"{len(changed)} rows kept from {out} were updated for this run's overrides "
                  f"and late policy, not regraded (their feedback files are as they were): "
                  f"{_some(changed)}")
        new = sorted(k for k in graded_now if k not in book.old)
        if book.old and kept and new:
            _note(f"{len(new)} students had no row in {out} before: {_some(new)} (a notebook "
                  "given alone is named after its file; give the whole folder and --regrade "
                  "NAME to regrade one student)")
    feedback: dict[int, Path] = {}
    if feedback_dir is not None:
        # Names over ALL submissions, not this run's: shards and regrades never collide.
        root = Path(feedback_dir)
        taken = ([Path(out).name] if out is not None and
                 Path(os.path.abspath(out)).parent == Path(os.path.abspath(root)) else [])
        names = feedback_names(students, taken)
        feedback = {i: root / names[i] for i in todo}
    queue = [i for i in todo if subs[i].read is not None]
    pool = WorkerPool(max(1, min(jobs or usable_cpus(), len(queue) or 1)),
                      run_submission, overrun_deadline(limits)) if queue else None
    # The workers boot while the expected values compute. A setup error stops here, before
    # any file is written.
    try:
        plan = build_plan(chosen, hidden_cases)
        try:
            if book is not None:
                book.start(kept)
            if feedback:
                Path(feedback_dir).mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise GradingSetupError(f"cannot write the outputs: {exc}") from None
    except BaseException:
        if pool is not None:
            pool.close(graceful=False)
        raise
    if book is not None and book.backup is not None:
        _note(f"the gradebook {out} was there before this run: saved as {book.backup}")

    limits = _socket_root(limits)
    rows: dict[int, Row] = {}
    records: dict[int, Record] = {}
    fed: set[int] = set()  # rows whose feedback file is written
    running: set[int] = set()
    bar = tqdm(total=len(todo), unit="nb", desc="grading", disable=not progress)

    def show_running(refresh: bool = True) -> None:
        bar.set_postfix_str(running_text([students[j] for j in sorted(running)]),
                            refresh=refresh)

    def write_out(i: int) -> None:
        # Idempotent, so that the wind-down can call it again for a row whose writing an
        # interrupt cut short.
        if book is not None:
            book.append(records[i])
        if i in feedback and i not in fed:
            write_feedback(feedback[i], rows[i])  # <name>.md and <name>.html
            fed.add(i)

    def finish(i: int, run: RunResult) -> None:
        row = make_row(students[i], subs[i].path, plan, run)
        records[i] = adjust.apply(record(row, ids, shas[i], case_results(row)), ids)
        row.adjustments = adjustments(records[i], late)
        final = float(records[i]["total"])  # after the adjustments
        row.final_total = final if final != row.total else None
        rows[i] = row
        write_out(i)
        running.discard(i)
        show_running(refresh=False)
        bar.update(1)

    died: dict[int, str] = {}  # submissions whose worker died once, and how
    interrupted = False
    try:
        with _signals_interrupt():
            for i in todo:
                if subs[i].read is None:
                    finish(i, _failed(subs[i].problem or "not read", kind="invalid_notebook"))
            while pool is not None and (queue or pool.busy()):
                if pool.failed:
                    while queue:
                        finish(queue.pop(0), _failed(f"the grader could not start its worker "
                                                     f"processes: {pool.failed}"))
                    if not pool.busy():
                        break
                # Rows are written as results come in, before the next submission starts:
                # with one worker, each row is on disk before the next notebook runs.
                while queue and pool.free():
                    pool.submit(queue[0], (subs[queue[0]].read, plan.probes, limits))
                    running.add(queue.pop(0))
                    show_running()
                for o in pool.wait():
                    _conclude(o, died, limits, queue, finish)
    except KeyboardInterrupt:
        interrupted = True
        raise
    finally:
        with _signals_held():
            bar.close()
            if pool is not None:
                pool.close(graceful=not interrupted)
            if limits.sandbox is not None:  # the socket folders, even those of killed workers
                shutil.rmtree(limits.sandbox.sockets_in, ignore_errors=True)
            # Ctrl-C, SIGTERM or a grader bug: the submissions not finished get their row.
            for i in todo:
                if i not in rows:
                    finish(i, _failed("the grader stopped before this notebook",
                                      kind="not_graded"))
                write_out(i)
            if book is not None:
                book.finish()
    if adjust.unused():
        _note(f"--overrides names students with no row in this gradebook: "
              f"{_some(adjust.unused())} (a typo? with --shard, another shard's students)")
    untimed = sorted(set(adjust.untimed))
    if untimed:
        _note(f"no submission time for {_some(untimed)}: no late penalty for them")
    return sorted(rows.values(), key=lambda r: r.student)


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


def _conclude(o: Outcome, died: dict[int, str], limits: Limits, queue: list[int],
              finish: Callable[[int, RunResult], None]) -> None:
    """What one pool outcome means for its submission's row."""
    if o.kind == DONE:
        run = o.value
        if o.index in died:
            run.add(NOTE, f"the grader's worker process died while grading this notebook "
                          f"({died[o.index]}); it was graded again")
        finish(o.index, run)
    elif o.kind == DIED:
        if o.index in died:  # twice: the notebook does it
            finish(o.index, _failed(f"the notebook killed the grader's worker process "
                                    f"(twice: {died[o.index]}, then {o.value})",
                                    kind="tampered"))
        else:  # once: maybe the notebook, maybe something else; once more, fresh worker
            died[o.index] = o.value
            queue.insert(0, o.index)
    elif o.kind == OVERRAN:
        run = _failed(f"the submission ran past its {limits.timeout:g} s limit and its "
                      f"grading process did not stop; it was killed after {o.seconds:.0f} s",
                      kind="timeout")
        run.seconds = o.seconds
        finish(o.index, run)
    else:  # FAILED: the worker itself raised
        finish(o.index, _failed(str(o.value)))
