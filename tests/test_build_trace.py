"""The build track's chapter 02 piece, `process_primitive` (`minijit.tracing`).

- the staging trace records every equation through `build.call("process_primitive", ...)`,
  sub-traces (`cond`, `while_loop`, `scan`, nested `jit`) included, and minijit's own piece
  is called directly;
- the solution's piece of `solutions/02_tracing.ipynb`, switched in, traces the whole
  catalogue (`tests/catalogue.py`) and the control-flow catalogue of
  `tests/test_control_flow.py` to the same jaxprs (text and source lines) as minijit's own,
  which compute the same values on the interpreter, eagerly, and (the control-flow
  catalogue) on Numba;
- a broken piece fails with a `PieceError` that names it, a wrong recording is refused where
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
from minijit import build, errors, lax, tracing
from minijit import primitives as P
from minijit.array import wrap
from minijit.core import checked_abstract_eval
from minijit.grading import programs as graded
from minijit.grading.cases import error_of
from minijit.grading.checking import expected_value
from minijit.grading.registry import default_exercises
from minijit.ir import Eqn, Var, reference_pp_jaxpr, subjaxprs
from minijit.tree_util import tree_leaves, tree_map

pytestmark = pytest.mark.usefixtures("minijits_own_pieces")


def _solution_piece():
    """`process_primitive` as the solution notebook defines it."""
    ns = solution_namespace("02_tracing.ipynb", "ex02_process_primitive")
    return ns["process_primitive"]


_MINIJITS = stand_in("process_primitive")


def _counting(calls: list, piece=_MINIJITS):
    def process_primitive(trace, prim, args, params):
        calls.append(prim.name)
        return piece(trace, prim, args, params)
    return process_primitive


def _sources(jaxpr) -> list:
    """The source of every equation, sub-jaxprs' included, in order."""
    return [s for e in jaxpr.eqns
            for s in [e.source, *(s for sub in subjaxprs(e) for s in _sources(sub))]]


# --------------------------------------------------------------------------- where it is called


def _program(x, n):
    def body(i, v):
        return lax.cond(mnp.sum(v) > 0, lambda u: u * 0.5, lambda u: u - x, v)

    y = lax.while_loop(lambda v: mnp.sum(v) < 10.0, lambda v: v + 1.0, x)
    ys = lax.scan(lambda c, v: (c + v, c * v), 0.0, y)[1]
    return lax.fori_loop(0, n, body, ys), _inner(y)


@mj.jit
def _inner(v):
    return mnp.exp(v) * 2.0


def _count_eqns(jaxpr) -> int:
    return sum(1 + sum(map(_count_eqns, subjaxprs(e))) for e in jaxpr.eqns)


def test_every_equation_is_recorded_through_the_piece():
    x = np.array([0.5, 1.0, 2.0])
    want = mj.make_jaxpr(_program)(x, 3)
    calls: list = []
    with build.use("process_primitive", _counting(calls), verify=False):
        got = mj.make_jaxpr(_program)(x, 3)
        assert len(calls) == _count_eqns(got.jaxpr)  # sub-traces too, nested jit's included
        assert {"cond", "while", "scan", "jit"} <= set(calls)
        calls.clear()
        np.testing.assert_array_equal(mj.jit(_program)(x, 3)[0], mj.eval_jaxpr(
            want.jaxpr, want.consts, x, 3)[0])
        assert calls, "jit traces through the piece"
        calls.clear()
        _program(wrap(x), 3)  # eagerly: only the bodies of control flow are traced
        assert calls and not {"while", "scan", "jit"} & set(calls)
    assert reference_pp_jaxpr(got.jaxpr) == reference_pp_jaxpr(want.jaxpr)
    assert _sources(got.jaxpr) == _sources(want.jaxpr)


def test_minijits_own_piece_is_called_directly():
    assert build.PIECES["process_primitive"].reference is tracing.process_primitive
    assert build.is_reference("process_primitive") and build.using() == {}
    assert build.PIECES["process_primitive"].chapter == "02_tracing"


def test_the_graded_programs():
    """ex02_process_primitive grades every program of PROGRAMS and CONTROL_FLOW, once each;
    none expects an error."""
    ex = default_exercises()["ex02_process_primitive"]
    names = [case.args[0] for _, case, _ in ex.cases() if case.probe is None]  # programs
    assert sorted(names) == sorted({**graded.PROGRAMS, **graded.CONTROL_FLOW})
    assert len(ex.public) == 7 and len(ex.hidden) == 35  # + switch-in; + properties
    for key, case, _ in ex.cases():
        assert error_of(expected_value(ex, key, case)) is None, case.name


def test_the_probe_refuses_minijits_own_piece():
    from minijit.grading.exercises.ch02_tracing import probe_staging_program

    with pytest.raises(TypeError, match="your own function"):
        probe_staging_program({"process_primitive": tracing.process_primitive}, "cond")


# --------------------------------------------------------------------------- the solution


def _trace_and_run(fn, static_argnums, args, backends) -> tuple[str, list, list]:
    """The jaxpr's text and sources, then the outputs of `jit` on each backend and eagerly."""
    closed = mj.make_jaxpr(fn, static_argnums=static_argnums)(*args)
    outs = []
    with np.errstate(all="ignore"):
        for backend in backends:
            # jit keeps one cache per function and options (as JAX does): jitting `fn` itself
            # would add to the trace counts that the catalogue's own tests check
            outs += tree_leaves(mj.jit(lambda *a: fn(*a), static_argnums=static_argnums,
                                       backend=backend)(*args))
        outs += tree_leaves(fn(*tree_map(lambda a: wrap(a) if isinstance(a, np.ndarray)
                                         else a, args)))
    return (reference_pp_jaxpr(closed.jaxpr), _sources(closed.jaxpr),
            [np.asarray(o) for o in outs])


def _same(got, want) -> bool:
    (text, sources, outs), (want_text, want_sources, want_outs) = got, want
    return text == want_text and sources == want_sources and len(outs) == len(want_outs) and all(
        g.dtype == w.dtype and g.shape == w.shape and np.array_equal(g, w, equal_nan=True)
        for g, w in zip(outs, want_outs))


def test_the_solution_traces_the_whole_catalogue():
    """The piece makes the jaxpr, which every backend then runs alike: the interpreter runs
    it here (a compiling backend adds a compile per program and nothing about tracing; the
    control-flow catalogue below runs on Numba too)."""
    piece = _solution_piece()
    mismatches = []
    for prog in PROGRAMS:
        args = prog.make_args()
        fn = prog.minijit_fn()
        want = _trace_and_run(fn, prog.static_argnums, args, ("interpreter",))
        with build.use("process_primitive", piece):
            assert build.using() == {"process_primitive": piece}
            got = _trace_and_run(fn, prog.static_argnums, args, ("interpreter",))
        if not _same(got, want):
            mismatches.append(prog.name)
    assert not mismatches, (f"{len(PROGRAMS) - len(mismatches)}/{len(PROGRAMS)} programs "
                            f"agree; they differ on {mismatches}")


def test_the_solution_traces_the_control_flow_catalogue_on_every_backend():
    piece = _solution_piece()
    mismatches, calls = [], []
    for prog in CONTROL_FLOW_PROGRAMS:
        args = prog.args(np.random.default_rng(0))
        want = _trace_and_run(prog.fn, prog.static_argnums, args, ("interpreter", "numba"))
        before = len(calls)
        with build.use("process_primitive", _counting(calls, piece), verify=False):
            got = _trace_and_run(prog.fn, prog.static_argnums, args, ("interpreter", "numba"))
        if not _same(got, want) or len(calls) == before:
            mismatches.append(prog.name)
    n = len(CONTROL_FLOW_PROGRAMS)
    assert not mismatches, f"{n - len(mismatches)}/{n} programs agree; not {mismatches}"


def test_a_wrapper_around_the_piece_keeps_the_traced_line():
    """errors.user_location() inside a piece (or a wrapper's callee) names the traced line."""
    x = np.ones(3)
    want = _sources(mj.make_jaxpr(_program)(x, 2).jaxpr)
    with build.use("process_primitive", _counting([], _solution_piece())):
        got = _sources(mj.make_jaxpr(_program)(x, 2).jaxpr)
    assert got == want  # (fori_loop's counter equations have the line of its call)
    assert sum(__file__.endswith(s.split(":")[0]) for s in got if s) == len(got)


def test_leaks_are_still_caught():
    leaked: list = []

    def leaky(x):
        y = x * 2.0
        leaked.append(y)
        return y

    with build.use("process_primitive", _solution_piece()):
        with pytest.raises(errors.UnexpectedTracerError, match=r"test_build_trace\.py:\d+ "
                                                               r"\(leaky\)"), \
                mj.checking_leaks():
            mj.jit(leaky)(np.ones(2))


# --------------------------------------------------------------------------- failures


def _broken(trace, prim, args, params):
    raise ZeroDivisionError("boom")


def _record(trace, prim, args, params, *, atoms=None, outvars=None, eqn_params=None,
            source=None, n_eqns=1):
    """Record as minijit does, with one thing given instead (a helper for wrong pieces)."""
    atoms = [trace.to_atom(a) for a in args] if atoms is None else atoms
    avals = checked_abstract_eval(prim, [a.aval for a in atoms], params)
    source = errors.user_location() if source is None else source
    outvars = [Var(aval) for aval in avals] if outvars is None else outvars
    eqn_params = dict(params) if eqn_params is None else eqn_params
    for _ in range(n_eqns):
        trace.eqns.append(Eqn(prim, tuple(atoms), tuple(outvars), eqn_params, source))
    return [trace.var_to_tracer(v, source) for v in outvars]


def _fresh_inputs(trace, prim, args, params):
    """A classic wrong answer: a new Var for every input, whatever it is."""
    return _record(trace, prim, args, params,
                   atoms=[Var(trace.to_atom(a).aval) for a in args])


def _one_var(trace, prim, args, params):
    """Another: one output Var, whatever the primitive's outputs."""
    out = [Var(checked_abstract_eval(prim, [trace.to_atom(a).aval for a in args],
                                     params)[0])]
    return _record(trace, prim, args, params, outvars=out)


def _unrecorded(trace, prim, args, params):
    """Tracers of Vars that no equation defines: one fresh Var per output, none recorded."""
    _record(trace, prim, args, params)
    avals = [v.aval for v in trace.eqns[-1].outvars]
    return [trace.var_to_tracer(Var(aval), trace.eqns[-1].source) for aval in avals]


def _nothing(trace, prim, args, params):
    avals = checked_abstract_eval(prim, [trace.to_atom(a).aval for a in args], params)
    return [trace.var_to_tracer(Var(aval), errors.user_location()) for aval in avals]


def _lists(trace, prim, args, params):
    """An Eqn of lists where it holds tuples."""
    atoms = [trace.to_atom(a) for a in args]
    outvars = [Var(aval) for aval in checked_abstract_eval(prim, [a.aval for a in atoms],
                                                           params)]
    source = errors.user_location()
    trace.eqns.append(Eqn(prim, atoms, outvars, dict(params), source))
    return [trace.var_to_tracer(v, source) for v in outvars]


def _cond_program(x):
    return lax.cond(mnp.sum(x) > 0, lambda v: v * 2.0, lambda v: -v, x)


def _while_program(x):
    return lax.while_loop(lambda c: c[1] < 3, lambda c: (c[0] * 2.0, c[1] + 1), (x, 0))[0]


def test_a_broken_piece_names_itself_and_reset_restores():
    x = np.arange(3.0)
    build.use("process_primitive", _broken, verify=False)
    assert build.using() == {"process_primitive": _broken}
    for run in (lambda: mj.make_jaxpr(_cond_program)(x),
                lambda: mj.jit(_cond_program)(x),
                lambda: _cond_program(wrap(x))):  # eagerly: cond traces its branches
        with pytest.raises(build.PieceError, match=r"your process_primitive .* raised "
                           r"ZeroDivisionError: boom[\s\S]*build\.reset\('process_primitive'\)"
                           ) as e:
            run()
        assert isinstance(e.value.__cause__, ZeroDivisionError)
        assert e.value.piece == "process_primitive"
    build.reset("process_primitive")
    assert build.using() == {}
    np.testing.assert_array_equal(mj.jit(_cond_program)(x), 2 * x)


@pytest.mark.parametrize("wrong, program, message", [
    (lambda t, p, a, k: _record(t, p, a, k)[:-1] or None, _cond_program,
     r"returned a NoneType; it must return a list of tracers of the trace"),
    (lambda t, p, a, k: [np.ones(3)], _cond_program,
     r"returned array\(\[1\., 1\., 1\.\]\) among its results; it must return tracers"),
    (_lists, _cond_program, r"recorded an Eqn whose invars or outvars are not tuples"),
    (lambda t, p, a, k: _record(t, p, a, k) * 2, _cond_program,
     r"returned 2 tracers for a reduce_sum equation with 1 outvars"),
    (_nothing, _cond_program, r"recorded no equation for one reduce_sum"),
    (lambda t, p, a, k: _record(t, p, a, k, n_eqns=2), _cond_program,
     r"recorded 2 equations for one reduce_sum"),
    (_unrecorded, _cond_program,
     r"returned tracer 0 of Var\(f64\[\]\), which is not outvar 0 of the recorded equation"),
    (_fresh_inputs, _cond_program,
     r"recorded input 0 of reduce_sum as a Var that nothing defines of type f64\[3\], where "
     r"it is an invar of type f64\[3\]: trace\.to_atom\(arg\) is the atom"),
    (_one_var, _while_program, r"recorded 1 outvars for while, whose abstract eval gives 2"),
    (lambda t, p, a, k: _record(t, p, a, k, eqn_params=k), _cond_program,
     r"recorded the params dict it was given; an equation owns its params"),
    (lambda t, p, a, k: _record(t, p, a, k, eqn_params={}), _cond_program,
     r"recorded params \[\] where reduce_sum was bound with params \['axes'\]"),
    (lambda t, p, a, k: _record(t, p, a, k, source="somewhere"), _cond_program,
     r"recorded the source 'somewhere', where the line being traced is "
     r"'tests/test_build_trace\.py:\d+ \(_cond_program\)'"),
    (lambda t, p, a, k: _record(t, p, a, k, outvars=[
        Var(mj.ShapedArray((), np.dtype(np.float32)))]), _cond_program,
     r"recorded outvar 0 of reduce_sum with type f32\[\], where abstract eval says f64\[\]"),
    (lambda t, p, a, k: _record(t, P.sin_p if p is P.neg_p else p, a, k), _cond_program,
     r"recorded a sin equation for the primitive neg"),
])
def test_a_wrong_recording_is_refused_where_it_is_made(wrong, program, message):
    """Never a wrong program: each equation is checked as the piece records it."""
    x = np.arange(3.0) + 1.0
    with build.use("process_primitive", wrong, verify=False):
        for run in (lambda: mj.make_jaxpr(program)(x), lambda: mj.jit(program)(x)):
            with pytest.raises(build.PieceError, match=message) as e:
                run()
            assert e.value.piece == "process_primitive"
    np.testing.assert_array_equal(mj.jit(_cond_program)(x), 2 * x)


def test_verify_keeps_minijits_own_piece(capsys):
    for wrong in (_broken, _fresh_inputs, _one_var, _unrecorded, _nothing):
        switch = build.use("process_primitive", wrong)
        assert build.using() == {}
        assert "minijit keeps its own process_primitive" in capsys.readouterr().err
        assert repr(switch) == "<minijit runs its own process_primitive>"
    piece = _solution_piece()
    build.use("process_primitive", piece)
    assert build.using() == {"process_primitive": piece}
