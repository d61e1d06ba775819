"""Memory reused between calls (minijit/codegen/buffers.py): a freed large output's memory
goes to the next output of its size, and never while any array can still see it.

The pool's size threshold is lowered here (`small_pool`), so that small arrays exercise the
same code as the 32 MiB outputs it serves outside the tests.
"""

from __future__ import annotations

import gc
import sys
import threading

import numpy as np
import pytest

import minijit as mj
from minijit.codegen import buffers

N = 4096  # float64 elements: 32 KiB, pooled under `small_pool`


def address(a: np.ndarray) -> int:
    return a.__array_interface__["data"][0]


def owner(a: np.ndarray):
    """What owns `a`'s memory: the pool's lease, or None for NumPy's own memory."""
    while isinstance(a.base, np.ndarray):
        a = a.base
    return a.base


@pytest.fixture
def small_pool(monkeypatch):
    """Pool outputs of 1 KiB or more; an empty pool before and after."""
    monkeypatch.setattr(buffers, "POOL_FROM_BYTES", 1024)
    buffers.drain()
    yield
    buffers.drain()


def affine(x):
    return 2.0 * x + 1.0


def test_a_freed_output_is_reused_by_the_next_call(small_pool):
    f = mj.jit(affine, backend="numba", parallel=False)
    x = np.arange(N, dtype=np.float64)
    first = f(x)
    where = address(first)
    np.testing.assert_array_equal(first, 2.0 * x + 1.0)
    del first
    gc.collect()
    hits = buffers.stats()["hits"]
    second = f(x + 1.0)
    assert address(second) == where
    assert buffers.stats()["hits"] == hits + 1
    np.testing.assert_array_equal(second, 2.0 * (x + 1.0) + 1.0)


def test_memory_a_live_array_or_view_sees_is_never_handed_out(small_pool):
    f = mj.jit(affine, backend="numba", parallel=False)
    x = np.arange(N, dtype=np.float64)
    kept = f(x)
    view = f(x)[10:20]  # the array is gone at once, its view is not
    later = [f(x + k) for k in range(1, 4)]
    seen = {address(kept), address(view) - 10 * 8}
    assert len(seen) == 2
    assert not seen & {address(a) for a in later}
    np.testing.assert_array_equal(kept, 2.0 * x + 1.0)
    np.testing.assert_array_equal(view, 2.0 * x[10:20] + 1.0)
    for k, a in enumerate(later, 1):
        np.testing.assert_array_equal(a, 2.0 * (x + k) + 1.0)


def test_pooled_outputs_are_arrays_like_any_other(small_pool):
    y = mj.jit(affine, backend="numba", parallel=False)(np.ones((64, 64)))
    assert isinstance(owner(y), buffers._Lease)
    assert isinstance(y, mj.Array) and y.shape == (64, 64) and y.dtype == np.float64
    assert y.flags.c_contiguous and y.flags.aligned
    with pytest.raises(TypeError, match="immutable"):
        y[0, 0] = 7.0
    mutable = np.array(y)
    mutable[0, 0] = 7.0
    assert mutable.sum() == 7.0 + 3.0 * (64 * 64 - 1) and y.sum() == 3.0 * 64 * 64


def test_the_pool_keeps_at_most_two_blocks_of_a_size(small_pool):
    f = mj.jit(affine, backend="numba", parallel=False)
    x = np.zeros(N)
    outs = [f(x) for _ in range(5)]
    del outs
    gc.collect()
    assert buffers.stats()["pooled_bytes"] == buffers.POOL_KEEP_EACH * N * 8


def test_a_block_larger_than_half_the_pool_is_freed(small_pool, monkeypatch):
    monkeypatch.setattr(buffers, "POOL_KEEP_BYTES", 2 * N * 8 - 8)  # N * 8 is over half
    f = mj.jit(affine, backend="numba", parallel=False)
    f(np.zeros(N))
    gc.collect()
    assert buffers.stats()["pooled_bytes"] == 0
    f(np.zeros(N // 2))
    gc.collect()
    assert buffers.stats()["pooled_bytes"] == N // 2 * 8


def test_a_new_size_makes_room_by_freeing_the_oldest_blocks(small_pool, monkeypatch):
    # Room for four blocks of N float64. Two sizes used early fill it; a third size used
    # later must still be pooled (its calls hit), at the cost of the blocks given back first.
    monkeypatch.setattr(buffers, "POOL_KEEP_BYTES", 4 * N * 8)
    f = mj.jit(affine, backend="numba", parallel=False)
    early = [f(np.zeros(N)), f(np.zeros(N)), f(np.zeros(N - 8)), f(np.zeros(N - 8))]
    while early:
        early.pop(0)  # given back in this order: N, N, N - 8, N - 8
    gc.collect()
    assert buffers.stats()["pooled_bytes"] == 2 * N * 8 + 2 * (N - 8) * 8
    x = np.arange(N - 16, dtype=np.float64)
    first = f(x)  # a miss; given back below, it pushes out the oldest block
    del first
    gc.collect()
    assert buffers.stats()["pooled_bytes"] == N * 8 + 2 * (N - 8) * 8 + (N - 16) * 8
    hits = buffers.stats()["hits"]
    again = [f(x) for _ in range(3)]
    assert buffers.stats()["hits"] == hits + 1  # the one pooled block of the new size
    for y in again:
        np.testing.assert_array_equal(y, 2.0 * x + 1.0)
    assert [b.nbytes for b in buffers._free[N * 8]] == [N * 8]  # one of the two early N


def test_a_hit_takes_its_block_out_of_the_age_order(small_pool, monkeypatch):
    # Room for two blocks. In each round N is used, then N - 8, then N again (a hit, after
    # which N's block is the newest), then N - 16, which pushes out N - 8, the oldest: so
    # every round after the first finds N's block twice.
    monkeypatch.setattr(buffers, "POOL_KEEP_BYTES", 2 * N * 8)
    f = mj.jit(affine, backend="numba", parallel=False)
    hits = buffers.stats()["hits"]
    for _ in range(20):
        for n in (N, N - 8, N, N - 16):
            y = f(np.ones(n))
            assert (y == 3.0).all()
            del y  # its block goes back now: reference counting, no collection needed
            st = buffers.stats()
            assert st["pooled_bytes"] <= 2 * N * 8
            assert st["pooled_bytes"] == sum(b.nbytes for bs in buffers._free.values()
                                             for b in bs)
            assert len(buffers._given_back) == sum(map(len, buffers._free.values()))
    assert buffers.stats()["hits"] - hits == 1 + 2 * 19


def test_reuse_memory_off_gives_numpy_arrays_and_empties_the_pool(small_pool):
    f = mj.jit(affine, backend="numba", parallel=False)
    x = np.zeros(N)
    f(x)
    gc.collect()
    assert buffers.stats()["pooled_bytes"] > 0
    mj.config.update("reuse_memory", False)
    try:
        y = f(x)
        assert owner(y) is None
        assert buffers.stats()["pooled_bytes"] == 0
        del y
        gc.collect()
        assert buffers.stats()["pooled_bytes"] == 0
    finally:
        mj.config.update("reuse_memory", True)


def test_many_threads_never_see_each_others_outputs(small_pool):
    f = mj.jit(affine, backend="numba", parallel=False)
    f(np.zeros(N))
    errors = []

    def worker(k):
        x = np.full(N, float(k))
        for _ in range(200):
            y = f(x)
            if not (y == 2.0 * k + 1.0).all():
                errors.append(k)
            del y

    workers = [threading.Thread(target=worker, args=(k,)) for k in range(16)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    assert errors == []


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's mallopt")
def test_the_heap_keeps_freed_memory_after_the_first_compile():
    mj.jit(affine, backend="numba")(np.zeros(3))
    assert buffers.stats()["heap_set"]
