"""Sibling fusion: kernels that read the same input share one loop (passes/fuse_siblings.py).

The pass is also in PIPELINE, so tests/test_passes.py runs it on the whole catalogue and on
random programs (values kept, typechecks, idempotent); these tests pin down its rule.
"""

from __future__ import annotations

import numpy as np

import minijit as mj
import minijit.numpy as mnp
from minijit.passes import fuse_elementwise, fuse_siblings, fused_p, run_passes


def _kernels(closed):
    return [e for e in closed.jaxpr.eqns if e.primitive is fused_p]


def _optimized(f, *args):
    return run_passes(mj.make_jaxpr(f)(*args), [fuse_elementwise, fuse_siblings])


def test_outputs_that_read_one_input_are_one_kernel():
    out = _optimized(lambda x: [x * (k + 1.5) + k for k in range(5)], np.ones(8))
    (kernel,) = _kernels(out)
    assert len(kernel.outvars) == 5 and len(kernel.invars) == 1
    assert [v for v in kernel.outvars] == list(out.jaxpr.outvars)


def test_single_equations_join_too():
    out = _optimized(lambda x: (x * 2.0, mnp.sin(x), x + 1.0), np.ones(8))
    assert len(out.jaxpr.eqns) == 1 and len(_kernels(out)[0].outvars) == 3


def test_siblings_of_other_shapes_or_inputs_stay_apart():
    out = _optimized(lambda x, y: (x * 2.0, y * 3.0, x[:4] + 1.0), np.ones(8), np.ones(8))
    assert len(out.jaxpr.eqns) == 4  # the slice, and three kernels of one equation each
    assert _kernels(out) == []


def test_a_group_whose_value_is_read_in_between_stays_where_it_is():
    def f(x):
        a = x * 2.0
        s = mnp.sum(a)  # reads a: a's kernel cannot move past this
        b = x + s
        return a, b

    out = _optimized(f, np.ones(8))
    assert len(_kernels(out)) == 1  # a's kernel and its sum; b stays alone
    assert [e.primitive.name for e in out.jaxpr.eqns] == ["fused", "add"]


def test_reductions_are_not_merged_with_their_siblings():
    out = _optimized(lambda x: (mnp.sum(mnp.sin(x)), mnp.cos(x)), np.ones(8))
    kinds = sorted(e.params["kind"] for e in _kernels(out))
    assert kinds == ["reduction"]  # cos stays one equation


def test_the_generated_code_has_one_loop_and_right_values():
    f = mj.jit(lambda x: [x * (k + 1.5) + k for k in range(20)], backend="numba")
    x = np.linspace(-1.0, 1.0, 33)
    text = f.lower(x).as_text()
    assert text.count("for i0 in range(") == 1
    for k, y in enumerate(f(x)):
        np.testing.assert_array_equal(y, x * (k + 1.5) + k)


def test_siblings_inside_a_loop_body_are_merged_too():
    def body(i, c):
        a, b = c
        return a * 0.5 + b, b * 0.25 - a

    f = mj.jit(lambda a, b: mj.lax.fori_loop(0, 3, body, (a, b)), backend="numba")
    a, b = np.linspace(0, 1, 5), np.linspace(1, 2, 5)
    want = (a, b)
    for _ in range(3):
        want = body(0, want)
    for got, w in zip(f(a, b), want):
        np.testing.assert_allclose(got, w, rtol=1e-15)


def test_many_outputs_of_one_shape_are_rows_of_one_buffer():
    """40 outputs: two sibling kernels (32 is the most one loop writes), whose outputs are
    rows of one buffer the caller allocates; each is a distinct array with the right values."""
    from minijit.codegen.lower import STACK_AT
    from minijit.passes.fuse_siblings import MAX_OUTPUTS

    k_outputs = 40
    f = mj.jit(lambda x: [x * (k + 1.5) + k for k in range(k_outputs)], backend="numba")
    x = np.linspace(-1.0, 1.0, 33)
    text = f.lower(x).as_text()
    assert k_outputs > MAX_OUTPUTS and k_outputs >= STACK_AT
    assert text.count("for i0 in range(") == 2
    assert "def entry(a, outs0):" in text and "outs0[39, i0] = " in text
    ys = f(x)
    assert len({id(y) for y in ys}) == k_outputs
    for k, y in enumerate(ys):
        np.testing.assert_array_equal(y, x * (k + 1.5) + k)
    rows = [np.asarray(y) for y in ys]
    assert not any(np.shares_memory(a, b) for a, b in zip(rows, rows[1:]))


def test_a_stacked_output_that_is_also_returned_twice_is_copied():
    f = mj.jit(lambda x: [x * (k + 1.5) for k in range(8)] + [x * 1.5], backend="numba")
    x = np.arange(4.0)
    ys = f(x)
    np.testing.assert_array_equal(ys[-1], x * 1.5)
    assert not np.shares_memory(ys[0], ys[-1])  # cse made them one value: returned twice
