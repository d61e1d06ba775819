"""Global switches, set with `minijit.config.update(name, value)` (chapters 04 and 06).

Names are accepted with or without JAX's `jax_` prefix, so `config.update("jax_disable_jit",
True)` from a JAX snippet works unchanged.

As in JAX, there are two scopes: `config.update` sets the process-wide value, seen by every
thread; `config.override` (and so `with disable_jit():`, `with checking_leaks():`) sets a value
for the current thread only, for the length of the `with` block. A thread debugging one call
under `disable_jit()` therefore never turns jit off for other threads, and two threads entering
and leaving `with` blocks at once cannot restore each other's values.
"""

from __future__ import annotations

import contextlib
import threading
from typing import Any

_DEFAULTS: dict[str, Any] = {
    "disable_jit": False,  # run jitted functions eagerly, op by op
    "log_compiles": False,  # log each trace+compile with its signature and timings
    "explain_cache_misses": False,  # log why each retrace happened
    "check_tracer_leaks": False,  # report tracers that escape a trace when it ends
    # what jit(f) uses without backend=...: LLVM or Numba, program by program (chapter 09)
    "default_backend": "auto",
    "disk_cache": True,  # keep compiled Numba code across processes (chapter 09)
    # generated code's exp, log, tanh, ...: minijit's own, not libm's ("all": sin, cos, erf too)
    "vector_math": True,
    # bits of the generated loops' vectors: None = the CPU's best (minijit/codegen/vector_width.py)
    "vector_width": None,
    "traceback_filtering": True,  # hide minijit's own frames in tracebacks
    "debug_nans": False,  # raise FloatingPointError at the primitive that first makes a NaN
    "profile_execution": False,  # time every call of a jitted function, for f.profile()
    # threads for large kernels: None = every usable core (minijit/threads.py), 1 = serial
    "threads": None,
    # keep freed memory for the next call: large outputs from a pool, glibc's heap untrimmed
    # (minijit/codegen/buffers.py)
    "reuse_memory": True,
    # the language of minijit's messages to a learner: None = auto (minijit/messages.py)
    "language": None,
}

_UNSET = object()
# While one of these is on, in any scope, jit's calls skip its cached-call fast path
_OFF_THE_FAST_PATH = ("disable_jit", "debug_nans")


class _ThreadOverrides(threading.local):
    """The values `override` set in this thread; they shadow the process-wide ones."""

    def __init__(self):
        self.values: dict[str, Any] = {}


class Config:
    """Attribute access (`config.log_compiles`) and `update`, as in `jax.config`."""

    def __init__(self):
        object.__setattr__(self, "_values", dict(_DEFAULTS))  # process-wide
        object.__setattr__(self, "_local", _ThreadOverrides())  # this thread's overrides
        # How many `override` blocks of each option are open, in all threads together. While
        # an option's count is 0 (nearly always) its process-wide value is the whole story, so
        # jit's cached-call fast path reads `_values` and this, never the (slower) thread-local.
        object.__setattr__(self, "_overrides_open", dict.fromkeys(_DEFAULTS, 0))
        object.__setattr__(self, "_count_lock", threading.Lock())
        # What the fast path asks on every call, kept up to date by `update` and `override`
        # (one list lookup there instead of six dictionary lookups): [0] is true while an
        # option of _OFF_THE_FAST_PATH is on anywhere, [1] while profile_execution may be.
        object.__setattr__(self, "_fast_path_flags", [False, False])

    def _refresh(self) -> None:
        v, n = self._values, self._overrides_open
        self._fast_path_flags[0] = any(v[k] or n[k] for k in _OFF_THE_FAST_PATH)
        self._fast_path_flags[1] = bool(v["profile_execution"] or n["profile_execution"])

    @staticmethod
    def _key(name: str) -> str:
        key = name.removeprefix("jax_")
        if key not in _DEFAULTS:
            raise AttributeError(
                f"unknown config option {name!r}; minijit has: {', '.join(sorted(_DEFAULTS))}"
            )
        return key

    def update(self, name: str, value: Any) -> None:
        """Set the process-wide value (an `override` in progress in a thread still wins there)."""
        self._values[self._key(name)] = value
        self._refresh()

    def __getattr__(self, name: str) -> Any:
        key = self._key(name)
        local = self._local.values
        return local[key] if key in local else self._values[key]

    def __setattr__(self, name, value):
        raise AttributeError("use minijit.config.update(name, value)")

    @contextlib.contextmanager
    def override(self, name: str, value: Any):
        """Set an option in this thread for the `with` block (restored even if it raises)."""
        key = self._key(name)
        local = self._local.values
        old = local.get(key, _UNSET)
        local[key] = value
        with self._count_lock:
            self._overrides_open[key] += 1
            self._refresh()
        try:
            yield
        finally:
            if old is _UNSET:
                del local[key]
            else:
                local[key] = old
            with self._count_lock:
                self._overrides_open[key] -= 1
                self._refresh()


config = Config()


def debug_nans(enable: bool = True):
    """`with minijit.debug_nans():` raises FloatingPointError, naming the primitive and your
    line, where a NaN first appears (as `jax.debug_nans`): eagerly at once, and under jit by
    running the function again eagerly when a result holds a NaN. Slow; for debugging."""
    return config.override("debug_nans", enable)


def disable_jit(disable: bool = True):
    """`with minijit.disable_jit():` runs jitted functions eagerly, so `print` and Python
    control flow see real values (debugging only: nothing is compiled or cached). It applies
    to the current thread; `config.update("disable_jit", True)` turns jit off everywhere."""
    return config.override("disable_jit", disable)
