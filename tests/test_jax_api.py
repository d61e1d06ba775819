"""JAX names that JAX code uses and minijit provides, each as JAX 0.10.2 behaves (measured).

`isfinite` (a primitive, `is_finite`, as in JAX), `block_until_ready`, `device_put`,
`effects_barrier`, `check_tracer_leaks`, the `jax.tree` short names, `ShapeDtypeStruct` and
`eval_shape`. Eager and traced,
on both backends, where a function computes.
"""

from __future__ import annotations

import operator

import numpy as np
import pytest

import minijit as mj
import minijit.numpy as mnp
from minijit import lax

BACKENDS = ["interpreter", "numba"]
VALUES = np.array([1.5, np.inf, -np.inf, np.nan, 0.0])


@pytest.mark.parametrize("backend", BACKENDS)
def test_isfinite_eagerly_and_traced(backend):
    want = [True, False, False, False, True]
    for run in (mnp.isfinite, mj.jit(mnp.isfinite, backend=backend)):
        out = run(VALUES)
        assert out.dtype == np.bool_
        np.testing.assert_array_equal(out, want)
        np.testing.assert_array_equal(run(VALUES.astype(np.float32)), want)
        np.testing.assert_array_equal(run(np.arange(3)), [True, True, True])  # ints: finite
    fused = mj.jit(lambda x: mnp.where(mnp.isfinite(x * 2.0), x, 0.0), backend=backend)
    np.testing.assert_array_equal(fused(VALUES), [1.5, 0.0, 0.0, 0.0, 0.0])


def test_isfinite_prints_as_jax_does():
    assert "b:bool[5] = is_finite a" in str(mj.make_jaxpr(mnp.isfinite)(VALUES))
    ints = str(mj.make_jaxpr(mnp.isfinite)(np.ones(2, np.int32)))
    assert "broadcast_in_dim" in ints and "True:bool[]" in ints  # no equation reads `a`
    assert mnp.isfinite(2) and mnp.isfinite(2).dtype == np.bool_


def test_lax_is_finite_takes_floats_only():
    with pytest.raises(TypeError, match="is_finite"):
        lax.is_finite(np.arange(3))


def test_block_until_ready_effects_barrier_and_device_put():
    x = mnp.arange(3.0)
    assert x.block_until_ready() is x
    tree = {"a": x, "b": 1}
    assert mj.block_until_ready(tree) is tree
    assert mj.effects_barrier() is None
    put = mj.device_put([1, np.ones(2), np.float32(2)])
    assert all(isinstance(p, mj.Array) for p in put)
    assert put[0].weak_type and put[0].dtype == np.int64  # a Python scalar stays weak
    assert not put[1].weak_type and put[2].dtype == np.float32
    assert mj.device_put(x) is x
    with pytest.raises(NotImplementedError, match="one device"):
        mj.device_put(x, device="gpu:0")


def test_check_tracer_leaks_is_a_context_manager():
    leaked = []
    with pytest.raises(mj.errors.UnexpectedTracerError):
        with mj.check_tracer_leaks():
            mj.jit(lambda a: leaked.append(a) or a)(np.ones(2))


def test_tree_short_names():
    assert mj.tree.reduce(operator.add, [1, 2, 3]) == 6
    assert mj.tree.reduce(operator.add, [1, 2, 3], 10) == 16
    assert mj.tree.all([True, 1]) and not mj.tree.all([True, 0])
    assert mj.tree.map(lambda a, b: a + b, {"x": 1}, {"x": 2}) == {"x": 3}
    assert mj.tree.leaves({"b": 2, "a": 1}) == [1, 2]  # dict keys sorted, as in JAX
    assert str(mj.tree.structure((1, [2]))) == "PyTreeDef((*, [*]))"
    leaves, treedef = mj.tree.flatten({"a": 1})
    assert leaves == [1] and mj.tree.unflatten(treedef, [5]) == {"a": 5}
    with pytest.raises(NotImplementedError, match="is_leaf"):
        mj.tree.map(lambda a: a, [1], is_leaf=lambda a: True)


@pytest.mark.parametrize("backend", BACKENDS)
def test_lax_rem_and_div_have_jax_integer_semantics(backend):
    # JAX 0.10.2: lax.rem(-7, 3) == -1 (the sign of the dividend), lax.div(-7, 2) == -3
    # (toward zero); `%` and `//` keep Python's: -7 % 3 == 2, -7 // 2 == -4.
    for run in (lambda f, *a: f(*a), lambda f, *a: mj.jit(f, backend=backend)(*a)):
        assert int(run(lax.rem, -7, 3)) == -1 and int(run(lax.div, -7, 2)) == -3
        assert int(run(lambda a, b: mnp.asarray(a) % b, -7, 3)) == 2
        assert int(run(lambda a, b: mnp.asarray(a) // b, -7, 2)) == -4
        zero = np.zeros(2, np.int32)
        np.testing.assert_array_equal(run(lax.div, np.array([5, -5], np.int32), zero), [-1, -1])
        np.testing.assert_array_equal(run(lax.rem, np.array([5, -5], np.int32), zero), [5, -5])


def test_a_traced_mask_index_raises_jax_error_class():
    for f in (lambda x: x[x > 0], lambda x: x.at[x > 0].set(0.0)):
        with pytest.raises(mj.errors.NonConcreteBooleanIndexError,
                           match=r"Array boolean indices must be concrete; got bool\[3\].*"
                                 r"mnp\.where\(mask, x, 0\)"):
            mj.jit(f)(np.ones(3))
    assert issubclass(mj.errors.NonConcreteBooleanIndexError, IndexError)  # as in JAX
    np.testing.assert_array_equal(mnp.arange(3.0)[mnp.arange(3) > 0], [1.0, 2.0])  # eager: ok


def test_a_traced_axis_is_a_concretization_error():
    with pytest.raises(mj.errors.ConcretizationTypeError,
                       match=r"traced array with shape i64\[\]\. The axis argument must be "
                             "known statically"):
        mj.jit(lambda x, a: mnp.sum(x, axis=a))(np.ones((2, 3)), 1)
    assert mj.jit(lambda x, a: mnp.sum(x, axis=a), static_argnums=1)(np.ones((2, 3)), 1).shape \
        == (2,)


def test_an_array_made_of_a_shape_is_staged_as_in_jax():
    text = str(mj.make_jaxpr(lambda x: mnp.array(x.shape).prod())(np.ones((2, 3))))
    assert "reduce_prod[axes=(0,)] a" in text and text.startswith("{ lambda a:i64[2];")


def _log_of_double(x):
    y = x * 2.0
    return mnp.log(y) + 1.0


@pytest.mark.parametrize("backend", BACKENDS)
def test_debug_nans_names_the_primitive_and_the_line(backend, capsys):
    jf = mj.jit(_log_of_double, backend=backend)
    jf(np.array([1.0, 2.0]))  # cached, so the second call below could take the fast path
    with mj.debug_nans():
        with pytest.raises(FloatingPointError, match=r"invalid value \(nan\) encountered in log"
                                                     r"\n  at .*test_jax_api.py"):
            mnp.log(-1.0)  # eagerly: at once
        for _ in range(2):  # under jit: the result holds a NaN, so it runs again eagerly
            with pytest.raises(FloatingPointError, match="encountered in log"):
                jf(np.array([-1.0, 1.0]))
        assert "Calling the de-optimized version" in capsys.readouterr().err
        with pytest.raises(FloatingPointError, match="encountered in mul"):
            jf(np.array([np.nan]))  # a NaN argument: the first primitive's output is NaN
        with pytest.raises(FloatingPointError, match=r"without jit made none"):
            mj.jit(lambda x: x, backend=backend)(np.array([np.nan]))  # as JAX: still an error
    assert np.isnan(mnp.sqrt(-1.0)) and np.isnan(jf(np.array([-1.0]))[0])  # off again


def test_debug_nans_is_a_config_option_under_jax_name():
    mj.config.update("jax_debug_nans", True)
    try:
        with pytest.raises(FloatingPointError, match="encountered in sqrt"):
            mnp.sqrt(-1.0)
    finally:
        mj.config.update("jax_debug_nans", False)


def test_debug_nans_with_donated_arguments_says_why_it_cannot_look():
    with mj.debug_nans(), pytest.raises(FloatingPointError, match="donated arguments"):
        mj.jit(lambda x: mnp.log(x), donate_argnums=0)(np.array([-1.0]))


# x = arange(5.0): (what, index, keywords, JAX 0.10.2's result)
AT_CASES = [
    ("get", 7, {}, 4.0),
    ("get", 7, {"mode": "fill"}, np.nan),
    ("get", 7, {"mode": "fill", "fill_value": -1}, -1.0),
    ("get", -1, {"mode": "fill"}, 4.0),
    ("get", -1, {"mode": "fill", "wrap_negative_indices": False}, np.nan),
    ("get", 7, {"mode": "clip"}, 4.0),
    ("get", 7, {"mode": "promise_in_bounds"}, 4.0),
    ("set", 7, {"mode": "clip"}, [0.0, 1.0, 2.0, 3.0, 9.0]),
    ("set", 7, {"mode": "drop"}, [0.0, 1.0, 2.0, 3.0, 4.0]),
    ("add", -7, {"mode": "clip"}, [9.0, 1.0, 2.0, 3.0, 4.0]),
    ("set", -1, {"wrap_negative_indices": False}, [0.0, 1.0, 2.0, 3.0, 4.0]),
]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("what, index, keywords, want", AT_CASES)
def test_at_modes_as_in_jax(what, index, keywords, want, backend):
    def f(x, i):
        ref = x.at[i]
        return ref.get(**keywords) if what == "get" else getattr(ref, what)(9.0, **keywords)

    x = mnp.arange(5.0)
    np.testing.assert_array_equal(f(x, index), want)  # eagerly, a static index
    np.testing.assert_array_equal(mj.jit(f, backend=backend)(x, index), want)  # traced index
    np.testing.assert_array_equal(
        mj.jit(f, static_argnums=1, backend=backend)(x, index), want)  # static under jit


def test_at_fill_values_by_dtype():
    assert int(mnp.arange(5).at[7].get(mode="fill")) == np.iinfo(np.int64).min
    assert int(mnp.ones(2, np.uint8).at[5].get(mode="fill")) == 255
    assert bool(mnp.zeros(2, bool).at[5].get(mode="fill")) is True
    np.testing.assert_array_equal(mnp.arange(5.0).at[1:3].get(mode="fill"), [1.0, 2.0])
    with pytest.raises(ValueError, match="mode='wrap' is not one of"):
        mnp.arange(5.0).at[1].get(mode="wrap")


def test_at_get_without_keywords_stages_what_indexing_stages():
    """The keywords cost nothing unless used: no bounds check is staged for a plain get."""
    x = np.ones(3)
    plain = str(mj.make_jaxpr(lambda a, i: a[i])(x, 1))
    assert str(mj.make_jaxpr(lambda a, i: a.at[i].get())(x, 1)) == plain
    assert str(mj.make_jaxpr(lambda a, i: a.at[i].get(mode="clip"))(x, 1)) == plain


# --------------------------------------------------------------------------- ShapeDtypeStruct
# The strings are JAX 0.10.2's (with jax_enable_x64), checked there.

F32 = mj.ShapeDtypeStruct((2, 3), np.float32)


def test_shape_dtype_struct_repr_and_value_semantics():
    assert repr(F32) == str(F32) == "ShapeDtypeStruct(shape=(2, 3), dtype=float32)"
    weak = mj.ShapeDtypeStruct((), np.int64, weak_type=True)
    assert repr(weak) == "ShapeDtypeStruct(shape=(), dtype=int64, weak_type=True)"
    assert repr(mj.ShapeDtypeStruct([3], "float64")) == (
        "ShapeDtypeStruct(shape=(3,), dtype=float64)")
    assert (F32.shape, F32.dtype, F32.weak_type, F32.ndim, F32.size) == ((2, 3), np.float32,
                                                                        False, 2, 6)
    assert F32 == mj.ShapeDtypeStruct((2, 3), np.float32) and hash(F32) == hash(
        mj.ShapeDtypeStruct((2, 3), np.float32))
    assert F32 != weak
    assert repr(F32.update(shape=(4,))) == "ShapeDtypeStruct(shape=(4,), dtype=float32)"
    assert str(mj.tree.structure(F32)) == "PyTreeDef(*)"  # a leaf
    with pytest.raises(ValueError, match="ShapeDtypeStruct: dtype must be specified."):
        mj.ShapeDtypeStruct((2,), None)
    with pytest.raises(TypeError):  # as JAX: weak_type is keyword-only
        mj.ShapeDtypeStruct((2,), np.float32, True)


def test_eval_shape_returns_shape_dtype_structs():
    def f(x, y):
        return {"sum": x + y, "m": x.T @ y}

    assert mj.eval_shape(f, F32, F32) == {"m": mj.ShapeDtypeStruct((3, 3), np.float32),
                                          "sum": mj.ShapeDtypeStruct((2, 3), np.float32)}
    assert repr(mj.eval_shape(lambda x: x * 2, 1.0)) == (
        "ShapeDtypeStruct(shape=(), dtype=float64, weak_type=True)")
    assert mj.eval_shape(lambda x: x * 2, np.ones(3)) == mj.ShapeDtypeStruct((3,), np.float64)
    assert mj.eval_shape(lambda t: t[0] + t[1], (F32, F32)) == F32
    assert mj.eval_shape(lambda x, n: x * n, F32, 3) == F32
    assert mj.eval_shape(lambda x: mnp.sum(x), F32) == mj.ShapeDtypeStruct((), np.float32)
    assert mj.eval_shape(mj.jit(lambda x: x + 1), F32) == F32
    assert mj.eval_shape(lambda x, *, y: x + y, F32, y=1.0) == F32
    jitted = mj.jit(lambda x: {"a": x * 2, "s": x.sum()})
    want = {"a": F32, "s": mj.ShapeDtypeStruct((), np.float32)}
    assert jitted.eval_shape(F32) == want == jitted.trace(F32).out_info
    _, shapes = mj.make_jaxpr(lambda x: (x, x.sum()), return_shape=True)(F32)
    assert shapes == (F32, mj.ShapeDtypeStruct((), np.float32))
    assert jitted.trace_count == 0


def test_shape_dtype_struct_traces_and_lowers_but_does_not_run():
    f = mj.jit(lambda x: x * 2, backend="interpreter")
    text = "{ lambda ; a:f32[2,3]. let"
    assert str(mj.make_jaxpr(lambda x: x * 2)(F32)).startswith(text)
    assert str(f.trace(F32).jaxpr).startswith(text)
    assert "mul a 2.0:f32[]" in f.lower(F32).as_text()
    assert f.trace_count == 0  # AOT stages do not fill the cache
    with pytest.raises(TypeError, match=r"argument `x` of `<lambda>` is ShapeDtypeStruct\("
                                        r"shape=\(2, 3\), dtype=float32\): a shape and dtype "
                                        r"with no data"):
        f(F32)
    with pytest.raises(TypeError, match="no data, so minijit.numpy cannot compute with it"):
        mnp.sin(F32)


@pytest.mark.parametrize("backend", BACKENDS)
def test_lowered_from_shape_dtype_struct_compiles_and_runs(backend):
    compiled = mj.jit(lambda x: x * 2, backend=backend).lower(F32).compile()
    out = compiled(np.ones((2, 3), np.float32))
    assert out.dtype == np.float32
    np.testing.assert_array_equal(out, np.full((2, 3), 2.0))
    with pytest.raises(TypeError, match="lowered for different argument types"):
        compiled(np.ones(3))


def test_array_repr_is_jax_s():  # JAX 0.10.2's strings, with jax_enable_x64
    assert repr(mnp.arange(3.0)) == "Array([0., 1., 2.], dtype=float64)"
    assert repr(mnp.add(1, 1)) == "Array(2, dtype=int64, weak_type=True)"
    assert repr(mnp.ones((2, 2), np.float32)) == (
        "Array([[1., 1.],\n       [1., 1.]], dtype=float32)")
    assert repr(mnp.zeros((0,))) == "Array([], shape=(0,), dtype=float64)"
    long = repr(mnp.arange(40.0) / 3)
    assert long.startswith("Array([ 0.        ,  0.33333333,  0.66666667,  1.        ,  "
                           "1.33333333,\n        1.66666667,")
    assert long.endswith("12.66666667, 13.        ],      dtype=float64)")


# --------------------------------------------------------------------------- weak types as JAX's

# (function, expected dtype, expected weak_type), measured with JAX 0.10.2 and jax_enable_x64.
WEAK_CASES = [
    (lambda: mnp.full(3, 2.0), "float64", True),
    (lambda: mnp.full(3, 2), "int64", True),
    (lambda: mnp.full(3, np.float32(2)), "float32", False),
    (lambda: mnp.full((), 2.0), "float64", True),
    (lambda: mnp.zeros(3), "float64", False),
    (lambda: mnp.zeros_like(2.0), "float64", True),
    (lambda: mnp.zeros_like(np.ones(2)), "float64", False),
    (lambda: mnp.ones_like(2), "int64", True),
    (lambda: mnp.full_like(np.ones(2, np.int32), 2.7), "int32", False),
    (lambda: mnp.where(True, 2.7, mnp.arange(3)), "float64", True),
    (lambda: mnp.broadcast_to(2.0, (3,)), "float64", True),
    (lambda: mnp.stack([1.0, 2.0]), "float64", True),
    (lambda: mnp.reshape(2.0, (1,)), "float64", True),
    (lambda: mnp.dot(2.0, 3.0), "float64", True),
    # a loop carry that starts weak and comes back strong is strong, as in JAX
    (lambda: lax.fori_loop(0, 3, lambda i, x: x + np.float64(1), 0.0), "float64", False),
    (lambda: lax.fori_loop(0, 3, lambda i, x: x + 1.0, 0.0), "float64", True),
    (lambda: lax.fori_loop(0, 3, lambda i, x: x + np.float32(1), 0.0), "float32", False),
    (lambda: lax.while_loop(lambda x: x < 3, lambda x: x + np.float64(1), 0.0), "float64",
     False),
    (lambda: lax.scan(lambda c, _: (c + np.float64(1), None), 0.0, None, length=3)[0],
     "float64", False),
]


@pytest.mark.parametrize("k", range(len(WEAK_CASES)))
@pytest.mark.parametrize("how", ["eager", "interpreter", "numba"])
def test_weak_types_as_jax(k, how):
    f, dtype, weak = WEAK_CASES[k]
    out = f() if how == "eager" else mj.jit(f, backend=how)()
    assert (out.dtype.name, out.weak_type) == (dtype, weak)


@pytest.mark.parametrize("backend", BACKENDS)
def test_bools_add_as_or_and_multiply_as_and_but_lax_refuses_them(backend):
    a, b = np.array([True, True, False, False]), np.array([True, False, True, False])
    for run in (lambda f, *x: f(*x), lambda f, *x: mj.jit(f, backend=backend)(*x)):
        np.testing.assert_array_equal(run(mnp.add, a, b), a | b)
        np.testing.assert_array_equal(run(lambda x, y: x * y, a, b), a & b)
        assert run(mnp.add, a, b).dtype == np.bool_
        for f in (lax.add, lax.mul):  # JAX: "add does not accept dtype bool"
            with pytest.raises(TypeError, match="numeric"):
                run(f, a, b)
