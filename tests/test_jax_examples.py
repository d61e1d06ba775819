"""Examples from JAX's documentation that run on minijit with only the imports changed.

Each test is one snippet from a page of JAX's documentation (named in the comment above it),
with `import jax` / `import jax.numpy as jnp` / `from jax import lax` replaced by minijit's
modules, and asserts the output that page shows. JAX's pages run without `jax_enable_x64`,
so where they show `float32`/`int32` minijit, which behaves as JAX does in 64-bit mode, gives
`float64`/`int64`; the comment says so, and the assertion is what JAX gives with x64 on.

The same file runs on real JAX, which is how every expected value here was checked:

    MINIJIT_EXAMPLES_ON_JAX=1 python -m pytest --noconftest -p no:cacheprovider \
        tests/test_jax_examples.py          # in an environment with jax and pytest

Where minijit differs from JAX on purpose (error wording, how arrays and tracers print), the
assertions check what both do; README.md's table "Where minijit differs from JAX on purpose"
lists those differences, and tests/test_readme_differences.py checks that table.
"""

import os
from functools import partial

import numpy as np
import pytest

if os.environ.get("MINIJIT_EXAMPLES_ON_JAX"):  # the same examples on real JAX, in 64-bit mode
    import jax
    import jax.numpy as jnp
    from jax import lax

    jax.config.update("jax_enable_x64", True)
else:
    import minijit as jax
    import minijit.numpy as jnp
    from minijit import lax

jit = jax.jit  # the pages' `from jax import jit`


def check(x, values, dtype, weak_type=False, rtol=0.0):
    """`x` is an array of `dtype` and `weak_type` holding `values` (what JAX's repr shows):
    exactly, or within `rtol`; `weak_type=None` leaves the weak type unchecked."""
    assert isinstance(x, jax.Array), type(x)
    assert x.dtype == np.dtype(dtype), x.dtype
    assert weak_type is None or x.weak_type == weak_type, x.weak_type
    np.testing.assert_allclose(np.asarray(x), values, rtol=rtol, atol=0)


# --- "Just-in-time compilation" (docs.jax.dev/en/latest/jit-compilation.html) ------------------


def test_jit_tutorial_make_jaxpr_leaves_out_side_effects():
    # How JAX transformations work: the jaxpr of log2 has no trace of global_list.append, yet
    # the append ran once, while tracing, and stored a tracer. (The page shows f32: no x64.)
    global_list = []

    def log2(x):
        global_list.append(x)
        ln_x = jnp.log(x)
        ln_2 = jnp.log(2.0)
        return ln_x / ln_2

    assert str(jax.make_jaxpr(log2)(3.0)) == (
        "{ lambda ; a:f64[]. let\n"
        "    b:f64[] = log a\n"
        "    c:f64[] = log 2.0:f64[]\n"
        "    d:f64[] = div b c\n"
        "  in (d,) }"
    )
    assert len(global_list) == 1 and "float64[]" in str(global_list[0])


def test_jit_tutorial_print_runs_only_while_tracing(capsys):
    # How JAX transformations work: print() shows a tracer, and only while tracing.
    def log2_with_print(x):
        print("printed x:", x)
        ln_x = jnp.log(x)
        ln_2 = jnp.log(2.0)
        return ln_x / ln_2

    jaxpr = str(jax.make_jaxpr(log2_with_print)(3.))
    printed = capsys.readouterr().out
    assert printed.startswith("printed x: ") and "float64[]" in printed
    assert "print" not in jaxpr


def test_jit_tutorial_jaxpr_records_the_branch_taken():
    # How JAX transformations work: a Python `if` on a static attribute (ndim) is resolved
    # while tracing, so the jaxpr holds only the branch taken. (The page shows i32.)
    def log2_if_rank_2(x):
        if x.ndim == 2:
            ln_x = jnp.log(x)
            ln_2 = jnp.log(2.0)
            return ln_x / ln_2
        else:
            return x

    printed = str(jax.make_jaxpr(log2_if_rank_2)(jax.numpy.array([1, 2, 3])))
    assert printed == "{ lambda ; a:i64[3]. let  in (a,) }"


def test_jit_tutorial_selu():
    # JIT compiling a function: selu_jit computes what selu computes.
    def selu(x, alpha=1.67, lambda_=1.05):
        return lambda_ * jnp.where(x > 0, x, alpha * jnp.exp(x) - alpha)

    x = jnp.arange(1000)  # the page uses 1,000,000 elements to time it
    selu_jit = jax.jit(selu)
    out = selu_jit(x).block_until_ready()
    assert out.dtype == np.float64  # int64 input, weak float scalars: float64 (page: float32)
    np.testing.assert_allclose(np.asarray(out), np.asarray(selu(x)), rtol=1e-15)


def test_jit_tutorial_conditions_on_values_fail():
    # Why can't we just JIT everything?: `if x > 0` and `while i < n` on traced values.
    def f(x):
        if x > 0:
            return x
        else:
            return 2 * x

    def g(x, n):
        i = 0
        while i < n:
            i += 1
        return x + i

    with pytest.raises(jax.errors.TracerBoolConversionError):
        jax.jit(f)(10)
    with pytest.raises(jax.errors.TracerBoolConversionError):
        jax.jit(g)(10, 20)


def test_jit_tutorial_jit_only_the_loop_body():
    # Why can't we just JIT everything?: jit the inner part, keep the Python loop outside.
    @jax.jit
    def loop_body(prev_i):
        return prev_i + 1

    def g_inner_jitted(x, n):
        i = 0
        while i < n:
            i = loop_body(i)
        return x + i

    check(g_inner_jitted(10, 20), 30, np.int64, weak_type=True)


def test_jit_tutorial_static_argnums_and_argnames():
    # Marking arguments as static: static_argnums, static_argnames, and the partial form.
    def f(x):
        if x > 0:
            return x
        else:
            return 2 * x

    def g(x, n):
        i = 0
        while i < n:
            i += 1
        return x + i

    f_jit_correct = jax.jit(f, static_argnums=0)
    assert f_jit_correct(10) == 10
    g_jit_correct = jax.jit(g, static_argnames=["n"])
    check(g_jit_correct(10, 20), 30, np.int64, weak_type=True)

    @partial(jax.jit, static_argnames=["n"])
    def g_jit_decorated(x, n):
        i = 0
        while i < n:
            i += 1
        return x + i

    check(g_jit_decorated(10, 20), 30, np.int64, weak_type=True)


def test_jit_tutorial_jit_of_a_new_function_retraces():
    # JIT and caching: jit(partial(...)) and jit(lambda ...) in a loop trace on every call;
    # jit(unjitted_loop_body) finds its cached trace. We count traces with a Python side
    # effect, which runs only while tracing.
    traces = []

    def unjitted_loop_body(prev_i):
        traces.append(1)
        return prev_i + 1

    def g_inner_jitted_partial(x, n):
        i = 0
        while i < n:
            i = jax.jit(partial(unjitted_loop_body))(i)
        return x + i

    def g_inner_jitted_lambda(x, n):
        i = 0
        while i < n:
            i = jax.jit(lambda x: unjitted_loop_body(x))(i)
        return x + i

    def g_inner_jitted_normal(x, n):
        i = 0
        while i < n:
            i = jax.jit(unjitted_loop_body)(i)
        return x + i

    # the first call of each gets a Python int, the later ones a weak int64 array: the same
    # abstract signature (i64[], weak), so it is the function that decides the retrace
    for g, expected_traces in [(g_inner_jitted_partial, 20), (g_inner_jitted_lambda, 20),
                               (g_inner_jitted_normal, 1)]:
        traces.clear()
        check(g(10, 20), 30, np.int64, weak_type=True)
        assert len(traces) == expected_traces, g.__name__


# --- "🔪 JAX - The Sharp Bits 🔪" (docs.jax.dev/en/latest/notebooks/Common_Gotchas_in_JAX.html)


def test_sharp_bits_pure_functions_print_side_effect(capsys):
    # Pure functions: the print runs on the first trace and again for a new type only.
    def impure_print_side_effect(x):
        print("Executing function")  # This is a side-effect
        return x

    print("First call: ", jit(impure_print_side_effect)(4.))
    print("Second call: ", jit(impure_print_side_effect)(5.))
    print("Third call, different type: ", jit(impure_print_side_effect)(jnp.array([5.])))
    assert capsys.readouterr().out == (
        "Executing function\n"
        "First call:  4.0\n"
        "Second call:  5.0\n"
        "Executing function\n"
        "Third call, different type:  [5.]\n"
    )


def test_sharp_bits_pure_functions_globals_are_baked_in(capsys):
    # Pure functions: a global is read at trace time; the cached trace keeps the old value.
    g = 0.

    def impure_uses_globals(x):
        return x + g

    print("First call: ", jit(impure_uses_globals)(4.))
    g = 10.  # Update the global
    print("Second call: ", jit(impure_uses_globals)(5.))
    print("Third call, different type: ", jit(impure_uses_globals)(jnp.array([4.])))
    assert capsys.readouterr().out == (
        "First call:  4.0\n"
        "Second call:  5.0\n"
        "Third call, different type:  [14.]\n"
    )


def test_sharp_bits_pure_functions_saving_a_global_keeps_a_tracer():
    # Pure functions: a value saved to a global while tracing is a tracer, not 4.0.
    saved = {}

    def impure_saves_global(x):
        saved["g"] = x  # the page writes `global g; g = x`
        return x

    check(jit(impure_saves_global)(4.), 4.0, np.float64, weak_type=True)
    assert "float64[]" in str(saved["g"])  # JAX prints JitTracer(~float64[]) here


def test_sharp_bits_pure_functions_internal_state_is_fine():
    # Pure functions: state that never leaves the function does no harm.
    def pure_uses_internal_state(x):
        state = dict(even=0, odd=0)
        for i in range(10):
            state['even' if i % 2 == 0 else 'odd'] += x
        return state['even'] + state['odd']

    check(jit(pure_uses_internal_state)(5.), 50.0, np.float64, weak_type=True)


def test_sharp_bits_pure_functions_iterators_in_control_flow():
    # Pure functions: an iterator's state is read once, while tracing the loop body.
    array = jnp.arange(10)
    # (JAX's result is not weak: a strong body output makes the weak 0 carry strong; minijit
    # keeps the carry weak, so the weak type is left unchecked here)
    check(lax.fori_loop(0, 10, lambda i, x: x + array[i], 0), 45, np.int64, weak_type=None)
    iterator = iter(range(10))
    check(lax.fori_loop(0, 10, lambda i, x: x + next(iterator), 0), 0, np.int64,
          weak_type=True)  # "unexpected result 0"

    array_operand = jnp.array([0.])
    check(lax.cond(True, lambda x: x + 1, lambda x: x - 1, array_operand), [1.], np.float64)


def test_sharp_bits_in_place_update_is_an_error():
    # In-place updates: item assignment raises TypeError and points to .at.
    jax_array = jnp.zeros((3, 3), dtype=jnp.float32)
    with pytest.raises(TypeError, match=r"x = x\.at\[idx\]\.set\(y\)"):
        jax_array[1, :] = 1.0


def test_sharp_bits_in_place_updates():
    # In-place updates: x.at[idx].set(y) returns a new array and leaves the old one alone.
    jax_array = jnp.zeros((3, 3), dtype=jnp.float32)
    updated_array = jax_array.at[1, :].set(1.0)
    check(updated_array, [[0, 0, 0], [1, 1, 1], [0, 0, 0]], np.float32)
    check(jax_array, np.zeros((3, 3)), np.float32)  # "original array unchanged"

    # Array updates with other operations
    jax_array = jnp.ones((5, 6))
    new_jax_array = jax_array.at[::2, 3:].add(7.)
    expected = np.ones((5, 6))
    expected[::2, 3:] += 7
    check(new_jax_array, expected, np.float64)  # the page shows float32 (no x64)


def test_sharp_bits_at_property_operations():
    # The `.at` documentation the page links to (jax.numpy.ndarray.at): set, add, multiply
    # (and its short name mul), divide, power, min, max, get; none changes x.
    x = jnp.arange(5.0)
    check(x.at[1:3].set(2.0), [0, 2, 2, 3, 4], np.float64)
    check(x.at[1:3].add(2.0), [0, 3, 4, 3, 4], np.float64)
    check(x.at[1:3].multiply(2.0), [0, 2, 4, 3, 4], np.float64)
    check(x.at[1:3].mul(2.0), [0, 2, 4, 3, 4], np.float64)
    check(x.at[1:3].divide(2.0), [0, 0.5, 1, 3, 4], np.float64)
    check(x.at[1:3].power(2), [0, 1, 4, 3, 4], np.float64)
    check(jnp.arange(5).at[1:3].divide(2), [0, 0.5, 1, 3, 4], np.float64)  # x[idx] /= y
    check(jnp.arange(5).at[1:3].power(2), [0, 1, 4, 3, 4], np.int64)
    check(jit(lambda x, i: x.at[i].divide(4.0))(x, 2), [0, 1, 0.5, 3, 4], np.float64)
    check(x.at[1:3].min(2.0), [0, 1, 2, 3, 4], np.float64)
    check(x.at[1:3].max(2.0), [0, 2, 2, 3, 4], np.float64)
    check(x.at[1].get(), 1.0, np.float64)
    check(x, [0, 1, 2, 3, 4], np.float64)


def test_sharp_bits_out_of_bounds_indexing():
    # Out-of-bounds indexing: a read clamps to the last element, an update is dropped, and
    # .at[...].get(mode='fill') chooses the value instead. (The page shows int32/float32.)
    with pytest.raises(IndexError):
        np.arange(10)[11]
    check(jnp.arange(10)[11], 9, np.int64)
    check(jnp.arange(10.0).at[11].get(), 9.0, np.float64)
    check(jnp.arange(10.0).at[11].get(mode='fill', fill_value=jnp.nan), np.nan, np.float64)
    check(jnp.arange(10).at[11].add(23), np.arange(10), np.int64)


def test_sharp_bits_non_array_inputs():
    # Non-array inputs: NumPy vs. JAX. jnp.sum([1, 2, 3]) is a TypeError; converting the list
    # inside a traced function makes one input per element.
    assert np.sum([1, 2, 3]) == 6
    with pytest.raises(TypeError, match="sum requires ndarray or scalar arguments"):
        jnp.sum([1, 2, 3])

    def permissive_sum(x):
        return jnp.sum(jnp.array(x))

    x = list(range(10))
    check(permissive_sum(x), 45, np.int64)
    jaxpr = jax.make_jaxpr(permissive_sum)(x)
    assert len(jaxpr.jaxpr.invars) == 10  # "each element ... a separate JAX variable"
    assert "concatenate[dimension=0]" in str(jaxpr)
    check(jnp.sum(jnp.array(x)), 45, np.int64)


def test_sharp_bits_dynamic_shapes():
    # Dynamic shapes: boolean masking works eagerly, fails under jit, and three-argument
    # jnp.where computes the same sum with a static shape.
    def nansum(x):
        mask = ~jnp.isnan(x)  # boolean mask selecting non-nan values
        x_without_nans = x[mask]
        return x_without_nans.sum()

    x = jnp.array([1, 2, jnp.nan, 3, 4])
    check(nansum(x), 10.0, np.float64)
    with pytest.raises(jax.errors.NonConcreteBooleanIndexError):
        jax.jit(nansum)(x)

    @jax.jit
    def nansum_2(x):
        mask = ~jnp.isnan(x)  # boolean mask selecting non-nan values
        return jnp.where(mask, x, 0).sum()

    check(nansum_2(x), 10.0, np.float64)


def test_sharp_bits_debugging_nans():
    # NaNs: with jax_debug_nans on, making a NaN raises FloatingPointError, eagerly and
    # under jit (which re-runs the function op by op to find the operation).
    @jit
    def f(x, y):
        a = x * y
        b = (x + y) / (x - y)
        c = a + 2
        return a + b * c

    x = jnp.array([2., 0.])
    y = jnp.array([3., 0.])
    check(f(x, y), [-34.0, np.nan], np.float64)  # off by default: the NaN comes back
    jax.config.update("jax_debug_nans", True)
    try:
        with pytest.raises(FloatingPointError):
            jnp.divide(0., 0.)
        with pytest.raises(FloatingPointError):
            f(x, y)
    finally:
        jax.config.update("jax_debug_nans", False)


def test_sharp_bits_double_precision():
    # Double (64bit) precision: with jax_enable_x64, float64 is honoured. (The page draws
    # random.uniform(random.key(0), (1000,), dtype=jnp.float64); minijit has no jax.random,
    # so this makes the same array shape with ones.) minijit is always in 64-bit mode.
    x = jnp.ones((1000,), dtype=jnp.float64)
    assert x.dtype == np.dtype('float64')
    assert jnp.arange(3.0).dtype == np.float64 and jnp.arange(3).dtype == np.int64


# --- "Control flow and logical operators with JIT" (docs.jax.dev/en/latest/control-flow.html)


def test_control_flow_python_loops_are_unrolled():
    # Python control flow that does not depend on values works, and unrolls.
    @jit
    def f(x):
        for i in range(3):  # noqa: B007 - the page's code
            x = 2 * x
        return x

    check(f(3), 24, np.int64, weak_type=True)

    @jit
    def g(x):
        y = 0.
        for i in range(x.shape[0]):
            y = y + x[i]
        return y

    check(g(jnp.array([1., 2., 3.])), 6.0, np.float64)


def test_control_flow_value_dependent_python_control_flow_fails():
    # `if x < 3` and `(x > 0) and (x < 3)` need a concrete bool: TracerBoolConversionError.
    @jit
    def f(x):
        if x < 3:
            return 3. * x ** 2
        else:
            return -4 * x

    @jit
    def g(x):
        return (x > 0) and (x < 3)

    with pytest.raises(jax.errors.TracerBoolConversionError):
        f(2)
    with pytest.raises(jax.errors.TracerBoolConversionError):
        g(2)


def test_control_flow_static_argnames():
    # static_argnames traces on the concrete value: the `if` runs, the loop unrolls.
    def f(x):
        if x < 3:
            return 3. * x ** 2
        else:
            return -4 * x

    f = jit(f, static_argnames='x')
    check(f(2.), 12.0, np.float64, weak_type=True)

    def f(x, n):
        y = 0.
        for i in range(n):
            y = y + x[i]
        return y

    f = jit(f, static_argnames='n')
    check(f(jnp.array([2., 3., 4.]), 2), 5.0, np.float64)  # the page shows float32


def test_control_flow_shapes_from_argument_values():
    # Functions with argument-value dependent shapes: a traced length cannot be a shape.
    def example_fun(length, val):
        return jnp.ones((length,)) * val

    check(example_fun(5, 4), [4.0] * 5, np.float64)
    bad_example_jit = jit(example_fun)
    with pytest.raises(TypeError):  # JAX: a TypeError; minijit: ConcretizationTypeError, one
        bad_example_jit(10, 4)
    good_example_jit = jit(example_fun, static_argnames='length')
    check(good_example_jit(10, 4), [4.0] * 10, np.float64)
    check(good_example_jit(5, 4), [4.0] * 5, np.float64)


def test_control_flow_print_inside_jit_shows_tracers(capsys):
    # A common gotcha: print() inside jit prints tracers, once.
    @jit
    def f(x):
        print(x)
        y = 2 * x
        print(y)
        return y

    check(f(2), 4, np.int64, weak_type=True)
    check(f(3), 6, np.int64, weak_type=True)
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 2 and all("int64[]" in line for line in lines)


def test_control_flow_cond():
    # cond: the branches take the operands (any number of them) and return the same types.
    operand = jnp.array([0.])
    check(lax.cond(True, lambda x: x + 1, lambda x: x - 1, operand), [1.], np.float64)
    check(lax.cond(False, lambda x: x + 1, lambda x: x - 1, operand), [-1.], np.float64)
    # (the page's comments show float32: no x64)

    @jit
    def f(pred, x, y):
        return lax.cond(pred, lambda x, y: x + y, lambda x, y: x - y, x, y)

    check(f(True, 1., 2.), 3.0, np.float64, weak_type=True)
    check(f(False, 1., 2.), -1.0, np.float64, weak_type=True)


def test_control_flow_switch():
    # lax.switch "is like lax.cond, but allows switching between any number of callable
    # choices"; its documentation (jax.lax.switch) clamps the index into range.
    branches = [lambda x: x + 1, lambda x: x * 2, lambda x: -x]
    check(lax.switch(1, branches, 5.), 10.0, np.float64, weak_type=True)
    check(lax.switch(7, branches, 5.), -5.0, np.float64, weak_type=True)  # clamped to 2
    check(lax.switch(-1, branches, 5.), 6.0, np.float64, weak_type=True)  # clamped to 0
    check(jit(lambda i, x: lax.switch(i, branches, x))(1, jnp.arange(3.)), [0, 2, 4],
          np.float64)


def test_control_flow_select_and_where():
    # lax.select is "a batched version of lax.cond" on precomputed arrays; three-argument
    # jnp.where is its NumPy-style wrapper.
    pred = jnp.array([True, False, True])
    check(lax.select(pred, jnp.array([1., 2., 3.]), jnp.array([4., 5., 6.])), [1, 5, 3],
          np.float64)

    @jit
    def f(x):
        return jnp.where(x < 3, 3.0 * x ** 2, -4 * x)

    check(f(jnp.arange(6.0)), [0, 3, 12, -12, -16, -20], np.float64)


def test_control_flow_while_loop():
    # while_loop, with the page's python equivalent. (The page's comment shows int32.)
    init_val = 0
    cond_fun = lambda x: x < 10  # noqa: E731 - the page's code
    body_fun = lambda x: x + 1  # noqa: E731
    check(lax.while_loop(cond_fun, body_fun, init_val), 10, np.int64, weak_type=True)


def test_control_flow_fori_loop():
    # fori_loop, with the page's python equivalent. (The page's comment shows int32.)
    init_val = 0
    start = 0
    stop = 10
    body_fun = lambda i, x: x + i  # noqa: E731 - the page's code
    check(lax.fori_loop(start, stop, body_fun, init_val), 45, np.int64, weak_type=True)


def test_control_flow_logical_operators():
    # Logical operators: jnp.logical_and (and &) do not short-circuit and work under jit;
    # Python's `and` on an array of several elements raises, as in NumPy.
    def python_check_positive_even(x):
        is_even = x % 2 == 0
        # `and` short-circults, so when `is_even` is `False`, `x > 0` is not evaluated.
        return is_even and (x > 0)

    @jit
    def jax_check_positive_even(x):
        is_even = x % 2 == 0
        # `logical_and` does not short circuit, so `x > 0` is always evaluated.
        return jnp.logical_and(is_even, x > 0)

    assert python_check_positive_even(24) is True
    check(jax_check_positive_even(24), True, np.bool_)
    x = jnp.array([-1, 2, 5])
    check(jax_check_positive_even(x), [False, True, False], np.bool_)
    with pytest.raises(ValueError, match="truth value of an array"):
        python_check_positive_even(x)

    # "Bitwise operators (&, |, ~) can also be used with jit."
    check(jit(lambda x: (x % 2 == 0) & (x > 0))(x), [False, True, False], np.bool_)
    check(jit(lambda x: ~(x > 0) | (x == 5))(x), [True, False, True], np.bool_)


# --- "Introduction to debugging" (docs.jax.dev/en/latest/debugging.html) and its page
# "JAX debugging flags" (docs.jax.dev/en/latest/debugging/flags.html)


def test_debugging_print_shows_tracers(capsys):
    # jax.debug.print for simple inspection: Python's print sees tracers, at trace time.
    @jax.jit
    def f(x):
        print("print(x) ->", x)
        y = jnp.sin(x)
        print("print(y) ->", y)
        return y

    f(2.)
    lines = capsys.readouterr().out.splitlines()
    assert [line.split(" -> ")[0] for line in lines] == ["print(x)", "print(y)"]
    assert all("float64[]" in line for line in lines)  # JAX: JitTracer(~float64[])


def test_debugging_debug_print_shows_values(capsys):
    # jax.debug.print prints the runtime values, on every call. (The page shows the float32
    # sin(2), 0.9092974066734314; in 64-bit mode it is the float64 value.)
    @jax.jit
    def f(x):
        jax.debug.print("jax.debug.print(x) -> {x}", x=x)
        y = jnp.sin(x)
        jax.debug.print("jax.debug.print(y) -> {y}", y=y)
        return y

    f(2.)
    f(2.)
    assert capsys.readouterr().out == (
        "jax.debug.print(x) -> 2.0\n"
        "jax.debug.print(y) -> 0.9092974268256817\n"
    ) * 2


def test_debugging_disable_jit():
    # jax_disable_jit: the function runs eagerly, so a Python `if` on a value works (the
    # page calls breakpoint() there; we record that the branch ran).
    seen = []

    def f(x):
        y = jnp.log(x)
        if jnp.isnan(y):
            seen.append("nan")  # the page: breakpoint()
        return y

    with pytest.raises(jax.errors.TracerBoolConversionError):
        jax.jit(f)(-2.)
    with jax.disable_jit():
        check(jax.jit(f)(-2.), np.nan, np.float64, weak_type=True)
    jax.config.update("jax_disable_jit", True)
    try:
        check(jax.jit(f)(-2.), np.nan, np.float64, weak_type=True)
    finally:
        jax.config.update("jax_disable_jit", False)
    assert seen == ["nan", "nan"]


def test_debugging_flags_debug_nans():
    # jax_debug_nans configuration option and context manager: FloatingPointError eagerly and
    # under jit; `with jax.debug_nans(False)` turns it off again.
    def f(x):
        w = 3 * jnp.square(x)
        return jnp.log(-w)

    with jax.debug_nans(True):
        with pytest.raises(FloatingPointError):
            f(5.)
        with pytest.raises(FloatingPointError):
            jax.jit(f)(5.)
        with jax.debug_nans(False):
            check(jax.jit(f)(5.), np.nan, np.float64, weak_type=True)


# --- "Ahead-of-time lowering and compilation" (docs.jax.dev/en/latest/aot.html) -------------


def f_aot(x, y):
    return 2 * x + y


def test_aot_lower_compile_and_call():
    # jit(f).lower(x, y) -> Lowered with .as_text(); .compile() -> Compiled; call it.
    # (The page shows int32; its text is StableHLO, minijit's is the generated Python.)
    x, y = 3, 4
    lowered = jax.jit(f_aot).lower(x, y)
    assert isinstance(lowered.as_text(), str) and lowered.as_text()
    compiled = lowered.compile()
    check(compiled(x, y), 10, np.int64, weak_type=True)


def test_aot_lowering_with_static_arguments():
    # Lowering with static arguments: the compiled function takes the dynamic ones only.
    lowered_with_x = jax.jit(f_aot, static_argnums=0).lower(7, 8)
    check(lowered_with_x.compile()(5), 19, np.int64, weak_type=True)


def test_aot_compiled_function_rejects_other_types():
    # "Invoking an AOT-compiled function with arguments that are incompatible with its
    # lowering raises an error": a TypeError naming each argument. (JAX spells the types
    # int64[3], minijit i64[3], as in its jaxprs.)
    compiled = jax.jit(f_aot).lower(3, 4).compile()
    x_1d = y_1d = jnp.arange(3)
    with pytest.raises(TypeError, match=r"(?s)x.*\[3\].*y"):
        compiled(x_1d, y_1d)
    with pytest.raises(TypeError, match=r"f(loat)?64\[\]"):
        compiled(72., 72.)


# --- "Type promotion semantics" (docs.jax.dev/en/latest/type_promotion.html) -----------------


def test_type_promotion_weak_python_scalars():
    # Weakly-typed values in JAX: a Python scalar takes the array's dtype; a typed scalar
    # promotes.
    x = jnp.arange(5, dtype='int8')
    check(2 * x, [0, 2, 4, 6, 8], np.int8)
    check(jnp.int32(2) * x, [0, 2, 4, 6, 8], np.int32)


def test_type_promotion_weak_asarray():
    # Weakly-typed values in JAX: jnp.asarray(2) is weakly typed, with dtype= it is strong.
    # (The page shows int32: no x64.) A weak 2.0 does not widen a float32.
    check(jnp.asarray(2), 2, np.int64, weak_type=True)
    check(jnp.asarray(2, dtype='int32'), 2, np.int32)
    check(jnp.asarray(2.0), 2.0, np.float64, weak_type=True)
    check(jnp.array(2.0), 2.0, np.float64, weak_type=True)
    check(jnp.asarray(2.0) + jnp.float32(1), 3.0, np.float32)
    check(jnp.asarray(2) * jnp.ones(2, jnp.int8), [2, 2], np.int8)
    # asarray(True) is a strong bool (a bool is the bottom of the lattice, weak or not)
    check(jnp.asarray(True), True, np.bool_)
    check(jnp.asarray(True) + jnp.int8(1), 2, np.int8)


def test_type_promotion_jax_value_precision_wins():
    # "jnp.int16(1) + 1 will return int16"; "jnp.int16(1) + np.array(1) will return int64";
    # and the operator-dispatch example np.int16(1) + 1 + jnp.int16(1).
    assert (jnp.int16(1) + 1).dtype == np.int16
    assert (jnp.int16(1) + np.array(1)).dtype == np.int64
    assert (np.int16(1) + 1 + jnp.int16(1)).dtype == np.int16


@pytest.mark.parametrize("left, right, dtype, weak_type", [
    # a few cells of the page's binary promotion table, as arrays (or Python scalars)
    (np.uint8, np.int8, np.int16, False),  # u1 i1 -> i2
    (np.uint32, np.int16, np.int64, False),  # u4 i2 -> i8
    (np.uint64, np.int8, np.float64, True),  # u8 i1 -> f*, a weak float
    (np.int32, np.float32, np.float32, False),  # i4 f4 -> f4 (NumPy: f8)
    (np.bool_, int, np.int64, True),  # b1 i* -> i*
    (np.uint8, int, np.uint8, False),  # u1 i* -> u1
    (np.int64, float, np.float64, True),  # i8 f* -> f*
    (np.float32, float, np.float32, False),  # f4 f* -> f4
    (np.uint16, np.float32, np.float32, False),  # u2 f4 -> f4
])
def test_type_promotion_table(left, right, dtype, weak_type):
    def value(t):
        return t(1) if t in (int, float) else jnp.ones((1,), dtype=t)

    check(value(left) + value(right), [2], dtype, weak_type)
    check(value(right) + value(left), [2], dtype, weak_type)  # the table is symmetric


# --- "Errors" (docs.jax.dev/en/latest/errors.html): each class's examples ---------------------


def test_errors_concretization_type_error():
    # ConcretizationTypeError, "Traced value where static value is expected": a traced axis.
    @jit
    def func(x, axis):
        return x.min(axis)

    with pytest.raises(jax.errors.ConcretizationTypeError):
        func(jnp.arange(4), 0)

    @jit(static_argnums=1)  # the page's decorator form (JAX >= 0.8.1)
    def func(x, axis):
        return x.min(axis)

    check(func(jnp.arange(4), 0), 0, np.int64)  # the page shows int32

    @jit
    def func(x):
        return jnp.where(x > 1, x, 0).sum()

    check(func(jnp.arange(4)), 5, np.int64)


def test_errors_tracer_bool_conversion_error():
    # TracerBoolConversionError (a ConcretizationTypeError): traced values in control flow,
    # a traced flag, and Python's min; each with the page's fix.
    assert issubclass(jax.errors.TracerBoolConversionError, jax.errors.ConcretizationTypeError)

    @jit
    def func(x, y):
        return x if x.sum() < y.sum() else y

    with pytest.raises(jax.errors.ConcretizationTypeError):  # `if x > 0` in jit, too
        func(jnp.ones(4), jnp.zeros(4))

    @jit
    def func(x, y):
        return jnp.where(x.sum() < y.sum(), x, y)

    check(func(jnp.ones(4), jnp.zeros(4)), [0., 0., 0., 0.], np.float64)

    @jit
    def func(x, normalize=True):
        if normalize:
            return x / x.sum()
        return x

    with pytest.raises(jax.errors.TracerBoolConversionError):
        func(jnp.arange(5), True)

    @jit(static_argnames=['normalize'])
    def func(x, normalize=True):
        if normalize:
            return x / x.sum()
        return x

    # (XLA divides by multiplying with 1/sum, so JAX's 0.3 is 0.30000000000000004)
    check(func(jnp.arange(5), True), [0., 0.1, 0.2, 0.3, 0.4], np.float64, rtol=1e-15)

    @jit
    def func(x):
        return min(x, 0)

    with pytest.raises(jax.errors.TracerBoolConversionError):
        func(2)

    @jit
    def func(x):
        return jnp.minimum(x, 0)

    check(func(2), 0, np.int64, weak_type=True)


def test_errors_tracer_integer_conversion_error():
    # TracerIntegerConversionError (not a ConcretizationTypeError): indexing a list with a
    # tracer, and range() of a tracer; fixed with an array or a static argument.
    assert not issubclass(jax.errors.TracerIntegerConversionError,
                          jax.errors.ConcretizationTypeError)
    L = [1, 2, 3]

    @jit
    def func(i):
        return L[i]

    with pytest.raises(jax.errors.TracerIntegerConversionError):
        func(0)

    @jit
    def func(i):
        return jnp.array(L)[i]

    check(func(0), 1, np.int64)

    @jit(static_argnums=0)
    def func(i):
        return L[i]

    check(func(0), 1, np.int64, weak_type=True)

    @jit
    def count_to(n):
        return sum(range(n))

    with pytest.raises(jax.errors.TracerIntegerConversionError):
        count_to(3)


def test_errors_tracer_array_conversion_error():
    # TracerArrayConversionError: a NumPy function on a tracer, and a NumPy array indexed
    # with a tracer; fixed with jnp, jnp.asarray or a static index.
    @jit
    def func(x):
        return np.sin(x)

    with pytest.raises(jax.errors.TracerArrayConversionError):
        func(np.arange(4))

    @jit
    def func(x):
        return jnp.sin(x)

    np.testing.assert_allclose(func(jnp.arange(4)), np.sin(np.arange(4)), rtol=1e-15)

    x = np.arange(10)

    @jit
    def func(i):
        return x[i]

    with pytest.raises(jax.errors.TracerArrayConversionError):
        func(0)

    @jit
    def func(i):
        return jnp.asarray(x)[i]

    check(func(0), 0, np.int64)

    @jit(static_argnums=(0,))
    def func(i):
        return x[i]

    check(func(0), 0, np.int64)


def test_errors_unexpected_tracer_error():
    # UnexpectedTracerError, "Life-cycle of a leaked value": the error comes when the leaked
    # tracer is used; returning the value fixes it; checking_leaks raises at the leak.
    outs = []

    @jit
    def side_effecting(x):
        y = x + 1
        outs.append(y)

    side_effecting(1)
    with pytest.raises(jax.errors.UnexpectedTracerError):
        outs[0] + 1

    outs = []

    @jit
    def not_side_effecting(x):
        y = x + 1
        return y

    outs.append(not_side_effecting(1))
    check(outs[0] + 1, 3, np.int64, weak_type=True)  # "all good! no longer a leaked value."

    outs = []

    @jit
    def side_effecting_2(x):
        y = x + 1
        outs.append(y)

    # JAX raises a plain Exception ("Leaked trace ..."); minijit an UnexpectedTracerError
    with jax.checking_leaks(), pytest.raises(Exception, match="Leaked"):
        side_effecting_2(1)


def test_errors_non_concrete_boolean_index_error():
    # NonConcreteBooleanIndexError: masks under jit, to read or to update; the fix is the
    # three-argument jnp.where. (The page shows int32.)
    @jax.jit
    def positive_values(x):
        return x[x > 0]

    @jax.jit
    def sum_of_positive(x):
        return x[x > 0].sum()

    @jax.jit
    def manual_clip(x):
        return x.at[x < 0].set(0)

    for f, x in [(positive_values, jnp.arange(-5, 5)), (sum_of_positive, jnp.arange(-5, 5)),
                 (manual_clip, jnp.arange(-2, 2))]:
        with pytest.raises(jax.errors.NonConcreteBooleanIndexError,
                           match="Array boolean indices must be concrete"):
            f(x)

    @jax.jit
    def sum_of_positive(x):
        return jnp.where(x > 0, x, 0).sum()

    check(sum_of_positive(jnp.arange(-5, 5)), 10, np.int64)

    @jax.jit
    def manual_clip(x):
        return jnp.where(x < 0, 0, x)

    check(manual_clip(jnp.arange(-2, 2)), [0, 0, 0, 1], np.int64)


# --- integer shifts and conversions
# Outputs as JAX 0.10.2 gives them with jax_enable_x64 (int64 where the docs, in 32-bit mode,
# show int32).


def test_left_shift_docstring():
    # `jnp.left_shift`'s docstring examples.
    def print_binary(x):
        return [bin(int(val)) for val in x]

    x1 = jnp.arange(5)
    assert print_binary(x1) == ["0b0", "0b1", "0b10", "0b11", "0b100"]
    x2 = 1
    result = jnp.left_shift(x1, x2)
    np.testing.assert_array_equal(result, [0, 2, 4, 6, 8])
    assert result.dtype == jnp.int64
    assert print_binary(result) == ["0b0", "0b10", "0b100", "0b110", "0b1000"]

    x3 = 4
    assert print_binary([x3]) == ["0b100"]
    x4 = jnp.array([1, 2, 3, 4])
    result1 = jnp.left_shift(x3, x4)
    np.testing.assert_array_equal(result1, [8, 16, 32, 64])
    assert print_binary(result1) == ["0b1000", "0b10000", "0b100000", "0b1000000"]


def test_right_shift_docstring():
    # `jnp.right_shift`'s docstring examples.
    def print_binary(x):
        return [bin(int(val)) for val in x]

    x1 = jnp.array([1, 2, 4, 8])
    assert print_binary(x1) == ["0b1", "0b10", "0b100", "0b1000"]
    x2 = 1
    result = jnp.right_shift(x1, x2)
    np.testing.assert_array_equal(result, [0, 1, 2, 4])
    assert print_binary(result) == ["0b0", "0b1", "0b10", "0b100"]

    x1 = 16
    assert print_binary([x1]) == ["0b10000"]
    x2 = jnp.array([1, 2, 3, 4])
    result = jnp.right_shift(x1, x2)
    np.testing.assert_array_equal(result, [8, 4, 2, 1])
    assert result.dtype == jnp.int64
    assert print_binary(result) == ["0b1000", "0b100", "0b10", "0b1"]


def test_sharp_bits_unsafe_cast():
    # "Sharp bits", Miscellaneous divergences from NumPy: an unsafe float-to-int cast.
    # NumPy's np.arange(254.0, 258.0).astype('uint8') is [254, 255, 0, 1] on x86 (C leaves
    # the cast undefined, so it is not asserted here); JAX's, and minijit's, saturates.
    out = jnp.arange(254.0, 258.0).astype('uint8')
    np.testing.assert_array_equal(out, [254, 255, 255, 255])
    assert out.dtype == jnp.uint8


def test_astype_docstring():
    # `jnp.astype`'s docstring examples.
    x = jnp.array([0, 1, 2, 3])
    out = x.astype('float32')
    np.testing.assert_array_equal(out, [0.0, 1.0, 2.0, 3.0])
    assert out.dtype == jnp.float32

    y = jnp.array([0.0, 0.5, 1.0])
    out = y.astype(int)  # truncates fractional values
    np.testing.assert_array_equal(out, [0, 0, 1])
    assert out.dtype == jnp.int64

# --- nonzero, lax.map, associative_scan, convolve and split


def test_nonzero_with_a_static_size():
    # jnp.nonzero's docstring: eagerly, then under jit with a static `size`.
    x = jnp.array([[0, 5, 0],
                   [6, 0, 7]])
    rows, cols = jnp.nonzero(x)
    np.testing.assert_array_equal(rows, [0, 1, 1])
    np.testing.assert_array_equal(cols, [1, 0, 2])
    indices = jnp.nonzero(x)
    np.testing.assert_array_equal(x[indices], [5, 6, 7])

    x = jnp.array([0, 5, 0, 6, 0, 7])
    try:
        jax.jit(jnp.nonzero)(x)
    except jax.errors.ConcretizationTypeError as e:
        assert "The size argument of" in str(e)
    else:
        raise AssertionError("jit(jnp.nonzero) without size must raise")

    nonzero_jit = jax.jit(jnp.nonzero, static_argnames='size')
    (i,) = nonzero_jit(x, size=3)
    np.testing.assert_array_equal(i, [1, 3, 5])
    (i,) = nonzero_jit(x, size=2)  # size < 3: indices are truncated
    np.testing.assert_array_equal(i, [1, 3])
    (i,) = nonzero_jit(x, size=5)  # size > 3: indices are padded with zeros.
    np.testing.assert_array_equal(i, [1, 3, 5, 0, 0])
    (i,) = nonzero_jit(x, size=5, fill_value=len(x))
    np.testing.assert_array_equal(i, [1, 3, 5, 6, 6])
    assert i.dtype == jnp.int64


def test_lax_map_with_batch_size(capsys):
    # lax.map's docstring: f is traced once for the batches and once for the remainder.
    x = jnp.ones((10, 3, 4))

    def f(x):
        print('inner shape:', x.shape)
        return x + 1

    y = lax.map(f, x, batch_size=3)
    assert capsys.readouterr().out == "inner shape: (3, 4)\ninner shape: (3, 4)\n"
    assert y.shape == (10, 3, 4)
    np.testing.assert_array_equal(y, 2.0)


def test_associative_scan_partial_sums():
    # lax.associative_scan's docstring, examples 1 and 3.
    np.testing.assert_array_equal(lax.associative_scan(jnp.add, jnp.arange(0, 4)), [0, 1, 3, 6])
    np.testing.assert_array_equal(
        lax.associative_scan(jnp.add, jnp.arange(0, 4), reverse=True), [6, 6, 5, 3])


def test_convolve_modes():
    # jnp.convolve's docstring.
    x = jnp.array([1, 2, 3, 2, 1])
    y = jnp.array([4, 1, 2])
    full = jnp.convolve(x, y)
    np.testing.assert_array_equal(full, [4., 9., 16., 15., 12., 5., 2.])
    assert full.dtype == jnp.float64  # ints convolve in a float (float32 without x64)
    np.testing.assert_array_equal(jnp.convolve(x, y, mode='same'), [9., 16., 15., 12., 5.])
    np.testing.assert_array_equal(jnp.convolve(x, y, mode='valid'), [16., 15., 12.])


def test_split(capsys):
    # jnp.split's docstring.
    x = jnp.array([1, 2, 3, 4, 5, 6, 7, 8, 9])
    chunks = jnp.split(x, 3)
    print(*chunks)
    chunks = jnp.split(x, [2, 7])  # [x[0:2], x[2:7], x[7:]]
    print(*chunks)
    x = jnp.array([[1, 2, 3, 4],
                   [5, 6, 7, 8]])
    x1, x2 = jnp.split(x, 2, axis=1)
    print(x1)
    print(x2)
    assert capsys.readouterr().out == (
        "[1 2 3] [4 5 6] [7 8 9]\n[1 2] [3 4 5 6 7] [8 9]\n[[1 2]\n [5 6]]\n[[3 4]\n [7 8]]\n")

# --- pytrees, ShapeDtypeStruct and debugging


def test_pytrees_tutorial_custom_pytree_nodes():
    # "Pytrees": a custom node registered with flatten and unflatten functions.
    from collections.abc import Iterable

    class MyContainer:
        """A named container."""

        def __init__(self, name: str, a: int, b: int, c: int):
            self.name = name
            self.a = a
            self.b = b
            self.c = c

    def flatten_MyContainer(container) -> tuple[Iterable[int], str]:
        flat_contents = [container.a, container.b, container.c]
        aux_data = container.name
        return flat_contents, aux_data

    def unflatten_MyContainer(aux_data: str, flat_contents: Iterable[int]) -> MyContainer:
        return MyContainer(aux_data, *flat_contents)

    jax.tree_util.register_pytree_node(MyContainer, flatten_MyContainer, unflatten_MyContainer)

    trees = [MyContainer('Alice', 1, 2, 3), MyContainer('Bob', 4, 5, 6)]
    assert jax.tree.leaves(trees) == [1, 2, 3, 4, 5, 6]
    out = jax.tree.map(lambda x: x + 1, trees)
    assert [(c.name, c.a, c.b, c.c) for c in out] == [('Alice', 2, 3, 4), ('Bob', 5, 6, 7)]
    assert str(jax.tree.structure(trees[:1])) == (
        "PyTreeDef([CustomNode(MyContainer[Alice], [*, *, *])])")


def test_pytrees_tutorial_key_paths(capsys):
    # "Pytrees": explicit key paths, printed with keystr and as key objects.
    import collections

    ATuple = collections.namedtuple("ATuple", ('name'))

    tree = [1, {'k1': 2, 'k2': (3, 4)}, ATuple('foo')]
    flattened, _ = jax.tree_util.tree_flatten_with_path(tree)

    for key_path, value in flattened:
        print(f'Value of tree{jax.tree_util.keystr(key_path)}: {value}')
    for key_path, _ in flattened:
        print(f'Key path of tree{jax.tree_util.keystr(key_path)}: {repr(key_path)}')

    assert capsys.readouterr().out.splitlines() == [
        "Value of tree[0]: 1",
        "Value of tree[1]['k1']: 2",
        "Value of tree[1]['k2'][0]: 3",
        "Value of tree[1]['k2'][1]: 4",
        "Value of tree[2].name: foo",
        "Key path of tree[0]: (SequenceKey(idx=0),)",
        "Key path of tree[1]['k1']: (SequenceKey(idx=1), DictKey(key='k1'))",
        "Key path of tree[1]['k2'][0]: (SequenceKey(idx=1), DictKey(key='k2'), SequenceKey(idx=0))",
        "Key path of tree[1]['k2'][1]: (SequenceKey(idx=1), DictKey(key='k2'), SequenceKey(idx=1))",
        "Key path of tree[2].name: (SequenceKey(idx=2), GetAttrKey(name='name'))",
    ]


def test_register_dataclass_docstring():
    # `jax.tree_util.register_dataclass`: data fields are traced, meta fields static.
    from dataclasses import dataclass, field

    @jax.tree_util.register_dataclass
    @dataclass
    class MyStruct:
        x: jax.Array  # defaults to non-static data field
        y: jax.Array  # defaults to non-static data field
        op: str = field(metadata=dict(static=True))  # marked as static meta field.

    m = MyStruct(x=jnp.ones(3), y=jnp.arange(3), op='add')
    leaves, treedef = jax.tree.flatten(m)
    assert repr(leaves) == (
        "[Array([1., 1., 1.], dtype=float64), Array([0, 1, 2], dtype=int64)]")
    assert str(treedef) == "PyTreeDef(CustomNode(MyStruct[('add',)], [*, *]))"
    # (a class defined in a function: its dataclass repr starts with the qualified name)
    assert repr(jax.tree.unflatten(treedef, leaves)).endswith(
        "MyStruct(x=Array([1., 1., 1.], dtype=float64), y=Array([0, 1, 2], dtype=int64), "
        "op='add')")

    @jax.jit
    def compiled_func(m):
        if m.op == 'add':
            return m.x + m.y
        else:
            raise ValueError(f"{m.op=}")

    assert repr(compiled_func(m)) == "Array([1., 2., 3.], dtype=float64)"


def test_aot_trace_with_shape_dtype_struct_and_eval_shape():
    # "Ahead-of-time lowering and compilation": trace for a ShapeDtypeStruct, then compile;
    # `jax.eval_shape`: shapes and dtypes with no FLOPs performed.
    def f(x, y): return 2 * x + y
    x, y = 3, 4

    i32_scalar = jax.ShapeDtypeStruct((), jnp.dtype('int32'))
    compiled = jax.jit(f).trace(i32_scalar, i32_scalar).lower().compile()
    assert repr(compiled(jnp.int32(x), jnp.int32(y))) == "Array(10, dtype=int32)"

    f = lambda A, x: jnp.tanh(jnp.dot(A, x))  # noqa: E731 - the docs write it so
    A = jax.ShapeDtypeStruct((2000, 3000), jnp.float32)
    x = jax.ShapeDtypeStruct((3000, 1000), jnp.float32)
    out = jax.eval_shape(f, A, x)  # no FLOPs performed
    assert out.shape == (2000, 1000)
    assert out.dtype == jnp.float32


def test_debugging_debug_print(capsys):
    # "Introduction to debugging": jax.debug.print inside jit prints the runtime values.
    @jax.jit
    def f(x):
        jax.debug.print("🤯 {x} 🤯", x=x)
        y = jnp.sin(x)
        jax.debug.print("🤯 {y} 🤯", y=y)
        return y

    f(2.)
    assert capsys.readouterr().out.splitlines() == ["🤯 2.0 🤯", "🤯 0.9092974268256817 🤯"]


# jax.lax.pad's docstring, "Examples" (int32 there; int64 with x64 on).
def test_lax_pad_docstring_examples():
    x = jnp.array([1, 2, 3, 4])
    check(lax.pad(x, 0, [(2, 3, 0)]), [0, 0, 1, 2, 3, 4, 0, 0, 0], np.int64)
    check(lax.pad(x, 0, [(0, 0, 1)]), [1, 0, 2, 0, 3, 0, 4], np.int64)
    x = jnp.array([[1, 2, 3], [4, 5, 6]])
    edge = [-1] * 7
    check(lax.pad(x, -1, [(2, 2, 0), (2, 2, 0)]),
          [edge, edge, [-1, -1, 1, 2, 3, -1, -1], [-1, -1, 4, 5, 6, -1, -1], edge, edge],
          np.int64)
    # "Use negative padding to remove elements from the edges of an array". With x64 on, the
    # page's padding value `0` is an int64, which an int32 operand refuses (JAX too: "pad
    # operand and padding_value must be same dtype"): an int32 zero here.
    x = jnp.array([1, 2, 3, 4, 5], dtype=jnp.int32)
    zero = jnp.int32(0)
    with pytest.raises(TypeError):
        lax.pad(x, 0, [(-1, -2, 0)])
    check(lax.pad(x, zero, [(-1, -2, 0)]), [2, 3], np.int32)
    check(jit(lambda v: lax.pad(v, zero, [(-1, -2, 0)]))(x), [2, 3], np.int32)
    check(lax.pad(x, zero, [(-2, 1, 1)]), [2, 0, 3, 0, 4, 0, 5, 0], np.int32)
    with pytest.raises(ValueError, match="Dimension size after padding is not at least 0"):
        lax.pad(x, zero, [(-6, 0, 0)])
