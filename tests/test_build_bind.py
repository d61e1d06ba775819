"""The build track's `bind` (`minijit.core`, chapter 02).

- minijit's own bind is called directly while no learner's is switched in;
- the solution's `bind` of `solutions/02_tracing.ipynb`, switched in, traces, jits and runs
  eagerly exactly as minijit's own (values, jaxprs and source lines), jvp included;
- a broken bind fails with a `PieceError` naming it; a wrong one is refused where it returns;
  one that hands its work to minijit's own is refused; the program's own errors stay its own.
"""

from __future__ import annotations

import numpy as np
import pytest
from solution_cells import solution_namespace

import minijit as mj
import minijit.numpy as mnp
from minijit import build, core, lax
from minijit.array import wrap

pytestmark = pytest.mark.usefixtures("minijits_own_pieces")


def _solution_bind():
    return solution_namespace("02_tracing.ipynb", "ex02_bind")["bind"]


def _program(x):
    y = lax.cond(mnp.sum(x) > 0, lambda v: v * 2.0, lambda v: -v, x)
    z = mj.jvp(mj.jit(lambda v: mnp.sin(v) * v), (y,), (mnp.ones_like(y),))[1]
    return lax.while_loop(lambda v: mnp.sum(v) < 50.0, lambda v: v * 2.0, z + 1.0)


def _everything(fn, x):
    closed = mj.make_jaxpr(fn)(x)
    return (str(closed), [e.source for e in closed.jaxpr.eqns],
            np.asarray(mj.jit(fn)(x)), np.asarray(fn(wrap(x))))


def test_minijits_own_bind_is_called_directly():
    assert build.PIECES["bind"].reference is core.reference_bind
    assert build.PIECES["bind"].chapter == "02_tracing" and core._own_bind[0]


def test_the_solution_runs_everything_as_minijit_does():
    x = np.array([0.5, 1.0, 2.0])
    want = _everything(_program, x)
    calls = []
    piece = _solution_bind()

    def counting(prim, *args, **params):
        calls.append(prim.name)
        return piece(prim, *args, **params)

    with build.use("bind", counting):
        assert build.using() == {"bind": counting} and not core._own_bind[0]
        got = _everything(_program, x)
    assert core._own_bind[0] and {"sin", "cos", "cond", "while", "mul"} <= set(calls)
    assert got[:2] == want[:2]
    for g, w in zip(got[2:], want[2:]):
        np.testing.assert_array_equal(g, w)


def test_a_broken_bind_names_itself_and_reset_restores():
    def broken(prim, *args, **params):
        raise ZeroDivisionError("boom")

    build.use("bind", broken, verify=False)
    with pytest.raises(build.PieceError, match=r"your bind .* raised ZeroDivisionError: boom"):
        mnp.sin(np.ones(2))
    build.reset("bind")
    np.testing.assert_array_equal(mnp.sin(np.zeros(2)), np.zeros(2))


@pytest.mark.parametrize("wrong, message", [
    (lambda p, *a, **k: core.trace_state.stack[-1].process_primitive(p, a, k),
     "returned a list for sin_for_bind, a primitive with one output"),
    (lambda p, *a, **k: core.trace_state.stack[min(1, len(core.trace_state.stack) - 1)]
     .process_primitive(p, a, k)[0] if not p.multiple_results else None,
     "handed a primitive to a trace below the innermost one"),
    (lambda p, *a, **k: core.bind(p, *a, **k), "calls minijit's own bind"),
    (lambda p, *a, **k: p.bind(*a, **k), "calls minijit's own bind"),
    (core.bind, "calls minijit's own bind"),
])
def test_a_wrong_bind_is_refused(wrong, message, capsys):
    build.use("bind", wrong)
    assert build.using() == {}
    assert message in capsys.readouterr().err
    # a wrong trace is right while only one trace is above the EvalTrace: jvp in jit shows it
    with build.use("bind", wrong, verify=False), pytest.raises(build.PieceError):
        mj.jit(lambda x: mj.jvp(mnp.sin, (x,), (x,))[1])(np.ones(2))


def test_the_programs_errors_stay_its_own():
    with build.use("bind", _solution_bind()):
        with pytest.raises(TypeError, match="add") as e:  # abstract eval, inside process_primitive
            lax.add(np.ones((2, 3)), np.ones(4))
        assert not isinstance(e.value, build.PieceError)


def test_the_public_cases_pass_and_the_stub_is_not_attempted():
    from minijit.grading.checking import run_public_cases
    from minijit.grading.registry import default_exercises

    ns = solution_namespace("02_tracing.ipynb", "ex02_bind")
    report = run_public_cases(default_exercises()["ex02_bind"], ns)
    assert all(row.passed for row in report.rows), [r.name for r in report.rows if not r.passed]

    def stub(prim, *args, **params):
        raise NotImplementedError("ex02_bind: replace this line with your solution")

    report = run_public_cases(default_exercises()["ex02_bind"], {**ns, "bind": stub})
    assert not report.attempted or report.passed < len(report.rows)
