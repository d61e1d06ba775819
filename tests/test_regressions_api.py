"""Regression tests for bugs at the API boundary: static-argument keys, 0-d array indices,
input layouts and byte order (cold and on the cached fast path), donation of a buffer that
another argument shares, and messages that named the wrong fix.

What JAX does in each case was measured with JAX 0.10.2 (jax_enable_x64 on) and is quoted
in the test's docstring.
"""

from __future__ import annotations

import importlib

import numpy as np
import pytest

import minijit as mj
import minijit.numpy as mnp
from minijit import errors

jit_module = importlib.import_module("minijit.jit")  # `minijit.jit` is the function

BACKENDS = ["interpreter", "numba"]


@pytest.fixture
def fast_path(monkeypatch):
    """A donation anywhere earlier in the session turns the fast path off for good (every call
    must then check for donated arrays); these tests need it on."""
    monkeypatch.setattr(jit_module, "_donated_any", [False])


# --------------------------------------------------------------------------- static values


def _scale():
    """A new function each time: the cache belongs to the function object, as in JAX."""
    def scale(x, n):
        return x * n

    return scale


def test_equal_static_values_of_different_types_are_different_keys():
    """JAX traces `f(x, 1)`, `f(x, 1.0)` and `f(x, True)` three times: static values are
    keyed by type as well as by equality (1 == 1.0 == True, and they hash alike)."""
    f = mj.jit(_scale(), static_argnums=1)
    x = np.ones(3, np.int64)
    assert f(x, 1).dtype == np.int64
    assert f(x, 1.0).dtype == np.float64  # was int64: the entry traced for `1` was reused
    assert f(x, True).dtype == np.int64
    assert f(x, np.int64(1)).dtype == np.int64
    assert f.trace_count == 4
    f(x, 1), f(x, 1.0)
    assert f.trace_count == 4  # the same value of the same type still hits


def test_static_type_key_by_keyword_too():
    f = mj.jit(_scale(), static_argnames="n")
    x = np.ones(3, np.int64)
    assert f(x, n=2).dtype == np.int64
    assert f(x, n=2.0).dtype == np.float64
    assert f.trace_count == 2


def test_cache_miss_explanation_says_the_type_changed():
    f = mj.jit(_scale(), static_argnums=1)
    x = np.ones(3)
    f(x, 1), f(x, 1.0), f(x, True)
    second, third = f.cache_misses[1:]
    assert "* at n (static), now 1.0 of type float and before 1 of type int" in second
    assert "different types" in second
    assert "now True of type bool" in third


# --------------------------------------------------------------------------- 0-d array indices

INDICES = [np.array(1), np.array(1, np.int32), np.array(1, np.uint8), np.int64(1)]


def _index_kinds():
    return [pytest.param(i, id=f"{type(i).__name__}-{i.dtype}") for i in INDICES] + [
        pytest.param("mnp", id="mnp.array")]


def _resolve(i):
    return mnp.array(1) if isinstance(i, str) else i


@pytest.mark.parametrize("index", _index_kinds())
@pytest.mark.parametrize("how", ["jit", "disable_jit", "eager"])
def test_a_0d_integer_array_is_an_index_everywhere(index, how):
    """JAX: `x[np.array(1)]`, `x[jnp.array(1)]` and `x.at[np.array(1)].set(v)` work under
    jit, under disable_jit and eagerly, as a NumPy int does."""
    x = np.arange(6.0).reshape(2, 3)

    def read_and_update(a):
        i = _resolve(index)
        return a[i], a[i, i], a.at[i].set(9.0), a.at[0, i].add(1.0)

    run = {"jit": mj.jit(read_and_update), "eager": lambda a: read_and_update(mnp.asarray(a)),
           "disable_jit": mj.jit(read_and_update)}[how]
    if how == "disable_jit":
        with mj.disable_jit():
            got = run(x)
    else:
        got = run(x)
    want = (x[1], x[1, 1], np.array([[0.0, 1, 2], [9, 9, 9]]), np.array([[0.0, 2, 2], [3, 4, 5]]))
    for g, w in zip(got, want):
        np.testing.assert_array_equal(np.asarray(g), w)


def test_a_traced_index_argument_works_under_disable_jit():
    """Under jit `i` is traced; under disable_jit it arrives as a 0-d Array (it used to raise
    in `.at`)."""
    f = mj.jit(lambda a, i: a.at[i].set(9.0) + a[i])
    x, i = np.arange(3.0), np.array(1)
    want = np.array([1.0, 10.0, 3.0])
    np.testing.assert_array_equal(f(x, i), want)
    with mj.disable_jit():
        np.testing.assert_array_equal(f(x, i), want)


def test_a_0d_float_array_is_still_refused_as_an_index():
    with pytest.raises(IndexError):
        mj.jit(lambda a: a[np.array(1.0)])(np.arange(3.0))


# --------------------------------------------------------------------------- layouts, byte order


def _layouts() -> dict[str, np.ndarray]:
    base = np.arange(12.0).reshape(3, 4)
    read_only = base.copy()
    read_only.flags.writeable = False
    raw = np.zeros(8 * 12 + 1, np.uint8)
    unaligned = raw[1:].view(np.float64).reshape(3, 4)
    unaligned[...] = base
    return {
        "fortran": np.asfortranarray(base),
        "non_contiguous": np.arange(24.0).reshape(3, 8)[:, ::2],
        "negative_strides": np.arange(12.0)[::-1].reshape(3, 4),
        "reversed_2d": base[::-1, ::-1],
        "transposed": np.arange(12.0).reshape(4, 3).T,
        "read_only": read_only,
        "unaligned": unaligned,
    }


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("layout", list(_layouts()))
@pytest.mark.parametrize("warm", [False, True], ids=["cold", "warm"])
def test_every_layout_gives_correct_results(fast_path, backend, layout, warm):
    """Non-contiguous, Fortran-order, negative-stride, read-only and unaligned inputs, as the
    first call (cold) and after a C-contiguous call of the same type filled the fast path."""
    f = mj.jit(lambda a, b: a * 2.0 + b, backend=backend)
    b = np.ones((3, 4))
    if warm:
        f(np.zeros((3, 4)), b)
        assert f._cache.fast, "the fast path is filled"
    x = _layouts()[layout]
    before = x.copy()
    for _ in range(2):  # the second call of this layout too
        np.testing.assert_array_equal(f(x, b), before * 2.0 + 1.0)
    np.testing.assert_array_equal(x, before)  # inputs are never written


def test_the_fast_path_gives_each_type_its_own_program(fast_path):
    """Serial compiled code is called on the fast path through its entry point, which checks
    nothing (`codegen.executable._entry_point`): an array of another dtype or rank would be
    read as the compiled type. Each must reach the program compiled for it, however the calls
    alternate."""
    f = mj.jit(lambda a: a * 2 + 1)
    cases = [np.arange(6.0), np.arange(6), np.arange(6, dtype=np.int32),
             np.arange(6.0, dtype=np.float32), np.arange(6.0).reshape(2, 3),
             np.arange(6, dtype=np.uint8), np.arange(6.0).reshape(1, 2, 3)]
    for _ in range(3):
        for x in cases:
            got = f(x)
            assert got.dtype == x.dtype and got.shape == x.shape
            np.testing.assert_array_equal(got, (x * 2 + 1).astype(x.dtype))
    assert len(f._cache.fast) == len(cases)


def test_the_fast_path_takes_only_arrays_of_the_programs_exact_types():
    invars = mj.make_jaxpr(lambda a: a + 1)(np.zeros(3, np.float32)).jaxpr.invars
    assert jit_module._exactly((np.zeros(3, np.float32),), invars)
    assert not jit_module._exactly((np.zeros(3),), invars)  # another dtype
    assert not jit_module._exactly((np.zeros(4, np.float32),), invars)  # another shape
    assert not jit_module._exactly((np.zeros(3, np.float32),) * 2, invars)  # another count


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("layout", list(_layouts()))
def test_every_layout_can_be_donated(backend, layout):
    f = mj.jit(lambda a, b: (a * 2.0)[::-1] + b, donate_argnums=0, backend=backend)
    x = _layouts()[layout]
    want = (x * 2.0)[::-1] + 1.0
    np.testing.assert_array_equal(f(x, np.ones((3, 4))), want)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("warm", [False, True], ids=["cold", "warm"])
def test_big_endian_input_is_refused_clearly_cold_and_warm(fast_path, backend, warm):
    """JAX refuses a '>f8' NumPy array with a TypeError on every call, cold or cached. Here a
    warm call used to reach compiled code (a Numba TypingError, or float64s read from
    swapped bytes: wrong values) because the fast path keyed on `dtype.num`, which `>f8` and
    `<f8` share."""
    f = mj.jit(lambda a: a * 2.0, backend=backend)
    if warm:
        f(np.zeros(3))
        assert f._cache.fast
    big = np.arange(3.0).astype(">f8")
    for _ in range(2):
        with pytest.raises(TypeError) as info:
            f(big)
        msg = str(info.value)
        assert "argument `a`" in msg and ">f8" in msg and "byte order" in msg
        assert "a.astype(np.float64)" in msg
    np.testing.assert_array_equal(f(big.astype(np.float64)), [0.0, 2.0, 4.0])  # the fix works


@pytest.mark.parametrize("dtype", [">f8", ">i8", ">u4"])
def test_big_endian_input_is_refused_clearly_eagerly_too(dtype):
    """Eagerly (and under disable_jit) the refusal named the dtype without its byte order:
    "minijit does not support dtype int64; supported dtypes: ..., int64, ...". """
    big = np.arange(3).astype(dtype)
    for run in (lambda: mnp.sin(big), lambda: mj.disable_jit()(lambda a: mnp.abs(a) * 2)(big)):
        with pytest.raises(TypeError, match="other byte order") as info:
            run()
        assert dtype in str(info.value) and f"astype(np.{big.dtype.newbyteorder('=')})" in str(
            info.value)


def test_big_endian_leaf_in_a_pytree_names_its_path():
    f = mj.jit(lambda p: p["w"] * 2.0)
    with pytest.raises(TypeError, match=r"argument `p\['w'\]`"):
        f({"w": np.ones(2, ">f8")})


# --------------------------------------------------------------------------- donation


def _donating_cases():
    # a * 2 + b is the issue's; the reversed one makes the Numba code read `a` after it wrote
    # part of its buffer, so any sharing shows
    return [pytest.param(lambda a, b: a * 2.0 + b, id="a*2+b"),
            pytest.param(lambda a, b: (a * 2.0)[::-1] + b, id="reversed")]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("fun", _donating_cases())
@pytest.mark.parametrize("overlap", ["same_array", "same_view", "overlapping_views"])
def test_donated_buffer_shared_with_another_argument_is_not_written(backend, fun, overlap):
    f = mj.jit(fun, donate_argnums=0, backend=backend)
    base = np.arange(10.0)
    a, b = {"same_array": (base, base), "same_view": (base[:5], base[:5]),
            "overlapping_views": (base[:5], base[1:6])}[overlap]
    want = fun(a.copy(), b.copy())
    np.testing.assert_array_equal(f(a, b), want)
    np.testing.assert_array_equal(base, np.arange(10.0))  # nothing was overwritten
    # treated as not donated for that call: the array can be passed again
    np.testing.assert_array_equal(f(a, b), want)


@pytest.mark.parametrize("backend", BACKENDS)
def test_donated_buffer_shared_with_a_captured_constant_is_not_written(backend):
    table = np.arange(5.0)
    f = mj.jit(lambda a: (a * 2.0)[::-1] + table, donate_argnums=0, backend=backend)
    want = (table * 2.0)[::-1] + table
    np.testing.assert_array_equal(f(table), want)
    np.testing.assert_array_equal(table, np.arange(5.0))
    np.testing.assert_array_equal(f(np.arange(5.0)), want)  # the constant is intact


@pytest.mark.parametrize("backend", BACKENDS)
def test_donation_without_sharing_still_donates(backend):
    f = mj.jit(lambda a, b: a * 2.0 + b, donate_argnums=0, backend=backend)
    a, b = np.arange(3.0), np.ones(3)
    np.testing.assert_array_equal(f(a, b), [1.0, 3.0, 5.0])
    with pytest.raises(RuntimeError, match="donated"):
        f(a, b)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("view", [lambda x: x[:3], lambda x: x.reshape(2, 3), lambda x: x[3:]])
def test_donating_a_view_never_changes_its_base(backend, view):
    """The caller still holds the base array: only the view was donated, so the compiled
    code must not write the memory they share (it runs on a copy instead)."""
    f = mj.jit(lambda a: (mnp.sin(a) * 2.0)[::-1] + 1.0, donate_argnums=0, backend=backend)
    x = np.arange(6.0)
    np.testing.assert_allclose(f(view(x)), (np.sin(view(np.arange(6.0))) * 2.0)[::-1] + 1.0)
    np.testing.assert_array_equal(x, np.arange(6.0))


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_result_of_jit_can_be_donated_in_place(backend):
    """An Array that jit returned views memory only it can reach: donating it reuses it."""
    f = mj.jit(lambda a: mnp.sin(a) * 2.0, donate_argnums=0, backend=backend)
    y = f(np.ones(4))
    assert not jit_module._views_other_memory(y)
    z = f(y)
    np.testing.assert_allclose(z, np.sin(np.sin(1.0) * 2.0) * 2.0)
    with pytest.raises(RuntimeError, match="donated"):
        f(y)


@pytest.mark.parametrize("backend", BACKENDS)
def test_compiled_function_protects_a_shared_donated_buffer(backend):
    fun = _donating_cases()[1].values[0]
    x = np.arange(5.0)
    compiled = mj.jit(fun, donate_argnums=0, backend=backend).lower(x, x).compile()
    np.testing.assert_array_equal(compiled(x, x), fun(x.copy(), x.copy()))
    np.testing.assert_array_equal(x, np.arange(5.0))


@pytest.mark.parametrize("nums", [5, 2, -3, (0, 7)])
def test_donate_argnums_out_of_range_is_a_value_error_at_jit_time(nums):
    """JAX: `jax.jit(lambda a, b: a, donate_argnums=5)` raises ValueError ("Jitted function
    has donate_argnums=(5,), but only accepts 2 positional arguments.") at jit() time; a
    negative one out of range too."""
    with pytest.raises(ValueError) as info:
        mj.jit(lambda a, b: a, donate_argnums=nums)
    assert "donate_argnums=" in str(info.value) and "2 positional" in str(info.value)


def test_negative_donate_argnums_counts_from_the_end():
    f = mj.jit(lambda a, b: a + b, donate_argnums=-1)
    assert f.spec.donate_argnums == {1}
    a, b = np.ones(3), np.ones(3)
    f(a, b)
    with pytest.raises(RuntimeError, match="argument `b`"):
        f(a, b)


def test_donate_argnums_must_be_ints():
    with pytest.raises(TypeError, match="donate_argnums must be ints"):
        mj.jit(lambda a, b: a, donate_argnums="a")


def test_donate_argnums_beyond_the_named_parameters_is_fine_with_varargs():
    mj.jit(lambda *args: args[0], donate_argnums=3)  # no error: args[3] may be passed


# --------------------------------------------------------------------------- messages


@pytest.fixture
def leaked():
    store = []

    @mj.jit
    def leak(x):
        store.append(x)
        return x

    leak(np.ones(3))
    return store[0]


def test_leaked_tracer_as_argument_is_an_unexpected_tracer_error(leaked):
    """JAX: UnexpectedTracerError, "Encountered an unexpected tracer. A function transformed
    by JAX had a side effect, allowing for a reference to an intermediate value with type
    float64[3] ... to escape ... The function being traced when the value leaked was leak".
    It used to say "mark it static"."""
    with pytest.raises(errors.UnexpectedTracerError) as info:
        mj.jit(lambda y: y + 1)(leaked)
    msg = str(info.value)
    assert "unexpected tracer" in msg and "argument `y`" in msg and "`leak`" in msg
    assert "escaped" in msg and "static" not in msg
    with pytest.raises(errors.UnexpectedTracerError):
        mj.make_jaxpr(lambda y: y + 1)(leaked)


@pytest.mark.parametrize("name, call, want", [
    ("sum", lambda a: np.sum(a), lambda a: a.sum()),
    ("sum_axis", lambda a: np.sum(a, axis=0, keepdims=True), lambda a: a.sum(0, keepdims=True)),
    ("prod", lambda a: np.prod(a), lambda a: a.prod()),
    ("mean", lambda a: np.mean(a), lambda a: a.mean()),
    ("max", lambda a: np.max(a, axis=1), lambda a: a.max(1)),
    ("min", lambda a: np.min(a), lambda a: a.min()),
    ("var", lambda a: np.var(a), lambda a: a.var()),
    ("std", lambda a: np.std(a), lambda a: a.std()),
    ("argmax", lambda a: np.argmax(a), lambda a: a.argmax()),
    ("transpose", lambda a: np.transpose(a), lambda a: a.T),
])
def test_numpy_reductions_on_a_tracer_work_as_in_jax(name, call, want):
    """NumPy hands `np.sum(x)` to `x.sum(axis=None, out=None)` for anything that is not an
    ndarray. JAX's tracers accept that (jax.jit(lambda x: np.sum(x)) works, and so do
    np.mean, np.max, np.var, np.argmax, np.transpose); minijit's said "unexpected keyword
    argument 'out'"."""
    x = np.arange(6.0).reshape(2, 3) - 2.0
    np.testing.assert_allclose(mj.jit(call)(x), want(x))


def test_numpy_reduction_into_out_is_refused_naming_mnp():
    """JAX: NotImplementedError "The 'out' argument to jnp.sum is not supported." """
    with pytest.raises(NotImplementedError, match=r"'out' argument to mnp\.sum"):
        mj.jit(lambda a: np.sum(a, out=np.zeros(())))(np.ones(3))


def test_numpy_elementwise_on_a_tracer_still_names_the_mnp_fix():
    with pytest.raises(errors.TracerArrayConversionError, match=r"mnp\.sin"):
        mj.jit(lambda a: np.sin(a))(np.ones(3))


@pytest.mark.parametrize("value", [2**70, 2**63, -(2**63) - 1])
def test_int_too_big_for_int64_names_the_argument(value):
    """JAX: OverflowError "An overflow was encountered while parsing an argument to a jitted
    computation, whose argument path is x" for 2**70, 2**63 and -2**63 - 1."""
    with pytest.raises(OverflowError) as info:
        mj.jit(lambda x, k: x + k)(1.0, value)
    msg = str(info.value)
    assert "argument `k`" in msg and "int64" in msg and str(value) in msg
    assert "C long" not in msg


def test_int64_extremes_are_accepted():
    f = mj.jit(lambda k: k)
    assert int(f(2**63 - 1)) == 2**63 - 1
    assert int(f(-(2**63))) == -(2**63)


def test_int_too_big_inside_a_pytree_names_its_path():
    with pytest.raises(OverflowError, match=r"argument `p\['n'\]`"):
        mj.jit(lambda p: p["n"] + 1)({"n": 2**64})


@pytest.mark.parametrize("expr", [
    lambda: mnp.add(2**70, 1),  # eager
    lambda: mj.jit(lambda x: x + 2**70)(np.ones(2)),  # a literal in the traced code
    lambda: mj.make_jaxpr(lambda x: mnp.multiply(x, -(2**63) - 1))(np.ones(2)),
])
def test_int_too_big_for_int64_in_the_code_is_an_overflow_error(expr):
    """JAX raises OverflowError for `jnp.add(2**70, 1)` and for `x + 2**70` under jit
    (float x included) rather than converting the int to a float."""
    with pytest.raises(OverflowError, match="does not fit in int64") as info:
        expr()
    assert "C long" not in str(info.value)


def test_the_fast_path_comes_back_once_donated_arrays_are_gone(monkeypatch):
    """A donation sent every later cached call of every function down the slow path (about
    20 times slower) for the rest of the process."""
    import gc
    import weakref

    jit_module = importlib.import_module("minijit.jit")
    # what earlier tests donated (and may still hold) is not this test's business
    monkeypatch.setattr(jit_module, "_donated", weakref.WeakValueDictionary())
    monkeypatch.setattr(jit_module, "_donated_any", [False])
    f = mj.jit(lambda x: x + 1.0)
    x = np.ones(3)
    f(x)
    donated = np.ones(3)
    mj.jit(lambda a: a * 2.0, donate_argnums=0)(donated)
    slow_calls = []
    real_call = jit_module.JitFunction._call
    monkeypatch.setattr(jit_module.JitFunction, "_call",
                        lambda self, a, k: slow_calls.append(1) or real_call(self, a, k))
    f(x)
    assert slow_calls == [1]  # a donated array is alive: the slow path checks every argument
    with pytest.raises(RuntimeError, match="donated"):
        f(donated)
    del donated
    gc.collect()
    f(x)  # the slow path sees no donated array left ...
    f(x)  # ... and the fast path is back
    assert slow_calls == [1, 1, 1]
