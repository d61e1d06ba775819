"""The eager array type (chapter 02).

Outside a trace, minijit computes with NumPy, and every result is an `Array`: an `np.ndarray`
subclass, so NumPy, Matplotlib and pandas take it as it is, that carries what JAX's arrays
carry and NumPy's do not:

- a weak type (`mnp.add(1, 2)` is a weakly typed int64, exactly as it is inside a trace);
- immutability: `x[i] = v` is a `TypeError` (write `x.at[i].set(v)`), and `x += 1` makes a
  new array and rebinds the name, leaving every other reference to the old value unchanged.

Its operators, indexing, `.at[...]` and methods are not NumPy's: `array_methods.py` attaches
minijit's, the same ones a `Tracer` has, so `x + y` eagerly binds the same `add` primitive that
it stages under `jit`, with the same dtype rules and the same errors. This module is a leaf: it
imports nothing from minijit, so the core can build on it.
"""

from __future__ import annotations

import numpy as np


class Array(np.ndarray):
    """An immutable NumPy array, as returned by jitted functions and by `minijit.numpy`."""

    weak_type = False  # instances made by `wrap(..., weak_type=True)` shadow it

    def __repr__(self) -> str:
        """JAX's form, `Array([0., 1.], dtype=float64)`: the dtype always, the weak type if
        set, and NumPy's layout of the values (its line width, continuation lines aligned)."""
        prefix = "Array("
        dtype = f"dtype={self.dtype.name}" + (", weak_type=True" if self.weak_type else "")
        width = np.get_printoptions()["linewidth"]
        if self.size == 0:
            body = f"[], shape={self.shape}"
        else:
            body = np.array2string(np.asarray(self), prefix=prefix, suffix=",",
                                   separator=", ", max_line_width=width)
        last_line = len(body) - body.rfind("\n") + 1
        sep = " " * len(prefix) if last_line + len(dtype) + 2 > width else " "
        return f"{prefix}{body},{sep}{dtype})"

    def __setitem__(self, index, value):
        raise TypeError(
            "minijit arrays are immutable: instead of `x[idx] = y` write "
            "`x = x.at[idx].set(y)` (it returns a new array). "
            "Convert with np.array(x) if you really want a mutable NumPy copy."
        )


def wrap(x, weak_type: bool = False) -> Array:
    """View a NumPy array (or scalar) as an `Array` without copying."""
    out = np.asarray(x).view(Array)
    if weak_type:
        out.weak_type = True
    return out
