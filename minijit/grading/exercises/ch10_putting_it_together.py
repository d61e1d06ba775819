"""Chapter 10 (putting it together): which cache entry a call uses, and when jit pays off.

- ``ex10_cache_entries`` (the cache key): for a sequence of calls of a jitted
  ``affine(x, a, n)`` (``n`` static), say for each call which cache entry it uses, or
  ``"new"`` when it traces and compiles one. The literal answer for the notebook's calls and
  a function ``predict_entries(calls)`` for hidden sequences are graded exactly against what
  minijit does: the reference *measures* a freshly jitted function (the interpreter backend,
  since the cache does not depend on the backend and compiles would cost time), so the
  expected answers stay true to minijit's cache key (shape, dtype and weak type of each
  dynamic argument, the values of the static ones).
- ``ex10_pays_off`` (when a JIT pays off): ``pays_off(compile_s, jit_call_s, numpy_call_s,
  n_calls)``, graded on hidden numbers, and ``VERDICTS`` for workloads built on times
  measured with ``backend="numba"`` (given in the notebook, and in ``MEASURED`` below).
"""

from __future__ import annotations

import numpy as np

from minijit.grading.cases import Case, Exercise, Hint
from minijit.grading.probing import get

# ------------------------------------------------------------------------ ex10_cache_entries


def probe_predicted_entries(ns):
    answer = get(ns, "PREDICTED_ENTRIES")
    if type(answer) not in (list, tuple):
        raise TypeError("PREDICTED_ENTRIES must be a list: an entry number or \"new\" per call")
    return [int(a) if isinstance(a, np.integer) else a for a in answer]


def probe_predict_entries(ns, calls):
    predict = get(ns, "predict_entries")
    # Arguments written as Python expressions in the case list (trusted text).
    built = [tuple(eval(arg, {"np": np}) for arg in call) for call in calls]
    answer = predict(built)
    if type(answer) not in (list, tuple):
        raise TypeError("predict_entries must return a list: an entry number or \"new\" per "
                        "call")
    return [int(a) if isinstance(a, np.integer) else a for a in answer]


def _measure_entries(calls: list[tuple]) -> list:
    """Run the calls on a freshly jitted `affine` and report the entry each call used."""
    import minijit as mj

    def affine(x, a, n):  # as in the notebook; a new function object, so an empty cache
        for _ in range(n):
            x = a * x + 1.0
        return x

    jitted = mj.jit(affine, static_argnums=2, backend="interpreter")
    used = []
    for args in calls:
        before = [e.calls for e in jitted.cache_entries()]
        traces = jitted.trace_count
        jitted(*args)
        if jitted.trace_count > traces:
            used.append("new")
        else:
            after = [e.calls for e in jitted.cache_entries()]
            used.append(next(i for i, (b, a) in enumerate(zip(before, after)) if a > b))
    return used


def _build(calls: list) -> list[tuple]:
    return [tuple(eval(arg, {"np": np}) for arg in call) for call in calls]


# The notebook's CALLS, as the expressions that solutions/10_putting_it_together.ipynb uses.
NOTEBOOK_CALLS = [
    ["np.ones(3)", "2.0", "1"],
    ["np.arange(3.0)", "0.5", "1"],
    ["np.ones(3)", "2", "1"],
    ["np.ones(3)", "np.float64(2.0)", "1"],
    ["np.ones(3)", "np.array(2.0)", "1"],
    ["np.ones(3, np.float32)", "2.0", "1"],
    ["np.ones(3)", "2.0", "2"],
    ["np.ones((1, 3))", "2.0", "1"],
    ["np.arange(6.0)[::2]", "3.0", "1"],
    ["np.ones(3)", "2.5", "2"],
]


def _reference_cache_entries():
    return {"PREDICTED_ENTRIES": _measure_entries(_build(NOTEBOOK_CALLS)),
            "predict_entries": _measure_entries}


def _sequence(name: str, *calls: tuple) -> Case:
    return Case(name, ([list(c) for c in calls],))


# ------------------------------------------------------------------------ ex10_pays_off


def probe_pays_off(ns, compile_s, jit_call_s, numpy_call_s, n_calls):
    answer = get(ns, "pays_off")(compile_s, jit_call_s, numpy_call_s, n_calls)
    return bool(answer) if isinstance(answer, np.bool_) else answer


def probe_verdicts(ns):
    verdicts = get(ns, "VERDICTS")
    if type(verdicts) is not dict:
        raise TypeError("VERDICTS must be a dict: workload name -> True or False")
    return {k: bool(v) if isinstance(v, np.bool_) else v for k, v in verdicts.items()}


def _pays_off(compile_s: float, jit_call_s: float, numpy_call_s: float, n_calls: int) -> bool:
    # Strictly cheaper; the cases stay away from exact ties.
    return compile_s + n_calls * jit_call_s < n_calls * numpy_call_s


# Measured with chapter 10's programs and timing helper (CPU time, best of 5 rounds) on a busy
# 2-core Linux machine, minijit's Numba backend, disk cache off. Keep in step with the
# MEASURED cell of solutions/10_putting_it_together.ipynb.
MEASURED = {
    "Mandelbrot": {"input": "f64[200,300] f64[200,300]",
                   "timings": {"trace": 0.0013, "optimize": 0.0128, "codegen": 0.0006,
                               "compile": 0.9423},
                   "NumPy": 0.0365, "minijit": 0.00516},
    "Newton": {"input": "f64[1000000]",
               "timings": {"trace": 0.0012, "optimize": 0.0060, "codegen": 0.0009,
                           "compile": 0.8541},
               "NumPy": 0.0379, "minijit": 0.0228},
    "GELU": {"input": "f64[1000]",
             "timings": {"trace": 0.0008, "optimize": 0.0017, "codegen": 0.0003,
                         "compile": 0.4173},
             "NumPy": 3.71e-05, "minijit": 2.18e-05},
    "softmax": {"input": "f64[1000,500]",
                "timings": {"trace": 0.0008, "optimize": 0.0095, "codegen": 0.0012,
                            "compile": 2.4593},
                "NumPy": 0.00946, "minijit": 0.00945},
}

# workload -> (program, number of calls, number of different input shapes among them)
WORKLOADS = {
    "Mandelbrot, one picture": ("Mandelbrot", 1, 1),
    "Mandelbrot, an animation of 500 frames": ("Mandelbrot", 500, 1),
    "Newton, 100 calls": ("Newton", 100, 1),
    "Newton, 100 calls on 10 different lengths": ("Newton", 100, 10),
    "GELU on 1,000 elements, 10,000 calls": ("GELU", 10_000, 1),
    "GELU on 1,000 elements, 1,000,000 calls": ("GELU", 1_000_000, 1),
    "softmax, 100,000 calls": ("softmax", 100_000, 1),
}


def _verdicts() -> dict[str, bool]:
    out = {}
    for name, (program, n_calls, n_shapes) in WORKLOADS.items():
        m = MEASURED[program]
        first_call = sum(m["timings"].values())  # every stage, once per shape
        out[name] = _pays_off(n_shapes * first_call, m["minijit"], m["NumPy"], n_calls)
    return out


EXERCISES = [
    Exercise(
        id="ex10_cache_entries", points=3, title="Which cache entry does each call use?",
        chapter="10_putting_it_together", section="6. Every pitfall, and where it was taught",
        hint=Hint(
            pitfall=("A call's key is, per dynamic argument, its shape, dtype and weak type, "
                     "plus the value of each static argument; values and memory layout do not "
                     "count. A Python int or float is weakly typed; a NumPy scalar or a 0-d "
                     "array is not; bool is never weak."),
            code=("np.float64 is a subclass of float: test for np.ndarray and np.generic "
                  "first. Keep a dict from key to entry number: a key seen before uses its "
                  "entry, a new key gets len(entries). Chapter 04, sections \u201c2. New "
                  "shapes and dtypes recompile\u201d and \u201c3. Static and dynamic "
                  "arguments\u201d, show the key.")),
        probe=probe_predict_entries,
        reference=_reference_cache_entries,
        public=(
            Case("PREDICTED_ENTRIES for the notebook's CALLS", (),
                 probe=probe_predicted_entries),
            _sequence("predict_entries: one shape, two dtypes, a NumPy scalar",
                      ("np.ones(5)", "1.0", "3"), ("np.zeros(5)", "4.0", "3"),
                      ("np.ones(5, np.float32)", "1.0", "3"),
                      ("np.ones(5)", "np.float64(1.0)", "3"), ("np.ones(5)", "-1.0", "3")),
        ),
        hidden=(
            _sequence("weak and strong scalars",
                      ("np.ones(2)", "1.0", "1"), ("np.ones(2)", "1", "1"),
                      ("np.ones(2)", "True", "1"), ("np.ones(2)", "np.float32(1.0)", "1"),
                      ("np.ones(2)", "np.array(1.0, np.float32)", "1"),
                      ("np.ones(2)", "np.int64(1)", "1"), ("np.ones(2)", "7", "1"),
                      ("np.ones(2)", "np.float64(-1.0)", "1"), ("np.ones(2)", "-3.5", "1")),
            _sequence("static values come back",
                      ("np.ones(4)", "2.0", "1"), ("np.ones(4)", "2.0", "2"),
                      ("np.ones(4)", "0.5", "1"), ("np.ones(4)", "2.0", "3"),
                      ("np.zeros(4)", "2.0", "2"), ("np.ones(4)", "2.0", "0"),
                      ("np.ones(4)", "9.0", "3")),
            _sequence("shapes, dtypes and layouts",
                      ("np.ones((2, 3))", "2.0", "1"), ("np.ones((3, 2)).T", "2.0", "1"),
                      ("np.ones((2, 3), np.float32)", "2.0", "1"),
                      ("np.zeros((2, 3), np.float32)", "5.0", "1"),
                      ("np.ones((2, 3, 1))", "2.0", "1"), ("np.ones(6)", "2.0", "1"),
                      ("np.ones((2, 3), np.int32)", "2.0", "1"),
                      ("np.asfortranarray(np.ones((2, 3)))", "2.0", "1")),
            _sequence("Python numbers and NumPy scalars as x",
                      ("3.0", "2.0", "1"), ("np.float64(3.0)", "2.0", "1"),
                      ("np.array(3.0)", "2.0", "1"), ("4", "2.0", "1"), ("4.5", "2.0", "1"),
                      ("np.ones(1)", "2.0", "1")),
        ),
        error_hints={
            "NotGradable": "Answer with a list of ints and the string \"new\".",
        },
    ),
    Exercise(
        id="ex10_pays_off", points=2, title="Does jit pay off for this workload?",
        chapter="10_putting_it_together", section="4. When does `jit` pay off?",
        hint=Hint(
            pitfall=("The first call costs every stage in the cache entry's timings (trace, "
                     "optimize, codegen, compile), and each new input shape pays it again "
                     "(chapter 04). If the jitted call is not faster, no number of calls pays "
                     "that back."),
            code=("Compare the two totals, n * numpy_call_s and compile_s + n * jit_call_s, "
                  "rather than dividing by the difference (which may be 0).")),
        probe=probe_pays_off,
        reference=lambda: {"pays_off": _pays_off, "VERDICTS": _verdicts()},
        public=(
            Case("VERDICTS for the measured workloads", (), probe=probe_verdicts),
            Case("compile 1 s, 1 ms saved per call, 5,000 calls", (1.0, 0.001, 0.002, 5000)),
            Case("compile 1 s, 1 ms saved per call, 500 calls", (1.0, 0.001, 0.002, 500)),
        ),
        hidden=(
            Case("jitted call slower, a million calls", (0.5, 0.003, 0.002, 1_000_000)),
            Case("equal speeds", (0.2, 0.004, 0.004, 100_000)),
            Case("free compile, one call", (0.0, 0.001, 0.002, 1)),
            Case("just past break-even", (2.0, 0.001, 0.003, 1001)),
            Case("just before break-even", (2.0, 0.001, 0.003, 999)),
            Case("microseconds, 100,000 calls", (0.6, 21e-6, 36e-6, 100_000)),
            Case("microseconds, 30,000 calls", (0.6, 21e-6, 36e-6, 30_000)),
        ),
        error_hints={
            "ZeroDivisionError": ("With equal per-call times the difference is 0: compare the "
                                  "two totals instead of dividing by it."),
        },
    ),
]
