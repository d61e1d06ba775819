"""Chapter 05 (control flow): staged branches and loops, and the interpreter rule of `while`.

- ``ex05_cond_loop`` (dynamic control flow): rewrite two functions whose Python ``if``,
  ``for`` and ``while`` decide on traced values, with ``lax.cond``, ``lax.fori_loop`` and
  ``lax.while_loop``. The probes jit the learner's functions themselves (so every argument,
  the loop count included, is traced), compare the values on hidden inputs, and walk the
  jaxpr from ``mj.make_jaxpr``, sub-jaxprs included, for the staged primitives.
- ``ex05_while_impl`` (build): ``my_while_impl(*args, cond_jaxpr, body_jaxpr, cond_nconsts,
  body_nconsts)``, the impl rule of the ``while`` primitive, minijit's piece ``while_impl``
  (an eager ``while_loop`` and every ``while`` equation ``eval_jaxpr`` runs). One probe calls
  it directly on an equation's operands; the other switches it in (``build.use``, every
  other piece minijit's own) for one ``mj.eval_jaxpr`` run of a traced program (nested
  loops, loops in branches, captured constants, tuple carries) and counts its calls. The
  expected values are minijit's own rule's.
- ``ex05_closure_convert`` (build): ``closure_convert(jaxpr, consts, all_consts)``, which
  turns a traced body into a closed sub-jaxpr whose captured values are leading invars
  (``minijit.lax.control_flow``). Each case is one control-flow program of
  ``minijit.grading.programs.CONTROL_FLOW`` (captured arrays and tracers, one value captured
  by several branches, branches nested in loops), run with the learner's function switched
  in (``build.use``): eagerly, through ``jit`` on the interpreter and on Numba; the outputs
  must equal minijit's own. A wrong result never gets as far as running: minijit checks each
  sub-jaxpr the piece returns and raises a ``PieceError`` that says what is wrong.
- ``ex05_stage_cond`` (build): ``stage_cond(index, branches, operands, order)``, minijit's
  piece that stages every ``lax.cond`` and ``lax.switch``: trace each branch in ``order``,
  check that they return the same structure and types (weak types aside), join what they
  captured (``capture_key``, in ``order``), closure-convert each branch, bind ``cond``,
  return the outputs in the branches' tree. Named programs (captures joined in JAX's order,
  disagreeing structures, weak and strong results, pytrees) and the programs of
  ``CONTROL_FLOW`` that hold a ``cond``, run with the learner's piece switched in: the jaxpr
  (minijit's own printer), the order the branches were traced in, and the values eagerly
  and under ``jit``; a program whose branches disagree must raise JAX's ``TypeError``.
"""

from __future__ import annotations

import numpy as np

from minijit.grading.build_pieces import switch_in_case
from minijit.grading.cases import Case, Exercise, Hint, program_cases, program_hidden
from minijit.grading.probing import get

# ------------------------------------------------------------------------ ex05_cond_loop


def probe_grow(ns, x, rate, years_list):
    import minijit as mj

    grow = mj.jit(get(ns, "grow"))  # the probe jits it: years is a traced argument
    x = np.asarray(x, dtype=np.float64)
    return [np.asarray(grow(x, rate, years)) for years in years_list]


def probe_years_until(ns, x, rate, targets):
    import minijit as mj

    years_until = mj.jit(get(ns, "years_until"))
    x = np.asarray(x, dtype=np.float64)
    out = []
    for target in targets:
        years = np.asarray(years_until(x, rate, target))
        if years.shape != () or years.dtype.kind not in "iu":
            raise TypeError(f"years_until must return an integer scalar, got "
                            f"{years.dtype}{list(years.shape)}")
        out.append(int(years))
    return out


def probe_staged(ns, name, args, wanted):
    """Which staged primitives the jaxpr of ``ns[name](*args)`` holds, sub-jaxprs included."""
    import minijit as mj
    from minijit.ir import subjaxprs

    fn = get(ns, name)
    closed = mj.make_jaxpr(fn)(np.asarray(args[0], dtype=np.float64), *args[1:])
    from minijit.lax.control_flow import cond_p, scan_p, while_p

    seen = set()
    todo = [closed.jaxpr]
    while todo:
        jaxpr = todo.pop()
        for eqn in jaxpr.eqns:
            seen.add(eqn.primitive)
            todo.extend(subjaxprs(eqn))
    # fori_loop stages a scan (static bounds) or a while (a traced bound), as in JAX.
    found = {"cond": cond_p in seen, "loop": bool(seen & {scan_p, while_p}),
             "while": while_p in seen}
    return {k: found[k] for k in wanted}


def _grow_numpy(x, rate, years):
    """The Python original, on NumPy values (the tests check the references against it)."""
    for _ in range(years):
        x = x * rate
        if np.sum(x) > 100.0:
            x = x * 0.5
    return x


def _years_until_numpy(x, rate, target):
    years = 0
    while np.sum(x) < target:
        x = x * rate
        years += 1
    return years


def _reference_cond_loop():
    import minijit.numpy as mnp
    from minijit import lax

    def grow(x, rate, years):
        def one_year(i, x):
            x = x * rate
            return lax.cond(mnp.sum(x) > 100.0, lambda x: x * 0.5, lambda x: x, x)

        return lax.fori_loop(0, years, one_year, x)

    def years_until(x, rate, target):
        def below(carry):
            x, _ = carry
            return mnp.sum(x) < target

        def one_year(carry):
            x, years = carry
            return x * rate, years + 1

        _, years = lax.while_loop(below, one_year, (x, 0))
        return years

    return {"grow": grow, "years_until": years_until}


# ------------------------------------------------------------------------ ex05_while_impl


def probe_while_direct(ns, x, limit):
    """Call the learner's rule the way eval_jaxpr does, on one `while` equation (through
    minijit's piece `while_impl`, with the learner's switched in)."""
    import minijit as mj
    from minijit import lax
    from minijit.grading.cache_probes import only_piece
    from minijit.ir import Lit
    from minijit.lax.control_flow import loops

    def halve_until(x, limit):
        return lax.while_loop(lambda c: c[0] > limit, lambda c: (c[0] * 0.5, c[1] + 1), (x, 0))

    closed = mj.make_jaxpr(halve_until)(np.float64(x), np.float64(limit))
    eqn = next(e for e in closed.eqns if e.primitive is loops.while_p)
    env = {id(v): np.asarray(a) for v, a in zip(closed.jaxpr.invars,
                                                  (np.float64(x), np.float64(limit)))}
    operands = [np.asarray(a.val, a.aval.dtype) if isinstance(a, Lit) else env[id(a)]
                for a in eqn.invars]
    rule = get(ns, "my_while_impl")
    if rule in (loops._while_impl, loops.reference_while_impl):
        raise TypeError("my_while_impl must be your own function, not minijit's rule")
    with only_piece("while_impl", rule):  # called as minijit calls its piece
        outs = loops._while_impl(*operands, **eqn.params)
    if type(outs) not in (list, tuple):
        raise TypeError(f"the rule must return a list of arrays, got {type(outs).__name__}")
    return [np.asarray(o) for o in outs]


def probe_while_in_eval(ns, program):
    """Run a traced program with `mj.eval_jaxpr`, the learner's rule installed for `while`."""
    import minijit as mj
    import minijit.numpy as mnp
    from minijit import lax
    from minijit.core import impl_rules
    from minijit.grading.cache_probes import only_piece
    from minijit.lax.control_flow import loops, while_p

    def countdown(n):  # a tuple carry, no captured values
        return lax.while_loop(lambda c: c[0] > 0, lambda c: (c[0] - 1, c[1] * 2.0), (n, 1.0))

    def sqrt_newton(x):  # cond and body capture x: cond_nconsts = body_nconsts = 1
        return lax.while_loop(lambda y: mnp.abs(y * y - x) > 1e-12 * x,
                              lambda y: 0.5 * (y + x / y), x)

    def limit_and_step(x, limit, step):  # cond captures limit, body captures step
        return lax.while_loop(lambda v: v < limit, lambda v: v + step, x)

    def two_bounds(x, lo, hi):  # cond captures 2 values, body none
        return lax.while_loop(lambda v: (v > lo) & (v < hi), lambda v: v * 1.5, x)

    def body_only(x, a, b):  # cond captures nothing, body 2 values
        return lax.while_loop(lambda c: c[1] < 6, lambda c: (c[0] * a + b, c[1] + 1), (x, 0))

    def never_runs(x):  # the condition is false at once: the carry comes back unchanged
        return lax.while_loop(lambda c: c[1] < 0, lambda c: (c[0] * 3.0, c[1] + 1), (x, 5))

    def triangle(n):  # nested loops: the inner while sits in the outer body
        def outer_body(c):
            i, total = c
            _, total = lax.while_loop(lambda d: d[0] < i, lambda d: (d[0] + 1, d[1] + 1),
                                      (0, total))
            return i + 1, total
        return lax.while_loop(lambda c: c[0] <= n, outer_body, (1, 0))

    def clip_growth(x, limit, step, offset):  # cond captures 1 value, body 2
        def body(c):
            v, k = c
            return v * step + offset, k + 1
        return lax.while_loop(lambda c: mnp.max(c[0]) < limit, body, (x, 0))

    def collatz(n):  # a cond inside the body
        def body(c):
            m, steps = c
            m = lax.cond(m % 2 == 0, lambda m: m // 2, lambda m: 3 * m + 1, m)
            return m, steps + 1
        return lax.while_loop(lambda c: c[0] != 1, body, (n, 0))[1]

    def in_branch(x, flag):  # a loop in each branch of a cond
        def up(x):
            return lax.while_loop(lambda v: mnp.sum(v) < 50.0, lambda v: v * 2.0, x)

        def down(x):
            return lax.while_loop(lambda v: mnp.min(v) > -5.0, lambda v: v - 2.5, x)
        return lax.cond(flag, up, down, x)

    def in_fori(x):  # a while inside a fori_loop body, capturing the loop index
        def body(i, acc):
            v = lax.while_loop(lambda v: v < i * 10.0, lambda v: v + 3.0, acc[0])
            return v, acc[1] + v
        return lax.fori_loop(0, 4, body, (x, x))

    weights = np.array([0.5, 1.0, 2.0])

    def captured_array(x):  # a NumPy constant captured by both cond and body
        return lax.while_loop(lambda v: mnp.dot(v, weights) < 100.0,
                              lambda v: v + weights, x)

    def eager(x):  # outside any trace: lax.while_loop binds eagerly through impl_rules
        return lax.while_loop(lambda c: c[0] < 1000.0, lambda c: (c[0] * x, c[1] + 1),
                              (x, 0))

    programs = {
        "countdown": (countdown, (5,)),
        "sqrt_newton": (sqrt_newton, (np.float64(2.0),)),
        "limit_and_step": (limit_and_step, (np.float64(1.0), np.float64(10.0),
                                            np.float64(0.75))),
        "two_bounds": (two_bounds, (np.float64(1.25), np.float64(1.0), np.float64(30.0))),
        "body_only": (body_only, (np.array([1.0, -1.0]), np.float64(0.5), np.float64(3.0))),
        "never_runs": (never_runs, (np.array([1.0, 2.0]),)),
        "triangle": (triangle, (6,)),
        "clip_growth": (clip_growth, (np.array([1.0, 0.5, 2.0]), 40.0, 1.5, 0.25)),
        "collatz": (collatz, (27,)),
        "in_branch_true": (in_branch, (np.array([1.0, 2.0]), True)),
        "in_branch_false": (in_branch, (np.array([1.0, 2.0]), False)),
        "in_fori": (in_fori, (np.float64(1.0),)),
        "captured_array": (captured_array, (np.zeros(3),)),
    }
    rule = get(ns, "my_while_impl")
    if rule in (impl_rules[while_p], loops._while_impl, loops.reference_while_impl):
        raise TypeError("my_while_impl must be your own function, not minijit's rule")
    calls = []

    def counted(*args, **params):
        calls.append(1)
        return rule(*args, **params)

    if program == "eager":
        with only_piece("while_impl", counted):
            outs = eager(np.float64(1.5))
    else:
        fn, args = programs[program]
        closed = mj.make_jaxpr(fn)(*args)  # traced with minijit's own pieces
        with only_piece("while_impl", counted):
            outs = mj.eval_jaxpr(closed.jaxpr, closed.consts, *args)
    return {"outputs": [np.asarray(o) for o in outs], "rule_calls": len(calls)}


def _reference_while_impl():
    import minijit as mj

    def my_while_impl(*args, cond_jaxpr, body_jaxpr, cond_nconsts, body_nconsts):
        cond_consts = args[:cond_nconsts]
        body_consts = args[cond_nconsts:cond_nconsts + body_nconsts]
        carry = list(args[cond_nconsts + body_nconsts:])
        while mj.eval_jaxpr(cond_jaxpr, (), *cond_consts, *carry)[0]:
            carry = mj.eval_jaxpr(body_jaxpr, (), *body_consts, *carry)
        return carry

    return {"my_while_impl": my_while_impl}


def _program(name: str) -> Case:
    return Case(f"eval_jaxpr of {name}", (name,))


EXERCISES = [
    Exercise(
        id="ex05_cond_loop", points=3, title="Stage an if, a for and a while",
        chapter="05_control_flow", section="4. Loops: `lax.while_loop` and `lax.fori_loop`",
        hint=Hint(
            pitfall=("Under jit, years, rate, target and every sum are tracers: Python's for, "
                     "while and if cannot use them. Each must become a staged operation whose "
                     "body is a function of its own."),
            code=("lax.fori_loop(0, years, body, x) with body(i, x) returning the new x; "
                  "lax.while_loop(cond_fun, body_fun, (x, 0)) with a tuple carry; "
                  "lax.cond(pred, true_fun, false_fun, x) to choose (section 3).")),
        probe=probe_grow,
        reference=_reference_cond_loop,
        public=(
            Case("grow([1, 2, 3], 1.5, years = 0, 4, 10)", ([1.0, 2.0, 3.0], 1.5, [0, 4, 10])),
            Case("years_until([1, 2, 3], 1.5, target = 10, 100)",
                 ([1.0, 2.0, 3.0], 1.5, [10.0, 100.0]), probe=probe_years_until),
            Case("grow's jaxpr holds a cond and a loop",
                 ("grow", [[1.0, 2.0, 3.0], 1.5, 4], ["cond", "loop"]), probe=probe_staged,
                 hint=("Both the loop and the if must be staged: the jaxpr of grow must hold "
                       "a loop equation (the scan or while that lax.fori_loop stages) whose "
                       "body holds a cond. mnp.where "
                       "gives the right values but computes both sides; use lax.cond here.")),
            Case("years_until's jaxpr holds a while",
                 ("years_until", [[1.0, 2.0, 3.0], 1.5, 100.0], ["while"]),
                 probe=probe_staged,
                 hint=("The number of years is not known before the loop runs, so only "
                       "lax.while_loop can express it: carry (x, years) and stop when the "
                       "total reaches the target.")),
        ),
        hidden=(
            Case("grow, many years, 2-d input",
                 ([[4.0, 0.5], [2.5, 1.0]], 1.25, [1, 7, 25, 60])),
            Case("grow, shrinking population", ([50.0, 70.0], 0.9, [1, 2, 3, 15])),
            Case("grow, one big value", ([150.0], 1.1, [0, 1, 2, 9])),
            Case("years_until, already there", ([30.0, 80.0], 2.0, [50.0, 110.0]),
                 probe=probe_years_until),
            Case("years_until, slow growth", ([0.1, 0.2], 1.05, [1.0, 5.0, 50.0]),
                 probe=probe_years_until),
            Case("years_until, 2-d input", ([[1.0, 1.0], [0.5, 0.5]], 3.0, [2.0, 1000.0]),
                 probe=probe_years_until),
            Case("grow's jaxpr on other types",
                 ("grow", [[[1.0, 2.0], [3.0, 4.0]], 0.5, 2], ["cond", "loop"]),
                 probe=probe_staged),
        ),
        error_hints={
            "TracerBoolConversionError": (
                "An if (or while) on a traced value: Python needs True or False while "
                "tracing. Stage the choice with lax.cond(pred, true_fun, false_fun, x) and the "
                "loop with lax.while_loop(cond_fun, body_fun, init)."),
            "TracerIntegerConversionError": (
                "range(years) with a traced years: Python needs the count while tracing. Use "
                "lax.fori_loop(0, years, body, x), whose bounds may be traced."),
            "TypeError": (
                "Both branches of lax.cond and a loop body must return exactly the types they "
                "were given (shape and dtype), and a while_loop's cond_fun must return a "
                "boolean scalar (reduce an array with mnp.sum first)."),
        },
    ),
    Exercise(
        id="ex05_while_impl", points=3, title="The interpreter rule of while",
        chapter="05_control_flow", section="4. Loops: `lax.while_loop` and `lax.fori_loop`",
        hint=Hint(
            pitfall=("The operands are cond's captured values, then the body's, then the "
                     "carry: split them with cond_nconsts and body_nconsts, loop while cond's "
                     "only output is true, and return the carry as a list."),
            code=("Sub-jaxprs have no constvars: mj.eval_jaxpr(cond_jaxpr, (), *cond_consts, "
                  "*carry) and mj.eval_jaxpr(body_jaxpr, (), *body_consts, *carry), each a "
                  "list of outputs.")),
        probe=probe_while_in_eval,
        reference=_reference_while_impl,
        public=(
            Case("called directly: halve 10.0 until <= 1", (10.0, 1.0),
                 probe=probe_while_direct),
            _program("countdown"),
            _program("limit_and_step"),
            _program("sqrt_newton"),
            switch_in_case("ex05_while_impl"),
        ),
        hidden=(
            Case("called directly: no iteration", (0.5, 1.0), probe=probe_while_direct),
            _program("two_bounds"),
            _program("body_only"),
            _program("never_runs"),
            _program("triangle"),
            _program("clip_growth"),
            _program("collatz"),
            _program("in_branch_true"),
            _program("in_branch_false"),
            _program("in_fori"),
            _program("captured_array"),
            _program("eager"),
        ),
        error_hints={
            "PieceError": (
                "minijit ran your rule as its piece while_impl and it raised, or returned "
                "something that is not the final carry (the message says what): a list with "
                "one array per carry value, of the carry's types."),
            "EvalError": (
                "eval_jaxpr failed inside a while equation (the message names the error). "
                "Check the split: args = cond consts, body consts, carry; pass () as the "
                "consts of eval_jaxpr and the captured values as leading arguments; return "
                "the carry (a list), not cond's output."),
            "TypeError": (
                "eval_jaxpr(jaxpr, consts, *args) needs exactly as many args as the jaxpr has "
                "inputs: cond_jaxpr takes cond's captured values then the carry, body_jaxpr "
                "the body's captured values then the carry."),
        },
    ),
]


# ------------------------------------------------------------------------ ex05_closure_convert


def probe_closure_program(ns, name, seed):
    import minijit as mj
    from minijit import build
    from minijit.array import wrap
    from minijit.grading.programs import CONTROL_FLOW, make_args
    from minijit.lax import control_flow
    from minijit.tree_util import tree_leaves

    convert = get(ns, "closure_convert")
    if convert in (control_flow.closure_convert, control_flow.reference_closure_convert,
                   build.PIECES["closure_convert"].reference):
        raise TypeError("closure_convert must be your own function, not minijit's")
    fun = CONTROL_FLOW[name][0]
    args = make_args(name, seed)
    eager_args = [wrap(a) if isinstance(a, np.ndarray) else a for a in args]
    with build.use("closure_convert", convert, verify=False):
        outs = {"eager": tree_leaves(fun(*eager_args)),
                "jit (interpreter)": tree_leaves(mj.jit(fun, backend="interpreter")(*args)),
                "jit (numba)": tree_leaves(mj.jit(fun, backend="numba")(*args))}
    return {how: [np.asarray(x) for x in leaves] for how, leaves in outs.items()}


def _reference_closure_convert():
    from minijit.core import get_aval
    from minijit.ir import Jaxpr, Var
    from minijit.lax.control_flow import capture_key

    def closure_convert(jaxpr, consts, all_consts):
        mine = {capture_key(c): v for c, v in zip(consts, jaxpr.constvars)}
        leading = tuple(mine[capture_key(c)] if capture_key(c) in mine else Var(get_aval(c))
                        for c in all_consts)
        return Jaxpr((), leading + jaxpr.invars, jaxpr.eqns, jaxpr.outvars)

    return {"closure_convert": closure_convert}


_CONVERT_PUBLIC = ("cond_captures_array", "cond_captures_tracers", "while_captures",
                   "cond_in_while")


def _convert_hidden() -> tuple[Case, ...]:
    from minijit.grading.programs import CONTROL_FLOW

    return program_hidden(CONTROL_FLOW, _CONVERT_PUBLIC, probe=probe_closure_program)


EXERCISES += [
    Exercise(
        id="ex05_closure_convert", points=3, title="Closure conversion of a staged body",
        chapter="05_control_flow", section="4. Loops: `lax.while_loop` and `lax.fori_loop`",
        hint=Hint(
            pitfall=("A sub-trace makes a tracer of its own for each value it captures from "
                     "further out, so two branches that capture one outer value hold two "
                     "different tracers for it: match the body's consts to all_consts by the "
                     "outer value they stand for, never by Python identity or by position. "
                     "An entry of all_consts that this body never captured still needs a "
                     "leading invar of its type, which nothing reads."),
            code=("capture_key(c) names the outer value c stands for: map "
                  "capture_key(c) -> constvar over zip(consts, jaxpr.constvars), then build "
                  "Jaxpr((), leading + jaxpr.invars, jaxpr.eqns, jaxpr.outvars) with one "
                  "leading Var per entry of all_consts (Var(get_aval(c)) for one the body "
                  "did not capture).")),
        probe=probe_closure_program,
        reference=_reference_closure_convert,
        public=(*program_cases(_CONVERT_PUBLIC, probe=probe_closure_program),
                switch_in_case("ex05_closure_convert")),
        hidden=_convert_hidden(),
        error_hints={
            "PieceError": Hint(
                pitfall=("minijit ran your closure_convert and it raised, or returned a "
                         "sub-jaxpr that minijit refused (the message says which): no "
                         "constvars, one leading invar per entry of all_consts, in order, "
                         "standing for that outer value, then the body's own invars, and the "
                         "body's equations unchanged.")),
        },
    ),
]


# ------------------------------------------------------------------------ ex05_stage_cond


def probe_cond_staging(ns, scenario):
    """A named cond program staged with the learner's `stage_cond` (every other piece
    minijit's own): its jaxpr (minijit's own printer), the order its branches were traced in,
    and each call's values eagerly and under jit; or the class of the error it raised."""
    import minijit as mj
    from minijit import lax
    from minijit.array import wrap
    from minijit.build import PieceError
    from minijit.grading.cache_probes import only_piece
    from minijit.ir import reference_pp_jaxpr
    from minijit.tree_util import tree_leaves, tree_structure

    log = []

    def loud(name, fn):  # a branch that says when it is traced
        def branch(*args):
            log.append(name)
            return fn(*args)
        return branch

    x, y = np.array([1.0, -2.0, 0.5]), np.array([0.25, 2.0, -1.0])
    if scenario == "captures joined in JAX's order":  # true_fun captures x; false_fun y, x

        def fun(x, y, flag):
            return lax.cond(flag, loud("true_fun", lambda v: v * x),
                            loud("false_fun", lambda v: v - y * x), x + 1.0)
        calls = [(x, y, True), (x, y, False)]
    elif scenario == "branches that return (v, v) and [v, v]":
        def fun(x, flag):
            return lax.cond(flag, lambda v: (v, v), lambda v: [v, v], x)
        calls = [(x, True)]
    elif scenario == "a Python float and an array agree (weak types)":
        def fun(s, flag):
            return lax.cond(flag, lambda v: 1.0, lambda v: v * 2.0, s)
        calls = [(np.float64(3.0), True), (np.float64(3.0), False)]
    elif scenario == "pytree operands and results":
        def fun(x, y, flag):
            return lax.cond(flag, lambda p, q: {"s": p["a"] + q, "t": (q, 2.0)},
                            lambda p, q: {"s": p["a"] * q, "t": (q * y, 0.5)}, {"a": x}, y)
        calls = [(x, y, True), (x, y, False)]
    else:  # "switch of three branches", the index clamped
        def fun(i, x, y):
            return lax.switch(i, [loud("0", lambda v: v * y), loud("1", lambda v: v + x),
                                  loud("2", lambda v: -v)], x)
        calls = [(0, x, y), (1, x, y), (2, x, y), (7, x, y), (-1, x, y)]

    def run(call):
        eager = fun(*[wrap(a) if isinstance(a, np.ndarray) else a for a in call])
        jitted = mj.jit(fun, backend="interpreter")(*call)
        return {"tree": str(tree_structure(jitted)),
                "eager": [np.asarray(v) for v in tree_leaves(eager)],
                "jit": [np.asarray(v) for v in tree_leaves(jitted)]}

    stage = get(ns, "stage_cond")
    with only_piece("stage_cond", stage), np.errstate(all="ignore"):
        try:
            # a cond whose branches agree first: an unfinished piece fails here, not by
            # raising where the program must raise
            lax.cond(True, lambda v: v + 1.0, lambda v: v * 3.0, wrap(x))
            text = reference_pp_jaxpr(mj.make_jaxpr(fun)(*calls[0]).jaxpr)
            traced_in = list(log)
            results = [run(call) for call in calls]
        except PieceError as e:
            if isinstance(e.__cause__, NotImplementedError):  # the untouched stub
                raise e.__cause__ from None
            raise
        except TypeError as e:
            return {"raises": type(e).__name__}
    return {"jaxpr": text, "traced in": traced_in, "calls": results}


def probe_cond_program(ns, name, seed):
    """A program of CONTROL_FLOW, with the learner's `stage_cond` switched in: the values
    eagerly and under jit (interpreter), as `probe_closure_program` runs them."""
    import minijit as mj
    from minijit.array import wrap
    from minijit.build import PieceError
    from minijit.grading.cache_probes import only_piece
    from minijit.grading.programs import CONTROL_FLOW, make_args
    from minijit.tree_util import tree_leaves

    fun = CONTROL_FLOW[name][0]
    args = make_args(name, seed)
    eager_args = [wrap(a) if isinstance(a, np.ndarray) else a for a in args]
    with only_piece("stage_cond", get(ns, "stage_cond")), np.errstate(all="ignore"):
        try:
            outs = {"eager": tree_leaves(fun(*eager_args)),
                    "jit": tree_leaves(mj.jit(fun, backend="interpreter")(*args))}
        except PieceError as e:
            if isinstance(e.__cause__, NotImplementedError):  # the untouched stub
                raise e.__cause__ from None
            raise
    return {how: [np.asarray(x) for x in leaves] for how, leaves in outs.items()}


def _reference_stage_cond():
    from minijit.core import bind
    from minijit.lax.control_flow import capture_key, closure_convert, cond_p, trace_branch
    from minijit.tree_util import tree_leaves, tree_unflatten

    def stage_cond(index, branches, operands, order):
        traced = {k: trace_branch(branches[k], operands) for k in order}
        first_jaxpr, _, first_tree = traced[order[0]]
        for k in order[1:]:
            jaxpr, _, tree = traced[k]
            if tree != first_tree:
                raise TypeError(f"the branches return {first_tree} and {tree}")
            for a, b in zip(first_jaxpr.out_avals, jaxpr.out_avals):
                if a.strip_weak_type() != b.strip_weak_type():
                    raise TypeError(f"the branches return {a} and {b}")
        all_consts, seen = [], set()
        for k in order:
            for c in traced[k][1]:
                if capture_key(c) not in seen:
                    seen.add(capture_key(c))
                    all_consts.append(c)
        closed = tuple(closure_convert(traced[k][0], traced[k][1], all_consts)
                       for k in range(len(branches)))
        outs = bind(cond_p, index, *all_consts, *tree_leaves(operands), branches=closed)
        return tree_unflatten(first_tree, outs)

    return {"stage_cond": stage_cond}


_COND_PUBLIC = ("captures joined in JAX's order", "branches that return (v, v) and [v, v]",
                "a Python float and an array agree (weak types)", "pytree operands and results")
_COND_PROGRAMS = ("cond", "switch", "cond_in_loop", "cond_captures_array",
                  "cond_captures_tracers", "switch_captures", "cond_in_while", "nested_loops")


EXERCISES += [
    Exercise(
        id="ex05_stage_cond", points=3, title="Staging lax.cond, stage_cond",
        chapter="05_control_flow", section="4. Loops: `lax.while_loop` and `lax.fori_loop`",
        hint=Hint(
            pitfall=("Trace the branches in `order` (true_fun first for a cond) and join what "
                     "they captured in that order, each outer value once by capture_key; "
                     "compare the branches' out trees and their types without weak types "
                     "(1.0 and an f64[] array agree), and raise a TypeError if they differ; "
                     "bind the closed branches in index order (branch 0 is false_fun); "
                     "return the outputs in the branches' tree."),
            code=("traced = {k: trace_branch(branches[k], operands) for k in order}; compare "
                  "each out_tree and a.strip_weak_type() of each jaxpr.out_avals with the "
                  "first's; all_consts from the consts in order, skipping a capture_key seen "
                  "before; control_flow.closure_convert(jaxpr, consts, all_consts) for k in "
                  "range(len(branches)); bind(cond_p, index, *all_consts, "
                  "*tree_leaves(operands), branches=...); tree_unflatten(first_tree, outs).")),
        probe=probe_cond_staging,
        reference=_reference_stage_cond,
        public=(*(Case(name, (name,)) for name in _COND_PUBLIC),
                *program_cases(["cond_in_while"], probe=probe_cond_program),
                switch_in_case("ex05_stage_cond")),
        hidden=(Case("switch of three branches", ("switch of three branches",)),
                *program_hidden(_COND_PROGRAMS, ("cond_in_while",), probe=probe_cond_program)),
        error_hints={
            "PieceError": Hint(
                pitfall=("minijit ran your stage_cond and it raised where minijit's own does "
                         "not (the message says what), or it handed closure_convert an "
                         "all_consts that holds one outer value twice or lacks one.")),
        },
    ),
]
