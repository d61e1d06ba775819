"""A minijit program's own code run by `jax.jit`, and timed as the course times minijit
(chapter 10, section 5).

    jax_gelu = as_jax(gelu)                     # gelu's code, mnp and lax meaning JAX's
    measure_jax(gelu, x, against={"NumPy": gelu_numpy})
    # {'first call': 0.05, 'per call': 0.0016, 'returned': 2e-05, 'ready': 0.0008,
    #  'threads': 2, 'NumPy': 0.066}

The programs of chapter 10 are written with `mnp` and `lax`; `as_jax` rebinds those two names
to `jax.numpy` and `jax.lax`, so that JAX runs the very same text. JAX computes in float64 only
in its 64-bit mode, which minijit behaves as: the functions here turn it on.

JAX is not one of the course's dependencies. Where it is not installed, chapter 10 prints
`RECORDED_JAX` and `RECORDED_SOFTMAX_KERNELS` instead: figures measured by these functions on
the machine and at the date their `where` names, to be read as that machine's, not this one's.
"""

from __future__ import annotations

import importlib.util
import re
import time
import types
from collections.abc import Callable, Mapping

from minijit.course.timing import first_call, time_calls

RECORDED_JAX = {
    "where": (
        "recorded on 2026-12-06 by minijit.course.on_jax.measure_jax with JAX 0.10.2 (jaxlib "
        "0.10.2, CPU, 64-bit mode on), NumPy 2.4.6, Numba 0.68.1 and Python 3.11.7, on a "
        "cloud VM with 2 cores of an AMD EPYC (load average under 1 while it ran); its NumPy "
        "times are from the same run, taking turns with JAX's"
    ),
    "cases": {
        "GELU, f64[1000000]": {"first call": 0.0623, "per call": 0.00223, "NumPy": 0.0639,
                               "returned": 3.76e-05, "ready": 0.00227, "threads": 2},
        "softmax, f64[1000,500]": {"first call": 0.0425, "per call": 0.00101, "NumPy": 0.00118,
                                   "returned": 1.51e-05, "ready": 0.000692, "threads": 2},
        "Mandelbrot, f64[200,300]": {"first call": 0.110, "per call": 0.0118, "NumPy": 0.0252,
                                     "returned": 7.39e-05, "ready": 0.0112, "threads": 2},
        "Newton, f64[1000000]": {"first call": 0.0659, "per call": 0.00312, "NumPy": 0.019,
                                 "returned": 0.000111, "ready": 0.00506, "threads": 2},
        "GELU, f64[1000]": {"first call": 0.0335, "per call": 1.86e-05, "NumPy": 6.66e-05,
                            "returned": 4.65e-06, "ready": 7.93e-06, "threads": 1},
    },
}

RECORDED_SOFTMAX_KERNELS = {
    "where": ("read by minijit.course.xla.xla_kernels from what JAX 0.10.2 (CPU, 64-bit mode "
              "on) compiled for chapter 10's softmax on f64[1000,500], on 2026-12-06"),
    "kernels": [
        "kernel 1 writes f64[1000,500], reads an argument: reduce_max, sub, exp",
        "kernel 2 writes f64[1000], reads kernel 1: reduce_sum",
        "kernel 3 writes f64[1000], reads kernel 2: div",
        "kernel 4 writes f64[1000,500], reads kernel 1, kernel 3: div",
    ],
}

_PARTITIONS = re.compile(r'"outer_dimension_partitions":\[([^\]]*)\]')


def jax_installed() -> bool:
    """Whether `import jax` would work here (without importing it: it takes a second)."""
    return importlib.util.find_spec("jax") is not None


def as_jax(fn: Callable) -> Callable:
    """`fn`'s code with the global names `mnp` and `lax` bound to `jax.numpy` and `jax.lax`;
    every other global is `fn`'s own. Functions that `fn` defines inside see the same names."""
    jax, jnp = _jax()
    names = {**fn.__globals__, "mnp": jnp, "lax": jax.lax}
    return types.FunctionType(fn.__code__, names, fn.__name__, fn.__defaults__, fn.__closure__)


def compiled_text(fn: Callable, *args) -> str:
    """The optimized HLO that XLA compiled for `fn`'s code (`as_jax`) on `args`."""
    jax, _ = _jax()
    return jax.jit(as_jax(fn)).lower(*args).compile().as_text()


def measure_jax(fn: Callable, *args,
                against: Mapping[str, Callable] | None = None) -> dict[str, float]:
    """`jax.jit` of `fn`'s code on `args`, in seconds: 'per call' (`time_calls`, taking turns
    with each of `against`, whose seconds per call come back under their own names), 'first
    call' (what the first call, trace and compile included, took beyond 'per call', as
    `crossover.Cost.first` counts it), 'returned' and 'ready' (the shortest of five calls: until
    the call returned, and until its result was ready), and 'threads' (`xla_threads`)."""
    jax, _ = _jax()
    jitted = jax.jit(as_jax(fn))
    on_device = [jax.device_put(a) for a in args]  # as a JAX program holds its arrays
    _, first = first_call(jitted, *on_device)
    contenders = {"per call": lambda: jitted(*on_device)}
    for name, other in (against or {}).items():  # on the arguments as given, not JAX's copies
        contenders[name] = lambda other=other: other(*args)
    seconds = time_calls(contenders)
    returned = ready = float("inf")
    for _ in range(5):
        t0 = time.perf_counter()
        out = jitted(*on_device)
        returned = min(returned, time.perf_counter() - t0)
        out.block_until_ready()
        ready = min(ready, time.perf_counter() - t0)
    threads = xla_threads(jitted.lower(*on_device).compile().as_text())
    return {"first call": max(0.0, first - seconds["per call"]), **seconds,
            "returned": returned, "ready": ready, "threads": threads}


def xla_threads(text: str) -> int:
    """The most threads XLA splits one loop of this compiled text over: the product of a
    fusion's `outer_dimension_partitions`, at most; 1 when it splits none."""
    most = 1
    for found in _PARTITIONS.finditer(text):
        parts = 1
        for count in re.findall(r"\d+", found.group(1)):
            parts *= int(count)
        most = max(most, parts)
    return most


def _jax():
    """jax and jax.numpy, with 64-bit mode on (float64 and int64 by default, as in minijit)."""
    import jax
    import jax.numpy as jnp

    jax.config.update("jax_enable_x64", True)
    return jax, jnp
