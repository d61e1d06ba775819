"""The course's lesson helpers of chapters 03, 04, 05 and 09: buckets, the captured operands
of control flow, Newton's error, what fusion saves, the distance in ulps. Checked on what
they compute, and on drawing without error (matplotlib's Agg backend), never on timings."""

from __future__ import annotations

import numpy as np
import pytest

import minijit as mj
import minijit.numpy as mnp
from minijit import lax

matplotlib = pytest.importorskip("matplotlib")
matplotlib.use("Agg")

from minijit.course.buckets import draw_traces, geometric_buckets, smallest_fitting  # noqa: E402
from minijit.course.captures import draw_captures, operand_arrows  # noqa: E402
from minijit.course.fusion_savings import arrays_moved, kernel_of  # noqa: E402
from minijit.course.newton import draw_error, draw_worst_error, relative_error  # noqa: E402
from minijit.course.promotion import show_promotion  # noqa: E402
from minijit.course.ulp import ulp_distance  # noqa: E402


@pytest.mark.parametrize("ratio", [1.01, 1.5, 2.0])
def test_geometric_buckets_increase_and_hold_the_largest(ratio):
    sizes = geometric_buckets(ratio, smallest=8, largest=1000)
    assert sizes[0] == 8 and sizes[-1] >= 1000 and sizes[-2] < 1000
    assert np.all(np.diff(sizes) >= 1)
    fit = smallest_fitting(sizes)
    for n in (1, 8, 9, 500, 1000):
        bucket = fit(n)
        assert bucket >= n and bucket in sizes
        assert not any(n <= s < bucket for s in sizes)


def test_draw_traces_draws_one_line_per_workload():
    draw_traces({"exact": np.arange(1, 11), "bucketed": np.minimum(np.arange(1, 11), 3)},
                n_calls=10)


def _pull_towards(x, y):
    def body(v):
        return lax.cond(mnp.sum(v) > 0, lambda u: u - y, lambda u: u + y, v)

    return lax.while_loop(lambda v: mnp.abs(mnp.sum(v)) > 1.0, body, x)


def test_operand_arrows_mark_the_captured_value_at_every_depth():
    closed = mj.make_jaxpr(_pull_towards)(np.full(3, 10.0), np.ones(3))
    arrows = operand_arrows(closed)
    assert arrows and any(a.captured for a in arrows) and any(not a.captured for a in arrows)
    depths = {a.eqn.count("/") for a in arrows}
    assert len(depths) >= 2  # the while's operands, and the cond's inside its body
    fig = draw_captures(closed, title="pull_towards")
    assert fig.axes


def test_relative_error_and_its_pictures():
    values = np.array([0.25, 4.0, 100.0])
    approx = np.sqrt(values) * (1 + np.array([0.0, 1e-3, -1e-6]))
    np.testing.assert_allclose(relative_error(approx, values), [0.0, 1e-3, 1e-6], rtol=1e-9)
    assert draw_worst_error([0, 1, 2], [1.0, 0.1, 0.01], values=values).axes
    fig = draw_error(values, approx, 3, traces=1)
    assert "33% of the values converged" in fig.axes[0].get_title()  # only 0.25 is exact


def test_kernel_of_and_the_arrays_fusion_saves():
    def gelu(x):
        return 0.5 * x * (1.0 + mnp.tanh(0.79788456 * (x + 0.044715 * x * x * x)))

    kernel = kernel_of(gelu, np.ones(8))
    moved_fused, temps_fused = arrays_moved(kernel, fused=True)
    moved, temps = arrays_moved(kernel, fused=False)
    assert (moved_fused, temps_fused) == (2, 0)  # reads x once, writes the result once
    assert temps == sum(1 for e in kernel.eqns if e.outvars[0].aval.shape) - 1
    assert moved > moved_fused
    with pytest.raises(ValueError, match="one fused equation"):
        kernel_of(lambda x: mnp.sum(x) * x, np.ones(8))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_ulp_distance_counts_floats_between(dtype):
    x = np.array([1.0, -2.0, 0.0, 1e-30], dtype)
    up = np.nextafter(x, np.array(np.inf, dtype))
    np.testing.assert_array_equal(ulp_distance(x, up), [1, 1, 1, 1])
    np.testing.assert_array_equal(ulp_distance(x, x), 0)
    assert ulp_distance(np.array([-0.0], dtype), np.array([0.0], dtype))[0] == 0
    tiny = np.array([np.finfo(dtype).smallest_subnormal], dtype)
    assert ulp_distance(-tiny, tiny)[0] == 2  # -tiny, 0, tiny
    with pytest.raises(TypeError, match="one dtype"):
        ulp_distance(np.ones(1, np.float32), np.ones(1))


def test_show_promotion_prints_both_libraries(capsys):
    show_promotion("int32", "+", "Python float 0.5")
    printed = capsys.readouterr().out
    assert "minijit" in printed and "NumPy" in printed and "float" in printed
