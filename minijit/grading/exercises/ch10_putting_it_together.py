"""Chapter 10 (putting it together): which cache entry a call uses, when jit pays off, and
one new primitive through the whole pipeline.

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
- ``ex10_new_primitive`` (build: one primitive end to end): ``logaddexp(x, y)`` = log(e^x +
  e^y), a new primitive with its user-facing function (promoted and broadcast as
  ``minijit.numpy``'s binary functions are), its shape rule, its NumPy impl, its Numba rule
  (an ``Expression``), its op groups (``ELEMENTWISE``, so it fuses), all entered into minijit's
  tables by the notebook's ``register_logaddexp()``, and a test ``test_logaddexp(impl)``.
  Graded, per case: programs that use it, eagerly and under ``jit`` with both backends,
  against the reference's values (``np.logaddexp``'s, dtypes included, as
  tests/test_new_primitive_exercise.py checks; bit for bit on a grid of infinities, NaN,
  signed zeros, overflow thresholds and values near the largest float, in float32 and
  float64), on broadcasting, float32 with weak scalars, infinities, NaN and huge values;
  the shape rule's output types and its TypeErrors; the optimized Jaxpr (``jit(...).lower``)
  of two small models, where logaddexp must sit in one ``fused`` kernel with its neighbours;
  and ``test_logaddexp``, which must pass on ``np.logaddexp`` and raise AssertionError on each
  of four broken implementations (the naive formula, NaN for two equal infinities, float64
  results for float32 inputs, a second operand resized instead of broadcast). Each probe
  registers the learner's primitive with ``primitive_probes.registered``, which puts every
  rule table and op group back as it was afterwards, so no probe leaks it into another.
"""

from __future__ import annotations

import numpy as np

from minijit.grading.cases import Case, Exercise, Hint, raises
from minijit.grading.probing import get

# ------------------------------------------------------------------------ ex10_cache_entries


def probe_predicted_entries(ns):
    answer = get(ns, "PREDICTED_ENTRIES")
    if type(answer) not in (list, tuple):
        raise TypeError("PREDICTED_ENTRIES must be a list: an entry number or \"new\" per call")
    return [int(a) if isinstance(a, np.integer) else a for a in answer]


def probe_predicted_entries_format(ns):
    """The form of PREDICTED_ENTRIES (how many answers, each an int or "new"), never its
    values: the public case checks a prediction's form, a hidden case its values."""
    answer = get(ns, "PREDICTED_ENTRIES")
    if type(answer) not in (list, tuple):
        raise TypeError("PREDICTED_ENTRIES must be a list: an entry number or \"new\" per call")
    answer = [int(a) if isinstance(a, np.integer) else a for a in answer]
    return {"answers": len(answer),
            "each an entry number or \"new\"": all(type(a) is int or a == "new"
                                                     for a in answer)}


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


def probe_verdicts_format(ns):
    """The form of VERDICTS (its workloads, each True or False), never its values."""
    verdicts = get(ns, "VERDICTS")
    if type(verdicts) is not dict:
        raise TypeError("VERDICTS must be a dict: workload name -> True or False")
    verdicts = {k: bool(v) if isinstance(v, np.bool_) else v for k, v in verdicts.items()}
    return {"workloads": sorted(map(str, verdicts)),
            "each True or False": all(type(v) is bool for v in verdicts.values())}


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


# ------------------------------------------------------------------------ ex10_new_primitive


# A case's inputs are `[values, dtype]` each, with "inf", "-inf" and "nan" written as strings:
# the arguments travel to the kernel as Python literals, which have no spelling for them, and
# np.asarray reads the strings.


def probe_logaddexp_values(ns, source, inputs):
    from minijit.grading.primitive_probes import program, registered, run_everywhere

    fun = program(source, get(ns, "logaddexp"))  # the case's program, the learner's function
    arrays = [np.asarray(values, dtype=dtype) for values, dtype in inputs]
    with registered(get(ns, "register_logaddexp")):
        return run_everywhere(fun, arrays)


def probe_logaddexp_shape_rule(ns, pairs):
    from minijit.core import ShapedArray

    rule = get(ns, "logaddexp_shape_rule")
    out = []
    for operands in pairs:
        avals = [ShapedArray(tuple(shape), np.dtype(dtype), weak) for shape, dtype, weak in
                 operands]
        try:
            result = rule(*avals)
        except TypeError:
            out.append("TypeError")
            continue
        # outside the try: a rule that returns the wrong thing must not pass for one that raised
        if type(result) not in (list, tuple) or len(result) != 1 or not isinstance(
                result[0], ShapedArray):
            raise ValueError(f"the shape rule must return a list of one ShapedArray, got "
                             f"{result!r}")
        out.append([result[0].str_short(), bool(result[0].weak_type)])
    return out


def probe_logaddexp_fusion(ns, source, inputs):
    from minijit.grading.optimizer_probes import kernels
    from minijit.grading.primitive_probes import optimized, program, registered

    fun = program(source, get(ns, "logaddexp"))
    arrays = [np.asarray(values, dtype=dtype) for values, dtype in inputs]
    with registered(get(ns, "register_logaddexp")):
        closed = optimized(fun, arrays)
    # Members as a sorted set: the order in a kernel follows the order of tracing, which is
    # the learner's to choose; what must hold is which equations share the kernel.
    return {"top": [e.primitive.name for e in closed.jaxpr.eqns],
            "kernels": [[kind, sorted(set(names))] for kind, names in kernels(closed.jaxpr)]}


def probe_logaddexp_test(ns, source):
    test = get(ns, "test_logaddexp")
    scope = {"np": np}
    exec(source, scope)  # an implementation from the case list (trusted text): `impl`
    with np.errstate(all="ignore"):
        test(scope["impl"])
    return "passed"  # an AssertionError (the verdict "wrong") is reported as an error record


def _reference_new_primitive():
    """A correct notebook's names, around a fresh primitive of its own."""
    from minijit.codegen.rules import Expression, numba_rules
    from minijit.core import (
        BINARY,
        ELEMENTWISE,
        Primitive,
        ShapedArray,
        abstract_eval_rules,
        impl_rules,
    )
    from minijit.numpy.util import _broadcast, _promote

    logaddexp_p = Primitive("logaddexp")

    def logaddexp(x, y):
        return logaddexp_p.bind(*_broadcast(*_promote(x, y)))

    def logaddexp_shape_rule(x, y):
        if x.dtype != y.dtype:
            raise TypeError(f"logaddexp needs equal dtypes, got {x.str_short()} and "
                            f"{y.str_short()}")
        if x.dtype.kind != "f":
            raise TypeError(f"logaddexp needs floating-point inputs, got {x.str_short()}")
        shapes = {a.shape for a in (x, y) if a.shape != ()}
        if len(shapes) > 1:
            raise TypeError(f"logaddexp needs equal shapes (or scalars), got {x.str_short()} "
                            f"and {y.str_short()}")
        shape = shapes.pop() if shapes else ()
        return [ShapedArray(shape, x.dtype, x.weak_type and y.weak_type)]

    def logaddexp_impl(x, y):
        return [np.logaddexp(x, y)]

    def logaddexp_rule(args, eqn):
        x, y = args
        return (f"({x} + {y} if {x} - {y} != {x} - {y} "
                f"else max({x}, {y}) + np.log1p(np.exp(-abs({x} - {y}))))")

    def register_logaddexp():
        abstract_eval_rules[logaddexp_p] = logaddexp_shape_rule
        impl_rules[logaddexp_p] = logaddexp_impl
        numba_rules[logaddexp_p] = Expression(logaddexp_rule)
        BINARY.add(logaddexp_p)
        ELEMENTWISE.add(logaddexp_p)

    return {"logaddexp_p": logaddexp_p, "logaddexp": logaddexp,
            "logaddexp_shape_rule": logaddexp_shape_rule, "logaddexp_impl": logaddexp_impl,
            "logaddexp_rule": logaddexp_rule, "register_logaddexp": register_logaddexp,
            "test_logaddexp": _reference_test_logaddexp}


def _reference_test_logaddexp(logaddexp):
    inf, nan = np.inf, np.nan
    x = np.array([0.0, 1.0, -3.0, 1000.0, -1000.0, 1e308, -inf, -inf, inf, inf, nan, -0.0])
    y = np.array([0.0, 2.0, 40.0, 1000.0, -1000.0, 1e308, -inf, 5.0, inf, -inf, 1.0, -inf])
    x32 = np.array([0.0, -3.0, 100.0, -100.0, 3e38, -inf, inf, nan], np.float32)
    y32 = np.array([1.0, 40.0, 100.0, -100.0, 3e38, -inf, inf, 0.0], np.float32)
    for a, b in [(x, y), (x32, y32), (x32, 1.0), (x[:3, None], y[:4]), (2.5, y)]:
        with np.errstate(all="ignore"):
            want, got = np.logaddexp(a, b), np.asarray(logaddexp(a, b))
        assert (got.shape, got.dtype) == (want.shape, want.dtype), (got.dtype, got.shape)
        np.testing.assert_allclose(got, want, rtol=1e-5 if want.dtype == np.float32 else 1e-12)


# Values that show each pitfall: e^x overflows past 709 (float64) and 88 (float32); two equal
# infinities make x - y NaN; NaN, signed zeros and values near the largest float.
_INF, _NINF, _NAN = "inf", "-inf", "nan"
_WIDE = [-1000.0, -40.0, -3.0, -0.5, 0.0, 0.25, 2.0, 15.0, 40.0, 800.0, 1000.0]
_EDGE_X = [_NINF, _INF, _INF, _NINF, _NAN, 1.0, _NAN, -0.0, -0.0, 0.0, 1000.0, -1000.0, 1e308,
           1.7e308, 3.0, _NINF, -745.0, -800.0]
_EDGE_Y = [_NINF, _INF, _NINF, _INF, 1.0, _NAN, _NINF, -0.0, _NINF, _NINF, 1000.0, -1000.0, 1e308,
           1.7e308, _NINF, 3.0, -745.0, -40.0]
_F64 = {"rtol": 1e-9, "atol": 1e-300}
_F32 = {"rtol": 1e-5, "atol": 1e-35}


def _values(name: str, source: str, inputs: list, tolerance: dict, hint=None) -> Case:
    return Case(name, (source, inputs), probe=probe_logaddexp_values, hint=hint, **tolerance)


def _shapes(name: str, *pairs) -> Case:
    return Case(name, ([[list(a), list(b)] for a, b in pairs],),
                probe=probe_logaddexp_shape_rule)


def _fusion(name: str, source: str, inputs: list) -> Case:
    return Case(name, (source, inputs), probe=probe_logaddexp_fusion)


_TEST_HINT = ("test_logaddexp must raise AssertionError (an assert, or np.testing's "
              "assert_allclose) on this wrong implementation: compare values, dtype and shape "
              "with np.logaddexp's on huge values, equal infinities, float32 and weak scalars, "
              "and on a column against a row.")

# Implementations a test_logaddexp is run on, as source text that defines `impl(x, y)`.
IMPL_REFERENCE = "def impl(x, y):\n    return np.logaddexp(x, y)\n"
IMPL_NAIVE = "def impl(x, y):\n    return np.log(np.exp(x) + np.exp(y))\n"
IMPL_NAN_AT_EQUAL_INFINITIES = (  # the stable formula without its guard
    "def impl(x, y):\n"
    "    return np.maximum(x, y) + np.log1p(np.exp(-np.abs(np.subtract(x, y))))\n")
IMPL_FLOAT64_ALWAYS = (
    "def impl(x, y):\n"
    "    return np.logaddexp(np.asarray(x, np.float64), np.asarray(y, np.float64))\n")
IMPL_RESIZED_NOT_BROADCAST = (  # repeats y's elements to fill x's shape, if y is an array
    "def impl(x, y):\n"
    "    if np.ndim(y) and np.shape(y) != np.shape(x):\n"
    "        y = np.resize(y, np.shape(x))\n"
    "    return np.logaddexp(x, y)\n")


def _rejects(name: str, source: str) -> Case:
    return Case(name, (source,), probe=probe_logaddexp_test, expected=raises("AssertionError"),
                hint=_TEST_HINT)


NEW_PRIMITIVE_PUBLIC = (
    _values("float64: logaddexp(2x, y) - 1, y broadcast along the rows; eager, interpreter, "
            "numba", "lambda x, y: logaddexp(2.0 * x, y) - 1.0",
            [[[_WIDE, [v / 2 for v in _WIDE]], "float64"], [_WIDE[::-1], "float64"]], _F64),
    _shapes("shape rule: float32 pairs, a rank-0 operand beside a vector, ints refused",
            [[[2, 3], "float32", False], [[2, 3], "float32", False]],
            [[[], "float64", False], [[4], "float64", False]],
            [[[3], "int64", False], [[3], "int64", False]]),
    _fusion("logaddexp(2x, y) - 1: one fused kernel with the mul and the sub",
            "lambda x, y: logaddexp(2.0 * x, y) - 1.0",
            [[[1.0, -2.0, 30.0, 800.0], "float64"], [[0.5, 3.0, -1.0, 800.0], "float64"]]),
    Case("test_logaddexp passes on np.logaddexp", (IMPL_REFERENCE,), probe=probe_logaddexp_test,
         expected="passed",
         hint=("test_logaddexp must not raise on a correct implementation: compare with "
               "np.logaddexp within a tolerance (rtol about 1e-5 in float32), and count NaN "
               "as equal to NaN and inf as equal to inf.")),
    _rejects("test_logaddexp rejects the naive log(exp(x) + exp(y))", IMPL_NAIVE),
)
NEW_PRIMITIVE_HIDDEN = (
    _values("float32: a weak scalar, and a column broadcast against a matrix",
            "lambda x, c: (logaddexp(x, 1.0), logaddexp(c, x) * 0.5)",
            [[[[-1000.0, -100.0, -3.0, 0.0, 2.0, 100.0, 1000.0],
               [3e38, -3e38, _INF, _NINF, _NAN, 88.0, 89.0]], "float32"],
             [[[1.0], [_NINF]], "float32"]], _F32),
    _values("float64: infinities, NaN, signed zeros and values near the largest float, in "
            "both orders", "lambda x, y: (logaddexp(x, y), logaddexp(y, x))",
            [[_EDGE_X, "float64"], [_EDGE_Y, "float64"]], _F64),
    _values("rank 0: a scalar against a vector, a scalar with itself, and a sum over a "
            "vector", "lambda s, v: (logaddexp(s, v), logaddexp(s, s), "
            "mnp.sum(logaddexp(v[1:], -v[1:])))",
            [[-2.5, "float64"], [[_NINF, -800.0, 0.0, 3.0, 710.0], "float64"]], _F64),
    _shapes("shape rule: weak types, mixed dtypes, bools, unequal shapes, a rank-0 float32",
            [[[], "float64", True], [[], "float64", True]],
            [[[3], "float64", False], [[3], "float64", True]],
            [[[3], "float32", False], [[3], "float64", False]],
            [[[2], "bool", False], [[2], "bool", False]],
            [[[3], "float64", False], [[4], "float64", False]],
            [[[2, 3], "float32", False], [[], "float32", True]],
            [[[], "int32", False], [[], "int32", False]]),
    _fusion("a sum over logaddexp(x - 1, y): one reduction kernel",
            "lambda x, y: mnp.sum(logaddexp(x - 1.0, y), axis=1)",
            [[[[1.0, -2.0, 30.0], [800.0, 0.0, -5.0]], "float64"],
             [[[0.5, 3.0, -1.0], [800.0, 2.0, 1.0]], "float64"]]),
    _rejects("test_logaddexp rejects NaN for two equal infinities",
             IMPL_NAN_AT_EQUAL_INFINITIES),
    _rejects("test_logaddexp rejects float64 results for float32 inputs", IMPL_FLOAT64_ALWAYS),
    _rejects("test_logaddexp rejects an operand resized instead of broadcast",
             IMPL_RESIZED_NOT_BROADCAST),
)


# ------------------------------------------------------------------------ ex10_capstone


def probe_capstone_values(ns, values, dtype, backends):
    """`logsumexp` (the learner's, on their registered logaddexp) eagerly and jitted by each
    of `backends`, on a 2-D array of `values` (strings "inf", "-inf", "nan" allowed)."""
    import minijit as mj
    from minijit.grading.primitive_probes import own_pieces, registered

    logsumexp = get(ns, "logsumexp")
    x = np.asarray(values, dtype=dtype)
    out = {}
    with registered(get(ns, "register_logaddexp")), own_pieces(), np.errstate(all="ignore"):
        out["eager"] = np.asarray(logsumexp(x))
        for backend in backends:
            out[backend] = np.asarray(mj.jit(logsumexp, backend=backend)(x))
    return out


def probe_capstone_jaxpr(ns, shape, dtype):
    """What the traced program of `logsumexp` holds: the learner's primitive (at any depth:
    a loop body counts), its output type, and no exp of the inputs outside logaddexp."""
    import minijit as mj
    from minijit.grading.primitive_probes import own_pieces, registered
    from minijit.ir import subjaxprs

    logsumexp, prim = get(ns, "logsumexp"), get(ns, "logaddexp_p")
    with registered(get(ns, "register_logaddexp")), own_pieces():
        closed = mj.make_jaxpr(logsumexp)(np.zeros(shape, dtype))
    todo, used = [closed.jaxpr], []
    for j in todo:
        used += [e.primitive for e in j.eqns]
        todo += [s for e in j.eqns for s in subjaxprs(e)]
    return {"uses logaddexp_p": prim in used, "exp or log": sorted(
        {p.name for p in used if p.name in ("exp", "log")}),
        "outputs": [v.aval.str_short() for v in closed.jaxpr.outvars]}


def _reference_capstone():
    import minijit.numpy as mnp
    from minijit import lax

    ns = _reference_new_primitive()
    logaddexp = ns["logaddexp"]

    def logsumexp(x):
        x = mnp.asarray(x)  # a NumPy array cannot be indexed by the loop's traced i
        return lax.fori_loop(1, x.shape[1], lambda i, acc: logaddexp(acc, x[:, i]), x[:, 0])

    return {**ns, "logsumexp": logsumexp}


def _rows(name: str, values: list, dtype: str = "float64", backends=("interpreter",),
          hint=None) -> Case:
    tolerance = _F32 if dtype == "float32" else _F64
    return Case(name, (values, dtype, list(backends)), hint=hint, **tolerance)


_OVERFLOW_HINT = ("exp(1000.0) is inf in float64 (exp(89.0) in float32), so log(sum(exp(x))) "
                  "gives inf for a row of large values, and log(0) = -inf for a row of very "
                  "negative ones; fold logaddexp along the row instead, which never computes "
                  "e^x on its own.")
CAPSTONE_PUBLIC = (
    _rows("f64[3,4]: one value per row, eager and interpreter",
          [[0.0, 1.0, 2.0, 3.0], [-1.0, 0.5, 0.25, -2.0], [5.0, -5.0, 0.0, 1.5]]),
    _rows("rows of large values, where log(sum(exp(x))) overflows to inf; also with Numba",
          [[1000.0, 1000.0, 999.0], [-1000.0, -1000.0, -1001.0], [710.0, 0.0, -710.0]],
          backends=("interpreter", "numba"), hint=_OVERFLOW_HINT),
    Case("its jaxpr holds your logaddexp_p, and no exp or log of its own; one f64 per row",
         ([3, 4], "float64"), probe=probe_capstone_jaxpr,
         hint=("Trace it (mj.make_jaxpr(logsumexp)(x)) and read the program: every value "
               "of a row must go through logaddexp, the primitive you registered.")),
)
CAPSTONE_HIDDEN = (
    _rows("infinities and NaN: a row of -inf, a +inf, a NaN",
          [[_NINF, _NINF, _NINF], [1.0, _INF, 2.0], [0.0, _NAN, 1.0]]),
    _rows("float32 stays float32, past exp's overflow at 89", [[100.0, 100.0], [-100.0, 0.0],
                                                                [88.0, 89.0]], "float32"),
    _rows("one column: the column itself", [[3.0], [-1000.0], [0.5]]),
    _rows("a wide row of 40 values, with Numba", [[float(k % 7) - 3.0 for k in range(40)]],
          backends=("interpreter", "numba")),
    _rows("signed zeros and values near the largest float",
          [[-0.0, -0.0], [1e308, 1e308], [-1e308, 1.7e308]]),
    Case("float32: the jaxpr's output type", ([2, 5], "float32"),
         probe=probe_capstone_jaxpr),
)


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
            Case("PREDICTED_ENTRIES answers each call of CALLS (the grader checks its values)",
                 (), probe=probe_predicted_entries_format),
            _sequence("predict_entries: one shape, two dtypes, a NumPy scalar",
                      ("np.ones(5)", "1.0", "3"), ("np.zeros(5)", "4.0", "3"),
                      ("np.ones(5, np.float32)", "1.0", "3"),
                      ("np.ones(5)", "np.float64(1.0)", "3"), ("np.ones(5)", "-1.0", "3")),
        ),
        hidden=(
            Case("PREDICTED_ENTRIES for the notebook's CALLS", (),
                 probe=probe_predicted_entries),
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
            Case("VERDICTS answers each workload (the grader checks its values)", (),
                 probe=probe_verdicts_format),
            Case("compile 1 s, 1 ms saved per call, 5,000 calls", (1.0, 0.001, 0.002, 5000)),
            Case("compile 1 s, 1 ms saved per call, 500 calls", (1.0, 0.001, 0.002, 500)),
        ),
        hidden=(
            Case("VERDICTS for the measured workloads", (), probe=probe_verdicts),
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
    Exercise(
        id="ex10_new_primitive", points=4, title="One new primitive, end to end: logaddexp",
        chapter="10_putting_it_together", section="2. The pipeline, stage by stage",
        hint=Hint(
            pitfall=("The naive log(exp(x) + exp(y)) overflows: exp(1000.0) is inf in float64 "
                     "(exp(89.0) in float32), so logaddexp(1000, 1000) comes out inf, not "
                     "1000.69. Shifted by the larger operand it cannot overflow, but where x "
                     "and y are the same infinity x - y is NaN, and NumPy's answer is that "
                     "infinity (-inf for two -inf). The arguments promote as in "
                     "minijit.numpy's binary functions, so a float32 array with a Python float "
                     "stays float32, and a rank-0 operand stays rank 0 beside a shaped one."),
            code=("log(e^x + e^y) = max(x, y) + log1p(exp(-|x - y|)); where x - y != x - y "
                  "(NaN), x + y is the answer. The arguments: minijit/numpy/ufuncs.py's "
                  "_binary, that is _broadcast(*_promote(x, y)) from minijit.numpy.util. "
                  "register_logaddexp fills abstract_eval_rules, impl_rules, numba_rules (an "
                  "Expression) and the op groups BINARY and ELEMENTWISE. In test_logaddexp, "
                  "np.testing.assert_allclose counts NaN equal to NaN and raises "
                  "AssertionError; compare dtype and shape with np.logaddexp's too.")),
        probe=probe_logaddexp_values,
        reference=_reference_new_primitive,
        public=NEW_PRIMITIVE_PUBLIC,
        hidden=NEW_PRIMITIVE_HIDDEN,
        error_hints={
            "CodegenError": (
                "Numba could not compile the code your rule wrote, or found no rule: the "
                "generated module imports math, numpy (as np), numba and minijit's vecmath, "
                "and the rule returns "
                "one expression (a string) for one element; print jitted.lower(x, y).as_text() "
                "to read the source."),
            "KeyError": ("minijit looked logaddexp_p up in one of its tables and found no "
                         "entry: register_logaddexp must fill each table that a primitive "
                         "needs (chapter 03's shape rule and impl, chapter 09's Numba rule)."),
        },
    ),
    Exercise(
        id="ex10_capstone", points=3, title="The capstone: a stable logsumexp on logaddexp",
        chapter="10_putting_it_together",
        section="8. The capstone: your logsumexp on your minijit",
        hint=Hint(
            pitfall=_OVERFLOW_HINT + (" A row of one value is that value; logaddexp of two "
                                      "-inf is -inf, so a row of -inf stays -inf."),
            code=("x.shape[1] is a Python int while tracing: a Python loop over the columns "
                  "works, and so does lax.fori_loop, whose body reads x[:, i] (a dynamic "
                  "slice of mnp.asarray(x): a NumPy array cannot take a traced index); start "
                  "from the first column, and keep x's dtype (float32 in, float32 out).")),
        probe=probe_capstone_values,
        reference=_reference_capstone,
        public=CAPSTONE_PUBLIC,
        hidden=CAPSTONE_HIDDEN,
        error_hints={
            "KeyError": ("minijit found no rule for logaddexp_p: the capstone runs on the "
                         "primitive your register_logaddexp (exercise 3) enters into minijit's "
                         "tables; run that cell, and make check(\"ex10_new_primitive\") pass "
                         "first."),
        },
    ),
]
