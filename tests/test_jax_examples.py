"""Examples from JAX's documentation that run on minijit with only the imports changed.

Each snippet is JAX's text with `import jax` / `import jax.numpy as jnp` replaced by minijit's
modules; the assertions check the values JAX's documentation shows.
"""

from functools import partial

import numpy as np

import minijit as jax
import minijit.numpy as jnp
from minijit import lax


def test_jit_tutorial_make_jaxpr_and_static_argnames():
    # "Just-in-time compilation": make_jaxpr of log2, and a while loop on a static n.
    def log2(x):
        ln_x = jnp.log(x)
        ln_2 = jnp.log(2.0)
        return ln_x / ln_2

    printed = str(jax.make_jaxpr(log2)(3.0))
    assert "log a" in printed and "div b c" in printed

    def g(x, n):
        i = 0
        while i < n:
            i += 1
        return x + i

    g_jit_correct = jax.jit(g, static_argnames=["n"])
    assert g_jit_correct(10, 20) == 30

    @partial(jax.jit, static_argnames=["n"])
    def g_jit_decorated(x, n):
        i = 0
        while i < n:
            i += 1
        return x + i

    assert g_jit_decorated(10, 20) == 30


def test_sharp_bits_in_place_updates():
    # "Sharp bits": array updates with .at, including a strided slice.
    jax_array = jnp.zeros((3, 3), dtype=jnp.float32)
    new_jax_array = jax_array.at[1, :].set(1.0)
    np.testing.assert_array_equal(jax_array, np.zeros((3, 3)))
    np.testing.assert_array_equal(new_jax_array, [[0, 0, 0], [1, 1, 1], [0, 0, 0]])
    assert new_jax_array.dtype == np.float32

    jax_array = jnp.ones((5, 6))
    new_jax_array = jax_array.at[::2, 3:].add(7.0)
    expected = np.ones((5, 6))
    expected[::2, 3:] += 7
    np.testing.assert_array_equal(new_jax_array, expected)


def test_control_flow_tutorial():
    # "Control flow and logical operators with JIT": cond, while_loop, fori_loop, where.
    operand = jnp.array([0.0])
    np.testing.assert_array_equal(lax.cond(True, lambda x: x + 1, lambda x: x - 1, operand), [1])
    np.testing.assert_array_equal(lax.cond(False, lambda x: x + 1, lambda x: x - 1, operand),
                                  [-1])
    assert lax.while_loop(lambda x: x < 10, lambda x: x + 1, 0) == 10
    assert lax.fori_loop(0, 10, lambda i, x: x + i, 0) == 45

    @jax.jit
    def f(x):
        return jnp.where(x < 3, 3.0 * x**2, -4 * x)

    np.testing.assert_array_equal(f(jnp.arange(6.0)), [0, 3, 12, -12, -16, -20])
