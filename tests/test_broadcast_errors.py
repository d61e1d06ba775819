"""Shapes that do not broadcast fail as in JAX 0.10.2 (`jax_enable_x64`), checked against
live JAX: a binary function on operands of one rank raises JAX's TypeError naming the
primitive JAX's own implementation applies first (`sub got incompatible shapes for
broadcasting: (3,), (4,).`), so `except TypeError` catches it in both; operands of
different ranks, `where` and `broadcast_shapes` raise JAX's ValueError (`Incompatible shapes
for broadcasting: shapes=[...]`). Eagerly and under jit alike; the message names the line."""

import numpy as np
import pytest

import minijit as mj
import minijit.numpy as mnp

jax = pytest.importorskip("jax")
jax.config.update("jax_enable_x64", True)
jax.config.update("jax_platforms", "cpu")
jnp = jax.numpy

BINARY = """add subtract multiply divide true_divide floor_divide remainder mod fmod power
float_power maximum minimum fmax fmin arctan2 hypot logaddexp logaddexp2 logical_and
logical_or logical_xor equal not_equal less less_equal greater greater_equal heaviside
divmod""".split()
INTEGER = "bitwise_and bitwise_or bitwise_xor left_shift right_shift".split()

OPERANDS = {
    "f64[3] and f64[4]": (np.ones(3), np.ones(4)),
    "f64[2,3] and f64[4] (ranks differ)": (np.ones((2, 3)), np.ones(4)),
    "f64[3,2] and f64[2,3]": (np.ones((3, 2)), np.ones((2, 3))),
    "bool[3] and bool[4]": (np.ones(3, bool), np.ones(4, bool)),
    "i64[3] and i32[4]": (np.ones(3, np.int64), np.ones(4, np.int32)),
    "u8[3] and u8[4]": (np.ones(3, np.uint8), np.ones(4, np.uint8)),
}
CASES = [(name, label) for name in BINARY + INTEGER for label in OPERANDS
         if name not in INTEGER or not label.startswith("f64")]


def _error(fn, *args):
    try:
        fn(*args)
    except Exception as e:  # noqa: BLE001 - the class and first line are compared
        return type(e).__name__, str(e).splitlines()[0]
    return None


@pytest.mark.parametrize("name,label", CASES, ids=[f"{n}-{lbl.split(' (')[0]}"
                                                   for n, lbl in CASES])
def test_binary_functions_fail_as_jax_does(name, label):
    args = OPERANDS[label]
    theirs = _error(getattr(jnp, name), *args)
    assert theirs is not None
    assert _error(getattr(mnp, name), *args) == theirs, "eagerly"
    assert _error(mj.jit(getattr(mnp, name)), *args) == theirs, "under jit"


@pytest.mark.parametrize("expr", ["mnp.where(a > 0, b, 0.0)", "mnp.broadcast_shapes(a.shape, "
                                  "b.shape)", "a + b", "a * 2 - b"])
def test_other_spellings_fail_as_jax_does(expr):
    a, b = np.ones(3), np.ones(4)
    theirs = _error(lambda a, b: eval(expr, {"mnp": jnp, "a": a, "b": b}), a, b)
    ours = _error(lambda a, b: eval(expr, {"mnp": mnp, "a": a, "b": b}), a, b)
    assert theirs is not None and ours == theirs


def test_the_message_names_the_learners_line():
    def f(a, b):
        return mnp.subtract(a, b)  # the line named

    with pytest.raises(TypeError, match=r"sub got incompatible shapes.*\n.*return mnp"):
        mj.jit(f)(np.ones(3), np.ones(4))
