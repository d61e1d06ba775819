"""Chapter 02 (tracing): a tracer of your own, print at trace time, and `if` on tracers.

- ``ex02_tiny_tracer`` (build): ``TinyProgram.record`` and ``tiny_trace(f, n_args)``, a
  tracer for ``+`` and ``*``. Graded against minijit's own IR: the probe turns both the
  learner's program and ``mj.make_jaxpr(f)``'s jaxpr into the same plain form (variables
  renamed by order of appearance, literals as floats) and compares them.
- ``ex02_print_count`` (side effects): predict how many times a ``print`` inside a jitted
  function runs. The expected counts are *measured* on minijit, so they stay true to it.
- ``ex02_where`` (dynamic control flow): rewrite a Python ``if`` on traced values with
  ``mnp.where``. The probe jits the learner's function itself.
"""

from __future__ import annotations

import numpy as np

from minijit.grading.cases import Case, Exercise, Hint
from minijit.grading.probing import get, printed

# ------------------------------------------------------------------------ ex02_tiny_tracer


def probe_tiny_tracer(ns, source, n_args):
    f = eval(source)  # a program from the case list (trusted text, not the learner's)
    program = get(ns, "tiny_trace")(f, n_args)
    names = {}

    def name(v):
        return names.setdefault(id(v), f"v{len(names)}")

    def atom(v):
        if type(v) in (int, float):
            return float(v)
        if id(v) not in names:
            raise ValueError(f"{v!r} is used before it is defined")
        return names[id(v)]

    inputs = [name(v) for v in program.inputs]
    eqns = []
    for out, op, args in program.eqns:
        args = [atom(a) for a in args]  # before naming `out`: inputs come first
        eqns.append([op, args, name(out)])
    outputs = program.outputs
    if type(outputs) not in (list, tuple):
        raise TypeError("program.outputs must be a list")
    return {"inputs": inputs, "eqns": eqns, "outputs": [atom(v) for v in outputs]}


def _reference_tiny_trace():
    """minijit's make_jaxpr, presented as a TinyProgram (the probe reads only these fields)."""
    import minijit as mj
    from minijit.ir import Lit

    class Program:
        def __init__(self, f, n_args):
            closed = mj.make_jaxpr(f)(*[np.float64(1.0)] * n_args)
            jaxpr = closed.jaxpr

            def conv(a):
                return float(a.val) if isinstance(a, Lit) else a

            self.inputs = list(jaxpr.invars)
            self.eqns = [(e.outvars[0], e.primitive.name, tuple(conv(a) for a in e.invars))
                         for e in jaxpr.eqns]
            self.outputs = [conv(a) for a in jaxpr.outvars]

    return {"tiny_trace": Program}


_PROGRAMS = {
    "x * y + x": ("lambda x, y: x * y + x", 2),
    "constants on both sides": ("lambda x: 2.0 * x + 1.0", 1),
    "the input itself": ("lambda x: x", 1),
    "Horner's rule, a Python loop": (
        "lambda x: __import__('functools').reduce(lambda acc, c: acc * x + c, "
        "[1.0, -2.0, 3.0], 0.0)", 1),
    "two outputs": ("lambda x, y: (x * y, x + y)", 2),
    "reused intermediate": ("lambda a, b, c: (a + b) * (a + b) + c", 3),
    "int constants": ("lambda x: 3 * x * 2 + 1", 1),
    "output is an input among others": ("lambda x, y: (y, x * x)", 2),
    "long chain": ("lambda x: x * x * x * x + x + x + x", 1),
}


def _tracer_case(label: str) -> Case:
    return Case(label, _PROGRAMS[label])


# ------------------------------------------------------------------------ ex02_print_count


def probe_print_count_prediction(ns):
    return get(ns, "PREDICTED_PRINTS")


def probe_print_count_function(ns, calls):
    calls = [(tuple(shape), dtype) for shape, dtype in calls]
    return get(ns, "predict_prints")(calls)


# The sequence of calls the notebook shows (shape, dtype).
PRINT_CALLS = [((3,), "float64"), ((3,), "float64"), ((4,), "float64"), ((3,), "float64"),
               ((3,), "int64"), ((4,), "float64"), ((2, 2), "float64")]


def _measure_prints(calls) -> int:
    """Run the calls on a fresh jitted function with a print in it; count the lines."""
    import minijit as mj
    import minijit.numpy as mnp

    def noisy(x):  # as in the notebook
        print("tracing noisy")
        return mnp.abs(x) * 2

    f = mj.jit(noisy)
    _, text = printed(lambda: [f(np.ones(shape, dtype)) for shape, dtype in calls])
    return text.count("tracing noisy")


def _reference_print_count():
    return {"PREDICTED_PRINTS": _measure_prints(PRINT_CALLS),
            "predict_prints": _measure_prints}


def _calls(*spec):
    return ([[list(shape), dtype] for shape, dtype in spec],)


# ------------------------------------------------------------------------ ex02_where


def probe_where(ns, x, t):
    import minijit as mj

    shrink = mj.jit(get(ns, "shrink"))
    return np.asarray(shrink(np.asarray(x, dtype=np.float64), t))


def _reference_shrink(x, t):
    import minijit.numpy as mnp

    return mnp.where(x > t, x - t, mnp.where(x < -t, x + t, 0.0 * x))


EXERCISES = [
    Exercise(
        id="ex02_tiny_tracer", points=3, title="A tiny tracer for + and *",
        chapter="02_tracing", section="1. A tracer from scratch",
        hint=Hint(
            pitfall=("Tracing records, it does not compute: every + or * must add one "
                     "equation whose output is a fresh tracer, and the inputs and outputs "
                     "of the program are tracers too (or numbers, for a constant output)."),
            code=("record(): out = self.new_tracer(), append (out, op, args) to self.eqns, "
                  "return out. tiny_trace(): one new_tracer() per argument into "
                  "program.inputs, call f on them, and store a tuple result as a list in "
                  "program.outputs (a single result as a list of one).")),
        probe=probe_tiny_tracer,
        reference=_reference_tiny_trace,
        public=tuple(_tracer_case(k) for k in ["x * y + x", "constants on both sides",
                                               "two outputs"]),
        hidden=tuple(_tracer_case(k) for k in ["the input itself",
                                               "Horner's rule, a Python loop",
                                               "reused intermediate", "int constants",
                                               "output is an input among others",
                                               "long chain"]),
        error_hints={"AttributeError": "tiny_trace must return the TinyProgram it filled in "
                                       "(with .inputs, .eqns and .outputs)."},
    ),
    Exercise(
        id="ex02_print_count", points=2, title="How often does print run?",
        chapter="02_tracing", section="3. Python side effects run only while tracing",
        hint=Hint(
            pitfall=("A print inside a jitted function runs while tracing only, never on a "
                     "cache hit: count traces, not calls."),
            code=("A call traces when its (shape, dtype) has not been seen before: the "
                  "number of prints is the number of distinct (shape, dtype) pairs.")),
        probe=probe_print_count_function,
        reference=_reference_print_count,
        public=(
            Case("the calls in the notebook", (), probe=probe_print_count_prediction),
            Case("one shape, three calls", _calls(((5,), "float64"), ((5,), "float64"),
                                                  ((5,), "float64"))),
        ),
        hidden=(
            Case("no calls", _calls()),
            Case("dtype changes", _calls(((3,), "float64"), ((3,), "float32"),
                                         ((3,), "float64"), ((3,), "int32")))
            ,
            Case("shapes come back", _calls(((1,), "float64"), ((2,), "float64"),
                                            ((1,), "float64"), ((2,), "float64"),
                                            ((3,), "float64"))),
            Case("same size, other rank", _calls(((4,), "float64"), ((2, 2), "float64"),
                                                 ((1, 4), "float64"), ((4,), "float64"))),
        ),
    ),
    Exercise(
        id="ex02_where", points=2, title="Replace `if` with mnp.where",
        chapter="02_tracing",
        section="4. Control flow: static values unroll, traced values cannot decide",
        hint=Hint(
            pitfall=("Python's if needs one concrete True or False, but x > t is a traced "
                     "array (and an array of many answers): compute every branch and select "
                     "elementwise."),
            code=("mnp.where(cond, a, b) takes a where cond is true and b elsewhere; three "
                  "cases need two of them, one nested in the other's b.")),
        probe=probe_where,
        reference=lambda: {"shrink": _reference_shrink},
        public=(
            Case("t = 1", ([-3.0, -1.0, -0.5, 0.0, 0.5, 1.0, 2.5], 1.0)),
            Case("t = 0", ([-2.0, 0.0, 2.0], 0.0)),
        ),
        hidden=(
            Case("2-d input", ([[-4.0, 0.2], [0.9, 7.0]], 0.5)),
            Case("large threshold", ([-1.0, 3.0, 10.0], 5.0)),
            Case("a single value", ([3.0], 2.0)),
        ),
        error_hints={
            "TracerBoolConversionError": (
                "Python's if (or and/or/not) on a traced array raises this: use "
                "mnp.where(cond, a, b) to select between both branches elementwise."),
        },
    ),
]
