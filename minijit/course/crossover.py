"""When compiling pays off: total time against the number of calls (chapters 01 and 10).

A function called n times costs `first + n * per_call` in all: `first` is what its first call
costs beyond a later one (a compile, a trace), `per_call` what every later call costs. Plain
NumPy, the baseline, has no first call to pay for. A compiled version that is faster per call
catches up after enough calls, its *break-even* point; one that is not faster never does.

    costs = {"NumPy": Cost(0.0, 2e-3), "minijit": Cost(0.4, 5e-4)}
    break_even(costs["minijit"], costs["NumPy"])      # 267 calls
    draw_crossover(costs, calls=100, title="GELU")    # the totals, and their split at 100 calls

Chapter 01 draws a hand-written Numba loop and minijit's interpreter against NumPy, with the
break-even point at every array size beside it (`by_size=`); chapter 10 draws minijit's
compiled programs against NumPy, with the totals split at a number of calls (`calls=`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import NamedTuple

import matplotlib.pyplot as plt
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from minijit.course.timing import fmt_seconds

COLOURS = {"NumPy": "tab:green", "Numba": "tab:blue", "minijit": "tab:red", "JAX": "tab:purple"}
OTHER_COLOURS = ("tab:orange", "tab:gray", "tab:brown", "tab:olive")


class Cost(NamedTuple):
    """What calling a function costs, in seconds: its first call's extra, and each call."""

    first: float  # the first call minus a later one: compile, trace (0 for plain NumPy)
    per_call: float  # every call, the first included

    def total(self, calls: float) -> float:
        return self.first + calls * self.per_call


def break_even(cost: Cost, baseline: Cost) -> int | None:
    """The fewest calls n >= 1 from which on `cost`'s total never exceeds `baseline`'s, or
    None when no number of calls is enough (`cost` is slower per call, or as fast and dearer
    to start)."""
    gain = baseline.per_call - cost.per_call  # seconds saved by each call
    extra = cost.first - baseline.first  # seconds the first call costs more
    if gain < 0 or (gain == 0 and extra > 0):
        return None
    if extra <= 0:
        return 1
    return max(1, math.ceil(extra / gain))


def draw_crossover(costs: Mapping[str, Cost], *, title: str = "", calls: float | None = None,
                   by_size: Mapping[int, int | None] | None = None, size: int | None = None,
                   max_calls: float | None = None) -> Figure:
    """Total seconds against the number of calls, on log scales, for each entry of `costs`
    (the first is the baseline), a dot where each other one breaks even with the baseline.

    Beside it, with `by_size` ({array size: break-even calls or None}): the break-even point
    against the array size, `size` circled. Otherwise, with `calls`: the totals after that
    many calls (also a dashed line on the left), first call and calls stacked."""
    names = list(costs)
    baseline = costs[names[0]]
    evens = {name: break_even(costs[name], baseline) for name in names[1:]}
    right_panel = by_size is not None or calls is not None
    fig, axes = plt.subplots(1, 2 if right_panel else 1, figsize=(11 if right_panel else 7, 4),
                             squeeze=False, gridspec_kw={"width_ratios": [3, 2][:1 + right_panel]})
    left = axes[0][0]
    last = max_calls or _calls_to_show(evens.values(), calls)
    n = [10 ** (k * math.log10(last) / 199) for k in range(200)]
    for k, name in enumerate(names):
        cost = costs[name]
        label = name + (", first call included" if cost.first > 0 else "")
        left.loglog(n, [cost.total(c) for c in n], color=_colour(name, k), label=label)
    notes = []
    for k, name in enumerate(names[1:], start=1):
        calls_even = evens[name]
        if calls_even is not None and 1 < calls_even <= last:
            crossing = (costs[name].first - baseline.first) / (baseline.per_call
                                                                - costs[name].per_call)
            left.plot(crossing, baseline.total(crossing), "o", ms=8, color=_colour(name, k))
            notes.append(f"{name}: break-even at {calls_even:,} calls")
        elif calls_even == 1:
            notes.append(f"{name}: ahead from the first call")
        else:
            notes.append(f"{name}: never catches up" if calls_even is None
                         else f"{name}: break-even at {calls_even:,} calls, off the plot")
    left.text(0.98, 0.03, "\n".join(notes), transform=left.transAxes, ha="right", va="bottom",
              fontsize=9)
    if calls is not None:
        left.axvline(calls, color="black", lw=1, ls="--")
    left.set_xlabel("number of calls")
    left.set_ylabel("total seconds")
    left.set_title(title)
    left.legend(fontsize=9, loc="upper left")
    left.minorticks_off()  # log-scale minor ticks make a slider's redraws slow
    if by_size is not None:
        _draw_by_size(axes[0][1], by_size, size)
    elif calls is not None:
        _draw_split(axes[0][1], costs, int(round(calls)))
    fig.tight_layout()
    return fig


def _calls_to_show(evens, calls: float | None) -> float:
    """The right end of the calls axis: past every break-even point and the chosen calls,
    between a thousand and ten million calls."""
    far = max([c for c in evens if c is not None] + [calls or 1], default=1)
    return float(min(1e7, max(1e3, 10 ** math.ceil(math.log10(far) + 1))))


def _draw_by_size(ax: Axes, by_size: Mapping[int, int | None], size: int | None) -> None:
    sizes = [s for s, calls in by_size.items() if calls is not None]
    ax.loglog(sizes, [by_size[s] for s in sizes], "o-", color="tab:red")
    if size is not None and by_size.get(size) is not None:
        ax.plot(size, by_size[size], "o", ms=14, mfc="none", mec="black")
    missing = [s for s, calls in by_size.items() if calls is None]
    if missing:
        ax.text(0.02, 0.97, f"never, at {len(missing)} of {len(by_size)} sizes",
                transform=ax.transAxes, va="top", fontsize=9)
    ax.set_xlabel("array size (elements)")
    ax.set_ylabel("calls needed to break even")
    ax.set_title("break-even point")
    ax.grid(True, which="major", alpha=0.3)
    ax.minorticks_off()


def _draw_split(ax: Axes, costs: Mapping[str, Cost], calls: int) -> None:
    totals = {name: cost.total(calls) for name, cost in costs.items()}
    for k, (name, cost) in enumerate(costs.items()):
        colour = _colour(name, k)
        if cost.first > 0:
            ax.bar([name], [cost.first], color=colour, alpha=0.45)
        ax.bar([name], [calls * cost.per_call], bottom=[cost.first], color=colour)
        ax.text(k, totals[name], fmt_seconds(totals[name]), ha="center", va="bottom")
    ahead = min(totals, key=totals.get)
    ax.set_title(f"after {calls:,} call{'s' if calls != 1 else ''}: {ahead} is ahead")
    ax.set_ylim(0, 1.15 * max(totals.values()))
    ax.set_ylabel("total seconds (pale: the first call's extra)")


def _colour(name: str, k: int) -> str:
    for start, colour in COLOURS.items():
        if name.startswith(start):
            return colour
    return OTHER_COLOURS[k % len(OTHER_COLOURS)]
