"""Pictures of Newton's method for square roots converging (chapter 05, section 4): the worst
relative error after each number of iterations, and a slider over the iterations that shows
the error for every x.

`solve(values, iterations)` is the chapter's jitted `fori_loop`; the slider calls it with a
new iteration count each time it moves, and shows its trace count, which a traced loop
bound keeps where it is.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.figure import Figure

__all__ = ["draw_error", "draw_worst_error", "newton_explorer", "relative_error"]

EPS = np.finfo(np.float64).eps
FLOOR = 1e-17  # an exact answer (error 0) is drawn here, below float64's epsilon


def relative_error(approx: np.ndarray, values: np.ndarray) -> np.ndarray:
    """|approx - sqrt(values)| / sqrt(values), elementwise."""
    exact = np.sqrt(values)
    return np.abs(approx - exact) / exact


def draw_worst_error(iterations: Sequence[int], worst: Sequence[float], *,
                     values: np.ndarray) -> Figure:
    """The largest relative error over `values` after each number of `iterations`, on a log
    scale, with float64's machine epsilon for reference. Returned, not shown by pyplot."""
    fig, ax = plt.subplots(figsize=(7, 3.5))
    plt.close(fig)  # a notebook shows the returned figure once, as the cell's value
    ax.semilogy(iterations, np.maximum(worst, FLOOR), "o-")
    ax.axhline(EPS, ls="--", color="gray", label="float64 machine epsilon")
    ax.set_xlabel("Newton iterations")
    ax.set_ylabel("largest relative error")
    ax.set_title(f"sqrt by Newton on {values.size} values from {values.min():g} to "
                 f"{values.max():g}")
    ax.legend()
    fig.tight_layout()
    return fig


def draw_error(values: np.ndarray, approx: np.ndarray, iterations: int, *,
               traces: int | None = None) -> Figure:
    """The relative error of `approx` for every x in `values` (log-log), the share of values
    within 4 epsilons in the title, and `traces` (the solver's trace count) if given."""
    error = relative_error(approx, values)
    fig, ax = plt.subplots(figsize=(7, 3.5))
    plt.close(fig)
    ax.loglog(values, np.maximum(error, FLOOR), label=f"after {iterations} iterations")
    ax.axhline(EPS, ls="--", color="gray", label="machine epsilon")
    ax.set_ylim(FLOOR, 1e4)
    ax.set_xlabel("x")
    ax.set_ylabel("relative error of sqrt(x)")
    title = f"{iterations} iterations: {np.mean(error <= 4 * EPS):.0%} of the values converged"
    ax.set_title(title + (f"; traces of the solver: {traces}" if traces is not None else ""))
    ax.legend(loc="upper left")
    fig.tight_layout()
    return fig


def newton_explorer(solve: Callable, values: np.ndarray, *, start: int = 4,
                    most: int = 20) -> None:
    """A slider over the number of iterations, from 0 to `most`: `draw_error` of
    `solve(values, iterations)`, with `solve.trace_count` in the title."""
    from IPython.display import display  # the course extra: only where a notebook runs
    from ipywidgets import IntSlider, interact

    def show(iterations: int) -> None:
        approx = solve(values, iterations)
        display(draw_error(values, np.asarray(approx), iterations,
                           traces=getattr(solve, "trace_count", None)))

    interact(show, iterations=IntSlider(value=start, min=0, max=most, description="iterations"))
