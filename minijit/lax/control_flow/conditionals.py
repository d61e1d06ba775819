"""`cond` and `switch`: run one of several staged branches (chapter 05).

Named after JAX's `jax/_src/lax/control_flow/conditionals.py`. Both bind one primitive,
`cond`, whose first operand is an int32 branch index and whose `branches` param holds one
closed sub-jaxpr per branch (`common.py`). Invariants: every branch takes the same operands
and returns the same types (weak types joined); the index is clamped into range, as in JAX.
Under `disable_jit`, as in JAX, a concrete predicate or index calls its branch alone, on the
operands themselves: nothing is traced, so the branches need not agree.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from minijit import dtypes
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
from minijit.tree_util import (
    tree_flatten,
    tree_flatten_with_names,
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
    return _cond(index, list(branches), operands, "switch")


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
    return _cond(index, [false_fun, true_fun], operands, "cond",
                 names=["false_fun", "true_fun"], trace_order=(1, 0))


def _cond(index, funs: list[Callable], operands, what: str, names=None, trace_order=None):
    """Trace every branch (in `trace_order`, by default the branches' own), check that they
    give the same types, join their consts in that order, and bind `cond_p`."""
    names = names or [f"branches[{i}]" for i in range(len(funs))]
    order = tuple(trace_order or range(len(funs)))
    leaves, in_tree = tree_flatten(operands)
    in_avals = _avals(leaves)
    arg_names = [f"operand{p}" for p, _ in tree_flatten_with_names(operands)[0]]
    traced = {k: _trace(funs[k], in_tree, in_avals, arg_names,
                        getattr(funs[k], "__name__", names[k])) for k in order}
    first_jaxpr, _, first_tree = traced[order[0]]
    for k in order[1:]:
        jaxpr, _, tree = traced[k]
        _check_same_types(f"lax.{what}", names[order[0]], first_tree, first_jaxpr.out_avals,
                          names[k], tree, jaxpr.out_avals, _leaf_paths(first_tree))
    all_consts = _join_consts(*[traced[k][1] for k in order])
    branches = tuple(closure_convert(traced[k][0], traced[k][1], all_consts)
                     for k in range(len(funs)))
    outs = bind(cond_p, index, *all_consts, *leaves, branches=branches)
    return tree_unflatten(first_tree, outs)


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
