"""Chapter 04 (jit and the cache): static arguments, and stopping recompiles.

- ``ex04_static_args`` (dynamic control flow, the book's ConcretizationTypeError): make one
  argument static by number (``static_argnums``) and one by name (``static_argnames``; the
  parameter is keyword-only, so a number cannot name it). The probe checks the values and
  that each new static value traces exactly once.
- ``ex04_buckets`` (shape changes recompile): ``pad_to_bucket(x)`` pads to the next power of
  two (at least 8) and returns a mask. Graded by counting traces: the probe jits its own
  masked mean (a fresh function each time, so nothing the notebook cached counts) and feeds
  it the learner's padded arrays.
"""

from __future__ import annotations

import numpy as np

from minijit.grading.cases import Case, Exercise, Hint
from minijit.grading.probing import get

# ------------------------------------------------------------------------ ex04_static_args


def probe_static_args(ns, name, x, static_values, keyword):
    f = get(ns, name)
    if not hasattr(f, "trace_count") or not hasattr(f, "clear_cache"):
        raise TypeError(f"{name} must be a function made by mj.jit(...)")
    f.clear_cache()  # only the probe's own calls count
    before = f.trace_count
    x = np.asarray(x, dtype=np.float64)
    if keyword:
        values = [np.asarray(f(x, **{keyword: v})) for v in static_values]
    else:
        values = [np.asarray(f(x, v)) for v in static_values]
    return {"values": values, "traces": f.trace_count - before}


def _reference_static_args():
    import minijit as mj

    def sum_first(x, n):
        result = 0.0
        for i in range(n):
            result += x[i]
        return result

    def repeat_add(x, *, times):
        out = x
        for _ in range(times - 1):
            out = out + x
        return out

    return {"sum_first_jit": mj.jit(sum_first, static_argnums=1),
            "repeat_add_jit": mj.jit(repeat_add, static_argnames="times")}


# ------------------------------------------------------------------------ ex04_buckets


def probe_buckets(ns, lengths):
    import minijit as mj
    import minijit.numpy as mnp

    pad = get(ns, "pad_to_bucket")
    traces = []

    def masked_mean(x, mask):
        traces.append(x.shape)  # runs once per trace, never on a cache hit
        return mnp.sum(x * mask) / mnp.sum(mask)

    kernel = mj.jit(masked_mean)
    means, shapes = [], []
    for n in lengths:
        x = np.arange(1.0, n + 1.0)
        padded, mask = pad(x)
        padded, mask = np.asarray(padded), np.asarray(mask)
        shapes.append(list(padded.shape))
        means.append(float(kernel(padded, mask)))
    return {"means": means, "padded_shapes": shapes, "traces": len(traces)}


def _reference_pad_to_bucket(x):
    size = max(8, 1 << (len(x) - 1).bit_length())
    padded = np.zeros(size, dtype=x.dtype)
    padded[: len(x)] = x
    mask = np.zeros(size)
    mask[: len(x)] = 1.0
    return padded, mask


EXERCISES = [
    Exercise(
        id="ex04_static_args", points=2, title="Static arguments, by number and by name",
        chapter="04_jit_and_the_cache", section="3. Static and dynamic arguments",
        hint=Hint(
            pitfall=("range(n) needs a concrete Python int, but jit traces every argument it "
                     "is not told is static. A static argument is part of the cache key: each "
                     "new value traces once, a value seen before does not."),
            code=("mj.jit(f, static_argnums=...) names static parameters by position, "
                  "mj.jit(f, static_argnames=...) by name; a keyword-only parameter has no "
                  "position.")),
        probe=probe_static_args,
        reference=_reference_static_args,
        public=(
            Case("sum_first_jit, n = 2, 2, 4",
                 ("sum_first_jit", [1.0, 2.0, 3.0, 4.0], [2, 2, 4], None)),
            Case("repeat_add_jit, times = 3, 3",
                 ("repeat_add_jit", [1.0, -1.0], [3, 3], "times")),
        ),
        hidden=(
            Case("sum_first_jit, n = 1, 3, 1, 3, 5",
                 ("sum_first_jit", [0.5, 1.5, 2.5, 3.5, 4.5], [1, 3, 1, 3, 5], None)),
            Case("repeat_add_jit, times = 1, 2, 5, 2",
                 ("repeat_add_jit", [2.0, 0.25, -3.0], [1, 2, 5, 2], "times")),
        ),
        error_hints={
            "TracerIntegerConversionError": (
                "range() received a tracer: the argument is still dynamic. Pass "
                "static_argnums (by position) or static_argnames (by name) to mj.jit."),
            "ValueError": ("static_argnums counts positional parameters only; a keyword-only "
                           "parameter must be named with static_argnames."),
        },
    ),
    Exercise(
        id="ex04_buckets", points=2, title="Pad into buckets to stop recompiles",
        chapter="04_jit_and_the_cache", section="5. Padding into buckets to stop recompiles",
        hint=Hint(
            pitfall=("Every new length is a new shape and a new trace: pad to a few sizes "
                     "only (the next power of two, never below 8), and return a mask with 1.0 "
                     "on the real entries and 0.0 on the padding, so that the masked mean "
                     "does not change."),
            code=("1 << (n - 1).bit_length() is the next power of two of n (n itself when it "
                  "is one); np.zeros(size) then padded[:n] = x fills the bucket.")),
        probe=probe_buckets,
        reference=lambda: {"pad_to_bucket": _reference_pad_to_bucket},
        public=(
            Case("lengths 3, 5, 8", ([3, 5, 8],)),
            Case("lengths 9 to 16", (list(range(9, 17)),)),
        ),
        hidden=(
            Case("lengths 1 to 40", (list(range(1, 41)),)),
            Case("powers of two and one past", ([16, 17, 32, 33, 64, 65],)),
            Case("a long one", ([1000, 3, 513],)),
        ),
    ),
]
