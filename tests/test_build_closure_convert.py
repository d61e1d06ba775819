"""The build track's chapter 05 piece, `closure_convert` (`minijit.lax.control_flow`).

- every staging site (`cond`, `switch`, `while_loop`, `fori_loop` with static and traced
  bounds, `scan`) calls the piece through `build.call`;
- the solution's piece of `solutions/05_control_flow.ipynb`, switched in, runs the whole
  catalogue (`tests/catalogue.py`) and the control-flow catalogue of
  `tests/test_control_flow.py` with no disagreement with minijit's own;
- a broken piece fails with a `PieceError` that names it, a wrong sub-jaxpr is refused where
  it is made (never run), and `build.reset` restores minijit's own.
"""

from __future__ import annotations

import numpy as np
import pytest
from catalogue import PROGRAMS
from solution_cells import solution_namespace
from stand_in import stand_in
from test_control_flow import PROGRAMS as CONTROL_FLOW_PROGRAMS

import minijit as mj
import minijit.numpy as mnp
from minijit import build, lax
from minijit.array import wrap
from minijit.core import get_aval
from minijit.grading import programs as graded
from minijit.interpret import reference_eval_jaxpr
from minijit.ir import Jaxpr, Var
from minijit.tree_util import tree_leaves, tree_map

pytestmark = pytest.mark.usefixtures("minijits_own_pieces")


def _solution_piece():
    """`closure_convert` as the solution notebook defines it."""
    return solution_namespace("05_control_flow.ipynb", "ex05_closure_convert")["closure_convert"]


def _counting(calls: list):
    def closure_convert(jaxpr, consts, all_consts):
        calls.append(len(all_consts))
        return stand_in("closure_convert")(jaxpr, consts, all_consts)
    return closure_convert


# --------------------------------------------------------------------------- call sites


def _fori_traced(x, n):
    return lax.fori_loop(0, n, lambda i, v: v * 2.0 + x, x)


SITES = {
    "cond": (lambda x: lax.cond(mnp.sum(x) > 0, lambda v: v * x, lambda v: -v, x), 2),
    "switch": (lambda x: lax.switch(1, [lambda v: v, lambda v: v + x, lambda v: -x], x), 3),
    "while_loop": (lambda x: lax.while_loop(lambda v: mnp.sum(v) < 10.0,
                                            lambda v: v + mnp.abs(x) + 1.0, x), 2),
    "fori_loop": (lambda x: lax.fori_loop(0, 3, lambda i, v: v * x, x), 1),
    "scan": (lambda x: lax.scan(lambda c, v: (c + v * x[0], c), 0.0, x), 1),
}


@pytest.mark.parametrize("name", sorted(SITES))
def test_every_staging_site_calls_the_piece(name):
    fn, bodies = SITES[name]
    x = np.array([0.5, 1.0, 2.0])
    calls: list = []
    with build.use("closure_convert", _counting(calls), verify=False):
        got = tree_leaves(mj.jit(fn, backend="interpreter")(x))
        assert len(calls) == bodies and any(calls)  # one call per traced body
        eager = tree_leaves(fn(wrap(x)))
        assert len(calls) == 2 * bodies
    want = tree_leaves(fn(wrap(x)))
    for g, e, w in zip(got, eager, want):
        np.testing.assert_array_equal(g, w)
        np.testing.assert_array_equal(e, w)


def test_fori_loop_with_a_traced_bound_calls_the_piece():
    calls: list = []
    with build.use("closure_convert", _counting(calls), verify=False):
        out = mj.jit(_fori_traced, backend="interpreter")(np.ones(2), 3)
    assert calls == [1]  # the body captures x
    np.testing.assert_array_equal(out, [15.0, 15.0])


def test_the_graded_control_flow_programs():
    """Each program of ex05_closure_convert stages control flow; those beyond PROGRAMS have a
    body that captures values (so the piece has work to do), and run on the reference."""
    for name, (fun, _) in graded.CONTROL_FLOW.items():
        args = graded.make_args(name, 0)
        closed = mj.make_jaxpr(fun)(*args)
        mj.typecheck_jaxpr(closed.jaxpr)
        assert reference_eval_jaxpr(closed.jaxpr, closed.consts, *args), name
        calls: list = []
        with build.use("closure_convert", _counting(calls), verify=False):
            mj.make_jaxpr(fun)(*args)
        assert calls, f"{name} stages no control flow"
        if name not in graded.PROGRAMS:
            assert any(calls), f"{name}: no body captures anything"
    assert len(graded.CONTROL_FLOW) == 15


# --------------------------------------------------------------------------- the solution


def _run_every_way(fn, static_argnums, args, backends=("interpreter",)) -> list[np.ndarray]:
    """`eval_jaxpr` of the traced program, `jit` on each backend, and eager evaluation."""
    closed = mj.make_jaxpr(fn, static_argnums=static_argnums)(*args)
    dynamic = tree_leaves(tuple(a for i, a in enumerate(args) if i not in static_argnums))
    with np.errstate(all="ignore"):
        outs = list(mj.eval_jaxpr(closed.jaxpr, closed.consts, *dynamic))
        for backend in backends:
            outs += tree_leaves(mj.jit(fn, static_argnums=static_argnums,
                                       backend=backend)(*args))
        outs += tree_leaves(fn(*tree_map(lambda a: wrap(a) if isinstance(a, np.ndarray)
                                         else a, args)))
    return [np.asarray(o) for o in outs]


def _same(got, want) -> bool:
    return len(got) == len(want) and all(
        g.dtype == w.dtype and g.shape == w.shape and np.array_equal(g, w, equal_nan=True)
        for g, w in zip(got, want))


def test_the_solution_runs_the_whole_catalogue():
    piece = _solution_piece()
    mismatches = []
    for prog in PROGRAMS:
        args = prog.make_args()
        fn = prog.minijit_fn()
        want = _run_every_way(fn, prog.static_argnums, args)
        with build.use("closure_convert", piece):
            assert build.using() == {"closure_convert": piece}
            got = _run_every_way(fn, prog.static_argnums, args)
        if not _same(got, want):
            mismatches.append(prog.name)
    assert not mismatches, (f"{len(PROGRAMS) - len(mismatches)}/{len(PROGRAMS)} programs "
                            f"agree; they differ on {mismatches}")


def test_the_solution_runs_the_control_flow_catalogue_on_every_backend():
    piece = _solution_piece()
    mismatches, calls = [], []

    def counted(jaxpr, consts, all_consts):
        calls.append(1)
        return piece(jaxpr, consts, all_consts)

    for prog in CONTROL_FLOW_PROGRAMS:
        args = prog.args(np.random.default_rng(0))
        want = _run_every_way(prog.fn, prog.static_argnums, args, ("interpreter", "numba"))
        before = len(calls)
        with build.use("closure_convert", counted, verify=False):
            got = _run_every_way(prog.fn, prog.static_argnums, args, ("interpreter", "numba"))
        if not _same(got, want) or len(calls) == before:
            mismatches.append(prog.name)
    n = len(CONTROL_FLOW_PROGRAMS)
    assert not mismatches, f"{n - len(mismatches)}/{n} programs agree; not {mismatches}"


# --------------------------------------------------------------------------- failures


def _broken(jaxpr, consts, all_consts):
    raise ZeroDivisionError("boom")


def _positional(jaxpr, consts, all_consts):
    """A classic wrong answer: the body's constvars first, whatever all_consts's order."""
    lead = [*jaxpr.constvars, *(Var(get_aval(c)) for c in all_consts[len(consts):])]
    return Jaxpr((), (*lead, *jaxpr.invars), jaxpr.eqns, jaxpr.outvars)


def _by_identity(jaxpr, consts, all_consts):
    """Another: matching captured values with `is`, which a nested branch defeats."""
    lead = []
    for c in all_consts:
        mine = [v for d, v in zip(consts, jaxpr.constvars) if d is c]
        lead.append(mine[0] if mine else Var(get_aval(c)))
    return Jaxpr((), (*lead, *jaxpr.invars), jaxpr.eqns, jaxpr.outvars)


def _shared(x, y, flag):
    return lax.cond(flag, lambda v: v * y, lambda v: v - x * y, x)


def _nested_shared(x, y):
    def body(i, v):
        return lax.cond(i % 2 == 0, lambda u: u + y, lambda u: u * y, v)
    return lax.fori_loop(0, 3, body, x)


def test_a_broken_piece_names_itself_and_reset_restores():
    x = np.arange(3.0)
    build.use("closure_convert", _broken, verify=False)
    assert build.using() == {"closure_convert": _broken}
    for fn, _ in SITES.values():
        for run in (lambda f=fn: mj.jit(f, backend="interpreter")(x), lambda f=fn: f(wrap(x))):
            with pytest.raises(build.PieceError, match=r"your closure_convert .* raised "
                               r"ZeroDivisionError: boom[\s\S]*build\.reset\('closure_convert'\)"
                               ) as e:
                run()
            assert isinstance(e.value.__cause__, ZeroDivisionError)
            assert e.value.piece == "closure_convert"
    build.reset("closure_convert")
    assert build.using() == {}
    np.testing.assert_array_equal(mj.jit(SITES["cond"][0], backend="interpreter")(x), x * x)


@pytest.mark.parametrize("wrong, program, args, message", [
    (_positional, _shared, (np.ones(3), np.full(3, 2.0), True),
     r"made equation 0 \(mul\) read invar 0 \(all_consts\[0\]\), where the traced body reads "
     r"invar 1 \(all_consts\[1\]\)"),
    (_by_identity, _nested_shared, (np.ones(3), np.full(3, 2.0)),
     r"a Var that it does not bind \(a constvar left in place\?\)"),
    (lambda j, c, a: j, _shared, (np.ones(3), np.full(3, 2.0), True),
     r"returned a jaxpr with 2 constvars; a closed sub-jaxpr has none"),
    (lambda j, c, a: Jaxpr((), j.invars, j.eqns, j.outvars), _shared,
     (np.ones(3), np.full(3, 2.0), True),
     r"returned a jaxpr with 1 invars; it needs 3: one per entry of all_consts \(2\)"),
    (lambda j, c, a: None, _shared, (np.ones(3), np.full(3, 2.0), True),
     r"returned a NoneType; it must return a Jaxpr"),
])
def test_a_wrong_sub_jaxpr_is_refused_where_it_is_made(wrong, program, args, message):
    """Never a wrong number: the check compares with minijit's own conversion, up to names."""
    with build.use("closure_convert", wrong, verify=False):
        for run in (lambda: mj.jit(program, backend="interpreter")(*args),
                    lambda: mj.jit(program, backend="numba")(*args),
                    lambda: mj.make_jaxpr(program)(*args)):
            with pytest.raises(build.PieceError, match=message):
                run()
    np.testing.assert_array_equal(mj.jit(_shared)(np.ones(3), np.full(3, 2.0), False),
                                  [-1.0, -1.0, -1.0])


def test_verify_keeps_minijits_own_piece(capsys):
    for wrong in (_broken, _positional, _by_identity):
        switch = build.use("closure_convert", wrong)
        assert build.using() == {}
        assert "minijit keeps its own closure_convert" in capsys.readouterr().err
        assert repr(switch) == "<minijit runs its own closure_convert>"
    build.use("closure_convert", _solution_piece())
    assert list(build.using()) == ["closure_convert"]
