"""How many cores compiled code runs on, and whether Numba's threads may be used (chapter 09).

XLA splits a large elementwise loop over its thread pool without being asked; minijit does
the same. A kernel of `Lowering.PARALLEL_AT` elements or more runs its outer loop on Numba's
threads (`numba.prange`), chosen when a shape is compiled: a small shape gets the serial
code, and never pays for a parallel compile it does not use.

How many threads: `config.update("threads", N)` (or `MINIJIT_THREADS=N` in the
environment) where set, else `NUMBA_NUM_THREADS` where set, else every core this process may
use (`usable_cpus`: its affinity mask within the container's CPU quota, not the host's
count). `threads = 1` compiles serial code, as `jit(f, parallel=False)` does for one
function. The count is read when a function is compiled. Products call NumPy's BLAS where it
runs on that count and its threads do not spin (`codegen/blas.py`), else SciPy's (`np.dot` in
compiled code), which is given the same count.

Invariants:
- threaded code is only ever run by a threading layer that allows calls from many Python
  threads at once (OpenMP or TBB); under Numba's `workqueue`, which does not, threaded
  kernels run one at a time (`call_lock`);
- a process forked after the threads started (GNU OpenMP cannot run in such a child) runs
  every kernel serially (`forked`): the executable compiles its serial twin;
- OpenMP's idle threads sleep (`OMP_WAIT_POLICY=PASSIVE`, unless set, from `import minijit`
  on, so that it holds whoever starts Numba's threads first): on a shared machine,
  threads that spin waiting for work slowed threaded calls tenfold;
- OpenBLAS's idle threads sleep too (`OPENBLAS_THREAD_TIMEOUT=4`, unless set, for the BLAS
  that loads after the first compile: SciPy's, which compiled `np.dot` calls): left at its
  default they spin for about 0.1 s after each product, on the cores that the program's next
  kernel, or NumPy's own BLAS, needs;
- importing this module imports neither Numba nor NumPy: the grader counts cores with it.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

# cgroup v2's CPU quota of this container: "max 100000" (none) or "200000 100000" (2 CPUs).
CGROUP_CPU_MAX = Path("/sys/fs/cgroup/cpu.max")

# OpenMP's idle threads sleep rather than spin (unless the user chose). Spinning threads take
# the cores from the ones with work: on a busy machine a threaded GELU of 2**17 elements took
# 7.4 ms against 0.6 ms serial (0.6 ms sleeping, load 2.9 on 2 cores); on an idle one, BLAS's
# threads run between them (an MLP's products). Set at import: Numba's threading layer reads
# it once, when the first threaded function runs, whether minijit's or the user's own.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

_state = {"started": False, "usable": False, "layer": None, "blas": False}
_start_lock = threading.Lock()
# [0] is true in a process forked after the threads started: kernels run serially there
forked = [False]
# held around each threaded call when the threading layer cannot take concurrent calls
call_lock: threading.Lock | None = None


def usable_cpus() -> int:
    """CPUs this process may use: its affinity mask, capped by a cgroup v2 quota (rounded
    up: a quota of 1.5 CPUs is 2). At least 1."""
    if hasattr(os, "sched_getaffinity"):
        cpus = len(os.sched_getaffinity(0))
    else:
        cpus = os.cpu_count() or 1
    try:
        quota, period = CGROUP_CPU_MAX.read_text().split()
        if quota != "max":
            cpus = min(cpus, -(-int(quota) // int(period)))
    except (OSError, ValueError):
        pass  # no cgroup v2 quota to respect
    return max(1, cpus)


def _positive(name: str, text: str) -> int:
    try:
        n = int(text)
    except ValueError:
        n = 0
    if n < 1:
        raise ValueError(f"{name} must be a whole number of threads, at least 1; got {text!r}")
    return n


def num_threads() -> int:
    """The number of threads compiled code may use now (see the module docstring)."""
    from minijit.config import config

    if config.threads is not None:
        return _positive("config 'threads'", str(config.threads))
    for name in ("MINIJIT_THREADS", "NUMBA_NUM_THREADS"):
        if os.environ.get(name):
            return _positive(name, os.environ[name])
    return usable_cpus()


def wanted(parallel: bool | None) -> bool:
    """Whether a function jitted with `parallel` may get threaded kernels: `jit`'s default
    (None) when more than one thread is allowed, True always, False never. Whether threads
    can start is asked only once a kernel is large enough (`available`)."""
    if parallel is None:
        return num_threads() > 1
    return bool(parallel)


def available() -> bool:
    """Start Numba's threads (once per process) and say whether threaded code can run."""
    if _state["started"]:
        return _state["usable"] and not forked[0]
    with _start_lock:
        if not _state["started"]:
            _start()
    return _state["usable"] and not forked[0]


def _start() -> None:
    global call_lock
    import numba
    from numba.np.ufunc import parallel

    n = num_threads()
    if not parallel._is_initialized and "NUMBA_NUM_THREADS" not in os.environ:
        # Numba sizes its pool from the host's count when it is imported; a container given
        # 2 of 64 cores would start 64 threads that take turns on 2.
        numba.config.NUMBA_NUM_THREADS = parallel.NUM_THREADS = max(n, 1)
    try:
        parallel._launch_threads()
    except (ValueError, OSError, ImportError):
        _state.update(started=True, usable=False)  # no threading layer: serial code only
        return
    layer = numba.threading_layer()
    if layer == "workqueue":
        call_lock = threading.Lock()
    if layer == "omp":
        os.register_at_fork(after_in_child=lambda: forked.__setitem__(0, True))
    _state.update(started=True, usable=True, layer=layer)


def quiet_blas() -> None:
    """Before the first compile: the BLAS that Numba's `np.dot` loads (SciPy's OpenBLAS, read
    once when it loads) puts its idle threads to sleep at once (2**4 cycles of spinning
    instead of 2**28), unless the user chose. Waking them costs microseconds a product; a
    threaded program's next kernel, run while they spun, took several times as long."""
    os.environ.setdefault("OPENBLAS_THREAD_TIMEOUT", "4")


def follow_blas() -> None:
    """SciPy's OpenBLAS (the BLAS of `np.dot` in compiled code) on `num_threads()` threads,
    unless the user chose a count in the environment; NumPy's own BLAS is left alone. Called
    once a program that calls BLAS has compiled (compiling it loaded SciPy's BLAS)."""
    if _state["blas"]:
        return
    _state["blas"] = True
    if any(os.environ.get(v) for v in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS")):
        return
    n = num_threads()
    try:
        from threadpoolctl import ThreadpoolController
    except ImportError:
        return
    for pool in ThreadpoolController().select(user_api="blas").lib_controllers:
        if f"{os.sep}scipy" in pool.filepath and "numpy" not in pool.filepath:
            pool.set_num_threads(n)


def layer() -> str | None:
    """The threading layer in use ('omp', 'tbb', 'workqueue'), None before threads start."""
    return _state["layer"]
