"""Global switches, set with `minijit.config.update(name, value)` (chapters 04 and 06).

Names are accepted with or without JAX's `jax_` prefix, so `config.update("jax_disable_jit",
True)` from a JAX snippet works unchanged.
"""

from __future__ import annotations

import contextlib
from typing import Any

_DEFAULTS: dict[str, Any] = {
    "disable_jit": False,  # run jitted functions eagerly, op by op
    "log_compiles": False,  # log each trace+compile with its signature and timings
    "explain_cache_misses": False,  # log why each retrace happened
    "check_tracer_leaks": False,  # report tracers that escape a trace when it ends
    "default_backend": "numba",  # what jit(f) uses without backend=... (chapter 08)
    "disk_cache": True,  # keep compiled Numba code across processes (chapter 08)
    "traceback_filtering": True,  # hide minijit's own frames in tracebacks
}


class Config:
    """Attribute access (`config.log_compiles`) and `update`, as in `jax.config`."""

    def __init__(self):
        object.__setattr__(self, "_values", dict(_DEFAULTS))

    @staticmethod
    def _key(name: str) -> str:
        key = name.removeprefix("jax_")
        if key not in _DEFAULTS:
            raise AttributeError(
                f"unknown config option {name!r}; minijit has: {', '.join(sorted(_DEFAULTS))}"
            )
        return key

    def update(self, name: str, value: Any) -> None:
        self._values[self._key(name)] = value

    def __getattr__(self, name: str) -> Any:
        return self._values[self._key(name)]

    def __setattr__(self, name, value):
        raise AttributeError("use minijit.config.update(name, value)")

    @contextlib.contextmanager
    def override(self, name: str, value: Any):
        """Temporarily set an option (restored even if the block raises)."""
        key = self._key(name)
        old = self._values[key]
        self._values[key] = value
        try:
            yield
        finally:
            self._values[key] = old


config = Config()


def disable_jit(disable: bool = True):
    """`with minijit.disable_jit():` runs jitted functions eagerly, so `print` and Python
    control flow see real values (debugging only: nothing is compiled or cached)."""
    return config.override("disable_jit", disable)
