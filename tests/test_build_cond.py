"""The build track's chapter 05 pieces `stage_cond` and `while_impl`
(`minijit.lax.control_flow`).

- every `lax.cond` and `lax.switch`, eager or traced, nested in loops or not, is staged by
  `stage_cond` (`build.call`); every eager `while_loop` and every `while` equation that
  `eval_jaxpr` runs goes through `while_impl`;
- the solution's pieces of `solutions/05_control_flow.ipynb`, switched in, run the catalogue
  (`tests/catalogue.py`) and the control-flow catalogue of `tests/test_control_flow.py` with
  no disagreement with minijit's own, and trace `true_fun` first, as JAX does;
- a broken piece fails with a `PieceError` that names it; a program whose branches disagree
  raises JAX's error class, a `TypeError` (the program's error, not the piece's), whatever
  the piece raised; `build.reset` restores minijit's own.
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
from minijit.ir import subjaxprs
from minijit.lax.control_flow import cond_p, trace_branch, while_p
from minijit.tree_util import tree_leaves, tree_map

pytestmark = pytest.mark.usefixtures("minijits_own_pieces")


def _solution_pieces() -> dict:
    ns = solution_namespace("05_control_flow.ipynb", "ex05_while_impl", "ex05_stage_cond")
    return {"stage_cond": ns["stage_cond"], "while_impl": ns["my_while_impl"]}


def _counting(name: str, calls: list):
    def piece(*args, **kwargs):
        calls.append(name)
        return stand_in(name)(*args, **kwargs)
    return piece


def _run_every_way(fn, static_argnums, args) -> list[np.ndarray]:
    """`eval_jaxpr` of the traced program, `jit` on the interpreter, and eager evaluation."""
    closed = mj.make_jaxpr(fn, static_argnums=static_argnums)(*args)
    dynamic = tree_leaves(tuple(a for i, a in enumerate(args) if i not in static_argnums))
    with np.errstate(all="ignore"):
        outs = list(mj.eval_jaxpr(closed.jaxpr, closed.consts, *dynamic))
        outs += tree_leaves(mj.jit(fn, static_argnums=static_argnums,
                                   backend="interpreter")(*args))
        outs += tree_leaves(fn(*tree_map(lambda a: wrap(a) if isinstance(a, np.ndarray)
                                         else a, args)))
    return [np.asarray(o) for o in outs]


def _same(got, want) -> bool:
    return len(got) == len(want) and all(
        g.dtype == w.dtype and g.shape == w.shape and np.array_equal(g, w, equal_nan=True)
        for g, w in zip(got, want))


def _shifted(x, y, flag):
    return lax.cond(flag, lambda v: v * x, lambda v: v - y * x, x + 1.0)


# --------------------------------------------------------------------------- call sites


def test_every_cond_and_switch_is_staged_by_the_piece():
    calls: list = []
    x = np.array([0.5, -1.0, 2.0])
    sites = [lambda v: lax.cond(mnp.sum(v) > 0, lambda u: u * v, lambda u: -u, v),
             lambda v: lax.switch(2, [lambda u: u, lambda u: u + v, lambda u: -v], v),
             lambda v: lax.fori_loop(0, 3, lambda i, u: lax.cond(i % 2 == 0, lambda w: w * 2.0,
                                                                  lambda w: w - v, u), v)]
    with build.use("stage_cond", _counting("stage_cond", calls), verify=False):
        for fn in sites:
            before = len(calls)
            got = mj.jit(fn, backend="interpreter")(x)
            eager = fn(wrap(x))
            assert len(calls) == before + 2  # traced once under jit, once eagerly
            with build.use("stage_cond", build.PIECES["stage_cond"].reference,
                           verify=False):
                want = fn(wrap(x))
            np.testing.assert_array_equal(got, want)
            np.testing.assert_array_equal(eager, want)


def test_every_eager_while_loop_and_interpreted_while_runs_the_piece():
    calls: list = []

    def count_up(x, limit, step):
        return lax.while_loop(lambda v: v < limit, lambda v: v + step, x)

    closed = mj.make_jaxpr(count_up)(1.0, 10.0, 0.75)
    with build.use("while_impl", _counting("while_impl", calls), verify=False):
        eager = count_up(wrap(np.float64(1.0)), 10.0, 0.75)
        interpreted = mj.eval_jaxpr(closed.jaxpr, closed.consts, 1.0, 10.0, 0.75)[0]
        jitted = mj.jit(count_up, backend="interpreter")(1.0, 10.0, 0.75)
    assert calls == ["while_impl"] * 3
    for out in (eager, interpreted, jitted):
        assert float(out) == 10.0


# --------------------------------------------------------------------------- the solution


def _stages_cond_or_while(fn, static_argnums, args) -> bool:
    todo, seen = [mj.make_jaxpr(fn, static_argnums=static_argnums)(*args).jaxpr], set()
    while todo:
        for eqn in todo.pop().eqns:
            seen.add(eqn.primitive)
            todo.extend(subjaxprs(eqn))
    return bool(seen & {cond_p, while_p})


def test_the_solutions_run_the_catalogues():
    """Every program of both catalogues that stages a cond or a while (the others never
    reach the pieces)."""
    pieces = _solution_pieces()
    mismatches = []
    programs = [(p.name, p.minijit_fn(), p.static_argnums, p.make_args()) for p in PROGRAMS]
    programs += [(p.name, p.fn, p.static_argnums, p.args(np.random.default_rng(0)))
                 for p in CONTROL_FLOW_PROGRAMS]
    with np.errstate(all="ignore"):
        programs = [p for p in programs if _stages_cond_or_while(*p[1:])]
    assert len(programs) >= 10
    for name, fn, static_argnums, args in programs:
        want = _run_every_way(fn, static_argnums, args)
        with build.use("stage_cond", pieces["stage_cond"]), \
                build.use("while_impl", pieces["while_impl"]):
            assert set(build.using()) == {"stage_cond", "while_impl"}
            got = _run_every_way(fn, static_argnums, args)
        if not _same(got, want):
            mismatches.append(name)
    assert not mismatches, f"{len(programs) - len(mismatches)}/{len(programs)} agree; " \
                           f"not {mismatches}"


def test_the_solution_traces_true_fun_first_and_stages_what_minijit_stages():
    log: list = []

    def loud(name, fn):
        def branch(v):
            log.append(name)
            return fn(v)
        return branch

    def shifted(x, y, flag):
        return lax.cond(flag, loud("true_fun", lambda v: v * x),
                        loud("false_fun", lambda v: v - y * x), x + 1.0)

    args = (np.ones(3), np.full(3, 2.0), True)
    want = str(mj.make_jaxpr(shifted)(*args))
    with build.use("stage_cond", _solution_pieces()["stage_cond"]):
        got = str(mj.make_jaxpr(shifted)(*args))
    assert got == want and log == ["true_fun", "false_fun"] * 2
    jaxpr, consts, out_tree = trace_branch(lambda v, w: {"s": v + w}, (np.ones(2), 1.0))
    assert consts == [] and str(out_tree) == "PyTreeDef({'s': *})"
    assert [a.str_short() for a in jaxpr.in_avals] == ["f64[2]", "f64[]"]


# --------------------------------------------------------------------------- failures


def test_a_broken_piece_names_itself_and_reset_restores():
    def broken(*args, **kwargs):
        raise ZeroDivisionError("boom")

    x = np.arange(3.0)
    for name, run in [("stage_cond", lambda: mj.jit(lambda v: lax.cond(True, lambda u: u,
                                                                      lambda u: -u, v))(x)),
                      ("while_impl", lambda: lax.while_loop(lambda v: v < 3.0,
                                                            lambda v: v + 1.0, 0.0))]:
        build.use(name, broken, verify=False)
        with pytest.raises(build.PieceError, match=rf"your {name} .* raised ZeroDivisionError"
                           rf"[\s\S]*build\.reset\('{name}'\)") as info:
            run()
        assert info.value.piece == name
        build.reset(name)
        run()


def test_branches_that_disagree_raise_the_programs_type_error():
    def mismatched(flag, v):
        return lax.cond(flag, lambda u: (u, u), lambda u: [u, u], v)

    with pytest.raises(TypeError) as own:
        mj.jit(mismatched)(True, np.ones(2))

    def raises_its_own(index, branches, operands, order):
        raise ValueError("my check: the branches differ")

    for piece in (_solution_pieces()["stage_cond"], raises_its_own):
        with build.use("stage_cond", piece, verify=False):
            with pytest.raises(TypeError) as info:
                mj.jit(mismatched)(True, np.ones(2))
        assert type(info.value) is TypeError and str(info.value) == str(own.value)
        assert "same structure" in str(info.value)


def test_a_join_by_identity_is_refused_where_it_is_handed_over():
    def by_identity(index, branches, operands, order):
        traced = {k: trace_branch(branches[k], operands) for k in order}
        all_consts = []
        for k in order:
            all_consts += [c for c in traced[k][1] if not any(c is d for d in all_consts)]
        closed = tuple(lax.control_flow.closure_convert(traced[k][0], traced[k][1],
                                                        all_consts)
                       for k in range(len(branches)))
        return mj.core.bind(cond_p, index, *all_consts, *tree_leaves(operands),
                            branches=closed)[0]

    def nested(x, y):  # both branches capture y, from two traces out: two tracers for it
        def body(i, v):
            return lax.cond(i % 2 == 0, lambda u: u + y, lambda u: u * y, v)
        return lax.fori_loop(0, 3, body, x)

    with build.use("stage_cond", by_identity, verify=False):
        with pytest.raises(build.PieceError, match="all_consts holds one outer value twice"):
            mj.jit(nested, backend="interpreter")(np.ones(2), np.full(2, 2.0))


def test_a_while_rule_that_returns_no_list_is_refused():
    def one_value(*args, cond_jaxpr, body_jaxpr, cond_nconsts, body_nconsts):
        carry = list(args[cond_nconsts + body_nconsts:])
        while mj.eval_jaxpr(cond_jaxpr, (), *args[:cond_nconsts], *carry)[0]:
            carry = mj.eval_jaxpr(body_jaxpr, (), *args[cond_nconsts:cond_nconsts +
                                                        body_nconsts], *carry)
        return carry[0]

    with build.use("while_impl", one_value, verify=False):
        with pytest.raises(build.PieceError, match="must return the final carry as a list"):
            lax.while_loop(lambda c: c[0] < 3.0, lambda c: (c[0] + 1.0, c[1]),
                           (wrap(np.float64(0.0)), wrap(np.float64(2.0))))
    assert while_p in mj.core.impl_rules


def test_use_verifies_the_pieces(capsys):
    def index_order(index, branches, operands, order):  # true_fun traced second
        return stand_in("stage_cond")(index, branches, operands, tuple(range(len(branches))))

    def stops_early(*args, cond_jaxpr, body_jaxpr, cond_nconsts, body_nconsts):
        return list(args[cond_nconsts + body_nconsts:])

    for name, wrong in [("stage_cond", index_order), ("while_impl", stops_early)]:
        build.use(name, wrong)
        assert build.using() == {}
        assert f"minijit keeps its own {name}" in capsys.readouterr().err
    pieces = _solution_pieces()
    for name, piece in pieces.items():
        build.use(name, piece)
    assert set(build.using()) == set(pieces)
