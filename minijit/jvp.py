"""Forward-mode differentiation, `jvp`: a second interpretation on the trace stack (chapter 02).

`jvp(f, primals, tangents)` returns `f(*primals)` and its derivative at `primals` in the
direction `tangents` (a Jacobian-vector product), as `jax.jvp` does. It runs `f` on
`JVPTracer`s, each carrying a value (its *primal*) and a direction (its *tangent*).

It is why `bind` asks a *stack* of traces. `jvp` pushes a `JVPTrace`, so every primitive that
`f` applies comes to it first. Its rule for the primitive computes the output's primal and
tangent with other primitives, and binds those on the trace *below* it: the rule runs inside
`new_trace(parent_trace)`. Below may be the `EvalTrace` (compute now), a `JaxprTrace` (under
`jit`, the primal and tangent equations are recorded: `jit(jvp(f))`) or another `JVPTrace`
(`jvp(jvp(f))`). A jitted function called inside `jvp` arrives as one `jit` equation, whose
body runs here equation by equation (`jvp(jit(f))`: the body is inlined; JAX keeps a `jit`
equation of the differentiated body instead).

Invariants:
- a tangent has its primal's shape and dtype; a value that is not a tracer of this trace (a
  constant, a tracer of a trace below) has a zero tangent (`JVPTrace.lift`);
- a primitive none of whose operands is a tracer of this trace goes to the trace below as
  it is (constants are not differentiated); a comparison's output has no tangent (it is the
  primal itself, as in JAX), so `if x > 0` works where the primal is concrete;
- a rule binds only on the trace below, never on this one (its binds would come back here).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

import numpy as np

from minijit import dtypes, errors, lax
from minijit import primitives as P
from minijit.array import wrap
from minijit.core import COMPARISONS, Primitive, Tracer, bind, current_trace, get_aval, new_trace
from minijit.ir import Jaxpr, Lit
from minijit.jit_call import jit_p
from minijit.tree_util import tree_flatten, tree_flatten_with_names, tree_unflatten

# --------------------------------------------------------------------------- the interpretation


class JVPTracer(Tracer):
    """A value inside `jvp`: its primal (an array, or a tracer of a trace below) and its
    tangent, of the same shape and dtype."""

    __slots__ = ("_trace", "primal", "tangent")

    def __init__(self, trace: JVPTrace, primal, tangent):
        self._trace, self.primal, self.tangent = trace, primal, tangent

    @property
    def aval(self):
        return get_aval(self.primal)

    def __repr__(self) -> str:
        return f"JVPTracer(primal={self.primal!r}, tangent={self.tangent!r})"

    def __bool__(self):
        return bool(self.primal)  # as JAX: a concrete primal decides; a traced one raises

    def __array__(self, dtype=None, copy=None):
        raise errors.TracerArrayConversionError(
            "The numpy.ndarray conversion method __array__() was called on a JVPTracer: "
            "NumPy would drop its tangent. Use minijit.numpy inside the function jvp "
            "differentiates (mnp.sin(x), not np.sin(x)).")

    def raise_leaked(self):
        where = ("by a function traced inside jvp (a jitted function, or a branch or body of "
                 "lax control flow) that reads it from its closure: pass it as an argument"
                 if self._trace.alive else
                 "after jvp returned (stored in a global, a list or an attribute): return "
                 "it from the function instead")
        raise errors.UnexpectedTracerError(
            f"Encountered an unexpected tracer {self.aval.str_short()} of jvp, used {where}.")


class JVPTrace:
    """Pushed by `jvp`: differentiates the primitives applied to its tracers (JAX's JVPTrace).
    `parent_trace` is the trace below it, where its rules bind."""

    def __init__(self, parent_trace):
        self.parent_trace = parent_trace
        self.alive = True  # until jvp returns (a JaxprTrace asks a tracer's trace this)

    def lift(self, x) -> tuple:
        """`(primal, tangent)` of an operand: a constant's tangent is zero."""
        if isinstance(x, JVPTracer) and x._trace is self:
            return x.primal, x.tangent
        return x, zeros_like(x)

    def process_primitive(self, prim: Primitive, args, params) -> list:
        if not any(isinstance(x, JVPTracer) and x._trace is self for x in args):
            return self.parent_trace.process_primitive(prim, args, params)
        if prim is jit_p:  # a jitted function called inside jvp: its body runs here
            return bind_jaxpr(params["jaxpr"], *args)
        primals, tangents = zip(*map(self.lift, args))
        if prim in COMPARISONS:  # a bool output has no tangent: the primal goes on alone
            return self.parent_trace.process_primitive(prim, primals, params)
        rule = jvp_rules.get(prim)
        if rule is None:
            raise NotImplementedError(
                f"Differentiation rule for '{prim.name}' not implemented: minijit's jvp has "
                f"rules for {', '.join(sorted(p.name for p in jvp_rules))}, the comparisons "
                "and jit")
        with new_trace(self.parent_trace):
            primals_out, tangents_out = rule(primals, tangents, **params)
        return [JVPTracer(self, p, t) for p, t in zip(primals_out, tangents_out)]

    def __repr__(self) -> str:
        return f"JVPTrace(parent_trace={self.parent_trace!r})"


def zeros_like(x):
    """A concrete zero of `x`'s type (weak type included): the tangent of a constant."""
    aval = get_aval(x)
    return wrap(np.zeros(aval.shape, aval.dtype), weak_type=aval.weak_type)


def bind_jaxpr(jaxpr: Jaxpr, *args) -> list:
    """Run `jaxpr` (no constvars) on `args` by binding each equation's primitive in turn, on
    whatever trace is innermost (JAX's `core.eval_jaxpr`; minijit's `eval_jaxpr` runs the
    impl rules on NumPy instead)."""
    env = {id(v): a for v, a in zip(jaxpr.invars, args)}

    def read(atom):
        if isinstance(atom, Lit):
            return wrap(np.asarray(atom.val, atom.aval.dtype), weak_type=atom.aval.weak_type)
        return env[id(atom)]

    for eqn in jaxpr.eqns:
        outs = bind(eqn.primitive, *map(read, eqn.invars), **eqn.params)
        env.update(zip(map(id, eqn.outvars), outs if eqn.primitive.multiple_results else [outs]))
    return [read(atom) for atom in jaxpr.outvars]


# --------------------------------------------------------------------------- the rules

# rule(primals, tangents, **params) -> (primals_out, tangents_out), both lists; it runs with
# the trace below the JVPTrace innermost, so it binds (here through `lax`) on that trace.
jvp_rules: dict[Primitive, Callable] = {}


def _linear(prim, primals, tangents, **params):
    """An operation linear in its operands: the tangent goes through it as the primal does."""
    return [bind(prim, *primals, **params)], [bind(prim, *tangents, **params)]


for _p in (P.add_p, P.sub_p, P.neg_p, P.reduce_sum_p, P.broadcast_in_dim_p, P.reshape_p,
           P.squeeze_p, P.transpose_p, P.slice_p, P.rev_p, P.concatenate_p):
    jvp_rules[_p] = partial(_linear, _p)


def _product(prim, primals, tangents, **params):
    """mul and dot_general, the product rule: d(x y) = dx y + x dy."""
    (x, y), (dx, dy) = primals, tangents
    return [bind(prim, x, y, **params)], [lax.add(bind(prim, dx, y, **params),
                                                  bind(prim, x, dy, **params))]


jvp_rules[P.mul_p] = partial(_product, P.mul_p)
jvp_rules[P.dot_general_p] = partial(_product, P.dot_general_p)


def _div(primals, tangents):
    (x, y), (dx, dy) = primals, tangents
    out = lax.div(x, y)
    return [out], [lax.div(lax.sub(dx, lax.mul(out, dy)), y)]  # (dx - x/y dy) / y


jvp_rules[P.div_p] = _div


def _scalar(value, like):
    """`value` as a weakly typed scalar of `like`'s dtype (it adopts its partner's type)."""
    return wrap(np.asarray(value, get_aval(like).dtype), weak_type=True)


def _elementwise(prim, derivative, primals, tangents, **params):
    """`out = prim(x)`, given `derivative(x, out, **params)`: the tangent is dx f'(x)."""
    (x,), (dx,) = primals, tangents
    out = bind(prim, x, **params)
    return [out], [lax.mul(dx, derivative(x, out, **params))]


_DERIVATIVES = {
    P.sin_p: lambda x, out: lax.cos(x),
    P.cos_p: lambda x, out: lax.neg(lax.sin(x)),
    P.exp_p: lambda x, out: out,
    P.log_p: lambda x, out: lax.div(_scalar(1, x), x),
    P.tanh_p: lambda x, out: lax.sub(_scalar(1, x), lax.mul(out, out)),
    P.logistic_p: lambda x, out: lax.mul(out, lax.sub(_scalar(1, x), out)),
    P.sqrt_p: lambda x, out: lax.div(_scalar(0.5, x), out),
    P.integer_pow_p: lambda x, out, y: (
        lax.mul(_scalar(y, x), lax.integer_pow(x, y - 1)) if y != 0 else zeros_like(x)),
}
for _p, _d in _DERIVATIVES.items():
    jvp_rules[_p] = partial(_elementwise, _p, _d)


def _convert_element_type(primals, tangents, *, new_dtype, weak_type):
    """Linear between floats; an integer or bool result has a zero tangent."""
    (x,), (dx,) = primals, tangents
    out = lax.convert_element_type(x, new_dtype, weak_type=weak_type)
    if not dtypes.is_float(new_dtype):
        return [out], [zeros_like(out)]
    return [out], [lax.convert_element_type(dx, new_dtype, weak_type=weak_type)]


def _select_n(primals, tangents):
    """select_n(which, *cases): linear in the cases; `which` only chooses."""
    which, *cases = primals
    return [lax.select_n(which, *cases)], [lax.select_n(which, *tangents[1:])]


jvp_rules[P.convert_element_type_p] = _convert_element_type
jvp_rules[P.select_n_p] = _select_n


# --------------------------------------------------------------------------- jvp


def jvp(fun: Callable, primals, tangents, has_aux: bool = False):
    """`(fun(*primals), its derivative at primals in the direction tangents)`, as `jax.jvp`.

    `primals` and `tangents` are tuples (or lists) of the same pytree structure, each tangent
    of its primal's shape and dtype (floats: an integer input has no tangent in minijit).
    With `has_aux`, `fun` returns `(output, aux)` and `jvp` returns `(primal, tangent, aux)`.
    """
    if not callable(fun):
        raise TypeError(f"Expected a callable value, got {fun!r}")
    if not isinstance(primals, (tuple, list)) or not isinstance(tangents, (tuple, list)):
        raise TypeError("primal and tangent arguments to jvp must be tuples or lists; found "
                        f"{type(primals).__name__} and {type(tangents).__name__}.")
    named, tree = tree_flatten_with_names(tuple(primals), "primals")
    tangent_leaves, tangent_tree = tree_flatten(tuple(tangents))
    if tree != tangent_tree:
        raise TypeError("primal and tangent arguments to jvp must have the same tree "
                        f"structure; primals have tree structure {tree} whereas tangents "
                        f"have tree structure {tangent_tree}.")
    for (name, p), t in zip(named, tangent_leaves):
        _check_pair(name, p, t)
    trace = JVPTrace(current_trace())
    try:
        with new_trace(trace):
            ins = [JVPTracer(trace, p, t) for (_, p), t in zip(named, tangent_leaves)]
            out = fun(*tree_unflatten(tree, ins))
            if has_aux:
                out, aux = _output_and_aux(out)
                aux = tree_unflatten(*_primals_of(trace, aux))
            out_leaves, out_tree = tree_flatten(out)
            pairs = [trace.lift(_leaf(x)) for x in out_leaves]
    finally:
        trace.alive = False
    primal_out = tree_unflatten(out_tree, [p for p, _ in pairs])
    tangent_out = tree_unflatten(out_tree, [t for _, t in pairs])
    return (primal_out, tangent_out, aux) if has_aux else (primal_out, tangent_out)


def _check_pair(name: str, primal, tangent) -> None:
    p, t = get_aval(_leaf(primal, name)), get_aval(_leaf(tangent, "the tangent of " + name))
    if not dtypes.is_float(p.dtype):
        raise TypeError(f"jvp: {name} has dtype {p.dtype.name}; minijit's jvp differentiates "
                        "floating-point inputs only (JAX takes a float0 tangent for an "
                        "integer or bool input): pass a float, or close over the value")
    if p.dtype != t.dtype:
        raise TypeError("primal and tangent arguments to jvp do not match; dtypes must be "
                        f"equal. Got primal dtype {p.dtype.name} and tangent dtype "
                        f"{t.dtype.name} at {name}.")
    if p.shape != t.shape:
        raise ValueError("jvp called with different primal and tangent shapes; Got primal "
                         f"shape {p.shape} and tangent shape as {t.shape} at {name}.")


def _leaf(x, name: str = "an output of the function"):
    if not isinstance(x, (Tracer, np.ndarray, np.generic, bool, int, float)):
        raise TypeError(f"jvp: {name} is a {type(x).__name__}; jvp takes and returns arrays, "
                        "Python scalars, or tuples/lists/dicts of them")
    return x


def _output_and_aux(out):
    if not (isinstance(out, (tuple, list)) and len(out) == 2):
        raise TypeError("jvp with has_aux=True: the function must return a pair (output, aux), "
                        f"got {type(out).__name__}")
    return out


def _primals_of(trace: JVPTrace, tree) -> tuple:
    leaves, treedef = tree_flatten(tree)
    return treedef, [x.primal if isinstance(x, JVPTracer) and x._trace is trace else x
                     for x in leaves]
