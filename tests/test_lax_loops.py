"""`lax.map` and `lax.associative_scan` (minijit/lax/control_flow/loops.py), checked against
the values, shapes, dtypes, Jaxprs and errors of JAX 0.10.2 (jax_enable_x64), eagerly and
under `jit` on every backend.
"""

from __future__ import annotations

import numpy as np
import pytest

import minijit as mj
import minijit.numpy as mnp
from minijit import backends, lax

BACKENDS = backends.DISTINCT_BACKENDS
WAYS = ["eager", *BACKENDS]


def run(way: str, f, *args):
    """`f(*args)` eagerly, or jitted on the backend `way`."""
    return f(*args) if way == "eager" else mj.jit(f, backend=way)(*args)


# --------------------------------------------------------------------------- lax.map


@pytest.mark.parametrize("way", WAYS)
@pytest.mark.parametrize("batch_size", [None, 0, 1, 2, 4, 6, 10])
def test_map_matches_a_python_loop(way, batch_size):
    xs = np.arange(12.0).reshape(6, 2)
    got = run(way, lambda xs: lax.map(lambda x: x * x.sum(), xs, batch_size=batch_size), xs)
    np.testing.assert_array_equal(got, xs * xs.sum(axis=1, keepdims=True))
    assert got.dtype == np.float64


@pytest.mark.parametrize("way", WAYS)
def test_map_over_pytrees(way):
    # JAX: lax.map(lambda t: (t[0] + t[1], t[0] * t[1]), (xs, xs + 1)) with xs = arange(6.)
    xs = np.arange(6.0)
    s, p = run(way, lambda xs: lax.map(lambda t: (t[0] + t[1], t[0] * t[1]), (xs, xs + 1)), xs)
    np.testing.assert_array_equal(s, [1, 3, 5, 7, 9, 11])
    np.testing.assert_array_equal(p, [0, 2, 6, 12, 20, 30])
    out = run(way, lambda a: lax.map(lambda d: {"s": d["a"].sum()}, {"a": a}), np.ones((3, 2)))
    np.testing.assert_array_equal(out["s"], [2.0, 2.0, 2.0])


def test_map_is_one_scan_as_in_jax():
    printed = str(mj.make_jaxpr(lambda xs: lax.map(lambda x: x * 2, xs))(np.arange(6.0)))
    assert printed.count("scan[") == 1 and "length=6" in printed and "num_carry=0" in printed


def test_map_with_batches_slices_scans_and_concatenates_as_in_jax():
    # JAX: slice, reshape to (1, 4), scan[length=1], the remainder of 2, concatenate
    printed = str(mj.make_jaxpr(lambda xs: lax.map(lambda x: x * 2, xs, batch_size=4))(
        np.arange(6.0)))
    assert "f64[1,4] = reshape" in printed and "length=1" in printed
    assert "f64[6] = concatenate[dimension=0]" in printed


def test_nested_scans_keep_their_own_step_variable():
    """A scan in a scan's body: the Numba loop of the inner one must not reuse the outer's
    step variable (it did, and wrote outside the output)."""
    f = mj.jit(lambda xs: lax.map(lambda row: lax.map(lambda v: v * 2, row), xs),
               backend="numba")
    xs = np.arange(8.0).reshape(2, 4)
    np.testing.assert_array_equal(f(xs), xs * 2)
    assert "for _t2 in range(_n1):" in f.lower(xs).as_text()  # _n1 = a.shape[1], 4


@pytest.mark.parametrize("xs,match", [
    ((np.ones(3), np.ones(4)), "different leading axis sizes: 3, 4"),
    (np.float64(3.0), "needs a leading axis"),
    ([], "no values to map over"),
])
def test_map_errors(xs, match):
    with pytest.raises(ValueError, match=match):
        lax.map(lambda x: x, xs)


# --------------------------------------------------------------------------- associative_scan


SCAN_LENGTHS = [0, 1, 2, 3, 4, 5, 7, 8, 9, 16, 17]
# The lengths checked on Numba and LLVM too, where each length is a compile of its own (~0.5
# s on Numba, two programs per length): the recursion halves the length at each level and
# takes one of two branches by its parity, and the generated code depends on the length only
# through those branches and sizes of 0 and 1. Empty, one element (no recursion), 2 (one
# even level), 3 (one odd level), 5 (odd then even) and 8 (three even levels) reach each
# branch at the top and below it; the interpreter checks every length, larger ones included.
SCAN_NUMBA_LENGTHS = [0, 1, 2, 3, 5, 8]


@pytest.mark.parametrize("n,way", [(n, way) for n in SCAN_LENGTHS for way in WAYS
                                   if way not in ("numba", "llvm") or n in SCAN_NUMBA_LENGTHS])
def test_associative_scan_is_a_cumulative_sum_for_every_length(way, n):
    x = np.arange(n, dtype=np.int64) * 3 - 5
    got = run(way, lambda x: lax.associative_scan(mnp.add, x), x)
    np.testing.assert_array_equal(got, np.cumsum(x))
    assert got.dtype == np.int64 and got.shape == (n,)
    rev = run(way, lambda x: lax.associative_scan(mnp.add, x, reverse=True), x)
    np.testing.assert_array_equal(rev, np.cumsum(x[::-1])[::-1])


@pytest.mark.parametrize("way", WAYS)
def test_associative_scan_values_from_jax(way):
    m = np.arange(12).reshape(3, 4)
    checks = [  # (function, argument, JAX 0.10.2's output)
        (lambda x: lax.associative_scan(mnp.add, x), np.arange(5), [0, 1, 3, 6, 10]),
        (lambda x: lax.associative_scan(mnp.add, x, reverse=True), np.arange(5),
         [10, 10, 9, 7, 4]),
        (lambda x: lax.associative_scan(mnp.multiply, x), np.arange(1, 8),
         [1, 2, 6, 24, 120, 720, 5040]),
        (lambda x: lax.associative_scan(mnp.add, x, axis=1), m,
         [[0, 1, 3, 6], [4, 9, 15, 22], [8, 17, 27, 38]]),
        (lambda x: lax.associative_scan(mnp.add, x, axis=1, reverse=True), m,
         [[6, 6, 5, 3], [22, 18, 13, 7], [38, 30, 21, 11]]),
        (lambda x: lax.associative_scan(mnp.logical_or, x), np.array([False, True, False]),
         [False, True, True]),
    ]
    for f, x, want in checks:
        got = run(way, f, x)
        np.testing.assert_array_equal(got, want)
        assert got.dtype == np.asarray(x).dtype


@pytest.mark.parametrize("way", WAYS)
def test_associative_scan_of_a_pytree_with_a_non_commutative_fn(way):
    # composing affine maps x -> a * x + b is associative, not commutative; JAX gives these
    def compose(p, q):
        return p[0] * q[0], p[1] * q[0] + q[1]

    a, b = run(way, lambda a, b: lax.associative_scan(compose, (a, b)),
               np.array([1.0, 2, 3]), np.array([1.0, 1, 1]))
    np.testing.assert_array_equal(a, [1, 2, 6])
    np.testing.assert_array_equal(b, [1, 3, 10])
    a, b = run(way, lambda a, b: lax.associative_scan(compose, (a, b), reverse=True),
               np.array([1.0, 2, 3]), np.array([1.0, 1, 1]))
    np.testing.assert_array_equal(a, [6, 6, 3])
    np.testing.assert_array_equal(b, [4, 3, 1])


def test_associative_scan_negative_axis():
    m = np.arange(12).reshape(3, 4)
    np.testing.assert_array_equal(lax.associative_scan(mnp.add, m, axis=-1),
                                  np.cumsum(m, axis=1))


@pytest.mark.parametrize("call,match", [
    (lambda: lax.associative_scan(mnp.add, (np.ones(3), np.ones(4))),
     r"must have the same first dimension. \(saw: \[\(3,\), \(4,\)\]\)"),
    (lambda: lax.associative_scan(mnp.add, np.float64(3)),
     "axis 0 is out of bounds for array of dimension 0"),
    (lambda: lax.associative_scan(mnp.add, np.ones((3, 4)), axis=2),
     "axis 2 is out of bounds for array of dimension 2"),
    (lambda: lax.associative_scan(lambda a, b: a[:1], np.ones(4)),
     "fn must return a pytree of the structure and shapes it is given"),
])
def test_associative_scan_errors(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_associative_scan_needs_a_callable():
    with pytest.raises(TypeError, match="fn argument should be callable"):
        lax.associative_scan(None, np.ones(3))
