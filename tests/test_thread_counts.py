"""minijit/threads.py: how many threads compiled code uses, and the threading layer's rules.

The values of threaded programs are compared with the serial ones in test_parallel.py; here:
the thread count and its sources, small shapes that never compile threaded code, many Python
threads calling one threaded function (cold and warm), a forked child, the `workqueue` layer
(which cannot take concurrent calls) and SciPy's BLAS following the count.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from test_threads import run_together

import minijit as mj
import minijit.numpy as mnp
from minijit import threads
from minijit.codegen.lower import Lowering

N = Lowering.PARALLEL_AT


def gelu(x):
    return 0.5 * x * (1 + mnp.tanh(0.7978845608 * (x + 0.044715 * x ** 3)))


def test_the_count_comes_from_config_then_the_environment_then_the_cores(monkeypatch):
    monkeypatch.delenv("MINIJIT_THREADS", raising=False)
    monkeypatch.delenv("NUMBA_NUM_THREADS", raising=False)
    assert threads.num_threads() == threads.usable_cpus()
    monkeypatch.setenv("NUMBA_NUM_THREADS", "3")
    assert threads.num_threads() == 3
    monkeypatch.setenv("MINIJIT_THREADS", "5")
    assert threads.num_threads() == 5
    with mj.config.override("threads", 1):
        assert threads.num_threads() == 1
        assert not threads.wanted(None) and threads.wanted(True) and not threads.wanted(False)
    assert threads.wanted(None) and not threads.wanted(False)


@pytest.mark.parametrize("bad", ["0", "-2", "two", "1.5"])
def test_a_bad_count_names_its_source_and_the_fix(monkeypatch, bad):
    monkeypatch.setenv("MINIJIT_THREADS", bad)
    with pytest.raises(ValueError, match=r"MINIJIT_THREADS must be a whole number of threads, "
                                         r"at least 1; got"):
        threads.num_threads()


def test_a_small_shape_compiles_no_threaded_code():
    """Threads are chosen per shape: the small call's executable is serial, the large one's
    threaded, and both are right."""
    with mj.config.override("threads", 2):
        f = mj.jit(gelu, backend="numba")
        small, large = np.linspace(-3, 3, 1000), np.linspace(-3, 3, N)
        serial = mj.jit(gelu, backend="numba", parallel=False)
        np.testing.assert_array_equal(f(small), serial(small))
        np.testing.assert_array_equal(f(large), serial(large))
    kinds = {e.executable.source.threaded: e.key for e in f.cache_entries()}
    assert set(kinds) == {False, True}


def test_sixteen_threads_call_one_threaded_function_cold_and_warm():
    x = np.random.default_rng(0).normal(size=(N // 128, 128))

    def softmax(x):
        e = mnp.exp(x - mnp.max(x, axis=1, keepdims=True))
        return e / mnp.sum(e, axis=1, keepdims=True)

    want = mj.jit(softmax, backend="numba", parallel=False)(x)
    f = mj.jit(softmax, backend="numba", parallel=True)
    for _ in range(2):  # the first round compiles (all threads at once), the second reuses
        for got in run_together(16, lambda i: [f(x) for _ in range(3)]):
            for r in got:
                np.testing.assert_array_equal(r, want)
    assert f.trace_count == 1
    assert "numba.prange" in f.lower(x).as_text()


@pytest.mark.skipif(sys.platform != "linux", reason="fork is Linux's default start method")
def test_a_forked_child_runs_threaded_functions_serially(tmp_path):
    """GNU OpenMP cannot run in a child forked after its threads started (Numba ends such a
    child); minijit's threaded executables use their serial twin there. (In a process of its
    own: this test process may hold other libraries' threads, which a fork does not copy.)"""
    script = textwrap.dedent(f"""
        import multiprocessing, numpy as np, minijit as mj, minijit.numpy as mnp
        f = mj.jit(lambda x: mnp.tanh(x) * 0.5 + x, backend="numba", parallel=True)
        x = np.linspace(-3, 3, {N})
        want = np.asarray(f(x))  # threads started in this process
        def child(q):
            q.put(np.asarray(f(x)))
        ctx = multiprocessing.get_context("fork")
        q = ctx.Queue()
        p = ctx.Process(target=child, args=(q,))
        p.start()
        got = q.get(timeout=120)  # before join: the child waits until its result is read
        p.join(30)
        print(p.exitcode, np.array_equal(got, want))
    """)
    env = dict(os.environ, MINIJIT_CACHE_DIR=str(tmp_path))
    run = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                         text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.stdout.split() == ["0", "True"]


def test_the_workqueue_layer_takes_one_threaded_call_at_a_time(tmp_path):
    """Numba's workqueue layer ends the process when two threads run parallel code at once;
    minijit serializes its threaded calls there."""
    script = textwrap.dedent(f"""
        import threading, numpy as np, minijit as mj, minijit.numpy as mnp
        from minijit import threads
        f = mj.jit(lambda x: mnp.sin(x) * 2.0 + 1.0, backend="numba", parallel=True)
        x = np.linspace(0, 1, {N})
        want = np.sin(x) * 2.0 + 1.0
        f(x)
        assert threads.layer() == "workqueue", threads.layer()
        bad = []
        def work():
            for _ in range(20):
                if not np.allclose(f(x), want):
                    bad.append(1)
        ts = [threading.Thread(target=work) for _ in range(8)]
        [t.start() for t in ts]
        [t.join() for t in ts]
        print("ok", len(bad))
    """)
    env = dict(os.environ, NUMBA_THREADING_LAYER="workqueue", MINIJIT_CACHE_DIR=str(tmp_path))
    run = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                         text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.stdout.split() == ["ok", "0"]


def test_scipys_blas_follows_the_count(monkeypatch):
    threadpoolctl = pytest.importorskip("threadpoolctl")
    monkeypatch.delenv("OPENBLAS_NUM_THREADS", raising=False)
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    a = np.ones((8, 8))
    mj.jit(lambda a: mnp.dot(a, a) + 1.0, backend="numba")(a)  # compiling it loads SciPy's BLAS
    monkeypatch.setitem(threads._state, "blas", False)
    with mj.config.override("threads", 1):
        threads.follow_blas()
    pools = [p for p in threadpoolctl.ThreadpoolController().select(user_api="blas")
             .lib_controllers if f"{os.sep}scipy" in p.filepath and "numpy" not in p.filepath]
    assert pools and all(p.num_threads == 1 for p in pools)
    monkeypatch.setitem(threads._state, "blas", False)
    threads.follow_blas()  # back to this process's count, for the tests after this one
    assert all(p.num_threads == threads.num_threads() for p in pools)


@pytest.mark.parametrize("user", [None, "ACTIVE"])
def test_idle_threads_sleep_unless_the_user_chose(tmp_path, user):
    """OpenMP's policy is set from `import minijit` on, before anyone starts Numba's threads;
    OpenBLAS's spin from the first compile, before `np.dot` loads SciPy's BLAS. A value the
    user set is kept."""
    script = textwrap.dedent("""
        import os, numpy as np
        import minijit as mj
        print(os.environ.get("OMP_WAIT_POLICY"), os.environ.get("OPENBLAS_THREAD_TIMEOUT"))
        mj.jit(lambda x: x + 1.0, backend="numba")(np.ones(3))
        print(os.environ.get("OMP_WAIT_POLICY"), os.environ.get("OPENBLAS_THREAD_TIMEOUT"))
    """)
    env = {k: v for k, v in os.environ.items()
           if k not in ("OMP_WAIT_POLICY", "OPENBLAS_THREAD_TIMEOUT")}
    env["MINIJIT_CACHE_DIR"] = str(tmp_path)
    if user:
        env.update(OMP_WAIT_POLICY=user, OPENBLAS_THREAD_TIMEOUT="20")
    run = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                         text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]
    if user:
        assert run.stdout.split() == ["ACTIVE", "20", "ACTIVE", "20"]
    else:
        assert run.stdout.split() == ["PASSIVE", "None", "PASSIVE", "4"]
