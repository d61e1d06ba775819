"""A learner's mistake raises the class of error JAX 0.10.2 raises (`jax_enable_x64`), so
`except` clauses written for JAX work on minijit; checked against live JAX, eagerly and
under jit: minijit's class is JAX's or a subclass of it. Where JAX's message is the clearer
one, minijit uses its words too (`SAME_TEXT`)."""

import numpy as np
import pytest

import minijit as mj
import minijit.numpy as mnp

jax = pytest.importorskip("jax")
jax.config.update("jax_enable_x64", True)
jax.config.update("jax_platforms", "cpu")

x, v = np.ones((2, 3)), np.ones(3)

# `L` is jax.numpy or minijit.numpy
SAME_CLASS = [
    "L.matmul(x, x)", "L.dot(x, np.ones(4))", "L.matmul(v, np.ones((4, 2)))",
    "L.concatenate([v, x])", "L.concatenate([x, np.ones((2, 4))])",
    "L.sum(x, axis=2)", "L.transpose(x, (0, 0))", "L.stack([v, np.ones(4)])",
    "L.broadcast_to(v, (4,))", "L.split(v, 2)", "L.asarray(x).reshape(4, 2)",
    "L.asarray(x)[0, 0, 0]", "L.argmax(x, axis=3)", "L.mean(x, axis=-3)", "L.swapaxes(x, 0, 2)",
    "L.moveaxis(x, 0, 3)",
    "L.asarray(x)[:, 'a']", "L.asarray(v)[1.5]", "L.cumsum(x, axis=2)", "L.squeeze(x, 0)",
    "L.max(np.ones(0))", "L.argmin(np.ones(0))", "L.flip(x, 3)", "L.eye(-1)",
    "L.diag(np.ones((2, 2, 2)))", "L.add(v, np.ones(4))", "L.where(v > 0, np.ones(4), 0.0)",
    "L.matmul(np.ones(()), v)", "L.asarray(x).astype('foo')",
]
SAME_TEXT = {
    "L.concatenate([v, x])", "L.concatenate([x, np.ones((2, 4))])",
    "L.asarray(x).reshape(4, 2)", "L.asarray(x)[:, 'a']", "L.asarray(v)[1.5]",
    "L.add(v, np.ones(4))",
    "L.where(v > 0, np.ones(4), 0.0)", "L.matmul(np.ones(()), v)",
}
def _error(expr, lib, jit):
    def run(_):
        return eval(expr, {"L": lib, "np": np, "x": x, "v": v})

    try:
        (mj.jit(run) if jit and lib is mnp else jax.jit(run) if jit else run)(0)
    except Exception as e:  # noqa: BLE001 - the class and first line are compared
        return type(e), str(e).splitlines()[0] if str(e) else ""
    return None


@pytest.mark.parametrize("jit", [False, True], ids=["eager", "jit"])
@pytest.mark.parametrize("expr", SAME_CLASS)
def test_a_mistake_raises_jaxs_class(expr, jit):
    theirs, ours = _error(expr, jax.numpy, jit), _error(expr, mnp, jit)
    assert theirs is not None and ours is not None, (theirs, ours)
    # minijit's class is JAX's, or a subclass of it (NumPy's AxisError is a ValueError and
    # an IndexError: JAX raises one or the other for a bad axis)
    assert issubclass(ours[0], theirs[0]), (ours, theirs)
    if expr in SAME_TEXT:
        assert ours[1] == theirs[1]
