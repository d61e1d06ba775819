"""Padding inputs of varying length into a few sizes, "buckets" (chapter 04, section 5): the
bucket sizes, the picture of traces over a workload, and the slider over the bucket ratio.

The workload, the padding and the counting are the chapter's own (its `run`, which calls a
jitted function on every input, padded by a given bucket function, and returns the trace
count after each call); this module sizes the buckets and draws what `run` counted.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.figure import Figure

__all__ = ["bucket_explorer", "draw_traces", "geometric_buckets", "smallest_fitting"]


def geometric_buckets(ratio: float, smallest: int = 8, largest: int = 1000) -> np.ndarray:
    """Sizes from `smallest` up, each `ratio` times the one before (rounded up, and at least
    one more), until one holds `largest`: strictly increasing, the last >= `largest`."""
    sizes = [smallest]
    while sizes[-1] < largest:
        sizes.append(max(sizes[-1] + 1, int(np.ceil(sizes[-1] * ratio))))
    return np.array(sizes)


def smallest_fitting(sizes: Sequence[int]) -> Callable[[int], int]:
    """The bucket function of `sizes` (increasing): n -> the smallest size that holds n."""
    sizes = np.asarray(sizes)
    return lambda n: int(sizes[np.searchsorted(sizes, n)])


def draw_traces(curves: Mapping[str, np.ndarray], *, n_calls: int | None = None,
                title: str = "Retraces on a workload of varying lengths",
                ymax: float | None = None) -> Figure:
    """One line per workload: the number of traces so far (cache misses) after each call,
    for the first `n_calls` calls (all by default). Returned, not shown by pyplot."""
    fig, ax = plt.subplots(figsize=(7, 3.5))
    plt.close(fig)  # a notebook shows the returned figure once, as the cell's value
    for label, traces in curves.items():
        shown = traces[:n_calls] if n_calls else traces
        ax.plot(np.arange(1, len(shown) + 1), shown, label=label)
    ax.set_xlabel("calls")
    ax.set_ylabel("traces (cache misses)")
    if ymax is not None:
        ax.set_ylim(0, ymax)
    ax.set_title(title)
    ax.legend(loc="upper left")
    fig.tight_layout()
    return fig


def bucket_explorer(run: Callable, lengths: np.ndarray, traces_exact: np.ndarray,
                    ratios: Sequence[float] = (1.1, 1.25, 1.5, 2.0, 3.0, 4.0)) -> None:
    """Sliders for the ratio between bucket sizes and the number of calls shown: the traces
    of `run(bucket)` next to those without buckets (`traces_exact`), and the padding it
    costs. `run` is called again, on the whole workload, each time the ratio moves."""
    from IPython.display import display  # the course extra: only where a notebook runs
    from ipywidgets import IntSlider, SelectionSlider, interact

    total = len(lengths)

    def show(ratio: float, n_calls: int) -> None:
        sizes = geometric_buckets(ratio)
        bucket = smallest_fitting(sizes)
        traces, _ = run(bucket)
        padded = np.array([bucket(n) for n in lengths[:n_calls]])
        overhead = padded.sum() / lengths[:n_calls].sum() - 1
        display(draw_traces(
            {f"exact shapes: {traces_exact[n_calls - 1]} traces": traces_exact,
             f"{len(sizes)} buckets, ratio {ratio}: {traces[n_calls - 1]} traces": traces},
            n_calls=n_calls, ymax=traces_exact[-1] + 5,
            title=f"padding overhead with these buckets: {overhead:.0%} more elements"))

    interact(show,
             ratio=SelectionSlider(options=list(ratios), value=2.0, description="bucket ratio"),
             n_calls=IntSlider(value=total, min=20, max=total, step=20, description="calls"))
