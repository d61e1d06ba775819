"""How often the Python code of a jitted function runs, next to how often a staged
`debug.callback` runs, over a stream of calls: a plot and a slider (chapter 06, section 2).

The function is the chapter's own: `make()` returns a freshly jitted function (an empty
cache, so every run starts from nothing) and the dict of counts its body and its callback
add to. Here it is only called and drawn.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

__all__ = ["count_runs", "plot_run_counts", "run_counts_slider"]

Make = Callable[[], tuple[Callable, dict[str, int]]]


def count_runs(make: Make, lengths: Sequence[int]) -> tuple[dict[str, list[int]], int]:
    """Call a new `make()` function on `np.ones(n)` for each `n` of `lengths`; return each
    count as it stood after every call, and the function's number of traces."""
    jitted, counts = make()
    history: dict[str, list[int]] = {name: [] for name in counts}
    for n in lengths:
        jitted(np.ones(int(n)))
        for name, count in counts.items():
            history[name].append(count)
    return history, jitted.trace_count


def plot_run_counts(make: Make, stream: Sequence[int], n_calls: int):
    """The counts over the first `n_calls` calls of `stream`, one step line per count; the
    axes fit the whole stream, so moving the slider does not rescale them."""
    import matplotlib.pyplot as plt

    lengths = [int(n) for n in stream[:n_calls]]
    history, traces = count_runs(make, lengths)
    calls = np.arange(1, n_calls + 1)
    fig, ax = plt.subplots(figsize=(7, 3.5))
    for name, counts in history.items():
        ax.step(calls, counts, where="post", label=name)
    ax.set_xlim(0, len(stream) + 1)
    ax.set_ylim(0, len(stream) + 1)
    ax.set_xlabel("calls")
    ax.set_ylabel("times run")
    ax.set_title(f"{n_calls} calls, {traces} traces; lengths seen: {sorted(set(lengths))}")
    ax.legend(loc="upper left")
    fig.tight_layout()
    plt.show()


def run_counts_slider(make: Make, stream: Sequence[int], value: int = 20):
    """`plot_run_counts` under a slider for the number of calls (1 to the whole stream)."""
    from ipywidgets import IntSlider, interactive

    return interactive(lambda calls: plot_run_counts(make, stream, calls),
                       calls=IntSlider(value=value, min=1, max=len(stream), description="calls"))
