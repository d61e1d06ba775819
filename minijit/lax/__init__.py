"""`minijit.lax`: the strict, primitive-level API, as `jax.lax` (chapters 03 and 05).

Two modules, one namespace:
- `ops.py`: one wrapper per primitive (`lax.add`, `lax.reshape`, `lax.dynamic_slice`, ...);
- `control_flow.py`: `cond`, `switch`, `while_loop`, `fori_loop`, `scan`, written with `ops`.

`ops` comes first because `control_flow` builds on it; nothing in either imports this package.
"""

from minijit.lax.control_flow import cond, fori_loop, scan, switch, while_loop
from minijit.lax.ops import *  # noqa: F403 - the public names, as listed in ops.__all__
from minijit.lax.ops import __all__ as _ops_all

__all__ = [*_ops_all, "cond", "fori_loop", "scan", "switch", "while_loop"]
