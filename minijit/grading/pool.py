"""The grader's worker processes, each watched by the main process.

A worker runs one submission at a time (``target(*args)``, in the grader
:func:`minijit.grading.runner.run_submission`) and answers on a pipe of its own, so the main
process always knows which submission each worker holds and since when. That is what lets
it keep its promises whatever a submission does to its worker:

- a worker that dies (killed from its kernel, or by anything else) costs only the
  submission it held, reported as :data:`DIED`; the other workers go on;
- a worker still busy ``deadline`` seconds after it took its submission (stopped with
  SIGSTOP, stuck in C code that ignores signals) is killed with every process below it,
  reported as :data:`OVERRAN`, and replaced;
- :meth:`WorkerPool.close` (the end of a batch, Ctrl-C, SIGTERM) kills every worker and
  every process below it, so that no kernel outlives the batch;
- if the main process itself dies (SIGKILL), each worker notices (its parent's sentinel
  closes), kills what it started and exits.

On Linux each worker is a child subreaper: a process that a notebook detaches (a double
fork) is re-parented to its worker rather than to init, so it is found, and killed when its
submission ends. Workers are named ``minijit-worker`` (``ps``, ``top``; tests find them so).

Nothing is left in the system's temporary folder either: each worker's temporary files (the
runner's working folders) go in a folder of its own (``tempfile.tempdir``) under the pool's
:attr:`WorkerPool.scratch`; the pool removes a worker's folder when the worker is lost, and
the whole scratch folder when it closes. A worker that outlives its pool removes its own.
"""

from __future__ import annotations

import contextlib
import ctypes
import multiprocessing
import os
import shutil
import signal
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from multiprocessing.connection import Connection
from multiprocessing.connection import wait as wait_for
from typing import Any

from .process_tree import kill_tree

# What happened to a submission, as WorkerPool.wait reports it.
DONE = "done"  # the target returned; ``value`` is what it returned
FAILED = "failed"  # the target raised; ``value`` says what, in words
DIED = "died"  # the worker died while holding it; ``value`` says how
OVERRAN = "overran"  # the worker was still busy at its deadline and was killed

WORKER_NAME = b"minijit-worker"


@dataclass(frozen=True)
class Outcome:
    index: int
    kind: str  # DONE, FAILED, DIED or OVERRAN
    value: Any
    seconds: float


# ----------------------------------------------------------------------------------------
# The worker side
# ----------------------------------------------------------------------------------------


def _prctl(option: int, value: int | bytes) -> None:
    if not sys.platform.startswith("linux"):
        return
    with contextlib.suppress(Exception):  # best effort: names and reaping only
        ctypes.CDLL(None, use_errno=True).prctl(option, value, 0, 0, 0)


def _ignore_interrupt(signum: int, frame: Any) -> None:
    # Ctrl-C reaches every process of the terminal's foreground group; stopping the batch
    # is the main process's decision (it then kills the workers). A Python handler, not
    # SIG_IGN: the kernels a worker starts must still be interruptible with SIGINT, and a
    # handler, unlike SIG_IGN, is reset by exec.
    pass


def _terminate(signum: int, frame: Any) -> None:
    # SIGTERM to a worker (``timeout`` and CI runners signal the whole process group): the
    # kernels it started end with it, instead of living on without their grader.
    _reap(kill_tree(os.getpid(), include_root=False))
    _remove_scratch()
    os._exit(128 + signum)


def scratch_folder(scratch: str, pid: int) -> str:
    """The temporary folder of the worker ``pid`` in the pool's ``scratch`` folder."""
    return os.path.join(scratch, f"worker-{pid}")


def _remove_scratch() -> None:
    """Remove this worker's temporary folder, and the pool's if it is the last one there
    (the pool is gone: its main process died)."""
    mine = tempfile.tempdir
    if mine and os.path.basename(mine).startswith("worker-"):
        shutil.rmtree(mine, ignore_errors=True)
        with contextlib.suppress(OSError):  # not empty: other workers still at work
            os.rmdir(os.path.dirname(mine))


def _reap(pids: Sequence[int]) -> None:
    """Collect the exit status of the killed processes that were this process's children
    (detached ones, re-parented here), so that no zombie is left."""
    for p in pids:
        with contextlib.suppress(ChildProcessError, OSError):
            os.waitpid(p, 0)


def _exit_with_parent(sentinel: int) -> None:
    wait_for([sentinel])
    _reap(kill_tree(os.getpid(), include_root=False))
    _remove_scratch()
    os._exit(1)


def _worker(conn: Connection, target: Callable[..., Any], scratch: str) -> None:
    """A worker's life: announce itself, then one submission per message until told to
    stop (``None``) or until the main process goes away. Its temporary files go in its
    folder of the pool's ``scratch`` folder."""
    _prctl(15, WORKER_NAME)  # PR_SET_NAME
    _prctl(36, 1)  # PR_SET_CHILD_SUBREAPER
    mine = scratch_folder(scratch, os.getpid())
    os.makedirs(mine, mode=0o700, exist_ok=True)
    tempfile.tempdir = mine
    signal.signal(signal.SIGINT, _ignore_interrupt)
    signal.signal(signal.SIGTERM, _terminate)
    parent = multiprocessing.parent_process()
    if parent is not None:
        threading.Thread(target=_exit_with_parent, args=(parent.sentinel,),
                         daemon=True).start()
    conn.send(("ready", None, None))
    while True:
        try:
            task = conn.recv()
        except (EOFError, OSError):
            break
        if task is None:
            break
        index, args = task
        try:
            reply: tuple[str, int, Any] = (DONE, index, target(*args))
        except BaseException as exc:  # noqa: BLE001 - the main process decides what it means
            reply = (FAILED, index, f"{type(exc).__name__}: {exc}")
        # What the submission left running (a detached child, a kernel's children) ends
        # with it, before the next one starts.
        _reap(kill_tree(os.getpid(), include_root=False))
        try:
            conn.send(reply)
        except Exception as exc:  # noqa: BLE001 - e.g. a result that cannot be pickled
            conn.send((FAILED, index, f"the result could not be sent: "
                                      f"{type(exc).__name__}: {exc}"))
    _remove_scratch()


# ----------------------------------------------------------------------------------------
# The main side
# ----------------------------------------------------------------------------------------


@dataclass(eq=False)  # each worker is itself: compared and hashed by identity
class _Worker:
    process: Any  # a multiprocessing process
    conn: Connection
    since: float  # when it was started, or when it took its task
    ready: bool = False
    task: int | None = None


def _context() -> Any:
    # forkserver: workers fork from a server that imported nbclient once (it takes
    # seconds), without inheriting this process's threads or reference-solution state.
    methods = multiprocessing.get_all_start_methods()
    if "forkserver" in methods:
        ctx = multiprocessing.get_context("forkserver")
        ctx.set_forkserver_preload(["minijit.grading.runner", "minijit.grading.pool"])
        return ctx
    return multiprocessing.get_context("spawn")


def _how_it_ended(exitcode: int | None) -> str:
    if exitcode is None:
        return "it stopped answering"
    if exitcode < 0:
        try:
            return f"killed by {signal.Signals(-exitcode).name}"
        except ValueError:
            return f"killed by signal {-exitcode}"
    return f"it exited with code {exitcode}"


class WorkerPool:
    """Up to ``jobs`` workers running ``target``; see the module docstring.

    Invariant: every index given to :meth:`submit` comes back exactly once from
    :meth:`wait`, as DONE, FAILED, DIED or OVERRAN, unless :meth:`close` comes first.
    When workers keep failing to start, :attr:`failed` says so and none is started again:
    the caller should give up on what it has not submitted yet.
    """

    def __init__(self, jobs: int, target: Callable[..., Any], deadline: float,
                 boot_timeout: float = 120.0, max_boot_failures: int = 3) -> None:
        self.jobs, self.target, self.deadline = jobs, target, deadline
        self.boot_timeout, self.max_boot_failures = boot_timeout, max_boot_failures
        self.boot_failures = 0
        # Set when workers keep failing to start: no new one is started after that.
        self.failed: str | None = None
        self.ctx = _context()
        self.workers: list[_Worker] = []
        # The workers' temporary folders, one each (see the module docstring).
        self.scratch = tempfile.mkdtemp(prefix="minijit-grade-")
        self._fill()

    def _fill(self) -> None:
        while len(self.workers) < self.jobs and self.failed is None:
            mine, theirs = self.ctx.Pipe()
            process = self.ctx.Process(target=_worker, args=(theirs, self.target, self.scratch),
                                       name="minijit-worker", daemon=True)
            process.start()
            theirs.close()
            self.workers.append(_Worker(process, mine, time.monotonic()))

    def free(self) -> int:
        """How many workers can take a submission now (new ones are started as needed)."""
        self._fill()
        return sum(w.ready and w.task is None for w in self.workers)

    def busy(self) -> bool:
        return any(w.task is not None for w in self.workers)

    def submit(self, index: int, args: tuple[Any, ...]) -> None:
        w = next(w for w in self.workers if w.ready and w.task is None)
        w.task, w.since = index, time.monotonic()
        try:
            w.conn.send((index, args))
        except OSError:  # it died just now: wait() reports it with its sentinel
            pass

    def _remove(self, w: _Worker) -> None:
        self.workers.remove(w)
        with contextlib.suppress(OSError):
            w.conn.close()
        w.process.join(timeout=5)
        # what a killed worker was writing (a submission's working folder, say)
        shutil.rmtree(scratch_folder(self.scratch, w.process.pid), ignore_errors=True)

    def _lost(self, w: _Worker, kind: str, value: Any, now: float) -> list[Outcome]:
        task, booting = w.task, not w.ready
        self._remove(w)
        if booting:
            self.boot_failures += 1
            if self.boot_failures >= self.max_boot_failures:
                self.failed = (f"{self.boot_failures} worker processes in a row failed to "
                               f"start (the last: {value})")
        return [] if task is None else [Outcome(task, kind, value, now - w.since)]

    def wait(self) -> list[Outcome]:
        """Block until a submission ends, a worker becomes ready, or a deadline passes."""
        now = time.monotonic()
        limits = [w.since + (self.deadline if w.ready else self.boot_timeout)
                  for w in self.workers if w.task is not None or not w.ready]
        timeout = max(0.0, min(limits) - now) if limits else None
        watched: dict[Any, _Worker] = {}
        for w in self.workers:
            watched[w.conn] = w
            watched[w.process.sentinel] = w
        ready = wait_for(list(watched), timeout)
        now = time.monotonic()
        outcomes: list[Outcome] = []
        for w in list(dict.fromkeys(watched[r] for r in ready)):
            gone = False
            # Read what it said before it ended, if it did: a result sent just before a
            # death still counts.
            try:
                while not gone and w.conn.poll():
                    kind, index, value = w.conn.recv()
                    if kind == "ready":
                        w.ready, w.since = True, now
                        self.boot_failures = 0
                    elif index == w.task:
                        outcomes.append(Outcome(index, kind, value, now - w.since))
                        w.task = None
            except Exception:  # noqa: BLE001 - EOF, or a message that cannot be read
                gone = True
            if gone or not w.process.is_alive():
                if w.process.is_alive():  # alive but unreadable: it cannot be trusted
                    kill_tree(w.process.pid)
                # A dead worker's children were re-parented when it died: it has no tree
                # left to kill, and its pid may already belong to someone else.
                w.process.join(timeout=5)
                outcomes += self._lost(w, DIED, _how_it_ended(w.process.exitcode), now)
        for w in list(self.workers):
            if w.task is not None and now >= w.since + self.deadline:
                kill_tree(w.process.pid)
                outcomes += self._lost(w, OVERRAN, "", now)
            elif not w.ready and now >= w.since + self.boot_timeout:
                kill_tree(w.process.pid)
                outcomes += self._lost(w, DIED, "it did not start in time", now)
        return outcomes

    def close(self, *, graceful: bool = True) -> None:
        """Stop every worker and everything below it. ``graceful``: idle workers are
        asked to exit first (busy ones are always killed)."""
        if graceful:
            for w in self.workers:
                if w.task is None:
                    with contextlib.suppress(OSError):
                        w.conn.send(None)
            end = time.monotonic() + 5
            for w in self.workers:
                if w.task is None:
                    w.process.join(timeout=max(0.0, end - time.monotonic()))
        for w in self.workers:
            if w.process.is_alive():
                kill_tree(w.process.pid)
        for w in list(self.workers):
            self._remove(w)
        shutil.rmtree(self.scratch, ignore_errors=True)
