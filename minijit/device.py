"""JAX's names for devices and asynchronous dispatch, on minijit's one device (chapter 10).

minijit runs on the host CPU only, and a jitted call returns when its result is computed, so
these are nearly no-ops; they exist so that JAX code (and JAX's way of timing code, with
`.block_until_ready()`) runs unchanged.
"""

from __future__ import annotations

from typing import Any

from minijit.array import Array, wrap
from minijit.core import Tracer
from minijit.numpy import asarray
from minijit.tree_util import tree_map


def block_until_ready(x: Any) -> Any:
    """Wait until every array in the pytree `x` is computed, and return `x`. In minijit they
    always are: a call returns only once its result is ready (JAX's returns earlier)."""
    return x


def effects_barrier() -> None:
    """Wait until every side effect (`debug.print`) of earlier calls has happened. In minijit
    they happen during the call."""


def device_put(x: Any, device: Any = None) -> Any:
    """The pytree `x` with its leaves as minijit arrays (on the one device there is). A
    Python scalar becomes a weakly typed array, as in JAX."""
    if device is not None:
        raise NotImplementedError("minijit has one device, the host CPU; leave device=None")

    def put(leaf):
        if isinstance(leaf, (Tracer, Array)):
            return leaf
        weak = isinstance(leaf, (int, float)) and not isinstance(leaf, bool)
        return wrap(asarray(leaf), weak_type=weak)

    return tree_map(put, x)
