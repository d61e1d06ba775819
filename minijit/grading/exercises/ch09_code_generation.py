"""Chapter 09 (code generation): the Numba rule of a new primitive.

``ex09_softplus_rule`` (build): ``softplus_rule(args, eqn)``, the rule of a new elementwise
primitive, softplus(x) = log(1 + e^x), in an ``Expression`` entry of
``minijit.codegen.rules.numba_rules``: the Python expression for one element of the result,
given the operand's expression. The naive
formula overflows (e^x is inf for x > 709 in float64, 88 in float32) and ``log(1 + tiny)``
rounds tiny values away; the stable one is ``max(x, 0) + log1p(exp(-|x|))``.

Graded by compiling programs that use the primitive with ``backend="numba"``: broadcasting,
fused with other operations, inside a reduction and a ``fori_loop``, on a rank-0 value, in
float32 and float64. The expected outputs are those of the same programs compiled with the
reference rule; they agree with ``mj.eval_jaxpr`` (NumPy's ``logaddexp``) to 1e-13 relative
in float64 and 1e-6 in float32 (checked when the cases were chosen), well inside the cases'
tolerances (1e-9 and 1e-5). The values reach +-1000, so a rule that overflows fails; one
hidden case stays within +-32, where only precision matters (partial credit for a rule that
is precise but overflows).

The probe makes the primitive itself (a fresh ``Primitive`` with the notebook's shape rule
and NumPy implementation), installs the learner's rule into ``numba_rules`` and the
primitive into ``UNARY`` and ``ELEMENTWISE``, and removes every entry in a ``finally``: only
the learner's ``softplus_rule`` comes from the notebook (``disable_jit`` is forced off, so a
notebook that left it on cannot bypass the rule), and minijit's tables are left as they
were. Each case compiles one program (one Numba compile, 0.5 to a few seconds), so there
are four; the grader's own process compiles the reference's four once per grading run, and
Numba's disk cache (chapter 09) makes identical generated source free in later processes.

``ex09_loop_nest`` (build): ``loop_nest(shape, operands) -> (loops, indices)``, minijit's
piece ``loop_nest`` (``minijit.build``, ``minijit.codegen.kernels``): the ``for`` lines of
an elementwise kernel's loop nest and the subscript that reads each operand, with NumPy's
broadcasting (missing leading dimensions, dimensions of size 1). Graded by compiling
programs (broadcasts, size-1 dimensions, rank 0 to 3, a reduction) with
``mj.jit(backend="numba")`` and the learner's piece switched in; the values must be those
of minijit's own piece. The piece's check refuses, with a ``PieceError`` naming it, any
loop or subscript that is not NumPy's broadcasting before code is compiled, so a wrong piece
never reads out of bounds in Numba.
"""

from __future__ import annotations

import numpy as np

from minijit.grading.build_pieces import switch_in_case
from minijit.grading.cases import Case, Exercise, Hint
from minijit.grading.probing import get


def probe_softplus_rule(ns, program, inputs):
    import minijit as mj
    import minijit.numpy as mnp
    from minijit import build, lax
    from minijit.codegen.rules import Expression, numba_rules
    from minijit.core import ELEMENTWISE, UNARY, Primitive, abstract_eval_rules, impl_rules

    rule = get(ns, "softplus_rule")
    if not callable(rule):
        raise TypeError("softplus_rule must be a function (args, eqn) -> str")

    def shape_rule(x):
        if x.dtype.kind != "f":
            raise TypeError(f"softplus needs floating-point inputs, got {x.str_short()}")
        return [x]

    softplus_p = Primitive("softplus")  # fresh: the learner's rule is its only Numba rule
    abstract_eval_rules[softplus_p] = shape_rule
    impl_rules[softplus_p] = lambda x: [np.logaddexp(x.dtype.type(0), x)]
    numba_rules[softplus_p] = Expression(rule)
    UNARY.add(softplus_p)
    ELEMENTWISE.add(softplus_p)
    try:
        # a program from the case list (trusted text, not the learner's)
        f = eval(program, {"mnp": mnp, "lax": lax, "softplus": softplus_p.bind})
        args = [np.asarray(values, dtype=dtype) for values, dtype in inputs]
        own_nest = build.PIECES["loop_nest"].reference  # whatever loop_nest the notebook
        with (mj.config.override("disable_jit", False),  # switched in, and whatever it set
              build.use("loop_nest", own_nest, verify=False)):
            outs = mj.jit(f, backend="numba")(*args)
        outs = outs if isinstance(outs, tuple) else (outs,)
        return [np.asarray(o) for o in outs]
    finally:
        for table in (abstract_eval_rules, impl_rules, numba_rules):
            table.pop(softplus_p, None)
        UNARY.discard(softplus_p)
        ELEMENTWISE.discard(softplus_p)


def _reference_softplus_rule(args, eqn):
    x = args[0]
    return f"(np.log1p(np.exp(-abs({x}))) + max({x}, 0.0))"


# Values that show both pitfalls: overflow (800 and 1000; 120 in float32) and log(1 + tiny)
# (-20, -40). No softplus input falls in (-745, -708) (float64) or (-104, -87) (float32),
# where e^x is subnormal and a correct rule may differ from NumPy in all but the leading bits
# of a result that is nearly zero.
_WIDE = [-1000.0, -40.0, -20.0, -3.0, -0.5, 0.0, 0.25, 2.0, 15.0, 40.0, 800.0, 1000.0]
_WIDE32 = [-1000.0, -40.0, -20.0, -3.0, -0.5, 0.0, 0.25, 2.0, 15.0, 40.0, 120.0, 1000.0]
# Where nothing overflows, but log(1 + tiny) still loses the small results
_MODERATE = [-30.0, -12.0, -3.0, -1.0, -0.25, 0.0, 0.5, 1.0, 2.5, 6.0, 12.0, 30.0]
_F64 = {"rtol": 1e-9, "atol": 1e-300}
_F32 = {"rtol": 1e-5, "atol": 1e-35}


def _program(name: str, program: str, inputs: list, tolerance: dict) -> Case:
    return Case(name, (program, inputs), **tolerance)


PUBLIC = (
    _program("float64: softplus(2x + b), b broadcast along the rows",
             "lambda x, b: softplus(2.0 * x + b) - 0.5 * x",
             [[[_WIDE, [v / 2 for v in _WIDE]], "float64"], [_WIDE[::-1], "float64"]], _F64),
    _program("float32: a row sum of softplus, and softplus of the maximum (rank 0)",
             "lambda x: (mnp.sum(softplus(x), axis=1), softplus(mnp.max(x)))",
             [[[_WIDE32, _WIDE32[::-1]], "float32"]], _F32),
    # softplus's own values, nothing added: where x is very negative they are tiny (4e-18 at
    # -40), which max(x, 0) + log(1 + e^-|x|) rounds to 0 (log1p keeps them)
    _program("float64: softplus alone, on both signs (tiny results for very negative x)",
             "lambda x: (softplus(x), softplus(-x))", [[_WIDE, "float64"]], _F64),
)
HIDDEN = (
    _program("float64, moderate values: a column broadcast, and four softplus steps in a "
             "fori_loop",
             "lambda x, c: (softplus(x - c), "
             "lax.fori_loop(0, 4, lambda i, y: softplus(y - c) * 0.5, x))",
             [[[_MODERATE, _MODERATE[::-1], [v * 0.1 for v in _MODERATE]], "float64"],
              [[[1.0], [-2.0], [0.5]], "float64"]], _F64),
    _program("float32: softplus of a negated input and of an outer sum, two outputs",
             "lambda x, y: (softplus(-x), mnp.max(softplus(x[:, None] + y), axis=0))",
             [[_WIDE32, "float32"], [[-30.0, 0.0, 7.5, 95.0], "float32"]], _F32),
    _program("float32: softplus alone, on both signs (tiny results for very negative x)",
             "lambda x: (softplus(x), softplus(-x))", [[_WIDE32, "float32"]], _F32),
)


def probe_loop_nest(ns, source, args):
    import minijit as mj
    import minijit.codegen.kernels  # noqa: F401 - registers the piece loop_nest
    import minijit.numpy as mnp
    from minijit import build, lax
    from minijit.grading.optimizer_probes import chapter_pieces

    piece = get(ns, "loop_nest")
    scope = {"np": np, "mj": mj, "mnp": mnp, "lax": lax}
    exec(source, scope)  # a program from the case list (trusted text, not the learner's)
    arrays = [np.asarray(value, dtype=dtype) for value, dtype in args]
    with (mj.config.override("disable_jit", False), chapter_pieces(),
          build.use("loop_nest", piece, verify=False)):
        outs = mj.jit(scope["f"], backend="numba")(*arrays)
    outs = outs if isinstance(outs, tuple) else (outs,)
    return [np.asarray(o) for o in outs]


def _reference_loop_nest():
    from minijit.codegen.kernels import loop_nest

    return {"loop_nest": loop_nest}


def _nest(name: str, source: str, *args, hint=None) -> Case:
    return Case(name, (source, list(args)), hint=hint)


_R = [[1.0, -2.0, 3.5, 0.25], [4.0, 0.5, -1.0, 2.0], [-3.0, 1.5, 2.5, -0.5]]
_SIZE1_HINT = ("A dimension of size 1 of a broadcast operand is read at 0, whatever the "
               "loop's index: [i0, 0] for (3, 1) in a (3, 4) loop.")
_LEADING_HINT = ("An operand with fewer dimensions lines up with the loop's last ones: (4,) "
                 "in a (2, 3, 4) loop is read at [i2].")
NEST_PUBLIC = (
    _nest("x * row + column: (3, 4), (4,) and (3, 1)",
          "def f(x, r, c):\n    return x * r + c",
          [_R, "float64"], [[1.0, 2.0, 3.0, 4.0], "float64"], [[[1.0], [-1.0], [2.0]], "float64"],
          hint=_SIZE1_HINT),
    _nest("rank 0 and rank 1: a scalar times a vector, and the scalar doubled",
          "def f(s, v):\n    return mnp.sin(v) * s + 1.0, s * 2.0",
          [1.5, "float64"], [[0.0, 1.0, 2.0, 3.0, 4.0], "float64"]),
)
NEST_HIDDEN = (
    _nest("rank 3: (2, 3, 4) minus (2, 1, 4) plus (4,)",
          "def f(x, y, z):\n    return x - y + z, mnp.exp(y) * 0.5",
          [np.arange(24.0).reshape(2, 3, 4).tolist(), "float64"],
          [[[[1.0, 2.0, 3.0, 4.0]], [[-1.0, 0.5, 0.0, 2.0]]], "float64"],
          [[10.0, 20.0, 30.0, 40.0], "float64"], hint=_LEADING_HINT),
    _nest("an outer product summed along its rows: (3, 1) * (4,), then a reduction",
          "def f(a, b):\n    return mnp.sum(a[:, None] * b, axis=1), mnp.max(a * 2.0)",
          [[1.0, -2.0, 3.0], "float64"], [[0.5, 1.0, 1.5, 2.0], "float64"]),
    _nest("size 1 on both sides: (1, 3) + (4, 1), int32, and a (1, 1) operand",
          "def f(x, y, z):\n    return x + y, (x + y) * z",
          [[[1, 2, 3]], "int32"], [[[10], [20], [30], [40]], "int32"],
          [[[7]], "int32"], hint=_SIZE1_HINT),
)


EXERCISES = [
    Exercise(
        id="ex09_softplus_rule", points=3, title="The Numba rule of a new primitive",
        chapter="09_code_generation", section="6. When Numba cannot compile something",
        hint=Hint(
            pitfall=("The naive np.log(1 + np.exp(x)) overflows to inf for large x (above 709 "
                     "in float64, 88 in float32), and log(1 + t) rounds a tiny t away "
                     "(softplus(-40) becomes 0). The rule returns a string: the expression for "
                     "one element, built from args[0] (itself an expression, such as 'a' or "
                     "'x[i0, i1]')."),
            code=("For x > 0, log(1 + e^x) = x + log(1 + e^-x), and e^-|x| never overflows: "
                  "split on the sign with max and abs, and write log(1 + t) as np.log1p(t). "
                  "Section 2 (\u201c2. Reading minijit's generated source\u201d) shows the "
                  "rules of the other primitives.")),
        probe=probe_softplus_rule,
        reference=lambda: {"softplus_rule": _reference_softplus_rule},
        public=PUBLIC,
        hidden=HIDDEN,
        error_hints={
            "CodegenError": (
                "Numba could not compile the code your rule wrote. The generated module "
                "imports math, numpy (as np), numba and minijit's vecmath (sometimes folds): "
                "write a scalar expression from those and Python's built-ins (np.log1p, "
                "np.exp, abs, max); print jitted.lower(x).as_text() to read the source."),
            "IndexError": "softplus has one operand: args is a list of one string, args[0].",
        },
    ),
    Exercise(
        id="ex09_loop_nest", points=3, title="minijit's loop-nest generator, loop_nest",
        chapter="09_code_generation",
        section="3. Loop nests: a `for` per dimension, a subscript per operand",
        hint=Hint(
            pitfall=("Operands line up with the loop's last dimensions: an operand of rank r "
                     "in a loop of rank n is read along loops n - r ... n - 1, and a "
                     "dimension of size 1 (of an operand whose shape is not the loop's) is "
                     "read at 0. A rank-0 loop has no for lines, and its operands the "
                     "subscript \"\"."),
            code=("idx = [f\"i{k}\" for k in range(len(shape))]; loops = one "
                  "f\"for {i} in range({d}):\" per (i, d) in zip(idx, shape). For each "
                  "operand s: if tuple(s) == tuple(shape), \", \".join(idx); else with "
                  "offset = len(shape) - len(s), join \"0\" if d == 1 else idx[offset + k] "
                  "for k, d in enumerate(s).")),
        probe=probe_loop_nest, reference=_reference_loop_nest,
        public=(*NEST_PUBLIC, switch_in_case("ex09_loop_nest")), hidden=NEST_HIDDEN,
        error_hints={
            "PieceError": ("minijit checked your loop nest before compiling it and found a "
                           "loop or a subscript wrong (the message says which); Numba would "
                           "have read out of bounds, or the wrong element."),
        },
    ),
]
