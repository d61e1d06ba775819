"""minijit.jvp against jax.jvp (0.10.2, x64): values eagerly, under jit and around a jitted
function; the tangent equations jit(jvp(f)) records; the errors of bad arguments."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import minijit as mj
import minijit.numpy as mnp
from minijit import errors
from minijit.core import trace_state

jax.config.update("jax_enable_x64", True)

# name -> (f written for a numpy-like module, primals); tangents come from one rng
PROGRAMS = {
    "sin(x) * x": (lambda m: lambda x: m.sin(x) * x, [(3,)]),
    "polynomial": (lambda m: lambda x: 3.0 * x ** 3 - 2.0 * x + 1.0, [(4,)]),
    "quotient": (lambda m: lambda x: m.exp(x) / (1.0 + x * x), [(3,)]),
    "tanh, log, cos": (lambda m: lambda x: m.tanh(x) - m.log(x) + m.cos(2 * x), [(3,)]),
    "sum and index": (lambda m: lambda x: m.sum(x * x[0]), [(3,)]),
    "where and sqrt": (lambda m: lambda x: m.sqrt(x) * m.where(x > 1.0, x, 0.5), [(3,)]),
    "two inputs, broadcast": (lambda m: lambda x, y: m.sin(x * y) + y, [(2, 3), (3,)]),
    "matmul": (lambda m: lambda a, b: m.tanh(a @ b), [(2, 3), (3, 2)]),
    "float32": (lambda m: lambda x: m.exp(x) * 2.0, [(3,), "float32"]),
}


def _args(shapes, seed):
    dtype = shapes[-1] if isinstance(shapes[-1], str) else "float64"
    rng = np.random.default_rng(seed)
    return tuple(rng.uniform(0.5, 2.0, s).astype(dtype) for s in shapes
                 if not isinstance(s, str))


@pytest.mark.parametrize("name", PROGRAMS)
@pytest.mark.parametrize("how", ["eager", "jit(jvp(f))", "jvp(jit(f))"])
def test_agrees_with_jax(name, how):
    make, shapes = PROGRAMS[name]
    primals, tangents = _args(shapes, 0), _args(shapes, 1)
    want = jax.jvp(make(jnp), primals, tangents)
    f, n = make(mnp), len(primals)
    if how == "eager":
        got = mj.jvp(f, primals, tangents)
    elif how == "jit(jvp(f))":
        got = mj.jit(lambda *a: mj.jvp(f, a[:n], a[n:]))(*primals, *tangents)
    else:
        got = mj.jvp(mj.jit(f), primals, tangents)
    for g, w in zip(got, want):
        assert np.asarray(g).dtype == np.asarray(w).dtype
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-9 if
                                   np.asarray(w).dtype == np.float64 else 1e-6)
    assert trace_state.stack == [trace_state.stack[0]]  # nothing left on the stack


def test_scalars_keep_their_weak_type_as_in_jax():
    got, want = mj.jvp(mnp.sin, (1.0,), (1.0,)), jax.jvp(jnp.sin, (1.0,), (1.0,))
    for g, w in zip(got, want):
        assert g.weak_type == w.weak_type and float(g) == pytest.approx(float(w))
    assert mj.jvp(lambda x: 3.0, (1.0,), (1.0,))[0] == 3.0  # a constant output's tangent is 0
    assert float(mj.jvp(lambda x: 3.0, (1.0,), (1.0,))[1]) == 0.0


def test_nested_jvp_and_pytrees():
    second = mj.jvp(lambda x: mj.jvp(mnp.sin, (x,), (1.0,))[1], (1.0,), (1.0,))
    want = jax.jvp(lambda x: jax.jvp(jnp.sin, (x,), (1.0,))[1], (1.0,), (1.0,))
    np.testing.assert_allclose(np.asarray(second), np.asarray(want))
    out, tangent = mj.jvp(lambda p: {"y": p["a"] * p["b"]}, ({"a": 2.0, "b": 3.0},),
                          ({"a": 1.0, "b": 0.0},))
    assert float(out["y"]) == 6.0 and float(tangent["y"]) == 3.0
    primal, tangent, aux = mj.jvp(lambda x: (x * x, "aux"), (2.0,), (1.0,), has_aux=True)
    assert (float(primal), float(tangent), aux) == (4.0, 4.0, "aux")


def test_python_control_flow_on_a_concrete_primal():
    """As in JAX: a comparison's output is its primal, so `if` works eagerly."""
    out = mj.jvp(lambda x: x if x > 0 else -x, (-1.0,), (1.0,))
    assert (float(out[0]), float(out[1])) == (1.0, -1.0)


def _text(jaxpr) -> str:
    return str(jaxpr).replace("add_any", "add")


def test_jit_of_jvp_records_the_tangent_equations_as_jax_does():
    def f(m):
        return lambda x: m.sin(x) * x

    x = np.ones(3)
    got = mj.make_jaxpr(lambda x, t: mj.jvp(f(mnp), (x,), (t,)))(x, x)
    want = jax.make_jaxpr(lambda x, t: jax.jvp(f(jnp), (x,), (t,)))(x, x)
    assert _text(got) == _text(want)  # the same seven equations, add for add_any
    assert [e.primitive.name for e in got.jaxpr.eqns] == ["sin", "cos", "mul", "mul", "mul",
                                                          "mul", "add"]
    # jvp(jit(f)) inlines the jitted body: the same equations, no jit equation
    inlined = mj.make_jaxpr(lambda x, t: mj.jvp(mj.jit(f(mnp)), (x,), (t,)))(x, x)
    assert str(inlined) == str(got)


def test_the_rules_bind_on_the_trace_below():
    stacks = []

    def f(x):
        stacks.append([type(t).__name__ for t in trace_state.stack])
        return x * 2.0

    mj.make_jaxpr(lambda x: mj.jvp(f, (x,), (x,)))(np.ones(2))
    mj.jvp(mj.jit(f), (np.ones(2),), (np.ones(2),))
    assert stacks == [["EvalTrace", "JaxprTrace", "JVPTrace"],
                      ["EvalTrace", "JVPTrace", "JaxprTrace"]]


@pytest.mark.parametrize("call, error, message", [
    (lambda: mj.jvp(mnp.sin, 1.0, 1.0), TypeError,
     "primal and tangent arguments to jvp must be tuples or lists; found float and float"),
    (lambda: mj.jvp("sin", (1.0,), (1.0,)), TypeError, "Expected a callable value, got 'sin'"),
    (lambda: mj.jvp(mnp.sin, (1.0,), (1.0, 2.0)), TypeError, "same tree structure"),
    (lambda: mj.jvp(mnp.sin, (1.0,), (np.float32(1.0),)), TypeError,
     "dtypes must be equal. Got primal dtype float64 and tangent dtype float32 at primals"),
    (lambda: mj.jvp(mnp.sin, (np.ones(3),), (np.ones(2),)), ValueError,
     r"different primal and tangent shapes; Got primal shape \(3,\) and tangent shape as "
     r"\(2,\)"),
    (lambda: mj.jvp(lambda x: x * 2, (1,), (1,)), TypeError,
     "has dtype int64; minijit's jvp differentiates floating-point inputs only"),
    (lambda: mj.jvp(mnp.floor, (1.5,), (1.0,)), NotImplementedError,
     "Differentiation rule for 'floor' not implemented: minijit's jvp has rules for add, "),
    (lambda: mj.jvp(lambda x: np.asarray(x), (1.0,), (1.0,)),
     errors.TracerArrayConversionError, "NumPy would drop its tangent"),
    (lambda: mj.jvp(lambda x: "no array", (1.0,), (1.0,)), TypeError,
     "jvp: an output of the function is a str"),
])
def test_bad_arguments_get_clear_errors(call, error, message):
    with pytest.raises(error, match=message):
        call()
    assert len(trace_state.stack) == 1


def test_a_leaked_jvp_tracer_says_so():
    leaked = []
    mj.jvp(lambda x: leaked.append(x) or x, (1.0,), (1.0,))
    with pytest.raises(errors.UnexpectedTracerError, match="used after jvp returned"):
        mnp.sin(leaked[0])
    with pytest.raises(errors.UnexpectedTracerError, match="reads it from its closure"):
        mj.jvp(lambda x: mj.jit(lambda y: y * x)(x), (2.0,), (1.0,))
