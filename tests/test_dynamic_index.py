"""Dynamic indices against real JAX 0.10.2 (`jax_enable_x64`): `lax.dynamic_slice`,
`lax.dynamic_update_slice`, `x[i]` and `x.at[i]` with negative, out-of-bounds and unsigned
indices, eagerly, under `disable_jit` and jitted on both backends, with the index traced and
as a constant. The rules are written down in `minijit/indexing.py`'s docstring.

Each program computes every operation at once and returns them as a tuple, so one compile
per index dtype (a jitted function is reused across the index values) covers the grid.
"""

import numpy as np
import pytest

import minijit as mj
import minijit.numpy as mnp
from minijit import lax

jax = pytest.importorskip("jax")
jax.config.update("jax_enable_x64", True)
jax.config.update("jax_platforms", "cpu")
jnp, jlax = jax.numpy, jax.lax

X = np.arange(4, dtype=np.int64) * 10 + 1  # [1, 11, 21, 31]: ints, compared exactly
Y = np.arange(12, dtype=np.int64).reshape(3, 4)
UPDATE = np.array([100, 200], dtype=np.int64)

# Python ints (weakly typed int64 when traced) and NumPy scalars of other dtypes.
INDICES = [-9, -5, -4, -1, 0, 1, 3, 4, 9,
           np.int32(-5), np.int32(-1), np.int32(3), np.int32(9), np.int8(-1), np.int8(2),
           np.uint8(2), np.uint8(255), np.uint32(2**32 - 1), np.uint64(3),
           np.uint64(2**64 - 1)]
IDS = [f"{type(i).__name__}({i})" for i in INDICES]


def programs(lax, x, y, i):
    """Every dynamic-index operation at index `i`, written once for minijit and for JAX."""
    return (
        lax.dynamic_slice(x, (i,), (2,)),
        lax.dynamic_update_slice(x, UPDATE, (i,)),
        lax.dynamic_update_slice(x, UPDATE[:1], (i,)),
        lax.dynamic_slice(y, (i, i), (2, 2)),
        lax.dynamic_update_slice(y, UPDATE.reshape(1, 2), (i, i)),
        x[i],
        y[i],  # a whole row: the Numba backend's view of rows
        y[1, i],
        x.at[i].set(7),
        x.at[i].add(7),
        x.at[i].max(20),
        x.at[i].get(mode="fill", fill_value=-1),
        y.at[i].set(UPDATE[0]),
        y.at[:, i].add(UPDATE[1]),
    )


def jax_programs(x, y, i):
    return programs(jlax, jnp.asarray(x), jnp.asarray(y), i)


def minijit_programs(x, y, i):
    return programs(lax, x, y, i)


_jax_traced = jax.jit(jax_programs)
_jitted = {b: mj.jit(minijit_programs, backend=b) for b in ("interpreter", "numba")}


def jax_reference(i):
    """JAX's results with `i` traced (eagerly, JAX agrees on every index of INDICES)."""
    return [np.asarray(r) for r in _jax_traced(X, Y, i)]


def assert_same(got, want, what):
    assert len(got) == len(want)
    for k, (g, w) in enumerate(zip(got, want)):
        g = np.asarray(g)
        assert g.dtype == w.dtype and g.shape == w.shape, (what, k, g.dtype, w.dtype)
        assert np.array_equal(g, w), (what, k, g.tolist(), w.tolist())


def run(path: str, i, constant: bool):
    x, y = mnp.asarray(X), mnp.asarray(Y)
    if path == "eager":
        return minijit_programs(x, y, i)
    if path == "disable_jit":
        with mj.disable_jit():
            if constant:
                return mj.jit(lambda x, y: minijit_programs(x, y, i))(x, y)
            return mj.jit(minijit_programs)(x, y, i)
    if constant:  # a new program for each index: the constant is in its code
        return mj.jit(lambda x, y: minijit_programs(x, y, i), backend=path)(x, y)
    return _jitted[path](x, y, i)


@pytest.mark.parametrize("path", ["eager", "disable_jit", "interpreter", "numba"])
def test_traced_index_matches_jax(path):
    # Numba compiles the program once per index dtype: three dtypes (a Python int, a narrow
    # and a wide unsigned one) cover its code for starts; the interpreter runs them all.
    kinds = (int, np.uint8, np.uint64) if path == "numba" else None
    for i in INDICES:
        if kinds is None or type(i) in kinds:
            assert_same(run(path, i, constant=False), jax_reference(i), (path, repr(i)))


@pytest.mark.parametrize("path", ["disable_jit", "interpreter"])
def test_constant_index_matches_jax(path):
    for i in INDICES:
        assert_same(run(path, i, constant=True), jax_reference(i), (path, repr(i)))


@pytest.mark.parametrize("i", [-9, -1, 9, np.uint8(255), np.uint64(2**64 - 1)], ids=str)
def test_constant_index_matches_jax_numba(i):
    """A constant start is a literal in the generated code (a uint64 one too); one program
    per index, so a few of the operations."""
    few = [0, 1, 5, 8]  # dynamic_slice, dynamic_update_slice, x[i], x.at[i].set

    def f(x, y):
        out = minijit_programs(x, y, i)
        return [out[k] for k in few]

    got = mj.jit(f, backend="numba")(mnp.asarray(X), mnp.asarray(Y))
    assert_same(got, [jax_reference(i)[k] for k in few], repr(i))


# --------------------------------------------------------------------------- the reported bugs


@pytest.mark.parametrize("backend", ["eager", "interpreter", "numba"])
def test_negative_start_counts_from_the_end(backend):
    """dynamic_slice(arange(4.), (-1,), (2,)) is [2., 3.] in JAX (it was [0., 1.])."""
    def f(x, u, i):
        return (lax.dynamic_slice(x, (i,), (2,)), lax.dynamic_slice(x, (-1,), (2,)),
                lax.dynamic_slice(x, (-9,), (2,)), lax.dynamic_update_slice(x, u, (i,)),
                lax.dynamic_update_slice(x, u, (-1,)))

    g = f if backend == "eager" else mj.jit(f, backend=backend)
    out = g(np.arange(4.0), np.ones(1), -1)
    assert [o.tolist() for o in out] == [
        [2.0, 3.0], [2.0, 3.0], [0.0, 1.0], [0.0, 1.0, 2.0, 1.0], [0.0, 1.0, 2.0, 1.0]]
    with mj.disable_jit():
        assert mj.jit(f)(np.zeros(4), np.ones(1), -1)[3].tolist() == [0.0, 0.0, 0.0, 1.0]


@pytest.mark.parametrize("backend", ["interpreter", "numba"])
def test_uint64_index_past_int64_is_not_negative(backend):
    """A traced uint64 2**64-1 was read as int64 -1: `x.at[i].set` wrote the last element and
    `x[np.uint64(2**63)]` read the first."""
    x = np.arange(4.0)
    assert mj.jit(lambda x, i: x.at[i].set(1.0), backend=backend)(
        x, np.uint64(2**64 - 1)).tolist() == [0.0, 1.0, 2.0, 3.0]
    assert mj.jit(lambda x, i: x[i], backend=backend)(x, np.uint64(2**63)) == 3.0
    assert mj.jit(lambda x, i: x.at[i].set(7.0, mode="clip"), backend=backend)(
        x, np.uint64(2**63)).tolist() == [0.0, 1.0, 2.0, 7.0]
    assert mj.jit(lambda x, i: lax.dynamic_slice(x, (i,), (2,)), backend=backend)(
        x, np.uint64(2**63)).tolist() == [2.0, 3.0]


def test_traced_slice_bounds_are_an_index_error_as_in_jax():
    with pytest.raises(IndexError, match="Slice entries must be static integers"):
        jax.jit(lambda x, i: x[i:i + 2])(X, 1)
    for f in (lambda x, i: x[i:i + 2], lambda x, i: x.at[i:].set(0)):
        with pytest.raises(IndexError, match="Slice entries must be static.*dynamic_slice"):
            mj.jit(f)(X, 1)


def test_jaxprs_print_as_jax():
    """The count from the end is in the jaxpr, as JAX records it (`lt`, `add`, `select_n`;
    the weakly typed Python int converted first; nothing for an unsigned start)."""
    x, u = np.arange(4.0), np.ones(1)
    cases = [
        (lambda x, i: jlax.dynamic_slice(x, (i,), (2,)), lambda x, i: lax.dynamic_slice(
            x, (i,), (2,)), (x, 1)),
        (lambda x, i: jlax.dynamic_slice(x, (i,), (2,)), lambda x, i: lax.dynamic_slice(
            x, (i,), (2,)), (x, np.int32(1))),
        (lambda x, i: jlax.dynamic_slice(x, (i,), (2,)), lambda x, i: lax.dynamic_slice(
            x, (i,), (2,)), (x, np.uint64(1))),
        (lambda x: jlax.dynamic_slice(x, (-1,), (2,)), lambda x: lax.dynamic_slice(
            x, (-1,), (2,)), (x,)),
        (lambda x: jlax.dynamic_slice(x, (np.int32(-1),), (2,)), lambda x: lax.dynamic_slice(
            x, (np.int32(-1),), (2,)), (x,)),
        (lambda x, u, i: jlax.dynamic_update_slice(x, u, (i,)),
         lambda x, u, i: lax.dynamic_update_slice(x, u, (i,)), (x, u, np.int64(1))),
        (lambda x, i: x[i], lambda x, i: x[i], (x, 1)),
        (lambda x, i: x[i], lambda x, i: x[i], (x, np.uint8(1))),
    ]
    for jax_f, f, args in cases:
        want = " ".join(str(jax.make_jaxpr(jax_f)(*args)).split())
        assert " ".join(str(mj.make_jaxpr(f)(*args)).split()) == want


def test_allow_negative_indices_false_as_in_jax():
    x = np.arange(4.0)
    for m in (jlax, lax):
        with pytest.raises(ValueError, match="allow_negative_indices=False"):
            m.dynamic_slice(x, (-1,), (2,), allow_negative_indices=False)
    want = jax.jit(lambda x, i: jlax.dynamic_slice(x, (i,), (2,), allow_negative_indices=False))(
        x, -1)
    for backend in ("interpreter", "numba"):
        got = mj.jit(lambda x, i: lax.dynamic_slice(x, (i,), (2,), allow_negative_indices=False),
                     backend=backend)(x, -1)
        assert got.tolist() == np.asarray(want).tolist() == [0.0, 1.0]


# --------------------------------------------------------------------------- where JAX differs


def test_where_minijit_keeps_the_rules_and_jax_does_not():
    """The three differences listed in minijit/indexing.py's docstring, each checked on JAX
    (so a JAX that fixes one fails here, and the docstring can say so)."""
    x = np.arange(4.0)

    def set9(x, i):
        return x.at[i].set(9.0)

    def clip9(x, i):
        return x.at[i].set(9.0, mode="clip")

    # 1. JAX's scatter wraps an index past int32; minijit drops the update, or clips it.
    for i, wrapped in ((np.uint64(2**63), 0), (np.int64(2**32 + 1), 1)):
        for f in (set9, clip9):
            assert np.asarray(jax.jit(f)(x, i))[wrapped] == 9.0
        assert mj.jit(set9)(x, i).tolist() == x.tolist()
        assert mj.jit(clip9)(x, i).tolist() == [0.0, 1.0, 2.0, 9.0]
    assert mj.jit(lambda x: set9(x, 2**32 + 1))(x).tolist() == x.tolist()
    # 2. XLA folds a constant unsigned start >= 2**(bits-1) as a negative one.
    def ds(x):
        return jlax.dynamic_slice(x, (np.uint8(255),), (2,))
    assert np.asarray(jax.jit(ds)(x)).tolist() == [0.0, 1.0]
    assert np.asarray(ds(jnp.asarray(x))).tolist() == [2.0, 3.0]
    for backend in ("interpreter", "numba"):
        got = mj.jit(lambda x: lax.dynamic_slice(x, (np.uint8(255),), (2,)), backend=backend)(x)
        assert got.tolist() == [2.0, 3.0]
    # 3. A traced int8 index into 200 elements: JAX wraps -1 + 200 in int8.
    y = np.arange(200.0)
    assert float(jax.jit(lambda y, i: y[i])(y, np.int8(-1))) == 0.0
    assert float(jnp.asarray(y)[np.int8(-1)]) == 199.0
    for backend in ("interpreter", "numba"):
        assert mj.jit(lambda y, i: y[i], backend=backend)(y, np.int8(-1)) == 199.0
