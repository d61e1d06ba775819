"""Chapter 01 (why JIT): when does compiling pay off?

``ex01_break_even``: the learner writes ``calls_to_break_even(compile_s, eager_s, jitted_s)``,
the number of calls after which a jitted function has cost less in total than the plain one
(section 3, "When a JIT does not pay off"). Pure arithmetic, graded on hidden timings.
"""

from __future__ import annotations

import math

from minijit.grading.cases import Case, Exercise, Hint
from minijit.grading.probing import get


def probe_break_even(ns, compile_s, eager_s, jitted_s):
    n = get(ns, "calls_to_break_even")(compile_s, eager_s, jitted_s)
    # An int-valued float (56.0) is an acceptable answer; the comparison is on ints.
    if type(n) is float and n.is_integer():
        n = int(n)
    return n


def _calls_to_break_even(compile_s: float, eager_s: float, jitted_s: float) -> int | None:
    if jitted_s >= eager_s:
        return None
    # The cases stay away from exact ties, where float rounding could go either way.
    return max(1, math.ceil(compile_s / (eager_s - jitted_s)))


_MANY_CALLS = "a compile paid back over many calls"

EXERCISES = [
    Exercise(
        id="ex01_break_even", points=1, title="When does jit pay off?",
        chapter="01_why_jit", section="3. When a JIT does not pay off",
        hint=Hint(
            pitfall=("The jitted version costs compile_s once plus jitted_s per call; the "
                     "plain one costs eager_s per call. If the jitted call is not faster, no "
                     "number of calls pays the compile back (return None)."),
            code=("Find the smallest whole n with compile_s + n * jitted_s <= n * eager_s: "
                  "math.ceil of compile_s divided by the time saved per call, and at least "
                  "1.")),
        probe=probe_break_even,
        reference=lambda: {"calls_to_break_even": _calls_to_break_even},
        public=(
            Case("compile 0.5 s, eager 10 ms, jitted 1 ms", (0.5, 0.01, 0.001),
                 category=_MANY_CALLS),
            Case("jitted not faster", (0.2, 0.001, 0.002)),
            # the three pitfalls the text names: equal totals count ("not larger"), n >= 1,
            # and None (not a division by zero) when the jitted call is no faster
            Case("equal totals at 2 calls: compile 2 s, eager 1.5 s, jitted 0.5 s",
                 (2.0, 1.5, 0.5), category="equal totals"),
            Case("free compile: still at least 1 call", (0.0, 0.02, 0.005)),
            Case("jitted exactly as fast", (0.3, 0.002, 0.002)),
        ),
        hidden=(
            Case("compile 2 s, eager 3 ms, jitted 1.1 ms", (2.0, 0.003, 0.0011),
                 category=_MANY_CALLS),
            Case("free compile", (0.0, 0.01, 0.001), category="a free compile"),
            Case("equal speeds", (0.1, 0.004, 0.004), category="equal speeds"),
            Case("compile 40 ms, eager 50 ms, jitted 20 ms", (0.04, 0.05, 0.02),
                 category="a compile paid back within a few calls"),
        ),
    ),
]
