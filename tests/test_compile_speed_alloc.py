"""Generated code allocates through `minijit/codegen/alloc.py`, never through NumPy's own
`np.empty` / `np.full` / `np.zeros` / `np.empty_like` / `.copy()`.

Why it matters (measured in benchmarks/README.md, "Where a first call's time goes"): Numba
types and lowers NumPy's allocation overloads afresh in every process, once for each rank and
dtype, which cost a small control-flow program about a third of its first call. `alloc`'s
functions are compiled once per installation and loaded from Numba's disk cache. A rule that
went back to `np.empty` would still be right, only slower on every first call: these tests
catch it. They compare results with NumPy and `eval_jaxpr`, and time nothing.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

import minijit as mj
import minijit.numpy as mnp
from minijit import lax
from minijit.codegen import alloc
from minijit.codegen import compile as codegen_compile


@pytest.fixture(autouse=True)
def private_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("MINIJIT_CACHE_DIR", str(tmp_path / "cache"))


# NumPy's allocations written in generated code: each one is a per-process compile.
NUMPY_ALLOCATION = re.compile(r"\bnp\.(empty|full|zeros|ones|empty_like|zeros_like)\(|\.copy\(\)")


def nested(x):
    """while_loop > cond > fori_loop, as benchmarks/workloads.py's `nested` 3 deep."""
    def step(s):
        inner = lax.cond(mnp.max(s[1]) > 0.0,
                         lambda u: lax.fori_loop(0, 3, lambda i, v: mnp.sin(v) * 0.5 + 0.25, u),
                         lambda u: u * 0.9, s[1])
        return s[0] + 1, inner
    return lax.while_loop(lambda s: s[0] < 4, step, (mnp.asarray(0), x))[1]


def softmax(x):
    e = mnp.exp(x - mnp.max(x, axis=-1, keepdims=True))
    return e / mnp.sum(e, axis=-1, keepdims=True)


PROGRAMS = [  # (function, arguments): each allocates in a different rule
    (nested, (np.linspace(-1.0, 1.0, 50),)),
    (softmax, (np.random.default_rng(0).normal(size=(4, 8)),)),
    (lambda x: (x[1:3, ::2] * 2.0, mnp.reshape(x[0, 0] * 3.0, (1, 1))),
     (np.arange(12.0).reshape(3, 4),)),
    (lambda a, b: a @ b + 1.0, (np.ones((3, 4)), np.full((4, 2), 0.5))),
    (lambda x: lax.fori_loop(0, 4, lambda i, c: (c[0] + c[1], c[0]), (x, x * 2))[0],
     (np.arange(6, dtype=np.int32),)),
]


@pytest.mark.parametrize("fun,args", PROGRAMS)
def test_generated_code_allocates_through_alloc_and_agrees(fun, args):
    jitted = mj.jit(fun, backend="numba")
    text = jitted.lower(*args).as_text()
    assert "from minijit.codegen import alloc" in text
    assert not NUMPY_ALLOCATION.search(text), NUMPY_ALLOCATION.search(text)[0]
    closed = mj.make_jaxpr(fun)(*args)
    want = mj.eval_jaxpr(closed.jaxpr, closed.consts, *args)
    got = jitted(*args)
    got = list(got) if isinstance(got, (tuple, list)) else [got]
    assert len(got) == len(want)
    for g, w in zip(got, want):
        g = np.asarray(g)
        assert g.dtype == w.dtype and g.shape == w.shape
        np.testing.assert_allclose(g, w, rtol=1e-12)


def test_the_nested_program_allocates_somewhere():
    """The pattern above would pass vacuously if nothing were allocated at all."""
    text = mj.jit(nested, backend="numba").lower(np.ones(50)).as_text()
    assert "alloc.copy(" in text and "alloc.empty(" in text


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int64, np.int32, np.bool_])
@pytest.mark.parametrize("shape", [(), (3,), (2, 3), (2, 1, 3)])
def test_alloc_returns_what_numpy_would(shape, dtype):
    for got in (alloc.empty(shape, dtype), alloc.zeros(shape, dtype),
                alloc.full(shape, 1, dtype)):
        assert got.shape == shape and got.dtype == dtype and got.flags.c_contiguous
    np.testing.assert_array_equal(alloc.zeros(shape, dtype), np.zeros(shape, dtype))
    np.testing.assert_array_equal(alloc.full(shape, 1, dtype), np.full(shape, 1, dtype))
    a = np.arange(np.prod(shape, dtype=int)).astype(dtype).reshape(shape)
    like = alloc.empty_like(a)
    assert like.shape == shape and like.dtype == dtype and like.flags.c_contiguous
    copied = alloc.copy(a)
    np.testing.assert_array_equal(copied, a)
    assert not np.shares_memory(copied, a)


def test_copy_of_a_strided_view_is_contiguous():
    view = np.arange(24.0).reshape(4, 6)[1:3, ::2]
    copied = alloc.copy(view)
    assert copied.flags.c_contiguous
    np.testing.assert_array_equal(copied, view)


def test_alloc_is_compiled_once_per_installation():
    """Each function keeps its machine code in Numba's disk cache (`cache=True`), and the hash
    that keys minijit's own disk cache reads alloc.py, whose code every program inlines."""
    for fn in (alloc.empty, alloc.full, alloc.zeros, alloc.empty_like, alloc.copy):
        assert fn._cache.__class__.__name__ != "NullCache", fn
    read = []
    original = Path.read_bytes

    def recording(self):
        read.append(self.name)
        return original(self)

    Path.read_bytes = recording
    try:
        codegen_compile._library_hash()
    finally:
        Path.read_bytes = original
    assert "alloc.py" in read
