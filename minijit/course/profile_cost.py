"""What `profile_execution` costs a call, measured in a fresh Python process (chapter 06,
section 8).

With `minijit.config.update("profile_execution", True)`, every call of a jitted function reads
the clock before and after running its cache entry and adds the difference to the entry. That
work is the same whatever the call computes, so it is measured on the cheapest call minijit
makes: a cached call of a tiny function compiled by the Numba backend.

The measurement runs in a new process (`python -m minijit.course.profile_cost`), so that
nothing the notebook did before slows the calls down: an array donated and still alive, for
one, sends every cached call of its process down minijit's slower path (chapter 06, section 1).
Timing follows `minijit.course.timing`: the two settings take turns, round after round, and
the median round counts.
"""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np

__all__ = ["profiling_cost"]


def profiling_cost(size: int = 10, calls: int = 2000, rounds: int = 21) -> dict[str, float]:
    """Seconds per cached call of a Numba-compiled `x * 2.0` on `size` elements, with
    `profile_execution` off (`"off"`) and on (`"on"`), measured in a fresh process."""
    done = subprocess.run(
        [sys.executable, "-m", "minijit.course.profile_cost", str(size), str(calls),
         str(rounds)], capture_output=True, text=True, check=True)
    return json.loads(done.stdout.splitlines()[-1])  # the last line: numba may print before


def measure(size: int, calls: int, rounds: int) -> dict[str, float]:
    """`profiling_cost`'s measurement, in this process."""
    import minijit as mj
    from minijit.course.timing import time_calls

    double = mj.jit(lambda x: x * 2.0, backend="numba")
    x = np.ones(size)
    double(x)  # compiles (or loads the compiled code from the disk cache)

    def batch(on: bool):
        # one timed call: the switch set once, then `calls` cached calls, so the cost of
        # setting it is shared by all of them
        def run():
            mj.config.update("profile_execution", on)
            for _ in range(calls):
                double(x)
        return run

    try:
        times = time_calls({"off": batch(False), "on": batch(True)}, rounds=rounds)
    finally:
        mj.config.update("profile_execution", False)
    return {name: seconds / calls for name, seconds in times.items()}


if __name__ == "__main__":
    size, calls, rounds = (int(a) for a in sys.argv[1:4])
    print(json.dumps(measure(size, calls, rounds)))
