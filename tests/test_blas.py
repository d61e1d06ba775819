"""Matrix products on NumPy's own BLAS (`minijit/codegen/blas.py`): which library a product
calls, and that every shape, transposition and dtype it takes gives NumPy's values."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
import threading
from types import SimpleNamespace

import numpy as np
import pytest

import minijit as mj
import minijit.lax as lax
import minijit.numpy as mnp
from minijit.codegen import blas

NUMPYS_BLAS = np.show_config(mode="dicts")["Build Dependencies"]["blas"]
WHEEL = NUMPYS_BLAS.get("name") == "scipy-openblas" and "USE64BITINT" in str(
    NUMPYS_BLAS.get("openblas configuration", ""))


def numpys_blas_threads() -> int:
    lib = blas._LIB
    return lib.scipy_openblas_get_num_threads64_()


@pytest.fixture
def on_numpys_blas(monkeypatch):
    """minijit's thread count set to NumPy's BLAS's, and its threads taken to sleep at once
    (`OPENBLAS_THREAD_TIMEOUT=4` before NumPy loads), so that products call it."""
    if not blas.AVAILABLE:  # a conda NumPy, say: `test_numpys_wheel_blas_is_found_and_only_it`
        pytest.skip("NumPy's BLAS here is not the scipy-openblas64 build pip installs: "
                    "products call SciPy's (test_another_thread_count_keeps_scipys_blas)")
    monkeypatch.setattr(blas, "spins", lambda: False)
    mj.config.update("threads", numpys_blas_threads())
    yield
    mj.config.update("threads", None)


def test_numpys_wheel_blas_is_found_and_only_it():
    # pip's NumPy carries scipy-openblas64: found. Any other BLAS: not used, np.dot instead.
    assert blas.AVAILABLE == WHEEL


@pytest.mark.parametrize("config", [
    {"Build Dependencies": {"blas": {"name": "mkl-sdl", "found": True}}},  # a conda NumPy
    {"Build Dependencies": {"blas": {"name": "scipy-openblas",  # a 32-bit-integer build
                                     "openblas configuration": "OpenBLAS 0.3.30 DYNAMIC_ARCH"}}},
    {},
])
def test_another_numpy_blas_is_not_called(monkeypatch, config):
    monkeypatch.setattr(np, "show_config", lambda mode=None: config)
    assert blas._find_library() is None


@pytest.mark.parametrize("count,threads,timeout,used", [
    (4, 4, 4, True),    # the same count, threads that sleep at once
    (4, 4, 16, True),
    (4, 4, 20, False),  # threads that spin for 2**20 cycles
    (4, 4, 0, False),   # OpenBLAS's default: 2**28 cycles
    (1, 1, 0, True),    # one thread: nothing spins
    (4, 2, 4, False),   # another count
])
def test_which_blas(monkeypatch, count, threads, timeout, used):
    lib = SimpleNamespace(scipy_openblas_get_num_threads64_=lambda: count,
                          openblas_thread_timeout=lambda: timeout)
    monkeypatch.setattr(blas, "_LIB", lib)
    monkeypatch.setattr(blas, "AVAILABLE", True)
    assert blas.usable(threads) is used


def test_spins_reads_the_timeout_numpy_loaded_with():
    if not blas.AVAILABLE:
        pytest.skip("NumPy's BLAS here is not the scipy-openblas64 build pip installs")
    script = "from minijit.codegen import blas; print(blas.spins())"
    for timeout, spins in ((None, "True"), ("4", "False"), ("24", "True")):
        env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_THREAD_TIMEOUT"}
        if timeout:
            env["OPENBLAS_THREAD_TIMEOUT"] = timeout
        r = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                           text=True, timeout=120)
        assert r.returncode == 0 and r.stdout.split() == [spins], (timeout, r.stdout, r.stderr)


def product_source(f, *args) -> str:
    return mj.jit(f, backend="numba").lower(*args).as_text()


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("m,k,n", [(3, 4, 2), (1, 1, 1), (0, 4, 2), (3, 0, 2), (3, 4, 0),
                                   (65, 130, 33)])
def test_products_agree_with_numpy(on_numpys_blas, dtype, m, k, n):
    rng = np.random.default_rng(m * 100 + k * 10 + n)
    a = rng.standard_normal((m, k)).astype(dtype)
    b = rng.standard_normal((k, n)).astype(dtype)
    tol = dict(rtol=1e-5, atol=1e-5) if dtype == np.float32 else dict(rtol=1e-12, atol=1e-12)
    cases = [
        (lambda a, b: a @ b, (a, b), a @ b),
        # contracting the left operand's first axis, the right one's second: BLAS is told to
        # transpose, no transposed copy is made
        (lambda at, b: lax.dot_general(at, b, (((0,), (0,)), ((), ()))), (a.T.copy(), b), a @ b),
        (lambda a, bt: lax.dot_general(a, bt, (((1,), (1,)), ((), ()))), (a, b.T.copy()), a @ b),
        (lambda at, bt: lax.dot_general(at, bt, (((0,), (1,)), ((), ()))),
         (a.T.copy(), b.T.copy()), a @ b),
        # vectors on either side, and both
        (lambda a, v: a @ v, (a, b[:, 0].copy() if n else np.ones(k, dtype)),
         a @ (b[:, 0] if n else np.ones(k, dtype))),
        (lambda u, b: u @ b, (a[0].copy() if m else np.ones(k, dtype), b),
         (a[0] if m else np.ones(k, dtype)) @ b),
        (lambda u, v: mnp.dot(u, v), (np.arange(k, dtype=dtype), np.ones(k, dtype)),
         np.arange(k, dtype=dtype) @ np.ones(k, dtype)),
        # operands that are strided views inside the program
        (lambda a2, b: a2[::2, 1:] @ b, (np.repeat(np.pad(a, ((0, 0), (1, 0))), 2, axis=0), b),
         a @ b),
    ]
    for f, args, want in cases:
        got = mj.jit(f, backend="numba")(*args)
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_allclose(got, want, **tol)
        assert "blas.matmul(" in product_source(f, *args)
        assert "np.dot(" not in product_source(f, *args)


def test_another_thread_count_keeps_scipys_blas():
    # OpenBLAS has one thread count per process: minijit never changes NumPy's, so a program
    # compiled for another count calls SciPy's BLAS (np.dot), whose count minijit sets.
    mj.config.update("threads", numpys_blas_threads() + 1 if blas.AVAILABLE else 2)
    try:
        a = np.random.default_rng(0).standard_normal((5, 3))
        src = product_source(lambda a: a @ a.T, a)
        assert "np.dot(" in src and "blas." not in src
        np.testing.assert_allclose(mj.jit(lambda a: a @ a.T, backend="numba")(a), a @ a.T,
                                   rtol=1e-12)
    finally:
        mj.config.update("threads", None)


TRANSPOSED = {  # a product of a transposed operand, as users write it
    "a @ b.T": (lambda a, b: a @ b.T, (5, 3), (4, 3)),
    "a.T @ b": (lambda a, b: a.T @ b, (3, 5), (3, 4)),
    "a.T @ b.T": (lambda a, b: a.T @ b.T, (3, 5), (4, 3)),
    "v @ b.T": (lambda v, b: v @ b.T, (3,), (4, 3)),
    "a.T @ v": (lambda a, v: a.T @ v, (3, 5), (3,)),
    "b.T read twice": (lambda a, b: (a @ b.T, b.T * 2.0), (5, 3), (4, 3)),
}


def assert_like_numpy(f, a, b, same):
    """`f(a, b)` compiled gives NumPy's outputs: dtypes, shapes, and values by `same`."""
    want, got = f(a, b), mj.jit(f, backend="numba")(a, b)
    want, got = (want, got) if isinstance(want, tuple) else ([want], [got])
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype and g.shape == w.shape
        same(g, w)


@pytest.mark.parametrize("library", ["numpy's", "scipy's"])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("case", list(TRANSPOSED))
def test_a_transposed_operand_is_not_copied(library, dtype, case, request):
    # `simplify` makes the product read the matrix itself (chapter 07), and either BLAS is
    # told to transpose it: NumPy's by its flag, SciPy's through a Fortran-ordered view
    if library == "numpy's":
        request.getfixturevalue("on_numpys_blas")
    else:
        mj.config.update("threads", numpys_blas_threads() + 1 if blas.AVAILABLE else 2)
        request.addfinalizer(lambda: mj.config.update("threads", None))
    f, sa, sb = TRANSPOSED[case]
    rng = np.random.default_rng(len(case))
    a, b = rng.standard_normal(sa).astype(dtype), rng.standard_normal(sb).astype(dtype)
    tol = dict(rtol=1e-5, atol=1e-5) if dtype == np.float32 else dict(rtol=1e-12, atol=1e-12)
    assert_like_numpy(f, a, b, lambda g, w: np.testing.assert_allclose(g, w, **tol))
    src = product_source(f, a, b)
    # the one transpose left is the one `b.T * 2.0` reads
    assert src.count("= transpose[") == (1 if case == "b.T read twice" else 0), src
    if library == "scipy's":  # a view, never `np.ascontiguousarray(b.T)`, a copy
        assert ").T" in src and not re.search(r"ascontiguousarray\(\w+\.T\)", src), src
    else:
        assert ".T" not in src, src


@pytest.mark.parametrize("dtype", [np.int32, np.int64])
@pytest.mark.parametrize("case", list(TRANSPOSED))
def test_integer_products_of_a_transposed_operand(dtype, case):
    # no BLAS for integers: the generated loop reads a contiguous copy of the view
    f, sa, sb = TRANSPOSED[case]
    rng = np.random.default_rng(len(case))
    a, b = rng.integers(-50, 50, sa).astype(dtype), rng.integers(-50, 50, sb).astype(dtype)
    assert_like_numpy(f, a, b, np.testing.assert_array_equal)


def test_products_never_write_their_operands(on_numpys_blas):
    a = np.random.default_rng(1).standard_normal((8, 6))
    b = np.random.default_rng(2).standard_normal((6, 4))
    a0, b0 = a.copy(), b.copy()
    mj.jit(lambda a, b: mnp.tanh(a @ b) + 1.0, backend="numba")(a, b)
    assert np.array_equal(a, a0) and np.array_equal(b, b0)


def test_many_threads_calling_one_product(on_numpys_blas):
    f = mj.jit(lambda a, b: mnp.tanh(a @ b), backend="numba")
    rng = np.random.default_rng(3)
    pairs = [(rng.standard_normal((40, 30)), rng.standard_normal((30, 20))) for _ in range(16)]
    f(*pairs[0])  # compiled once; the threads then call it together
    got = [None] * len(pairs)

    def work(i):
        for _ in range(20):
            got[i] = f(*pairs[i])

    threads = [threading.Thread(target=work, args=(i,)) for i in range(len(pairs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for (a, b), g in zip(pairs, got):
        np.testing.assert_allclose(g, np.tanh(a @ b), rtol=1e-12)


def test_a_new_process_loads_a_product_from_the_disk_cache(on_numpys_blas, tmp_path):
    # The compiled code calls NumPy's BLAS by a name minijit gives LLVM: a new process must
    # register it again before Numba loads the cached machine code.
    script = textwrap.dedent("""
        import numpy as np, minijit as mj
        from minijit.codegen import blas, compile
        mj.config.update("threads", blas._LIB.scipy_openblas_get_num_threads64_())
        a = np.arange(12.0).reshape(3, 4)
        f = mj.jit(lambda a: a @ a.T + 1.0, backend="numba")
        assert "blas.matmul(" in f.lower(a).as_text()
        np.testing.assert_array_equal(f(a), a @ a.T + 1.0)
        print(compile.stats["disk_hits"], compile.stats["compiled"])
    """)
    env = {**os.environ, "MINIJIT_CACHE_DIR": str(tmp_path / "cache"),
           "OPENBLAS_THREAD_TIMEOUT": "4"}  # NumPy's BLAS threads sleep: products call it
    runs = [subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                           text=True, timeout=300) for _ in range(2)]
    for r in runs:
        assert r.returncode == 0, r.stderr
    assert runs[0].stdout.split() == ["0", "1"]  # compiled and stored
    assert runs[1].stdout.split() == ["1", "0"]  # loaded, no compile


# (operand dtype, preferred_element_type): JAX multiplies float32 operands as float64, int8
# ones as int32 (no wrap at int8) and int32 ones as float32; it converts a float result to int32,
# and a float64 result to float32.
PREFERRED = [(np.float32, np.float64), (np.int8, np.int32), (np.int32, np.float32),
             (np.float64, np.float32), (np.float32, np.int32)]


@pytest.mark.parametrize("backend", ["interpreter", "numba"])
@pytest.mark.parametrize("operand,preferred", PREFERRED)
def test_preferred_element_type_as_jax(backend, operand, preferred):
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    rng = np.random.default_rng(4)
    if np.dtype(operand).kind == "f":
        a = (rng.standard_normal((6, 300)) * 3).astype(operand)
        b = (rng.standard_normal((300, 5)) * 3).astype(operand)
    else:  # int8 products of 100 * 100 summed 300 times overflow int8, not int32
        a = np.full((6, 300), 100, operand)
        b = rng.integers(-100, 100, (300, 5)).astype(operand)
    for x, y in ((a, b), (a[0], b), (a, b[:, 0]), (a[0], b[:, 0].copy())):
        x, y = np.ascontiguousarray(x), np.ascontiguousarray(y)
        nd = (((x.ndim - 1,), (0,)), ((), ()))
        want = np.asarray(jax.lax.dot_general(x, y, nd, preferred_element_type=preferred))
        got = mj.jit(lambda p, q, nd=nd: lax.dot_general(p, q, nd,
                                                         preferred_element_type=preferred),
                     backend=backend, static_argnames="nd")(x, y)
        assert np.asarray(got).dtype == want.dtype == np.dtype(preferred)
        tol = 1e-5 if np.dtype(preferred) == np.float32 else 1e-12
        if np.dtype(preferred).kind == "f":
            np.testing.assert_allclose(got, want, rtol=tol, atol=tol * 100)
        else:
            # float32 products rounded to int32: JAX's sums in another order may round across
            # an integer, so at most 1 apart; int32 sums of int8 products are exact
            limit = 1 if np.dtype(operand).kind == "f" else 0
            assert np.abs(np.asarray(got).astype(np.int64) - want).max() <= limit
