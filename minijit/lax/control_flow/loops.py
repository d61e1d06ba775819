"""Loops: `while_loop`, `fori_loop` and `scan`, and `map` and `associative_scan` built on
them (chapter 05).

Named after JAX's `jax/_src/lax/control_flow/loops.py`, where all five live. Two
primitives: `while` (a condition and a body, each a closed sub-jaxpr, `common.py`) and
`scan` (a body over a carry and the leading axis of `xs`). `fori_loop` adds none, as in JAX:
with static bounds it is a `scan` whose first carry counts, with a traced bound a `while`
over `(i, upper, carry)`; the optimizer's `counted_loops` pass gives the loop back to the
code generator. Invariant: a carry keeps its shape and dtype across one iteration,
checked with a message that names the leaf; weak types follow JAX's rule (`_promoted`): a
weakly typed initial carry that the body returns as another dtype is promoted once, and each
loop's results have the types the body returns.

Under `disable_jit`, as in JAX, the three loops run as Python loops on the values themselves
(`fori_loop`'s index is a Python int, nothing is traced, and no carry's type is checked):
what `jax.disable_jit()` is for, a loop body that a `print` or a debugger can step through.

`map` is a `scan` with an empty carry, exactly as JAX lowers it (its jaxpr shows one `scan`
equation), and `associative_scan` is the recursive doubling of Blelloch's parallel prefix
sum, written with `lax.slice`, `lax.pad`, `lax.concatenate` and `lax.rev`, so it unrolls
into about 10 equations per halving: O(log n) levels of whole-array work instead of a
sequential loop of n steps.
"""

from __future__ import annotations

import operator
from collections.abc import Callable

import numpy as np

from minijit import build, dtypes
from minijit.array import Array, wrap
from minijit.config import config
from minijit.core import (
    Primitive,
    ShapedArray,
    Tracer,
    abstract_eval_rules,
    bind,
    get_aval,
    impl_rules,
)
from minijit.errors import ConcretizationTypeError, api_boundaries
from minijit.interpret import eval_jaxpr
from minijit.ir import Jaxpr
from minijit.lax import ops as lax
from minijit.lax.control_flow.common import (
    _avals,
    _check_same_types,
    _leaf_paths,
    _leaf_paths_raw,
    _strong,
    _trace,
    _type_str,
    closure_convert,
)
from minijit.tracing import trace_to_jaxpr
from minijit.tree_util import (
    PyTreeDef,
    tree_flatten,
    tree_map,
    tree_unflatten,
)

while_p = Primitive("while", multiple_results=True)
scan_p = Primitive("scan", multiple_results=True)


def _trace_body(what: str, fun: Callable, prefix_avals: list, prefix_names: list,
                carry_leaves: list, carry_tree: PyTreeDef, counted: bool = False):
    """Trace a loop body on (prefix..., carry); promote weak carries once if needed
    (`_promoted`), then check that the body returns the carry's shapes and dtypes.

    `counted` (fori_loop's prefix, `i` or `i, upper`): the traced body is JAX's
    `(i + 1, upper, fun(i, carry))`, the increment recorded first, as every equation is,
    through `tracing.process_primitive`."""
    carry_avals = _avals(carry_leaves)
    paths = _leaf_paths(carry_tree) if carry_tree.num_leaves else []
    names = prefix_names + [p.replace("output", "carry", 1) for p in paths]
    in_tree = _prefix_tree(len(prefix_avals), carry_tree)
    traced, n_counts = fun, 0
    if counted:
        one = 1 if prefix_avals[0].weak_type else np.ones((), prefix_avals[0].dtype)

        def traced(i, *rest):  # JAX's `_fori_body_fun`: `lax.add(i, lax._const(i, 1))` first
            return (lax.add(i, one), *rest[:-1], fun(i, rest[-1]))

        n_counts = len(prefix_avals)
    for attempt in range(2):
        jaxpr, consts, out_tree = _trace(traced, in_tree, prefix_avals + carry_avals, names,
                                         getattr(fun, "__name__", what))
        if counted:
            out_tree = out_tree.children[-1]
        if out_tree != carry_tree:
            raise TypeError(f"lax.{what}: the body must return the same structure as the "
                            f"carry, got {out_tree} and {carry_tree}")
        outs = jaxpr.out_avals[n_counts:]
        promoted = [_promoted(c, o) for c, o in zip(carry_avals, outs)]
        if attempt == 0 and promoted != carry_avals:
            carry_avals = promoted
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


def _prefix_tree(n_prefix: int, carry_tree: PyTreeDef) -> PyTreeDef:
    return PyTreeDef("tuple", None, (PyTreeDef("leaf"),) * n_prefix + (carry_tree,))


def _promoted(c: ShapedArray, o: ShapedArray) -> ShapedArray:
    """The carry's type for a second trace, by JAX's rule (`_promote_weak_typed_input`):
    a weakly typed carry (a Python scalar's) that the body returns as another dtype or shape
    becomes a strong carry of the dtype the two promote to (`2` and a float32 make float32;
    `0.0` and an int32 make float64, which the body's int32 then fails), and the body is
    traced again. A weak carry that comes back with its own dtype, weak or strong (`2` as
    `c.astype(int64)`), stays weak: the body is traced once, as JAX traces it."""
    if c.weak_type and c.strip_weak_type() != o.strip_weak_type():
        dt, _ = dtypes.result_type((c.dtype, True), (o.dtype, o.weak_type))
        return ShapedArray(c.shape, dt)
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
    if config.disable_jit:
        try:  # as JAX does: a Python loop on the values, each leaf made an array
            val = tree_map(_as_array, init_val)
            while cond_fun(val):
                val = tree_map(_as_array, body_fun(val))
            return val
        except ConcretizationTypeError:
            pass  # the condition is traced (make_jaxpr under disable_jit): stage the loop
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


def _as_array(x):
    """JAX's `lax.asarray`: an array or tracer as it is, a Python scalar as a weakly typed
    Array (`disable_jit`'s while_loop carries arrays, as JAX's does)."""
    if isinstance(x, (Array, Tracer)):
        return x
    a = get_aval(x)
    return wrap(np.asarray(x, a.dtype), a.weak_type)


def _while_abstract_eval(*args, cond_jaxpr, body_jaxpr, cond_nconsts, body_nconsts):
    carry = args[cond_nconsts + body_nconsts:]
    if [a.strip_weak_type() for a in body_jaxpr.out_avals] != [
        a.strip_weak_type() for a in carry
    ]:
        raise TypeError("while: body outputs do not match the carry")
    return list(body_jaxpr.out_avals)  # as in JAX: a weak carry the body makes strong is strong


def _while_impl(*args, cond_jaxpr, body_jaxpr, cond_nconsts, body_nconsts):
    """The impl rule of `while` (an eager `while_loop`, a `while` equation that `eval_jaxpr`
    runs): the build track's chapter 05 piece `while_impl`, `reference_while_impl` below
    or yours after `build.use("while_impl", ...)`. It returns the final carry, a list."""
    return build.call("while_impl", *args, cond_jaxpr=cond_jaxpr, body_jaxpr=body_jaxpr,
                      cond_nconsts=cond_nconsts, body_nconsts=body_nconsts)


def reference_while_impl(*args, cond_jaxpr, body_jaxpr, cond_nconsts, body_nconsts):
    """minijit's own `while_impl`: the operands are cond's captured values, the body's, then
    the carry; the sub-jaxprs have no constvars (closure conversion)."""
    build.guard("while_impl")  # fails when a learner's piece hands its work to this one
    cond_consts = args[:cond_nconsts]
    body_consts = args[cond_nconsts:cond_nconsts + body_nconsts]
    carry = list(args[cond_nconsts + body_nconsts:])
    while eval_jaxpr(cond_jaxpr, (), *cond_consts, *carry)[0]:
        carry = eval_jaxpr(body_jaxpr, (), *body_consts, *carry)
    return carry


def _check_while_impl(result, *args, body_jaxpr, **params) -> str | None:
    """The final carry: a list of arrays of the carry's types."""
    if type(result) not in (list, tuple):
        return f"returned a {type(result).__name__}; it must return the final carry as a list"
    want = body_jaxpr.out_avals
    if len(result) != len(want):
        return (f"returned {len(result)} values for a carry of {len(want)}: return the whole "
                "carry, not cond's output or a part")
    for k, (value, aval) in enumerate(zip(result, want)):
        got = np.asarray(value)
        if got.shape != aval.shape or got.dtype != aval.dtype:
            return (f"returned carry[{k}] as {got.dtype.name}{list(got.shape)}, where the "
                    f"carry is {aval.str_short()}")
    return None


def _selftest_while_impl(impl) -> str | None:
    """Run a candidate on two `while` equations, as `eval_jaxpr` calls it: cond and body
    capturing a value each, and a tuple carry whose loop never runs."""
    f64 = ShapedArray((), np.dtype(np.float64))

    def count_up(x, limit, step):
        return while_loop(lambda c: c[0] < limit, lambda c: (c[0] + step, c[1] + 1), (x, 0))

    def never_runs(x, a, b):
        return while_loop(lambda c: c[1] < 0, lambda c: (c[0] * a + b, c[1] + 1), (x, 5))

    for fun, values in [(count_up, (1.0, 10.0, 0.75)), (never_runs, (2.0, 3.0, 0.5))]:
        jaxpr, _, _ = trace_to_jaxpr(fun, [f64] * 3, ["x", "a", "b"])
        (eqn,) = [e for e in jaxpr.eqns if e.primitive is while_p]
        env = {id(v): np.float64(x) for v, x in zip(jaxpr.invars, values)}
        operands = [env[id(a)] if id(a) in env else np.asarray(a.val, a.aval.dtype)
                    for a in eqn.invars]
        got = impl(*operands, **eqn.params)
        problem = _check_while_impl(got, *operands, **eqn.params)
        want = reference_while_impl(*operands, **eqn.params)
        if problem is None and not all(np.array_equal(g, w) for g, w in zip(got, want)):
            problem = f"returned {[np.asarray(g).tolist() for g in got]}, where minijit's " \
                      f"rule returns {[np.asarray(w).tolist() for w in want]}"
        if problem:
            return f"{problem} (on `{fun.__name__}{values}`)"
    return None


abstract_eval_rules[while_p] = _while_abstract_eval
impl_rules[while_p] = _while_impl
build.register("while_impl", reference_while_impl, chapter="05_control_flow",
               signature="while_impl(*args, cond_jaxpr, body_jaxpr, cond_nconsts, "
                         "body_nconsts) -> the final carry, a list",
               check=_check_while_impl, selftest=_selftest_while_impl)


def fori_loop(lower, upper, body_fun: Callable, init_val, *, unroll: int | bool | None = None):
    """`for i in range(lower, upper): val = body_fun(i, val)`, staged; returns `val`.

    As in JAX, there is no fori_loop primitive: with bounds known while tracing (Python ints,
    or concrete arrays) the loop is a `scan` of `upper - lower` steps whose carry counts `i`
    (a weak int64, as a Python int is); with a traced bound it is a `while` over
    `(i, upper, val)`. Either way the carry starts with the counter and the body increments
    it first, which is the pattern the optimizer's `counted_loops` pass recognises to give the
    code generator back a plain `for` loop. Under `disable_jit` with such bounds it is a
    Python loop, `i` a Python int, as JAX's is.
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
    if static and config.disable_jit:  # JAX's loop: the body gets Python ints, no tracing
        val = init_val
        for i in range(int(lower), int(upper)):
            val = body_fun(i, val)
        return val
    if static:  # the counter is a Python int, so a weak int64, whatever the bounds' dtype
        lower, length = int(lower), max(int(upper) - int(lower), 0)
        prefix = [ShapedArray((), dtypes.int_, weak_type=True)]
    else:
        lower, upper = (b if get_aval(b).dtype == dtype else lax.convert_element_type(b, dtype)
                        for b in (lower, upper))
        prefix = [get_aval(lower).update(shape=()), get_aval(upper).update(shape=())]
    leaves, tree = tree_flatten(init_val)
    jaxpr, consts, _, carry_avals = _trace_body("fori_loop", body_fun, prefix,
                                                ["i", "upper"][:len(prefix)], leaves, tree,
                                                counted=True)
    leaves = _cast_leaves(leaves, carry_avals)
    body = closure_convert(jaxpr, consts, consts)
    n = len(consts)
    if static:
        out = bind(scan_p, *consts, lower, *leaves, jaxpr=body, num_consts=n,
                   num_carry=1 + len(leaves), length=length, reverse=False,
                   unroll=_unroll(unroll, length))
        return tree_unflatten(tree, out[1:])
    cond, _, _ = _trace(lambda i, upper, _: lax.lt(i, upper), _prefix_tree(2, tree),
                        prefix + carry_avals, ["i", "upper", *["carry"] * len(leaves)],
                        "fori_loop")  # JAX's `_fori_cond_fun`, which captures nothing
    cond = Jaxpr((), cond.invars, cond.eqns, cond.outvars)
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
    it; the generated loop leaves unrolling to LLVM, which decides it per loop. Under
    `disable_jit` it is a Python loop on the values, as JAX's is (`_scan_in_python`)."""
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
    if config.disable_jit:
        return _scan_in_python(f, init, x_leaves, x_tree, n, reverse)
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
        promoted = [_promoted(c, o) for c, o in zip(carry_avals, outs)]
        if attempt == 0 and new_carry_tree == carry_tree and promoted != carry_avals:
            carry_avals = promoted
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


def _scan_in_python(f: Callable, init, x_leaves, x_tree: PyTreeDef, n: int, reverse: bool):
    """JAX's `scan` under `disable_jit`: `f` called on each row of `xs` in turn, the carry
    passed on as `f` returns it (unchecked), the `y`s stacked at the end."""
    if n == 0:  # JAX's error: with no step, nothing says what the ys are
        raise ValueError("zero-length scan is not supported in disable_jit() mode because "
                         "the output type is unknown.")
    carry, ys = init, []
    for t in reversed(range(n)) if reverse else range(n):
        row = [lax.squeeze(_slice_in_dim(x, t, t + 1, 1, 0), (0,)) for x in x_leaves]
        carry, y = f(carry, tree_unflatten(x_tree, row))
        ys.append(y)
    if reverse:
        ys.reverse()

    def stack(*ys):
        return lax.concatenate([lax.reshape(y, (1, *get_aval(y).shape)) for y in ys], 0)

    return carry, tree_map(stack, *ys)


def _scan_abstract_eval(*args, jaxpr, num_consts, num_carry, length, reverse, unroll):
    carry = args[num_consts:num_consts + num_carry]
    xs = args[num_consts + num_carry:]
    want_in = [*args[:num_consts + num_carry], *[ShapedArray(x.shape[1:], x.dtype) for x in xs]]
    if (_strong(jaxpr.in_avals) != _strong(want_in) or any(x.shape[:1] != (length,) for x in xs)
            or _strong(jaxpr.out_avals[:num_carry]) != _strong(carry)):
        raise TypeError("scan: the body must take (consts, carry, x) and return (carry, y)")
    ys = jaxpr.out_avals[num_carry:]
    return [*jaxpr.out_avals[:num_carry],  # as in JAX: the carries the body returns
            *[ShapedArray((length, *y.shape), y.dtype, y.weak_type) for y in ys]]


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


def _leading_length(what: str, leaves) -> int:
    """The common length of the leaves' leading axes, with JAX's errors when there is none."""
    if not leaves:
        raise ValueError(f"{what} got no values to map over: xs has no array leaves")
    shapes = [get_aval(x).shape for x in leaves]
    if any(not s for s in shapes):
        raise ValueError(f"{what}: every leaf of xs needs a leading axis to map over, got "
                         f"shapes {shapes}")
    lengths = sorted({s[0] for s in shapes})
    if len(lengths) != 1:
        raise ValueError(f"{what} got values with different leading axis sizes: "
                         f"{', '.join(str(n) for n in lengths)}.")
    return lengths[0]


def _map_leaves(f: Callable, xs):
    """`f` over the leading axis of every leaf of `xs`: one `scan` with an empty carry."""
    _, ys = scan(lambda carry, x: (carry, f(x)), (), xs)
    return ys


def map(f: Callable, xs, *, batch_size: int | None = None):  # noqa: A001 - JAX's name
    """`stack([f(x) for x in xs])` along the leading axis of every leaf of the pytree `xs`,
    staged as one `scan` (the body is traced once, whatever the length).

    With `batch_size=b`, the leading axis is cut into `n // b` batches of `b`, the batches are
    mapped in an outer scan, and the `n % b` left over are mapped after it, then concatenated.
    JAX runs `vmap(f)` on each batch; minijit has no `vmap`, so each batch is an inner scan:
    the same results, in the same layout of equations (slice, reshape, scan, concatenate).
    """
    leaves, tree = tree_flatten(xs)
    n = _leading_length("lax.map", leaves)
    if not batch_size:  # JAX treats batch_size=0 as no batching too
        return _map_leaves(f, xs)
    batch_size = operator.index(batch_size)
    if batch_size < 0:
        raise ValueError(f"lax.map: batch_size must be a positive int, got {batch_size}")
    batches, rest = divmod(n, batch_size)
    cut = batches * batch_size

    def rows(x, start, stop):
        shape = get_aval(x).shape
        return lax.slice(x, (start, *[0] * (len(shape) - 1)), (stop, *shape[1:]))

    outs = []
    if batches:
        batched = [lax.reshape(rows(x, 0, cut), (batches, batch_size, *get_aval(x).shape[1:]))
                   for x in leaves]
        ys = _map_leaves(lambda batch: _map_leaves(f, batch), tree_unflatten(tree, batched))
        y_leaves, y_tree = tree_flatten(ys)
        outs.append((y_tree, [lax.reshape(y, (cut, *get_aval(y).shape[2:])) for y in y_leaves]))
    if rest:
        ys = _map_leaves(f, tree_unflatten(tree, [rows(x, cut, n) for x in leaves]))
        y_leaves, y_tree = tree_flatten(ys)
        outs.append((y_tree, y_leaves))
    if len(outs) == 1:
        return tree_unflatten(*outs[0])
    (y_tree, full), (_, tail) = outs
    return tree_unflatten(y_tree, [lax.concatenate([a, b], 0) for a, b in zip(full, tail)])


# --------------------------------------------------------------------------- associative_scan


def _slice_in_dim(x, start: int, stop: int, stride: int, axis: int):
    """`x[start:stop:stride]` along `axis`, every other axis whole."""
    shape = get_aval(x).shape
    starts = [0] * len(shape)
    limits = list(shape)
    strides = [1] * len(shape)
    starts[axis], limits[axis], strides[axis] = start, stop, stride
    return lax.slice(x, starts, limits, strides if stride != 1 else None)


def _interleave(evens, odds, axis: int):
    """`evens[0], odds[0], evens[1], odds[1], ...` along `axis` (`evens` has as many elements
    as `odds`, or one more): each spread out with zeros in between by `pad`, then added (or
    or-ed, for bools), since each position holds a value from exactly one of them."""
    n_even, n_odd = get_aval(evens).shape[axis], get_aval(odds).shape[axis]
    ndim = get_aval(evens).ndim
    even_pad = [(0, 0, 0)] * ndim
    odd_pad = [(0, 0, 0)] * ndim
    even_pad[axis] = (0, 1 if n_even == n_odd else 0, 1)
    odd_pad[axis] = (1, 0 if n_even == n_odd else 1, 1)
    dtype = get_aval(evens).dtype
    zero = np.zeros((), dtype)
    join = lax.bitwise_or if dtype == np.bool_ else lax.add
    return join(lax.pad(evens, zero, even_pad), lax.pad(odds, zero, odd_pad))


def associative_scan(fn: Callable, elems, reverse: bool = False, axis: int = 0):
    """All prefix combinations along `axis`: `out[i] = fn(...fn(fn(e[0], e[1]), e[2])..., e[i])`
    for an associative `fn` of two pytrees shaped like `elems` (`lax.associative_scan(lax.add,
    x)` is a cumulative sum). With `reverse=True`, the combinations run from the end.

    Invariant of the recursion (Blelloch): the scan's odd positions are the scan of the sums of
    adjacent pairs, computed by recursing on half as many elements; each even position is then
    one `fn` of the odd result before it and the original element. `fn` is applied elementwise
    to whole slices, so it must keep the shapes it is given.
    """
    if not callable(fn):
        raise TypeError("lax.associative_scan: fn argument should be callable.")
    leaves, tree = tree_flatten(elems)
    if not leaves:
        raise ValueError("lax.associative_scan: elems has no array leaves to scan")
    ndim = get_aval(leaves[0]).ndim
    axis = operator.index(axis)
    if not -ndim <= axis < ndim:
        raise ValueError(f"axis {axis} is out of bounds for array of dimension {ndim}")
    axis %= ndim
    if any(get_aval(x).ndim <= axis or get_aval(x).shape[axis] != get_aval(leaves[0]).shape[axis]
           for x in leaves):
        raise ValueError("Array inputs to associative_scan must have the same first dimension. "
                         f"(saw: {[get_aval(x).shape for x in leaves]})")
    if reverse:
        leaves = [lax.rev(x, (axis,)) for x in leaves]

    def combine(a_leaves, b_leaves):
        out, out_tree = tree_flatten(fn(tree_unflatten(tree, a_leaves),
                                        tree_unflatten(tree, b_leaves)))
        want = [get_aval(x).shape for x in a_leaves]
        got = [get_aval(x).shape for x in out]
        if out_tree != tree or got != want:
            raise ValueError(
                "lax.associative_scan: fn must return a pytree of the structure and shapes it "
                f"is given (it combines whole slices elementwise): given shapes {want}, it "
                f"returned {got}")
        return out

    def prefix_scan(xs):
        n = get_aval(xs[0]).shape[axis]
        if n < 2:
            return xs
        pairs = combine([_slice_in_dim(x, 0, n - 1, 2, axis) for x in xs],
                        [_slice_in_dim(x, 1, n, 2, axis) for x in xs])
        odds = prefix_scan(pairs)  # the scan at positions 1, 3, 5, ...
        n_odd = get_aval(odds[0]).shape[axis]
        # positions 2, 4, ...: the odd result just before, combined with the element itself
        before = odds if n % 2 else [_slice_in_dim(o, 0, n_odd - 1, 1, axis) for o in odds]
        evens = combine(before, [_slice_in_dim(x, 2, n, 2, axis) for x in xs])
        evens = [lax.concatenate([_slice_in_dim(x, 0, 1, 1, axis), e], axis)
                 for x, e in zip(xs, evens)]
        return [_interleave(e, o, axis) for e, o in zip(evens, odds)]

    out = prefix_scan(leaves)
    if reverse:
        out = [lax.rev(x, (axis,)) for x in out]
    return tree_unflatten(tree, out)


# Keep last: every public function becomes an API boundary (errors.api_boundary).
api_boundaries(globals())
