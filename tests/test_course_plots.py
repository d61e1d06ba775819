"""The course modules behind chapters 01 and 10's plots, tables and JAX comparison:
`minijit.course.crossover`, `minijit.course.tables` and `minijit.course.on_jax`.

Deterministic: costs are made-up numbers, and no test asserts anything about a time measured.
"""

from __future__ import annotations

import math

import matplotlib
import numpy as np
import pytest

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

import minijit.numpy as mnp  # noqa: E402 - the names a program's text uses, as in chapter 10
from minijit import lax  # noqa: E402
from minijit.course import on_jax  # noqa: E402
from minijit.course.crossover import Cost, break_even, draw_crossover  # noqa: E402
from minijit.course.tables import html_table  # noqa: E402

NUMPY = Cost(0.0, 2e-3)


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


# --------------------------------------------------------------------------- break_even


def test_break_even_is_the_first_whole_call_from_which_the_total_is_no_larger():
    jitted = Cost(0.4, 5e-4)
    n = break_even(jitted, NUMPY)
    assert n == math.ceil(0.4 / 1.5e-3) == 267
    assert jitted.total(n) <= NUMPY.total(n) and jitted.total(n - 1) > NUMPY.total(n - 1)


def test_break_even_is_none_when_not_faster_per_call():
    assert break_even(Cost(0.1, 2e-3), NUMPY) is None  # as fast, but dearer to start
    assert break_even(Cost(0.1, 3e-3), NUMPY) is None  # slower
    assert break_even(Cost(0.0, 3e-3), NUMPY) is None  # ahead at first, behind for good later


def test_break_even_is_one_call_when_ahead_from_the_start():
    assert break_even(Cost(0.0, 1e-3), NUMPY) == 1
    assert break_even(Cost(0.0, 2e-3), NUMPY) == 1
    assert break_even(Cost(1e-4, 1e-3), NUMPY) == 1  # the first call already pays it back


def test_break_even_agrees_with_the_totals_on_many_costs():
    rng = np.random.default_rng(0)
    for first, per, base in rng.uniform(1e-6, 1.0, size=(200, 3)):
        n = break_even(Cost(first, per), Cost(0.0, base))
        if n is None:
            assert per >= base
        else:
            assert first + n * per <= n * base * (1 + 1e-12)
            assert n == 1 or first + (n - 1) * per > (n - 1) * base * (1 - 1e-12)


def test_a_cost_totals_its_first_call_and_its_calls():
    assert Cost(1.0, 0.5).total(4) == 3.0


# --------------------------------------------------------------------------- draw_crossover


def texts(ax) -> str:
    return " | ".join(t.get_text() for t in ax.texts)


def test_chapter_10s_figure_lines_dot_and_split_at_the_chosen_calls():
    costs = {"NumPy": NUMPY, "minijit": Cost(0.4, 5e-4)}
    fig = draw_crossover(costs, title="GELU", calls=100)
    left, right = fig.axes
    assert [line.get_label() for line in left.lines[:2]] == [
        "NumPy", "minijit, first call included"]
    assert "minijit: break-even at 267 calls" in texts(left)
    (dot,) = [line for line in left.lines if line.get_marker() == "o"]
    assert dot.get_xdata()[0] == pytest.approx(0.4 / 1.5e-3)
    assert any(line.get_linestyle() == "--" and line.get_xdata()[0] == 100
               for line in left.lines)
    assert right.get_title() == "after 100 calls: NumPy is ahead"
    assert left.get_title() == "GELU" and left.get_xscale() == "log"


def test_the_split_names_the_one_ahead_after_enough_calls():
    fig = draw_crossover({"NumPy": NUMPY, "minijit": Cost(0.4, 5e-4)}, calls=1000)
    assert fig.axes[1].get_title() == "after 1,000 calls: minijit is ahead"


def test_chapter_01s_figure_has_the_break_even_point_by_size():
    costs = {"NumPy": NUMPY, "Numba (njit)": Cost(0.1, 1e-3),
             "minijit (interpreter)": Cost(1e-3, 3e-3)}
    by_size = {10: 30_000, 100: 40_000, 1000: None, 10_000: None}
    fig = draw_crossover(costs, title="GELU on 100 elements", by_size=by_size, size=100)
    left, right = fig.axes
    assert "Numba (njit): break-even at 100 calls" in texts(left)
    assert "minijit (interpreter): never catches up" in texts(left)
    curve, circle = right.lines
    assert list(curve.get_xdata()) == [10, 100] and list(curve.get_ydata()) == [30_000, 40_000]
    assert (circle.get_xdata()[0], circle.get_ydata()[0]) == (100, 40_000)
    assert "never, at 2 of 4 sizes" in texts(right)


def test_without_a_right_panel_one_axes():
    fig = draw_crossover({"NumPy": NUMPY, "minijit": Cost(0.0, 1e-3)})
    assert len(fig.axes) == 1
    assert "minijit: ahead from the first call" in texts(fig.axes[0])


def test_the_calls_axis_reaches_past_the_break_even_point():
    fig = draw_crossover({"NumPy": NUMPY, "minijit": Cost(10.0, 1e-3)})  # 10,000 calls
    assert max(fig.axes[0].lines[0].get_xdata()) >= 10 * 10_000


# --------------------------------------------------------------------------- html_table


def test_html_table_escapes_cells_and_breaks_heading_lines():
    text = html_table(["program", "per call\nNumPy"], [["a < b & c", 3]])
    assert "<th>per call<br>NumPy</th>" in text
    assert "<td>a &lt; b &amp; c</td><td>3</td>" in text
    assert text.startswith("<table>") and text.endswith("</table>")


def test_html_table_refuses_a_row_of_the_wrong_length():
    with pytest.raises(ValueError, match="a row of 1 cells under 2 headings"):
        html_table(["a", "b"], [["only one"]])


# --------------------------------------------------------------------------- on_jax


def test_xla_threads_reads_the_outer_dimension_partitions():
    text = ('%a = f64[8]{0} fusion(%x), kind=kLoop, calls=%c, backend_config='
            '{"outer_dimension_partitions":["2"]}\n'
            '%b = f64[8,8]{1,0} fusion(%a), kind=kLoop, calls=%d, backend_config='
            '{"outer_dimension_partitions":["2","3"]}\n')
    assert on_jax.xla_threads(text) == 6
    assert on_jax.xla_threads("%a = f64[8]{0} fusion(%x), kind=kLoop, calls=%c") == 1


def test_the_recorded_jax_figures_say_where_and_hold_every_case():
    assert "recorded on" in on_jax.RECORDED_JAX["where"]
    assert "JAX 0.10.2" in on_jax.RECORDED_JAX["where"]
    cases = on_jax.RECORDED_JAX["cases"]
    assert set(cases) == {"GELU, f64[1000000]", "softmax, f64[1000,500]",
                          "Mandelbrot, f64[200,300]", "Newton, f64[1000000]", "GELU, f64[1000]"}
    for figures in cases.values():
        assert set(figures) == {"first call", "per call", "NumPy", "returned", "ready", "threads"}
        assert figures["returned"] <= figures["ready"]
    assert "JAX 0.10.2" in on_jax.RECORDED_SOFTMAX_KERNELS["where"]
    assert len(on_jax.RECORDED_SOFTMAX_KERNELS["kernels"]) == 4


def program(x):
    """A chapter-10-like program: `mnp` and `lax` are this module's globals."""

    def step(i, y):
        return y * 0.5 + mnp.tanh(x)

    return lax.fori_loop(0, 3, step, x)


def test_as_jax_runs_the_same_text_on_jax():
    jax = pytest.importorskip("jax")
    x = np.linspace(-1.0, 1.0, 5)
    theirs = on_jax.as_jax(program)
    assert theirs.__globals__["mnp"] is jax.numpy and program.__globals__["mnp"] is mnp
    result = jax.jit(theirs)(x)
    assert isinstance(result, jax.Array) and result.dtype == np.float64  # 64-bit mode on
    np.testing.assert_allclose(np.asarray(result), np.asarray(program(x)), rtol=1e-12)
    assert "fusion" in on_jax.compiled_text(program, x)


def test_measure_jax_gives_every_figure():
    pytest.importorskip("jax")
    figures = on_jax.measure_jax(program, np.ones(10), against={"NumPy": np.tanh})
    assert set(figures) == {"first call", "per call", "NumPy", "returned", "ready", "threads"}
    assert figures["threads"] >= 1
