"""The build track's chapter 09 piece: `loop_nest` (`minijit.build`, `minijit.codegen.kernels`).

- with minijit's own piece, and with a copy of it switched in (so every call goes through
  `build.call` and its check), the generated source of every catalogue program is the same;
- the solution's piece of `solutions/09_code_generation.ipynb`, switched in, writes the
  source minijit's own piece writes for every catalogue program, or compiles it with the
  Numba backend to the values minijit's own piece gives;
- a wrong loop nest is stopped with a `PieceError` naming the piece, before Numba compiles
  anything; reset restores minijit's own.
"""

from __future__ import annotations

import numpy as np
import pytest
from catalogue import PROGRAMS
from solution_cells import solution_namespace

import minijit as mj
from minijit import build
from minijit.codegen.kernels import _check_loop_nest, loop_nest
from minijit.tree_util import tree_leaves

pytestmark = pytest.mark.usefixtures("minijits_own_pieces")


def _solution_piece():
    """`loop_nest` as the solution notebook defines it."""
    return solution_namespace("09_code_generation.ipynb", "ex09_loop_nest")["loop_nest"]


def _jitted(prog):
    return mj.jit(prog.minijit_fn(), static_argnums=prog.static_argnums, backend="numba")


def _source(prog) -> str:
    return _jitted(prog).lower(*prog.make_args()).as_text()


def test_minijit_piece_writes_the_same_source():
    own = {p.name: _source(p) for p in PROGRAMS}
    assert sum("for i0 in range(" in s for s in own.values()) > 50
    build.use("loop_nest", lambda shape, operands: loop_nest(shape, operands))
    assert {p.name: _source(p) for p in PROGRAMS} == own


def test_solution_piece_runs_the_catalogue():
    """Where the solution's piece writes the source minijit's own writes, the compiled code is
    the same (Numba compiles the source): those programs are compared as source, and a few of
    them also run. Every program whose source differs runs, and must give the same values."""
    own = {p.name: _source(p) for p in PROGRAMS}
    build.use("loop_nest", _solution_piece())
    theirs = {p.name: _source(p) for p in PROGRAMS}
    differ = {name for name in own if own[name] != theirs[name]}
    sample = {p.name for p in PROGRAMS if "for i0 in range(" in own[p.name]}
    sample = set(sorted(sample)[::20])  # a few, spread over the catalogue
    mismatches = []
    for p in PROGRAMS:
        if p.name not in differ | sample:
            continue
        with np.errstate(all="ignore"):
            got = tree_leaves(_jitted(p)(*p.make_args()))
            with build.minijits_own():
                want = tree_leaves(_jitted(p)(*p.make_args()))
        if len(got) != len(want) or not all(
                np.array_equal(np.asarray(a), np.asarray(b), equal_nan=True)
                for a, b in zip(got, want)):
            mismatches.append(p.name)
    assert mismatches == []
    assert len(sample) >= 4


def _off_by_one(shape, operands):  # reads the size-1 dimension with the loop's index
    loops, _ = loop_nest(shape, operands)
    idx = [f"i{k}" for k in range(len(shape))]
    return loops, [", ".join(idx[len(shape) - len(s):]) for s in operands]


@pytest.mark.parametrize("broken", [
    _off_by_one,
    lambda shape, ops: (loop_nest(shape, ops)[0][::-1], loop_nest(shape, ops)[1]),
    lambda shape, ops: (loop_nest(shape, ops)[0], loop_nest(shape, ops)[1][:1]),
    lambda shape, ops: loop_nest(shape, ops)[0],
    lambda shape, ops: 1 / 0,
])
def test_broken_piece_is_a_named_error_and_reset_restores(broken):
    x, column = np.ones((3, 4)), np.array([[1.0], [2.0], [3.0]])
    f = mj.jit(lambda x, c: x * c + 1.0, backend="numba")
    want = f(x, column)
    build.use("loop_nest", broken, verify=False)
    with pytest.raises(build.PieceError, match="loop_nest") as e:
        f(x, column)
    assert e.value.piece == "loop_nest"
    build.reset("loop_nest")
    assert build.using() == {}
    np.testing.assert_array_equal(f(x, column), want)


def test_use_keeps_minijit_piece_when_the_selftest_fails(capsys):
    build.use("loop_nest", _off_by_one)
    assert build.is_reference("loop_nest")
    assert "minijit keeps its own loop_nest" in capsys.readouterr().err


def test_check_names_what_is_wrong():
    assert _check_loop_nest(loop_nest((4, 5), [(4, 1), (5,)]), (4, 5), [(4, 1), (5,)]) is None
    assert _check_loop_nest(loop_nest((), [()]), (), [()]) is None
    problem = _check_loop_nest((["for i0 in range(4):", "for i1 in range(5):"], ["i0, i1"]),
                               (4, 5), [(4, 1)])
    assert "dimension 1 (size 1)" in problem and "'0'" in problem
    problem = _check_loop_nest((["for i0 in range(4):", "for i1 in range(5):"], ["0, i1"]),
                               (4, 5), [(4, 5)])
    assert "'i0'" in problem
    assert "for i1 in range(5):" in _check_loop_nest(
        (["for i0 in range(4):", "for i1 in range(6):"], ["i0, i1"]), (4, 5), [(4, 5)])
