"""Jitted functions never write into their arguments, and their results stay their own.

Three parts: the harness of tests/aliasing.py checked on plain Python functions that break
each rule on purpose; the aliasing bugs found so far, each as a small program whose result is
also compared with NumPy; and every catalogue program on every backend, with its arguments in
every memory layout of `aliasing.ALL_LAYOUTS` (views, Fortran order, strides, read-only).
The fuzzer (tests/fuzz.py, run by tests/test_fuzz.py) applies the same harness to its programs.
"""

from __future__ import annotations

import numpy as np
import pytest
from aliasing import (
    ALL_LAYOUTS,
    check_aliasing,
    in_layout,
    relayout,
    root,
)
from catalogue import B1, PROGRAMS, W1, Program

import minijit as mj
import minijit.numpy as mnp
from minijit import backends, lax

BACKENDS = backends.DISTINCT_BACKENDS
CONSTANTS = [W1, B1]  # the catalogue's closed-over arrays: no result may share their memory


def _kinds(violations) -> set[str]:
    return {v.kind for v in violations}


# --------------------------------------------------------------------------- the harness itself


def test_a_pure_function_has_no_violations():
    assert check_aliasing(lambda x, y: (x + y, np.sin(x)), (np.arange(3.0), np.ones(3)),
                          (np.ones(3), np.zeros(3)), distinct_outputs=True) == []


def test_writing_an_argument_is_reported():
    def bad(x):
        x[0] = 7.0
        return x + 1.0

    (v,) = check_aliasing(bad, (np.arange(3.0),), calls=1)
    assert v.kind == "input-modified" and "args[0]" in v.message and "(0,)" in v.message


def test_writing_through_a_view_into_the_viewed_array_is_reported():
    def bad(x):
        root(x)[0] = -1.0  # outside the view itself: only the viewed array shows it
        return x * 2.0

    x = in_layout(np.arange(4.0), "offset")
    (v,) = check_aliasing(bad, (x,), calls=1)
    assert v.kind == "input-modified" and "views" in v.message


def test_reused_result_buffer_is_reported():
    buffer = np.zeros(3)

    def bad(x):
        buffer[...] = x * 2.0
        return buffer

    kinds = _kinds(check_aliasing(bad, (np.arange(3.0),), (np.ones(3),)))
    assert kinds == {"output-overwritten", "output-shares-earlier-output"}


def test_returning_an_argument_is_reported_unless_donated():
    (v,) = check_aliasing(lambda x: x, (np.arange(3.0),), calls=1)
    assert v.kind == "output-shares-input"
    assert check_aliasing(lambda x: x, (np.arange(3.0),), donate_argnums=(0,)) == []


def test_results_sharing_memory_within_a_call_only_when_asked():
    def overlapping(x):
        y = x * 2.0
        return y, y[::-1]

    assert check_aliasing(overlapping, (np.arange(3.0),)) == []
    (v,) = check_aliasing(overlapping, (np.arange(3.0),), distinct_outputs=True)
    assert v.kind == "outputs-overlap"


def test_state_kept_between_calls_is_reported():
    calls = []

    def stateful(x):
        calls.append(1)
        return x + len(calls)

    (v,) = check_aliasing(stateful, (np.arange(3.0),), calls=2)
    assert v.kind == "nondeterministic"


def test_layouts_keep_values():
    a = np.arange(6, dtype=np.int16).reshape(2, 3)
    for layout in ALL_LAYOUTS:
        b = in_layout(a, layout)
        np.testing.assert_array_equal(b, a, strict=True)
    assert not in_layout(a, "readonly").flags.writeable
    assert in_layout(a, "fortran").flags.f_contiguous
    assert in_layout(a, "reversed").strides[0] < 0


# --------------------------------------------------------------------------- known bugs
# Each program ran wrong on the Numba backend: an elementwise result was written in place of
# a "dead" temporary that was really a view of an argument or of a result. The fix belongs
# in minijit/codegen and minijit/passes/plan_buffers.py; until it lands, these fail.


def _run(fn, args, other_args, reference, backend):
    """Run the aliasing harness (first, on fresh arguments), then compare with NumPy."""
    jf = mj.jit(fn, backend=backend)
    problems = [str(v) for v in check_aliasing(jf, args, other_args, distinct_outputs=True)]
    for name, a in (("args", args), ("other_args", other_args)):
        want = reference(*a)
        got = jf(*a)
        got, want = (got, want) if isinstance(want, tuple) else ((got,), (want,))
        for k, (g, w) in enumerate(zip(got, want)):
            if not np.allclose(np.asarray(g), w, rtol=1e-12, atol=0):
                problems.append(f"[value] result[{k}] for {name}: {np.asarray(g).tolist()}, "
                                f"NumPy gives {w.tolist()}")
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("backend", BACKENDS)
def test_elementwise_of_a_reshaped_argument_leaves_it_alone(backend):
    _run(lambda x, w: mnp.tanh(x.reshape(2, 3)) @ w,
         (np.arange(6.0), np.ones((3, 2))), (np.linspace(-1, 1, 6), np.eye(3, 2)),
         lambda x, w: np.tanh(x.reshape(2, 3)) @ w, backend)


@pytest.mark.parametrize("backend", BACKENDS)
def test_cond_passing_its_operand_through_leaves_it_alone(backend):
    _run(lambda p, x: mnp.sin(lax.cond(p, lambda v: v, lambda v: v * 2.0, x)).T,
         (True, np.arange(6.0).reshape(2, 3)), (True, np.ones((2, 3))),
         lambda p, x: np.sin(x if p else x * 2.0).T, backend)


@pytest.mark.parametrize("backend", BACKENDS)
def test_scan_carry_passed_through_leaves_the_argument_alone(backend):
    def reference(x, xs):
        return np.sin(x).reshape(3, 1)

    _run(lambda x, xs: mnp.sin(lax.scan(lambda c, v: (c, c * v), x, xs)[0]).reshape(3, 1),
         (np.arange(3.0), np.ones((2, 3))), (np.ones(3), np.zeros((2, 3))), reference, backend)


@pytest.mark.parametrize("shape", [(3, 1), (1, 3)])
@pytest.mark.parametrize("backend", BACKENDS)
def test_result_not_overwritten_through_its_reshape(backend, shape):
    def f(xnp, x):
        y = xnp.exp(x)
        return y, xnp.sin(xnp.reshape(y, (3,))).reshape(1, 3)

    _run(lambda x: f(mnp, x), (np.arange(3.0).reshape(shape),), (np.ones(shape),),
         lambda x: f(np, x), backend)


@pytest.mark.parametrize("backend", BACKENDS)
def test_while_loop_with_two_carries_that_are_one_array(backend):
    def body(c):
        i, a, b = c
        out = a * 2.0 + b
        return i + 1, out, out

    def f(x):
        _, a, b = lax.while_loop(lambda c: c[0] < 3, body, (0, x + 1.0, x + 1.0))
        return a, (mnp.sin(b) + 1.0).reshape(1, 3)

    def reference(x):
        a = b = x + 1.0
        for _ in range(3):
            a = b = a * 2.0 + b
        return a, (np.sin(b) + 1.0).reshape(1, 3)

    _run(f, (np.arange(3.0),), (np.ones(3),), reference, backend)


# --------------------------------------------------------------------------- the catalogue


def _dynamic(prog: Program, args: tuple) -> tuple:
    return tuple(a for i, a in enumerate(args) if i not in prog.static_argnums)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("prog", PROGRAMS, ids=[p.name for p in PROGRAMS])
def test_catalogue(prog: Program, backend: str):
    """Every program, its arguments in every layout: no violation of any kind."""
    jf = mj.jit(prog.minijit_fn(), static_argnums=prog.static_argnums, backend=backend)
    args, other = prog.make_args(0), prog.make_args(1)
    failures = []
    with np.errstate(all="ignore"):
        for layout in ALL_LAYOUTS:
            violations = check_aliasing(jf, relayout(args, layout), relayout(other, layout),
                                        protected=CONSTANTS,
                                        distinct_outputs=True)
            failures += [f"{layout}: {v}" for v in violations]
    assert not failures, "\n".join(failures)



def _one_new_array_twice_from_a_while(x):
    def body(c):  # CSE makes the two equal sums one array, handed to two carries
        return c[0] + c[1], c[0] + c[1], c[2] + 1
    a, b, _ = lax.while_loop(lambda c: c[2] < 2, body, (1.0, mnp.max(x), 0))
    return mnp.reshape(b, (1, -1)), a


def _one_new_array_twice_from_a_cond(x):
    def both(v):
        w = v * 2.0
        return w, w
    return lax.cond(mnp.sum(x) > 0, both, both, x)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("fun", [_one_new_array_twice_from_a_while,
                                 _one_new_array_twice_from_a_cond])
def test_control_flow_results_made_together_are_distinct_arrays(backend, fun):
    """A sub-Jaxpr handing one array it made to two results: the interpreter returned two
    results sharing memory (found by tests/fuzz.py, seed 1000, program 7477)."""
    x = np.arange(3.0)
    assert check_aliasing(mj.jit(fun, backend=backend), (x,), (x + 1.0,),
                          distinct_outputs=True) == []
