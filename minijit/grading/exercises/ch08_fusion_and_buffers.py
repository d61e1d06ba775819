"""Chapter 08 (fusion and buffers): the rule that says what may fuse, and the piece of
minijit that groups equations into kernels, graded inside minijit's own pipeline.

- ``ex08_may_fuse`` (build): ``may_fuse(eqn)``, rule 1 of ``fuse_elementwise``, minijit's
  piece ``may_fuse``. Compared with minijit's answer on every equation of hidden programs
  (sub-Jaxprs included), then switched in while ``fuse_elementwise`` runs (minijit's own
  ``fusion_groups`` asks it; the piece's check refuses a True where rule 1 says False): the
  kernels it builds and the values must match.
- ``ex08_fusion_groups`` (build): ``fusion_groups(jaxpr) -> list of lists of indices``, the
  piece that decides ``fuse_elementwise``'s kernels (rules 2-5, with minijit's ``may_fuse``).
  The piece's check (a ``PieceError``) refuses a group that may not fuse or makes a cycle;
  graded on the catalogue's programs that minijit fuses and on ``ex08_may_fuse``'s programs:
  values, printed text and the kernels built (kind and members) must be minijit's.

As in chapter 07, no probe runs the default pipeline or ``mj.jit``, and every probe runs
minijit's own ``dce`` and ``fusion_groups`` but for the one piece it grades
(``chapter_pieces``), whatever the notebook switched in.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from minijit.grading.build_pieces import switch_in_case
from minijit.grading.cases import (
    Case,
    Exercise,
    Hint,
    program_cases,
    program_hidden,
    source_case,
)
from minijit.grading.probing import get, printed

_PIECE_HINT = ("minijit ran your piece inside run_passes and found its result wrong; the "
               "message says what (an equation dropped, a group that may not fuse, ...).")


_F3 = ([0.5, -1.25, 2.0], "float64")


# ------------------------------------------------------------------------ ex08_may_fuse


def probe_may_fuse(ns, source, args):
    import minijit as mj
    import minijit.numpy as mnp
    from minijit import lax
    from minijit.grading.optimizer_probes import chapter_pieces, kernels, learners_errors
    from minijit.ir import pp_eqn_alone, subjaxprs
    from minijit.passes import fuse_elementwise, run_passes

    predicate = get(ns, "may_fuse")

    def decide(eqn):
        answer = predicate(eqn)
        if type(answer) not in (bool, np.bool_):
            raise TypeError(f"may_fuse must return True or False, got {answer!r}")
        return bool(answer)

    scope = {"np": np, "mj": mj, "mnp": mnp, "lax": lax}
    exec(source, scope)  # a program from the case list (trusted text, not the learner's)
    arrays = [np.asarray(value, dtype=dtype) for value, dtype in args]
    closed = mj.make_jaxpr(scope["f"])(*arrays)
    decisions = []

    def walk(jaxpr):
        for e in jaxpr.eqns:
            label = pp_eqn_alone(e).split("\n")[0].rstrip("[")
            decisions.append([label, decide(e)])
            for sub in subjaxprs(e):
                walk(sub)

    walk(closed.jaxpr)
    # the pass, asking the piece may_fuse (yours) through minijit's own fusion_groups
    with chapter_pieces(may_fuse=predicate), learners_errors():
        fused = run_passes(closed, [fuse_elementwise])
    with np.errstate(all="ignore"):
        values, text = printed(mj.eval_jaxpr, fused.jaxpr, fused.consts, *arrays)
    return {"decisions": decisions, "kernels": kernels(fused.jaxpr),
            "values": [np.asarray(v) for v in values], "printed": text}


def probe_may_fuse_effectful(ns, shape):
    """An elementwise primitive with an effect (made up for the test) must not fuse."""
    from minijit import build
    from minijit.core import ELEMENTWISE, Primitive, ShapedArray
    from minijit.grading.optimizer_probes import chapter_pieces, learners_errors
    from minijit.ir import Eqn, Var

    prim = Primitive("noisy_neg", effectful=True)
    aval = ShapedArray(tuple(shape), np.dtype("float64"))
    eqn = Eqn(prim, (Var(aval),), (Var(aval),), {})
    ELEMENTWISE.add(prim)
    try:
        with chapter_pieces(may_fuse=get(ns, "may_fuse")), learners_errors():
            answer = build.call("may_fuse", eqn)  # as fusion asks it
    finally:
        ELEMENTWISE.discard(prim)
    if type(answer) not in (bool, np.bool_):
        raise TypeError(f"may_fuse must return True or False, got {answer!r}")
    return bool(answer)


def _reference_may_fuse(eqn):
    from minijit import primitives as P
    from minijit.core import ELEMENTWISE
    from minijit.passes.rewrite import has_effects

    if not eqn.outvars or eqn.outvars[0].aval.shape == ():
        return False
    if eqn.primitive not in ELEMENTWISE and eqn.primitive is not P.broadcast_in_dim_p:
        return False
    return not has_effects(eqn)


_SCALAR_HINT = Hint(
    pitfall=("Scalar work (rank 0) never fuses, but an array of one element (shape (1,)) is "
             "not a scalar: the test is the output's rank, not its size."),
    code="Return False when eqn.outvars[0].aval.shape == ().")
_NO_OUTPUTS_HINT = Hint(
    pitfall=("Some equations have no outputs at all (debug.print's debug_callback), and an "
             "equation with effects never fuses: ask whether there is an output before looking "
             "at its shape."),
    code=("Return False when not eqn.outvars, before reading eqn.outvars[0]; and False when "
          "has_effects(eqn)."))

_FUSE_PUBLIC = (
    source_case("GELU (a scalar sqrt, an elementwise chain)",
             "def f(x):\n    c = mnp.sqrt(2.0 / mnp.pi)\n"
             "    return 0.5 * x * (1.0 + mnp.tanh(c * (x + 0.044715 * x ** 3)))",
             ([[0.5, -1.0, 2.0], [1.5, 0.0, -2.5]], "float64")),
    source_case("softmax (reductions, broadcasts)",
             "def f(x):\n    z = x - mnp.max(x, axis=-1, keepdims=True)\n"
             "    return mnp.exp(z) / mnp.sum(mnp.exp(z), axis=-1, keepdims=True)",
             ([[0.5, -1.0, 2.0], [1.5, 0.0, -2.5]], "float64"),
             hint=("Two kinds of equation here are not plain arithmetic: the reductions, "
                   "which are not elementwise (they join a kernel by rule 3, which the pass "
                   "decides itself), and the broadcast_in_dims, which may fuse (they change "
                   "how elements are indexed, not their values). Find the first decision "
                   "that differs.")),
    source_case("a debug.print among elementwise work",
             "def f(x):\n    y = mnp.sin(x) * 2.0\n    mj.debug.print('y = {}', y)\n"
             "    return y + 1.0", _F3, hint=_NO_OUTPUTS_HINT),
)

# Rule 1 asks for no effects: a primitive in ELEMENTWISE may still have one (none of
# minijit's does, so the case makes one up).
_FUSE_EFFECTFUL = Case(
    "an effectful elementwise primitive (made up for the test)", ([4],),
    probe=probe_may_fuse_effectful,
    hint=Hint(
        pitfall=("Rule 1 asks for elementwise equations *without effects*: being in "
                 "ELEMENTWISE is not enough."),
        code="Check has_effects(eqn) too, even for a primitive in ELEMENTWISE."))

_FUSE_HIDDEN = (
    source_case("an MLP layer: dot_general, a broadcast bias, ReLU, a sum",
             "def f(x, w, b):\n    return mnp.sum(mnp.maximum(mnp.dot(x, w) + b, 0.0), axis=1)",
             ([[1.0, -2.0], [0.5, 3.0], [2.0, 1.0]], "float64"),
             ([[0.5, -1.0, 2.0], [1.0, 0.25, -0.5]], "float64"), ([0.1, -0.2, 0.3], "float64")),
    source_case("scalar arithmetic only", "def f(x, y):\n    return (x * 2.0 + y) / (y - 1.0)",
             (1.5, "float64"), (3.0, "float64"), hint=_SCALAR_HINT),
    source_case("arrays of one element are not scalars",
             "def f(x):\n    return mnp.exp(x) * 2.0 - x", ([0.5], "float64"), hint=_SCALAR_HINT),
    source_case("convert_element_type, comparisons and where",
             "def f(x):\n    y = x.astype(mnp.float32) * 2.0\n"
             "    return mnp.where(y > 0, y, 0.1 * y)", _F3),
    source_case("shape changes: slice, reshape, transpose, concatenate",
             "def f(x):\n    y = (x * 2.0)[1:3].reshape(2, 1).T\n"
             "    return mnp.concatenate([y[0], mnp.arange(2.0)]) + 1.0",
             ([1.0, 2.0, 3.0, 4.0], "float64")),
    source_case("inside a fori_loop body, with a scalar counter",
             "def f(x):\n    return lax.fori_loop(0, 3, lambda i, y: mnp.sin(y) * 0.5 + "
             "i * 0.1, x)", _F3, hint=_SCALAR_HINT),
    source_case("a cond whose branch prints",
             "def f(p, x):\n    def loud(x):\n        mj.debug.print('x = {}', x)\n"
             "        return mnp.exp(x) * 2.0\n"
             "    return lax.cond(p, loud, lambda x: x + 1.0, x) * 3.0",
             (True, "bool"), _F3, hint=_NO_OUTPUTS_HINT),
    source_case("integer and boolean arrays", "def f(i, j):\n    k = (i & j) | (i * 2)\n"
             "    return mnp.where(k > j, k, -k), mnp.argmax(k)",
             ([1, 6, 3], "int64"), ([5, 2, 7], "int64")),
)


def probe_fusion_groups(ns, source, args):
    import minijit as mj
    from minijit.grading.optimizer_probes import kernels, optimized_with, traced

    closed, leaves = traced(source, args)
    out = optimized_with("fusion_groups", get(ns, "fusion_groups"), closed)
    with np.errstate(all="ignore"):
        values, text = printed(mj.eval_jaxpr, out.jaxpr, out.consts, *leaves)
    return {"values": [np.asarray(v) for v in values], "printed": text,
            "kernels": kernels(out.jaxpr)}


def _reference_fusion_groups():
    from minijit.passes.fuse_elementwise import fusion_groups

    return {"fusion_groups": fusion_groups}


# The catalogue programs in which minijit's pipeline builds a kernel (tests/test_build_optimizer.py
# checks the list): in the others, a piece that fuses nothing would agree too.
FUSING = ("sin_cos", "scale_shift", "two_outputs", "int_arith", "exp_log", "where", "softmax",
          "long_chain", "fori_loop", "nested_jit")
_FG_PUBLIC_NAMES = ("sin_cos", "softmax", "long_chain", "where")
# ex08_may_fuse's programs, with hints of this exercise (theirs are about rule 1, given here).
_FG_HINTS = {
    "softmax (reductions, broadcasts)": Hint(
        pitfall=("A reduction joins the group that produced its input as the group's last "
                 "member (rule 3), if that group is open and has the input's shape; nothing "
                 "joins after it, and a reduction that joins no group stays alone."),
        code=("For eqn.primitive in FUSIBLE_REDUCTIONS (and not has_effects(eqn)), look up "
              "the group owning eqn.invars[0]; join it and mark it closed.")),
    "a debug.print among elementwise work": Hint(
        pitfall=("An equation that fuses with nothing (a debug.print) still reads values: "
                 "every group it reads from closes (rule 4), so later elementwise work starts "
                 "a new group.")),
}
_FG_PUBLIC = program_cases(_FG_PUBLIC_NAMES) + tuple(
    replace(c, hint=_FG_HINTS.get(c.name)) for c in _FUSE_PUBLIC)
_FG_HIDDEN = (program_hidden(FUSING, _FG_PUBLIC_NAMES)
              + tuple(replace(c, hint=None) for c in _FUSE_HIDDEN if c.probe is None))
# A value of the group broadcast to a larger shape: the broadcast_in_dim is fusible, but its
# output shape is not the group's, so it starts a group of its own (rule 2 asks for both).
_FG_SHAPES = source_case(
    "a group's value broadcast to a larger shape starts a new group",
    "def f(x, y):\n    a = mnp.sin(x) * 2.0\n    return mnp.exp(a[:, None] * y) + 1.0",
    ([0.5, -1.25, 2.0], "float64"), ([[1.0, 2.0], [0.5, -1.0], [3.0, 0.25]], "float64"),
    hint=("Rule 2 asks for both: an input the group produced, and the group's iteration "
          "shape. A broadcast_in_dim fed by a group has a larger output shape than the "
          "group's, so it starts a group of its own."))

_FG_CYCLE_HINT = ("A group closes as soon as an equation outside it reads one of its values "
                  "(rule 4): afterwards nothing joins it, or the kernel would need a value "
                  "computed after it, a cycle. Close every group that feeds an equation, "
                  "except the one the equation joins.")
EXERCISES = [
    Exercise(
        id="ex08_may_fuse", points=2, title="Which equations may fuse",
        chapter="08_fusion_and_buffers",
        section="1. `fuse_elementwise`: one kernel instead of many arrays",
        hint=Hint(
            pitfall=("Rule 1 judges one equation on its own: it may fuse when its primitive is "
                     "elementwise or a broadcast_in_dim, it has no effects, and its output is "
                     "an array (rank above 0). Everything else says False: reductions, matrix "
                     "products, shape changes, control flow, debug.print, scalar work. Find "
                     "the first decision that differs in the failed case."),
            code=("Return False when eqn.outvars is empty or eqn.outvars[0].aval.shape == (); "
                  "False when eqn.primitive is neither in ELEMENTWISE nor "
                  "P.broadcast_in_dim_p; else not has_effects(eqn).")),
        probe=probe_may_fuse, reference=lambda: {"may_fuse": _reference_may_fuse},
        public=(*_FUSE_PUBLIC, _FUSE_EFFECTFUL, switch_in_case("ex08_may_fuse")),
        hidden=_FUSE_HIDDEN,
        error_hints={
            "PieceError": Hint(_PIECE_HINT + " An elementwise kernel can only compute "
                               "per-element work without effects, on arrays: a True for "
                               "anything else is refused before a kernel is built."),
            "IndexError": _NO_OUTPUTS_HINT,
            "TypeError": ("may_fuse must answer True or False on every path, nothing else: a "
                          "path that ends without a return gives None, and an expression with "
                          "and/or gives one of its operands (an empty tuple, an equation), not "
                          "a bool."),
        },
    ),
    Exercise(
        id="ex08_fusion_groups", points=3, title="minijit's fusion grouping, fusion_groups",
        chapter="08_fusion_and_buffers",
        section="1. `fuse_elementwise`: one kernel instead of many arrays",
        hint=Hint(
            pitfall=("Follow rules 2-5 in order, one equation at a time: join a group that "
                     "produced one of its inputs, is still open and has its shape; a "
                     "reduction only ends a group; a group that feeds any other equation "
                     "closes. Compare the kernels of the failed case (kind and members) with "
                     "the expected ones."),
            code=("Keep a list of groups (members, shape, open, reduction) and a dict "
                  "owner from id(var) to the group producing it. For eqn i: feeding = the "
                  "groups owning its Var inputs; if fusible(eqn), join the first open, "
                  "non-reduction feeding group of its output shape (merging the other such "
                  "groups into it) or start one; elif eqn.primitive in FUSIBLE_REDUCTIONS and "
                  "not has_effects(eqn), join the group owning invars[0] if it is open, of "
                  "invars[0]'s shape, and close it. Then close every other feeding group. "
                  "Return the members of each group, sorted.")),
        probe=probe_fusion_groups, reference=_reference_fusion_groups,
        public=(*_FG_PUBLIC, _FG_SHAPES, switch_in_case("ex08_fusion_groups")),
        hidden=_FG_HIDDEN,
        error_hints={"PieceError": Hint(_PIECE_HINT + " " + _FG_CYCLE_HINT)},
    ),
]
