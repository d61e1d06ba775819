"""The build track's chapter 04 piece `jit_call` (`minijit.jit`): the call path of a jitted
function, written with the steps `JitFunction` gives it.

- every top-level call of a jitted function runs the piece (`build.call`), under the
  function's lock, and minijit's fast path stays off while it is switched in; a switch
  empties the caches;
- the solution's piece of `solutions/04_jit_and_the_cache.ipynb`, switched in, runs the
  catalogue (`tests/catalogue.py`) and every graded call sequence with minijit's values,
  dtypes, trees, trace counts and cache entries; donation and `debug_nans` work through it;
- a broken piece fails with a `PieceError` that names it (one that raises, returns the flat
  outputs, runs an entry traced for other arguments, or hands its work to minijit's own);
  the program's own errors stay the program's; `build.reset` restores minijit's own.
"""

from __future__ import annotations

import contextlib
import importlib
import threading

import numpy as np
import pytest
from catalogue import PROGRAMS
from solution_cells import solution_namespace
from stand_in import stand_in

import minijit as mj
from minijit import build
from minijit.array import Array
from minijit.grading import cache_probes
from minijit.grading import programs as graded
from minijit.tree_util import tree_leaves, tree_structure

jit_module = importlib.import_module("minijit.jit")
pytestmark = pytest.mark.usefixtures("minijits_own_pieces")


def _solution_piece():
    """`jit_call` as the solution notebook defines it."""
    return solution_namespace("04_jit_and_the_cache.ipynb", "ex04_jit_call")["jit_call"]


def _fresh(fn):
    return cache_probes._fresh(fn)


def _counting(calls: list):
    def jit_call(f, args, kwargs):
        calls.append(f.spec.fun_name)
        return stand_in("jit_call")(f, args, kwargs)
    return jit_call


# --------------------------------------------------------------------------- the call path


def test_every_top_level_call_runs_the_piece_and_the_fast_path_waits():
    calls: list = []
    g = mj.jit(_fresh(lambda x: x + 1.0), backend="interpreter")
    inner = mj.jit(lambda v: v * 2.0)
    f = mj.jit(_fresh(lambda x: inner(x) - 1.0), backend="interpreter")  # inner is staged
    x = np.ones(3)
    with build.use("jit_call", _counting(calls), verify=False):
        for _ in range(3):
            g(x)  # fast-path eligible: under a learner's jit_call, every call asks it
        f(x)
        assert not g._cache.fast
    assert calls == ["<lambda>"] * 4 and g.trace_count == 1 and f.trace_count == 1
    g(x), g(x)  # minijit's own again: the switch emptied the cache, the fast path serves
    assert len(calls) == 4 and g.trace_count == 2 and g._cache.fast


def _described(outs, jitted) -> tuple:
    return ([str(tree_structure(o)) for o in outs],
            [(type(v), v.dtype, getattr(v, "weak_type", False)) for o in outs
             for v in tree_leaves(o)],
            [np.asarray(v) for o in outs for v in tree_leaves(o)], jitted.trace_count)


def test_the_solution_runs_the_catalogue():
    piece = _solution_piece()
    mismatches = []
    for prog in PROGRAMS:
        args = prog.make_args()
        runs = []
        for use in (None, piece):
            jitted = mj.jit(prog.minijit_fn(), static_argnums=prog.static_argnums,
                            backend="interpreter")
            with (build.use("jit_call", use, verify=False) if use else
                  contextlib.nullcontext()), np.errstate(all="ignore"):
                runs.append(_described([jitted(*args), jitted(*args)], jitted))
        (trees, kinds, values, traces), want = runs[1], runs[0]
        if (trees, kinds, traces) != (want[0], want[1], want[3]) or not all(
                np.array_equal(a, b, equal_nan=True) for a, b in zip(values, want[2])):
            mismatches.append(prog.name)
    assert not mismatches, f"they differ on {mismatches}"


@pytest.mark.parametrize("scenario", list(cache_probes.SCENARIOS) + list(graded.PROGRAMS))
def test_the_solution_agrees_on_every_graded_sequence(scenario):
    want = cache_probes.run_with_call(jit_module.jit_call, scenario)
    got = cache_probes.run_with_call(_solution_piece(), scenario)
    for key in ("traces", "entries", "dtypes", "trees", "kinds"):
        assert got[key] == want[key], key
    for g, w in zip(got["values"], want["values"]):
        for a, b in zip(g, w):
            np.testing.assert_array_equal(a, b)


def test_donation_debug_nans_and_explanations_work_through_the_piece(caplog):
    piece = _solution_piece()
    with build.use("jit_call", piece):
        donated = np.ones(3)
        out = mj.jit(lambda a: a * 2.0, donate_argnums=0, backend="interpreter")(donated)
        np.testing.assert_array_equal(out, [2.0, 2.0, 2.0])
        with pytest.raises(RuntimeError, match="donated"):
            mj.jit(lambda a: a + 1.0, backend="interpreter")(donated)
        with mj.config.override("debug_nans", True), pytest.raises(FloatingPointError):
            mj.jit(lambda a: mj.numpy.log(a - 2.0), backend="interpreter")(np.ones(2))
        f = mj.jit(_fresh(lambda x: x * 3.0), backend="interpreter")
        f(np.ones(2)), f(np.ones(3))
        assert len(f.cache_misses) == 2 and "now f64[3] and before f64[2]" in f.cache_misses[1]
        assert set(f.cache_entries()[0].timings) >= {"trace", "optimize", "compile"}


def test_threads_that_miss_at_once_trace_once_under_the_piece():
    piece = _solution_piece()
    f = mj.jit(_fresh(lambda x: x * 2.0), backend="interpreter")
    start = threading.Barrier(6)
    outs: list = []

    def worker():
        start.wait()
        outs.append(f(np.ones(4)))

    with build.use("jit_call", piece):
        threads = [threading.Thread(target=worker) for _ in range(6)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert f.trace_count == 1 and len(outs) == 6


# --------------------------------------------------------------------------- failures


def test_a_broken_piece_names_itself_and_reset_restores():
    def broken(f, args, kwargs):
        raise ZeroDivisionError("boom")

    f = mj.jit(_fresh(lambda x: x - 1.0), backend="interpreter")
    build.use("jit_call", broken, verify=False)
    with pytest.raises(build.PieceError, match=r"your jit_call .* raised ZeroDivisionError: "
                       r"boom[\s\S]*build\.reset\('jit_call'\)") as info:
        f(np.ones(2))
    assert info.value.piece == "jit_call" and isinstance(info.value.__cause__,
                                                          ZeroDivisionError)
    build.reset("jit_call")
    np.testing.assert_array_equal(f(np.ones(2)), [0.0, 0.0])


def test_flat_outputs_are_refused_with_the_fix():
    def flat(f, args, kwargs):
        call = f.split(args, kwargs)
        key = f.key(call)
        entry = f.lookup(key) or f.store(key, f.trace_call(call).lower().compile())
        return f.execute(entry, call)

    f = mj.jit(_fresh(lambda x: {"y": x * 2.0}), backend="interpreter")
    with build.use("jit_call", flat, verify=False):
        with pytest.raises(build.PieceError, match=r"entry\.wrap_outputs\(outs\)"):
            f(np.ones(2))


def test_an_entry_traced_for_other_arguments_never_runs():
    ran = []

    def one_key(f, args, kwargs):  # every call stored under, and looked up by, one key
        call = f.split(args, kwargs)
        entry = f.lookup("k") or f.store("k", f.trace_call(call).lower().compile())
        return entry.wrap_outputs(f.execute(entry, call))

    def double(x):
        ran.append(x.shape)
        return x * 2.0

    f = mj.jit(double, backend="interpreter")
    with build.use("jit_call", one_key, verify=False):
        f(np.ones(2))
        with pytest.raises(build.PieceError, match="ran, for a call of `double`, a program "
                           r"traced for other arguments[\s\S]*f\.key\(call\)") as info:
            f(np.ones(3, np.float32))
    assert info.value.piece == "jit_call" and ran == [(2,)]  # refused before it ran


def test_a_piece_that_calls_the_jitted_function_hands_its_work_over():
    for handover in (lambda f, args, kwargs: f(*args, **kwargs),
                     lambda f, args, kwargs: f._call(args, kwargs)):
        f = mj.jit(_fresh(lambda x: x + 2.0), backend="interpreter")
        with build.use("jit_call", handover, verify=False):
            with pytest.raises(build.PieceError, match="calls minijit's own jit_call"):
                f(np.ones(2))


class Boom(Exception):
    pass


def test_the_programs_errors_stay_the_programs():
    def fails(x, fail):
        if fail:
            raise Boom("user error while tracing")
        return x + 1.0

    f = mj.jit(fails, static_argnums=1, backend="interpreter")
    with build.use("jit_call", _solution_piece()):
        with pytest.raises(Boom):
            f(np.ones(2), True)
        assert f._cache_size() == 0 and f.trace_count == 0  # a failed trace stores nothing
        with pytest.raises(TypeError, match="add"):
            mj.jit(lambda a, b: mj.lax.add(a, b), backend="interpreter")(np.ones(2),
                                                                        np.ones(3))
        np.testing.assert_array_equal(f(np.ones(2), False), [2.0, 2.0])


def test_use_verifies_the_piece(capsys):
    wrong = {
        "never stores": "        return compiled(*args, **kwargs)\n",
        "traces on every call": None,
    }
    source = ("def jit_call(f, args, kwargs):\n    call = f.split(args, kwargs)\n"
              "    key = f.key(call)\n    entry = f.lookup(key)\n    if entry is None:\n"
              "        compiled = f.trace_call(call).lower().compile()\n"
              "        entry = f.store(key, compiled)\n"
              "    return entry.wrap_outputs(f.execute(entry, call))\n")
    for what, line in wrong.items():
        text = (source.replace("        entry = f.store(key, compiled)\n", line) if line else
                source.replace("entry = f.lookup(key)", "entry = None"))
        ns: dict = {}
        exec(text, ns)
        build.use("jit_call", ns["jit_call"])
        assert build.using() == {}, what
        assert "minijit keeps its own jit_call" in capsys.readouterr().err
    build.use("jit_call", _solution_piece())
    assert list(build.using()) == ["jit_call"]
    out = mj.jit(_fresh(lambda x, n: (x * n, n)), static_argnums=1)(np.ones(2), 3)
    assert isinstance(out[0], Array) and out[1] == 3
