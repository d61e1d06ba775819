"""The build track (`minijit.build`): minijit running pieces a learner wrote.

- the solution's pieces of `solutions/03_the_ir.ipynb`, switched in, run the whole catalogue
  (`tests/catalogue.py`) with no disagreement with minijit's own;
- a broken piece fails with an error that names it and `build.reset`, and reset restores;
- a switch leaves no jit cache entry behind that was made before it;
- switching while other threads run programs never gives them a wrong result.
"""

from __future__ import annotations

import threading

import numpy as np
import pytest
from catalogue import PROGRAMS
from solution_cells import solution_namespace
from stand_in import stand_in

import minijit as mj
import minijit.numpy as mnp
from minijit import build, lax
from minijit.array import wrap
from minijit.grading import programs as graded
from minijit.grading.cases import error_of
from minijit.grading.checking import expected_value
from minijit.grading.registry import default_exercises
from minijit.interpret import reference_eval_jaxpr
from minijit.ir import JaxprTypeError, pp_eqn_rules, reference_pp_jaxpr, subjaxprs
from minijit.tree_util import tree_leaves, tree_map

pytestmark = pytest.mark.usefixtures("minijits_own_pieces")


def _solution_pieces() -> dict:
    """`eval_jaxpr` and `pp_jaxpr` as the solution notebook defines them."""
    ns = solution_namespace("03_the_ir.ipynb", "ex03_eval_jaxpr", "ex03_pp_jaxpr")
    return {"eval_jaxpr": ns["eval_jaxpr"], "pp_jaxpr": ns["pp_jaxpr"]}


def _dynamic_leaves(prog, args) -> list:
    return tree_leaves(tuple(a for i, a in enumerate(args) if i not in prog.static_argnums))


def _run_every_way(prog, args) -> list[np.ndarray]:
    """`eval_jaxpr` of the traced program, `jit` on the interpreter, and eager evaluation."""
    fn = prog.minijit_fn()
    closed = mj.make_jaxpr(fn, static_argnums=prog.static_argnums)(*args)
    with np.errstate(all="ignore"):
        outs = list(mj.eval_jaxpr(closed.jaxpr, closed.consts, *_dynamic_leaves(prog, args)))
        outs += tree_leaves(mj.jit(fn, static_argnums=prog.static_argnums,
                                   backend="interpreter")(*args))
        # eager arrays are mj.Arrays, as test_catalogue's eager run makes them
        outs += tree_leaves(fn(*tree_map(lambda a: wrap(a) if isinstance(a, np.ndarray)
                                         else a, args)))
    return [np.asarray(o) for o in outs]


def _custom_printed(jaxpr) -> bool:
    return any(e.primitive in pp_eqn_rules or any(map(_custom_printed, subjaxprs(e)))
               for e in jaxpr.eqns)


def test_the_solution_runs_the_whole_catalogue():
    pieces = _solution_pieces()
    mismatches = []
    for prog in PROGRAMS:
        args = prog.make_args()
        want = _run_every_way(prog, args)
        with build.use("eval_jaxpr", pieces["eval_jaxpr"]):
            assert build.using() == {"eval_jaxpr": pieces["eval_jaxpr"]}
            got = _run_every_way(prog, args)
        same = len(got) == len(want) and all(
            g.dtype == w.dtype and g.shape == w.shape and np.array_equal(g, w, equal_nan=True)
            for g, w in zip(got, want))
        if not same:
            mismatches.append(prog.name)
    assert not mismatches, (f"{len(PROGRAMS) - len(mismatches)}/{len(PROGRAMS)} programs "
                            f"agree; they differ on {mismatches}")


def test_the_solution_prints_the_catalogue_as_minijit_does():
    pp_jaxpr = _solution_pieces()["pp_jaxpr"]
    checked, mismatches = 0, []
    for prog in PROGRAMS:
        closed = mj.make_jaxpr(prog.minijit_fn(), static_argnums=prog.static_argnums)(
            *prog.make_args())
        if _custom_printed(closed.jaxpr):
            continue  # dot_general, broadcast_in_dim and jit print by rules of their own
        checked += 1
        with build.use("pp_jaxpr", pp_jaxpr):
            text = str(closed)
        if text != reference_pp_jaxpr(closed.jaxpr):
            mismatches.append(prog.name)
    assert checked >= 40 and not mismatches, mismatches


def test_the_graded_programs():
    """Every graded program traces and runs; the printable ones print by the default rule."""
    for name, (fun, _) in graded.PROGRAMS.items():
        args = graded.make_args(name, 0)
        closed = mj.make_jaxpr(fun)(*args)
        assert reference_eval_jaxpr(closed.jaxpr, closed.consts, *args)
        assert _custom_printed(closed.jaxpr) == (name not in graded.PRINTABLE), name


@pytest.mark.parametrize("ex_id", ["ex03_eval_jaxpr", "ex03_pp_jaxpr"])
def test_every_graded_program_runs_on_the_reference(ex_id):
    """No case of a build exercise expects an error: each one is a program that works."""
    ex = default_exercises()[ex_id]
    for key, case, _ in ex.cases():
        assert error_of(expected_value(ex, key, case)) is None, case.name


# --------------------------------------------------------------------------- failures


def _broken(jaxpr, consts, *args):
    raise ZeroDivisionError("boom")


def _cond_program(x):
    return lax.cond(mnp.sum(x) > 0, lambda v: v * 2.0, lambda v: -v, x)


def test_a_broken_piece_names_itself_and_reset_restores():
    x = np.arange(3.0)
    closed = mj.make_jaxpr(_cond_program)(x)
    build.use("eval_jaxpr", _broken, verify=False)
    assert build.using() == {"eval_jaxpr": _broken}
    for run in (lambda: mj.eval_jaxpr(closed.jaxpr, closed.consts, x),
                lambda: mj.jit(_cond_program, backend="interpreter")(x),
                lambda: _cond_program(x)):  # eagerly: cond's impl rule calls eval_jaxpr
        with pytest.raises(build.PieceError, match=r"your eval_jaxpr .* raised "
                           r"ZeroDivisionError: boom[\s\S]*build\.reset\('eval_jaxpr'\)") as e:
            run()
        assert isinstance(e.value.__cause__, ZeroDivisionError)
        assert e.value.piece == "eval_jaxpr"
    build.reset("eval_jaxpr")
    assert build.using() == {}
    np.testing.assert_array_equal(mj.jit(_cond_program, backend="interpreter")(x), 2 * x)
    np.testing.assert_array_equal(_cond_program(x), 2 * x)


def _own_process_primitive(*args, **kwargs):
    """A learner's process_primitive that is right: the solution notebook's."""
    ns = solution_namespace("02_tracing.ipynb", "ex02_process_primitive")
    return ns["process_primitive"](*args, **kwargs)


@pytest.mark.parametrize("program,args,error", [
    (lambda a, b: a + b, (np.ones(3), np.ones(4)), TypeError),   # shapes, as in JAX
    (lambda a, b: lax.add(a, b), (np.ones(3), np.ones(3, np.float32)), TypeError),  # dtypes
    (lambda a, b: a.reshape(4), (np.ones(3), 0.0), TypeError),  # as in JAX
])
def test_the_programs_errors_pass_through_a_piece_unchanged(program, args, error):
    with pytest.raises(error) as theirs:
        mj.jit(program)(*args)
    with build.use("process_primitive", _own_process_primitive, verify=False):
        with pytest.raises(error) as ours:
            mj.jit(program)(*args)
    assert not isinstance(ours.value, build.PieceError)
    assert str(ours.value) == str(theirs.value)


def test_a_pieces_own_failure_names_where_it_came_from():
    def broken(trace, primitive, tracers, params):
        raise ZeroDivisionError("boom")

    origin = "from ../exercises/02_tracing.ipynb, exercise ex02_process_primitive"
    with build.use("process_primitive", broken, verify=False, origin=origin):
        with pytest.raises(build.PieceError, match=r"your process_primitive \(from "
                           r"\.\./exercises/02_tracing\.ipynb.*\) raised ZeroDivisionError"
                           r"[\s\S]*run use_mine\(\) again") as e:
            mj.make_jaxpr(lambda a: a * 2)(np.ones(3))
    assert isinstance(e.value.__cause__, ZeroDivisionError)
    # without an origin, the message says how to switch it in again by hand
    with build.use("process_primitive", broken, verify=False):
        with pytest.raises(build.PieceError, match=r"build\.use\('process_primitive'"):
            mj.make_jaxpr(lambda a: a * 2)(np.ones(3))


def test_a_wrong_result_is_caught_where_it_is_made():
    x = np.arange(3.0)
    closed = mj.make_jaxpr(lambda v: (v + 1.0, v * 2.0))(x)
    build.use("eval_jaxpr", lambda j, c, *a: stand_in("eval_jaxpr")(j, c, *a)[:1], verify=False)
    with pytest.raises(build.PieceError, match="returned 1 values for a jaxpr with 2 outputs"):
        mj.eval_jaxpr(closed.jaxpr, closed.consts, x)
    build.use("eval_jaxpr", lambda j, c, *a: [o.astype(np.float32) for o in
                                              stand_in("eval_jaxpr")(j, c, *a)], verify=False)
    with pytest.raises(build.PieceError, match=r"float32\[3\] as output 0, where the jaxpr "
                                               r"says f64\[3\]"):
        mj.eval_jaxpr(closed.jaxpr, closed.consts, x)
    build.use("pp_jaxpr", lambda j: None, verify=False)
    with pytest.raises(build.PieceError, match="pp_jaxpr .* returned a NoneType"):
        str(closed)


def test_a_piece_may_return_scalars_and_callers_get_arrays():
    closed = mj.make_jaxpr(lambda v: (mnp.sum(v), v * 2.0))(np.arange(3.0))
    build.use("eval_jaxpr", lambda j, c, *a: tuple(
        o.item() if o.ndim == 0 else o for o in stand_in("eval_jaxpr")(j, c, *a)))
    assert build.using()  # it passed the small example, so it is switched in
    total, doubled = mj.eval_jaxpr(closed.jaxpr, closed.consts, np.arange(3.0))
    assert isinstance(total, np.ndarray) and total == 3.0
    np.testing.assert_array_equal(doubled, [0.0, 2.0, 4.0])


def test_verify_keeps_minijits_own_piece(capsys):
    switch = build.use("eval_jaxpr", _broken)  # verify=True is the default
    assert build.using() == {}
    assert "minijit keeps its own eval_jaxpr" in capsys.readouterr().err
    assert repr(switch) == "<minijit runs its own eval_jaxpr>"
    build.use("pp_jaxpr", lambda j: "{ lambda ; . let in () }")  # wrong text: refused too
    assert build.using() == {}
    assert "printed '{ lambda" in capsys.readouterr().err
    one_line = lambda j: stand_in("pp_jaxpr")(j, 1 << 30)  # noqa: E731 - minijit's text, flat
    build.use("pp_jaxpr", one_line)  # the layout is free, as ex03_pp_jaxpr grades it
    assert build.using() == {"pp_jaxpr": one_line}


def test_a_broken_printer_leaves_minijits_own_messages_alone():
    build.use("pp_jaxpr", lambda j: 1 / 0, verify=False)
    f64 = mj.ShapedArray((3,), np.float64)
    u, out = mj.Var(f64), mj.Var(mj.ShapedArray((4,), np.float64))
    from minijit import primitives as P

    bad = mj.Jaxpr((), (u,), (mj.Eqn(P.neg_p, (u,), (out,)),), (out,))
    with pytest.raises(JaxprTypeError, match="in `b:f64\\[4\\] = neg a`"):
        mj.typecheck_jaxpr(bad)


def test_the_with_form_switches_back_even_on_an_error():
    mine = _solution_pieces()["eval_jaxpr"]
    with pytest.raises(KeyError), build.use("eval_jaxpr", mine):
        assert build.using() == {"eval_jaxpr": mine}
        raise KeyError("inside the block")
    assert build.using() == {}
    with pytest.raises(KeyError, match="no build piece named 'eval'"):
        build.use("eval", mine)
    with pytest.raises(TypeError, match="needs a function"):
        build.use("eval_jaxpr", "not a function")


# --------------------------------------------------------------------------- caches


def test_a_switch_leaves_no_stale_cache_entries():
    """An entry made before a switch may hold the old piece's work: it is never used after."""
    x = np.arange(3.0)
    f = mj.jit(lambda v: v * 2.0, backend="interpreter")
    f(x), f(x)  # traced once, then served from the fast path
    assert (f.trace_count, f._cache_size()) == (1, 1)
    calls = []

    def counting(jaxpr, consts, *args):
        calls.append(jaxpr)
        return stand_in("eval_jaxpr")(jaxpr, consts, *args)

    build.use("eval_jaxpr", counting)
    assert f._cache_size() == 0  # the entry from before the switch is gone
    calls.clear()
    np.testing.assert_array_equal(f(x), 2 * x)
    assert f.trace_count == 2 and len(calls) == 1  # traced again, and run by the new piece
    np.testing.assert_array_equal(f(x), 2 * x)  # now cached (fast path) under this piece
    assert f.trace_count == 2 and len(calls) == 2
    assert "minijit.build" in f.cache_misses[-1]
    build.reset()
    np.testing.assert_array_equal(f(x), 2 * x)
    assert f.trace_count == 3 and len(calls) == 2


def test_an_entry_compiled_across_a_switch_is_not_kept():
    """A switch while a function compiles (here: from inside its own trace, as another thread
    could) means the entry may mix two pieces' work: it serves that call and is dropped."""
    x = np.arange(3.0)

    def switches_while_traced(v):
        build.use("eval_jaxpr", reference_eval_jaxpr)  # any switch starts a new generation
        return v + 1.0

    f = mj.jit(switches_while_traced, backend="interpreter")
    np.testing.assert_array_equal(f(x), x + 1.0)
    assert f._cache_size() == 0
    f(x)
    assert f.trace_count == 2


def test_switching_while_other_threads_run():
    """Each call sees one whole piece, the old or the new one, never a broken mix."""
    mine = _solution_pieces()["eval_jaxpr"]
    x = np.arange(4.0)
    closed = mj.make_jaxpr(_cond_program)(x)
    f = mj.jit(_cond_program, backend="interpreter")
    errors: list = []
    stop = threading.Event()

    def worker():
        try:
            while not stop.is_set():
                np.testing.assert_array_equal(mj.eval_jaxpr(closed.jaxpr, (), x)[0], 2 * x)
                np.testing.assert_array_equal(f(x), 2 * x)
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=worker) for _ in range(3)]
    for t in threads:
        t.start()
    for _ in range(200):
        build.use("eval_jaxpr", mine, verify=False)
        build.reset()
    stop.set()
    for t in threads:
        t.join()
    assert not errors, errors[0]


# --------------------------------------------------------------------------- your own work

def _wrapper_of(name):
    """A learner's piece `name` that hands every call to minijit's own."""
    reference = build.PIECES[name].reference
    return lambda *args, **kwargs: reference(*args, **kwargs)


@pytest.mark.parametrize("name", sorted(build.PIECES))
def test_a_piece_that_calls_minijits_own_is_refused(name, capsys):
    from minijit.course.mine import WRITTEN_BY

    wrapper = _wrapper_of(name)
    build.use(name, wrapper)  # verify: its selftest catches the hand-over
    assert name not in build.using()
    assert "calls minijit's own" in capsys.readouterr().err
    # the exercise's public cases fail, every one of them, with the reason
    exercise = default_exercises()[WRITTEN_BY[name].exercise]
    from minijit.grading.checking import run_public_cases

    report = run_public_cases(exercise, {WRITTEN_BY[name].function: wrapper, "np": np,
                                         "mj": mj})
    assert report.rows and report.passed == 0, [r for r in report.rows if r.passed]


def test_a_piece_that_swallows_the_guard_still_fails():
    reference = build.PIECES["eval_jaxpr"].reference
    own = _solution_pieces()["eval_jaxpr"]

    def sly(jaxpr, consts, *args):
        try:
            return reference(jaxpr, consts, *args)
        except build.PieceError:
            return own(jaxpr, consts, *args)

    with build.use("eval_jaxpr", sly, verify=False):
        with pytest.raises(build.PieceError, match="calls minijit's own eval_jaxpr"):
            mj.jit(lambda x: x * 2.0, backend="interpreter")(np.ones(3))
    with build.use("eval_jaxpr", own):  # the learner's own work runs as before
        np.testing.assert_array_equal(
            mj.jit(lambda x: x * 2.0, backend="interpreter")(np.ones(3)), 2.0)


# --------------------------------------------------------------------------- what is handed over

def _unconverted_eval_jaxpr(jaxpr, consts, *args):
    """Chapter 03's interpreter with one slip: arguments and consts bound as they come."""
    env = {}

    def read(atom):
        if isinstance(atom, mj.Lit):
            return np.asarray(atom.val, dtype=atom.aval.dtype)
        return env[atom]

    env.update(zip(jaxpr.constvars, consts))
    env.update(zip(jaxpr.invars, args))
    for eqn in jaxpr.eqns:
        from minijit.core import impl_rules

        outs = impl_rules[eqn.primitive](*map(read, eqn.invars), **eqn.params)
        env.update((v, np.asarray(o, dtype=v.aval.dtype)) for v, o in zip(eqn.outvars, outs))
    return [read(a) for a in jaxpr.outvars]


def test_an_unconverted_argument_is_named_with_its_equation(capsys):
    build.use("eval_jaxpr", _unconverted_eval_jaxpr)  # its small example passes a float
    assert "got a float as operand 1" in capsys.readouterr().err and not build.using()
    with build.use("eval_jaxpr", _unconverted_eval_jaxpr, verify=False):
        with pytest.raises(build.PieceError, match=r"the impl rule of div got a float as "
                           r"operand 0, in `b:f64\[\] = div a 2\.0:f64\[\]`[\s\S]*np\.asarray"):
            mj.jit(lambda x: x / 2, backend="interpreter")(2.0)
        # arrays are what the equations read: it runs
        np.testing.assert_array_equal(
            mj.jit(lambda x: x / 2, backend="interpreter")(np.ones(2)), 0.5)


def test_the_switch_in_case_of_every_build_exercise(capsys):
    from minijit.course.mine import WRITTEN_BY
    from minijit.grading.build_pieces import BUILD_PIECES, switch_in_case
    from minijit.grading.checking import run_public_cases

    assert BUILD_PIECES == {w.exercise: (name, w.function) for name, w in WRITTEN_BY.items()}
    for ex_id, (_piece, function) in BUILD_PIECES.items():
        exercise = default_exercises()[ex_id]
        assert exercise.public[-1] == switch_in_case(ex_id)
        report = run_public_cases(exercise, {function: lambda *a, **k: 1 / 0})
        assert not report.rows[-1].passed, ex_id


def test_the_switch_in_case_of_a_stub_is_not_attempted():
    from minijit.grading.checking import run_public_cases

    def stub(jaxpr):
        raise NotImplementedError("ex07_dce: write dce_jaxpr")

    report = run_public_cases(default_exercises()["ex07_dce"], {"dce_jaxpr": stub})
    assert not report.attempted and report.passed == 0


def test_minijits_own_dispatch_is_no_hand_over():
    """A switch back to minijit's own while the learner's piece runs (another thread's, here
    done from inside the piece) makes minijit's nested dispatch run its own piece: that is not
    the learner's piece handing its work over."""
    own = _solution_pieces()["eval_jaxpr"]

    def switching(jaxpr, consts, *args):
        build.reset("eval_jaxpr")  # as another thread could, mid-run
        return own(jaxpr, consts, *args)  # its cond calls build.call: minijit's own now

    closed = mj.make_jaxpr(_cond_program)(np.arange(3.0))
    build.use("eval_jaxpr", switching, verify=False)
    np.testing.assert_array_equal(mj.eval_jaxpr(closed.jaxpr, closed.consts, np.arange(3.0)),
                                  [2.0 * np.arange(3.0)])
