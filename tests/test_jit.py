"""The `jit` wrapper: cache hits and retraces, static arguments, decorator forms, pytrees,
closures, cache-miss explanations and logs, disable_jit, AOT stages, donation, failures.

Retraces are counted two ways: `jf.trace_count` and a Python side effect in the function
body (it runs only while tracing), so a test fails if either one lies.
"""

from __future__ import annotations

import collections
import functools
import logging

import numpy as np
import pytest

import minijit as mj
import minijit.numpy as mnp
from minijit import Array


class Counted:
    """`Counted(fn)` counts how often Python runs `fn`'s body (once per trace under jit)."""

    def __init__(self, fn):
        self.fn, self.calls = fn, 0
        functools.update_wrapper(self, fn)

    def __call__(self, *args, **kwargs):
        self.calls += 1
        return self.fn(*args, **kwargs)


def counted_jit(fn, **options):
    """A jitted function and the counter of its traces."""
    body = Counted(fn)
    return mj.jit(body, **options), body


def assert_traces(jf, body, n):
    assert jf.trace_count == n, f"trace_count {jf.trace_count}, expected {n}"
    assert body.calls == n, f"the Python body ran {body.calls} times, expected {n}"


@pytest.fixture
def config_restored():
    """Tests may `mj.config.update(...)`; put every option back afterwards."""
    saved = dict(mj.config._values)
    yield mj.config
    mj.config._values.clear()
    mj.config._values.update(saved)
    mj.config._refresh()


# --------------------------------------------------------------------------- cache hits


def test_same_shape_and_dtype_hit_the_cache():
    jf, body = counted_jit(lambda x, y: x * y + 1)
    for _ in range(3):
        np.testing.assert_allclose(jf(np.full(3, 2.0), np.arange(3.0)), [1.0, 3.0, 5.0])
    jf(np.zeros(3), np.ones(3))  # other values, same types
    assert_traces(jf, body, 1)
    assert jf._cache_size() == 1


def test_python_scalars_of_the_same_kind_hit():
    jf, body = counted_jit(lambda x: x * 2)
    assert jf(1.5) == 3.0 and jf(-7.25) == -14.5
    assert_traces(jf, body, 1)


@pytest.mark.parametrize("first, second", [
    (np.ones(3), np.ones(4)),  # shape
    (np.ones((2, 3)), np.ones((3, 2))),  # shape, same size
    (np.ones(3), np.ones(3, np.float32)),  # dtype
    (np.ones(3, np.int64), np.ones(3)),  # dtype kind
    (1.0, np.float64(1.0)),  # weak Python float vs strong float64 scalar
    (1.0, np.array(1.0)),  # weak Python float vs strong 0-d array
    (1, 1.0),  # Python int vs Python float
    (True, 1),  # bool vs int
])
def test_new_abstract_value_retraces(first, second):
    jf, body = counted_jit(lambda x: x + 1)
    jf(first)
    jf(first)
    assert_traces(jf, body, 1)
    jf(second)
    assert_traces(jf, body, 2)
    jf(first)  # both entries stay cached
    jf(second)
    assert_traces(jf, body, 2)
    assert jf._cache_size() == 2


def test_numpy_scalar_and_0d_array_share_an_entry():
    jf, body = counted_jit(lambda x: x + 1)
    jf(np.float64(1.0))
    jf(np.array(2.0))
    assert_traces(jf, body, 1)


def test_weak_type_decides_the_result_dtype():
    jf = mj.jit(lambda x, y: x * y)
    assert jf(np.ones(2, np.float32), 2.0).dtype == np.float32  # weak scalar adopts f32
    assert jf(np.ones(2, np.float32), np.float64(2.0)).dtype == np.float64  # strong promotes


def test_static_value_retraces_same_value_hits():
    jf, body = counted_jit(lambda x, n: x * n, static_argnums=1)
    jf(np.ones(2), 3)
    jf(np.ones(2), 3)
    assert_traces(jf, body, 1)
    np.testing.assert_array_equal(jf(np.ones(2), 4), [4.0, 4.0])
    assert_traces(jf, body, 2)
    jf(np.ones(2), 3)
    assert_traces(jf, body, 2)


def test_static_values_are_compared_by_equality_not_identity():
    jf, body = counted_jit(lambda x, shape: mnp.reshape(x, shape), static_argnums=1)
    jf(np.ones(6), (2, 3))
    jf(np.ones(6), tuple([2, 3]))  # a different but equal tuple
    assert_traces(jf, body, 1)


@pytest.mark.parametrize("first, second", [
    ((np.ones(2), np.ones(2)), [np.ones(2), np.ones(2)]),  # tuple vs list
    ({"a": np.ones(2)}, {"b": np.ones(2)}),  # dict keys
    ((np.ones(2),), (np.ones(2), np.ones(2))),  # length
    ((np.ones(2), None), (np.ones(2), np.ones(2))),  # None vs leaf
])
def test_new_pytree_structure_retraces(first, second):
    jf, body = counted_jit(lambda t: mnp.sum(mnp.stack([v for v in mj.tree_util.tree_leaves(t)])))
    jf(first)
    jf(first)
    assert_traces(jf, body, 1)
    jf(second)
    assert_traces(jf, body, 2)


def test_jit_twice_on_one_function_shares_the_cache():
    body = Counted(lambda x: x + 1)
    mj.jit(body)(np.ones(2))
    mj.jit(body)(np.ones(2))
    assert body.calls == 1


def test_different_options_do_not_share_the_cache():
    body = Counted(lambda x, n: x * n)
    mj.jit(body, static_argnums=1)(np.ones(2), 2)
    mj.jit(body)(np.ones(2), 2)
    assert body.calls == 2


# --------------------------------------------------------------------------- static arguments


def scale(x, mode, factor=2.0):
    if mode == "double":  # a str: only possible if `mode` is static
        return x * factor
    return x


@pytest.mark.parametrize("options", [
    dict(static_argnums=1),
    dict(static_argnums=(1,)),
    dict(static_argnums=-2),
    dict(static_argnames="mode"),
    dict(static_argnames=("mode",)),
])
@pytest.mark.parametrize("how", ["positional", "keyword"])
def test_static_argnums_and_argnames_imply_each_other(options, how):
    jf = mj.jit(scale, **options)
    x = np.ones(2)
    out = jf(x, "double") if how == "positional" else jf(x, mode="double")
    np.testing.assert_array_equal(out, [2.0, 2.0])
    out = jf(x, "same") if how == "positional" else jf(x, mode="same")
    np.testing.assert_array_equal(out, [1.0, 1.0])
    assert jf.spec.static_argnums == {1} and jf.spec.static_argnames == {"mode"}


def test_static_passed_by_keyword_then_by_position_retraces_and_says_why():
    # As in JAX, the cache key records whether an argument came by keyword.
    jf, body = counted_jit(scale, static_argnums=1)
    jf(np.ones(2), "double")
    jf(np.ones(2), mode="double")
    assert_traces(jf, body, 2)
    assert "* at mode (static), now passed by keyword and before by position" in (
        jf.cache_misses[-1])
    jf(np.ones(2), "double")
    jf(np.ones(2), mode="double")
    assert_traces(jf, body, 2)


def test_default_of_a_static_parameter_is_baked_in():
    jf = mj.jit(scale, static_argnums=1)
    np.testing.assert_array_equal(jf(np.ones(2), "double"), [2.0, 2.0])
    np.testing.assert_array_equal(jf(np.ones(2), "double", 3.0), [3.0, 3.0])  # dynamic factor


def test_static_argnames_on_a_keyword_only_parameter():
    def f(x, *, n):
        return mnp.stack([x] * n)

    jf, body = counted_jit(f, static_argnames="n")
    assert jf(np.ones(2), n=3).shape == (3, 2)
    assert jf(np.ones(2), n=3).shape == (3, 2)
    assert jf(np.ones(2), n=4).shape == (4, 2)
    assert_traces(jf, body, 2)


# --------------------------------------------------------------------------- decorator forms


def _add_n(x, n):
    return x + sum(range(n))  # range(n) needs a static n


def test_decorator_forms():
    forms = {}

    @mj.jit
    def plain(x):
        return x * 3

    forms["@jit"] = lambda: plain(np.ones(2)) / 3

    called = mj.jit(_add_n, static_argnums=1)
    forms["jit(f, static_argnums=1)"] = lambda: called(np.ones(2), 1)

    @mj.jit(static_argnums=1)
    def with_options(x, n):
        return _add_n(x, n)

    forms["@jit(static_argnums=1)"] = lambda: with_options(np.ones(2), 1)

    @functools.partial(mj.jit, static_argnames="n")
    def with_partial(x, n):
        return _add_n(x, n)

    forms["@partial(jit, static_argnames='n')"] = lambda: with_partial(np.ones(2), n=1)

    for name, call in forms.items():
        out = call()
        assert isinstance(out, Array), name
        np.testing.assert_array_equal(out, [1.0, 1.0], err_msg=name)
    for jf in (plain, called, with_options, with_partial):
        assert jf.trace_count == 1


def test_decorator_keeps_name_and_doc():
    @mj.jit
    def documented(x):
        """Doubles x."""
        return x * 2

    assert documented.__name__ == "documented"
    assert documented.__doc__ == "Doubles x."
    assert "documented" in repr(documented)


def test_jit_of_a_jitted_function_keeps_the_inner_options():
    """As in JAX: the outer options apply to the outer call; the inner jitted function is
    called while the outer one is traced, so it is staged with its own options."""
    @mj.jit
    def inner(x, n):
        return _add_n(x, n)

    outer = mj.jit(inner, static_argnames="n")
    assert outer.spec.static_argnames == {"n"}
    assert inner.spec.static_argnames == frozenset()  # the inner wrapper is untouched
    assert outer._cache is not inner._cache
    # inner's `n` is traced (JAX raises TracerIntegerConversionError here too)
    with pytest.raises(mj.errors.TracerIntegerConversionError, match="`n` of `inner`"):
        outer(np.ones(2), 3)
    both = mj.jit(mj.jit(_add_n, static_argnames="n"), static_argnames="n")
    np.testing.assert_array_equal(both(np.ones(2), 3), [4.0, 4.0])


# --------------------------------------------------------------------------- pytrees and kwargs

Params = collections.namedtuple("Params", "w b")


def test_pytrees_in_and_out():
    @mj.jit
    def f(params, batch, extras):
        y = batch["x"] @ params.w + params.b
        return {"y": y, "parts": [params.b, (extras[0] * 2, None)], "p": Params(y.sum(), 1)}

    params = Params(np.eye(2), np.array([1.0, -1.0]))
    batch = {"x": np.array([[1.0, 2.0]]), "unused": np.zeros(1)}
    out = f(params, batch, [3.0])
    assert set(out) == {"y", "parts", "p"}
    np.testing.assert_array_equal(out["y"], [[2.0, 1.0]])
    assert isinstance(out["parts"], list) and out["parts"][1][1] is None
    assert isinstance(out["parts"][1], tuple) and out["parts"][1][0] == 6.0
    assert type(out["p"]) is Params and out["p"].w == 3.0 and out["p"].b == 1
    assert all(isinstance(leaf, Array) for leaf in mj.tree_util.tree_leaves(out))
    # the same structure hits; dict insertion order does not matter
    f(params, {"unused": np.ones(1), "x": np.array([[0.0, 0.0]])}, [1.0])
    assert f.trace_count == 1


def test_pytree_leaves_are_named_in_the_jaxpr_signature(caplog, config_restored):
    mj.config.update("log_compiles", True)
    with caplog.at_level(logging.WARNING, logger="minijit"):
        mj.jit(lambda p, xs: p["w"] * xs[1])({"w": 1.0}, (np.ones(2), np.ones(3)))
    assert "p['w']: f64[]" in caplog.text and "xs[1]: f64[3]" in caplog.text


def test_keyword_arguments():
    @mj.jit
    def f(x, y, *, scale=1.0, shift):
        return (x - y) * scale + shift

    x, y = np.ones(2) * 3, np.ones(2)
    np.testing.assert_array_equal(f(x, y, shift=1.0), [3.0, 3.0])
    np.testing.assert_array_equal(f(x, y=y, shift=1.0, scale=2.0), [5.0, 5.0])
    np.testing.assert_array_equal(f(x, shift=1.0, scale=2.0, y=y), [5.0, 5.0])
    # keyword order does not matter: the last two calls share an entry
    assert f.trace_count == 2
    # passing `x` by keyword instead of by position is another cache key, as in JAX
    np.testing.assert_array_equal(f(y=y, x=x, scale=2.0, shift=1.0), [5.0, 5.0])
    assert f.trace_count == 3


def test_varargs():
    @mj.jit
    def total(*xs):
        return sum(xs)

    assert total(1.0, 2.0, 3.0) == 6.0
    np.testing.assert_array_equal(total(np.ones(2), 1.0), [2.0, 2.0])
    assert total.trace_count == 2


# --------------------------------------------------------------------------- nested jit


def test_nested_jit():
    inner = mj.jit(lambda x: mnp.sin(x) * 2)

    @mj.jit
    def outer(x):
        return inner(x) + inner(x + 1)

    x = np.linspace(0, 1, 4)
    np.testing.assert_allclose(outer(x), 2 * np.sin(x) + 2 * np.sin(x + 1))
    assert outer.trace_count == 1
    text = str(outer.trace(x).jaxpr)
    assert text.count("sin") == 2  # both inner calls appear in the outer program
    assert text.count("= jit[") == 2  # each as one `jit` equation (tests/test_nested_jit.py)
    assert inner.trace_count == 0  # staged in the outer program: never compiled on its own
    np.testing.assert_allclose(inner(x), 2 * np.sin(x))  # the inner one still works alone


def test_nested_jit_with_static_argument_of_the_inner_function():
    inner = mj.jit(_add_n, static_argnums=1)
    outer = mj.jit(lambda x: inner(x, 2) * 2)
    np.testing.assert_array_equal(outer(np.zeros(2)), [2.0, 2.0])


# --------------------------------------------------------------------------- closures

_GLOBAL_SCALE = 2.0


def _uses_global(x):
    return x * _GLOBAL_SCALE


def test_closure_over_numpy_array_becomes_a_constant():
    w = np.arange(3.0)
    jf = mj.jit(lambda x: x * w)
    np.testing.assert_array_equal(jf(np.ones(3)), [0.0, 1.0, 2.0])
    closed = jf.trace(np.ones(3)).jaxpr
    assert len(closed.consts) == 1 and np.array_equal(closed.consts[0], w)
    assert str(closed).startswith("{ lambda a:f64[3]; b:f64[3]. let")


def test_closure_over_python_scalar_becomes_a_literal():
    k = 3.0
    text = str(mj.jit(lambda x: x * k).trace(np.ones(2)).jaxpr)
    assert "mul a 3.0:f64[]" in text
    assert text.startswith("{ lambda ; a:f64[2]. let")


def test_changed_global_is_not_seen_after_the_first_trace(monkeypatch):
    jf = mj.jit(_uses_global)
    np.testing.assert_array_equal(jf(np.ones(2)), [2.0, 2.0])
    monkeypatch.setattr(__import__(__name__), "_GLOBAL_SCALE", 10.0)
    np.testing.assert_array_equal(jf(np.ones(2)), [2.0, 2.0])  # baked in, as in JAX
    np.testing.assert_array_equal(jf(np.ones(3)), [10.0] * 3)  # a retrace sees the new value
    np.testing.assert_array_equal(jf(np.ones(2)), [2.0, 2.0])  # the old entry is unchanged


# --------------------------------------------------------------------------- cache misses


def test_cache_miss_explanations():
    def f(x, n):
        return x * n

    jf = mj.jit(f, static_argnames="n")
    jf(np.ones(3), 2)
    jf(np.ones(4), 2)
    jf(np.ones(4), 5)
    jf(np.ones(4), 5)  # a hit: no explanation
    first, shape, static = jf.cache_misses
    assert len(jf.cache_misses) == jf.trace_count == 3
    assert "TRACING CACHE MISS" in first and "`f`" in first and "first call" in first
    assert "test_jit.py" in first  # where the call was made
    assert "* at x, now f64[4] and before f64[3]" in shape
    assert "* at n (static), now 5 and before 2" in static
    assert "at x," not in static  # the closest previous key has the same shape


def test_cache_miss_explains_weak_types_and_dtypes():
    jf = mj.jit(lambda x: x)
    jf(1.0)
    jf(np.float64(1.0))
    jf(np.float32(1.0))
    assert "weakly typed" in jf.cache_misses[1]
    assert "* at x, now f32[] and before f64[]" in jf.cache_misses[2]


def test_cache_miss_explains_pytree_structure():
    jf = mj.jit(lambda t: t[0])
    jf((np.ones(2),))
    jf([np.ones(2)])
    assert "structure" in jf.cache_misses[1]
    assert "[*]" in jf.cache_misses[1] and "(*,)" in jf.cache_misses[1]


def test_lambda_recreated_in_a_loop_is_a_never_seen_function():
    explanations = []
    for _ in range(3):
        jf = mj.jit(lambda x: x * 2)  # a new function object every time: an empty cache
        jf(np.ones(2))
        explanations.append(jf.cache_misses[-1])
    assert "never seen function" not in explanations[0]
    for e in explanations[1:]:
        assert "never seen function" in e and "test_jit.py" in e


@pytest.mark.parametrize("prefix", ["", "jax_"])
def test_explain_cache_misses_logs(prefix, caplog, config_restored):
    mj.config.update(prefix + "explain_cache_misses", True)
    jf = mj.jit(lambda x: x + 1)
    with caplog.at_level(logging.WARNING, logger="minijit"):
        jf(np.ones(3))
        jf(np.ones(4))
        jf(np.ones(4))
    records = [r for r in caplog.records if r.name == "minijit"]
    assert len(records) == 2
    assert "* at x, now f64[4] and before f64[3]" in records[1].getMessage()


@pytest.mark.parametrize("last, line", [(np.ones(3, np.float32), "now f32[3] and before f64[3]"),
                                        (np.ones(4, np.float32), "now f32[4] and before f64[3]")])
def test_explain_cache_misses_names_the_key_jax_names(last, line, caplog, config_restored):
    """Two earlier keys, f64[3] then f64[4], each one part away from the new one: JAX 0.10.2
    names the one whose explanation's text sorts first, and so does minijit (chapters 04, 06)."""
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    calls = (np.ones(3), np.ones(4), last)
    line = "* at x, " + line
    jax.config.update("jax_explain_cache_misses", True)
    try:
        with caplog.at_level(logging.WARNING):
            jf = jax.jit(lambda x: x + 1)
            for x in calls:
                jf(x)
    finally:
        jax.config.update("jax_explain_cache_misses", False)
    theirs = [r.getMessage() for r in caplog.records if "TRACING CACHE MISS" in r.getMessage()]
    assert line in theirs[-1].replace("float32", "f32").replace("float64", "f64")
    mj.config.update("explain_cache_misses", True)
    jf = mj.jit(lambda x: x + 1)
    for x in calls:
        jf(x)
    assert line in jf.cache_misses[-1]


@pytest.mark.parametrize("prefix", ["", "jax_"])
def test_log_compiles(prefix, caplog, config_restored):
    mj.config.update(prefix + "log_compiles", True)

    def my_fun(x, n):
        return x * n

    jf = mj.jit(my_fun, static_argnums=1)
    with caplog.at_level(logging.WARNING, logger="minijit"):
        jf(np.ones(3), 2)
        jf(np.ones(3), 2)
    msgs = [r.getMessage() for r in caplog.records if r.name == "minijit"]
    assert len(msgs) == 1
    assert "Compiling my_fun for (x: f64[3], n=2)" in msgs[0]


def test_nothing_is_logged_by_default(caplog):
    with caplog.at_level(logging.DEBUG, logger="minijit"):
        mj.jit(lambda x: x + 1)(np.ones(3))
    assert not [r for r in caplog.records if r.name == "minijit"]


def test_config_names(config_restored):
    mj.config.update("jax_log_compiles", True)
    assert mj.config.log_compiles is True
    assert mj.config.jax_log_compiles is True
    with pytest.raises(AttributeError, match="unknown config option"):
        mj.config.update("jax_enable_x64", True)
    with pytest.raises(AttributeError):
        mj.config.log_compiles = False


# --------------------------------------------------------------------------- disable_jit


def _debuggable(x):
    print("x is", x)
    if x[0] > 0:  # needs a concrete value
        return x.at[0].set(-1.0)
    return x


def test_disable_jit_context_manager_runs_eagerly(capsys):
    jf = mj.jit(_debuggable)
    with mj.disable_jit():
        out = jf(np.array([2.0, 3.0]))
        out2 = jf(np.array([-2.0, 3.0]))
    assert "x is [2. 3.]" in capsys.readouterr().out  # values, not tracers
    np.testing.assert_array_equal(out, [-1.0, 3.0])
    np.testing.assert_array_equal(out2, [-2.0, 3.0])
    assert jf.trace_count == 0 and jf._cache_size() == 0
    # outside the block it traces again, and the Python `if` fails as usual
    with pytest.raises(mj.errors.TracerBoolConversionError):
        jf(np.array([2.0, 3.0]))


def test_disable_jit_via_config(capsys, config_restored):
    mj.config.update("jax_disable_jit", True)
    jf = mj.jit(_debuggable)
    np.testing.assert_array_equal(jf(np.array([5.0])), [-1.0])
    assert "x is [5.]" in capsys.readouterr().out
    assert jf.trace_count == 0
    mj.config.update("disable_jit", False)
    with pytest.raises(mj.errors.TracerBoolConversionError):  # `if` needs eager values
        jf(np.array([5.0]))


def test_disable_jit_restores_on_error():
    with pytest.raises(ZeroDivisionError), mj.disable_jit():
        raise ZeroDivisionError
    assert mj.config.disable_jit is False


def test_disable_jit_with_static_arguments_and_pytrees():
    jf = mj.jit(lambda d, n: d["a"] * n, static_argnums=1)
    with mj.disable_jit():
        np.testing.assert_array_equal(jf({"a": np.ones(2)}, n=3), [3.0, 3.0])


# --------------------------------------------------------------------------- AOT stages


def _poly(x):
    return x * x + 1.0


def test_trace_stage():
    jf = mj.jit(_poly)
    traced = jf.trace(np.ones(3))
    text = str(traced.jaxpr)
    assert text == ("{ lambda ; a:f64[3]. let "
                    "b:f64[3] = mul a a; c:f64[3] = add b 1.0:f64[] in (c,) }")
    assert traced.as_text() == text
    assert jf.trace_count == 0 and jf._cache_size() == 0  # AOT does not touch the cache


def test_lower_and_compile_stages():
    jf = mj.jit(_poly)
    x = np.arange(3.0)
    lowered = jf.lower(x)
    assert isinstance(lowered.jaxpr, mj.ClosedJaxpr)
    text = lowered.as_text()  # the optimized program (passes may fuse the two ops)
    assert "mul" in text and "add" in text and "f64[3]" in text
    compiled = lowered.compile()
    out = compiled(x)
    assert isinstance(out, Array)
    np.testing.assert_array_equal(out, x * x + 1)
    np.testing.assert_array_equal(compiled(x + 1), (x + 1) ** 2 + 1)
    assert isinstance(compiled.as_text(), str) and compiled.as_text()
    assert jf.trace_count == 0


@pytest.mark.parametrize("other, says", [
    (np.ones(4), "* at x, now f64[4] and before f64[3]"),
    (np.ones(3, np.float32), "* at x, now f32[3] and before f64[3]"),
    (1.0, "* at x, now f64[] and before f64[3]"),
])
def test_compiled_rejects_other_types(other, says):
    compiled = mj.jit(_poly).lower(np.ones(3)).compile()
    with pytest.raises(TypeError, match="lowered for different argument types") as info:
        compiled(other)
    assert says in str(info.value)


def test_aot_with_static_argument():
    """As in JAX 0.10.2: the compiled function takes the dynamic arguments only."""
    jf = mj.jit(_add_n, static_argnums=1)
    compiled = jf.lower(np.ones(2), 3).compile()
    np.testing.assert_array_equal(compiled(np.zeros(2)), [3.0, 3.0])
    with pytest.raises(TypeError, match=r"lowered with its static arguments \(n\) fixed"):
        compiled(np.zeros(2), 3)
    by_name = mj.jit(_add_n, static_argnames="n").lower(np.ones(2), n=3).compile()
    np.testing.assert_array_equal(by_name(np.zeros(2)), [3.0, 3.0])
    with pytest.raises(TypeError, match="dynamic arguments only"):
        by_name(np.zeros(2), n=3)


# --------------------------------------------------------------------------- donation


def test_donate_argnums_result_and_reuse():
    jf = mj.jit(lambda x, y: x * 2 + y, donate_argnums=0)
    x, y = np.arange(3.0), np.ones(3)
    out = jf(x, y)
    np.testing.assert_array_equal(out, [1.0, 3.0, 5.0])
    with pytest.raises(RuntimeError, match="donated") as info:
        jf(x, y)
    assert "`x`" in str(info.value)
    other = mj.jit(lambda a: a + 1)
    with pytest.raises(RuntimeError, match="donated"):
        other(x)  # any jitted function refuses it
    # the non-donated argument and the returned array are fine
    np.testing.assert_array_equal(jf(out, y), [3.0, 7.0, 11.0])
    np.testing.assert_array_equal(other(y), [2.0, 2.0, 2.0])


def test_donation_of_a_fresh_array_each_time():
    jf = mj.jit(lambda x: x + 1, donate_argnums=(0,))
    x = np.zeros(2)
    for _ in range(3):
        x = jf(x)
    np.testing.assert_array_equal(x, [3.0, 3.0])
    assert jf.trace_count == 1


# --------------------------------------------------------------------------- failures


class Boom(Exception):
    pass


def test_failing_trace_leaves_the_cache_unchanged():
    def f(x, fail):
        if fail:
            raise Boom("user error while tracing")
        return x + 1

    jf, body = counted_jit(f, static_argnames="fail")
    jf(np.ones(2), False)
    assert jf._cache_size() == 1
    with pytest.raises(Boom):
        jf(np.ones(2), True)
    assert jf._cache_size() == 1 and jf.trace_count == 1 and len(jf.cache_misses) == 1
    with pytest.raises(Boom):  # nothing was cached for it: it fails again
        jf(np.ones(2), True)
    np.testing.assert_array_equal(jf(np.ones(2), False), [2.0, 2.0])
    np.testing.assert_array_equal(jf(np.ones(3), False), [2.0, 2.0, 2.0])
    assert jf.trace_count == 2


def test_failing_first_trace_then_good_call():
    calls = []

    def f(x):
        calls.append(x.shape)
        if x.shape == (3,):
            raise Boom("no threes")
        return x * 2

    jf = mj.jit(f)
    with pytest.raises(Boom):
        jf(np.ones(3))
    assert jf._cache_size() == 0 and jf.trace_count == 0
    np.testing.assert_array_equal(jf(np.ones(2)), [2.0, 2.0])
    assert jf.trace_count == 1 and len(calls) == 2


# --------------------------------------------------------------------------- outputs


def test_outputs_are_minijit_arrays_with_at():
    out = mj.jit(lambda x: x + 1)(np.zeros(3))
    assert isinstance(out, Array) and isinstance(out, np.ndarray)
    updated = out.at[1].set(5.0)
    np.testing.assert_array_equal(updated, [1.0, 5.0, 1.0])
    np.testing.assert_array_equal(out, [1.0, 1.0, 1.0])


@pytest.mark.parametrize("value, dtype", [(3.0, np.float64), (3, np.int64), (True, np.bool_)])
def test_python_scalar_outputs_become_0d_arrays(value, dtype):
    out = mj.jit(lambda x: value)(np.ones(2))
    assert isinstance(out, Array) and out.shape == () and out.dtype == dtype
    assert out == value


def test_closed_over_array_output_is_an_array():
    w = np.arange(2.0)
    out = mj.jit(lambda x: (w, x))(1.0)
    assert all(isinstance(o, Array) for o in out)
    np.testing.assert_array_equal(out[0], w)


# --------------------------------------------------------------------------- methods


class Scaler:
    def __init__(self, k):
        self.k = k

    def __hash__(self):
        return hash(self.k)

    def __eq__(self, other):
        return isinstance(other, Scaler) and other.k == self.k

    @functools.partial(mj.jit, static_argnums=0)
    def apply(self, x):
        return x * self.k

    @mj.jit(static_argnames="self")
    def apply_named(self, x):
        return x * self.k + 1

    @mj.jit
    def apply_unhashed(self, x):
        return x * self.k


class Line(collections.namedtuple("Line", "slope intercept")):
    """A namedtuple is a pytree, so `self` can be traced."""

    @mj.jit
    def __call__(self, x):
        return self.slope * x + self.intercept


def test_jitted_method_with_static_self():
    np.testing.assert_array_equal(Scaler(2.0).apply(np.ones(2)), [2.0, 2.0])
    np.testing.assert_array_equal(Scaler(2.0).apply(np.ones(2)), [2.0, 2.0])
    np.testing.assert_array_equal(Scaler(3.0).apply(np.ones(2)), [3.0, 3.0])
    assert Scaler.apply.trace_count == 2  # equal instances share an entry
    np.testing.assert_array_equal(Scaler(2.0).apply_named(np.ones(2)), [3.0, 3.0])


def test_jitted_method_with_a_plain_object_as_self_says_make_it_static():
    with pytest.raises(TypeError, match="argument `self` of `apply_unhashed` is a Scaler"):
        Scaler(2.0).apply_unhashed(np.ones(2))


def test_jitted_method_on_a_pytree_self():
    line = Line(np.float64(2.0), 1.0)
    np.testing.assert_array_equal(line(np.arange(3.0)), [1.0, 3.0, 5.0])
    np.testing.assert_array_equal(Line(np.float64(-1.0), 0.0)(np.arange(3.0)), [0, -1, -2])
    assert Line.__call__.trace_count == 1
