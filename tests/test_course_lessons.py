"""The course's lesson helpers of chapters 06 and 07: the dead-code walk and its picture, the
run counter and the cost of profiling. Checked on their structure and against minijit's own
passes, never on timings."""

from __future__ import annotations

import numpy as np
import pytest

import minijit as mj
import minijit.numpy as mnp
from minijit.course.dead_code import backward_walk, dead_keys, draw_dead_code, walk_table
from minijit.course.profile_cost import measure
from minijit.course.run_counts import count_runs
from minijit.passes import dce

pytest.importorskip("matplotlib")


def _leftovers(x):
    unused = mnp.exp(x) * 2.0  # noqa: F841 - dead: nothing reads it
    c = mnp.cos(x)
    mj.debug.print("c = {}", c)  # an effect: kept, and so is what it reads
    return mnp.sin(x) + 1.0, c


def test_the_walk_keeps_what_minijits_dce_keeps():
    closed = mj.make_jaxpr(_leftovers)(np.ones(3))
    start, steps = backward_walk(closed)
    assert len(steps) == len(closed.jaxpr.eqns)
    kept = sum(step.kept for step in steps)
    assert kept == len(dce(closed).jaxpr.eqns)
    assert [step.kept for step in steps].count(False) == 2  # exp and its mul
    assert any(step.effect and step.kept for step in steps)
    assert "a" in steps[-1].live  # the input: the equations kept read it
    assert len(start) == 2 and "a" not in start  # the walk starts from the two outputs


def test_walk_table_has_a_row_per_equation_last_first():
    closed = mj.make_jaxpr(_leftovers)(np.ones(3))
    table = walk_table(closed)
    _, steps = backward_walk(closed)
    for step in steps:
        assert step.text in table
    assert table.index(steps[0].text) < table.index(steps[-1].text)


def test_dead_keys_look_inside_kept_loops():
    def body(i, carry):
        unused = carry * 3.0  # noqa: F841 - dead, inside the body
        return carry + 1.0

    closed = mj.make_jaxpr(lambda x: mj.lax.fori_loop(0, 3, body, x))(np.ones(2))
    keys = dead_keys(closed)
    assert keys and all("/" in k for k in keys)  # only inside the loop body


def test_draw_dead_code_returns_a_figure_with_veils():
    closed = mj.make_jaxpr(_leftovers)(np.ones(3))
    fig = draw_dead_code(closed, title="leftovers")
    assert fig.axes and len(fig.axes[0].patches) > len(dead_keys(closed))


def test_count_runs_counts_traces_and_body_runs():
    def make():
        counts = {"body": 0}

        def f(x):
            counts["body"] += 1
            return x * 2

        return mj.jit(f), counts

    history, traces = count_runs(make, [3, 4, 3, 5, 3])
    assert traces == 3 and history["body"] == [1, 2, 2, 3, 3]


def test_profiling_cost_measures_both_settings():
    seconds = measure(size=4, calls=3, rounds=3)
    assert set(seconds) == {"off", "on"} and all(s > 0 for s in seconds.values())
    assert mj.config.profile_execution is False  # switched back off
