"""`cond` and `switch`: run one of several staged branches (chapter 05).

Named after JAX's `jax/_src/lax/control_flow/conditionals.py`. Both bind one primitive,
`cond`, whose first operand is an int32 branch index and whose `branches` param holds one
closed sub-jaxpr per branch (`common.py`). Staging it is `stage_cond`, the build track's
second chapter 05 piece (`minijit.build`): trace every branch (`trace_branch`), check that
they return the same structure and types, join what they captured, closure-convert each
branch, bind `cond`. Invariants: every branch takes the same operands and returns the same
types (weak types joined); the index is clamped into range, as in JAX.
Under `disable_jit`, as in JAX, a concrete predicate or index calls its branch alone, on the
operands themselves: nothing is traced, so the branches need not agree.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from minijit import build, dtypes
from minijit.config import config
from minijit.core import (
    Primitive,
    ShapedArray,
    abstract_eval_rules,
    bind,
    get_aval,
    impl_rules,
)
from minijit.errors import ConcretizationTypeError, api_boundaries
from minijit.interpret import eval_jaxpr
from minijit.ir import Jaxpr, reference_pp_jaxpr
from minijit.lax import ops as lax
from minijit.lax.control_flow.common import (
    _avals,
    _check_same_types,
    _join_consts,
    _leaf_paths,
    _strong,
    _trace,
    closure_convert,
)
from minijit.tracing import trace_to_jaxpr
from minijit.tree_util import (
    PyTreeDef,
    tree_flatten,
    tree_flatten_with_names,
    tree_leaves,
    tree_unflatten,
)

cond_p = Primitive("cond", multiple_results=True)


def switch(index, branches: Sequence[Callable], *operands):
    """Run `branches[index](*operands)`; `index` is clamped into range, as in JAX."""
    if not branches:
        raise ValueError("switch needs at least one branch")
    if isinstance(index, np.integer):
        index = int(index)
    aval = get_aval(index)
    if not (dtypes.is_int(aval.dtype) or aval.dtype == dtypes.bool_):
        raise TypeError(f"switch index must be an integer scalar, got {aval}")
    if aval.shape != ():
        raise TypeError(f"switch index must be a scalar, got {aval}")
    if config.disable_jit:
        try:  # as JAX does: call the branch the concrete index picks, and only that one
            return branches[min(max(int(index), 0), len(branches) - 1)](*operands)
        except ConcretizationTypeError:
            pass  # the index is traced (make_jaxpr under disable_jit): stage both
    if isinstance(index, int):  # a static index picks its branch now, clamped the same way
        index = np.int32(min(max(index, 0), len(branches) - 1))
    else:
        index = lax.clamp(np.int32(0), _as_int32(index), np.int32(len(branches) - 1))
    return stage_cond(index, list(branches), operands, tuple(range(len(branches))))


def _as_int32(x):
    """`x` as a strong int32 scalar (the branch index `cond` binds)."""
    aval = get_aval(x)
    if aval.dtype == np.int32 and not aval.weak_type:
        return x
    return lax.convert_element_type(x, np.int32)


def cond(pred, true_fun: Callable, false_fun: Callable, *operands):
    """`true_fun(*operands)` if `pred` else `false_fun(*operands)`; only one of them runs.

    Both are traced (so both must type-check), but the compiled program evaluates one.
    """
    aval = get_aval(pred if not isinstance(pred, (list, tuple)) else np.asarray(pred))
    if aval.shape != ():
        raise TypeError(f"cond predicate must be a scalar, got {aval.str_short()}; to choose "
                        "elementwise use mnp.where(pred, x, y)")
    if config.disable_jit:
        try:  # as JAX does: call the branch the concrete predicate picks, and only that one
            return (true_fun if bool(pred) else false_fun)(*operands)
        except ConcretizationTypeError:
            pass  # the predicate is traced (make_jaxpr under disable_jit): stage both
    if isinstance(pred, (bool, int, float, np.generic)):
        index = np.int32(bool(pred))  # a concrete predicate: the index is a literal
    else:
        if aval.dtype != dtypes.bool_:
            pred = lax.ne(pred, np.zeros((), aval.dtype)[()])
        index = lax.convert_element_type(pred, np.int32)
    # branch 0 runs when pred is False; JAX traces true_fun first, and joins its consts first
    return stage_cond(index, [false_fun, true_fun], operands, (1, 0))


def trace_branch(fun: Callable, operands: tuple) -> tuple[Jaxpr, list, PyTreeDef]:
    """Trace `fun(*operands)` into a jaxpr of its own: `(jaxpr, consts, out_tree)`. What
    `fun` reads from outside becomes a constvar of `jaxpr`, bound to the value (an array, or a
    tracer of the trace around) at the same place in `consts`; `out_tree` is the structure
    of what `fun` returned, whose leaves are `jaxpr`'s outputs."""
    leaves, in_tree = tree_flatten(operands)
    names = [f"operand{p}" for p, _ in tree_flatten_with_names(operands)[0]]
    return _trace(fun, in_tree, _avals(leaves), names, getattr(fun, "__name__", "branch"))


def stage_cond(index, branches: Sequence[Callable], operands: tuple, order: tuple[int, ...]):
    """Stage `branches[index](*operands)` as one `cond` equation and return its outputs, in
    the tree the branches return; `index` is an int32 scalar, already clamped.

    `order` is the order to trace the branches in, and to join what they captured in: for
    `cond`, whose `branches` are `(false_fun, true_fun)`, it is `(1, 0)`, since JAX traces
    `true_fun` first; for `switch` the branches' own. Every staging of `cond` and `switch`
    comes through here, which runs the build track's piece: `reference_stage_cond` below,
    or yours after `build.use("stage_cond", ...)`."""
    return build.call("stage_cond", index, branches, operands, order)


def reference_stage_cond(index, branches: Sequence[Callable], operands: tuple,
                         order: tuple[int, ...]):
    """minijit's own `stage_cond`."""
    build.guard("stage_cond")  # fails when a learner's piece hands its work to this one
    what, names = (("cond", ["false_fun", "true_fun"]) if tuple(order) == (1, 0) else
                   ("switch", [f"branches[{i}]" for i in range(len(branches))]))
    traced = {k: trace_branch(branches[k], operands) for k in order}
    first_jaxpr, _, first_tree = traced[order[0]]
    for k in order[1:]:  # a TypeError, as in JAX, naming the leaf that differs
        jaxpr, _, tree = traced[k]
        _check_same_types(f"lax.{what}", names[order[0]], first_tree, first_jaxpr.out_avals,
                          names[k], tree, jaxpr.out_avals, _leaf_paths(first_tree))
    all_consts = _join_consts(*[traced[k][1] for k in order])
    closed = tuple(closure_convert(traced[k][0], traced[k][1], all_consts)
                   for k in range(len(branches)))
    outs = bind(cond_p, index, *all_consts, *tree_leaves(operands), branches=closed)
    return tree_unflatten(first_tree, outs)


def _selftest_stage_cond(stage) -> str | None:
    """Run a candidate where `cond` would: in a loop body, on a dict operand, with branches
    that capture `x` and `y` from two traces out and return a tuple (the program's text and
    the order the branches were traced in must be minijit's); eagerly; and on branches whose
    results differ only in weak type (which agree) or in structure (which must raise)."""
    f64 = ShapedArray((2,), np.dtype(np.float64))

    def program(stage, log):
        texts = []

        def outer(x, y):
            def body(v):
                def true_fun(o):
                    log.append("true_fun")
                    return o["v"] * y, o["w"]

                def false_fun(o):
                    log.append("false_fun")
                    return o["v"] - y * x, 1.0

                index = lax.convert_element_type(v[0] < x[0], np.int32)
                return (stage(index, [false_fun, true_fun], ({"v": v, "w": x[1]},),
                              (1, 0))[0],)

            texts.append(reference_pp_jaxpr(trace_to_jaxpr(body, [f64], ["v"])[0]))
            return (x,)

        trace_to_jaxpr(outer, [f64, f64], ["x", "y"])
        return texts[0], log

    x = np.array([1.0, 2.0])
    got, want = program(stage, []), program(reference_stage_cond, [])
    if got != want:
        return (f"staged, inside a loop body, the program\n{got[0]}\nwith the branches "
                f"traced in the order {got[1]}, where minijit stages\n{want[0]}\nin the "
                f"order {want[1]}")
    eager = [stage(np.int32(k), [lambda o: o * 2.0, lambda o: o + 1.0], (x,), (1, 0))
             for k in (0, 1)]
    if not all(np.array_equal(e, w) for e, w in zip(eager, [x * 2.0, x + 1.0])):
        return f"gave {eager} eagerly for index 0 and 1, where minijit gives {[x * 2, x + 1]}"
    scalar = np.float64(3.0)
    stage(np.int32(0), [lambda o: 1.0, lambda o: o], (scalar,), (1, 0))  # weak 1.0 agrees
    try:
        stage(np.int32(0), [lambda o: (o, o), lambda o: [o, o]], (x,), (1, 0))
    except Exception:  # noqa: BLE001 - any error is right here; minijit's own says which
        return None
    return ("staged branches that return (x, x) and [x, x] without an error: JAX raises a "
            "TypeError when the branches' results differ in structure (compare the out trees)")


build.register("stage_cond", reference_stage_cond, chapter="05_control_flow",
               signature="stage_cond(index, branches, operands, order) -> the outputs",
               selftest=_selftest_stage_cond)


def _cond_abstract_eval(index, *args, branches):
    if index.shape != () or not dtypes.is_int(index.dtype):
        raise TypeError(f"cond: index must be an integer scalar, got {index.str_short()}")
    for b in branches:
        if [a.strip_weak_type() for a in b.in_avals] != [a.strip_weak_type() for a in args]:
            raise TypeError("cond: branch inputs do not match the operands")
        if _strong(b.out_avals) != _strong(branches[0].out_avals):
            raise TypeError("cond: branches give different output types")
    outs = [b.out_avals for b in branches]
    return [ShapedArray(a.shape, a.dtype, all(o[i].weak_type for o in outs))
            for i, a in enumerate(outs[0])]


def _cond_impl(index, *args, branches):
    i = int(np.clip(index, 0, len(branches) - 1))
    return eval_jaxpr(branches[i], (), *args)


abstract_eval_rules[cond_p] = _cond_abstract_eval
impl_rules[cond_p] = _cond_impl


# Keep last: every public function becomes an API boundary (errors.api_boundary).
api_boundaries(globals())
