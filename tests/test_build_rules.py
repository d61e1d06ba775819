"""The build track's pieces inside minijit's passes: `fold` (fold_constants), `sub_self`
(simplify), `cse` and `may_fuse` (fuse_elementwise, fuse_siblings).

- each piece, switched in, is what `mj.jit` runs: a counting wrapper around the solution's
  function sees calls while a program compiles, and the values are minijit's own;
- a broken piece stops with a `PieceError` that names it and says what is wrong, where a
  later pass (the typecheck, fusion, Numba) would otherwise fail without its name or a
  wrong value would pass; `build.reset` restores minijit's own;
- the program's own errors stay the program's, with the learner's pieces switched in;
- minijit's own pieces take minijit's fast paths (fold_constants and fusion ask no piece).
"""

from __future__ import annotations

import contextlib
from collections import Counter
from dataclasses import replace

import numpy as np
import pytest
from solution_cells import solution_namespace

import minijit as mj
import minijit.numpy as mnp
from minijit import build, lax
from minijit.ir import Lit, Var

pytestmark = pytest.mark.usefixtures("minijits_own_pieces")

PIECES = ("fold", "sub_self", "cse", "may_fuse")


def _solution(name: str):
    if name == "may_fuse":
        return solution_namespace("08_fusion_and_buffers.ipynb", "ex08_may_fuse")["may_fuse"]
    exercise, function = {"fold": ("ex07_fold", "my_fold"), "sub_self": ("ex07_rule", "sub_self"),
                          "cse": ("ex07_cse", "my_cse")}[name]
    return solution_namespace("07_cleanup_passes.ipynb", exercise)[function]


def program(x, i):
    """Constant work, an integer `i - i`, a duplicate and an elementwise chain to fuse."""
    k = mnp.exp(mnp.add(1.0, 2.0))
    y = mnp.sin(x) * k + mnp.sin(x) * 2.0
    return lax.fori_loop(0, 2, lambda n, c: c * mnp.negative(0.5) + 1.0, y), (i - i) * 3 + i


ARGS = (np.array([0.5, -1.25, 2.0]), np.array([3, -4], np.int64))


def _same(a, b) -> bool:
    return all(np.array_equal(x, y) and x.dtype == y.dtype for x, y in zip(a, b))


@pytest.mark.parametrize("backend", ["interpreter", "numba"])
def test_every_piece_switched_in_runs_in_jit(backend):
    want = mj.jit(program, backend=backend)(*ARGS)
    calls = Counter()

    def counting(name):
        fn = _solution(name)

        def piece(*args):
            calls[name] += 1
            return fn(*args)

        return piece

    with contextlib.ExitStack() as switched:
        for name in PIECES:
            switched.enter_context(build.use(name, counting(name)))
        assert set(build.using()) == set(PIECES)
        calls.clear()  # build.use's small examples called them
        got = mj.jit(program, backend=backend)(*ARGS)
    assert _same(got, want)
    assert all(calls[name] for name in PIECES), calls


def test_fold_runs_before_fold_constants_own_folding():
    """The learner's fold folds its five primitives; fold_constants folds what it left."""
    from minijit.passes import fold_constants

    seen = []

    def fold(jaxpr):
        seen.append([e.primitive.name for e in jaxpr.eqns])
        return _solution("fold")(jaxpr)

    closed = mj.make_jaxpr(lambda x: x * mnp.sin(mnp.exp(1.0)))(ARGS[0])
    with build.use("fold", fold, verify=False):
        out = fold_constants(closed)
    assert seen == [["exp", "sin", "mul"]]
    assert [e.primitive.name for e in out.eqns] == ["mul"]


def test_minijits_own_fold_and_may_fuse_ask_no_piece(monkeypatch):
    """With minijit's own pieces, fold_constants is one walk and fusion asks rule 1 itself:
    neither dispatches through `build.call` (the pipeline is as fast as before)."""
    asked = []
    real = build.call
    monkeypatch.setattr(build, "call", lambda name, *a, **k: (asked.append(name),
                                                              real(name, *a, **k))[1])
    mj.jit(program, backend="interpreter")(*ARGS)
    assert "fold" not in asked and "may_fuse" not in asked
    assert {"sub_self", "cse", "dce", "fusion_groups"} <= set(asked)


# --------------------------------------------------------------------------- broken pieces


def _int_sub(eqn):  # the Var a broken rule returns: an input of the equation
    return eqn.invars[0]


def _printing(x, i):
    mj.debug.print("x = {}", x)
    return mnp.exp(mnp.add(1.0, 2.0)) * x + mnp.sin(x) + mnp.sin(x), i - i


def _drop_effects(jaxpr):
    return mj.Jaxpr(jaxpr.constvars, jaxpr.invars,
                    tuple(e for e in jaxpr.eqns if not e.primitive.effectful), jaxpr.outvars)


def _new_invars(jaxpr):
    return mj.Jaxpr(jaxpr.constvars, tuple(Var(v.aval) for v in jaxpr.invars), jaxpr.eqns,
                    jaxpr.outvars)


def _swap_outputs(jaxpr):
    return mj.Jaxpr(jaxpr.constvars, jaxpr.invars, jaxpr.eqns, jaxpr.outvars[::-1])


def _literal_one(eqn):
    x, y = eqn.invars
    out = eqn.outvars[0]
    return Lit(1, out.aval.update(shape=())) if x is y else None


BROKEN = [
    ("fold", lambda j: None, "returned a NoneType; it must return a Jaxpr"),
    ("fold", _drop_effects, "kept 0 of the 1 equations with effects"),
    ("fold", _new_invars, "changed the invars of the jaxpr"),
    ("fold", _swap_outputs, "returned a jaxpr with outputs"),
    ("fold", lambda j: 1 / 0, "raised ZeroDivisionError"),
    ("cse", _drop_effects, "kept 0 of the 1 equations with effects"),
    ("cse", lambda j: mj.Jaxpr(j.constvars, j.invars,
                               tuple(e for e in j.eqns if e.primitive.name != "sin"),
                               j.outvars), "does not typecheck"),
    ("cse", lambda j: j.eqns, "returned a tuple; it must return a Jaxpr"),
    ("sub_self", lambda e: Lit(0, e.outvars[0].aval.update(shape=()))
     if e.invars[0] is e.invars[1] else None, "a literal is a scalar"),
    ("sub_self", _literal_one, "returned the literal 1"),
    ("sub_self", _int_sub, "returned a Var"),
    ("sub_self", lambda e: 1 / 0, "raised ZeroDivisionError"),
    ("may_fuse", lambda e: True, r"said True for `.*`, which may not fuse"),
    ("may_fuse", lambda e: "yes", "it must answer True or False"),
    ("may_fuse", lambda e: 1 / 0, "raised ZeroDivisionError"),
]


@pytest.mark.parametrize("name, broken, match", BROKEN,
                         ids=[f"{b[0]}-{k}" for k, b in enumerate(BROKEN)])
def test_a_broken_piece_names_itself_and_reset_restores(name, broken, match):
    args = (ARGS[0], ARGS[1])
    want = mj.jit(_printing, backend="interpreter")(*args)
    with build.use(name, broken, verify=False):
        for backend in ("interpreter", "numba"):
            with pytest.raises(build.PieceError, match=match) as e:
                mj.jit(_printing, backend=backend)(*args)
            assert e.value.piece == name
            assert f"build.reset('{name}')" in str(e.value)
    assert build.using() == {}
    assert _same(mj.jit(_printing, backend="interpreter")(*args), want)


def test_broken_pieces_are_refused_by_build_use(capsys):
    for name, broken, _ in BROKEN:
        build.use(name, broken)
    assert build.using() == {}
    err = capsys.readouterr().err
    assert all(f"minijit keeps its own {name}" in err for name in PIECES)


def test_a_may_fuse_that_fuses_a_matrix_product_stops_before_codegen():
    """Without the check, the kernel would hold a dot_general, and Numba would fail with an
    error that names no piece."""
    def layer(x, w):
        return mnp.tanh(mnp.dot(x, w)) * 2.0

    def greedy(eqn):  # rule 1 without "elementwise"
        return bool(eqn.outvars) and eqn.outvars[0].aval.shape != ()

    with build.use("may_fuse", greedy, verify=False):
        with pytest.raises(build.PieceError, match=r"(?s)dot_general.*neither elementwise"):
            mj.jit(layer, backend="numba")(np.ones((2, 3)), np.ones((3, 4)))


def test_a_cse_that_ignores_params_names_itself():
    """Sums over different axes merged: the outputs change type, and the error names cse
    (not the typecheck after the pass, nor a later pass)."""
    def merge_by_primitive(jaxpr):
        first, renamed, eqns = {}, {}, []
        for e in jaxpr.eqns:
            e = replace(e, invars=tuple(renamed.get(id(a), a) for a in e.invars))
            key = (e.primitive, tuple(id(a) for a in e.invars))
            if key in first:
                renamed.update(zip(map(id, e.outvars), first[key].outvars))
                continue
            first[key] = e
            eqns.append(e)
        return mj.Jaxpr(jaxpr.constvars, jaxpr.invars, tuple(eqns),
                        tuple(renamed.get(id(a), a) for a in jaxpr.outvars))

    x = np.arange(6.0).reshape(2, 3)
    with build.use("cse", merge_by_primitive, verify=False):
        with pytest.raises(build.PieceError, match=r"your cse .* returned a jaxpr with outputs "
                           r"\['f64\[3\]', 'f64\[3\]'\], where the program's are "
                           r"\['f64\[3\]', 'f64\[2\]'\]"):
            mj.jit(lambda v: (mnp.sum(v, axis=0), mnp.sum(v, axis=1)))(x)


# --------------------------------------------------------------------------- the program's errors


def _shape_error(x):
    return x + mnp.ones(4)


def _branch_on_value(x):
    return x if x.sum() > 0 else -x


@pytest.mark.parametrize("fn, error", [(_shape_error, TypeError),
                                       (_branch_on_value, mj.errors.ConcretizationTypeError)])
def test_the_programs_errors_stay_the_programs(fn, error):
    with pytest.raises(error) as own:
        mj.jit(fn)(np.ones(3))
    with contextlib.ExitStack() as switched:
        for name in PIECES:
            switched.enter_context(build.use(name, _solution(name)))
        with pytest.raises(error) as theirs:
            mj.jit(fn)(np.ones(3))
    assert type(theirs.value) is type(own.value)
    assert str(theirs.value) == str(own.value)


# --------------------------------------------------------------------------- the printer's layout


def test_a_one_line_printer_is_laid_out_as_minijits():
    """ex03_pp_jaxpr leaves the layout free: a learner's printer that prints one line still
    shows later chapters' programs one equation per line, word for word its own text."""
    from stand_in import stand_in

    from minijit.ir import layout_text

    own = stand_in("pp_jaxpr")

    def one_line(jaxpr):
        return own(jaxpr, 1 << 30)

    def long(x, p):
        y = lax.cond(p, lambda v: mnp.sin(v) * 2.0, lambda v: mnp.cos(v) - 1.0, x)
        return mnp.dot(y, y) + mnp.sum(mnp.exp(y)), y * 3.0

    short = mj.make_jaxpr(lambda v: v * 2.0)(ARGS[0])
    closed = mj.make_jaxpr(long)(ARGS[0], True)
    want, want_short = str(closed), str(short)
    assert "\n" in want and "\n" not in want_short
    with build.use("pp_jaxpr", one_line):
        assert str(closed) == want and str(short) == want_short
    # text on several lines, or not in the notation, is the printer's own
    assert layout_text("{ lambda ; a:f64[3]. let\n b = sin a in (b,) }" + " " * 80).count(
        "\n") == 1
    odd = "program: " + "a b c " * 20
    assert layout_text(odd) == odd
