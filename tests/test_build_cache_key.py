"""The build track's chapter 04 piece, `cache_key` (`minijit.arguments`).

- `jit`'s slow path asks the piece for every call's key (`build.call`), and under a
  learner's piece it skips the fast path, so the learner's key decides every call;
- the solution's piece of `solutions/04_jit_and_the_cache.ipynb`, switched in, runs the
  whole catalogue (`tests/catalogue.py`) with the same values, dtypes and trace counts as
  minijit's own, and every graded call sequence of `minijit.grading.cache_probes`;
- a broken piece fails with a `PieceError` that names it: an unhashable key where it is
  made, a key that leaves something out on the hit that would have run a program traced for
  other arguments (never running it), a raising piece at once; `build.reset` restores
  minijit's own.
"""

from __future__ import annotations

import numpy as np
import pytest
from catalogue import PROGRAMS
from solution_cells import solution_namespace
from stand_in import stand_in

import minijit as mj
from minijit import arguments, build
from minijit.grading import cache_probes
from minijit.grading import programs as graded
from minijit.tree_util import tree_leaves

pytestmark = pytest.mark.usefixtures("minijits_own_pieces")


def _solution_piece():
    """`cache_key` as the solution notebook defines it."""
    return solution_namespace("04_jit_and_the_cache.ipynb", "ex04_cache_key")["cache_key"]


def _fresh(fn):
    return cache_probes._fresh(fn) if hasattr(fn, "__code__") else fn


def _run(prog, args):
    """The program jitted afresh, called on `args`, on them again, and on them in float32:
    each call's outputs and the trace count."""
    import functools

    fn = functools.partial(_fresh(prog.fn), mj.numpy)
    jitted = mj.jit(fn, static_argnums=prog.static_argnums, backend="interpreter")
    outs = []
    with np.errstate(all="ignore"):
        variants = [args, args, tuple(cache_probes._as_float32(a) for a in args)]
        for a in variants:
            try:
                outs.append([np.asarray(v) for v in tree_leaves(jitted(*a))])
            except build.PieceError:
                raise
            except Exception as e:  # noqa: BLE001 - a program that refuses float32 is data
                outs.append(type(e).__name__)
    return outs, jitted.trace_count


def _same(got, want) -> bool:
    if got[1] != want[1] or len(got[0]) != len(want[0]):
        return False
    for g, w in zip(got[0], want[0]):
        if isinstance(g, str) or isinstance(w, str):
            if g != w:
                return False
        elif len(g) != len(w) or not all(
                a.dtype == b.dtype and np.array_equal(a, b, equal_nan=True)
                for a, b in zip(g, w)):
            return False
    return True


def test_the_solution_runs_the_whole_catalogue():
    piece = _solution_piece()
    mismatches = []
    for prog in PROGRAMS:
        args = prog.make_args()
        want = _run(prog, args)
        with build.use("cache_key", piece):
            assert build.using() == {"cache_key": piece}
            got = _run(prog, args)
        if not _same(got, want):
            mismatches.append(prog.name)
    assert not mismatches, (f"{len(PROGRAMS) - len(mismatches)}/{len(PROGRAMS)} programs "
                            f"agree; they differ on {mismatches}")


@pytest.mark.parametrize("scenario", list(cache_probes.SCENARIOS) + list(graded.PROGRAMS))
def test_the_solution_agrees_on_every_graded_sequence(scenario):
    piece = _solution_piece()
    want = cache_probes.run_with_key(arguments.cache_key, scenario)
    got = cache_probes.run_with_key(piece, scenario)
    assert got["traces"] == want["traces"] and got["dtypes"] == want["dtypes"]
    for g, w in zip(got["values"], want["values"]):
        for a, b in zip(g, w):
            np.testing.assert_array_equal(a, b)


def test_every_slow_call_asks_the_piece_and_the_fast_path_waits():
    calls = []

    def counting(static_values, leaf_avals, treedef):
        calls.append((static_values, tuple(leaf_avals)))
        return stand_in("cache_key")(static_values, leaf_avals, treedef)

    f = mj.jit(_fresh(lambda x, n: x * n), static_argnums=1, backend="interpreter")
    g = mj.jit(_fresh(lambda x: x + 1.0), backend="interpreter")
    x = np.ones(3)
    with build.use("cache_key", counting, verify=False):
        f(x, 2), f(x, 2)
        g(x), g(x), g(x)  # g is fast-path eligible: under a learner's key it is not used
    assert calls[0] == (((1, 2),), (((3,), np.dtype("float64"), False),))
    assert len(calls) == 5 and f.trace_count == 1 and g.trace_count == 1
    g(x), g(x)  # minijit's own again: the fast path serves the second call
    assert len(calls) == 5


def test_minijits_own_key_is_the_reference_piece():
    """`jit` keys a call by `SplitArgs.key` while minijit's own piece is in place, without
    calling the piece: that key must be what the reference `cache_key` returns."""
    spec = arguments.ArgSpec.make(lambda x, n, *, mode: x, (1,), ("mode",), None)
    for args, kwargs in [((np.ones(3), 2), {"mode": "a"}), ((1.0, True), {"mode": 0}),
                         (({"b": np.ones(2), "a": 2}, 1.5), {"mode": None})]:
        split = arguments.split_args(spec, args, kwargs)
        assert split.key == arguments.cache_key(split.static_values, split.leaf_avals,
                                                split.in_tree)
        assert split.static_values == ((1, args[1]), ("mode", kwargs["mode"]))


@pytest.mark.parametrize("wrong, call, says", [
    # no dtype: a float32 call finds the float64 program
    (lambda s, a, t: (t, tuple(x[:1] for x in a), tuple(s)), (np.ones(3, np.float32), 1),
     "now f32[3] and before f64[3]"),
    # no weak type: a strong np.float64 finds the program traced for a Python float
    (lambda s, a, t: (t, tuple(x[:2] for x in a), tuple(s)), (np.float64(1.0), 1),
     "(a Python scalar is weakly typed; an array is not)"),
    # static values without their types: True finds the program traced for 1
    (lambda s, a, t: (t, tuple(a), tuple(s)), (1.0, True), "of type bool"),
    # no static values at all
    (lambda s, a, t: (t, tuple(a)), (1.0, 3), "now 3 and before 1"),
])
def test_a_key_that_leaves_something_out_never_runs_the_wrong_program(wrong, call, says):
    ran = []

    def power(x, n):
        ran.append(n)
        return x * n

    f = mj.jit(power, static_argnums=1, backend="interpreter")
    first = (np.ones(3), 1) if isinstance(call[0], np.ndarray) else (1.0, 1)
    with build.use("cache_key", wrong, verify=False):
        f(*first)
        with pytest.raises(build.PieceError) as info:
            f(*call)
    assert info.value.piece == "cache_key" and says in str(info.value)
    assert "build.reset('cache_key')" in str(info.value)
    np.testing.assert_array_equal(f(*call), mj.jit(power, static_argnums=1)(*call))


def test_an_unhashable_key_or_a_raising_piece_is_named():
    f = mj.jit(_fresh(lambda x: x * 2.0), backend="interpreter")
    with build.use("cache_key", lambda s, a, t: (t, a, s), verify=False):
        with pytest.raises(build.PieceError, match="not hashable") as info:
            f(np.ones(2))
    assert info.value.piece == "cache_key"

    def broken(static_values, leaf_avals, treedef):
        raise ZeroDivisionError("oops")

    with build.use("cache_key", broken, verify=False):
        with pytest.raises(build.PieceError, match="raised ZeroDivisionError") as info:
            f(np.ones(2))
    assert isinstance(info.value.__cause__, ZeroDivisionError)
    np.testing.assert_array_equal(f(np.ones(2)), [2.0, 2.0])  # the block ended: minijit's own


def test_use_verifies_and_reset_restores_minijits_own(capsys):
    f = mj.jit(_fresh(lambda x: x - 1.0), backend="interpreter")
    build.use("cache_key", lambda s, a, t: (t, tuple(a)))  # ignores static values
    assert "minijit keeps its own cache_key" in capsys.readouterr().err
    assert build.is_reference("cache_key")
    piece = _solution_piece()
    build.use("cache_key", piece)
    assert build.using() == {"cache_key": piece}
    f(np.ones(2)), f(np.ones(2, np.float32))
    assert f.trace_count == 2
    build.reset("cache_key")
    assert build.is_reference("cache_key") and build.using() == {}
    np.testing.assert_array_equal(f(np.ones(2)), [0.0, 0.0])
    assert f.trace_count == 3  # the switch dropped the entries made under the piece
