"""How fast does the batch grader go? N copies of a solution notebook, graded at 1, 2 and
all usable jobs.

    python benchmarks/bench_grading.py                      # 40 submissions; 1, 2, all jobs
    python benchmarks/bench_grading.py --n 8 --repeat 3     # smaller, three rounds
    python benchmarks/bench_grading.py --n 40 --jobs 2 --cores 2 \\
        --notebook solutions/04_jit_and_the_cache.ipynb

Prints one markdown table, a row per number of jobs: wall time per submission (the
throughput figure; the course's goal is at most 2 s per submission on 2 cores), each
submission's own time (latency, as in the gradebook's ``seconds`` column), the CPU time per
submission of the workers and kernels together (the figure that other load on the machine
disturbs least), and the load average when each run started; then what one kernel start
costs on its own, since kernel start-up dominates. The runs are interleaved (1, 2, all,
then again, ``--repeat`` rounds), so that a change of load on the machine falls on every
row alike. ``--jobs`` grades at the numbers given instead (``--jobs 2`` or ``--jobs
1,4``). "All usable" is :func:`minijit.threads.usable_cpus`: the CPUs of the affinity
mask within the container's quota. ``--cores K`` pins this process and everything it starts
(workers, kernels) to K CPUs (Linux), to measure "on 2 cores" on a bigger machine.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def kernel_start_seconds(repeat: int = 3) -> float:
    """Median time to start a kernel, see it answer, and shut it down."""
    from jupyter_client.manager import AsyncKernelManager

    from minijit.grading.kernel import kernel_spec

    async def once() -> float:
        t0 = time.perf_counter()
        km = AsyncKernelManager(kernel_name="python3")
        km._kernel_spec = kernel_spec()  # the grader's own interpreter
        await km.start_kernel(stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        kc = km.client()
        kc.start_channels()
        await kc.wait_for_ready(timeout=60)
        kc.stop_channels()
        await km.shutdown_kernel(now=True)
        return time.perf_counter() - t0

    return statistics.median(asyncio.run(once()) for _ in range(repeat))


def _jobs(text: str | None) -> list[int]:
    """The numbers of jobs to grade at: those given, else 1, 2 and all usable CPUs."""
    from minijit.threads import usable_cpus

    wanted = [int(j) for j in text.split(",")] if text else [1, 2, usable_cpus()]
    if any(j < 1 for j in wanted):
        raise SystemExit(f"--jobs: each number of jobs must be at least 1, got {text!r}")
    return sorted(set(wanted))


def _load() -> float:
    return os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")


def grade_once(subs: Path, exercises, jobs: int, tmp: Path) -> dict:
    """One batch at ``jobs``: wall time, each submission's own time, CPU time, statuses."""
    from minijit.grading.batch import grade

    out = Path(tempfile.mkdtemp(dir=tmp))  # a fresh gradebook: grade() merges into one
    load = _load()
    sampler = _TreeCPU()
    t0 = time.perf_counter()
    rows = grade([subs], exercises=exercises, out=out / "gradebook.csv",
                 feedback_dir=out / "feedback", jobs=jobs, progress=False)
    wall = time.perf_counter() - t0
    cpu = sampler.stop()
    return {"wall": wall, "latencies": [r.seconds for r in rows], "cpu": cpu, "load": load,
            "statuses": {r.status for r in rows},
            "full": sum(r.total == r.max_total for r in rows), "rows": len(rows)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=40, help="submissions (default: 40)")
    parser.add_argument("--jobs", default=None,
                        help="parallel kernels, one number or several (2 or 1,4; default: "
                             "1, 2 and all usable CPUs)")
    parser.add_argument("--repeat", type=int, default=1,
                        help="rounds of runs, interleaved (default: 1)")
    parser.add_argument("--cores", type=int, default=None,
                        help="pin to this many CPUs (Linux only; default: all)")
    parser.add_argument("--notebook", default=str(REPO / "solutions" / "02_tracing.ipynb"),
                        help="the notebook to copy (default: solutions/02_tracing.ipynb)")
    args = parser.parse_args()

    if args.cores:
        os.sched_setaffinity(0, set(sorted(os.sched_getaffinity(0))[: args.cores]))
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    jobs = _jobs(args.jobs)

    from minijit.grading.registry import default_exercises
    from minijit.threads import usable_cpus

    source = Path(args.notebook)
    exercises = default_exercises()
    runs: dict[int, list[dict]] = {j: [] for j in jobs}
    load_before = _load()
    with tempfile.TemporaryDirectory() as tmp:
        subs = Path(tmp) / "submissions"
        subs.mkdir()
        for i in range(args.n):
            shutil.copy(source, subs / f"student_{i:03d}.ipynb")
        for _ in range(args.repeat):
            for j in jobs:
                runs[j].append(grade_once(subs, exercises, j, Path(tmp)))
    start = kernel_start_seconds()

    print(f"\n## Batch grading: {args.n} copies of `{source.name}`, {cores} cores in the "
          f"affinity mask, {usable_cpus()} usable, {args.repeat} round(s)\n")
    print("| jobs | **wall per submission**: median (best) | own time: median / max | "
          "CPU per submission | load average at each start | full marks | statuses |")
    print("|---|---|---|---|---|---|---|")
    for j in jobs:
        done = runs[j]
        per = [r["wall"] / args.n for r in done]
        lat = [x for r in done for x in r["latencies"]]
        cpu = statistics.median(r["cpu"] / args.n for r in done)
        loads = ", ".join(f"{r['load']:.1f}" for r in done)
        statuses = ", ".join(sorted(set().union(*(r["statuses"] for r in done))))
        print(f"| {j} | **{statistics.median(per):.2f} s** ({min(per):.2f} s) | "
              f"{statistics.median(lat):.2f} s / {max(lat):.2f} s | {cpu:.2f} s | "
              f"{loads} | "
              f"{sum(r['full'] for r in done)} / {sum(r['rows'] for r in done)} | "
              f"{statuses} |")
    print(f"\nOne kernel start + shutdown, alone: {start:.2f} s. The course's goal: at most "
          "2 s per submission on 2 cores.")
    print(f"Python {sys.version.split()[0]}, {os.cpu_count()} CPUs on the machine; load "
          f"average {load_before:.1f} before the first run and {_load():.1f} after the last "
          "(wall times grow with other load; CPU times much less).")


class _TreeCPU:
    """CPU seconds of this process and all its descendants, sampled every 0.05 s.

    The workers are children of multiprocessing's fork server and the kernels children of
    the workers, so getrusage(RUSAGE_CHILDREN) never sees them; psutil (a dependency of
    ipykernel) does. A process's last few milliseconds can fall between two samples, so
    this is a slight underestimate.
    """

    def __init__(self) -> None:
        import psutil

        self._root = psutil.Process()
        self._seen: dict[tuple[int, float], float] = {}
        self._base = self._cpu(self._root)
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    @staticmethod
    def _cpu(proc) -> float:
        t = proc.cpu_times()
        return t.user + t.system

    def _sample(self) -> None:
        import psutil

        for proc in self._root.children(recursive=True):
            try:
                self._seen[(proc.pid, proc.create_time())] = self._cpu(proc)
            except psutil.Error:
                pass

    def _run(self) -> None:
        while not self._done.wait(0.05):
            self._sample()

    def stop(self) -> float:
        self._sample()
        self._done.set()
        self._thread.join()
        return self._cpu(self._root) - self._base + sum(self._seen.values())


if __name__ == "__main__":
    main()
