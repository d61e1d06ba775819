"""minijit side by side with NumPy, numexpr, hand-written Numba and JAX: one command.

    python benchmarks/bench_minijit.py                 # everything, both modes (10-20 min)
    python benchmarks/bench_minijit.py --quick         # small sizes, few repeats (smoke test)
    python benchmarks/bench_minijit.py --only W1,W3 --modes all --out /tmp/bench

Every timed workload runs in two modes, each in a process of its own started by `main`
(this script again, with the hidden `--mode`): every contender on one core, and every
contender on all usable cores (`mode_env`, README.md). The parent merges them into
DIR/results.md (the goals, read at all cores; minijit ÷ JAX in both modes; one time table
per mode, with its load average at its start and end; also printed), DIR/results.json
(every number), DIR/w1_gelu.png (W1: time against n, log-log, both modes, with the copy of
its input), DIR/ratios.png (the other workloads at all cores, time relative to hand-written
Numba) and DIR/vs_jax.png (minijit ÷ JAX, both modes); DIR defaults to benchmarks/results/
(git-ignored).

Workloads (see workloads.py and README.md): W1 GELU and COPY (a copy of its input: the
physical limit), W2 softmax, W3 relu(A @ B + b), W4 Newton and Mandelbrot loops, W5 the cost
of one cached call, W6 the first call (cold in this process; in a new process with a warm
disk cache), W7 an MLP forward pass, W8 a Jacobi while_loop solver, W9 the first call of a
compiled program at a new shape, LN a layer norm over axis 1, ATT attention, MEM the peak
memory of W1, SCALE the first call of programs of growing size (each in a process of its
own, with a time limit), minijit against JAX. W6, W9, MEM and SCALE run once, in the
all-cores mode. Every contender's result is checked against NumPy's before it is timed; a
wrong one is reported as FAILED. Timings are medians of repeated runs, the contenders of a
workload interleaved run by run, so that a change of load on a shared machine hits all of
them alike: compare ratios within one run.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys

os.environ.setdefault("MPLBACKEND", "Agg")

import gc  # noqa: E402
import inspect  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import platform  # noqa: E402
import random  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from collections.abc import Callable  # noqa: E402
from concurrent.futures import ThreadPoolExecutor  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
from tqdm import tqdm  # noqa: E402

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))

import workloads as W  # noqa: E402

GROUPS = ("W1", "COPY", "W2", "W3", "W4", "W5", "W6", "W7", "W8", "W9", "LN", "ATT", "MEM",
          "SCALE")
# Timed in both modes; the others (first calls, compile scaling, peak memory) run once, in
# the all-cores mode (the defaults a user gets), or in the one-core mode if it runs alone.
TIMED = ("W1", "COPY", "W2", "W3", "W4", "W5", "W7", "W8", "LN", "ATT")
perf = time.perf_counter
THREAD_VARS = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")
MODES = ("one", "all")  # one thread for every contender; every usable core for every one


# --------------------------------------------------------------------------- timing


class Settings:
    def __init__(self, quick: bool):
        self.quick = quick
        # seconds of timing per workload (all contenders together), runs, seconds per sample
        self.budget, self.min_runs, self.max_runs = (0.15, 3, 7) if quick else (3.0, 7, 41)
        self.sample_s = 0.004 if quick else 0.02
        self.w6_repeats = 1 if quick else 5  # fresh functions compiled in this process
        self.w6_processes = 1 if quick else 3  # new processes with a warm disk cache
        self.mem_n = 10**6 if quick else 10**7
        self.w9_repeats = 3 if quick else 7  # new shapes, one first call each
        self.scale_timeout = 20 if quick else 120  # seconds per compile-scaling process


def estimate(call: Callable[[], object]) -> float:
    """Seconds per call, roughly (enough calls to take about a millisecond)."""
    n, t = 1, 0.0
    while True:
        t0 = perf()
        for _ in range(n):
            call()
        t = perf() - t0
        if t > 1e-3 or n >= 1 << 16:
            return t / n
        n *= 8


def measure(calls: dict[str, Callable[[], object]], s: Settings) -> dict[str, dict]:
    """Median seconds per call of each callable, interleaved run by run.

    A run times `number` back-to-back calls (enough to last `s.sample_s`); the number of
    runs fits the time budget, within [min_runs, max_runs]. The garbage collector is off
    while timing, as in `timeit`. `cores`: the process's CPU time ÷ wall time over the runs
    (the cores a contender kept busy; less than it could use when the machine is loaded)."""
    if not calls:
        return {}
    est = {k: estimate(f) for k, f in calls.items()}
    number = {k: max(1, round(s.sample_s / max(e, 1e-9))) for k, e in est.items()}
    per_run = sum(number[k] * est[k] for k in calls) or 1e-9
    runs = int(min(s.max_runs, max(s.min_runs, s.budget / per_run)))
    samples: dict[str, list[float]] = {k: [] for k in calls}
    cpu = dict.fromkeys(calls, 0.0)  # CPU seconds of the whole process while k ran
    order = list(calls)
    enabled = gc.isenabled()
    gc.collect()
    gc.disable()
    try:
        for r in range(runs):
            for k in order[r % len(order):] + order[:r % len(order)]:
                f, m = calls[k], number[k]
                c0, t0 = time.process_time(), perf()
                for _ in range(m):
                    f()
                t1 = perf()
                cpu[k] += time.process_time() - c0
                samples[k].append((t1 - t0) / m)
    finally:
        if enabled:
            gc.enable()
    return {k: {"median": statistics.median(v), "min": min(v), "runs": runs,
                "number": number[k], "cores": cpu[k] / (sum(v) * number[k])}
            for k, v in samples.items()}


# --------------------------------------------------------------------------- W1-W5


def run_workload(w: W.Workload, s: Settings) -> dict:
    """Check every contender against NumPy, then time the correct ones side by side."""
    inputs = w.make_inputs()
    cells: dict[str, dict] = {}
    calls: dict[str, Callable[[], object]] = {}
    expected = None
    for c in W.CONTENDERS:
        impl = w.impls.get(c)
        if impl is None:
            jax_missing = c == "jax" and W.jax_programs() is None
            cells[c] = {"status": "skipped" if jax_missing else "n/a"}
            continue
        try:
            call = impl.bind(inputs)
            t0 = perf()
            result = call()  # the first call compiles (Numba, minijit, JAX)
            first = perf() - t0
            if c == "numpy":
                expected = np.asarray(result)
                problem = None
            else:
                problem = w.check(expected, result)
        except Exception as e:  # a contender that crashes is reported, not fatal
            problem = f"{type(e).__name__}: {str(e).splitlines()[0][:120] if str(e) else ''}"
            first = math.nan
        if problem:
            cells[c] = {"status": "FAILED", "why": problem}
            if c == "numpy":  # no reference: nothing else can be checked
                for rest in W.CONTENDERS[1:]:
                    cells[rest] = {"status": "FAILED", "why": "no NumPy reference"}
                break
            continue
        cells[c] = {"status": "ok", "first_call_s": first, "note": impl.note}
        calls[c] = call
    for c, m in measure(calls, s).items():
        cells[c].update(m)
    return {"group": w.group, "name": w.name, "size": w.size, "param": w.param,
            "meta": w.meta, "cells": cells}


# --------------------------------------------------------------------------- W6: first call

W6_N = 1024  # no other workload uses this length, so no cache in this process has it

_W6_MINIJIT = """
import json, sys, time
t0 = time.perf_counter()
import numpy as np
import minijit as mj
import minijit.numpy as mnp
t1 = time.perf_counter()
import minijit.codegen.compile  # imports Numba (the first call would import it)
t2 = time.perf_counter()


def gelu(x):
    return 0.5 * x * (1 + mnp.tanh(0.7978845608 * (x + 0.044715 * x**3)))


f = mj.jit(gelu, backend="numba")
x = np.linspace(-3.0, 3.0, {n})
t3 = time.perf_counter()
y = f(x)
t4 = time.perf_counter()
ref = 0.5 * x * (1 + np.tanh(0.7978845608 * (x + 0.044715 * x**3)))
entry = f.cache_entries()[0]
print(json.dumps({{"import_minijit": t1 - t0, "import_numba": t2 - t1, "first_call": t4 - t3,
                  "compiled": sum(entry.executable.entry.stats.cache_misses.values()),
                  "ok": bool(np.allclose(y, ref, rtol=1e-10)), "timings": entry.timings}}))
"""

# The same first call on jit's default backend, as a learner who restarts a kernel meets it:
# whatever it imports (Numba, where the program goes to the Numba backend) is part of it.
_W6_DEFAULT = """
import json, sys, time
t0 = time.perf_counter()
import numpy as np
import minijit as mj
import minijit.numpy as mnp
t1 = time.perf_counter()


def gelu(x):
    return 0.5 * x * (1 + mnp.tanh(0.7978845608 * (x + 0.044715 * x**3)))


f = mj.jit(gelu)
x = np.linspace(-3.0, 3.0, {n})
t3 = time.perf_counter()
y = f(x)
t4 = time.perf_counter()
ref = 0.5 * x * (1 + np.tanh(0.7978845608 * (x + 0.044715 * x**3)))
print(json.dumps({{"import_minijit": t1 - t0, "first_call": t4 - t3,
                  "backend": type(f.cache_entries()[0].executable).__name__,
                  "numba_imported": "numba" in sys.modules,
                  "ok": bool(np.allclose(y, ref, rtol=1e-10))}}))
"""

_W6_NUMBA = """
import json, sys, time
t0 = time.perf_counter()
import numpy as np
import numba
t1 = time.perf_counter()
sys.path.insert(0, {folder!r})
from w6_numba_kernel import _gelu_loop as gelu_loop
x = np.linspace(-3.0, 3.0, {n})
out = np.empty_like(x)
t3 = time.perf_counter()
gelu_loop(x, out)
t4 = time.perf_counter()
ref = 0.5 * x * (1 + np.tanh(0.7978845608 * (x + 0.044715 * x**3)))
print(json.dumps({{"import_numba": t1 - t0, "first_call": t4 - t3,
                  "compiled": sum(gelu_loop.stats.cache_misses.values()),
                  "ok": bool(np.allclose(out, ref, rtol=1e-10))}}))
"""


def _numba_kernel_module() -> str:
    """The hand-written GELU kernel as a module of its own, with `cache=True`."""
    src = inspect.getsource(W._gelu_loop.py_func).splitlines()
    body = "\n".join(line for line in src if not line.startswith("@"))
    return ("import numba\nimport numpy as np\n\n\n"
            "@numba.njit(error_model='numpy', cache=True)\n" + body + "\n")


def _run_script(code: str, env: dict, timeout: float = 300) -> dict:
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                       timeout=timeout)
    if p.returncode != 0:
        raise RuntimeError(f"subprocess failed: {p.stderr.strip().splitlines()[-1:]}")
    return json.loads(p.stdout.strip().splitlines()[-1])


@contextlib.contextmanager
def _minijit_cache_dir(path: Path):
    old = os.environ.get("MINIJIT_CACHE_DIR")
    os.environ["MINIJIT_CACHE_DIR"] = str(path)
    try:
        yield
    finally:
        if old is None:
            os.environ.pop("MINIJIT_CACHE_DIR", None)
        else:
            os.environ["MINIJIT_CACHE_DIR"] = old


@contextlib.contextmanager
def _nothing_compiled_in_memory():
    """As if minijit had compiled nothing yet in this process. GELU at any length generates
    the same code (sizes are read from the arguments), so W1's compile would answer W6 from
    memory; the compiles are put back afterwards."""
    from minijit.codegen import compile as cc

    kept = dict(cc._memory)
    cc._memory.clear()
    try:
        yield
    finally:
        cc._memory.update(kept)


def w6_cold_this_process(s: Settings, tmp: Path) -> dict:
    """The first call of a fresh jitted function here, with Numba already initialised.

    A new function object, nothing compiled in memory and a disk cache pointing at an empty
    folder: neither cache can answer. The hand-written kernel gets
    a new dispatcher (no compiled code) for the same comparison."""
    import numba

    from minijit.codegen.compile import stats

    numba.njit(lambda v: v + 1.0)(1.0)  # Numba's one-off initialisation is not the point here
    minijit_s, numba_s, stages, ok = [], [], [], True
    with _minijit_cache_dir(tmp / "cold_cache"):
        for k in range(s.w6_repeats):
            n = 2 * W6_N + random.randrange(10**6)  # a length no cache has seen
            cache_dir = tmp / f"cold_cache_{k}"  # each repeat: its own empty folder
            (x,) = W.gelu_inputs(n, np.float64)
            f = W.mj.jit(W.traced_programs(W.mnp, W.mlax)["gelu"], backend="numba")
            before = stats["compiled"]
            with _minijit_cache_dir(cache_dir), _nothing_compiled_in_memory():
                t0 = perf()
                y = f(x)
                minijit_s.append(perf() - t0)
            ok &= stats["compiled"] == before + 1 and bool(
                np.allclose(y, W.gelu_numpy(x), rtol=1e-10, atol=1e-12))
            stages.append(f.cache_entries()[0].timings)
            d = numba.njit(error_model="numpy")(W._gelu_loop.py_func)
            out = np.empty_like(x)
            t0 = perf()
            d(x, out)
            numba_s.append(perf() - t0)
    mid = sorted(range(len(minijit_s)), key=minijit_s.__getitem__)[len(minijit_s) // 2]
    return {"minijit": statistics.median(minijit_s), "numba": statistics.median(numba_s),
            "minijit_all": minijit_s, "numba_all": numba_s, "stages": stages[mid], "ok": ok}


def _warm_here(cache: Path, folder: Path) -> None:
    """Fill both disk caches from this process: the same source as the scripts', compiled."""
    import importlib.util

    with _minijit_cache_dir(cache), _nothing_compiled_in_memory():
        W.mj.jit(W.traced_programs(W.mnp, W.mlax)["gelu"], backend="numba")(
            np.linspace(-3.0, 3.0, W6_N))
    spec = importlib.util.spec_from_file_location("w6_numba_kernel",
                                                  folder / "w6_numba_kernel.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["w6_numba_kernel"] = module  # Numba's cache locator looks it up by name
    try:
        spec.loader.exec_module(module)
        x = np.linspace(-3.0, 3.0, W6_N)
        module._gelu_loop(x, np.empty_like(x))
    finally:
        sys.modules.pop("w6_numba_kernel", None)


def w6_new_process(s: Settings, tmp: Path, bar) -> dict:
    """First call in a new process: with an empty disk cache (which fills it), then warm.

    --quick fills the caches from this process instead and runs the minijit and the Numba
    process side by side (its times mean little; it checks that the machinery works)."""
    env = dict(os.environ, MINIJIT_CACHE_DIR=str(tmp / "disk_cache"))
    env.pop("MINIJIT_DISK_CACHE", None)
    folder = tmp / "numba_kernel"
    folder.mkdir()
    (folder / "w6_numba_kernel.py").write_text(_numba_kernel_module())
    scripts = (_W6_MINIJIT.format(n=W6_N), _W6_NUMBA.format(n=W6_N, folder=str(folder)),
               _W6_DEFAULT.format(n=W6_N))

    def pair() -> tuple[dict, ...]:
        if not s.quick:
            return tuple(_run_script(code, env) for code in scripts)
        with ThreadPoolExecutor(len(scripts)) as pool:
            runs = [pool.submit(_run_script, code, env) for code in scripts]
            return tuple(r.result() for r in runs)

    out: dict = {}
    if s.quick:
        _warm_here(tmp / "disk_cache", folder)
    else:
        out["minijit_cold"], out["numba_cold"], out["default_cold"] = pair()
    bar.update(1)
    warm = [pair() for _ in range(s.w6_processes)]
    bar.update(1)

    def median_run(runs):
        return sorted(runs, key=lambda r: r["first_call"])[len(runs) // 2]

    warm_mj, warm_nb, warm_df = ([w[i] for w in warm] for i in range(3))
    out.update(minijit_warm=median_run(warm_mj), numba_warm=median_run(warm_nb),
               default_warm=median_run(warm_df))
    runs = (*warm_mj, *warm_nb, *warm_df, out.get("minijit_cold"), out.get("numba_cold"),
            out.get("default_cold"))
    out["ok"] = all(r["ok"] for r in runs if r)
    # A warm run that compiled means the disk cache missed: the report says so.
    out["warm_compiled"] = sum(r["compiled"] for r in (*warm_mj, *warm_nb))
    return out


# --------------------------------------------------------------------------- W9: new shape

W9_BASE = 10_000  # the k-th measured call has n = W9_BASE + k: no workload uses these lengths


def w9_new_shape(s: Settings, tmp: Path) -> dict:
    """The first call of an already compiled GELU at a shape it has not seen.

    Each contender's jitted function is compiled once at n = W9_BASE, then called at
    n = W9_BASE + k for k = 1, 2, ...: every timed call meets a new shape (minijit retraces
    and generates code again; JAX retraces and compiles with XLA). The two take turns shape
    by shape. minijit's disk cache points at an empty folder, so that an earlier run of the
    benchmark cannot answer."""
    from minijit.codegen.compile import stats

    gelu = W.traced_programs(W.mnp, W.mlax)["gelu"]
    calls: dict[str, Callable] = {}
    with _minijit_cache_dir(tmp / "w9_cache"):
        f = W.mj.jit(gelu, backend="numba")
        f(W.gelu_inputs(W9_BASE, np.float64)[0])
        calls["minijit"] = f
        jax_fn = None
        progs = W.jax_programs()
        if progs is not None:
            import jax
            import jax.numpy as jnp

            jax_fn = jax.jit(W.traced_programs(jnp, jax.lax)["gelu"])  # its own cache
            jax_fn(W.gelu_inputs(W9_BASE, np.float64)[0]).block_until_ready()
            calls["jax"] = lambda x: jax_fn(x).block_until_ready()
        times: dict[str, list[float]] = {c: [] for c in calls}
        stages, compiled, ok = [], 0, True
        for k in range(1, s.w9_repeats + 1):
            (x,) = W.gelu_inputs(W9_BASE + k, np.float64)
            expected = W.gelu_numpy(x)
            order = list(calls) if k % 2 else list(calls)[::-1]
            for c in order:
                before = stats["compiled"]
                t0 = perf()
                y = calls[c](x)
                times[c].append(perf() - t0)
                if c == "minijit":
                    compiled += stats["compiled"] - before
                    stages.append(f.cache_entries()[-1].timings)
                ok &= bool(np.allclose(np.asarray(y), expected, rtol=1e-10, atol=1e-12))
    mid = sorted(range(len(times["minijit"])), key=times["minijit"].__getitem__)[
        len(times["minijit"]) // 2]
    out = {c: {"median": statistics.median(t), "all": t} for c, t in times.items()}
    out["minijit"].update(stages=stages[mid], numba_compiles=compiled)
    out.update(ok=ok, repeats=s.w9_repeats)
    return out


# --------------------------------------------------------------------------- SCALE


def _scale_case(contender: str, case: str, k: int, s: Settings, tmp: Path) -> dict:
    """One compile-scaling measurement in a fresh process, stopped after s.scale_timeout."""
    env = dict(os.environ, MINIJIT_CACHE_DIR=str(tmp / f"scale_{contender}_{case}_{k}"))
    env.pop("MINIJIT_DISK_CACHE", None)
    try:
        p = subprocess.run([sys.executable, str(HERE / "workloads.py"), "--scale", contender,
                            case, str(k)], capture_output=True, text=True, env=env,
                           timeout=s.scale_timeout)
    except subprocess.TimeoutExpired:
        return {"status": "timeout", "after_s": s.scale_timeout}
    if p.returncode != 0:
        return {"status": "FAILED", "why": (p.stderr.strip().splitlines() or ["?"])[-1]}
    r = json.loads(p.stdout.strip().splitlines()[-1])
    if "skipped" in r:
        return {"status": "skipped", "why": r["skipped"]}
    if not r["ok"]:
        return {"status": "FAILED", "why": "result differs from NumPy's", **r}
    return {"status": "ok", **r}


def run_scale(s: Settings, tmp: Path, jax_ok: bool, bar) -> list[dict]:
    """First-call time and memory of `W.scale_program`s of growing K, minijit and JAX.

    Each (contender, program, K) runs in its own process, so that nothing compiled earlier
    helps and the peak memory is its own. Once a contender times out at some K, the larger K
    of that program are not run for it (they would only time out later). --quick runs the
    minijit and the JAX process of a K side by side (its times mean little)."""
    contenders = ["minijit", "minijit-numba"] + (["jax"] if jax_ok else [])
    rows = []
    for case, (what, full_ks, quick_ks) in W.SCALE_CASES.items():
        timed_out: set[str] = set()
        for k in quick_ks if s.quick else full_ks:
            row = {"case": case, "what": what, "k": k, "jax": {"status": "skipped"},
                   "minijit-numba": {"status": "not run"}}
            todo = [c for c in contenders if c not in timed_out]
            for c in contenders:
                if c in timed_out:
                    row[c] = {"status": "not run", "why": "a smaller K timed out"}
            bar.set_description(f"SCALE {case} K={k}")
            if s.quick:
                with ThreadPoolExecutor(2) as pool:
                    futures = {c: pool.submit(_scale_case, c, case, k, s, tmp) for c in todo}
                    row.update({c: f.result() for c, f in futures.items()})
            else:
                row.update({c: _scale_case(c, case, k, s, tmp) for c in todo})
            timed_out |= {c for c in todo if row[c]["status"] == "timeout"}
            rows.append(row)
            bar.update(1)
    return rows


def scale_steps(quick: bool) -> int:
    return sum(len(ks[2] if quick else ks[1]) for ks in W.SCALE_CASES.values())


# --------------------------------------------------------------------------- MEM


def start_memory(s: Settings, jax_ok: bool) -> dict[str, subprocess.Popen]:
    """Peak memory of one W1 call (float64, n = s.mem_n), each contender in a fresh process
    (the processes run at the same time: they measure memory, not time)."""
    # A fixed mmap threshold stops glibc from keeping freed large blocks for reuse, which
    # would hide the measured call's allocations behind the warm-up call's.
    env = dict(os.environ, MALLOC_MMAP_THRESHOLD_=str(1 << 20))
    procs = {}
    for c in W.CONTENDERS:
        if c == "jax" and not jax_ok:
            continue
        procs[c] = subprocess.Popen(
            [sys.executable, str(HERE / "workloads.py"), "--memory", c, str(s.mem_n)],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    return procs


def finish_memory(procs: dict[str, subprocess.Popen], bar) -> dict:
    out = {}
    for c, p in procs.items():
        stdout, stderr = p.communicate(timeout=600)
        if p.returncode != 0:
            out[c] = {"status": "FAILED", "why": (stderr.strip().splitlines() or ["?"])[-1]}
        else:
            out[c] = {"status": "ok", **json.loads(stdout.strip().splitlines()[-1])}
            out[c]["times_output"] = out[c]["peak_extra_bytes"] / out[c]["out_bytes"]
        bar.update(1)
    return out


# --------------------------------------------------------------------------- the report


def fmt_time(t: float) -> str:
    if t is None or not math.isfinite(t):
        return "-"
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6)):
        if t >= scale:
            return f"{t / scale:.3g} {unit}"
    return f"{t / 1e-9:.3g} ns"


def ratio(row: dict, c: str, ref: str) -> float | None:
    a, b = row["cells"].get(c, {}), row["cells"].get(ref, {})
    if a.get("status") == "ok" and b.get("status") == "ok":
        return a["median"] / b["median"]
    return None


def fmt_ratio(r: float | None) -> str:
    return "-" if r is None else f"{r:.2f}×"


def cell_text(row: dict, c: str) -> str:
    cell = row["cells"][c]
    if cell["status"] == "ok":
        return (f"{fmt_time(cell['median'])} ({fmt_ratio(ratio(row, c, 'numba'))} / "
                f"{fmt_ratio(ratio(row, c, 'numpy'))})")
    if cell["status"] == "FAILED":
        return "**FAILED**: " + cell["why"].replace("|", "\\|")
    return "n/a" if cell["status"] == "n/a" else "skipped"


def _verdict(ok: bool | None) -> str:
    """met / not met; "-" where this run could not tell (not measured, JAX skipped)."""
    return "-" if ok is None else "met" if ok else "**not met**"


def goal_mode(res: dict) -> str:
    return "all" if "all" in res["modes"] else next(iter(res["modes"]), "all")


def goals(res: dict) -> list[tuple[str, str, str]]:
    """(goal, measured, met) for every goal of the project, read from the all-cores mode
    (the one-core mode where it ran alone); the ones this run did not measure say so."""
    rows = res["modes"][goal_mode(res)]["rows"]
    one_rows = res["modes"].get("one", {}).get("rows", [])
    out = []
    verdict = _verdict

    def by(group, prefix):
        return next((r for r in rows if r["group"] == group and r["name"].startswith(prefix)),
                    None)

    def vs_jax(r, text, limit=1.0, strict=False):
        """A goal "minijit no slower than JAX" (or faster: strict) on row r."""
        x = ratio(r, "minijit", "jax")
        if x is None:
            why = "JAX skipped" if r["cells"]["jax"]["status"] == "skipped" else "-"
            out.append((text, why, verdict(None)))
        else:
            out.append((text, f"{fmt_ratio(x)} JAX's time",
                        verdict(x < limit if strict else x <= limit)))

    w1 = [r for r in rows if r["group"] == "W1"]
    for dtype in ("float64", "float32"):
        mine = [r for r in w1 if r["meta"]["dtype"] == dtype]
        if not mine:
            continue
        big = max(mine, key=lambda r: r["param"])
        r_nb, r_np = ratio(big, "minijit", "numba"), ratio(big, "minijit", "numpy")
        spread = [x for x in (ratio(r, "minijit", "numba") for r in mine) if x is not None]
        rng = f"; {min(spread):.2f}-{max(spread):.2f}× over all n" if spread else ""
        out.append((f"W1 GELU {dtype} {big['size']}: minijit within 1.05× of hand-written Numba",
                    f"{fmt_ratio(r_nb)}{rng}", verdict(r_nb is not None and r_nb <= 1.05)))
        speedup = None if r_np is None else 1 / r_np
        out.append((f"W1 GELU {dtype} {big['size']}: minijit at least 2.5× faster than NumPy",
                    "-" if speedup is None else f"{speedup:.2f}× faster",
                    verdict(speedup is not None and speedup >= 2.5)))
        # The JAX goals are stated at n = 1e6 and 1e7; a --quick run reads its largest n.
        large = [r for r in mine if r["param"] >= 10**6] or [big]
        for r in sorted(large, key=lambda r: r["param"]):
            vs_jax(r, f"W1 GELU {dtype} {r['size']}: minijit no slower than JAX")
            if dtype == "float32":
                x = ratio(r, "minijit", "numpy")
                out.append((f"W1 GELU float32 {r['size']}: minijit at least 3× faster than "
                            "NumPy", "-" if x is None else f"{1 / x:.2f}× faster",
                            verdict(x is not None and 1 / x >= 3.0)))
    copy = by("COPY", "copy")
    big64 = max((r for r in w1 if r["meta"]["dtype"] == "float64"), key=lambda r: r["param"],
                default=None)
    if copy is not None and big64 is not None:
        limits = {c: copy["cells"][c]["median"] for c in ("numpy", "numba")
                  if copy["cells"][c].get("status") == "ok"}
        mine = big64["cells"]["minijit"]
        if limits and mine.get("status") == "ok":
            best = min(limits, key=limits.get)
            x = mine["median"] / limits[best]
            out.append((f"W1 GELU float64 {big64['size']}: minijit within 1.5× of a copy of "
                        "its input", f"{x:.2f}× the copy ({fmt_time(limits[best])}, "
                        f"{W.LABELS[best]})", verdict(x <= 1.5)))
    if one_rows and rows is not one_rows:
        # The same serial code runs in both modes at these sizes: 5% slack for timing noise.
        pairs = [(r, o) for r in w1 for o in one_rows if o["group"] == "W1"
                 and o["name"] == r["name"] and o["size"] == r["size"] and r["param"] <= 10**4]
        xs = [(r["cells"]["minijit"]["median"] / o["cells"]["minijit"]["median"],
               f"{r['meta']['dtype']} {r['size']}") for r, o in pairs
              if r["cells"]["minijit"].get("status") == o["cells"]["minijit"].get("status")
              == "ok"]
        if xs:
            worst = max(xs)
            out.append(("W1 GELU at n <= 1e4: minijit at all cores no slower than at one "
                        "thread (within 5%)", f"at most {worst[0]:.2f}× ({worst[1]})",
                        verdict(worst[0] <= 1.05)))
    if "memory" in res:
        m = res["memory"].get("minijit", {})
        x = m.get("times_output")
        npx = res["memory"].get("numpy", {}).get("times_output")
        out.append((f"W1 peak memory at n={W._exp10(res['settings']['mem_n'])}: minijit no more "
                    "than the output (1% slack for RSS noise)",
                    "-" if x is None else f"{x:.2f}× the output (NumPy {npx:.2f}×)"
                    if npx is not None else f"{x:.2f}× the output",
                    verdict(x is not None and x <= 1.01)))

    # (workload, row name, reference, limit, goal): minijit's time at most `limit` times the
    # reference's; against JAX a limit of 0 means "faster than JAX".
    for group, prefix, ref, limit, text in (
            ("W2", "row-wise softmax", "numpy", 1.0, "W2 softmax: minijit no slower than NumPy"),
            ("W2", "row-wise softmax", "jax", 1.0, "W2 softmax: minijit no slower than JAX"),
            ("W3", "relu", "numpy", 1.1, "W3 relu(A @ B + b): minijit within 1.1× of NumPy"),
            ("W4", "Mandelbrot", "numba", 1.2,
             "W4 Mandelbrot: minijit within 1.2× of hand-written Numba"),
            ("W7", "MLP forward float64", "jax", 1.0,
             "W7 MLP forward float64: minijit no slower than JAX"),
            ("W7", "MLP forward float32", "jax", 1.0,
             "W7 MLP forward float32: minijit no slower than JAX"),
            ("LN", "layer norm", "jax", 1.0, "LN layer norm: minijit no slower than JAX"),
            ("ATT", "attention", "jax", 1.0, "ATT attention: minijit no slower than JAX"),
            ("W8", "Jacobi", "numba", 1.5,
             "W8 Jacobi while_loop: minijit within 1.5× of hand-written Numba"),
            ("W8", "Jacobi", "jax", 0, "W8 Jacobi while_loop: minijit faster than JAX")):
        r = by(group, prefix)
        if r is None:
            continue
        if ref == "jax":
            vs_jax(r, f"{text} ({r['size']})", limit=limit or 1.0, strict=not limit)
        else:
            x = ratio(r, "minijit", ref)
            out.append((f"{text} ({r['size']})", fmt_ratio(x),
                        verdict(x is not None and x <= limit)))
    r = by("W5", "cached")
    if r is not None and r["cells"]["minijit"]["status"] == "ok":
        t = r["cells"]["minijit"]["median"]
        out.append(("W5 cached call on 10 elements: minijit at most 2 µs",
                    f"{fmt_time(t)} (Numba {fmt_time(r['cells']['numba'].get('median'))}, "
                    f"NumPy {fmt_time(r['cells']['numpy'].get('median'))})",
                    verdict(t <= 2e-6)))
    if "w6" in res:
        w6 = res["w6"]
        t = w6["cold"]["minijit"]
        out.append(("W6 first call (trace + optimize + generate + compile): at most 0.6 s",
                    f"{t:.3f} s (hand-written Numba compile {w6['cold']['numba']:.3f} s)",
                    verdict(t <= 0.6 and w6["cold"]["ok"])))
        nw = w6["new"]
        t = nw["default_warm"]["first_call"]  # what a learner who restarts a kernel waits
        out.append(("W6 first call in a new process, warm disk cache: at most 0.3 s",
                    f"{t:.3f} s on the default backend ({nw['default_warm']['backend']}); "
                    f"{nw['minijit_warm']['first_call']:.3f} s on the Numba backend "
                    f"(hand-written Numba, cache=True: {nw['numba_warm']['first_call']:.3f} s)",
                    verdict(t <= 0.3 and nw["ok"])))
    if "w6_failed" in res:
        out.append(("W6 first call: at most 0.6 s; warm disk cache at most 0.3 s",
                    f"**FAILED**: {res['w6_failed']}", "**not met**"))
    if "w9" in res:
        w9 = res["w9"]
        t = w9["minijit"]["median"]
        jx = w9.get("jax")
        out.append(("W9 first call of a compiled GELU at a new shape: minijit under 5 ms",
                    f"{fmt_time(t)} (JAX {fmt_time(jx['median']) if jx else 'skipped'})",
                    verdict(t < 5e-3 and w9["ok"])))
    if "w9_failed" in res:
        out.append(("W9 first call at a new shape: under 5 ms",
                    f"**FAILED**: {res['w9_failed']}", "**not met**"))
    if "scale" in res:
        def scale_row(case, k):
            return next((r for r in res["scale"] if r["case"] == case and r["k"] == k), None)

        text = "SCALE first call, K=1000 independent outputs: minijit under 10 s"
        r = scale_row("outputs", 1000)
        if r is None:
            out.append((text, "not measured in this run", verdict(None)))
        else:
            m = r["minijit"]
            out.append((text, _scale_cell(m), verdict(m.get("status") == "ok"
                                                      and m["first_call"] < 10.0)))
        for case, k, who, text in (
                ("chain", 5000, "minijit", "SCALE first call, chain of K=5000 ops: minijit no "
                 "slower than JAX"),
                ("nested", 3, "minijit", "SCALE first call, control flow 3 deep: minijit no "
                 "slower than JAX")):
            r = scale_row(case, k)
            if r is None:
                out.append((text, "not measured in this run", verdict(None)))
                continue
            m, j = r[who], r["jax"]
            if j.get("status") == "ok" and m.get("status") == "ok":
                x = m["first_call"] / j["first_call"]
                out.append((text, f"{fmt_time(m['first_call'])} ({x:.2f}× JAX's "
                            f"{fmt_time(j['first_call'])})", verdict(x <= 1.0)))
            else:
                # minijit finished and JAX did not: met; minijit did not finish: not met;
                # JAX skipped or failed: nothing to compare with.
                met = (False if m.get("status") != "ok" else
                       True if j.get("status") == "timeout" else None)
                out.append((text, f"minijit {_scale_cell(m)}, JAX {_scale_cell(j)}",
                            verdict(met)))
    return out


def _first(runs: dict, key: str) -> str:
    return f"{runs[key]['first_call']:.3f} s" if key in runs else "not run (--quick)"


MODE_TEXT = {
    "one": "BLAS, numexpr, hand-written Numba (serial loops) and minijit (`MINIJIT_THREADS=1`) "
           "on one thread; XLA's threads pinned to one CPU (no `XLA_FLAGS` holds it to one "
           "thread)",
    "all": "BLAS and numexpr on every usable core, hand-written Numba's parallel loops "
           "(`parallel=True`, `prange`) on Numba's threads, JAX and minijit with their "
           "defaults",
}


def time_table(mode: dict, settings: dict) -> list[str]:
    """One mode's table of times: each row's contenders, with ratios to Numba and NumPy."""
    rows = mode["rows"]
    heads = [W.LABELS[c] for c in W.CONTENDERS]
    lines = [
        f"## Time per call: {mode['label']}", "",
        f"{MODE_TEXT[mode['mode']]}. Load average at the start {mode['load_start']}, at the "
        f"end {mode['load_end']} ({mode['wall_s']:.0f} s); {mode['env']}; Numba threads "
        f"{mode['numba_threads']}, minijit `threads` {mode['minijit_threads']}.", "",
        "Median of the runs; in brackets, time ÷ hand-written Numba's and time ÷ NumPy's "
        "(below 1.00× is faster). n/a: not expressible in that tool.", "",
        "| workload | size | " + " | ".join(heads) + " |", "|---|---|" + "---:|" * len(heads)]
    for r in rows:
        lines.append(f"| {r['group']} {r['name']} | {r['size']} | "
                     + " | ".join(cell_text(r, c) for c in W.CONTENDERS) + " |")
    runs = sorted({c["runs"] for r in rows for c in r["cells"].values() if "runs" in c})
    notes = sorted({f"{W.LABELS[c]} ({r['name']}): {cell['note']}" for r in rows
                    for c, cell in r["cells"].items() if cell.get("note")})
    span = "" if not runs else str(runs[0]) if runs[0] == runs[-1] else (
        f"{runs[0]}-{runs[-1]}")
    lines += ["", f"Runs per timing: {span}" if runs else "",
              "(each run times enough back-to-back calls to last "
              f"{settings['sample_s'] * 1e3:g} ms; W5 is the time of one call in "
              "such a loop)." if runs else ""]
    busy = [f"{W.LABELS[c]} {r['group']} {r['size']} {cell['cores']:.1f}" for r in rows
             for c, cell in r["cells"].items() if cell.get("cores", 0) > 1.2]
    lines.append("- Cores kept busy while timing (CPU time ÷ wall time), where above 1.2: "
                 + (", ".join(busy) if busy else "none") + ".")
    return lines + [f"- {n}" for n in notes] + [""]


def same_row(row: dict, rows: list[dict]) -> dict | None:
    return next((r for r in rows if r["name"] == row["name"] and r["size"] == row["size"]),
                None)


def vs_jax_table(res: dict) -> list[str]:
    """minijit ÷ JAX in each mode, and what the threads bought minijit and JAX."""
    modes = res["modes"]
    first = next(iter(modes.values()), {"rows": []})
    if not first["rows"]:
        return []
    labels = {m: modes[m]["label"] for m in modes}
    both = "one" in modes and "all" in modes
    head = ["workload", "size", *(f"minijit ÷ JAX, {labels[m]}" for m in modes)]
    if both:
        head += [f"minijit {labels['all']} ÷ 1 core", f"JAX {labels['all']} ÷ 1 core"]
    lines = ["## minijit against JAX" + (", both modes" if both else ""), "",
             "Time ÷ time (below 1.00× minijit is faster; in the last columns, below 1.00× the "
             "threads helped).", "", "| " + " | ".join(head) + " |",
             "|---|---|" + "---:|" * (len(head) - 2)]
    for row in first["rows"]:
        if row["group"] == "COPY":
            continue
        cells = [fmt_ratio(ratio(r, "minijit", "jax")) if (r := same_row(row, modes[m]["rows"]))
                 else "-" for m in modes]
        if both:
            one, all_ = same_row(row, modes["one"]["rows"]), same_row(row, modes["all"]["rows"])
            for c in ("minijit", "jax"):
                a, b = ((all_ or {}).get("cells", {}).get(c, {}),
                        (one or {}).get("cells", {}).get(c, {}))
                cells.append(fmt_ratio(a["median"] / b["median"]) if a.get("status")
                             == b.get("status") == "ok" else "-")
        lines.append(f"| {row['group']} {row['name']} | {row['size']} | " + " | ".join(cells)
                     + " |")
    return lines + [""]


def markdown(res: dict) -> str:
    env = res["env"]
    modes = res["modes"]
    lines = [
        "# minijit benchmarks", "",
        f"`{env['command']}` on {env['date']}, {'quick' if res['settings']['quick'] else 'full'}"
        f" run, {env['wall_s']:.0f} s.", "",
        f"- Machine: {env['cpu']}, {env['cores']} cores of which this process may use "
        f"{env['usable']}, {env['system']}. The machine may be shared: compare ratios within "
        "this run, not absolute times; each mode's **load average** (1, 5, 15 min) at its "
        "start and end is given with its table.",
        f"- Python {env['python']}, NumPy {env['numpy']}, Numba {env['numba']}, numexpr "
        f"{env['numexpr']}, minijit {env['minijit']} ({env['git']}).",
        f"- JAX: {env['jax']}.",
        "- Modes, each in a process of its own: "
        + "; ".join(f"**{m['label']}** (load average {m['load_start']} at the start, "
                    f"{m['load_end']} at the end)" for m in modes.values()) + ".", "",
    ]
    g = goals(res) if modes else []
    if g:
        lines += ["## Goals", "", f"Read at {modes[goal_mode(res)]['label']}.", "",
                  "| goal | measured | |", "|---|---|---|"]
        lines += [f"| {a} | {b} | {c} |" for a, b, c in g]
        lines.append("")
    lines += vs_jax_table(res)
    for mode in modes.values():
        if mode["rows"]:
            lines += time_table(mode, res["settings"])
    if any(k in res for k in ("w6", "w9", "scale", "memory")):
        lines += ["The first calls, the compile scaling and the peak memory below ran once, "
                  f"with the settings of {modes[goal_mode(res)]['label']}.", ""]
    if "w6" in res:
        w6 = res["w6"]
        st = w6["cold"]["stages"]
        nw = w6["new"]
        lines += [
            "## W6: time of the first call", "",
            f"GELU float64 (n={W6_N} in new processes); medians of "
            f"{res['settings']['w6_repeats']} fresh functions in this process and of "
            f"{res['settings']['w6_processes']} new processes with a warm cache.", "",
            "| first call | minijit | hand-written Numba |", "|---|---:|---:|",
            f"| this process, new function (Numba already initialised) | "
            f"{w6['cold']['minijit']:.3f} s: trace {st.get('trace', 0) * 1e3:.1f} ms, optimize "
            f"{st.get('optimize', 0) * 1e3:.1f} ms, generate {st.get('codegen', 0) * 1e3:.1f} ms,"
            f" Numba compile {st.get('compile', 0):.3f} s | {w6['cold']['numba']:.3f} s |",
            f"| new process, empty disk cache | {_first(nw, 'minijit_cold')} | "
            f"{_first(nw, 'numba_cold')} |",
            f"| new process, warm disk cache | {nw['minijit_warm']['first_call']:.3f} s | "
            f"{nw['numba_warm']['first_call']:.3f} s |",
            f"| new process, jit's default backend (Numba not imported first) | "
            f"{nw['default_warm']['first_call']:.3f} s ({nw['default_warm']['backend']}; "
            f"Numba {'imported' if nw['default_warm']['numba_imported'] else 'not imported'}) "
            f"| - |",
            f"| import before it (new process, warm) | `import minijit` "
            f"{nw['minijit_warm']['import_minijit']:.3f} s + Numba "
            f"{nw['minijit_warm']['import_numba']:.3f} s | `import numba` "
            f"{nw['numba_warm']['import_numba']:.3f} s |", "",
            "In the new processes Numba is imported before the clock starts (minijit's Numba "
            "backend would otherwise import it during the first call), but for the default "
            "backend's row, whose call imports what it needs. Results checked against NumPy: "
            f"{'all correct' if w6['cold']['ok'] and nw['ok'] else '**FAILED**'}; warm runs "
            f"that compiled anyway (a disk cache miss): {nw['warm_compiled']}.", ""]
    if "w6_failed" in res:
        lines += ["## W6: time of the first call", "", f"**FAILED**: {res['w6_failed']}", ""]
    lines += w9_section(res) + scale_section(res)
    if "memory" in res:
        mem = res["memory"]
        n = res["settings"]["mem_n"]
        lines += ["## Peak memory of W1", "",
                  f"GELU float64, n={W._exp10(n)} (input and output {8 * n / 1e6:.0f} MB each), "
                  "each contender in a fresh process: peak resident memory during one call "
                  "beyond what was resident before it (after a warm-up call at the same "
                  "size), as a multiple of the output's size.", "",
                  "| contender | peak extra | × output |", "|---|---:|---:|"]
        for c in W.CONTENDERS:
            m = mem.get(c)
            if m is None:
                lines.append(f"| {W.LABELS[c]} | skipped | |")
            elif m["status"] != "ok":
                lines.append(f"| {W.LABELS[c]} | **FAILED**: {m['why']} | |")
            else:
                lines.append(f"| {W.LABELS[c]} | {m['peak_extra_bytes'] / 1e6:.1f} MB | "
                             f"{m['times_output']:.2f}× |")
        methods = sorted({m.get("method") for m in mem.values() if m.get("method")})
        lines += ["", f"Measured with: {', '.join(methods)}.", ""]
    return "\n".join(lines).replace("\n\n\n", "\n\n")


def _stages_text(st: dict) -> str:
    return (f"trace {fmt_time(st.get('trace'))}, optimize {fmt_time(st.get('optimize'))}, "
            f"generate {fmt_time(st.get('codegen'))}, compile {fmt_time(st.get('compile'))}")


def w9_section(res: dict) -> list[str]:
    if "w9_failed" in res:
        return ["## W9: first call at a new shape", "", f"**FAILED**: {res['w9_failed']}", ""]
    if "w9" not in res:
        return []
    w9 = res["w9"]
    mj, jx = w9["minijit"], w9.get("jax")
    return [
        "## W9: first call at a new shape", "",
        f"GELU float64, compiled once at n={W9_BASE}, then called once at each of "
        f"{w9['repeats']} new lengths n={W9_BASE + 1}, {W9_BASE + 2}, ... (the two contenders "
        "taking turns); median of those first calls. minijit retraces and generates code for "
        "each new shape, JAX retraces and compiles with XLA.", "",
        "| contender | first call at a new shape | |", "|---|---:|---|",
        f"| minijit | {fmt_time(mj['median'])} | {_stages_text(mj['stages'])}; Numba "
        f"compiled {mj['numba_compiles']} of {w9['repeats']} times |",
        f"| JAX jit | {fmt_time(jx['median']) if jx else 'skipped'} | |", "",
        "Results checked against NumPy: "
        f"{'all correct' if w9['ok'] else '**FAILED**'}.", ""]


def _scale_cell(cell: dict) -> str:
    st = cell.get("status")
    if st == "ok":
        return fmt_time(cell["first_call"])
    if st == "timeout":
        return f"timed out after {cell['after_s']:g} s"
    if st == "FAILED":
        return "**FAILED**: " + cell["why"].replace("|", "\\|")[:120]
    return st or "-"


def _scale_mem(cell: dict) -> str:
    return f"{cell['peak_rise_bytes'] / 1e6:.0f} MB" if cell.get("status") == "ok" else ""


def scale_section(res: dict) -> list[str]:
    if "scale" not in res:
        return []
    lines = [
        "## Compile scaling: the first call of programs of growing size", "",
        f"Each program and K in a fresh process (input: {W.SCALE_N} float64 elements; "
        "minijit's disk cache empty, Numba initialised before the clock starts), stopped "
        f"after {res['settings']['scale_timeout']} s. Peak memory: the rise of the peak "
        "resident memory during the first call, compiling included. Hand-written Numba has "
        "no analogue (its programs are written, not generated): n/a.", "",
        "minijit is `jit`'s default backend, \"auto\" (LLVM where it runs as fast, else Numba: "
        "a program it gives to Numba is marked *Numba*); minijit-numba is minijit with "
        "`backend=\"numba\"`.", "",
        "| program | K | minijit first call | minijit stages | minijit memory | minijit-numba "
        "first call | JAX first call | JAX memory | minijit ÷ JAX | minijit-numba ÷ JAX |",
        "|---|---:|---:|---|---:|---:|---:|---:|---:|---:|"]

    def ratio(a, b):
        return (f"{a['first_call'] / b['first_call']:.2f}×"
                if a.get("status") == b.get("status") == "ok" else "-")
    for row in res["scale"]:
        m, j = row["minijit"], row["jax"]
        numba = row.get("minijit-numba", {"status": "not run"})
        on_numba = " (*Numba*)" if m.get("llvm_declined") else ""
        lines.append(
            f"| {row['what']} | {row['k']} | {_scale_cell(m)}{on_numba} | "
            f"{_stages_text(m['stages']) if m.get('status') == 'ok' else ''} | "
            f"{_scale_mem(m)} | {_scale_cell(numba)} | {_scale_cell(j)} | "
            f"{_scale_mem(j)} | {ratio(m, j)} | {ratio(numba, j)} |")
    return lines + [""]


def plots(res: dict, out: Path) -> None:
    """w1_gelu.png (both modes), ratios.png (the goals' mode) and vs_jax.png (both modes)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    modes = res["modes"]
    main_mode = modes[goal_mode(res)]
    load = ", ".join(f"{m['label']}: {m['load_start']}" for m in modes.values())
    markers = {"numpy": "o", "numexpr": "s", "numba": "^", "jax": "d", "minijit": "*"}
    colors = dict(zip(W.CONTENDERS, plt.rcParams["axes.prop_cycle"].by_key()["color"]))
    lines_of = {"all": "-", "one": "--"}  # the all-cores mode solid, one core dashed
    w1_all = [r for m in modes.values() for r in m["rows"] if r["group"] == "W1"]
    dtypes = sorted({r["meta"]["dtype"] for r in w1_all}, reverse=True) or ["float64"]
    fig, axes = plt.subplots(1, len(dtypes), figsize=(6 * len(dtypes), 4.8), squeeze=False)
    for ax, dtype in zip(axes[0], dtypes):
        for mode in modes.values():
            rows = sorted((r for r in mode["rows"] if r["group"] == "W1"
                           and r["meta"]["dtype"] == dtype), key=lambda r: r["param"])
            for c in W.CONTENDERS:
                pts = [(r["param"], r["cells"][c]["median"]) for r in rows
                       if r["cells"][c]["status"] == "ok"]
                if pts:
                    ax.loglog(*zip(*pts), marker=markers[c], ls=lines_of[mode["mode"]],
                              color=colors[c], label=f"{W.LABELS[c]}, {mode['label']}")
            copy = next((r for r in mode["rows"] if r["group"] == "COPY"), None)
            if dtype == "float64" and copy and copy["cells"]["numpy"]["status"] == "ok":
                ax.loglog([copy["param"]], [copy["cells"]["numpy"]["median"]],
                          "kx" if mode["mode"] == "all" else "k+", ms=9,
                          label=f"copy of the input (np.copyto), {mode['label']}")
        ax.set(title=f"W1 GELU, {dtype}", xlabel="n (elements)", ylabel="median time per call (s)")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=6, ncol=2)
    fig.suptitle(f"solid: all cores, dashed: one core; load average at the start ({load})",
                 fontsize=9)
    fig.tight_layout()
    fig.savefig(out / "w1_gelu.png", dpi=110)
    plt.close(fig)
    vs_jax_plot(res, out, plt, load)
    res = {**res, "rows": main_mode["rows"], "env": {**res["env"],
                                                     "load_start": main_mode["load_start"]}}

    others = [r for r in res["rows"] if r["group"] not in ("W1", "COPY")]
    labels = [f"{r['group']} {r['name'].split(',')[0]}\n{r['size']}" for r in others]
    bars = {c: [ratio(r, c, "numba") for r in others] for c in W.CONTENDERS}
    if "w6" in res:
        labels += ["W6 first call\n(cold)", "W6 first call\n(warm disk cache)"]
        w6 = res["w6"]
        for c in W.CONTENDERS:
            if c == "minijit":
                bars[c] += [w6["cold"]["minijit"] / w6["cold"]["numba"],
                            w6["new"]["minijit_warm"]["first_call"]
                            / w6["new"]["numba_warm"]["first_call"]]
            else:
                bars[c] += [1.0 if c == "numba" else None] * 2
    fig, ax = plt.subplots(figsize=(max(6.0, 1.6 * len(labels)), 4.5))
    shown = [c for c in W.CONTENDERS if any(v is not None for v in bars[c])]
    width = 0.8 / max(1, len(shown))
    for k, c in enumerate(shown):
        xs = [i + (k - (len(shown) - 1) / 2) * width for i in range(len(labels))]
        heights = [v if v is not None else 0 for v in bars[c]]
        ax.bar(xs, heights, width, label=W.LABELS[c])
        for x, v in zip(xs, bars[c]):
            if v is not None and c != "numba":
                ax.annotate(f"{v:.2f}", (x, v), ha="center", va="bottom", fontsize=7)
    ax.axhline(1.0, color="k", lw=0.8)
    if not labels:
        ax.text(0.5, 0.5, "no workload besides W1 in this run", ha="center",
                transform=ax.transAxes)
    ax.set_yscale("log")
    ax.set_xticks(range(len(labels)), labels, fontsize=8)
    ax.set_ylabel("time ÷ hand-written Numba (log; lower is faster)")
    ax.set_title(f"minijit benchmarks, {main_mode['label']} (load average "
                 f"{res['env']['load_start']})", fontsize=10)
    if shown:
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out / "ratios.png", dpi=110)
    plt.close(fig)


def vs_jax_plot(res: dict, out: Path, plt, load: str) -> None:
    """vs_jax.png: minijit's time ÷ JAX's for every workload both ran, one bar per mode."""
    modes = res["modes"]
    first = next(iter(modes.values()))
    rows = [r for r in first["rows"] if r["group"] != "COPY"]
    labels = [f"{r['group']} {r['name'].split(',')[0]}\n{r['size']}" for r in rows]
    fig, ax = plt.subplots(figsize=(max(7.0, 0.75 * len(labels)), 4.8))
    width = 0.8 / max(1, len(modes))
    for k, mode in enumerate(modes.values()):
        xs, ys = [], []
        for i, row in enumerate(rows):
            r = same_row(row, mode["rows"])
            x = ratio(r, "minijit", "jax") if r else None
            if x is not None:
                xs.append(i + (k - (len(modes) - 1) / 2) * width)
                ys.append(x)
        ax.bar(xs, ys, width, label=mode["label"])
    ax.axhline(1.0, color="k", lw=0.8)
    ax.set_yscale("log")
    ax.set_xticks(range(len(labels)), labels, fontsize=7, rotation=60, ha="right")
    ax.set_ylabel("minijit time ÷ JAX time (log)")
    ax.set_title(f"minijit against JAX, below 1: minijit faster (load average at the "
                 f"start: {load})", fontsize=9)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out / "vs_jax.png", dpi=110)
    plt.close(fig)


# --------------------------------------------------------------------------- main


def _git() -> str:
    try:
        rev = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO,
                             capture_output=True, text=True, timeout=10).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "minijit"], cwd=REPO,
                               capture_output=True, text=True, timeout=10).stdout.strip()
        return f"git {rev}{' + uncommitted changes to minijit/' if dirty else ''}"
    except (OSError, subprocess.SubprocessError):
        return "git: unknown"


def _cpu() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _load() -> str:
    try:
        return ", ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "unknown"


def usable_cpus() -> int:
    """The cores this process may use, counted as minijit counts them."""
    try:
        from minijit.threads import usable_cpus as count
    except ImportError:  # a minijit without threads: the grader's count is the same
        from minijit.grading.cpus import usable_cpus as count
    return count()


def mode_env(mode: str, cores: int) -> dict[str, str]:
    """The environment of one mode's process: what every contender reads at start-up.

    one: BLAS and minijit on one thread (numexpr, Numba and XLA are set in the process:
    `W.set_threads`, `W.load_jax(one_core=True)`).
    all: BLAS on every usable core, minijit and JAX with their defaults (threads on).

    Both: every OpenBLAS in the process (NumPy's, and SciPy's that Numba's `np.dot` calls)
    puts its idle threads to sleep at once, as minijit asks of SciPy's by default. Left to
    spin for their default 0.1 s after each call, one contender's idle threads take the
    cores of the contenders timed after it, run by run (benchmarks/README.md)."""
    env = dict(os.environ)
    for var in THREAD_VARS:
        env[var] = "1" if mode == "one" else str(cores)
    env.setdefault("OPENBLAS_THREAD_TIMEOUT", "4")
    if mode == "one":
        env["MINIJIT_THREADS"] = "1"
    else:
        env.pop("MINIJIT_THREADS", None)  # minijit's default: every usable core
    return env


def mode_label(mode: str, cores: int) -> str:
    if mode == "one":
        return "1 core"
    return f"{cores} cores" if cores > 1 else "all cores (1)"


def child_main(args, only: set[str]) -> int:
    """One mode's measurements, in this process (started by `main` with `mode_env`); the
    results go to `args.child_json` as JSON."""
    s = Settings(args.quick)
    cores = usable_cpus()
    threads = 1 if args.mode == "one" else cores
    W.set_threads(threads)
    jax, jax_reason = W.load_jax(one_core=args.mode == "one")
    start, load_start = perf(), _load()

    work = [w for w in W.build_workloads(args.quick, parallel=args.mode == "all")
            if w.group in only]
    n_jax = 1 if jax is not None else 0
    total = len(work) + (3 if "W6" in only else 0) + (1 if "W9" in only else 0) + (
        (len(W.CONTENDERS) - 1 + n_jax) if "MEM" in only else 0) + (
        scale_steps(s.quick) if "SCALE" in only else 0)
    res: dict = {"rows": []}
    label = mode_label(args.mode, cores)
    with tqdm(total=total, desc="benchmarks", unit="step", file=sys.stderr) as bar:
        # --quick runs the modes side by side, the all-cores one taking the workloads in
        # reverse order: small shapes get the same serial code in both modes, so each mode
        # loads from minijit's disk cache what the other compiled first.
        reverse = s.quick and args.mode == "all"
        for w in work[::-1] if reverse else work:
            bar.set_description(f"{label}: {w.group} {w.name.split(',')[0]} {w.size}")
            res["rows"].append(run_workload(w, s))
            bar.update(1)
        if reverse:
            res["rows"].reverse()
        # --quick overlaps the memory processes with W6's (timing them means little there).
        mem_procs = start_memory(s, jax is not None) if "MEM" in only and s.quick else None
        if "W6" in only:
            bar.set_description(f"{label}: W6 first call")
            with tempfile.TemporaryDirectory(prefix="bench_minijit_") as d:
                try:
                    cold = w6_cold_this_process(s, Path(d))
                    bar.update(1)
                    bar.set_description(f"{label}: W6 first call, new processes")
                    res["w6"] = {"cold": cold, "new": w6_new_process(s, Path(d), bar)}
                except Exception as e:  # reported in the table, the rest still runs
                    res["w6_failed"] = f"{type(e).__name__}: {e}"
        if "W9" in only:
            bar.set_description(f"{label}: W9 new shape")
            with tempfile.TemporaryDirectory(prefix="bench_minijit_") as d:
                try:
                    res["w9"] = w9_new_shape(s, Path(d))
                except Exception as e:
                    res["w9_failed"] = f"{type(e).__name__}: {e}"
            bar.update(1)
        if "SCALE" in only:
            with tempfile.TemporaryDirectory(prefix="bench_minijit_") as d:
                res["scale"] = run_scale(s, Path(d), jax is not None, bar)
        if "MEM" in only:
            bar.set_description(f"{label}: MEM peak memory of W1")
            res["memory"] = finish_memory(mem_procs or start_memory(s, jax is not None), bar)

    import numba

    import minijit

    res["mode"] = {
        "mode": args.mode, "label": label, "threads": threads, "wall_s": perf() - start,
        "load_start": load_start, "load_end": _load(),
        "env": ", ".join(f"{v}={os.environ.get(v)}" for v in (
            *THREAD_VARS, "OPENBLAS_THREAD_TIMEOUT", "MINIJIT_THREADS", "XLA_FLAGS")),
        "numba_threads": numba.get_num_threads(),
        "minijit_threads": getattr(minijit.config, "threads", "no such option"),
        "jax": f"jax {jax.__version__} on CPU" if jax is not None else
        f"skipped, `import jax` failed ({jax_reason})",
    }
    args.child_json.write_text(json.dumps(res, default=str))
    return 0


def _without_option(argv: list[str], name: str) -> list[str]:
    """argv less `name VALUE` and `name=VALUE`."""
    out, skip = [], False
    for a in argv:
        if skip:
            skip = False
        elif a == name:
            skip = True
        elif not a.startswith(name + "="):
            out.append(a)
    return out


def run_modes(args, argv: list[str], only: set[str], modes: list[str], cores: int) -> dict:
    """Each mode in a process of its own (XLA and BLAS read their thread counts when they
    start); their results, keyed by mode. A full run runs them one after the other;
    --quick side by side (its times mean little)."""
    extra = only - set(TIMED)  # run once, by the all-cores mode if it runs
    procs, outputs = {}, {}
    with tempfile.TemporaryDirectory(prefix="bench_minijit_modes_") as d:
        for mode in modes:
            groups = (only & set(TIMED)) | (extra if mode == modes[-1] else set())
            if not groups:
                continue  # e.g. --only SCALE: nothing for the one-core mode to time
            outputs[mode] = Path(d) / f"{mode}.json"
            cmd = [sys.executable, str(Path(__file__).resolve()), *argv, "--mode", mode,
                   "--child-json", str(outputs[mode]), "--only", ",".join(sorted(groups))]
            procs[mode] = subprocess.Popen(cmd, env=mode_env(mode, cores), cwd=REPO,
                                           stdout=subprocess.DEVNULL)
            if not args.quick:
                procs[mode].wait()
        results = {}
        for mode, p in procs.items():
            if p.wait() != 0 or not outputs[mode].exists():
                raise SystemExit(f"the {mode_label(mode, cores)} run failed (exit status "
                                 f"{p.returncode}); its messages are above")
            results[mode] = json.loads(outputs[mode].read_text())
    return results


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="small sizes, few repeats")
    ap.add_argument("--out", type=Path, default=HERE / "results", help="output folder")
    ap.add_argument("--only", default="", help=f"comma-separated subset of {','.join(GROUPS)}")
    ap.add_argument("--modes", default="one,all",
                    help="one (every contender on one thread), all (on every usable core) "
                    "or both: one,all")
    # set by main for the process of one mode
    ap.add_argument("--mode", choices=MODES, help=argparse.SUPPRESS)
    ap.add_argument("--child-json", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    only = {g.strip().upper() for g in args.only.split(",") if g.strip()} or set(GROUPS)
    if "W1" in only:
        only.add("COPY")  # W1's physical limit is part of W1
    unknown = only - set(GROUPS)
    if unknown:
        ap.error(f"unknown workload(s) {sorted(unknown)}; choose from {','.join(GROUPS)}")
    modes = [m for m in MODES if m in {x.strip() for x in args.modes.split(",")}]
    if not modes or set(args.modes.replace(" ", "").split(",")) - set(MODES):
        ap.error(f"--modes {args.modes!r}: choose one, all or one,all")
    if args.mode:
        return child_main(args, only)

    args.out.mkdir(parents=True, exist_ok=True)
    s = Settings(args.quick)
    cores = usable_cpus()
    start = perf()
    passed = _without_option(argv, "--only")
    results = run_modes(args, passed, only, modes, cores)
    res: dict = {"settings": {k: getattr(s, k) for k in (
        "quick", "budget", "min_runs", "max_runs", "sample_s", "w6_repeats", "w6_processes",
        "mem_n", "w9_repeats", "scale_timeout")}, "cores": cores, "modes": {}}
    for mode, r in results.items():
        for key in ("w6", "w6_failed", "w9", "w9_failed", "scale", "memory"):
            if key in r:
                res[key] = r.pop(key)
        res["modes"][mode] = {**r.pop("mode"), "rows": r["rows"]}

    import numba
    import numexpr

    import minijit

    res["env"] = {
        "command": "python benchmarks/bench_minijit.py " + " ".join(argv),
        "date": time.strftime("%Y-%m-%d %H:%M"), "wall_s": perf() - start,
        "cpu": _cpu(), "cores": os.cpu_count(), "usable": cores,
        "system": f"{platform.system()} {platform.release()}",
        "python": platform.python_version(), "numpy": np.__version__,
        "numba": numba.__version__, "numexpr": numexpr.__version__,
        "minijit": minijit.__version__, "git": _git(),
        "jax": next(iter(res["modes"].values()))["jax"],
        "load_start": next(iter(res["modes"].values()))["load_start"],
    }
    text = markdown(res)
    (args.out / "results.md").write_text(text + "\n")
    (args.out / "results.json").write_text(json.dumps(res, indent=1, default=str))
    try:
        import matplotlib  # noqa: F401  the plots' one dependency beyond the contenders
    except ImportError:
        drawn = ("; no plots: matplotlib is not installed here (it comes with the `bench` "
                 "extra)")
    else:
        plots(res, args.out)
        drawn = ", w1_gelu.png, ratios.png, vs_jax.png"
    print(text)
    print(f"\nwritten: {args.out / 'results.md'}, results.json{drawn}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
