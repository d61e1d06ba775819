"""Chapter 02 (tracing): print at trace time, `if` on tracers, and minijit's tracing
itself (the build track, `minijit.build`): the staging trace, `bind` with the trace stack,
and a second interpretation on that stack, forward-mode differentiation.

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
- ``ex02_bind`` (build): ``bind(prim, *args, **params)``, the piece every primitive goes
  through (``minijit.core``), and ``new_trace(trace)``, the stack's context manager. Each
  program case runs with the learner's ``bind`` switched in (eagerly, traced, nested ``jit``,
  and minijit's ``jvp`` on top of ``jit`` and below it) and must equal minijit's own: values,
  and the jaxpr as minijit prints it. ``new_trace`` is run on a stack of stand-in traces.
- ``ex02_jvp``: the learner's ``jvp`` (a ``JVPTrace`` whose rules bind on the trace below it,
  with the learner's ``new_trace``), against ``minijit.jvp.jvp`` on small programs: eagerly,
  under ``jit`` and around a jitted function; a primitive without a rule must raise
  ``NotImplementedError`` naming it.
"""

from __future__ import annotations

import numpy as np

from minijit.grading.build_pieces import switch_in_case
from minijit.grading.cases import Case, Exercise, Hint
from minijit.grading.probing import get, printed

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


# ------------------------------------------------------------------------ ex02_bind

# Programs the bind cases run (trusted text): how -> what runs, on x = [0.5, 1.0, 2.0].
_BIND_PROGRAMS = {
    "sin(x) * 2": "lambda x: mnp.sin(x) * 2.0",
    "a nested jit (jit has a list of outputs)":
        "lambda x: mj.jit(lambda v: (v * 2.0, mnp.exp(v)))(x)[1] + 1.0",
    "cond": "lambda x: lax.cond(mnp.sum(x) > 0, lambda v: v * 2.0, lambda v: -v, x)",
    "while_loop": "lambda x: lax.while_loop(lambda v: mnp.sum(v) < 10.0, lambda v: v * 2.0, x)",
    "int arithmetic": "lambda x: (x * 3).astype(mnp.int64) // 2 + 1",
    "jvp of sin(x) * x": "lambda x: mj.jvp(lambda v: mnp.sin(v) * v, (x,), (mnp.ones_like(x),))",
    "jvp of a jitted function":
        "lambda x: mj.jvp(mj.jit(lambda v: mnp.exp(v) / v), (x,), (x,))",
    "jvp of jvp": "lambda x: mj.jvp(lambda v: mj.jvp(mnp.sin, (v,), (v,))[1], (x,), (x,))",
}


def probe_bind_program(ns, source, how):
    """Run a program (trusted text of the case list) with the learner's bind switched in:
    `eager` (values), `make_jaxpr` (the jaxpr as minijit prints it) or `jit` (values)."""
    import minijit as mj
    import minijit.numpy as mnp
    from minijit import build, lax
    from minijit.array import wrap
    from minijit.ir import reference_pp_jaxpr
    from minijit.tree_util import tree_leaves

    piece = get(ns, "bind")
    fun = eval(source, {"mj": mj, "mnp": mnp, "lax": lax})
    x = np.array([0.5, 1.0, 2.0])
    with build.use("bind", piece, verify=False):
        if how == "make_jaxpr":
            return reference_pp_jaxpr(mj.make_jaxpr(fun)(x).jaxpr)
        out = fun(wrap(x)) if how == "eager" else mj.jit(fun, backend="interpreter")(x)
    return [np.asarray(v) for v in tree_leaves(out)]


def probe_bind_error(ns):
    """A program's own error (shapes that do not broadcast) passes through the learner's bind
    unchanged: its class and first line; after a sum of the same program that works, so a
    bind that fails on everything (the stub) does not pass."""
    import minijit.numpy as mnp
    from minijit import build

    with build.use("bind", get(ns, "bind"), verify=False):
        float(mnp.sum(mnp.add(np.ones((2, 3)), np.ones(3))))
        try:
            mnp.add(np.ones((2, 3)), np.ones(4))
        except Exception as e:  # noqa: BLE001 - the class is the answer
            return [type(e).__name__, str(e).split("\n")[0]]
    return "no error"


def probe_new_trace(ns, scenario):
    """`new_trace` on this thread's stack, with stand-in traces: what the stack is inside the
    block and after it (`raises`: the block raises ValueError; `nested`: two blocks)."""
    from minijit.core import trace_state

    new_trace = get(ns, "new_trace")
    seen, before = {}, list(trace_state.stack)
    outer, inner = "outer trace", "inner trace"
    try:
        with new_trace(outer):
            seen["inside"] = trace_state.stack[len(before):]
            if scenario == "nested":
                with new_trace(inner):
                    seen["inside both"] = trace_state.stack[len(before):]
                seen["after the inner one"] = trace_state.stack[len(before):]
            if scenario == "raises":
                raise ValueError("the block failed")
    except ValueError as e:
        seen["raised"] = str(e)
    seen["after"] = ("as before" if trace_state.stack == before
                     else f"{trace_state.stack[len(before):]} left on the stack")
    trace_state.stack[:] = before  # a stack the learner's new_trace left wrong is put right
    return seen


def _reference_bind():
    import contextlib

    from minijit.core import trace_state

    def bind(prim, *args, **params):
        outs = trace_state.stack[-1].process_primitive(prim, args, params)
        return outs if prim.multiple_results else outs[0]

    @contextlib.contextmanager
    def new_trace(trace):
        trace_state.stack.append(trace)
        try:
            yield trace
        finally:
            trace_state.stack.pop()

    return {"bind": bind, "new_trace": new_trace}


_STACK_CASE = "jvp of sin(x) * x (a jvp trace above the staging trace)"


def _bind_case(label, how, name=None):
    return Case(name or f"{how}: {label}", (_BIND_PROGRAMS[label], how))


EXERCISES += [
    Exercise(
        id="ex02_bind", points=2, title="bind and the trace stack",
        chapter="02_tracing",
        section="5. Why a stack: a second interpretation, `jvp`",
        hint=Hint(
            pitfall=("bind hands the primitive to the innermost trace, the last one on "
                     "trace_state.stack, whatever traces are below it (under jit(jvp(f)) "
                     "that is the JVPTrace, not the JaxprTrace); process_primitive returns "
                     "a list, and bind returns its only element unless the primitive has "
                     "multiple_results. new_trace must pop in a finally: a block that raises "
                     "would otherwise leave its trace on the stack for good."),
            code=("bind: outs = trace_state.stack[-1].process_primitive(prim, args, params). "
                  "new_trace: append, then try: yield trace, finally: pop.")),
        probe=probe_bind_program,
        reference=_reference_bind,
        public=(
            _bind_case("sin(x) * 2", "eager"),
            _bind_case("sin(x) * 2", "make_jaxpr",
                       "make_jaxpr: sin(x) * 2 (one output comes back alone)"),
            _bind_case("a nested jit (jit has a list of outputs)", "make_jaxpr"),
            _bind_case("jvp of sin(x) * x", "make_jaxpr", f"make_jaxpr: {_STACK_CASE}"),
            Case("new_trace pushes, then pops", ("plain",), probe=probe_new_trace),
            Case("new_trace restores the stack when the block raises", ("raises",),
                 probe=probe_new_trace),
            switch_in_case("ex02_bind"),
        ),
        hidden=(
            _bind_case("sin(x) * 2", "jit"),
            _bind_case("a nested jit (jit has a list of outputs)", "jit"),
            _bind_case("cond", "make_jaxpr"),
            _bind_case("cond", "eager"),
            _bind_case("while_loop", "jit"),
            _bind_case("int arithmetic", "eager"),
            _bind_case("int arithmetic", "make_jaxpr"),
            _bind_case("jvp of sin(x) * x", "eager"),
            _bind_case("jvp of sin(x) * x", "jit"),
            _bind_case("jvp of a jitted function", "make_jaxpr"),
            _bind_case("jvp of a jitted function", "eager"),
            _bind_case("jvp of jvp", "jit"),
            Case("a shape error of the program passes through unchanged", (),
                 probe=probe_bind_error),
            Case("new_trace, nested", ("nested",), probe=probe_new_trace),
        ),
        error_hints={
            "PieceError": Hint(
                pitfall=("minijit ran your bind and refused it (the message says why): bind "
                         "hands (prim, args, params) to the innermost trace's "
                         "process_primitive and returns the one output alone, or the list "
                         "when prim.multiple_results.")),
        },
    ),
]


# ------------------------------------------------------------------------ ex02_jvp

# (source, primals, tangents): f of minijit.numpy (as mnp); arguments as lists of floats.
_JVP_PROGRAMS = {
    "sin(x) * x": ("lambda x: mnp.sin(x) * x", [[0.5, 1.0, 2.0]], [[1.0, -1.0, 0.5]]),
    "constants: 2.0 * x + 1.0": ("lambda x: 2.0 * x + 1.0", [[0.5, 1.0, 2.0]],
                                 [[1.0, 1.0, 1.0]]),
    "product rule: x * y, both moving": ("lambda x, y: x * y", [[1.0, 2.0], [3.0, 4.0]],
                                         [[1.0, 0.5], [-1.0, 2.0]]),
    "quotient: exp(x) / (1 + x * x)": ("lambda x: mnp.exp(x) / (1.0 + x * x)",
                                       [[-1.0, 0.0, 2.0]], [[1.0, 1.0, 1.0]]),
    "chain: log(cos(x) + 2)": ("lambda x: mnp.log(mnp.cos(x) + 2.0)", [[0.0, 1.0, 3.0]],
                               [[2.0, 1.0, -1.0]]),
    "neg and sub: -(x - y) - y": ("lambda x, y: -(x - y) - y", [[1.0, 2.0], [0.5, 0.25]],
                                  [[1.0, 1.0], [2.0, 3.0]]),
    "y held still (zero tangent)": ("lambda x, y: mnp.sin(x * y) / y", [[1.0, 2.0], [3.0, 0.5]],
                                    [[1.0, 1.0], [0.0, 0.0]]),
    "a constant array": ("lambda x: x * mnp.asarray([1.0, 2.0, 3.0]) - mnp.cos(2.0)",
                         [[0.5, 1.0, 2.0]], [[1.0, 1.0, 1.0]]),
}


def probe_jvp(ns, source, primals, tangents, how, dtype):
    """The learner's jvp on a program: `eager`, `jit(jvp(f))` or `jvp(jit(f))`; the primal
    and tangent outputs. A NotImplementedError of the learner's own (a missing rule) is a
    failure here, not an untouched stub."""
    import minijit as mj
    import minijit.numpy as mnp
    from minijit.grading.cases import STUB_MESSAGE

    jvp = get(ns, "jvp")
    f = eval(source, {"mnp": mnp})
    primals = tuple(np.asarray(p, dtype) for p in primals)
    tangents = tuple(np.asarray(t, dtype) for t in tangents)
    try:
        if how == "eager":
            out = jvp(f, primals, tangents)
        elif how == "jit(jvp(f))":
            n = len(primals)
            out = mj.jit(lambda *a: jvp(f, a[:n], a[n:]), backend="interpreter")(
                *primals, *tangents)
        else:
            out = jvp(mj.jit(f, backend="interpreter"), primals, tangents)
    except NotImplementedError as e:
        if STUB_MESSAGE in str(e):
            raise
        raise RuntimeError(f"NotImplementedError: {e}") from None
    return [np.asarray(v) for v in out]


def probe_jvp_no_rule(ns):
    """A primitive the learner has no rule for (floor): the error's class, and whether its
    message names the primitive."""
    import minijit.numpy as mnp
    from minijit.grading.cases import STUB_MESSAGE

    try:
        get(ns, "jvp")(lambda x: mnp.floor(x) * x, (np.ones(2),), (np.ones(2),))
    except Exception as e:  # noqa: BLE001 - the class is the answer
        if STUB_MESSAGE in str(e):
            raise
        return {"raises": type(e).__name__, "names floor": "floor" in str(e)}
    return {"raises": None, "names floor": False}


def _jvp_case(label, how="eager", dtype="float64"):
    name = label if how == "eager" else f"{how}: {label}"
    return Case(name + ("" if dtype == "float64" else f" ({dtype})"),
                (*_JVP_PROGRAMS[label], how, dtype))


def _reference_jvp():
    from minijit.jvp import jvp

    return {"jvp": jvp}


EXERCISES += [
    Exercise(
        id="ex02_jvp", points=4, title="jvp: a second interpretation on the stack",
        chapter="02_tracing",
        section="5. Why a stack: a second interpretation, `jvp`",
        hint=Hint(
            pitfall=("Three usual slips. A constant operand (2.0, an array the function "
                     "closed over) is no JVPTracer: lift it to a zero tangent. The product "
                     "rule is dx * y + x * dy, not dx * dy. And a rule must bind on the "
                     "trace below the JVPTrace: run it inside new_trace(self.parent_trace), "
                     "or its operations come back to the JVPTrace itself (RecursionError), "
                     "or go to the EvalTrace under jit, which cannot compute with tracers."),
            code=("process_primitive: primals, tangents = zip(*[self.lift(x) for x in "
                  "args]); with new_trace(self.parent_trace): primals_out, tangents_out = "
                  "jvp_rules[prim](primals, tangents); return one JVPTracer per output. "
                  "jvp: push JVPTrace(current_trace()) with new_trace, call f on JVPTracers, "
                  "lift its output.")),
        probe=probe_jvp,
        reference=_reference_jvp,
        public=(
            _jvp_case("sin(x) * x"),
            _jvp_case("constants: 2.0 * x + 1.0"),
            _jvp_case("product rule: x * y, both moving"),
            _jvp_case("sin(x) * x", "jit(jvp(f))"),
            _jvp_case("sin(x) * x", "jvp(jit(f))"),
            Case("a primitive without a rule (floor): NotImplementedError naming it", (),
                 probe=probe_jvp_no_rule),
        ),
        hidden=(
            _jvp_case("quotient: exp(x) / (1 + x * x)"),
            _jvp_case("chain: log(cos(x) + 2)"),
            _jvp_case("neg and sub: -(x - y) - y"),
            _jvp_case("y held still (zero tangent)"),
            _jvp_case("a constant array"),
            _jvp_case("sin(x) * x", dtype="float32"),
            _jvp_case("quotient: exp(x) / (1 + x * x)", "jit(jvp(f))"),
            _jvp_case("product rule: x * y, both moving", "jit(jvp(f))"),
            _jvp_case("constants: 2.0 * x + 1.0", "jvp(jit(f))"),
            _jvp_case("chain: log(cos(x) + 2)", "jvp(jit(f))"),
        ),
        error_hints={
            "AttributeError": ("An operand without .primal or .tangent is a constant (a "
                               "number, an array): JVPTrace.lift gives it a zero tangent."),
            "RecursionError": ("The rules bound their operations on the JVPTrace itself: run "
                               "each rule inside new_trace(self.parent_trace), so they go to "
                               "the trace below."),
            "UnexpectedTracerError": ("Under jit, a rule's operations reached the EvalTrace: "
                                      "bind them on self.parent_trace (with new_trace), the "
                                      "trace below the JVPTrace, whatever it is."),
        },
    ),
]
