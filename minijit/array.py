"""The eager array type and the `.at[...]` helper (chapters 02 and 04).

Outside a trace, minijit computes with NumPy. Results are returned as `Array`, a plain
`np.ndarray` subclass that adds what JAX arrays have and NumPy's lack: `x.at[i].set(v)` for a
functional update, and a `TypeError` on `x[i] = v`, because minijit arrays are immutable values
(a jitted function could not see the mutation). Everything else is NumPy.
"""

from __future__ import annotations

import numpy as np

from minijit.errors import api_boundary


class Array(np.ndarray):
    """An immutable-by-convention NumPy array, as returned by jitted functions and mnp."""

    @property
    def at(self):
        return _IndexUpdateHelper(self)

    @api_boundary
    def __getitem__(self, index):
        # A traced index (`table[i]` inside jit) needs the slicing primitives: NumPy itself
        # would ask the tracer for its value.
        from minijit.tracing import Tracer

        if any(isinstance(i, Tracer) for i in (index if isinstance(index, tuple) else (index,))):
            from minijit.indexing import getitem

            return getitem(self, index)
        return super().__getitem__(index)

    @api_boundary
    def __setitem__(self, index, value):
        raise TypeError(
            "minijit arrays are immutable: instead of `x[idx] = y` write "
            "`x = x.at[idx].set(y)` (it returns a new array). "
            "Convert with np.array(x) if you really want a mutable NumPy copy."
        )


def wrap(x) -> Array:
    """View a NumPy array (or scalar) as an `Array` without copying."""
    return np.asarray(x).view(Array)


class _IndexUpdateHelper:
    """`x.at`: indexing it gives a reference that can `.set`, `.add`, `.get` ..."""

    __slots__ = ("array",)

    def __init__(self, array):
        self.array = array

    def __getitem__(self, index) -> _IndexUpdateRef:
        return _IndexUpdateRef(self.array, index)

    def __repr__(self) -> str:
        return f"_IndexUpdateHelper({self.array!r})"


class _IndexUpdateRef:
    """`x.at[idx]`. Each method returns a new array; `x` itself never changes.

    Updates at out-of-bounds indices are dropped, as in JAX.
    """

    __slots__ = ("array", "index")

    def __init__(self, array, index):
        self.array, self.index = array, index

    @api_boundary
    def get(self):
        from minijit import numpy as mnp

        return mnp.asarray(self.array)[self.index]

    @api_boundary
    def set(self, values):
        return _update(self.array, self.index, values, "set")

    @api_boundary
    def add(self, values):
        return _update(self.array, self.index, values, "add")

    @api_boundary
    def multiply(self, values):
        return _update(self.array, self.index, values, "multiply")

    mul = multiply

    @api_boundary
    def min(self, values):
        return _update(self.array, self.index, values, "min")

    @api_boundary
    def max(self, values):
        return _update(self.array, self.index, values, "max")


def _update(array, index, values, how):
    from minijit.indexing import index_update

    return index_update(array, index, values, how)
