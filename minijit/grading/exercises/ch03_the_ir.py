"""Chapter 03 (the IR): a shape rule of your own, an int/float dtype bug, and two pieces of
minijit itself (the build track, `minijit.build`).

- ``ex03_broadcast_rule`` (build): ``broadcast_binary_rule(x, y)``, the abstract-evaluation
  rule of a *broadcasting* binary primitive (minijit's own binary primitives are strict and
  leave broadcasting to ``minijit.numpy``). Graded on hidden shapes, directly and through
  minijit: one probe registers the learner's rule for a fresh ``Primitive`` and reads the
  output type from ``mj.make_jaxpr``.
- ``ex03_dtype`` (dtype mixing, section 8): two functions that run without an error and
  return wrong numbers, because of the dtype that promotion picks: ``int32 + float32`` is
  float32 in JAX's lattice (timestamps near 1.7e9 lose their seconds), and ``uint8 - uint8``
  stays uint8 (a negative difference wraps). Fixed with an explicit dtype before the operation.
- ``ex03_eval_jaxpr`` (build): the interpreter ``eval_jaxpr(jaxpr, consts, *args)``. Each
  case is one program of ``minijit.grading.programs``, run with the learner's function
  switched in (``build.use``): called directly, through ``jit(backend="interpreter")``, and
  eagerly (so ``cond``, ``while_loop`` and ``scan`` bodies run through it by their impl
  rules); the outputs must equal minijit's own.
- ``ex03_pp_jaxpr`` (build): the printer ``pp_jaxpr(jaxpr) -> str``, graded by ``str()`` of
  each printable program's jaxpr with the learner's printer switched in. A program that
  fits on one line must print exactly as minijit prints it; a longer one may be laid out
  any way (one line, or minijit's layout): only the text between the white space is graded.
"""

from __future__ import annotations

import numpy as np

from minijit.grading.build_pieces import switch_in_case
from minijit.grading.cases import Case, Exercise, Hint, program_cases, program_hidden, raises
from minijit.grading.probing import get

# ------------------------------------------------------------------------ ex03_broadcast_rule


def probe_broadcast_rule(ns, x_shape, y_shape, x_dtype, y_dtype):
    from minijit.core import ShapedArray

    rule = get(ns, "broadcast_binary_rule")
    out = rule(ShapedArray(tuple(x_shape), np.dtype(x_dtype)),
               ShapedArray(tuple(y_shape), np.dtype(y_dtype)))
    if type(out) not in (list, tuple) or len(out) != 1 or not isinstance(out[0], ShapedArray):
        raise TypeError("the rule must return a list holding one ShapedArray")
    return [list(out[0].shape), out[0].dtype.name]


def probe_broadcast_rule_in_jaxpr(ns, x_shape, y_shape):
    import minijit as mj
    from minijit.core import Primitive, abstract_eval_rules, bind

    prim = Primitive("badd")  # a fresh primitive, so the learner's rule is its only rule
    abstract_eval_rules[prim] = get(ns, "broadcast_binary_rule")
    try:
        closed = mj.make_jaxpr(lambda a, b: bind(prim, a, b))(np.ones(x_shape),
                                                              np.ones(y_shape))
    finally:
        del abstract_eval_rules[prim]
    return str(closed.jaxpr.eqns[0].outvars[0].aval)


def _reference_broadcast_rule(x, y):
    import minijit.numpy as mnp
    from minijit.core import ShapedArray

    if x.dtype != y.dtype:
        raise TypeError(f"badd needs equal dtypes, got {x} and {y}")
    try:
        shape = mnp.broadcast_shapes(x.shape, y.shape)
    except ValueError as exc:
        raise TypeError(str(exc)) from None
    return [ShapedArray(shape, x.dtype)]


def _shapes(label: str, x: tuple, y: tuple, dtype: str = "float64",
            category: str | None = None) -> Case:
    return Case(f"{label}: {x} with {y}", (list(x), list(y), dtype, dtype), category=category)


_SIZE_ONE = ("A size of 1 stretches to the other size, whatever it is, 0 included: against "
             "1, a size of 0 gives 0, so the larger of the two is not the rule.")
_RANK_0 = ("A rank-0 shape () has no axes: padded with 1s on the left it lines up with any "
           "shape, and the other shape comes out (two of them give ()).")
_BROADCAST_CASE_HINTS = {
    "an empty axis against a size of 1": _SIZE_ONE, "zero-size": _SIZE_ONE,
    "scalar": _RANK_0, "scalar and scalar": _RANK_0,
    "unequal dtypes": ("This primitive adds arrays of one dtype: two different dtypes are a "
                       "type error, found before the shapes are even looked at."),
    "inside make_jaxpr": ("Inside make_jaxpr minijit calls your rule with the operands' "
                          "ShapedArrays and types the equation's output with what it returns: "
                          "a list holding one ShapedArray of the broadcast shape."),
}


def _clash(x: tuple, y: tuple) -> Case:
    return Case(f"incompatible: {x} with {y} raises TypeError",
                (list(x), list(y), "float64", "float64"), expected=raises("TypeError"))


# ------------------------------------------------------------------------ ex03_dtype


def probe_elapsed(ns, seconds, fractions):
    import minijit as mj

    return np.asarray(mj.jit(get(ns, "elapsed"))(np.asarray(seconds, dtype=np.int32),
                                                 np.asarray(fractions, dtype=np.float32)))


def probe_mean_abs_diff(ns, a, b):
    import minijit as mj

    return np.asarray(mj.jit(get(ns, "mean_abs_diff"))(np.asarray(a, dtype=np.uint8),
                                                       np.asarray(b, dtype=np.uint8)))


def _reference_dtype():
    import minijit.numpy as mnp

    def elapsed(seconds, fractions):
        t = seconds.astype(mnp.float64) + fractions
        return t - t[0]

    def mean_abs_diff(a, b):
        return mnp.mean(mnp.abs(a.astype(mnp.float64) - b.astype(mnp.float64)))

    return {"elapsed": elapsed, "mean_abs_diff": mean_abs_diff}


_SECONDS = [1_700_000_000, 1_700_000_003, 1_700_000_060]


EXERCISES = [
    Exercise(
        id="ex03_broadcast_rule", points=2, title="The shape rule of a broadcasting add",
        chapter="03_the_ir", section="6. Shapes and dtypes without data",
        hint=Hint(
            pitfall=("Broadcasting lines the shapes up at their last axis, not their first: "
                     "the shorter shape is padded with 1s on the left, a size of 1 stretches "
                     "to the other size, and any other mismatch (or two dtypes) is a type "
                     "error. Compare the expected and the got shape of the failed case: "
                     "which axis came out wrong?"),
            code=("Pad both shapes to ndim = max(x.ndim, y.ndim) with leading 1s, zip them, "
                  "raise TypeError where a != b and 1 is not among them, else keep the size "
                  "that is not 1; check x.dtype == y.dtype first, and return "
                  "[ShapedArray(tuple(shape), x.dtype)].")),
        probe=probe_broadcast_rule,
        reference=lambda: {"broadcast_binary_rule": _reference_broadcast_rule},
        public=(
            _shapes("equal", (2, 3), (2, 3)),
            _shapes("scalar", (), (4,)),
            _shapes("column and row", (3, 1), (1, 4)),
            Case("inside make_jaxpr: (2, 1) with (3,)", ((2, 1), (3,)),
                 probe=probe_broadcast_rule_in_jaxpr),
            _clash((2,), (3,)),
            # the text's other two rules: equal dtypes, and "the result has the other size"
            # (which is 0 against 1, where max(a, b) gives 1)
            Case("unequal dtypes: f32[2] with f64[2] raises TypeError",
                 ([2], [2], "float32", "float64"), expected=raises("TypeError")),
            _shapes("a size of 0 against 1", (3, 1), (1, 0),
                    category="an empty axis against a size of 1"),
        ),
        hidden=(
            _shapes("rank 3 and rank 1", (2, 1, 5), (5,)),
            _shapes("ones both ways", (1, 4, 1), (3, 1, 6)),
            _shapes("int dtype", (4, 1), (4,), "int32"),
            _shapes("zero-size", (0, 3), (1, 3)),
            _shapes("scalar and scalar", (), ()),
            _clash((2, 3), (3, 2)),
            _clash((4, 1), (1, 3, 2)),
            Case("unequal dtypes: f64[3] with i64[3] raises TypeError",
                 ([3], [3], "float64", "int64"), expected=raises("TypeError")),
            _shapes("bool", (2,), (1,), "bool"),
            Case("inside make_jaxpr: (1, 3) with (4, 1)", ((1, 3), (4, 1)),
                 probe=probe_broadcast_rule_in_jaxpr),
        ),
        case_hints=_BROADCAST_CASE_HINTS,
        error_hints={
            "ValueError": Hint(
                pitfall=("The rule raised ValueError (as NumPy's own broadcasting does): a "
                         "shape or dtype that does not fit is a type error, and a shape rule "
                         "reports it as TypeError, as minijit's strict primitives do "
                         "(section 6)."),
                code=("raise TypeError(...) yourself, or catch the ValueError of "
                      "mnp.broadcast_shapes and raise TypeError from it.")),
            "TypeError": Hint(
                pitfall=("A TypeError where a shape was expected: either the rule refused two "
                         "shapes that do broadcast (a size of 1, or a missing leading axis, "
                         "fits any size), or it returned something other than a list holding "
                         "one ShapedArray (the message says which).")),
        },
    ),
    Exercise(
        id="ex03_dtype", points=2, title="Fix two dtype bugs",
        chapter="03_the_ir", section="8. Mixing dtypes",
        hint=Hint(
            pitfall=("Converting the result is too late: by then the float32 sum has rounded "
                     "the seconds away (near 1.7e9, float32 values are 128 apart), and the "
                     "uint8 difference has wrapped around. Convert an operand before the "
                     "operation that goes wrong. A weak Python float does not help: "
                     "seconds * 1.0 is a weak float64, and a weak float meets float32 as "
                     "float32."),
            code=("t = seconds.astype(mnp.float64) + fractions (float64 + float32 is "
                  "float64), then t - t[0]; for the images, a.astype(mnp.float64) - "
                  "b.astype(mnp.float64) before mnp.abs and mnp.mean (the mean of an int "
                  "array narrower than 64 bits is float32, as in JAX).")),
        probe=probe_elapsed,
        reference=_reference_dtype,
        public=(
            Case("elapsed: the three readings of the notebook", (_SECONDS, [0.25, 0.5, 0.75])),
            Case("mean_abs_diff: the 2x2 images of the notebook",
                 ([[3, 200], [7, 0]], [[5, 100], [7, 1]]), probe=probe_mean_abs_diff),
        ),
        hidden=(
            Case("elapsed: one reading", ([1_700_000_000], [0.5])),
            Case("elapsed: a reading before the first",
                 ([1_700_000_100, 1_700_000_000, 1_700_000_101], [0.0, 0.125, 0.5])),
            Case("elapsed: near the largest int32",
                 ([2_147_483_000, 2_147_483_647], [0.75, 0.25])),
            Case("elapsed: small timestamps", ([0, 1, 2, 10], [0.1, 0.2, 0.3, 0.4])),
            Case("mean_abs_diff: equal images", ([[9, 9], [250, 0]], [[9, 9], [250, 0]]),
                 probe=probe_mean_abs_diff),
            Case("mean_abs_diff: black against white", ([0, 0, 0], [255, 255, 255]),
                 probe=probe_mean_abs_diff),
            Case("mean_abs_diff: b brighter everywhere",
                 ([[1, 2, 3], [4, 5, 6]], [[10, 20, 30], [40, 50, 60]]),
                 probe=probe_mean_abs_diff),
            Case("mean_abs_diff: one pixel", ([17], [200]), probe=probe_mean_abs_diff),
        ),
        # each function's own pitfall, when only its cases fail
        case_hints={
            "elapsed": ("elapsed: int32 + float32 is float32 in JAX's lattice, and near 1.7e9 "
                        "float32 values are 128 apart, so the seconds are lost in the sum. "
                        "Converting the result is too late: the operand that goes in must "
                        "already be float64."),
            "mean_abs_diff": ("mean_abs_diff: uint8 - uint8 stays uint8, so a negative "
                              "difference wraps around to a large one before abs sees it; "
                              "converting afterwards keeps the wrapped value."),
        },
    ),
]


# ------------------------------------------------------------------------ ex03_eval_jaxpr


def probe_eval_program(ns, name, seed):
    """`name` is a program of the catalogue and `seed` makes its arguments, or `name` is
    source text that defines `f` (trusted text of the case list) and `seed` its arguments,
    each a (values, dtype) pair: programs in other dtypes than the catalogue's float64."""
    import minijit as mj
    import minijit.numpy as mnp
    from minijit import build, lax
    from minijit.array import wrap
    from minijit.grading.programs import PROGRAMS, make_args
    from minijit.tree_util import tree_leaves

    eval_jaxpr = get(ns, "eval_jaxpr")
    if name in PROGRAMS:
        fun, args = PROGRAMS[name][0], make_args(name, seed)
    else:
        scope = {"np": np, "mnp": mnp, "lax": lax}
        exec(name, scope)
        fun, args = scope["f"], [np.asarray(value, dtype=dtype) for value, dtype in seed]
    closed = mj.make_jaxpr(fun)(*args)
    leaves = [np.asarray(x, dtype=v.aval.dtype) for x, v in zip(args, closed.jaxpr.invars)]
    with build.use("eval_jaxpr", eval_jaxpr, verify=False):
        direct = eval_jaxpr(closed.jaxpr, closed.consts, *leaves)
        jitted = tree_leaves(mj.jit(fun, backend="interpreter")(*args))
        eager = tree_leaves(fun(*[wrap(a) if isinstance(a, np.ndarray) else a for a in args]))
    if type(direct) not in (list, tuple):
        raise TypeError(f"eval_jaxpr returned a {type(direct).__name__}, not a list")
    return {"eval_jaxpr": [np.asarray(x) for x in direct],
            "jit": [np.asarray(x) for x in jitted], "eager": [np.asarray(x) for x in eager]}


def _reference_eval_jaxpr():
    from minijit.interpret import reference_eval_jaxpr

    return {"eval_jaxpr": reference_eval_jaxpr}


_EVAL_PUBLIC = ("add_literal", "scale_shift", "two_outputs", "int_arith", "sum_axes", "cond",
                "while_loop", "scan")

# Programs in float32 and int32, whose literals have those dtypes (a literal read without its
# aval's dtype is a float64 or int64 array, which the impl rules refuse), and whose last
# output is a literal itself (an outvar is not always in the environment).
_F32_LITERALS = "def f(x):\n    return x * 2.0 + 1.0, 3.0\n"
_I32_LITERALS = "def f(x):\n    return x * 3 - 1, 2\n"


def _literal_case(label: str, source: str, values: list, dtype: str) -> Case:
    return Case(label, (source, [[values, dtype]]), probe=probe_eval_program,
                category=_OTHER_DTYPE_LITERALS)


_OTHER_DTYPE_LITERALS = "literals of a float32 or int32 program"


# ------------------------------------------------------------------------ ex03_pp_jaxpr


def probe_print_program(ns, name):
    import minijit as mj
    from minijit import build
    from minijit.grading.programs import PROGRAMS, make_args
    from minijit.ir import reference_pp_jaxpr

    pp_jaxpr = get(ns, "pp_jaxpr")
    closed = mj.make_jaxpr(PROGRAMS[name][0])(*make_args(name, 0))
    with build.use("pp_jaxpr", pp_jaxpr, verify=False):
        text = pp_jaxpr(closed.jaxpr)
        if str(closed) != text:  # what print(closed) shows: the same printer, called again
            raise ValueError("print(jaxpr) shows other text than pp_jaxpr(jaxpr) returned: "
                             "a printer must give the same text every time")
    laid_out = reference_pp_jaxpr(closed.jaxpr)
    if "\n" in laid_out:  # too long for one line: any layout of the same text will do
        flat = reference_pp_jaxpr(closed.jaxpr, width=1 << 30)
        if " ".join(text.split()) in (" ".join(flat.split()), " ".join(laid_out.split())):
            return laid_out
    return text


def _reference_pp_jaxpr():
    from minijit.ir import reference_pp_jaxpr

    return {"pp_jaxpr": reference_pp_jaxpr}


_NO_STR_INSIDE = Hint(
    pitfall=("str(jaxpr) and print(jaxpr) call the printer minijit uses, which after build.use "
             "is yours: calling it on a sub-jaxpr from inside your printer calls your printer "
             "again, without end."),
    code=("Print a sub-jaxpr (a param of cond, while or scan) with a function of your own, "
          "called recursively with the same names dict, never with str()."))
_PP_PUBLIC = ("add_literal", "compare", "scale_shift", "int_arith", "cond", "unread_output")


# What a program tests, for the printers that print it differently: names in another order
# (the constvars, the outputs of an equation whose params hold jaxprs) and unread outputs.
_PP_CASE_HINTS = {
    "scale_shift": ("A captured array is a constvar, printed before the ; and named before "
                    "the invars: { lambda a:f64[3]; b:f64[3]. let ... }."),
    "cond": ("Names run through the sub-jaxprs in one sequence: the cond equation's output "
             "is named before its branches are printed, and the branches' variables take "
             "the next names. A branch that starts again from a was printed on its own "
             "(by str(), or with a fresh table of names), not inside the outer walk."),
    "long_chain": ("After z the names go on ba, bb, ..., bz, ca: the position written in "
                   "base 26 with the letters as digits (a is 0), so that ba follows z as 10 "
                   "follows 9; aa would be a written twice."),
    "unread_output": ("An equation output that nothing reads is printed as _ and takes no "
                      "name, so the next name goes to the next variable; a sub-jaxpr's "
                      "outputs are read by its in (...)."),
}


# What a program tests, by its category (cases.PROGRAM_CATEGORIES), for a printer that gets
# it wrong: the params' layout, several outputs, sub-jaxprs, literals.
_PARAMS_LAYOUT = ("An equation's params print in brackets after its primitive, sorted by "
                  "name, each as name=value: a tuple as Python writes it, a dtype by its name "
                  "(int32, not a class), a sub-jaxpr as a jaxpr of its own, laid out in "
                  "place. Compare the params of the failed case's text with print(jaxpr)'s.")
_SUBJAXPRS = ("A cond, while or scan holds its sub-jaxprs in its params: they print in "
              "place, inside the brackets, with names from the same walk as the outer "
              "program (the equation's outputs are named first), never from a fresh table "
              "and never by str().")
_PP_CATEGORY_HINTS = {
    "a literal": ("A literal prints as its value, then a colon and its type (the type "
                  "printed as a binder's is), and it takes no name."),
    "several outputs": ("An equation with several outputs names them all before the =, "
                        "separated by spaces; the program's in (...) lists every output "
                        "with commas, and a trailing comma only for a single one."),
    "an input returned as an output": ("An output may be an input: in (...) prints the name "
                                       "it already has, and no new one."),
    "a reduction": _PARAMS_LAYOUT, "a shape change": _PARAMS_LAYOUT,
    "indexing": _PARAMS_LAYOUT, "a dtype conversion": _PARAMS_LAYOUT,
    "a cond or switch": _SUBJAXPRS, "a loop body": _SUBJAXPRS,
    "a long program": _PP_CASE_HINTS["long_chain"],
}


def _pp_cases(public: bool) -> tuple[Case, ...]:
    from minijit.grading.programs import PRINTABLE

    return tuple(Case(f"program {name}", (name,), hint=_PP_CASE_HINTS.get(name))
                 for name in PRINTABLE if (name in _PP_PUBLIC) == public)


# What a program tests, by its category (cases.PROGRAM_CATEGORIES), for an interpreter that
# gets it wrong.
_SUB_JAXPRS_RUN_YOURS = ("The impl rules of cond, while, scan and a nested jit evaluate their "
                         "sub-jaxprs by calling eval_jaxpr, which is yours while the case "
                         "runs: it gets (jaxpr, consts, *args) like any call, and must "
                         "return a list with one array per outvar even for one output.")
_PARAMS_AS_KEYWORDS = ("An equation's params (axes, a new shape or dtype, slice bounds) "
                       "are what its impl rule needs besides the operands: each goes to the "
                       "rule as a keyword argument, under its own name.")
_EVAL_CASE_HINTS = {
    "a literal": ("A literal is not in the environment: it carries its value and its aval, "
                  "and is read as an array of the aval's dtype (a bare Python float would "
                  "change the dtype of what it meets)."),
    _OTHER_DTYPE_LITERALS: ("In a float32 or int32 program a literal keeps its aval's dtype "
                            "(float32, int32), not NumPy's default 64-bit one, and an "
                            "output may itself be a literal, which is read, not looked up."),
    "a captured constant": ("A captured array is a constvar: it is bound to its value in "
                            "consts before the first equation, as the invars are to args."),
    "several outputs": ("An impl rule returns a list with one value per output of its "
                        "equation: each outvar is bound to its own element, and the result "
                        "has one array per jaxpr outvar."),
    "an input returned as an output": ("An outvar may be an invar: it is read from the "
                                       "environment like any other variable, and returned "
                                       "as an array."),
    "integers": ("Every value keeps its aval's dtype: an int64 program stays int64 from the "
                 "inputs to the outputs, so nothing is converted to float on the way."),
    "a reduction": _PARAMS_AS_KEYWORDS, "a shape change": _PARAMS_AS_KEYWORDS,
    "indexing": _PARAMS_AS_KEYWORDS, "a dtype conversion": _PARAMS_AS_KEYWORDS,
    "a cond or switch": _SUB_JAXPRS_RUN_YOURS, "a loop body": _SUB_JAXPRS_RUN_YOURS,
    "a nested jit": _SUB_JAXPRS_RUN_YOURS,
}


def _eval_hidden() -> tuple[Case, ...]:
    from minijit.grading.programs import PROGRAMS

    return program_hidden(PROGRAMS, _EVAL_PUBLIC, probe=probe_eval_program)


EXERCISES += [
    Exercise(
        id="ex03_eval_jaxpr", points=3, title="minijit's interpreter, eval_jaxpr",
        chapter="03_the_ir", section="5. The interpreter",
        hint=Hint(
            pitfall=("An interpreter keeps an environment from each variable to its value, "
                     "filled in program order: the constvars and invars before the first "
                     "equation, each equation's outputs after it runs. A literal is not in "
                     "it (it carries its value and dtype), an impl rule returns a list even "
                     "for one output, and the result is a list with one array per outvar. "
                     "Compare the dtype and shape of what the failed case got, output by "
                     "output."),
            code=("A dict env and a read(atom): np.asarray(atom.val, dtype=atom.aval.dtype) "
                  "for an mj.Lit, env[atom] for a Var. Fill env from zip(jaxpr.constvars, "
                  "consts) and zip(jaxpr.invars, args); per equation, zip eqn.outvars with "
                  "what impl_rules[eqn.primitive](*inputs, **eqn.params) returns; end with "
                  "read over jaxpr.outvars. Sub-jaxprs need nothing: the impl rules of cond, "
                  "while and scan call eval_jaxpr themselves.")),
        probe=probe_eval_program,
        reference=_reference_eval_jaxpr,
        public=(*program_cases(_EVAL_PUBLIC, probe=probe_eval_program),
                _literal_case("float32 literals keep their dtype, and an output is a literal",
                              _F32_LITERALS, [0.5, -1.25, 3.0], "float32"),
                switch_in_case("ex03_eval_jaxpr")),
        hidden=(*_eval_hidden(),
                _literal_case("int32 literals keep their dtype, and an output is a literal",
                              _I32_LITERALS, [4, -7, 0, 9], "int32")),
        case_hints=_EVAL_CASE_HINTS,
        error_hints={
            "KeyError": Hint(
                pitfall=("A variable was read before anything bound it: the constvars or "
                         "invars were not bound before the first equation, an equation's "
                         "outputs were not written after it, or a literal (an input or an "
                         "outvar may be one) was looked up in the environment instead of "
                         "read by its own value."),
                code=("Bind zip(jaxpr.constvars, consts) and zip(jaxpr.invars, args) first; "
                      "read an mj.Lit as np.asarray(lit.val, dtype=lit.aval.dtype), never "
                      "from env.")),
            "PieceError": Hint(
                pitfall=("minijit ran your eval_jaxpr (through jit, or on the body of a cond, "
                         "while or scan) and it raised or returned a wrong result; the "
                         "message names the equation. An impl rule returns a list: each "
                         "outvar is bound to one element of it, not to the list, and every "
                         "value keeps its aval's dtype.")),
        },
    ),
    Exercise(
        id="ex03_pp_jaxpr", points=3, title="minijit's printer, pp_jaxpr",
        chapter="03_the_ir", section="4. The printer",
        hint=Hint(
            pitfall=("The names come from one walk in a fixed order, shared by the sub-jaxprs: "
                     "constvars, invars, then each equation's outputs before what its params "
                     "hold; an output that nothing reads prints as _ and takes no name. "
                     "Print your text under print(jaxpr)'s for a small program and find the "
                     "first difference: a name, a type, a literal, or the params."),
            code=("A dict id(var) -> name, handed out a, ..., z, ba, bb, ... on first sight "
                  "(base 26 on the letters); binders as name:aval.str_short(); a literal as "
                  "repr of np.asarray(val, dtype).item() then :type; params sorted by name in "
                  "[k=v ...] (a dtype by its name, a Jaxpr printed in place by your own "
                  "function, a tuple of jaxprs in ( ... )); then in (a,) for one output.")),
        probe=probe_print_program,
        reference=_reference_pp_jaxpr,
        public=(*_pp_cases(public=True),
                Case("program long_chain: names after z go on ba, bb, ...", ("long_chain",),
                     hint=_PP_CASE_HINTS["long_chain"]),
                switch_in_case("ex03_pp_jaxpr")),
        hidden=_pp_cases(public=False),
        case_hints=_PP_CATEGORY_HINTS,
        error_hints={
            "RecursionError": _NO_STR_INSIDE,
            "PieceError": Hint(
                pitfall=("minijit called your pp_jaxpr (for print, or to check it) and refused "
                         "what it returned or raised; the message says which. A printer "
                         "returns the program's text, a str, the same every time, and never "
                         "calls str() on a jaxpr: after build.use, that calls your printer "
                         "again.")),
        },
    ),
]
