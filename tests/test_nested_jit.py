"""A jitted function called while another is traced is one `jit` equation, as in JAX.

The equation holds the callee's jaxpr (`minijit/jit_call.py`); `eval_jaxpr` runs it as is, and
the optimizer's first pass, `inline_jit`, flattens it before anything else sees it. Checked
here: the printed layout (measured against JAX 0.10.2 with `jax_enable_x64`), every program
agreeing with NumPy and with its un-nested self on every backend, the pass's guarantees, the
callee's cache, `debug.print` inside a callee, and `disable_jit`.
"""

from __future__ import annotations

import functools
import textwrap

import numpy as np
import pytest

import minijit as mj
import minijit.numpy as mnp
from minijit import backends, lax
from minijit.ir import JaxprTypeError, subjaxprs, typecheck_jaxpr
from minijit.jit_call import jit_p
from minijit.passes import PIPELINE, inline_jit, run_passes

X = np.linspace(-1.0, 2.0, 3)


def golden(text: str) -> str:
    return textwrap.dedent(text).strip("\n")


def walk(jaxpr):
    for e in jaxpr.eqns:
        yield e
        for sub in subjaxprs(e):
            yield from walk(sub)


def n_calls(jaxpr) -> int:
    return sum(e.primitive is jit_p for e in walk(jaxpr))


def no_jit(f=None, **_):
    """Stands in for `mj.jit` to build the un-nested twin of a program (options ignored)."""
    return f if f is not None else no_jit


@mj.jit
def inner(x):
    return mnp.sin(x) * 2.0


# --------------------------------------------------------------------------- printing

# Each string is exactly what `jax.make_jaxpr` prints for the same program (jnp for mnp,
# jax.jit for mj.jit; JAX 0.10.2, x64), except where a comment says otherwise. JAX names the
# callee's inputs and outputs after the caller's atoms (`suggest_same_var_names`), and prints
# `name` first.
PRINTED = {
    "one_call": (
        lambda x: inner(x) + 1.0, (X,),
        """
        { lambda ; a:f64[3]. let
            b:f64[3] = jit[
              name=inner
              jaxpr={ lambda ; a:f64[3]. let
                  c:f64[3] = sin a
                  b:f64[3] = mul c 2.0:f64[]
                in (b,) }
            ] a
            d:f64[3] = add b 1.0:f64[]
          in (d,) }
        """,
    ),
    "make_jaxpr_of_a_jitted_function": (
        inner, (X,),
        """
        { lambda ; a:f64[3]. let
            b:f64[3] = jit[
              name=inner
              jaxpr={ lambda ; a:f64[3]. let
                  c:f64[3] = sin a
                  b:f64[3] = mul c 2.0:f64[]
                in (b,) }
            ] a
          in (b,) }
        """,
    ),
    "call_inside_a_call": (
        lambda x, y: (lambda ab: ab[0] - ab[1])(_two_outputs(x, y)), (X, X),
        """
        { lambda ; a:f64[3] b:f64[3]. let
            c:f64[3] d:f64[3] = jit[
              name=_two_outputs
              jaxpr={ lambda ; a:f64[3] b:f64[3]. let
                  e:f64[3] = jit[
                    name=inner
                    jaxpr={ lambda ; a:f64[3]. let
                        f:f64[3] = sin a
                        e:f64[3] = mul f 2.0:f64[]
                      in (e,) }
                  ] a
                  c:f64[3] = add e b
                  d:f64[3] = mul a b
                in (c, d) }
            ] a b
            g:f64[3] = sub c d
          in (g,) }
        """,
    ),
    "static_argument": (
        lambda x: _squarings(x, 2), (X,),
        """
        { lambda ; a:f64[3]. let
            b:f64[3] = jit[
              name=_squarings
              jaxpr={ lambda ; a:f64[3]. let
                  c:f64[3] = mul a a
                  b:f64[3] = mul c c
                in (b,) }
            ] a
          in (b,) }
        """,
    ),
    # A leaf passed twice lends its name once; a returned input takes the output's name.
    "pytree_argument_passed_twice": (
        lambda a, b: _tree({"a": a, "b": (b, a)}), (X, X),
        """
        { lambda ; a:f64[3] b:f64[3]. let
            c:f64[3] d:f64[3] = jit[
              name=_tree
              jaxpr={ lambda ; a:f64[3] b:f64[3] d:f64[3]. let
                  c:f64[3] = add a b
                in (c, d) }
            ] a b a
          in (c, d) }
        """,
    ),
    # A captured outer value comes first among the operands, as in JAX; the short body fits
    # on one line, so it prints on one, as JAX's does (the text is JAX's, verbatim).
    "closure_over_an_outer_tracer": (
        lambda x: mj.jit(lambda y: y + x)(x * 2.0), (X,),
        """
        { lambda ; a:f64[3]. let
            b:f64[3] = mul a 2.0:f64[]
            c:f64[3] = jit[
              name=<lambda>
              jaxpr={ lambda ; a:f64[3] b:f64[3]. let c:f64[3] = add b a in (c,) }
            ] a b
          in (c,) }
        """,
    ),
    "inside_a_cond_branch": (
        lambda p, x: lax.cond(p, inner, lambda v: v, x), (True, X),
        """
        { lambda ; a:bool[] b:f64[3]. let
            c:i32[] = convert_element_type[new_dtype=int32 weak_type=False] a
            d:f64[3] = cond[
              branches=(
                { lambda ; e:f64[3]. let  in (e,) }
                { lambda ; f:f64[3]. let
                    g:f64[3] = jit[
                      name=inner
                      jaxpr={ lambda ; f:f64[3]. let
                          h:f64[3] = sin f
                          g:f64[3] = mul h 2.0:f64[]
                        in (g,) }
                    ] f
                  in (g,) }
              )
            ] c b
          in (d,) }
        """,
    ),
}


@mj.jit
def _two_outputs(x, y):
    return inner(x) + y, x * y


@functools.partial(mj.jit, static_argnums=1)
def _squarings(x, n):
    for _ in range(n):
        x = x * x
    return x


@mj.jit
def _tree(p):
    return {"s": p["a"] + p["b"][0], "t": p["b"][1]}


@pytest.mark.parametrize("name", list(PRINTED))
def test_printed_as_jax_prints_it(name):
    f, args, expected = PRINTED[name]
    assert str(mj.make_jaxpr(f)(*args)) == golden(expected)


def test_a_numpy_constant_captured_by_the_callee_is_an_operand():
    """JAX keeps it in the callee as a constvar (`{ lambda c:f64[3]; a:f64[3]. ...}`);
    minijit's sub-jaxprs never have constvars, so it is the caller's constvar, passed in."""
    w = np.arange(3.0)
    text = str(mj.make_jaxpr(lambda x: mj.jit(lambda v: v + w)(x))(X))
    assert text.splitlines()[0] == "{ lambda a:f64[3]; b:f64[3]. let"
    assert "      jaxpr={ lambda ; a:f64[3] b:f64[3]. let c:f64[3] = add b a in (c,) }" in text
    assert text.splitlines()[-2] == "    ] a b"


# --------------------------------------------------------------------------- programs

def _nested_twice(jit):
    @jit
    def square(x):
        return x * x

    @jit
    def poly(x):
        return square(x) + square(x + 1.0)

    return lambda x: poly(x) * 0.5, lambda x: (x * x + (x + 1.0) ** 2) * 0.5


def _static_and_keywords(jit):
    @functools.partial(jit, static_argnames="n")
    def powered(x, *, n, shift):
        out = mnp.ones_like(x)
        for _ in range(n):  # a static n: unrolled
            out = out * x
        return out + shift

    return (lambda x: powered(x, n=3, shift=2.0) - powered(x, n=2, shift=x),
            lambda x: x ** 3 + 2.0 - (x ** 2 + x))


def _pytrees(jit):
    @jit
    def affine(params, x):
        return {"y": params["w"] * x + params["b"], "parts": (params["w"], x)}

    def f(x):
        out = affine({"w": 2.0, "b": x[::-1]}, x)
        return out["y"] + out["parts"][0] * out["parts"][1]

    return f, lambda x: 2.0 * x + x[::-1] + 2.0 * x


def _in_fori_loop_and_cond(jit):
    @jit
    def newton(y, a):
        return 0.5 * (y + a / y)

    def f(a):
        y = lax.fori_loop(0, 5, lambda i, y: newton(y, a), a + 1.0)
        return lax.cond(y.sum() > 0, lambda v: newton(v, a), lambda v: -v, y)

    def reference(a):
        y = a + 1.0
        for _ in range(6):
            y = 0.5 * (y + a / y)
        return y

    return f, reference


def _three_deep(jit):
    @jit
    def c(x):
        return x * x

    @jit
    def b(x):
        return c(x) + 1.0

    @jit
    def a(x):
        return b(x) * 2.0

    return a, lambda x: (x * x + 1.0) * 2.0


PROGRAMS = {
    "nested_twice": _nested_twice,
    "static_and_keywords": _static_and_keywords,
    "pytrees": _pytrees,
    "in_fori_loop_and_cond": _in_fori_loop_and_cond,
    "three_deep": _three_deep,
}
ARG = np.array([0.5, 1.0, 2.0, 3.0])


@pytest.mark.parametrize("name", list(PROGRAMS))
def test_eval_jaxpr_runs_the_calls_as_traced(name):
    f, reference = PROGRAMS[name](mj.jit)
    closed = mj.make_jaxpr(f)(ARG)
    assert n_calls(closed.jaxpr) >= 1
    typecheck_jaxpr(closed.jaxpr)
    (out,) = mj.eval_jaxpr(closed.jaxpr, closed.consts, ARG)  # the impl rule of `jit`
    np.testing.assert_allclose(out, reference(ARG), rtol=1e-13)


@pytest.mark.parametrize("backend", backends.DISTINCT_BACKENDS)
@pytest.mark.parametrize("name", list(PROGRAMS))
def test_every_backend_agrees_with_numpy_and_the_unnested_program(name, backend):
    nested, reference = PROGRAMS[name](mj.jit)
    flat, _ = PROGRAMS[name](no_jit)
    got = mj.jit(nested, backend=backend)(ARG)
    np.testing.assert_allclose(got, reference(ARG), rtol=1e-13)
    np.testing.assert_array_equal(got, mj.jit(flat, backend=backend)(ARG))


@pytest.mark.parametrize("name", list(PROGRAMS))
def test_the_optimized_program_is_the_unnested_one(name):
    """After inlining, the pipeline cannot tell that there were calls."""
    nested, _ = PROGRAMS[name](mj.jit)
    flat, _ = PROGRAMS[name](no_jit)
    optimized = run_passes(mj.make_jaxpr(nested)(ARG))
    assert n_calls(optimized.jaxpr) == 0
    assert str(optimized) == str(run_passes(mj.make_jaxpr(flat)(ARG)))


# --------------------------------------------------------------------------- inline_jit


@pytest.mark.parametrize("name", list(PROGRAMS))
def test_inline_jit_flattens_every_call_typechecks_and_is_idempotent(name):
    f, reference = PROGRAMS[name](mj.jit)
    closed = mj.make_jaxpr(f)(ARG)
    before = str(closed)
    out = inline_jit(closed)
    assert str(closed) == before  # the IR is immutable
    assert n_calls(out.jaxpr) == 0  # at every depth (loop bodies, branches)
    typecheck_jaxpr(out.jaxpr)
    (got,) = mj.eval_jaxpr(out.jaxpr, out.consts, ARG)
    np.testing.assert_allclose(got, reference(ARG), rtol=1e-13)
    assert inline_jit(out) is out  # nothing left to do: the very same program


def test_inline_jit_gives_each_inlined_call_fresh_variables():
    """Two calls of one body define its values twice over; each copy gets its own Vars."""
    closed = mj.make_jaxpr(lambda x: inner(x) + inner(x))(X)
    out = inline_jit(closed).jaxpr
    outvars = [v for e in out.eqns for v in e.outvars]
    assert len({id(v) for v in outvars}) == len(outvars) == 5
    assert str(out) == golden("""
        { lambda ; a:f64[3]. let
            b:f64[3] = sin a
            c:f64[3] = mul b 2.0:f64[]
            d:f64[3] = sin a
            e:f64[3] = mul d 2.0:f64[]
            f:f64[3] = add c e
          in (f,) }
        """)


def test_inline_jit_is_first_and_the_backend_never_sees_a_call():
    assert PIPELINE[0] is inline_jit
    jitted = mj.jit(lambda x: inner(x) * 3.0, backend="numba")
    assert "jit" not in {e.primitive.name for e in walk(jitted.lower(X).jaxpr.jaxpr)}
    np.testing.assert_allclose(jitted(X), np.sin(X) * 6.0)


def test_a_call_with_the_wrong_operands_does_not_typecheck():
    closed = mj.make_jaxpr(lambda x: inner(x))(X)
    call = closed.jaxpr.eqns[0]
    other = mj.make_jaxpr(lambda x: inner(x))(np.ones(4)).jaxpr.eqns[0]
    bad = mj.Jaxpr(closed.jaxpr.constvars, closed.jaxpr.invars,
                   (mj.Eqn(jit_p, call.invars, call.outvars, other.params),),
                   closed.jaxpr.outvars)
    with pytest.raises(JaxprTypeError, match="jit of inner: operands do not match"):
        typecheck_jaxpr(bad)


# --------------------------------------------------------------------------- effects


@mj.jit
def _noisy(x):
    mj.debug.print("noisy sees {x}", x=x)
    return x + 1.0


@pytest.mark.parametrize("backend", backends.DISTINCT_BACKENDS)
def test_debug_print_in_a_callee_prints_on_every_call(backend, capsys):
    @functools.partial(mj.jit, backend=backend)
    def outer(x):
        _noisy(x)  # its output is unused: the call stays for its effect
        return _noisy(x * 2.0) * 3.0

    for _ in range(2):
        np.testing.assert_allclose(outer(np.ones(2)), [9.0, 9.0])
    assert capsys.readouterr().out.splitlines() == [
        "noisy sees [1. 1.]", "noisy sees [2. 2.]"] * 2
    assert outer.trace_count == 1


@pytest.mark.parametrize("p", [p for p in PIPELINE if p is not inline_jit],
                         ids=lambda p: p.__name__)
def test_each_pass_alone_keeps_a_call_and_its_effects(p, capsys):
    """Before inlining, the other passes see a call as one opaque equation: `dce` keeps one
    whose outputs are unused if its body has effects, and `fold_constants` does not fold it
    even when every operand is known."""
    closed = mj.make_jaxpr(lambda x: (_noisy(np.ones(2)), _noisy(x))[1] * 2.0)(np.zeros(2))
    out = p(closed)
    assert n_calls(out.jaxpr) == 2
    typecheck_jaxpr(out.jaxpr)
    (got,) = mj.eval_jaxpr(out.jaxpr, out.consts, np.zeros(2))
    np.testing.assert_array_equal(got, [2.0, 2.0])
    assert capsys.readouterr().out.splitlines() == ["noisy sees [1. 1.]", "noisy sees [0. 0.]"]


def test_a_call_without_effects_whose_outputs_are_unused_is_dead_code():
    closed = mj.make_jaxpr(lambda x: (inner(x), x * 2.0)[1])(X)
    assert n_calls(closed.jaxpr) == 1
    assert [e.primitive.name for e in run_passes(closed).jaxpr.eqns] == ["mul"]


# --------------------------------------------------------------------------- the callee's cache


def test_the_callee_is_traced_but_never_compiled_on_its_own():
    """Decided: a call during tracing traces the callee into the caller's program at each call
    site and leaves the callee's cache alone (nothing to compile: the caller's compile covers
    it). JAX keeps the callee's traced jaxpr per signature, so there a Python `print` in it
    shows once; `_cache_size()` is 0 in both until the callee is called on its own."""
    traced = []

    @mj.jit
    def callee(x):
        traced.append(x.shape)  # runs while tracing only
        return x * 2.0

    @mj.jit
    def caller(x):
        return callee(x) + callee(x + 1.0)

    caller(X)
    caller(X)  # a cache hit: nothing is traced again
    assert traced == [(3,), (3,)]  # one trace per call site
    assert caller.trace_count == 1 and caller._cache_size() == 1
    assert callee.trace_count == 0 and callee._cache_size() == 0
    caller(np.ones(4))  # a new signature for the caller traces both call sites again
    assert traced == [(3,), (3,), (4,), (4,)]
    np.testing.assert_array_equal(callee(X), X * 2.0)  # called on its own, it compiles
    assert callee.trace_count == 1 and callee._cache_size() == 1


def test_disable_jit_runs_everything_eagerly_and_make_jaxpr_inlines():
    """As in JAX: under `disable_jit` a jitted function is a plain function, so a trace sees
    its equations, not a call."""
    seen = []

    @mj.jit
    def callee(x):
        seen.append(type(x).__name__)
        return mnp.sin(x) * 2.0

    with mj.disable_jit():
        np.testing.assert_allclose(mj.jit(lambda x: callee(x) + 1.0)(X), np.sin(X) * 2 + 1)
        closed = mj.make_jaxpr(lambda x: callee(x) + 1.0)(X)
    assert seen[0] == "Array"  # a value, not a tracer
    assert n_calls(closed.jaxpr) == 0
    assert [e.primitive.name for e in closed.jaxpr.eqns] == ["sin", "mul", "add"]


def test_a_tracer_error_in_the_callee_names_it():
    @mj.jit
    def branchy(x):
        return x if x.sum() > 0 else -x

    with pytest.raises(mj.errors.TracerBoolConversionError, match="`x` of `branchy`"):
        mj.jit(lambda x: branchy(x) * 2.0)(X)
