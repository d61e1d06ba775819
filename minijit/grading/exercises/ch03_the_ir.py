"""Chapter 03 (the IR): a shape rule of your own, and an int/float dtype bug.

- ``ex03_broadcast_rule`` (build): ``broadcast_binary_rule(x, y)``, the abstract-evaluation
  rule of a *broadcasting* binary primitive (minijit's own binary primitives are strict and
  leave broadcasting to ``minijit.numpy``). Graded on hidden shapes, directly and through
  minijit: one probe registers the learner's rule for a fresh ``Primitive`` and reads the
  output type from ``mj.make_jaxpr``.
- ``ex03_dtype`` (int/float mixing): two functions whose integer accumulator silently
  truncates or fails to match the loop's float values; fixed with an explicit dtype.
"""

from __future__ import annotations

import numpy as np

from minijit.grading.cases import Case, Exercise, raises
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


def _shapes(label: str, x: tuple, y: tuple, dtype: str = "float64") -> Case:
    return Case(f"{label}: {x} with {y}", (list(x), list(y), dtype, dtype))


def _clash(x: tuple, y: tuple) -> Case:
    return Case(f"incompatible: {x} with {y} raises TypeError",
                (list(x), list(y), "float64", "float64"), expected=raises("TypeError"))


# ------------------------------------------------------------------------ ex03_dtype


def probe_fractions(ns, counts):
    import minijit as mj

    return np.asarray(mj.jit(get(ns, "fractions"))(np.asarray(counts, dtype=np.int64)))


def probe_half_sum(ns, values):
    import minijit as mj

    return np.asarray(mj.jit(get(ns, "half_sum"))(np.asarray(values, dtype=np.int64)))


def _reference_dtype():
    import minijit.numpy as mnp
    from minijit import lax

    def fractions(counts):
        out = mnp.zeros(counts.shape, dtype=mnp.float64)
        total = mnp.sum(counts)
        for i in range(counts.shape[0]):
            out = out.at[i].set(counts[i] / total)
        return out

    def half_sum(values):
        return lax.fori_loop(0, values.shape[0], lambda i, acc: acc + values[i] * 0.5,
                             mnp.zeros((), dtype=mnp.float64))

    return {"fractions": fractions, "half_sum": half_sum}


EXERCISES = [
    Exercise(
        id="ex03_broadcast_rule", points=2, title="The shape rule of a broadcasting add",
        chapter="03_the_ir", section="6. Shapes and dtypes without data",
        hint=("Line the shapes up from the right, padding the shorter one with 1s; each pair "
              "of sizes must be equal or contain a 1, and the result takes the larger. Raise "
              "TypeError for unequal dtypes or sizes that clash; return a list with one "
              "ShapedArray."),
        probe=probe_broadcast_rule,
        reference=lambda: {"broadcast_binary_rule": _reference_broadcast_rule},
        public=(
            _shapes("equal", (2, 3), (2, 3)),
            _shapes("scalar", (), (4,)),
            _shapes("column and row", (3, 1), (1, 4)),
            Case("inside make_jaxpr: (2, 1) with (3,)", ((2, 1), (3,)),
                 probe=probe_broadcast_rule_in_jaxpr),
            _clash((2,), (3,)),
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
    ),
    Exercise(
        id="ex03_dtype", points=2, title="Fix an int/float dtype bug",
        chapter="03_the_ir", section="8. Mixing dtypes",
        hint=("An array created without thinking about its dtype inherits one: zeros_like of "
              "an int array is int, and storing 0.25 into it silently truncates to 0. Give "
              "the accumulator an explicit float dtype (dtype=mnp.float64)."),
        probe=probe_fractions,
        reference=_reference_dtype,
        public=(
            Case("fractions of [1, 1, 2]", ([1, 1, 2],)),
            Case("half_sum of [1, 2, 3]", ([1, 2, 3],), probe=probe_half_sum),
        ),
        hidden=(
            Case("fractions of [5]", ([5],)),
            Case("fractions of [3, 0, 1, 4]", ([3, 0, 1, 4],)),
            Case("half_sum of [7]", ([7],), probe=probe_half_sum),
            Case("half_sum of [1, -3, 10, 4]", ([1, -3, 10, 4],), probe=probe_half_sum),
        ),
        error_hints={
            "TypeError": ("A loop carry keeps one dtype: an int initial value cannot hold "
                          "the float the body returns. Start it with an explicit float dtype, "
                          "e.g. mnp.zeros((), dtype=mnp.float64)."),
        },
    ),
]
