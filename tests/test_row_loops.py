"""Row loops (`minijit/codegen/row_loops.py`): consecutive loop nests over the same rows run
as one loop over the rows, where each reads only the rows the ones before it wrote.

The values must be exactly those of the separate loops (each element is computed by the same
operations in the same order), so the fused programs are compared bit for bit with the same
program compiled within `row_loops.kept_apart()`, where every kernel keeps its own loops (with
`parallel=False`, which also gives it a cache of its own).
"""

from __future__ import annotations

import numpy as np
import pytest
from catalogue import PROGRAMS as CATALOGUE

import minijit as mj
import minijit.numpy as mnp
from minijit import lax
from minijit.codegen.row_loops import kept_apart
from minijit.interpret import eval_jaxpr
from minijit.tree_util import tree_leaves


def source(f, *args):
    return mj.jit(f, backend="numba").lower(*args).as_text()


def row_loops(text: str) -> int:
    return text.count("codegen/row_loops.py")


def separate(f, *args):
    """f's values with every kernel in its own loops."""
    g = mj.jit(f, backend="numba", parallel=False)
    with kept_apart():
        assert row_loops(g.lower(*args).as_text()) == 0
        return g(*args)


def softmax(x):
    e = mnp.exp(x - mnp.max(x, axis=1, keepdims=True))
    return e / mnp.sum(e, axis=1, keepdims=True)


def layer_norm(x):
    mean = mnp.mean(x, axis=-1, keepdims=True)
    centered = x - mean
    var = mnp.mean(centered * centered, axis=-1, keepdims=True)
    return centered / mnp.sqrt(var + 1e-5)


def logsumexp_rows(x):
    m = mnp.max(x, axis=1, keepdims=True)
    return mnp.log(mnp.sum(mnp.exp(x - m), axis=1)) + m[:, 0]


def attention_like(x, w):
    s = mnp.tanh(x) * 2.0
    p = softmax(s)
    return mnp.sum(p * w, axis=-1)  # w (cols,) is broadcast along the rows: read non-locally


def variance_axis1(x):
    return mnp.var(x, axis=1)


def layer_norm_axis1(x):
    """Over the middle axis of (B, T, D): the second reduction's accumulator takes over the
    first one's array, which the row loop still fills row by row."""
    centered = x - mnp.mean(x, axis=1, keepdims=True)
    return centered / mnp.sqrt(mnp.mean(centered * centered, axis=1, keepdims=True) + 1e-5)


def reduce_recentre_reduce(x):
    s = mnp.sum(x, axis=(1, 2), keepdims=True)
    return mnp.max(mnp.exp(x - s), axis=(1, 2))


PROGRAMS = {"softmax": (softmax, [(6, 9)]), "layer_norm": (layer_norm, [(5, 130)]),
            "variance over axis 1": (variance_axis1, [(2, 3, 4)]),
            "layer norm over axis 1": (layer_norm_axis1, [(4, 6, 10)]),
            "sum, exp, max over axes 1 and 2": (reduce_recentre_reduce, [(3, 2, 4, 5)]),
            "logsumexp": (logsumexp_rows, [(7, 33)]),
            "attention_like": (attention_like, [(4, 17), (17,)]),
            "3-d softmax": (lambda x: softmax(x.reshape(-1, x.shape[-1])).reshape(x.shape),
                            [(3, 4, 11)])}


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("name", list(PROGRAMS))
def test_fused_rows_give_the_separate_loops_values(name, dtype):
    f, shapes = PROGRAMS[name]
    rng = np.random.default_rng(0)
    args = [rng.standard_normal(s).astype(dtype) for s in shapes]
    text = source(f, *args)
    assert row_loops(text) == 1, text
    got = mj.jit(f, backend="numba")(*args)
    np.testing.assert_array_equal(np.asarray(got), np.asarray(separate(f, *args)))
    jaxpr = mj.make_jaxpr(f)(*args)
    want = eval_jaxpr(jaxpr.jaxpr, jaxpr.consts, *args)[0]
    tol = 1e-5 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(np.asarray(got), want, rtol=tol, atol=tol)


def test_softmax_is_one_loop_over_the_rows():
    text = source(softmax, np.ones((8, 16)))
    body = text.split("codegen/row_loops.py)")[1]
    assert body.count("for i0 in range(") == 1
    assert "folds.max_f64(a[i0])" in body and "folds.sum_f64(d[i0])" in body


def test_a_read_across_rows_ends_the_run():
    """x - m[None, :] reads the row maxima along axis 1: row i0 needs all of m, so the two
    kernels keep separate loops."""
    def f(x):
        m = mnp.max(x, axis=1)
        return x - m[None, :]

    x = np.random.default_rng(1).standard_normal((6, 6))
    text = source(f, x)
    assert row_loops(text) == 0
    np.testing.assert_array_equal(mj.jit(f, backend="numba")(x), x - x.max(axis=1)[None, :])


def test_reducing_axis_0_ends_the_run():
    def f(x):
        col = mnp.sum(x, axis=0, keepdims=True)  # every row adds to each column
        return mnp.exp(x) - col

    x = np.random.default_rng(2).standard_normal((5, 7))
    assert row_loops(source(f, x)) == 0
    np.testing.assert_allclose(mj.jit(f, backend="numba")(x), np.exp(x) - x.sum(0), rtol=1e-14)


def test_different_row_counts_are_not_fused():
    def f(x, y):
        return mnp.sum(mnp.exp(x), axis=1), mnp.sum(mnp.exp(y), axis=1)

    x, y = np.ones((4, 3)), np.ones((5, 3))
    assert row_loops(source(f, x, y)) == 0


def test_donated_rows_are_written_after_they_are_read():
    """The result may take the donated argument's memory: each row is still read before the
    row loop overwrites it."""
    x = np.random.default_rng(3).standard_normal((64, 40))
    want = np.asarray(separate(softmax, x))
    f = mj.jit(softmax, backend="numba", donate_argnums=0)
    got = f(x.copy())
    np.testing.assert_array_equal(np.asarray(got), want)


def test_a_row_loop_inside_a_loop_body():
    def f(x):
        def body(i, v):
            return softmax(v * 1.5)
        return lax.fori_loop(0, 3, body, x)

    x = np.random.default_rng(4).standard_normal((6, 10))
    text = source(f, x)
    assert row_loops(text) == 1
    np.testing.assert_array_equal(np.asarray(mj.jit(f, backend="numba")(x)),
                                  np.asarray(separate(f, x)))


def test_a_reused_accumulator_is_filled_row_by_row():
    """var over axis 1: the second sum's accumulator takes over the first sum's array. Filled
    whole before the row loop, it wiped nothing and each row added onto the first sum."""
    x = np.arange(24.0).reshape(2, 3, 4)
    text = source(variance_axis1, x)
    prologue = text.split("codegen/row_loops.py)")[0]
    assert row_loops(text) == 1 and "# reused" in prologue, text
    assert "[...] =" not in prologue, text
    np.testing.assert_array_equal(mj.jit(variance_axis1, backend="numba")(x),
                                  np.full((2, 4), 32 / 3))


@pytest.mark.parametrize("prog", CATALOGUE, ids=lambda p: p.name)
def test_every_catalogue_program_gives_the_separate_loops_values(prog):
    """The row-loop rule (no iteration sees another's rows, no hoisted statement writes
    memory) checked on the whole catalogue: fused and separate loops agree bit for bit.

    Most programs get no row loop: their generated code must then be the separate loops'
    code itself, character for character (the same program, so the same values), and
    nothing is compiled here (test_catalogue runs them). Those with one are compiled both
    ways and run."""
    args = prog.make_args()
    fused = mj.jit(prog.minijit_fn(), backend="numba", static_argnums=prog.static_argnums)
    apart = mj.jit(prog.minijit_fn(), backend="numba", static_argnums=prog.static_argnums,
                   parallel=False)
    fused_text = fused.lower(*args).as_text()
    with kept_apart():
        apart_text = apart.lower(*args).as_text()
    assert row_loops(apart_text) == 0
    if row_loops(fused_text) == 0:
        assert fused_text == apart_text
        return
    with kept_apart():
        want_leaves = tree_leaves(apart(*args))
    for got, want in zip(tree_leaves(fused(*args)), want_leaves):
        np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
