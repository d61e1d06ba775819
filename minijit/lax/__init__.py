"""`minijit.lax`: the strict, primitive-level API, as `jax.lax` (chapters 03 and 05).

Two layers, one namespace:
- `ops.py`: one wrapper per primitive (`lax.add`, `lax.reshape`, `lax.dynamic_slice`, ...);
- `control_flow/`: `cond`, `switch`, `while_loop`, `fori_loop`, `scan`, written with `ops`,
  and `map` (a `scan`) and `associative_scan` (slices, pads and concatenates).

Each builds on the ones before it; nothing in them imports this package.
"""

from minijit.lax.control_flow import (
    associative_scan,
    cond,
    fori_loop,
    map,  # noqa: A004 - JAX's name, lax.map
    scan,
    switch,
    while_loop,
)
from minijit.lax.ops import *  # noqa: F403 - the public names, as listed in ops.__all__
from minijit.lax.ops import __all__ as _ops_all

__all__ = [*_ops_all, "associative_scan", "cond", "fori_loop", "map", "scan", "switch",
           "while_loop"]
