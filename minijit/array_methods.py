"""Operators and methods of traced arrays, delegating to `minijit.numpy` (chapter 02).

This is where operator overloading happens: `x + y` on a tracer calls `mnp.add(x, y)`, which
binds the `add` primitive, which records an equation. Eager arrays are NumPy arrays and keep
NumPy's own operators, which follow the same rules.
"""

from __future__ import annotations

import functools
import inspect

from minijit import indexing
from minijit import numpy as mnp
from minijit.tracing import Tracer


def _swap(f):
    return lambda self, other: f(other, self)


def _numpy_method(fn):
    """`fn` as a method NumPy can call: `np.sum(tracer)` is `tracer.sum(axis=None, out=None)`
    (NumPy hands reductions to the method of anything that is not an ndarray), and `np.var`
    adds `dtype=None`. Accept those defaults, as JAX's arrays do; an actual `out` has no
    meaning for immutable arrays."""
    takes_dtype = "dtype" in inspect.signature(fn).parameters

    @functools.wraps(fn)
    def method(self, *args, out=None, **kwargs):
        if out is not None:
            raise NotImplementedError(
                f"The 'out' argument to mnp.{fn.__name__} is not supported: minijit arrays "
                "are immutable, so use the array it returns"
            )
        if not takes_dtype and kwargs.get("dtype", 0) is None:
            del kwargs["dtype"]
        return fn(self, *args, **kwargs)

    return method


_OPERATORS = {
    "__add__": mnp.add, "__radd__": _swap(mnp.add),
    "__sub__": mnp.subtract, "__rsub__": _swap(mnp.subtract),
    "__mul__": mnp.multiply, "__rmul__": _swap(mnp.multiply),
    "__truediv__": mnp.true_divide, "__rtruediv__": _swap(mnp.true_divide),
    "__floordiv__": mnp.floor_divide, "__rfloordiv__": _swap(mnp.floor_divide),
    "__mod__": mnp.remainder, "__rmod__": _swap(mnp.remainder),
    "__pow__": mnp.power, "__rpow__": _swap(mnp.power),
    "__matmul__": mnp.matmul, "__rmatmul__": _swap(mnp.matmul),
    "__and__": mnp.bitwise_and, "__rand__": _swap(mnp.bitwise_and),
    "__or__": mnp.bitwise_or, "__ror__": _swap(mnp.bitwise_or),
    "__xor__": mnp.bitwise_xor, "__rxor__": _swap(mnp.bitwise_xor),
    "__lt__": mnp.less, "__le__": mnp.less_equal,
    "__gt__": mnp.greater, "__ge__": mnp.greater_equal,
    "__eq__": mnp.equal, "__ne__": mnp.not_equal,
    "__neg__": mnp.negative, "__pos__": mnp.positive, "__abs__": mnp.absolute,
    "__invert__": mnp.invert,
    "__getitem__": indexing.getitem,
}

_METHODS = {
    "astype": mnp.astype,
    "reshape": lambda self, *shape, order="C": mnp.reshape(
        self, shape[0] if len(shape) == 1 else shape, order
    ),
    # x.transpose(), x.transpose(1, 0), x.transpose((1, 0)), and np.transpose's x.transpose(None)
    "transpose": lambda self, *axes: mnp.transpose(
        self, None if not axes or axes == (None,) else axes[0] if len(axes) == 1
        and not isinstance(axes[0], int) else axes
    ),
    **{name: _numpy_method(getattr(mnp, name)) for name in (
        "sum", "prod", "mean", "max", "min", "var", "std", "argmax", "argmin", "clip")},
    "dot": mnp.dot, "squeeze": mnp.squeeze, "ravel": mnp.ravel,
    "flatten": mnp.ravel,
}

for _name, _fn in {**_OPERATORS, **_METHODS}.items():
    setattr(Tracer, _name, _fn)

Tracer.T = property(lambda self: mnp.transpose(self))
