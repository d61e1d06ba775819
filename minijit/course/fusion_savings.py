"""What fusion saves: the arrays a kernel moves through memory, fused and unfused, and its time
per element drawn against the size of its arrays (chapter 09, section 7, in the chapter's
optional part).

An elementwise kernel run one equation at a time, as minijit's interpreter runs it, reads
every array operand of each equation and writes each result: every intermediate value is a
temporary array, written to memory and read back. Compiled into one loop, the kernel reads
its inputs once and writes its outputs once; the intermediate values stay in registers.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from minijit.ir import Jaxpr, Var
from minijit.jit import make_jaxpr
from minijit.passes import run_passes


def kernel_of(fn: Callable, *args) -> Jaxpr:
    """The kernel (the sub-jaxpr) of the one `fused` equation that minijit's optimizer makes
    of `fn(*args)`. A ValueError if the optimized program is anything else."""
    eqns = run_passes(make_jaxpr(fn)(*args)).jaxpr.eqns
    if len(eqns) != 1 or "jaxpr" not in eqns[0].params or eqns[0].primitive.name != "fused":
        raise ValueError(f"{getattr(fn, '__name__', fn)} does not optimize to one fused "
                         f"equation: {[e.primitive.name for e in eqns]}")
    return eqns[0].params["jaxpr"]


def arrays_moved(kernel: Jaxpr, fused: bool) -> tuple[int, int]:
    """(arrays read or written, temporary arrays) for one run of `kernel`.

    Fused: its array inputs and outputs, once each, and no temporaries. Unfused: every array
    operand and every result of every equation; each result that is not an output of the
    kernel is a temporary. Scalars and literals are not arrays (they live in registers)."""
    def arrays(atoms) -> list[Var]:
        return [a for a in atoms if isinstance(a, Var) and a.aval.shape != ()]

    if fused:
        return len(arrays(kernel.invars)) + len(arrays(kernel.outvars)), 0
    moved = sum(len(arrays(e.invars)) + len(arrays(e.outvars)) for e in kernel.eqns)
    outputs = {id(v) for v in kernel.outvars}
    temps = sum(1 for e in kernel.eqns for v in arrays(e.outvars) if id(v) not in outputs)
    return moved, temps


def draw_per_element(times: Mapping[tuple, float], sizes: Sequence[int],
                     curves: Sequence[tuple[str, tuple, str, str]], title: str):
    """A log-log plot of nanoseconds per element against the array size n, one line per
    curve `(label, key, line style, colour)`, read from `times[(*key, n)]` (seconds per call)
    for each n in `sizes`. Returns the matplotlib figure (a notebook shows it)."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(9, 4.2))
    for label, key, style, colour in curves:
        per_element = [1e9 * times[(*key, n)] / n for n in sizes]
        ax.plot(sizes, per_element, "o" + style, color=colour, label=label)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("array size n (float64 elements)")
    ax.set_ylabel("nanoseconds per element")
    ax.set_title(title)
    # the legend goes beside the axes: the lines cross, and any corner inside hides some
    ax.legend(fontsize=9, loc="center left", bbox_to_anchor=(1.02, 0.5))
    ax.grid(True, which="major", alpha=0.3)
    fig.tight_layout()
    plt.close(fig)  # shown once, as the cell's value, not a second time by the inline backend
    return fig
