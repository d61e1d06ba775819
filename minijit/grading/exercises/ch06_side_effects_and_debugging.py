"""Chapter 06 (side effects and debugging): staged printing, leaks, recompiles, donation, NaNs.

- ``ex06_debug_print`` (side effects): the log of a jitted function shows a ``print`` that
  ran twice in four calls and showed tracers, and a result that ignored a change of the global
  ``SCALE``: one cause, Python code runs only while tracing. The learner writes
  ``normalize(x, scale)``, printing with ``mj.debug.print`` on every call and taking the scale
  as a (traced) argument. Graded on the printed text, the values and the number of traces: the
  probe empties the function's cache, calls it with new scales and new shapes while capturing
  stdout, and compares with the reference.
- ``ex06_leak`` (leaked tracers): the given ``update`` appends a traced value to a global
  list. The fixed ``update`` / ``run`` must run under ``mj.checking_leaks()`` (the probe
  empties ``update``'s cache so that it traces there) and give the right values.
- ``ex06_recompiles`` (recompilation storms): three drivers that retrace on (almost) every
  call, for three different reasons. The learner names each cause from a fixed list (graded
  exactly, in hidden cases only, so that ``check()`` never shows the answer) and fixes each
  driver. The fixes are graded by counting traces over fixed call sequences: the probe
  empties every jit cache first, then counts calls of ``JitFunction._compile`` (one per
  trace, whichever jitted function, even one created during the call).
- ``ex06_donate`` (donated buffers): a momentum step jitted with ``w`` and ``g`` donated
  crashes a training loop in its second epoch. The learner reads the traceback and the buffer
  plan of each choice (``plan_buffers``) and donates only what saves memory and is never used
  again (the optimizer state ``m``). Graded on the values of ``step_jit`` and ``fit``, on
  the caller's arrays staying usable, and (hidden only, so ``check()`` never shows the
  answer) on which arguments ``step_jit`` donates.
- ``ex06_disable_jit`` (debugging on values): a jitted softmax returns NaN for large inputs.
  Under ``mj.disable_jit()`` a Python ``print`` shows values: the learner names the first
  intermediate that is not finite (hidden only) and writes ``stable_softmax``, still jitted,
  with jit switched on again (the probe counts its traces).
"""

from __future__ import annotations

import numpy as np

from minijit.grading.cases import Case, Exercise, Hint
from minijit.grading.probing import get, printed

# ------------------------------------------------------------------------ ex06_debug_print


def probe_debug_print(ns, calls):
    normalize = get(ns, "normalize")
    if not hasattr(normalize, "trace_count") or not hasattr(normalize, "clear_cache"):
        raise TypeError("normalize must stay a jitted function (keep the @mj.jit)")
    normalize.clear_cache()  # so that every new shape in this case traces again
    before = normalize.trace_count

    def run():
        return [np.asarray(normalize(np.asarray(a, dtype=np.float64), scale))
                for a, scale in calls]

    values, text = printed(run)
    return {"lines": text.splitlines(), "values": values,
            "traces": normalize.trace_count - before}


def _reference_debug_print():
    import minijit as mj
    import minijit.numpy as mnp

    @mj.jit
    def normalize(x, scale):
        total = mnp.sum(x)
        mj.debug.print("total = {:.2f}", total)
        return scale * x / total

    return {"normalize": normalize}


# ------------------------------------------------------------------------ ex06_leak

_RUN_AGAIN = "run again after earlier runs"


def probe_leak(ns, x, steps, repeat):
    import minijit as mj

    update, run = get(ns, "update"), get(ns, "run")
    if not hasattr(update, "trace_count") or not hasattr(update, "clear_cache"):
        raise TypeError("update must stay a jitted function (keep the @mj.jit)")
    update.clear_cache()  # so that update traces again, under the leak checker
    before = update.trace_count
    with mj.checking_leaks():
        for _ in range(repeat):  # run again: the result must not depend on earlier runs
            x_out, norms = run(np.asarray(x, dtype=np.float64), steps)
    if type(norms) not in (list, tuple):
        raise TypeError(f"run must return (x, norms) with norms a list, got "
                        f"{type(norms).__name__}")
    return {"x": np.asarray(x_out), "norms": [float(n) for n in norms],
            "traced_under_the_checker": update.trace_count > before}


def _reference_leak():
    import minijit as mj
    import minijit.numpy as mnp

    @mj.jit
    def update(x):
        g = mnp.tanh(x)
        return x - 0.5 * g, mnp.sqrt(mnp.sum(g * g))

    def run(x, steps):
        norms = []
        for _ in range(steps):
            x, norm = update(x)
            norms.append(float(norm))
        return x, norms

    return {"update": update, "run": run}


# ------------------------------------------------------------------------ ex06_recompiles

# A hint that names no cause: the diagnoses are graded in hidden cases only.
_CALLED_AGAIN = ("A fixed driver called a second time, with new values of the same kinds, "
                 "must not trace again: the trace of its first call serves every later "
                 "call. Count the traces of two calls of the driver (count_traces, in the "
                 "notebook), not of one.")

CAUSES = ("shape", "dtype", "weak_type", "static_value", "new_function")


def probe_diagnosis_valid(ns, causes):
    diagnosis = get(ns, "DIAGNOSIS")
    if type(diagnosis) is not dict:
        raise TypeError(f"DIAGNOSIS must be a dict, got {type(diagnosis).__name__}")
    return {name: diagnosis.get(name) in causes
            for name in ("simulate", "train", "apply_gains")}


def probe_diagnosis(ns, name):
    diagnosis = get(ns, "DIAGNOSIS")
    if type(diagnosis) is not dict:
        raise TypeError(f"DIAGNOSIS must be a dict, got {type(diagnosis).__name__}")
    answer = diagnosis.get(name)
    return answer if type(answer) is str else repr(answer)


def probe_traces(ns, driver, x, args, repeat):
    """Run ``driver(x, args)`` ``repeat`` times from empty caches; the last result and the
    number of traces (a fixed driver traces once, however often it is called)."""
    import importlib

    jit_module = importlib.import_module("minijit.jit")
    fn = get(ns, driver)
    if driver == "apply_gains":  # gains of several Python and NumPy types: [kind, value]
        kinds = {"int": int, "float": float, "np.float64": np.float64,
                 "np.int64": np.int64, "0-d array": lambda v: np.asarray(v, np.float64)}
        args = [kinds[kind](value) for kind, value in args]
    # Empty every jit cache, so that a warm cache (an earlier run of this case, the
    # notebook's own calls) cannot hide a retrace or fake a fix.
    for per_function in list(jit_module._caches.values()):
        for cache in per_function.values():
            cache.entries.clear()
            cache.fast.clear()
    compile_ = jit_module.JitFunction._compile
    traces = []

    def counting_compile(self, split):
        traces.append(1)
        return compile_(self, split)

    jit_module.JitFunction._compile = counting_compile
    try:
        for _ in range(repeat):
            out = fn(np.asarray(x, dtype=np.float64), args)
    finally:
        jit_module.JitFunction._compile = compile_
    return {"result": np.asarray(out), "traces": len(traces)}


def _reference_recompiles():
    import minijit as mj
    import minijit.numpy as mnp

    def decay(x, rate):
        return x * mnp.exp(-rate)

    decay_jit = mj.jit(decay)  # rate is traced: one trace for all rates

    def simulate(x, rates):
        for rate in rates:
            x = decay_jit(x, rate)
        return x

    smooth_step = mj.jit(lambda v: v - 0.1 * mnp.tanh(v))  # created once, reused

    def train(x, steps):
        for _ in range(steps):
            x = smooth_step(x)
        return x

    @mj.jit
    def gain(x, g):
        return x * g

    def apply_gains(x, gains):
        for g in gains:
            x = gain(x, float(g))  # one type at the boundary
        return x

    return {"DIAGNOSIS": {"simulate": "static_value", "train": "new_function",
                          "apply_gains": "weak_type"},
            "simulate": simulate, "train": train, "apply_gains": apply_gains}


# ------------------------------------------------------------------------ ex06_donate


def probe_donate_step(ns, w, m, g, flags):
    """step_jit's values on fresh arrays; with ``flags``, only which arguments it donated
    (passing a donated array to a jitted call raises "Array has been deleted")."""
    import minijit as mj

    step = get(ns, "step_jit")
    if not hasattr(step, "trace_count"):
        raise TypeError("step_jit must be a function made by mj.jit(...)")
    args = [np.array(a, dtype=np.float64) for a in (w, m, g)]
    w_out, m_out = step(*args)
    w_out, m_out = np.array(w_out), np.array(m_out)

    def donated(x):
        try:
            mj.jit(lambda v: v + 0.0)(x)
        except RuntimeError as exc:
            if "donated" in str(exc):
                return True
            raise
        return False

    if flags:
        return [donated(a) for a in args]
    return {"w": w_out, "m": m_out}


def probe_fit(ns, w, batches, epochs):
    import minijit as mj

    fit = get(ns, "fit")
    w = np.array(w, dtype=np.float64)
    batches = [np.array(b, dtype=np.float64) for b in batches]
    w_out, m_out = fit(w, batches, epochs)
    w_out, m_out = np.array(w_out), np.array(m_out)

    def usable(x):
        try:
            mj.jit(lambda v: v + 0.0)(x)
        except RuntimeError as exc:
            if "donated" in str(exc):
                return False
            raise
        return True

    return {"w": w_out, "m": m_out, "caller_w_usable": usable(w),
            "caller_batches_usable": all(usable(b) for b in batches)}


def _momentum_step(w, m, g):
    m = 0.9 * m + g
    return w - 0.01 * m, m


def _reference_donate():
    import minijit as mj

    step_jit = mj.jit(_momentum_step, donate_argnums=1)

    def fit(w, batches, epochs):
        m = np.zeros_like(w)  # created here, so fit may donate it
        for _ in range(epochs):
            for g in batches:
                w, m = step_jit(w, m, g)
        return w, m

    return {"step_jit": step_jit, "fit": fit}


# ------------------------------------------------------------------------ ex06_disable_jit

INTERMEDIATES = ("scaled", "exps", "total", "probs")


def probe_first_non_finite(ns):
    answer = get(ns, "FIRST_NON_FINITE")
    return answer if type(answer) is str else repr(answer)


def probe_first_non_finite_valid(ns, names):
    return get(ns, "FIRST_NON_FINITE") in names


def probe_stable_softmax(ns, x, temperature):
    import minijit as mj

    f = get(ns, "stable_softmax")
    if not hasattr(f, "trace_count") or not hasattr(f, "clear_cache"):
        raise TypeError("stable_softmax must stay a jitted function (keep the @mj.jit)")
    f.clear_cache()  # a fresh trace, so that the count says whether jit is on
    before = f.trace_count
    out = np.asarray(f(np.asarray(x, dtype=np.float64), temperature))
    return {"probs": out, "traced": f.trace_count - before,
            "jit_on": not mj.config.disable_jit}


def _reference_disable_jit():
    import minijit as mj
    import minijit.numpy as mnp

    @mj.jit
    def stable_softmax(x, temperature):
        scaled = x / temperature
        exps = mnp.exp(scaled - mnp.max(scaled))
        return exps / mnp.sum(exps)

    return {"FIRST_NON_FINITE": "exps", "stable_softmax": stable_softmax}


EXERCISES = [
    Exercise(
        id="ex06_debug_print", points=2, title="Print on every call, read the scale on every call",
        chapter="06_side_effects_and_debugging",
        section="2. `print` versus `mj.debug.print`",
        hint=Hint(
            pitfall=("A jitted function's Python code runs only while tracing, once per new "
                     "shape: Python's print shows a tracer then, and a global is read then and "
                     "baked in. What must happen on every call has to be in the program: a "
                     "staged print, and the scale as an argument (traced, so that a new scale "
                     "does not trace again). Keep @mj.jit."),
            code=("mj.debug.print(fmt, *args) takes a str.format string with {} "
                  "placeholders (format specs such as {:.2f} work) and traced arguments; "
                  "def normalize(x, scale) under @mj.jit keeps scale traced.")),
        probe=probe_debug_print,
        reference=_reference_debug_print,
        public=(
            Case("[1, 2, 3] three times (scales 2, 2, 10), then [1, 1]",
                 ([[[1.0, 2.0, 3.0], 2.0], [[1.0, 2.0, 3.0], 2.0], [[1.0, 2.0, 3.0], 10.0],
                   [[1.0, 1.0], 10.0]],), category="new scales and a new shape"),
        ),
        hidden=(
            Case("new values and scales, same shape",
                 ([[[0.5, 0.25], 1.0], [[4.0, 6.0], 0.5], [[0.125, 0.125], 3.0]],),
                 category="new values and scales"),
            Case("shapes come and go",
                 ([[[1.0], 1.0], [[2.0, 3.0], 2.0], [[4.0], 3.0], [[1.0, 2.0, 3.0, 4.0], 4.0],
                   [[5.0, 5.0], 5.0]],), category="shapes that come back"),
            Case("2-d and negative totals",
                 ([[[[1.0, 2.0], [3.0, 4.0]], -1.0], [[-1.0, -2.5], 2.0],
                   [[[2.0, 2.0], [2.0, 2.0]], 0.5]],), category="a 2-d x, negative totals"),
        ),
    ),
    Exercise(
        id="ex06_leak", points=2, title="Find and fix a leaked tracer",
        chapter="06_side_effects_and_debugging", section="4. Leaked tracers",
        hint=Hint(
            pitfall=("update appends a traced value to a global list: after the trace that "
                     "value is a dead tracer, and on a cache hit nothing is appended at all. "
                     "A jitted function talks to the outside through its return values only."),
            code=("Return the norm from the jitted update (return new_x, norm) and let run, "
                  "outside jit, append float(norm) to a list it creates and returns.")),
        probe=probe_leak,
        reference=_reference_leak,
        public=(
            # run twice: check() runs where the check cell is, the grader after every cell
            # ran, so a list that outlives a run (a global) fails both, not the grader alone
            Case("x = [1, -2, 0.5], 3 steps", ([1.0, -2.0, 0.5], 3, 2), category=_RUN_AGAIN),
        ),
        hidden=(
            Case("one step", ([0.25, 4.0], 1, 1), category="one step"),
            Case("a single element, 2 steps", ([3.0], 2, 1), category="a single element"),
            Case("2-d x, 6 steps", ([[1.0, 2.0], [-3.0, 0.0]], 6, 1), category="a 2-d x"),
            Case("run twice in a row: a fresh list each time", ([2.0, 2.0, 2.0], 4, 2),
                 category=_RUN_AGAIN),
        ),
        case_hints={
            _RUN_AGAIN: Hint(
                pitfall=("run is called again after earlier runs (the grader calls it after "
                         "every cell of your notebook ran): a list made outside run still "
                         "holds the norms of every earlier run. Each run starts a list of "
                         "its own."),
                code=("Create the list inside run (norms = [] as its first line) and return "
                      "it with x.")),
        },
        error_hints={
            "UnexpectedTracerError": (
                "A tracer still escapes the trace of update (into a global, a list or an "
                "attribute). Return it from update instead, and turn it into a number "
                "(float(...)) outside the jitted function."),
            "ConcretizationTypeError": (
                "float(...) inside the jitted function sees a tracer: return the traced norm "
                "and convert it outside, in run."),
        },
    ),
    Exercise(
        id="ex06_recompiles", points=3, title="Diagnose and fix three recompile storms",
        chapter="06_side_effects_and_debugging", section="6. Counting compiles",
        hint=Hint(
            pitfall=("Read each storm's cache-miss explanation (explain_cache_misses), not "
                     "the code: '(static), now ... and before ...', 'never seen function' and "
                     "'a Python scalar is weakly typed' are three different causes. Each "
                     "fixed driver must trace once per call sequence."),
            code=("A static argument with a new value: make it traced. A function (a lambda, "
                  "or a jit(...)) created on every call: create the jitted function once, "
                  "outside the loop. A Python number one call and a NumPy one the next: "
                  "convert at the boundary, e.g. float(g).")),
        probe=probe_traces,
        reference=_reference_recompiles,
        public=(
            Case("each DIAGNOSIS is one of the causes offered", (list(CAUSES),),
                 probe=probe_diagnosis_valid,
                 hint=("DIAGNOSIS must map each of \"simulate\", \"train\" and "
                       "\"apply_gains\" to one of the strings in CAUSES.")),
            Case("simulate, 8 rates", ("simulate", [1.0, 2.0, 3.0],
                                       [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8], 1),
                 category="simulate"),
            Case("train, 6 steps", ("train", [2.0, -1.0], 6, 1), category="train"),
            Case("apply_gains, 6 gains",
                 ("apply_gains", [1.0, 2.0, 4.0],
                  [["int", 2], ["float", 0.5], ["np.float64", 1.5], ["int", 3],
                   ["float", 0.25], ["np.float64", 2.0]], 1), category="apply_gains"),
        ),
        # the three diagnoses share a category: the feedback never says which one is wrong
        hidden=(
            Case("the cause of simulate's storm", ("simulate",), probe=probe_diagnosis,
                 category="a diagnosis"),
            Case("the cause of train's storm", ("train",), probe=probe_diagnosis,
                 category="a diagnosis"),
            Case("the cause of apply_gains's storm", ("apply_gains",), probe=probe_diagnosis,
                 category="a diagnosis"),
            Case("simulate, 20 rates on a 2-d x",
                 ("simulate", [[0.5, 1.5], [2.5, 3.5]], [0.05 * k for k in range(20)], 1),
                 category="simulate"),
            Case("simulate called 3 times", ("simulate", [4.0], [0.5, 0.25, 0.125], 3),
                 category="simulate called again"),
            Case("train, 15 steps", ("train", [0.5, 3.0, -2.0, 8.0], 15, 1), category="train"),
            Case("train called 3 times", ("train", [1.0, 1.0, 1.0], 2, 3),
                 category="train called again"),
            Case("apply_gains, every kind of number",
                 ("apply_gains", [[1.0], [-2.0]],
                  [["np.int64", 3], ["0-d array", 0.5], ["float", 2.0], ["int", 1],
                   ["np.float64", 0.75], ["0-d array", 4.0], ["int", 2]], 1),
                 category="apply_gains"),
            Case("apply_gains called 2 times",
                 ("apply_gains", [0.5, 1.5], [["float", 2.0], ["np.float64", 4.0]], 2),
                 category="apply_gains called again"),
        ),
        case_hints={f"{driver} called again": _CALLED_AGAIN
                    for driver in ("simulate", "train", "apply_gains")},
        error_hints={
            "NameError": ("Define DIAGNOSIS and the three fixed drivers (simulate, train, "
                          "apply_gains) in the exercise cell, and run it."),
        },
    ),
    Exercise(
        id="ex06_donate", points=3, title="Donate only what is never used again",
        chapter="06_side_effects_and_debugging", section="1. The book's pitfall table, checked",
        hint=Hint(
            pitfall=("A donated argument's buffer may be overwritten by the call: the caller "
                     "must never pass that array again (the traceback names the argument). "
                     "And a donation helps only where the buffer plan says it reuses the "
                     "buffer: compare bytes after planning for each choice."),
            code=("plan_buffers(mj.make_jaxpr(step)(w, m, g), donated=(...)).report() for each "
                  "choice; donate_argnums takes positions. An array fit creates itself "
                  "(np.zeros_like(w)) is fit's to donate; the caller's w and batches are "
                  "not. Chapter 08, section \u201c2. `plan_buffers`: arrays that can share "
                  "memory\u201d, explains the report.")),
        probe=probe_fit,
        reference=_reference_donate,
        public=(
            # values only: which arguments step_jit donates is for hidden cases
            Case("step_jit on three arrays", ([1.0, 2.0, 3.0], [0.5, 0.0, -0.5],
                                              [1.0, 1.0, 1.0], False), probe=probe_donate_step),
            Case("fit: 2 batches, 3 epochs", ([1.0, 2.0, 3.0],
                                                [[1.0, 0.0, -1.0], [0.5, 0.5, 0.5]], 3)),
        ),
        hidden=(
            Case("which arguments step_jit donates", ([1.0] * 4, [0.5] * 4, [0.25] * 4, True),
                 probe=probe_donate_step, category="the donated arguments"),
            Case("which arguments step_jit donates, 2-d",
                 ([[1.0, 2.0]], [[0.0, 0.0]], [[3.0, 4.0]], True), probe=probe_donate_step,
                 category="the donated arguments"),
            Case("fit: 1 batch, 1 epoch", ([0.0, -4.0], [[2.0, 2.0]], 1)),
            Case("fit: 3 batches, 5 epochs, 2-d", ([[1.0, 2.0], [3.0, 4.0]],
                                                     [[[1.0, 0.0], [0.0, 1.0]],
                                                      [[0.5, 0.5], [0.5, 0.5]],
                                                      [[-1.0, 2.0], [3.0, -4.0]]], 5)),
            Case("fit: no epochs", ([1.0, 1.0], [[1.0, 1.0]], 0)),
        ),
        error_hints={
            "RuntimeError": Hint(
                "An array was passed to a jitted call after an earlier call was given its "
                "buffer (donate_argnums): the traceback names the argument. Donate only what "
                "the caller never passes again."),
            "NameError": "Define step_jit and fit in the exercise cell, and run it.",
        },
    ),
    Exercise(
        id="ex06_disable_jit", points=2, title="Find the NaN with mj.disable_jit()",
        chapter="06_side_effects_and_debugging",
        section="5. `mj.disable_jit()`: run without tracing",
        hint=Hint(
            pitfall=("Under jit a print shows tracers, never values; under mj.disable_jit() "
                     "the function runs eagerly and a print shows each intermediate. The "
                     "first one that is not finite is where to fix it. Switch jit back on "
                     "(prefer the with block): stable_softmax must be compiled when graded."),
            code=("softmax(x) = softmax(x - c) for any constant c: subtract mnp.max of the "
                  "scaled values before mnp.exp, so the largest exponent is 0.")),
        probe=probe_stable_softmax,
        reference=_reference_disable_jit,
        public=(
            Case("FIRST_NON_FINITE is one of the intermediates", (list(INTERMEDIATES),),
                 probe=probe_first_non_finite_valid,
                 hint=Hint("FIRST_NON_FINITE must be one of the strings in INTERMEDIATES.")),
            Case("small values", ([1.0, 2.0, 3.0], 1.0)),
            Case("large values", ([1000.0, 1.0, 999.0], 1.0)),
            # subtracting the mean (0 here) leaves exp(1000): only the max makes every
            # exponent <= 0
            Case("scores far apart on both sides (the mean is 0)", ([1000.0, -1000.0, 0.0], 1.0)),
            # the max of x, not of x / temperature, leaves exponents near 990
            Case("a low temperature on large scores: the max of the scaled values",
                 ([10.0, 9.0, -10.0], 0.01)),
        ),
        hidden=(
            Case("the first intermediate that is not finite", (), probe=probe_first_non_finite,
                 category="the first intermediate that is not finite"),
            Case("a low temperature", ([2.0, 3.0, 1.0, 0.5], 0.01), category="a low temperature"),
            Case("all equal", ([5.0, 5.0, 5.0, 5.0], 2.0), category="equal scores"),
            Case("very negative", ([-1000.0, -1001.0, -999.5], 1.0),
                 category="very negative scores"),
            Case("2-d input", ([[700.0, 800.0], [1.0, -1.0]], 1.0), category="a 2-d input"),
            Case("one element", ([123456.0], 3.0), category="one element"),
            Case("2-d input, scores far apart", ([[-900.0, 0.0], [900.0, 1.0]], 1.0),
                 category="a 2-d input"),
            Case("a very low temperature", ([3.0, -2.0, 2.5], 0.002), category="a low temperature"),
        ),
    ),
]
