"""Where the time goes, per jitted function and per cache entry (chapter 06).

Every cache entry records how long its trace, optimization, code generation and compilation
took, and how many calls it served. With `config.update("profile_execution", True)` it also
times each call (off by default: reading the clock twice per call is a large share of a
cached call on the Numba backend, as chapter 06 measures), and `per_call_us` is the mean
over the timed calls. `profile(f)` returns those rows;
`plot_profile(f)` draws them, so a learner sees at a glance whether a function is dominated
by compiling (retracing too often) or by running.
"""

from __future__ import annotations

from dataclasses import dataclass

STAGES = ("trace", "optimize", "codegen", "compile")


@dataclass(frozen=True)
class ProfileRow:
    signature: str
    trace_s: float
    optimize_s: float
    codegen_s: float
    compile_s: float
    calls: int
    execute_s: float  # time spent running the calls made while profile_execution was on
    timed_calls: int = 0

    @property
    def first_call_s(self) -> float:
        return self.trace_s + self.optimize_s + self.codegen_s + self.compile_s

    @property
    def per_call_us(self) -> float:
        return 1e6 * self.execute_s / self.timed_calls if self.timed_calls else 0.0


def profile(jitted) -> list[ProfileRow]:
    """One row per cache entry of `jitted` (a `minijit.jit` function), oldest first."""
    rows = []
    for entry in jitted.cache_entries():
        t = entry.timings
        rows.append(ProfileRow(
            jitted._signature(entry.split), t.get("trace", 0.0), t.get("optimize", 0.0),
            t.get("codegen", 0.0), t.get("compile", 0.0), entry.calls, entry.execute_s,
            entry.timed_calls,
        ))
    return rows


def format_profile(jitted) -> str:
    """The profile as a plain-text table (milliseconds, except per-call microseconds)."""
    header = (f"{'signature':<40} {'trace':>8} {'optim':>8} {'codegen':>8} {'compile':>8} "
              f"{'calls':>7} {'run tot':>9} {'per call':>10}")
    lines = [header, "-" * len(header)]
    rows = profile(jitted)
    for r in rows:
        run = (f"{1e3 * r.execute_s:>8.2f}m {r.per_call_us:>8.1f}us" if r.timed_calls
               else f"{'-':>9} {'-':>10}")
        lines.append(
            f"{r.signature[:40]:<40} {1e3 * r.trace_s:>7.2f}m {1e3 * r.optimize_s:>7.2f}m "
            f"{1e3 * r.codegen_s:>7.2f}m {1e3 * r.compile_s:>7.2f}m {r.calls:>7d} {run}"
        )
    if any(r.calls > r.timed_calls for r in rows):
        lines.append("(run times count only calls made while "
                     "minijit.config.update('profile_execution', True) is on)")
    return "\n".join(lines)


def plot_profile(jitted, ax=None):
    """A stacked horizontal bar per cache entry: compile stages, then time spent running."""
    import matplotlib.pyplot as plt

    rows = profile(jitted)
    if ax is None:
        _, ax = plt.subplots(figsize=(8, 1.8 + 0.5 * len(rows)))
    labels = [r.signature for r in rows]
    left = [0.0] * len(rows)
    parts = [(s, [1e3 * getattr(r, f"{s}_s") for r in rows]) for s in STAGES]
    parts.append(("execute", [1e3 * r.execute_s for r in rows]))
    for name, widths in parts:
        ax.barh(labels, widths, left=left, label=name)
        left = [a + b for a, b in zip(left, widths)]
    ax.set_xlabel("milliseconds")
    ax.set_title(f"where the time goes: {jitted.spec.fun_name}")
    ax.invert_yaxis()
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize="small")
    ax.figure.tight_layout()
    return ax
