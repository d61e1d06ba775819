"""Jitted functions called from several threads at once (tracing state is per thread).

Every test is deterministic: threads start together at a `threading.Barrier`, and where two
threads must overlap in a particular way (one inside a trace while another runs eagerly) they
wait for each other with `threading.Event`s, never with sleeps. Every wait has a timeout, so a
regression fails the test instead of hanging it. Each thread checks its own result value.
"""

from __future__ import annotations

import threading

import numpy as np
import pytest

import minijit as mj
import minijit.numpy as mnp
from minijit.config import config
from minijit.core import eval_trace, trace_state
from minijit.tracing import Tracer

N_THREADS = 16
TIMEOUT = 120  # seconds: generous, only reached if something deadlocks
BACKENDS = ["interpreter", "numba"]


@pytest.fixture(autouse=True)
def private_cache(tmp_path, monkeypatch):
    """A cold disk cache of our own, so the Numba tests compile for real."""
    monkeypatch.setenv("MINIJIT_CACHE_DIR", str(tmp_path / "cache"))


def program(c: float):
    """A function whose generated code is new for each `c` (it becomes a literal)."""
    def f(x):
        y = x
        for _ in range(8):
            y = mnp.sin(y) * 0.5 + x * c
        return y

    def reference(x):
        y = x
        for _ in range(8):
            y = np.sin(y) * 0.5 + x * c
        return y

    return f, reference


def run_together(n: int, work) -> list:
    """Run `work(i)` in `n` threads released together by a barrier; return the results in
    order, re-raising the first exception a thread raised."""
    barrier = threading.Barrier(n, timeout=TIMEOUT)
    results: list = [None] * n
    errors: list = []

    def run(i):
        try:
            barrier.wait()
            results[i] = work(i)
        except BaseException as e:  # noqa: BLE001 - handed to the main thread below
            errors.append(e)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(TIMEOUT)
    assert not any(t.is_alive() for t in threads), "a thread is stuck"
    if errors:
        raise errors[0]
    return results


def wait(event: threading.Event) -> None:
    assert event.wait(TIMEOUT), "the other thread never got there"


# --------------------------------------------------------------------------- one function


@pytest.mark.parametrize("backend", BACKENDS)
def test_many_threads_on_a_cold_cache_trace_once(backend):
    f, reference = program(1.25 if backend == "numba" else 1.5)
    jf = mj.jit(f, backend=backend)

    def work(i):
        x = np.linspace(-1.0, 1.0, 5) + i
        np.testing.assert_allclose(jf(x), reference(x), rtol=1e-12)
        return True

    assert all(run_together(N_THREADS, work))
    # The per-function lock: threads that missed together compiled the key once.
    assert jf.trace_count == 1 and jf._cache_size() == 1
    assert len(jf.cache_misses) == 1


@pytest.mark.parametrize("backend", BACKENDS)
def test_many_threads_on_a_warm_cache(backend):
    f, reference = program(2.25 if backend == "numba" else 2.5)
    jf = mj.jit(f, backend=backend)
    jf(np.zeros(4))  # warm

    def work(i):
        for k in range(50):
            x = np.full(4, 0.01 * (i * 50 + k))
            np.testing.assert_allclose(jf(x), reference(x), rtol=1e-12)
        return True

    assert all(run_together(N_THREADS, work))
    assert jf.trace_count == 1


@pytest.mark.parametrize("backend", BACKENDS)
def test_threads_with_different_shapes_at_once(backend):
    f, reference = program(3.25 if backend == "numba" else 3.5)
    jf = mj.jit(f, backend=backend)

    def work(i):
        x = np.arange(i + 1, dtype=np.float64) / (i + 1)
        out = jf(x)
        assert out.shape == (i + 1,)
        np.testing.assert_allclose(out, reference(x), rtol=1e-12)
        return True

    assert all(run_together(N_THREADS, work))
    # One trace per shape, and the cache's records agree with each other.
    cache = jf._cache
    assert jf.trace_count == N_THREADS == jf._cache_size()
    assert len(cache.history) == len(cache.misses) == N_THREADS
    assert {s.key for s in cache.history} == set(cache.entries)
    assert {m.split.key for m in cache.misses} == set(cache.entries)


# --------------------------------------------------------------------------- traces that overlap


@pytest.mark.parametrize("backend", BACKENDS)
def test_traces_open_in_many_threads_at_once_do_not_mix(backend):
    """A barrier *inside* the traced functions: all 16 traces are open at the same moment
    (each thread traces its own function, so no lock keeps them apart)."""
    inside = threading.Barrier(N_THREADS, timeout=TIMEOUT)
    programs = [program(4.0 + i / 8) for i in range(N_THREADS)]

    def traced(i):
        f, _ = programs[i]

        def g(x):
            y = f(x)
            inside.wait()  # Python code: runs while tracing, with every other trace open
            return y + i

        return g

    jitted = [mj.jit(traced(i), backend=backend) for i in range(N_THREADS)]

    def work(i):
        x = np.linspace(0.0, 1.0, 3)
        np.testing.assert_allclose(jitted[i](x), programs[i][1](x) + i, rtol=1e-12)
        return len(jitted[i].cache_entries()[0].traced.jaxpr.eqns)

    counts = run_together(N_THREADS, work)
    assert len(set(counts)) == 1  # every trace recorded its own equations, no one else's


def test_eager_calls_while_another_thread_traces():
    inside, done = threading.Event(), threading.Event()
    seen: dict = {}

    def f(x):
        inside.set()
        wait(done)  # stay inside the trace while the other thread runs eagerly
        return mnp.cos(x) + 1.0

    jf = mj.jit(f)
    cached = mj.jit(lambda x: x * 3.0)
    cached(np.ones(2))

    def tracer_thread():
        seen["traced"] = jf(np.zeros(2))

    def eager_thread():
        wait(inside)
        try:
            assert trace_state.stack == [eval_trace]  # the other thread's trace is not ours
            y = mnp.sin(np.full(2, 0.5)) * 2.0  # eager: concrete values, not staged
            assert not isinstance(y, Tracer)
            np.testing.assert_allclose(y, np.sin(0.5) * 2.0)
            seen["eager"] = y
            seen["cached"] = cached(np.full(2, 2.0))  # a jitted call runs, is not staged
            seen["compiled_now"] = mj.jit(lambda x: x - 1.0)(np.ones(2))  # and may compile
        finally:
            done.set()

    threads = [threading.Thread(target=t) for t in (tracer_thread, eager_thread)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(TIMEOUT)
    np.testing.assert_allclose(seen["traced"], [2.0, 2.0])
    np.testing.assert_allclose(seen["cached"], [6.0, 6.0])
    np.testing.assert_allclose(seen["compiled_now"], [0.0, 0.0])
    # The trace recorded its own equations only (cos and add), none of the eager thread's.
    eqns = jf.cache_entries()[0].traced.jaxpr.eqns
    assert [e.primitive.name for e in eqns] == ["cos", "add"]


# --------------------------------------------------------------------------- per-thread settings


def test_disable_jit_in_one_thread_leaves_other_threads_jitted():
    inside, done = threading.Event(), threading.Event()
    seen: dict = {}
    jf = mj.jit(lambda x: (seen.setdefault("traced_by", []).append(
        threading.current_thread().name), x + 1.0)[1])

    def debugging():
        with mj.disable_jit():
            seen["eager"] = jf(np.ones(2))  # runs the body eagerly: no trace
            inside.set()
            wait(done)

    def serving():
        wait(inside)
        try:
            assert not config.disable_jit
            seen["jitted"] = jf(np.ones(2))
        finally:
            done.set()

    threads = [threading.Thread(target=debugging, name="debugging"),
               threading.Thread(target=serving, name="serving")]
    for t in threads:
        t.start()
    for t in threads:
        t.join(TIMEOUT)
    np.testing.assert_allclose(seen["eager"], [2.0, 2.0])
    np.testing.assert_allclose(seen["jitted"], [2.0, 2.0])
    assert jf.trace_count == 1
    # the body ran twice: eagerly in `debugging`, and once while `serving` traced it
    assert sorted(seen["traced_by"]) == ["debugging", "serving"]


def test_overrides_that_interleave_across_threads_restore_every_value():
    """A enters, B enters, A leaves, B leaves: with one shared value, B would restore
    A's True after A had left. Per-thread overrides cannot step on each other."""
    a_in, b_in, a_out = threading.Event(), threading.Event(), threading.Event()
    inside: dict = {}

    def a():
        with mj.checking_leaks():
            a_in.set()
            wait(b_in)
            inside["a"] = config.check_tracer_leaks
        a_out.set()

    def b():
        wait(a_in)
        assert not config.check_tracer_leaks  # A's override is A's
        with mj.checking_leaks():
            b_in.set()
            wait(a_out)
            inside["b"] = config.check_tracer_leaks

    threads = [threading.Thread(target=a), threading.Thread(target=b)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(TIMEOUT)
    assert inside == {"a": True, "b": True}
    assert config.check_tracer_leaks is False
    assert config._overrides_open["check_tracer_leaks"] == 0


def test_config_update_is_process_wide():
    seen = []
    try:
        mj.config.update("log_compiles", True)
        t = threading.Thread(target=lambda: seen.append(config.log_compiles))
        t.start()
        t.join(TIMEOUT)
    finally:
        mj.config.update("log_compiles", False)
    assert seen == [True]


# --------------------------------------------------------------------------- compile cache


def test_threads_compiling_the_same_source_compile_it_once():
    """Sixteen jitted functions with the same generated code: Numba compiles it once."""
    from minijit.codegen import compile as cc

    jitted = [mj.jit(lambda x: x * 5.5 - 0.75, backend="numba") for _ in range(N_THREADS)]
    before = dict(cc.stats)

    def work(i):
        np.testing.assert_allclose(jitted[i](np.full(3, float(i))), i * 5.5 - 0.75)
        return True

    assert all(run_together(N_THREADS, work))
    assert cc.stats["compiled"] + cc.stats["disk_hits"] - before["compiled"] - (
        before["disk_hits"]) == 1
    assert cc.stats["memory_hits"] - before["memory_hits"] == N_THREADS - 1
