"""Threads: large kernels run their outer loop on Numba's threads (minijit/threads.py).

Only loops whose iterations write disjoint elements are threaded: elementwise kernels, and
reductions that keep the first axis (a row-wise sum, each row its own accumulator), and a row
loop's iterations (row_loops.py). A full reduction, or one along the first axis, stays serial,
since its iterations share the accumulator. Values must equal the serial program's exactly.
"""

from __future__ import annotations

import numpy as np
import pytest
from test_codegen import mandelbrot

import minijit as mj
import minijit.numpy as mnp
from minijit.codegen.lower import Lowering

N = Lowering.PARALLEL_AT  # the smallest kernel that gets threads


def gelu(x):
    return 0.5 * x * (1 + mnp.tanh(0.7978845608 * (x + 0.044715 * x ** 3)))


def softmax(x):
    e = mnp.exp(x - mnp.max(x, axis=1, keepdims=True))
    return e / mnp.sum(e, axis=1, keepdims=True)


def column_sums(x):
    return mnp.sum(mnp.sin(x), axis=0)


def total(x):
    return mnp.max(mnp.cos(x)) + mnp.sum(x * 2.0)


CASES = [(gelu, (N,)), (softmax, (N // 256, 256)), (column_sums, (N // 64, 64)),
         (total, (N,))]


@pytest.mark.parametrize("fun,shape", CASES, ids=[f.__name__ for f, _ in CASES])
def test_threaded_programs_give_the_serial_values(fun, shape):
    x = np.random.default_rng(0).normal(size=shape)
    serial = mj.jit(fun, backend="numba", parallel=False)(x)
    threaded = mj.jit(fun, backend="numba", parallel=True)(x)
    np.testing.assert_array_equal(threaded, serial)


def test_only_loops_with_disjoint_iterations_are_threaded():
    def text(fun, shape):
        return mj.jit(fun, backend="numba", parallel=True).lower(np.ones(shape)).as_text()

    assert "for i0 in numba.prange(_n0):" in text(gelu, (N,))
    assert "parallel={'prange': True" in text(gelu, (N,))
    sm = text(softmax, (N // 256, 256))
    # the max, the exp and sum, the division: one loop over the rows, threaded
    assert sm.count("numba.prange(") == 1 and "codegen/row_loops.py" in sm
    cols = text(column_sums, (N // 64, 64))
    assert "prange" not in cols  # summing along axis 0: every iteration adds to each column
    whole = text(total, (N,))
    assert "prange" not in whole


def test_small_kernels_and_one_thread_stay_serial():
    small = mj.jit(gelu, backend="numba", parallel=True).lower(np.ones(N - 1)).as_text()
    assert "prange" not in small and "parallel=" not in small
    off = mj.jit(gelu, backend="numba", parallel=False).lower(np.ones(N)).as_text()
    assert "prange" not in off
    with mj.config.override("threads", 1):
        one = mj.jit(gelu, backend="numba").lower(np.ones(N)).as_text()
    assert "prange" not in one


def test_the_default_threads_large_kernels_where_cores_allow():
    with mj.config.override("threads", 2):
        default = mj.jit(gelu, backend="numba").lower(np.ones(N)).as_text()
    assert "for i0 in numba.prange(_n0):" in default


def test_parallel_is_part_of_the_cache_key():
    f = mj.jit(gelu, backend="numba", parallel=False)
    g = mj.jit(gelu, backend="numba", parallel=True)
    x = np.ones(N)
    f(x)
    g(x)
    assert f._cache is not g._cache


def test_loop_bodies_stay_serial():
    """A kernel inside a while_loop body runs once per iteration: it stays serial."""
    def f(x):
        return mj.lax.fori_loop(0, 3, lambda i, v: mnp.sin(v) * 0.5 + v, x)

    x = np.linspace(0.0, 1.0, N)
    jf = mj.jit(f, backend="numba", parallel=True)
    assert "prange" not in jf.lower(x).as_text()
    np.testing.assert_array_equal(jf(x), mj.jit(f, backend="numba", parallel=False)(x))


def test_an_interchanged_loop_threads_its_elements():
    """Each element of an interchanged loop reads and writes only its own state, so a large
    one runs its outer axis on threads, with the serial values."""
    cr, ci = np.meshgrid(np.linspace(-2.0, 1.0, 512), np.linspace(-1.5, 1.5, N // 512))
    threaded = mj.jit(mandelbrot, backend="numba", parallel=True)
    text = threaded.lower(cr, ci).as_text()
    assert "interchanged" in text and "for i0 in numba.prange(_n0):" in text
    serial = mj.jit(mandelbrot, backend="numba", parallel=False)
    want = np.asarray(serial(cr, ci))
    assert 0 < want.min() and want.max() == 50  # points that escape and points that stay
    for _ in range(3):
        np.testing.assert_array_equal(threaded(cr, ci), want)
    small = mj.jit(mandelbrot, backend="numba", parallel=True).lower(cr[:4], ci[:4])
    assert "prange" not in small.as_text()


def test_each_thread_has_its_own_scratch_row():
    # An integer row sum of computed values stores each row into a scratch row, then folds
    # it in order; shared by the threads, rows overwrote each other (19 wrong calls of 20).
    x = np.arange(N, dtype=np.int64).reshape(N // 256, 256) % 7
    f = mj.jit(lambda x: (x * 2 + 1).sum(axis=1), backend="numba", parallel=True)
    src = f.lower(x).as_text()
    loop = src.index("numba.prange")
    assert "_row_" in src and src.index("_row_") > loop  # allocated inside the threaded loop
    want = (x * 2 + 1).sum(axis=1)
    for _ in range(10):
        np.testing.assert_array_equal(f(x), want)


# Catalogue programs whose threaded code once went wrong: a loop writing into a `c_view` of a
# bigger array (Numba dropped it as dead), `np.dot` (Numba made it parallel loops of other
# roundings), a stacked concatenation (Numba failed to compile it), in-place updates.
THREADED = ["at_set_static", "written_in_place", "matmul_mixed_rank", "concatenate_stack",
            "concatenate_promotes", "closed_over_constants_reused", "associative_scan",
            "nonzero_sized", "convolve_ints"]


@pytest.mark.parametrize("name", THREADED)
def test_every_top_level_kernel_threaded_gives_the_serial_values(name, monkeypatch):
    from catalogue import PROGRAMS

    from minijit.tree_util import tree_leaves

    prog = next(p for p in PROGRAMS if p.name == name)
    monkeypatch.setattr(Lowering, "PARALLEL_AT", 1)  # threads for every top-level kernel
    args = prog.make_args()
    serial = mj.jit(prog.minijit_fn(), backend="numba", static_argnums=prog.static_argnums,
                    parallel=False)
    threaded = mj.jit(prog.minijit_fn(), backend="numba", static_argnums=prog.static_argnums,
                      parallel=True)
    assert "numba.prange(" in threaded.lower(*args).as_text()
    want = [np.asarray(w) for w in tree_leaves(serial(*args))]
    for _ in range(3):
        got = [np.asarray(g) for g in tree_leaves(threaded(*args))]
        for g, w in zip(got, want):
            assert g.dtype == w.dtype
            np.testing.assert_array_equal(g, w)
