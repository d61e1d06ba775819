"""The course's one way of timing code, so that every chapter's numbers are comparable.

The method, the same for every chapter and for `benchmarks/`:

- **Wall-clock time** (`time.perf_counter`), the time a program waits for its answer. CPU time
  would add up the time of threads that run side by side (a call on four threads would count
  four times over) and leave out the time a call spends waiting off the CPU.
- **The first call is not timed with the rest.** It traces and compiles; `first_call` times it
  on its own.
- **Batches.** A fast call is timed in batches of calls that last a millisecond or more, since
  reading the clock costs about a microsecond.
- **Rounds, interleaved.** Each round times one batch of every contender in turn, so a busy
  spell of the machine slows all contenders alike rather than whichever ran then.
- **The median** over the rounds: a typical call, as a program would see it. A busy machine
  adds time to some rounds and never takes any away, and the median ignores the few rounds it
  hit hardest.
- **Ready results.** A result with `block_until_ready` (a JAX array: JAX's calls return
  before their work is done) is waited for inside the timed call.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Mapping

__all__ = ["first_call", "fmt_seconds", "seconds_per_call", "time_calls"]

BATCH_SECONDS = 1e-3  # a timed batch lasts at least this long
ROUNDS = 7


def time_calls(contenders: Mapping[str, Callable[..., object]], *args,
               rounds: int = ROUNDS, warmup: int = 1) -> dict[str, float]:
    """Seconds per call of each `contenders[name](*args)`, by the method above: after `warmup`
    untimed calls each, the median over `rounds` interleaved rounds of one batch each."""
    calls = {name: _ready_call(fn, args) for name, fn in contenders.items()}
    batch = {}
    for name, call in calls.items():
        for _ in range(warmup):
            call()
        one = _time(call, 1)
        batch[name] = max(1, int(BATCH_SECONDS / max(one, 1e-7)))
    samples: dict[str, list[float]] = {name: [] for name in calls}
    for _ in range(rounds):
        for name, call in calls.items():
            samples[name].append(_time(call, batch[name]) / batch[name])
    return {name: statistics.median(s) for name, s in samples.items()}


def seconds_per_call(fn: Callable[..., object], *args, rounds: int = ROUNDS,
                     warmup: int = 1) -> float:
    """Seconds per call of `fn(*args)` alone, by the method above."""
    return time_calls({"fn": fn}, *args, rounds=rounds, warmup=warmup)["fn"]


def first_call(fn: Callable[..., object], *args, **kwargs) -> tuple[object, float]:
    """(fn(*args, **kwargs), the seconds it took): one call, such as a first call that
    compiles, timed on its own, its result waited for."""
    t0 = time.perf_counter()
    result = _wait(fn(*args, **kwargs))
    return result, time.perf_counter() - t0


def fmt_seconds(seconds: float) -> str:
    """1.23 s, 4.56 ms, 7.89 µs, 12.3 ns: three significant digits in readable units."""
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6)):
        if seconds >= scale:
            return f"{seconds / scale:.3g} {unit}"
    return f"{seconds * 1e9:.3g} ns"


def _ready_call(fn: Callable[..., object], args: tuple) -> Callable[[], object]:
    return lambda: _wait(fn(*args))


def _wait(result: object) -> object:
    """`result`, once its work is done: JAX arrays (alone or in a tuple or list) are waited
    for; anything else is done when returned."""
    for leaf in result if isinstance(result, (tuple, list)) else (result,):
        ready = getattr(leaf, "block_until_ready", None)
        if ready is not None:
            ready()
    return result


def _time(call: Callable[[], object], number: int) -> float:
    t0 = time.perf_counter()
    for _ in range(number):
        call()
    return time.perf_counter() - t0
