"""The build track's chapter 07 and 08 pieces (`minijit.build`): `dce` and `fusion_groups`
here; `fold`, `sub_self`, `cse` and `may_fuse` also in tests/test_build_rules.py.

- the solution's six pieces of `solutions/07_cleanup_passes.ipynb` and
  `solutions/08_fusion_and_buffers.ipynb`, switched in, optimize the
  whole catalogue (`tests/catalogue.py`) to programs that compute what minijit's own pipeline
  computes, with no dead equation left and exactly minijit's kernels;
- a piece that returns a wrong program (or wrong groups) is stopped with a `PieceError` that
  names it, in `run_passes` and in `mj.jit`, never with a wrong result; reset restores;
- the graded exercises' cases all run on the reference, and `FUSING` lists the catalogue
  programs that minijit fuses.
"""

from __future__ import annotations

import contextlib
from dataclasses import replace

import numpy as np
import pytest
from catalogue import PROGRAMS
from solution_cells import solution_namespace
from stand_in import stand_in

import minijit as mj
import minijit.numpy as mnp
from minijit import build, lax
from minijit.grading import optimizer_probes
from minijit.grading import programs as graded
from minijit.grading.cases import error_of
from minijit.grading.checking import expected_value
from minijit.grading.exercises import ch08_fusion_and_buffers as ch08
from minijit.grading.registry import default_exercises
from minijit.ir import Jaxpr
from minijit.passes import PassError, dce, fuse_elementwise, run_passes
from minijit.passes.dce import dce_jaxpr
from minijit.tree_util import tree_leaves

pytestmark = pytest.mark.usefixtures("minijits_own_pieces")


def _solution_pieces() -> dict:
    """The optimizer's pieces as the solution notebooks define them: piece -> function."""
    ch07 = solution_namespace("07_cleanup_passes.ipynb", "ex07_fold", "ex07_rule", "ex07_cse",
                              "ex07_dce")
    ch08 = solution_namespace("08_fusion_and_buffers.ipynb", "ex08_may_fuse",
                              "ex08_fusion_groups")
    return {"fold": ch07["my_fold"], "sub_self": ch07["sub_self"], "cse": ch07["my_cse"],
            "dce": ch07["dce_jaxpr"], "may_fuse": ch08["may_fuse"],
            "fusion_groups": ch08["fusion_groups"]}


def _optimized_and_run(prog, args):
    """The program after minijit's pipeline, what it computes, and what `jit` computes."""
    fn = prog.minijit_fn()
    closed = mj.make_jaxpr(fn, static_argnums=prog.static_argnums)(*args)
    leaves = tree_leaves(tuple(a for i, a in enumerate(args) if i not in prog.static_argnums))
    with np.errstate(all="ignore"):
        out = run_passes(closed)
        values = list(mj.eval_jaxpr(out.jaxpr, out.consts, *leaves))
        values += tree_leaves(mj.jit(fn, static_argnums=prog.static_argnums,
                                     backend="interpreter")(*args))
    return out, [np.asarray(v) for v in values]


def test_the_solution_optimizes_the_whole_catalogue():
    pieces = _solution_pieces()
    mismatches, dead, other_kernels = [], [], []
    for prog in PROGRAMS:
        args = prog.make_args()
        want_program, want = _optimized_and_run(prog, args)
        with contextlib.ExitStack() as switched:
            for name, fn in pieces.items():
                switched.enter_context(build.use(name, fn))
            assert build.using() == pieces
            got_program, got = _optimized_and_run(prog, args)
        if not (len(got) == len(want) and all(
                g.dtype == w.dtype and g.shape == w.shape and np.array_equal(g, w, equal_nan=True)
                for g, w in zip(got, want))):
            mismatches.append(prog.name)
        if optimizer_probes.dead_equations(got_program.jaxpr):
            dead.append(prog.name)
        kernels = optimizer_probes.kernels
        if kernels(got_program.jaxpr) != kernels(want_program.jaxpr):
            other_kernels.append(prog.name)
    agree = len(PROGRAMS) - len(mismatches)
    assert not mismatches, f"{agree}/{len(PROGRAMS)} programs agree; they differ on {mismatches}"
    assert not dead, f"dead code left in {dead}"
    assert not other_kernels, f"other kernels than minijit's in {other_kernels}"
    assert build.using() == {}


def test_minijits_own_dce_passes_the_check_of_a_learners():
    """A learner's dce may drop unused outputs of cond and scan, as minijit's own does: the
    check lets that through (minijit's dce, wrapped so that it counts as a learner's)."""
    build.use("dce", lambda jaxpr: stand_in("dce")(jaxpr))
    assert "dce" in build.using()
    for prog in PROGRAMS:
        _optimized_and_run(prog, prog.make_args())


def test_a_dce_that_swaps_outputs_is_caught():
    closed = mj.make_jaxpr(lambda p, x: lax.cond(p, lambda v: (v * 2.0, v + 1.0),
                                                 lambda v: (v, -v), x))(True, np.ones(2))

    def swapped(jaxpr):  # the branches' outputs swapped, the same types: it would typecheck
        *before, e = jaxpr.eqns
        branches = tuple(Jaxpr(b.constvars, b.invars, b.eqns, b.outvars[::-1])
                         for b in e.params["branches"])
        return Jaxpr(jaxpr.constvars, jaxpr.invars,
                     (*before, replace(e, params={**e.params, "branches": branches})),
                     jaxpr.outvars)

    build.use("dce", swapped, verify=False)
    _fails_naming("dce", "changed the outputs of a sub-jaxpr of cond",
                  lambda: run_passes(closed, [dce]))


def test_the_pieces_are_reached_from_run_passes_and_jit():
    calls = []

    def counting_dce(jaxpr):
        calls.append("dce")
        return stand_in("dce")(jaxpr)

    def counting_groups(jaxpr):
        calls.append("fusion_groups")
        return stand_in("fusion_groups")(jaxpr)

    x = np.arange(3.0)
    build.use("dce", counting_dce)
    build.use("fusion_groups", counting_groups)
    calls.clear()  # the selftests called them once each
    np.testing.assert_allclose(mj.jit(lambda v: mnp.sin(v) * 2.0 + 1.0)(x),
                               np.sin(x) * 2.0 + 1.0)
    assert "dce" in calls and "fusion_groups" in calls


# --------------------------------------------------------------------------- failures


def _printing(x):
    mj.debug.print("x = {}", x)
    y = mnp.sin(x) * 2.0
    return lax.cond(mnp.sum(y) > 0, lambda v: v + 1.0, lambda v: -v, y)


def _fails_naming(piece: str, match: str, run) -> None:
    with pytest.raises(build.PieceError, match=match) as e:
        run()
    assert e.value.piece == piece
    assert f"build.reset('{piece}')" in str(e.value)


def _keep(jaxpr, keep) -> Jaxpr:
    return Jaxpr(jaxpr.constvars, jaxpr.invars, tuple(e for e in jaxpr.eqns if keep(e)),
                 jaxpr.outvars)


@pytest.mark.parametrize("broken, match", [
    (lambda j: _keep(j, lambda e: e.primitive.effectful), "does not typecheck"),
    (lambda j: _keep(j, lambda e: not e.primitive.effectful),
     "kept 0 of the 1 equations with effects"),
    (lambda j: Jaxpr(j.constvars, j.invars, j.eqns, j.outvars[:0]), "returned a jaxpr with "
     "outputs"),
    (lambda j: Jaxpr(j.constvars, tuple(mj.Var(v.aval) for v in j.invars), j.eqns, j.outvars),
     "changed the invars of the jaxpr"),
    (lambda j: Jaxpr(j.constvars, j.invars, j.eqns[::-1], j.outvars), "not in its order"),
    (lambda j: None, "returned a NoneType"),
    (lambda j: 1 / 0, "raised ZeroDivisionError"),
])
def test_a_broken_dce_names_itself_and_reset_restores(broken, match):
    x = np.array([0.5, -1.0, 2.0])
    closed = mj.make_jaxpr(_printing)(x)
    build.use("dce", broken, verify=False)
    _fails_naming("dce", match, lambda: run_passes(closed, [dce]))
    _fails_naming("dce", match, lambda: mj.jit(_printing, backend="interpreter")(x))
    build.reset("dce")
    assert build.using() == {}
    assert str(run_passes(closed, [dce]).jaxpr) == str(dce_jaxpr(closed.jaxpr))
    np.testing.assert_allclose(mj.jit(_printing, backend="interpreter")(x),
                               np.sin(x) * 2.0 + 1.0)


def _reversed_pair(x):
    y = mnp.sin(x)
    return y * y[::-1] + mnp.dot(x, x)


@pytest.mark.parametrize("broken, match", [
    (lambda j: [list(range(len(j.eqns)))], r"may not fuse \(may_fuse is False\)"),
    (lambda j: [[0, 2]] if len(j.eqns) == 5 else [], "a cycle"),
    (lambda j: [[0, 0]] if j.eqns else [], "an equation in two groups"),
    (lambda j: [[0, len(j.eqns)]], r"indices must be ints in range"),
    (lambda j: {0: 1}, "must return a list of lists"),
    (lambda j: None, "returned NoneType"),
])
def test_broken_fusion_groups_name_themselves_and_reset_restores(broken, match):
    x = np.array([0.5, -1.0, 2.0])
    closed = mj.make_jaxpr(_reversed_pair)(x)
    # sin, rev, mul, dot, add: sin with mul would read rev, which reads sin: a cycle
    assert [e.primitive.name for e in closed.eqns] == ["sin", "rev", "mul", "dot_general",
                                                       "add"]
    build.use("fusion_groups", broken, verify=False)
    _fails_naming("fusion_groups", match, lambda: run_passes(closed, [fuse_elementwise]))
    _fails_naming("fusion_groups", match,
                  lambda: mj.jit(_reversed_pair, backend="interpreter")(x))
    build.reset()
    want = np.sin(x) * np.sin(x)[::-1] + x @ x
    np.testing.assert_allclose(mj.jit(_reversed_pair, backend="interpreter")(x), want)


def test_other_shapes_in_one_group_are_refused():
    x = np.ones((2, 3))
    closed = mj.make_jaxpr(lambda v: (mnp.sin(v), mnp.cos(v[0])))(x)
    build.use("fusion_groups", lambda j: [[i for i, e in enumerate(j.eqns)
                                           if e.primitive.name in ("sin", "cos")]],
              verify=False)
    with pytest.raises(build.PieceError, match="different shapes"):
        run_passes(closed, [fuse_elementwise])


def test_verify_keeps_minijits_own_pieces(capsys):
    build.use("dce", lambda j: j)  # keeps the dead sin of the small example
    build.use("fusion_groups", lambda j: [])  # fuses nothing
    assert build.using() == {}
    err = capsys.readouterr().err
    assert "minijit keeps its own dce" in err and "minijit keeps its own fusion_groups" in err


def test_a_typecheck_failure_after_the_check_is_still_a_pass_error():
    """run_passes' own typecheck stays behind the pieces' checks (here: minijit's dce)."""
    closed = mj.make_jaxpr(lambda v: v * 2.0)(np.ones(2))
    with pytest.raises(PassError, match="pass `bad`"):
        def bad(c):
            return type(c)(_keep(c.jaxpr, lambda e: False), c.consts)

        run_passes(closed, [bad])


# --------------------------------------------------------------------------- the grader


def test_fusing_lists_the_programs_minijit_fuses():
    fusing = [name for name in graded.PROGRAMS if optimizer_probes.kernels(
        run_passes(mj.make_jaxpr(graded.PROGRAMS[name][0])(*graded.make_args(name, 0))).jaxpr)]
    assert tuple(fusing) == ch08.FUSING


def test_every_dce_case_has_dead_code_before_the_pass():
    """The catalogue cases trace a dead copy of the program: each has something to remove."""
    for name in graded.PROGRAMS:
        closed, _ = optimizer_probes.traced(name, 0, dead_copy=True)
        assert optimizer_probes.dead_equations(closed.jaxpr), name


@pytest.mark.parametrize("ex_id", ["ex07_dce", "ex08_fusion_groups"])
def test_every_case_runs_on_the_reference(ex_id):
    ex = default_exercises()[ex_id]
    for key, case, _ in ex.cases():
        assert error_of(expected_value(ex, key, case)) is None, case.name


def _one_forward_pass(jaxpr):
    """A legal but incomplete dce: drops only what nothing reads, in one forward pass, so
    the head of a dead chain stays."""
    from minijit.ir import Var

    read = {id(a) for e in jaxpr.eqns for a in e.invars if isinstance(a, Var)}
    read |= {id(v) for v in jaxpr.outvars if isinstance(v, Var)}
    eqns = tuple(e for e in jaxpr.eqns if any(id(v) in read for v in e.outvars))
    return Jaxpr(jaxpr.constvars, jaxpr.invars, eqns, jaxpr.outvars)


def _dead_chain(x):
    unused = (mnp.exp(x) * 2.0) + 1.0  # noqa: F841 - a dead chain of three equations
    s = mnp.sin(x)
    return s * 3.0, mnp.cos(x) + s


def test_a_dce_that_leaves_a_dead_chain_is_refused_where_it_hands_over():
    switch = build.use("dce", _one_forward_pass)  # verify: its small example has a chain
    assert not build.using()
    with build.use("dce", _one_forward_pass, verify=False):
        for backend in ("interpreter", "numba"):
            with pytest.raises(build.PieceError, match=r"your dce .* left dead code: equation "
                               r"\d of the jaxpr \((exp|mul)\) writes nothing that is read"):
                mj.jit(_dead_chain, backend=backend)(np.ones(3))
    assert repr(switch)
