"""Structured control flow: `cond`, `switch`, `while_loop`, `fori_loop`, `scan` (chapter 05).

Python's `if` and `for` run while tracing, so they can only look at static things (shapes,
static arguments). To branch or loop on a *traced* value, the branch or loop body itself must
be staged: each function here traces its Python callables once into sub-Jaxprs and binds a
primitive whose params hold them. One IR, not two: the printer, `eval_jaxpr`, the optimizer
and code generation all see the sub-Jaxprs as params.

Invariants of every primitive here:
- a sub-Jaxpr has no constvars: values it captures from outside become leading operands
  (closure conversion, `closure_convert`: a build-track piece, `minijit.build`), so each
  primitive lists `*consts` before its real operands;
- branch outputs, and loop carries before and after one iteration, have identical types
  (shape and dtype; weak types are joined), checked with a message that names the leaf.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from minijit import build, dtypes
from minijit import primitives as P
from minijit.core import (
    Primitive,
    ShapedArray,
    Tracer,
    abstract_eval_rules,
    bind,
    get_aval,
    impl_rules,
)
from minijit.errors import api_boundaries
from minijit.interpret import eval_jaxpr
from minijit.ir import Eqn, Jaxpr, Lit, Var
from minijit.lax import ops as lax
from minijit.tracing import trace_to_jaxpr
from minijit.tree_util import (
    PyTreeDef,
    keystr,
    tree_flatten,
    tree_flatten_with_names,
    tree_unflatten,
    treedef_paths,
)

cond_p = Primitive("cond", multiple_results=True)
while_p = Primitive("while", multiple_results=True)
scan_p = Primitive("scan", multiple_results=True)
CONTROL_FLOW = {cond_p, while_p, scan_p}


# --------------------------------------------------------------------------- tracing helpers


def _avals(leaves) -> list[ShapedArray]:
    return [get_aval(x) for x in leaves]


def _trace(fun: Callable, in_tree: PyTreeDef, in_avals, names, fun_name: str):
    """Trace `fun(*pytree args)`; returns (jaxpr, consts, out_tree) with consts captured."""

    def flat_fun(*leaves):
        return fun(*tree_unflatten(in_tree, leaves))

    return trace_to_jaxpr(flat_fun, in_avals, names, fun_name)


def capture_key(c) -> int:
    """Which outer value a captured value stands for. Two sub-traces that capture one outer
    variable get two tracers for it (each wraps the same Var, `c.atom`), so compare keys,
    not the tracers themselves; a captured array is its own key."""
    return id(getattr(c, "atom", c))


def closure_convert(jaxpr: Jaxpr, consts: Sequence, all_consts: Sequence) -> Jaxpr:
    """The traced body `jaxpr` (constvars bound to `consts`, the outer values it captured)
    as a closed sub-jaxpr that takes the captured values as leading operands.

    Every call site of control flow comes through here, which runs the build track's piece:
    `reference_closure_convert` below, or yours after `build.use("closure_convert", ...)`.
    Invariants of the result (checked on a piece of yours, `_check_closed`): no constvars;
    one leading invar per entry of `all_consts`, in that order and of its type, then the
    body's own invars; the leading invar k stands for `all_consts[k]` wherever the body used
    a constvar for that outer value (`capture_key`), so one outer value captured by two
    branches is one operand; an entry this body never read gets a fresh Var."""
    return build.call("closure_convert", jaxpr, consts, all_consts)


def reference_closure_convert(jaxpr: Jaxpr, consts: Sequence, all_consts: Sequence) -> Jaxpr:
    """minijit's own `closure_convert`: reuse the constvars as leading invars."""
    mine = {capture_key(c): v for c, v in zip(consts, jaxpr.constvars)}
    lead = tuple(mine.get(capture_key(c)) or Var(get_aval(c)) for c in all_consts)
    return Jaxpr((), lead + jaxpr.invars, jaxpr.eqns, jaxpr.outvars)


def _check_closed(got, jaxpr: Jaxpr, consts: Sequence, all_consts: Sequence) -> str | None:
    """What is wrong with `got` as `closure_convert(jaxpr, consts, all_consts)`, if anything:
    it must be minijit's result up to the names of its Vars (`_same_program`)."""
    if not isinstance(got, Jaxpr):
        return f"returned a {type(got).__name__}; it must return a Jaxpr"
    if got.constvars:
        return (f"returned a jaxpr with {len(got.constvars)} constvars; a closed sub-jaxpr has "
                "none: each captured value becomes a leading invar")
    n, m = len(all_consts), len(jaxpr.invars)
    if len(got.invars) != n + m:
        return (f"returned a jaxpr with {len(got.invars)} invars; it needs {n + m}: one per "
                f"entry of all_consts ({n}), then the body's own ({m})")
    for k, (v, c) in enumerate(zip(got.invars, all_consts)):
        if not isinstance(v, Var) or v.aval.strip_weak_type() != get_aval(c).strip_weak_type():
            what = v.aval.str_short() if isinstance(v, Var) else type(v).__name__
            return (f"made leading invar {k} a {what}, but all_consts[{k}] is a "
                    f"{get_aval(c).str_short()}")
    return _same_program(reference_closure_convert(jaxpr, consts, all_consts), got, n)


def _same_program(want: Jaxpr, got: Jaxpr, n_lead: int) -> str | None:
    """None if `got` is `want` with other Vars (the same equations, reading the same inputs)."""
    names: dict[int, Var] = {}  # id of a Var of `want` -> the Var of `got` in its place
    binders = [*want.invars] + [v for e in want.eqns for v in e.outvars]
    got_binders = [*got.invars] + [v for e in got.eqns for v in e.outvars]
    if len(got.eqns) != len(want.eqns) or len(binders) != len(got_binders):
        return (f"returned a body of {len(got.eqns)} equations where the traced body has "
                f"{len(want.eqns)}: keep its equations as they are")
    if len({id(v) for v in got_binders}) != len(got_binders):
        return "returned a jaxpr that binds one Var twice: each invar needs a Var of its own"
    names.update((id(w), g) for w, g in zip(binders, got_binders))

    def same(w, g) -> bool:
        if isinstance(w, Lit):
            return isinstance(g, Lit) and w.aval == g.aval and w.val == g.val
        return names.get(id(w)) is g

    def which(v) -> str:
        k = next((i for i, u in enumerate(got.invars) if u is v), None)
        if k is None:
            return "a Var that it does not bind (a constvar left in place?)"
        return f"invar {k} (all_consts[{k}])" if k < n_lead else f"invar {k}"

    for i, (w, g) in enumerate(zip(want.eqns, got.eqns)):
        if w is not g and (w.primitive is not g.primitive or w.params != g.params):
            return f"changed equation {i} ({w.primitive.name}): keep the body's equations"
        for a, b in zip(w.invars, g.invars):
            if not same(a, b):
                return (f"made equation {i} ({w.primitive.name}) read {which(b)}, where the "
                        f"traced body reads {which(names.get(id(a)))}: leading invar k must "
                        "be the body's constvar for all_consts[k], matched by capture_key")
    for k, (a, b) in enumerate(zip(want.outvars, got.outvars)):
        if not same(a, b):
            return (f"made output {k} {which(b)}, where the traced body returns "
                    f"{which(names.get(id(a)))}")
    return None


def _selftest(convert) -> str | None:
    """Run a candidate on the two branches of a cond nested in a loop body, which capture
    `x` and `y` from two traces out (so each branch gets tracers of its own for them)."""
    f64 = ShapedArray((2,), np.dtype(np.float64))
    w = np.array([1.0, 2.0])
    problems: list[str | None] = []

    def outer(x, y):
        def body(v):
            bodies = [trace_to_jaxpr(lambda u: (u * x + w,), [f64], ["u"]),
                      trace_to_jaxpr(lambda u: (u - y * x,), [f64], ["u"])]
            all_consts = _join_consts(*[c for _, c, _ in bodies])
            for jaxpr, consts, _ in bodies:
                problems.append(_check_closed(convert(jaxpr, consts, all_consts), jaxpr,
                                              consts, all_consts))
            return v

        trace_to_jaxpr(body, [f64], ["v"])
        return x

    trace_to_jaxpr(outer, [f64, f64], ["x", "y"])
    return next((p for p in problems if p), None)


build.register("closure_convert", reference_closure_convert, chapter="05_control_flow",
               signature="closure_convert(jaxpr, consts, all_consts) -> Jaxpr",
               check=_check_closed, selftest=_selftest)


def _join_consts(*const_lists) -> list:
    seen, out = set(), []
    for consts in const_lists:
        for c in consts:
            if capture_key(c) not in seen:
                seen.add(capture_key(c))
                out.append(c)
    return out


def _type_str(aval: ShapedArray) -> str:
    return aval.str_short()


def _strong(avals) -> list[ShapedArray]:
    return [a.strip_weak_type() for a in avals]


def _check_same_types(what: str, a_name: str, a_tree, a_avals, b_name: str, b_tree, b_avals,
                      paths: Sequence[str]):
    if a_tree != b_tree:
        raise TypeError(f"{what}: {a_name} and {b_name} must return the same structure, "
                        f"got {a_tree} and {b_tree}")
    for path, a, b in zip(paths, a_avals, b_avals):
        if a.strip_weak_type() != b.strip_weak_type():
            raise TypeError(
                f"{what}: {a_name} and {b_name} must have identical types, but at {path} "
                f"{a_name} gives {_type_str(a)} and {b_name} gives {_type_str(b)}. Convert one "
                "side explicitly (e.g. .astype(...)) so both agree."
            )


# --------------------------------------------------------------------------- cond and switch


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
    if isinstance(pred, (bool, int, float, np.generic)):
        index = np.int32(bool(pred))  # a concrete predicate: the index is a literal
    else:
        if aval.dtype != dtypes.bool_:
            pred = lax.ne(pred, np.zeros((), aval.dtype)[()])
        index = lax.convert_element_type(pred, np.int32)
    return _cond(index, [false_fun, true_fun], operands, "cond",
                 names=["false_fun", "true_fun"])


def _cond(index, funs: list[Callable], operands, what: str, names=None):
    names = names or [f"branches[{i}]" for i in range(len(funs))]
    leaves, in_tree = tree_flatten(operands)
    in_avals = _avals(leaves)
    arg_names = [f"operand{p}" for p, _ in tree_flatten_with_names(operands)[0]]
    traced = [_trace(f, in_tree, in_avals, arg_names, getattr(f, "__name__", n))
              for f, n in zip(funs, names)]
    first_jaxpr, _, first_tree = traced[0]
    for (jaxpr, _, tree), name in zip(traced[1:], names[1:]):
        _check_same_types(f"lax.{what}", names[0], first_tree, first_jaxpr.out_avals,
                          name, tree, jaxpr.out_avals, _leaf_paths(first_tree))
    all_consts = _join_consts(*[consts for _, consts, _ in traced])
    branches = tuple(closure_convert(j, c, all_consts) for j, c, _ in traced)
    outs = bind(cond_p, index, *all_consts, *leaves, branches=branches)
    return tree_unflatten(first_tree, outs)


def _leaf_paths(tree: PyTreeDef) -> list[str]:
    return ["output" + keystr(p) for p in treedef_paths(tree)]


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


# --------------------------------------------------------------------------- loops


def _trace_body(what: str, fun: Callable, prefix_avals: list, prefix_names: list,
                carry_leaves: list, carry_tree: PyTreeDef, extra_tree=None):
    """Trace a loop body on (prefix..., carry); promote weak carries once if needed."""
    carry_avals = _avals(carry_leaves)
    paths = _leaf_paths(carry_tree) if carry_tree.num_leaves else []
    names = prefix_names + [p.replace("output", "carry", 1) for p in paths]
    in_tree = _prefix_tree(len(prefix_avals), carry_tree, extra_tree)
    for attempt in range(2):
        jaxpr, consts, out_tree = _trace(fun, in_tree, prefix_avals + carry_avals, names,
                                         getattr(fun, "__name__", what))
        if extra_tree is not None:  # scan: the body returns (carry, y)
            return jaxpr, consts, out_tree, carry_avals
        if out_tree != carry_tree:
            raise TypeError(f"lax.{what}: the body must return the same structure as the "
                            f"carry, got {out_tree} and {carry_tree}")
        outs = jaxpr.out_avals
        if attempt == 0 and _weak_mismatch(carry_avals, outs):
            carry_avals = [_joined(c, o) for c, o in zip(carry_avals, outs)]
            continue
        for p, c, o in zip(paths, carry_avals, outs):
            if c.strip_weak_type() != o.strip_weak_type():
                fix = ("convert the initial value (e.g. mnp.float64(0) or .astype(...))"
                       if c.shape == o.shape else "allocate the final shape up front and "
                       "write into it with .at[i].set(...)")
                leaf = p.replace("output", "carry", 1)
                at = f"at {leaf} " if leaf != "carry" else ""  # a single-array carry
                raise TypeError(
                    f"lax.{what}: the body must return the carry's types, but {at}the carry "
                    f"is {_type_str(c)} and the body returns {_type_str(o)}. A loop carry "
                    f"keeps one shape and dtype: {fix}."
                )
        return jaxpr, consts, out_tree, carry_avals
    raise AssertionError("unreachable")


def _prefix_tree(n_prefix: int, carry_tree: PyTreeDef, extra_tree) -> PyTreeDef:
    leaf = PyTreeDef("leaf")
    children = (leaf,) * n_prefix + (carry_tree,)
    if extra_tree is not None:
        children = (carry_tree, extra_tree)
    return PyTreeDef("tuple", None, children)


def _weak_mismatch(carry_avals, outs) -> bool:
    """Does a weakly typed carry (a Python scalar's) come back as another dtype, or strong?
    Then, as in JAX, the carry takes the joined type (`2 * x` of a weak 0.0 and an f64 `x`
    makes the carry a strong f64) and the body is traced again."""
    return any(c.weak_type and (c.dtype != o.dtype or not o.weak_type)
               for c, o in zip(carry_avals, outs))


def _joined(c: ShapedArray, o: ShapedArray) -> ShapedArray:
    if c.weak_type and (c.dtype != o.dtype or not o.weak_type) and c.shape == o.shape:
        dt, weak = dtypes.result_type((c.dtype, True), (o.dtype, o.weak_type))
        return ShapedArray(c.shape, dt, weak)
    return c


def _cast_leaves(leaves, avals):
    """The initial carry in the carry's types (dtype and weak type)."""
    out = []
    for x, a in zip(leaves, avals):
        got = get_aval(x)
        if (got.dtype, got.weak_type) != (a.dtype, a.weak_type):
            x = lax.convert_element_type(x, a.dtype, weak_type=a.weak_type)
        out.append(x)
    return out


def while_loop(cond_fun: Callable, body_fun: Callable, init_val):
    """`while cond_fun(val): val = body_fun(val)`, staged; returns the final `val`."""
    leaves, tree = tree_flatten(init_val)
    body_jaxpr, body_consts, _, carry_avals = _trace_body("while_loop", body_fun, [], [],
                                                          leaves, tree)
    leaves = _cast_leaves(leaves, carry_avals)
    names = [p.replace("output", "carry", 1) for p in _leaf_paths(tree)] if leaves else []
    cond_jaxpr, cond_consts, cond_tree = _trace(
        cond_fun, PyTreeDef("tuple", None, (tree,)), carry_avals, names,
        getattr(cond_fun, "__name__", "cond_fun"))
    outs = cond_jaxpr.out_avals
    if cond_tree.num_leaves != 1 or outs[0].shape != () or outs[0].dtype != dtypes.bool_:
        got = ", ".join(_type_str(a) for a in outs) or "nothing"
        raise TypeError(f"lax.while_loop: cond_fun must return a boolean scalar, got {got}")
    cond_j = closure_convert(cond_jaxpr, cond_consts, cond_consts)
    body_j = closure_convert(body_jaxpr, body_consts, body_consts)
    out = bind(while_p, *cond_consts, *body_consts, *leaves, cond_jaxpr=cond_j,
               body_jaxpr=body_j, cond_nconsts=len(cond_consts), body_nconsts=len(body_consts))
    return tree_unflatten(tree, out)


def _while_abstract_eval(*args, cond_jaxpr, body_jaxpr, cond_nconsts, body_nconsts):
    carry = args[cond_nconsts + body_nconsts:]
    if [a.strip_weak_type() for a in body_jaxpr.out_avals] != [
        a.strip_weak_type() for a in carry
    ]:
        raise TypeError("while: body outputs do not match the carry")
    return list(carry)


def _while_impl(*args, cond_jaxpr, body_jaxpr, cond_nconsts, body_nconsts):
    cond_consts = args[:cond_nconsts]
    body_consts = args[cond_nconsts:cond_nconsts + body_nconsts]
    carry = list(args[cond_nconsts + body_nconsts:])
    while eval_jaxpr(cond_jaxpr, (), *cond_consts, *carry)[0]:
        carry = eval_jaxpr(body_jaxpr, (), *body_consts, *carry)
    return carry


abstract_eval_rules[while_p] = _while_abstract_eval
impl_rules[while_p] = _while_impl


def fori_loop(lower, upper, body_fun: Callable, init_val, *, unroll: int | bool | None = None):
    """`for i in range(lower, upper): val = body_fun(i, val)`, staged; returns `val`.

    As in JAX, there is no fori_loop primitive: with bounds known while tracing (Python ints,
    or concrete arrays) the loop is a `scan` of `upper - lower` steps whose carry counts `i`
    (a weak int64, as a Python int is); with a traced bound it is a `while` over
    `(i, upper, val)`. Either way the carry starts with the counter and the body increments
    it first, which is the pattern the optimizer's `counted_loops` pass recognises to give the
    code generator back a plain `for` loop.
    """
    if not callable(body_fun):
        raise TypeError("lax.fori_loop: body_fun argument should be callable.")
    for b in (lower, upper):
        a = get_aval(b)
        if a.shape != () or not dtypes.is_int(a.dtype):
            raise TypeError(f"fori_loop bounds must be integer scalars, got {a.str_short()}")
    dtype = _bounds_dtype(get_aval(lower), get_aval(upper))
    static = not any(isinstance(b, Tracer) for b in (lower, upper))
    if not static and unroll not in (None, False, 1):
        raise ValueError("Can only use `unroll` in `fori_loop` if the loop bounds are "
                         "statically known.")
    if static:  # the counter is a Python int, so a weak int64, whatever the bounds' dtype
        lower, length = int(lower), max(int(upper) - int(lower), 0)
        index_aval = ShapedArray((), dtypes.int_, weak_type=True)
    else:
        lower, upper = (b if get_aval(b).dtype == dtype else lax.convert_element_type(b, dtype)
                        for b in (lower, upper))
        index_aval = get_aval(lower).update(shape=())
    leaves, tree = tree_flatten(init_val)
    jaxpr, consts, _, carry_avals = _trace_body("fori_loop", body_fun, [index_aval], ["i"],
                                                leaves, tree)
    leaves = _cast_leaves(leaves, carry_avals)
    body = closure_convert(jaxpr, consts, consts)
    n = len(consts)
    i, carry = body.invars[n], body.invars[n + 1:]
    i_next = Var(i.aval)
    count = Eqn(P.add_p, (i, Lit(1, i.aval)), (i_next,), {})
    if static:
        body = Jaxpr((), body.invars, (count, *body.eqns), (i_next, *body.outvars))
        out = bind(scan_p, *consts, lower, *leaves, jaxpr=body, num_consts=n,
                   num_carry=1 + len(leaves), length=length, reverse=False,
                   unroll=_unroll(unroll, length))
        return tree_unflatten(tree, out[1:])
    up = Var(i.aval)
    body = Jaxpr((), (*body.invars[:n], i, up, *carry), (count, *body.eqns),
                 (i_next, up, *body.outvars))
    k, u, rest = Var(i.aval), Var(i.aval), [Var(a) for a in carry_avals]
    more = Var(ShapedArray((), dtypes.bool_))
    cond = Jaxpr((), (k, u, *rest), (Eqn(P.lt_p, (k, u), (more,), {}),), (more,))
    out = bind(while_p, *consts, lower, upper, *leaves, cond_jaxpr=cond, body_jaxpr=body,
               cond_nconsts=0, body_nconsts=n)
    return tree_unflatten(tree, out[2:])


def _bounds_dtype(lower: ShapedArray, upper: ShapedArray):
    """JAX's rule: equal dtypes, or two signed ints of which exactly one is weak (a Python
    int), which takes the other's dtype."""
    if lower.dtype == upper.dtype:
        return lower.dtype
    if lower.dtype.kind == upper.dtype.kind == "i" and lower.weak_type != upper.weak_type:
        return upper.dtype if lower.weak_type else lower.dtype
    raise TypeError("lower and upper arguments to fori_loop must have equal types, got "
                    f"{lower.dtype.name} and {upper.dtype.name}")


def _unroll(unroll: int | bool | None, length: int) -> int:
    """JAX's normalisation: True unrolls fully, False or None not at all."""
    if unroll is None or unroll is False:
        return 1
    if unroll is True:
        return max(length, 1)
    if not isinstance(unroll, (int, np.integer)) or unroll < 1:
        raise ValueError(f"`unroll` must be a positive int or a bool, got {unroll!r}")
    return int(unroll)


def scan(f: Callable, init, xs=None, length: int | None = None, reverse: bool = False,
         unroll: int | bool = 1):
    """`carry, y = f(carry, x)` for each `x` along the leading axis of `xs`; returns
    `(final carry, stacked ys)`. With `reverse=True` the steps run from the last `x` to the
    first, and `ys[t]` is still the `y` of step `xs[t]`. `unroll` is recorded as JAX records
    it; the generated loop leaves unrolling to LLVM, which decides it per loop."""
    x_leaves, x_tree = tree_flatten(xs)
    x_avals = _avals(x_leaves)
    lengths = {a.shape[0] for a in x_avals if a.shape}
    if any(not a.shape for a in x_avals):
        raise TypeError("scan: every leaf of xs needs a leading axis to scan over")
    if length is not None:
        lengths.add(int(length))
    if len(lengths) != 1:
        raise ValueError(f"scan: xs leaves and length disagree on the length: {sorted(lengths)}")
    n = lengths.pop()
    carry_leaves, carry_tree = tree_flatten(init)
    slice_avals = [ShapedArray(a.shape[1:], a.dtype) for a in x_avals]

    def body(carry, x):
        return f(carry, x)

    carry_avals = _avals(carry_leaves)
    for attempt in range(2):
        in_tree = PyTreeDef("tuple", None, (carry_tree, x_tree))
        jaxpr, consts, out_tree = _trace(
            body, in_tree, carry_avals + slice_avals,
            [f"carry{p}" for p in _leaf_paths_raw(carry_tree)] +
            [f"xs{p}" for p in _leaf_paths_raw(x_tree)], getattr(f, "__name__", "f"))
        if out_tree.kind != "tuple" or len(out_tree.children) != 2:
            raise TypeError("scan: f must return a pair (new_carry, y)")
        new_carry_tree, y_tree = out_tree.children
        outs = jaxpr.out_avals[:carry_tree.num_leaves]
        if attempt == 0 and new_carry_tree == carry_tree and _weak_mismatch(carry_avals, outs):
            carry_avals = [_joined(c, o) for c, o in zip(carry_avals, outs)]
            continue
        break
    _check_same_types("lax.scan", "the carry", carry_tree, carry_avals, "f's new carry",
                      new_carry_tree, outs,
                      [f"carry{p}" for p in _leaf_paths_raw(carry_tree)])
    carry_leaves = _cast_leaves(carry_leaves, carry_avals)
    body_j = closure_convert(jaxpr, consts, consts)
    out = bind(scan_p, *consts, *carry_leaves, *x_leaves, jaxpr=body_j, num_consts=len(consts),
               num_carry=len(carry_leaves), length=n, reverse=bool(reverse),
               unroll=_unroll(unroll, n))
    carry_out = tree_unflatten(carry_tree, out[:len(carry_leaves)])
    ys = tree_unflatten(y_tree, out[len(carry_leaves):])
    return carry_out, ys


def _leaf_paths_raw(tree: PyTreeDef) -> list[str]:
    return [keystr(p) for p in treedef_paths(tree)]


def _scan_abstract_eval(*args, jaxpr, num_consts, num_carry, length, reverse, unroll):
    carry = args[num_consts:num_consts + num_carry]
    xs = args[num_consts + num_carry:]
    want_in = [*args[:num_consts + num_carry], *[ShapedArray(x.shape[1:], x.dtype) for x in xs]]
    if (_strong(jaxpr.in_avals) != _strong(want_in) or any(x.shape[:1] != (length,) for x in xs)
            or _strong(jaxpr.out_avals[:num_carry]) != _strong(carry)):
        raise TypeError("scan: the body must take (consts, carry, x) and return (carry, y)")
    ys = jaxpr.out_avals[num_carry:]
    return [*carry, *[ShapedArray((length, *y.shape), y.dtype, y.weak_type) for y in ys]]


def _scan_impl(*args, jaxpr, num_consts, num_carry, length, reverse, unroll):
    consts = args[:num_consts]
    carry = list(args[num_consts:num_consts + num_carry])
    xs = args[num_consts + num_carry:]
    ys = []
    for i in reversed(range(length)) if reverse else range(length):
        outs = eval_jaxpr(jaxpr, (), *consts, *carry, *[x[i] for x in xs])
        carry, y = outs[:num_carry], outs[num_carry:]
        ys.append(y)
    if reverse:
        ys.reverse()
    y_avals = jaxpr.out_avals[num_carry:]
    stacked = [np.stack([y[k] for y in ys]) if ys else np.zeros((0, *a.shape), a.dtype)
               for k, a in enumerate(y_avals)]
    return [*carry, *stacked]


abstract_eval_rules[scan_p] = _scan_abstract_eval
impl_rules[scan_p] = _scan_impl


# Keep last: every public function becomes an API boundary (errors.api_boundary).
api_boundaries(globals())
