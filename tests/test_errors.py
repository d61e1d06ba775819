"""Every error a learner meets: its class (JAX's hierarchy) and what its message names.

A good tracer error names three things: the traced argument the value came from, the
learner's own line, and the fix. Each test below triggers one error from a small function
defined here and checks all three, plus the exact class (`type(e) is cls`, so an `int(x)`
that raised TracerBoolConversionError would fail).
"""

from __future__ import annotations

import inspect

import numpy as np
import pytest

import minijit as mj
import minijit.numpy as mnp
from minijit import errors, lax

THIS_FILE = "test_errors.py"


def raises(cls, fn, *args, **kwargs) -> str:
    """Call `fn`, check it raises exactly `cls` (not a subclass); return the message."""
    with pytest.raises(cls) as info:
        fn(*args, **kwargs)
    assert type(info.value) is cls, f"expected {cls.__name__}, got {type(info.value).__name__}"
    return str(info.value)


def assert_names(msg: str, *parts: str) -> None:
    missing = [p for p in parts if p not in msg]
    assert not missing, f"message lacks {missing}:\n{msg}"


# --------------------------------------------------------------------------- the hierarchy


def test_hierarchy_matches_jax():
    E = errors
    assert issubclass(E.TracerBoolConversionError, E.ConcretizationTypeError)
    for cls in (E.TracerIntegerConversionError, E.TracerArrayConversionError,
                E.UnexpectedTracerError):
        assert issubclass(cls, TypeError)
        assert not issubclass(cls, E.ConcretizationTypeError), cls
    for cls in (E.ConcretizationTypeError, E.TracerBoolConversionError):
        assert issubclass(cls, TypeError)
    # the three TypeErrors are siblings, not subclasses of each other
    siblings = (E.TracerIntegerConversionError, E.TracerArrayConversionError,
                E.UnexpectedTracerError)
    for a in siblings:
        for b in siblings:
            assert issubclass(a, b) == (a is b)


def test_error_classes_are_exported_under_their_jax_names():
    for name in ("ConcretizationTypeError", "TracerBoolConversionError",
                 "TracerIntegerConversionError", "TracerArrayConversionError",
                 "UnexpectedTracerError"):
        assert getattr(mj.errors, name).__name__ == name


def test_except_typeerror_catches_all_tracer_errors():
    @mj.jit
    def f(x):
        return int(x)

    with pytest.raises(TypeError):
        f(1.0)


# --------------------------------------------------------------------------- bool conversion


def if_positive(x):
    if x > 0:
        return x
    return -x


def while_positive(x):
    while x > 0:
        x = x - 1.0
    return x


def both_positive(x, y):
    return x > 0 and y > 0


def either_positive(x, y):
    return x > 0 or y > 0


def assert_positive(x):
    assert x > 0
    return x


BOOL_FIXES = ("mnp.where", "lax.cond")


@pytest.mark.parametrize("fn, line", [
    (if_positive, "if x > 0:"),
    (while_positive, "while x > 0:"),
    (assert_positive, "assert x > 0"),
])
def test_bool_conversion_of_a_scalar(fn, line):
    msg = raises(errors.TracerBoolConversionError, mj.jit(fn), 1.0)
    assert_names(msg, "`x`", f"`{fn.__name__}`", THIS_FILE, line, *BOOL_FIXES,
                 f"jit({fn.__name__}, static_argnames=('x',))")


@pytest.mark.parametrize("fn, line", [
    (both_positive, "return x > 0 and y > 0"),
    (either_positive, "return x > 0 or y > 0"),
])
def test_bool_conversion_in_and_or(fn, line):
    msg = raises(errors.TracerBoolConversionError, mj.jit(fn), 1.0, 2.0)
    # `and`/`or` convert the left operand first: that one is named
    assert_names(msg, "`x`", THIS_FILE, line, *BOOL_FIXES, "static_argnames=('x',)")
    assert "`y`" not in msg


def test_bool_conversion_is_a_concretization_error():
    with pytest.raises(errors.ConcretizationTypeError):
        mj.jit(if_positive)(1.0)


def test_bool_conversion_of_an_array_argument_is_not_advised_static():
    msg = raises(errors.TracerBoolConversionError, mj.jit(if_positive), np.ones(3))
    assert_names(msg, "`x`", "bool[3]", "if x > 0:", *BOOL_FIXES)
    # arrays are not hashable, so marking them static is no fix
    assert "static_arg" not in msg


def scaled_positive(x, n):
    if (x * n).sum() > 0:
        return x
    return -x


def test_only_the_scalar_argument_is_advised_static():
    msg = raises(errors.TracerBoolConversionError, mj.jit(scaled_positive), np.ones(3), 2.0)
    assert_names(msg, "`x`", "`n`", "if (x * n).sum() > 0:", "static_argnames=('n',)")
    assert "'x'" not in msg


def sum_positive(a, b):
    if a + b > 0:
        return a
    return b


def test_two_scalar_arguments_are_both_named_and_advised():
    msg = raises(errors.TracerBoolConversionError, mj.jit(sum_positive), 1.0, 2)
    assert_names(msg, "`a`, `b`", "if a + b > 0:", "static_argnames=('a', 'b')")


def constant_branch(x):
    if mnp.sum(mnp.ones(3)) > 0:  # staged into the trace, so traced too
        return x
    return -x


def test_value_computed_inside_names_no_argument():
    msg = raises(errors.TracerBoolConversionError, mj.jit(constant_branch), 1.0)
    assert_names(msg, "depends on no argument", "np.", "if mnp.sum(mnp.ones(3)) > 0:")
    assert "static_arg" not in msg


def test_pytree_leaf_is_named_by_its_path():
    def f(params):
        if params["scale"] > 1:
            return params["w"]
        return params["w"] * 2

    msg = raises(errors.TracerBoolConversionError, mj.jit(f), {"scale": 2.0, "w": np.ones(2)})
    assert_names(msg, "`params['scale']`", 'if params["scale"] > 1:')
    assert "params['w']" not in msg
    # a dict cannot be static (not hashable), so that is not offered as a fix
    assert "static_arg" not in msg


def test_bool_fixes_work():
    """The advice in the message must be code that runs."""
    where = mj.jit(lambda x: mnp.where(x > 0, x, -x))
    np.testing.assert_array_equal(where(np.array([-1.0, 2.0])), [1.0, 2.0])
    cond = mj.jit(lambda x: lax.cond(x > 0, lambda v: v, lambda v: -v, x))
    assert cond(-2.0) == 2.0 and cond(3.0) == 3.0
    static = mj.jit(if_positive, static_argnames=("x",))
    assert static(-2.0) == 2.0


def test_bool_conversion_with_disable_jit_works():
    with mj.disable_jit():
        assert mj.jit(if_positive)(-2.0) == 2.0


# --------------------------------------------------------------------------- integer conversion


def loop_n_times(x, n):
    for i in range(n):
        x = x + i
    return x


def pick_from_list(i):
    return [10.0, 20.0, 30.0][i]


def test_range_of_a_traced_int():
    msg = raises(errors.TracerIntegerConversionError, mj.jit(loop_n_times), np.ones(3), 3)
    assert_names(msg, "`n`", "`loop_n_times`", "i64[]", THIS_FILE, "for i in range(n):",
                 "fori_loop", "static_argnames=('n',)")
    assert "`x`" not in msg  # x does not feed n


def test_range_error_is_not_a_concretization_error():
    with pytest.raises(TypeError) as info:
        mj.jit(loop_n_times)(np.ones(3), 3)
    assert not isinstance(info.value, errors.ConcretizationTypeError)


def test_range_fixes_work():
    jf = mj.jit(loop_n_times, static_argnames=("n",))
    np.testing.assert_allclose(jf(np.ones(3), 3), np.ones(3) + 3)
    fori = mj.jit(lambda x, n: lax.fori_loop(0, n, lambda i, acc: acc + i, x))
    np.testing.assert_allclose(fori(np.ones(3), 3), np.ones(3) + 3)
    assert fori.trace_count == 1 and fori(np.ones(3), 5)[0] == 11.0 and fori.trace_count == 1


def test_indexing_a_python_list_with_a_tracer():
    msg = raises(errors.TracerIntegerConversionError, mj.jit(pick_from_list), 1)
    assert_names(msg, "`i`", "return [10.0, 20.0, 30.0][i]", "mnp.asarray",
                 "static_argnames=('i',)")


def test_indexing_an_array_with_a_tracer_works():
    values = np.array([10.0, 20.0, 30.0])
    assert mj.jit(lambda i: mnp.asarray(values)[i])(2) == 30.0


# --------------------------------------------------------------------------- int(), float(), format


def to_int(x):
    return int(x)


def to_float(x):
    return float(x)


def formatted(x):
    label = f"{x:.3f}"
    return x, label


@pytest.mark.parametrize("fn, line, fix", [
    (to_int, "return int(x)", "x.astype(mnp.int64)"),
    (to_float, "return float(x)", "x.astype(mnp.float64)"),
])
def test_int_and_float_raise_plain_concretization_error(fn, line, fix):
    msg = raises(errors.ConcretizationTypeError, mj.jit(fn), 2.5)
    assert_names(msg, "`x`", "f64[]", THIS_FILE, line, fix, "static_argnames=('x',)")


def test_format_spec_raises_concretization_error():
    msg = raises(errors.ConcretizationTypeError, mj.jit(formatted), 2.5)
    assert_names(msg, "'.3f'", "`x`", 'label = f"{x:.3f}"', "debug.print")


def test_format_without_spec_shows_the_tracer():
    seen = []

    @mj.jit
    def f(x):
        seen.append(f"{x}")
        return x

    f(1.0)
    assert len(seen) == 1 and "Traced<" in seen[0] and "float64[]" in seen[0]


# --------------------------------------------------------------------------- NumPy on tracers


def numpy_asarray(x):
    return np.asarray(x)


def numpy_sin(x):
    return np.sin(x) + 1


@pytest.mark.parametrize("fn, line", [
    (numpy_asarray, "return np.asarray(x)"),
    (numpy_sin, "return np.sin(x) + 1"),
])
def test_numpy_on_a_tracer(fn, line):
    msg = raises(errors.TracerArrayConversionError, mj.jit(fn), np.ones(3))
    assert_names(msg, "`x`", "f64[3]", THIS_FILE, line, "mnp.sin(x)")
    assert "static_arg" not in msg  # making it static would not help NumPy


def test_numpy_on_a_scalar_tracer_is_not_advised_static_either():
    msg = raises(errors.TracerArrayConversionError, mj.jit(numpy_sin), 1.0)
    assert "static_arg" not in msg


# --------------------------------------------------------------------------- in-place updates


def set_in_place(x, v):
    x[0] = v
    return x


def test_setitem_inside_jit_points_to_at():
    msg = raises(TypeError, mj.jit(set_in_place), np.ones(3), 5.0)
    assert_names(msg, "immutable", ".at[", ".set(", THIS_FILE, "x[0] = v")


def test_setitem_on_an_output_array_points_to_at():
    out = mj.jit(lambda x: x + 1)(np.ones(3))
    msg = raises(TypeError, out.__setitem__, 0, 5.0)
    assert_names(msg, "immutable", ".at[")
    np.testing.assert_array_equal(out, [2.0, 2.0, 2.0])  # and nothing changed


def test_the_at_fix_works_inside_jit():
    out = mj.jit(lambda x, v: x.at[0].set(v))(np.ones(3), 5.0)
    np.testing.assert_array_equal(out, [5.0, 1.0, 1.0])


# --------------------------------------------------------------------------- leaked tracers

_LEAKED: list = []


def make_leaky():
    # a fresh function each time: a cache hit would not trace, and so would not leak
    def leaky(x):
        y = x * 2.0
        _LEAKED.append(y)
        return y

    return leaky


@pytest.fixture
def leaked_tracer():
    _LEAKED.clear()
    mj.jit(make_leaky())(np.ones(3))
    assert len(_LEAKED) == 1
    yield _LEAKED[0]
    _LEAKED.clear()


def _line_of(fn, text: str) -> int:
    lines, start = inspect.getsourcelines(fn)
    return start + next(i for i, line in enumerate(lines) if text in line)


def test_leaked_tracer_used_outside_jit(leaked_tracer):
    msg = raises(errors.UnexpectedTracerError, lambda: leaked_tracer + 1.0)
    # where the leaked value was made: the line `y = x * 2.0` inside `leaky`
    made_at = f"{THIS_FILE}:{_line_of(make_leaky, 'y = x * 2.0')} (leaky)"
    assert_names(msg, "f64[3]", "`leaky`", made_at, "return the value", "checking_leaks")


def test_leaked_tracer_used_in_mnp_outside_jit(leaked_tracer):
    msg = raises(errors.UnexpectedTracerError, mnp.sin, leaked_tracer)
    assert_names(msg, "`leaky`", "escaped")


def test_leaked_tracer_used_inside_another_jit(leaked_tracer):
    @mj.jit
    def other(z):
        return z + leaked_tracer

    msg = raises(errors.UnexpectedTracerError, other, np.ones(3))
    assert_names(msg, "f64[3]", "`leaky`", THIS_FILE)


def test_leaked_tracer_used_in_a_later_trace_of_the_same_function(leaked_tracer):
    def again(x):
        return x + _LEAKED[0]

    msg = raises(errors.UnexpectedTracerError, mj.jit(again), np.ones(3))
    assert_names(msg, "`leaky`")


def test_checking_leaks_raises_when_the_trace_ends():
    assert mj.checking_leaks is mj.debug.checking_leaks  # the name the leak message gives
    _LEAKED.clear()
    with pytest.raises(errors.UnexpectedTracerError) as info, mj.checking_leaks():
        mj.jit(make_leaky())(np.ones(2))
    _LEAKED.clear()
    assert_names(str(info.value), "`leaky`", "f64[2]", THIS_FILE, "list", "return it")


def test_no_leak_no_error_under_checking_leaks():
    with mj.checking_leaks():
        np.testing.assert_array_equal(mj.jit(lambda x: x * 2)(np.ones(2)), [2.0, 2.0])


def test_leaked_tracer_is_not_a_concretization_error(leaked_tracer):
    with pytest.raises(TypeError) as info:
        leaked_tracer * 3
    assert not isinstance(info.value, errors.ConcretizationTypeError)


# --------------------------------------------------------------------------- arguments


def with_mode(x, mode):
    return x * 2 if mode == "double" else x


def test_string_argument_passed_as_dynamic():
    msg = raises(TypeError, mj.jit(with_mode), np.ones(2), "double")
    assert_names(msg, "`mode`", "str", "not an array", "static_argnames=('mode',)")


def test_string_argument_fix_works():
    jf = mj.jit(with_mode, static_argnames=("mode",))
    np.testing.assert_array_equal(jf(np.ones(2), "double"), [2.0, 2.0])


def test_string_inside_a_pytree_names_its_path():
    msg = raises(TypeError, mj.jit(lambda cfg: cfg["w"]), {"w": np.ones(2), "name": "a"})
    assert_names(msg, "`cfg['name']`", "str")


def test_unhashable_static_argument_is_a_value_error_with_the_tuple_hint():
    jf = mj.jit(with_mode, static_argnums=(1,))
    msg = raises(ValueError, jf, np.ones(2), ["double"])
    assert_names(msg, "Non-hashable static arguments", "`mode`", "list", "tuple instead")


def test_unhashable_static_dict_gets_no_tuple_hint():
    jf = mj.jit(with_mode, static_argnames="mode")
    msg = raises(ValueError, jf, np.ones(2), mode={"a": 1})
    assert_names(msg, "`mode`", "dict")
    assert "tuple instead" not in msg


def test_array_as_static_argument_says_pass_it_as_dynamic():
    jf = mj.jit(with_mode, static_argnums=1)
    msg = raises(ValueError, jf, np.ones(2), np.ones(2))
    assert_names(msg, "`mode`", "ndarray", "dynamic")


@pytest.mark.parametrize("nums", [2, 7, -3, (0, 5)])
def test_static_argnums_out_of_range(nums):
    msg = raises(ValueError, mj.jit, with_mode, static_argnums=nums)
    assert_names(msg, "static_argnums=", "`with_mode`", "2 positional")


def test_static_argnames_unknown_name():
    msg = raises(ValueError, mj.jit, with_mode, static_argnames=("moed",))
    assert_names(msg, "'moed'", "`with_mode`", "no parameter")


def test_static_argnums_must_be_ints():
    msg = raises(TypeError, mj.jit, with_mode, static_argnums=("mode",))
    assert "static_argnums must be ints" in msg


def test_static_and_donated_at_once():
    with pytest.raises(ValueError, match="both static and donated"):
        mj.jit(with_mode, static_argnums=1, donate_argnums=1)


def test_static_argnames_for_kwargs_catch_all_is_allowed():
    def f(x, **opts):
        return x * opts["k"]

    jf = mj.jit(f, static_argnames="k")
    np.testing.assert_array_equal(jf(np.ones(2), k=3), [3.0, 3.0])


def test_jit_of_a_non_callable():
    with pytest.raises(TypeError, match="callable"):
        mj.jit(3)


def test_returning_a_string_names_the_output():
    msg = raises(TypeError, mj.jit(lambda x: (x, "done")), 1.0)
    assert_names(msg, "str", "output[1]")


# --------------------------------------------------------------------------- shape errors


def strict_add(a, b):
    return lax.add(a, b)


def broadcast_add(a, b):
    return mnp.add(a, b) * 2


def test_lax_shape_error_inside_jit():
    msg = raises(TypeError, mj.jit(strict_add), np.ones(3), np.ones(4))
    assert_names(msg, "add", "f64[3]", "f64[4]", "equal shapes", THIS_FILE,
                 "return lax.add(a, b)", "minijit.numpy broadcasts")


def test_lax_shape_error_eagerly():
    msg = raises(TypeError, lax.add, np.ones(3), np.ones(4))
    assert_names(msg, "add", "f64[3]", "f64[4]")


def test_lax_dtype_error_inside_jit():
    msg = raises(TypeError, mj.jit(strict_add), np.ones(3), np.ones(3, np.float32))
    assert_names(msg, "equal dtypes", "f64[3]", "f32[3]", ".astype", "return lax.add(a, b)")


def test_mnp_broadcast_error_inside_jit():
    # JAX's TypeError for operands of one rank (tests/test_broadcast_errors.py)
    msg = raises(TypeError, mj.jit(broadcast_add), np.ones(3), np.ones(4))
    assert_names(msg, "broadcast", "(3,)", "(4,)", THIS_FILE, "return mnp.add(a, b) * 2")


def test_mnp_broadcast_error_eagerly():
    # JAX's ValueError for operands of different ranks
    msg = raises(ValueError, broadcast_add, np.ones((2, 3)), np.ones(2))
    assert_names(msg, "broadcast", "(2, 3)", "(2,)", "return mnp.add(a, b) * 2")


def test_operator_broadcast_error_inside_jit():
    msg = raises(TypeError, mj.jit(lambda a, b: a + b), np.ones(3), np.ones(4))
    assert_names(msg, "(3,)", "(4,)", THIS_FILE)


def test_failed_traces_leave_no_cache_entry():
    jf = mj.jit(strict_add)
    with pytest.raises(TypeError):
        jf(np.ones(3), np.ones(4))
    assert jf._cache_size() == 0 and jf.trace_count == 0
    np.testing.assert_array_equal(jf(np.ones(3), np.ones(3)), [2.0, 2.0, 2.0])
