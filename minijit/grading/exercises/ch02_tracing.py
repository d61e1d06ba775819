"""Chapter 02 (tracing): a tracer of your own, print at trace time, `if` on tracers, and
minijit's staging trace itself (the build track, `minijit.build`).

- ``ex02_tiny_tracer`` (build): ``TinyProgram.record`` and ``tiny_trace(f, n_args)``, a
  tracer for ``+`` and ``*``. Graded against minijit's own IR: the probe turns both the
  learner's program and ``mj.make_jaxpr(f)``'s jaxpr into the same plain form (variables
  renamed by order of appearance, literals as floats) and compares them.
- ``ex02_print_count`` (side effects): predict how many times a ``print`` inside a jitted
  function runs. The expected counts are *measured* on minijit, so they stay true to it.
- ``ex02_where`` (dynamic control flow): rewrite a Python ``if`` on traced values with
  ``mnp.where``. The probe jits the learner's function itself.
- ``ex02_process_primitive`` (build): ``process_primitive(trace, prim, args, params)``, how
  the staging trace records one equation (``minijit.tracing``). Each case is one program of
  ``minijit.grading.programs`` (``PROGRAMS`` and ``CONTROL_FLOW``: literals, captured arrays
  and tracers, several outputs, every control-flow primitive, nested ``jit``), traced with
  the learner's function switched in (``build.use``): the jaxpr, printed by minijit's own
  printer, and the values of ``mj.jit`` must equal minijit's own. A wrong recording rarely
  gets that far: minijit checks each equation the piece records and raises a ``PieceError``
  that says what is wrong.
"""

from __future__ import annotations

import numpy as np

from minijit.grading.build_pieces import switch_in_case
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


def probe_print_count_format(ns):
    """Whether PREDICTED_PRINTS is a count: the public case checks its form, never its value
    (a prediction that check() confirmed would no longer be one)."""
    answer = get(ns, "PREDICTED_PRINTS")
    return type(answer) is int and answer >= 0


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
            code=("Follow the calls in order with the cache in mind: which calls find an "
                  "entry made for their argument, and which make one? Only a call that makes "
                  "one runs the Python body.")),
        probe=probe_print_count_function,
        reference=_reference_print_count,
        public=(
            Case("PREDICTED_PRINTS is a count (the grader checks its value)", (),
                 probe=probe_print_count_format, expected=True,
                 hint="PREDICTED_PRINTS must be an int: the number of lines printed."),
            Case("one shape, three calls", _calls(((5,), "float64"), ((5,), "float64"),
                                                  ((5,), "float64"))),
        ),
        hidden=(
            Case("PREDICTED_PRINTS for the calls in the notebook", (),
                 probe=probe_print_count_prediction),
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


# ------------------------------------------------------------------------ ex02_process_primitive


def probe_staging_program(ns, name):
    import minijit as mj
    from minijit import build, tracing
    from minijit.grading.programs import CONTROL_FLOW, PROGRAMS, make_args
    from minijit.ir import reference_pp_jaxpr
    from minijit.tree_util import tree_leaves

    piece = get(ns, "process_primitive")
    if piece in (tracing.process_primitive, build.PIECES["process_primitive"].reference):
        raise TypeError("process_primitive must be your own function, not minijit's")
    fun = {**PROGRAMS, **CONTROL_FLOW}[name][0]
    args = make_args(name, 0)
    with build.use("process_primitive", piece, verify=False):
        closed = mj.make_jaxpr(fun)(*args)
        outs = tree_leaves(mj.jit(fun, backend="interpreter")(*args))
    return {"jaxpr": reference_pp_jaxpr(closed.jaxpr), "jit": [np.asarray(x) for x in outs]}


def _reference_process_primitive():
    from minijit import errors
    from minijit.core import checked_abstract_eval
    from minijit.ir import Eqn, Var

    def process_primitive(trace, prim, args, params):
        invars = tuple(map(trace.to_atom, args))
        avals = checked_abstract_eval(prim, [x.aval for x in invars], params)
        where = errors.user_location()
        outvars = tuple(Var(aval) for aval in avals)
        trace.eqns.append(Eqn(prim, invars, outvars, {**params}, where))
        return [trace.var_to_tracer(v, where) for v in outvars]

    return {"process_primitive": process_primitive}


_STAGING_PUBLIC = ("add_literal", "scale_shift", "two_outputs", "int_arith", "cond",
                   "while_loop")


def _staging_cases(public: bool) -> tuple[Case, ...]:
    from minijit.grading.programs import CONTROL_FLOW, PROGRAMS

    return tuple(Case(f"program {name}", (name,)) for name in {**PROGRAMS, **CONTROL_FLOW}
                 if (name in _STAGING_PUBLIC) == public)


EXERCISES += [
    Exercise(
        id="ex02_process_primitive", points=3, title="minijit's staging trace, process_primitive",
        chapter="02_tracing", section="2. minijit's tracer",
        hint=Hint(
            pitfall=("An argument is not always a tracer of this trace: a Python number "
                     "stands in the equation as a literal, and a NumPy array or a tracer of "
                     "an enclosing trace as a captured constvar; the trace's to_atom knows "
                     "which, and a Var made by hand for an input is one that nothing "
                     "defines. A primitive may have several outputs (cond and while_loop one "
                     "per value they return): one new Var per output type, one tracer per "
                     "Var. The equation keeps its own copy of the params, and the line being "
                     "traced as its source, which error messages quote."),
            code=("checked_abstract_eval(prim, avals, params) returns the list of output "
                  "types; Eqn(prim, invars, outvars, params, source) takes tuples of atoms; "
                  "errors.user_location() is the source; trace.var_to_tracer(var, source) "
                  "makes the tracer of an outvar.")),
        probe=probe_staging_program,
        reference=_reference_process_primitive,
        public=(*_staging_cases(public=True), switch_in_case("ex02_process_primitive")),
        hidden=_staging_cases(public=False),
        error_hints={
            "PieceError": Hint(
                pitfall=("minijit ran your process_primitive and refused what it recorded or "
                         "returned (the message says what): each call appends exactly one "
                         "equation to trace.eqns, whose inputs are the atoms to_atom gives "
                         "for the arguments and whose outputs are new Vars of the types "
                         "abstract eval gives, and returns one tracer of the trace per "
                         "outvar, in order.")),
        },
    ),
]
