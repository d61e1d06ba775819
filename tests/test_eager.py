"""Eager evaluation is the bottom of the trace stack (`core.EvalTrace`).

Outside `jit`, `bind` runs each primitive's impl rule at once; inside, a `JaxprTrace` records
it. The same primitives, rules and checks serve both, so every case below is run both ways,
side by side, and must agree: values, dtypes, weak types, and errors. (The whole catalogue is
compared the same way in test_catalogue.py::test_eager_agrees_with_traced.)
"""

from __future__ import annotations

import operator

import numpy as np
import pytest

import minijit as mj
import minijit.numpy as mnp
from minijit.core import EvalTrace, current_trace, get_aval, is_tracing


def both(f, *args):
    """`f(*args)` eagerly and under jit; the two results must have the same type."""
    eager, traced = f(*args), mj.jit(f)(*args)
    assert isinstance(eager, mj.Array) and isinstance(traced, mj.Array)
    assert (eager.shape, eager.dtype) == (traced.shape, traced.dtype), f.__name__
    np.testing.assert_array_equal(eager, traced, strict=True)
    return eager


def test_the_bottom_of_the_stack_evaluates():
    assert isinstance(current_trace(), EvalTrace) and not is_tracing()
    seen = []

    def f(x):
        seen.append((type(current_trace()).__name__, is_tracing()))
        return x

    mj.jit(f)(np.ones(2))
    assert seen == [("JaxprTrace", True)]


# --------------------------------------------------------------------------- immutability

IN_PLACE = [
    (operator.iadd, 10), (operator.isub, 1), (operator.imul, 3), (operator.itruediv, 2),
    (operator.ifloordiv, 2), (operator.imod, 3), (operator.ipow, 2), (operator.iand, 6),
    (operator.ior, 1), (operator.ixor, 5),
]


@pytest.mark.parametrize("op, other", IN_PLACE, ids=[op.__name__ for op, _ in IN_PLACE])
def test_in_place_operators_rebind_the_name_and_leave_the_array_alone(op, other):
    x = mnp.array([10, 20])
    y = x
    y = op(y, other)  # what `y += other` does
    assert y is not x
    np.testing.assert_array_equal(x, [10, 20])  # JAX arrays are immutable: x is untouched
    name = op.__name__[1:]  # iadd -> add, iand -> and_
    plain = getattr(operator, name, None) or getattr(operator, name + "_")
    np.testing.assert_array_equal(y, plain(np.array([10, 20]), other))

    def f(a):
        b = a
        b = op(b, other)
        return a, b

    a, b = mj.jit(f)(mnp.array([10, 20]))
    np.testing.assert_array_equal(a, [10, 20])
    np.testing.assert_array_equal(b, y, strict=True)


def test_the_reported_in_place_case():
    x = mnp.array([10, 20])
    y = x
    y += 10
    np.testing.assert_array_equal(x, [10, 20])
    np.testing.assert_array_equal(y, [20, 30])
    y @= mnp.eye(2, dtype=int)
    np.testing.assert_array_equal(x, [10, 20])


def test_item_assignment_is_refused_with_the_fix_eagerly_and_traced():
    def f(x):
        x[0] = 1.0
        return x

    for run in (f, mj.jit(f)):
        with pytest.raises(TypeError, match=r"immutable.*x\.at\[idx\]\.set\(y\)"):
            run(mnp.zeros(3))


# --------------------------------------------------------------------------- indexing


def test_out_of_bounds_reads_clamp_and_updates_drop_both_ways():
    x = mnp.arange(10)
    assert int(both(lambda a: a[11], x)) == 9
    assert int(both(lambda a: a[-11], x)) == 0
    np.testing.assert_array_equal(both(lambda a: a.at[12].set(-1), x), np.arange(10))
    np.testing.assert_array_equal(both(lambda a: a[8:20], x), [8, 9])


def test_iteration_yields_rows_and_ends():
    x = mnp.arange(6).reshape(3, 2)
    rows = list(x)
    assert len(rows) == 3 and all(isinstance(r, mj.Array) for r in rows)
    np.testing.assert_array_equal(rows[2], [4, 5])
    assert int(sum(both(lambda a: sum(r for r in a), x))) == 15


def test_masks_and_integer_arrays_index_eagerly_only():
    x = mnp.arange(5.0)
    np.testing.assert_array_equal(x[x > 2], [3.0, 4.0])  # as JAX allows outside jit
    np.testing.assert_array_equal(x[np.array([0, 4])], [0.0, 4.0])
    with pytest.raises(IndexError, match="boolean mask use mnp.where"):
        mj.jit(lambda a: a[a > 2])(x)


# --------------------------------------------------------------------------- lists


@pytest.mark.parametrize("call, name, position", [
    (lambda x: mnp.sum([1, 2, 3]), "sum", 0),
    (lambda x: mnp.add([1, 2], x), "add", 0),
    (lambda x: mnp.where(x > 1, [1, 2, 3], 0), "where", 1),
    (lambda x: mnp.concatenate([x, (1,)]), "concatenate", 1),
    (lambda x: mnp.sin([1.0]), "sin", 0),
    (lambda x: mnp.reshape([1, 2], (2,)), "reshape", 0),
])
def test_lists_are_rejected_with_jax_message_eagerly_and_traced(call, name, position):
    message = (f"{name} requires ndarray or scalar arguments, got <class '(list|tuple)'> at "
               f"position {position}")
    for run in (call, mj.jit(call)):
        with pytest.raises(TypeError, match=message):
            run(mnp.arange(3))


def test_operators_with_a_list_raise_and_with_none_defer():
    x = mnp.arange(3)
    for run, kind in ((lambda f: f(x), "Array"), (lambda f: mj.jit(f)(x), "JaxprTracer")):
        with pytest.raises(TypeError, match=f"unsupported operand type.* for \\+: '{kind}' "
                                            "and 'list'"):
            run(lambda a: a + [1, 2, 3])
        with pytest.raises(TypeError, match=f"for ==: '{kind}' and 'list'"):
            run(lambda a: [1, 2, 3] == a)  # list.__eq__ declines, then the array raises
    assert (x == None) is False  # noqa: E711 - Python's fallback, as for a JAX array
    assert (x != None) is True  # noqa: E711
    assert mnp.asarray([1, 2]).dtype == np.int64  # asarray is where lists convert


# --------------------------------------------------------------------------- types


def test_weak_types_are_the_same_eagerly_and_traced():
    eager = mnp.add(1, 2)
    assert get_aval(eager).weak_type and eager.weak_type
    traced = mj.make_jaxpr(lambda: mnp.add(1, 2))().out_avals[0]
    assert traced.weak_type
    # the weak int adopts its partner's dtype, eagerly as under jit
    assert (eager + np.float32(1)).dtype == np.float32
    assert mj.jit(lambda a: mnp.add(1, 2) + a)(np.float32(1)).dtype == np.float32
    assert not mnp.sum(eager).weak_type  # reductions are strong, as in JAX


def test_bool_power_has_one_dtype_both_ways():
    assert both(lambda b: b ** 0, mnp.asarray(True)).dtype == np.int32  # JAX's too


def test_numpy_functions_see_plain_arrays():
    x = mnp.arange(3.0)
    assert type(np.sin(x)) is np.ndarray  # NumPy computes, as it does on a JAX array
    assert type(np.concatenate([x, x])) is np.ndarray
    np.testing.assert_allclose(x, np.arange(3.0).astype(np.float16), rtol=1e-3)  # float16 ok
    assert isinstance(np.float64(2) * x, mj.Array)  # the operator, through the scalar's ufunc


def test_numpy_cannot_write_into_an_array():
    x = mnp.arange(3.0)
    with pytest.raises(TypeError, match="immutable"):
        np.add(x, 1.0, out=x)
    with pytest.raises(TypeError, match="immutable"):
        np.clip(x, 0.0, 1.0, out=x)
    np.testing.assert_array_equal(x, [0.0, 1.0, 2.0])
    out = np.empty(3)
    np.add(x, 1.0, out=out)  # into a NumPy array of one's own: fine
    np.testing.assert_array_equal(out, [1.0, 2.0, 3.0])


@pytest.mark.parametrize("call", [
    lambda x: x.fill(0.0), lambda x: x.sort(), lambda x: x.put([0], [9.0]),
    lambda x: x.resize(2), lambda x: x.partition(1)])
def test_in_place_methods_are_refused_with_a_fix(call):
    x = mnp.asarray([3.0, 1.0, 2.0])
    with pytest.raises(TypeError, match="immutable.*in place; use"):
        call(x)
    np.testing.assert_array_equal(x, [3.0, 1.0, 2.0])


def test_a_leaked_tracer_used_eagerly_is_named():
    leaked = []
    mj.jit(lambda a: leaked.append(a) or a)(np.ones(2))
    with pytest.raises(mj.errors.UnexpectedTracerError, match="escaped that trace"):
        mnp.sin(leaked[0])
