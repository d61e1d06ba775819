"""How fast does the batch grader go? N copies of a solution notebook, graded on J cores.

    python benchmarks/bench_grading.py                      # 40 submissions, 2 jobs
    python benchmarks/bench_grading.py --n 40 --jobs 2 --cores 2 \\
        --notebook solutions/04_jit_and_the_cache.ipynb

Prints a markdown table: wall time, wall time per submission (the throughput figure; the
course's goal is at most 2 s per submission on 2 cores), each submission's own time
(latency, as in the gradebook's ``seconds`` column), the CPU time per submission of the
workers and kernels together (the figure that other load on the machine disturbs least),
and what one kernel start costs on its own, since kernel start-up dominates. ``--cores K``
pins this process and everything it starts (workers, kernels) to K CPUs (Linux), to measure
"on 2 cores" on a bigger machine.
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=40, help="submissions (default: 40)")
    parser.add_argument("--jobs", type=int, default=2, help="parallel kernels (default: 2)")
    parser.add_argument("--cores", type=int, default=None,
                        help="pin to this many CPUs (Linux only; default: all)")
    parser.add_argument("--notebook", default=str(REPO / "solutions" / "02_tracing.ipynb"),
                        help="the notebook to copy (default: solutions/02_tracing.ipynb)")
    args = parser.parse_args()

    if args.cores:
        os.sched_setaffinity(0, set(sorted(os.sched_getaffinity(0))[: args.cores]))
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()

    from minijit.grading.batch import grade
    from minijit.grading.registry import default_exercises

    source = Path(args.notebook)
    exercises = default_exercises()
    with tempfile.TemporaryDirectory() as tmp:
        subs = Path(tmp) / "submissions"
        subs.mkdir()
        for i in range(args.n):
            shutil.copy(source, subs / f"student_{i:03d}.ipynb")
        sampler = _TreeCPU()
        t0 = time.perf_counter()
        rows = grade([subs], exercises=exercises, out=Path(tmp) / "gradebook.csv",
                     feedback_dir=Path(tmp) / "feedback", jobs=args.jobs, progress=False)
        wall = time.perf_counter() - t0
        cpu = sampler.stop()
    start = kernel_start_seconds()
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")

    latencies = [r.seconds for r in rows]
    statuses = sorted({r.status for r in rows})
    full = sum(r.total == r.max_total for r in rows)
    print(f"\n## Batch grading: {args.n} copies of `{source.name}`, {args.jobs} jobs, "
          f"{cores} cores\n")
    print("| measure | value |")
    print("|---|---|")
    print(f"| wall time, whole batch | {wall:.1f} s |")
    print(f"| **wall time per submission** (goal: at most 2 s) | **{wall / args.n:.2f} s** |")
    print(f"| one submission's own time: median / max | {statistics.median(latencies):.2f} s / "
          f"{max(latencies):.2f} s |")
    print(f"| CPU time per submission (grader, workers, kernels; sampled) | "
          f"{cpu / args.n:.2f} s |")
    print(f"| the same over {cores} cores: the floor on an idle machine | "
          f"{cpu / args.n / cores:.2f} s |")
    print(f"| one kernel start + shutdown, alone | {start:.2f} s |")
    print(f"| statuses | {', '.join(statuses)} |")
    print(f"| full marks | {full} / {len(rows)} |")
    print(f"\nPython {sys.version.split()[0]}, {os.cpu_count()} CPUs on the machine, load "
          f"average {load:.1f} when the batch ended (wall times grow with other load; CPU "
          "times much less).")


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
