"""Operators and methods of arrays, eager and traced alike (chapter 02).

This is where operator overloading happens, once for both kinds of value: `x + y` calls
`mnp.add(x, y)`, which binds the `add` primitive, which the innermost trace either records
(a `Tracer`) or computes now (an eager `Array`). So eager and traced code share one set of
dtype rules, one indexing (`indexing.getitem`: out-of-bounds reads clamp) and one set of
errors, and arrays are immutable: `x += 1` makes a new array and rebinds the name, as in JAX.

What stays NumPy's on an eager `Array` is what only concrete data can do: `len`, iteration,
`float(x)`, `x.tolist()`, printing, and handing it to NumPy itself (`np.sin(x)` is NumPy's
sine of the data, as it is for a JAX array).
"""

from __future__ import annotations

import functools
import inspect

import numpy as np

from minijit import indexing
from minijit import numpy as mnp
from minijit.array import Array, wrap
from minijit.core import Tracer
from minijit.errors import api_boundary, user_line

_ARRAYLIKE = (Tracer, np.ndarray, np.generic, bool, int, float, complex)


def _operator(fn, symbol: str, swapped: bool = False):
    """`fn` as the method behind `symbol`. A list or tuple operand is a TypeError, as in JAX
    (`x + [1, 2]` would otherwise be a silent conversion); any other non-array operand
    returns NotImplemented, so Python tries the other side (and `x == None` is False)."""

    def method(self, other):
        if isinstance(other, (list, tuple)):
            left, right = (other, self) if swapped else (self, other)
            raise TypeError(f"unsupported operand type(s) for {symbol}: "
                            f"'{type(left).__name__}' and '{type(right).__name__}'")
        if not isinstance(other, _ARRAYLIKE):
            return NotImplemented
        return fn(other, self) if swapped else fn(self, other)

    method.__name__ = fn.__name__
    return api_boundary(method)


def _numpy_method(fn):
    """`fn` as a method NumPy can call: `np.sum(x)` is `x.sum(axis=None, out=None)` (NumPy
    hands reductions to the method of anything that is not a plain ndarray), and `np.var`
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


_BINARY = {  # method name -> (function, symbol)
    "add": (mnp.add, "+"), "sub": (mnp.subtract, "-"), "mul": (mnp.multiply, "*"),
    "truediv": (mnp.true_divide, "/"), "floordiv": (mnp.floor_divide, "//"),
    "mod": (mnp.remainder, "%"), "pow": (mnp.power, "**"), "matmul": (mnp.matmul, "@"),
    "and": (mnp.bitwise_and, "&"), "or": (mnp.bitwise_or, "|"), "xor": (mnp.bitwise_xor, "^"),
    "lshift": (mnp.left_shift, "<<"), "rshift": (mnp.right_shift, ">>"),
}
_COMPARISONS = {
    "__lt__": (mnp.less, "<"), "__le__": (mnp.less_equal, "<="),
    "__gt__": (mnp.greater, ">"), "__ge__": (mnp.greater_equal, ">="),
    "__eq__": (mnp.equal, "=="), "__ne__": (mnp.not_equal, "!="),
}

_OPERATORS = {
    **{f"__{n}__": _operator(f, s) for n, (f, s) in _BINARY.items()},
    **{f"__r{n}__": _operator(f, s, swapped=True) for n, (f, s) in _BINARY.items()},
    # `x += y` is `x = x + y`: a new array, the old one untouched (NumPy's would write into it)
    **{f"__i{n}__": _operator(f, s + "=") for n, (f, s) in _BINARY.items()},
    "__divmod__": _operator(mnp.divmod, "divmod()"),
    "__rdivmod__": _operator(mnp.divmod, "divmod()", swapped=True),
    **{name: _operator(f, s) for name, (f, s) in _COMPARISONS.items()},
    "__neg__": mnp.negative, "__pos__": mnp.positive, "__abs__": mnp.absolute,
    "__invert__": mnp.invert,
}


def _getitem(self, index):
    if isinstance(index, list):  # JAX's rule: NumPy once read a list as a tuple, then changed
        raise TypeError("Using a non-tuple sequence for multidimensional indexing is not "
                        "allowed; use `arr[array(seq)]` instead of `arr[seq]`, or "
                        "`arr[tuple(seq)]` to index several axes.")
    if not isinstance(self, Tracer) and indexing.numpy_index(index):
        return wrap(np.asarray(self)[index])  # eagerly only: a mask or an integer array
    return indexing.getitem(self, index)


def _iter(self):
    """Rows, as NumPy iterates (an Array only: a Tracer unrolls in tracing.py). Without it
    Python would call `x[0], x[1], ...` until an IndexError, which clamped reads never raise."""
    if self.ndim == 0:
        raise TypeError("iteration over a 0-d array")
    return (wrap(row, self.weak_type) for row in np.asarray(self))


def _plain(x):
    """`x` with every Array in it (nested in lists and tuples too) a plain ndarray view."""
    if isinstance(x, Array):
        return x.view(np.ndarray)
    if isinstance(x, (list, tuple)):
        return type(x)(_plain(v) for v in x)
    return x


# NumPy routes `np.float32(2) * x` here, as the ufunc `multiply`: each operator's ufunc is
# NumPy's function of the same name as the mnp function behind it.
_SCALAR_OPERATORS = {getattr(np, f.__name__): f
                     for f, _ in (*_BINARY.values(), *_COMPARISONS.values())}


def _refuse_out(kwargs) -> None:
    """`np.add(x, 1, out=x)` would write into an immutable array: refuse, as JAX does."""
    out = kwargs.get("out")
    if any(isinstance(o, Array) for o in (out if isinstance(out, tuple) else (out,))):
        raise TypeError("minijit arrays are immutable: NumPy cannot write into one with "
                        "out=...; use the array the function returns")


def _array_ufunc(self, ufunc, method, *inputs, **kwargs):
    """NumPy's ufuncs compute on the data and return NumPy arrays, as they do for JAX
    arrays; but `np.float32(2) * x`, which NumPy turns into a ufunc call before `x` can
    answer, is the operator, so it is minijit's."""
    _refuse_out(kwargs)
    if (method == "__call__" and not kwargs and ufunc in _SCALAR_OPERATORS and len(inputs) == 2
            and any(isinstance(i, np.generic) for i in inputs)):
        return _SCALAR_OPERATORS[ufunc](*inputs)
    return getattr(ufunc, method)(*_plain(inputs), **{k: _plain(v) for k, v in kwargs.items()})


def _array_function(self, func, types, args, kwargs):
    """NumPy's functions (`np.isclose(x, y)`, `np.concatenate([x, y])`) see plain ndarrays,
    so their insides run on NumPy's rules, not on the operators above."""
    _refuse_out(kwargs)
    return func(*_plain(args), **{k: _plain(v) for k, v in kwargs.items()})


def _setitem(self, index, value):
    where = user_line()
    raise TypeError(
        "minijit arrays are immutable: instead of `x[idx] = y` write "
        "`x = x.at[idx].set(y)` (or .add(y), .multiply(y), .min(y), .max(y)); "
        "it returns a new array. Convert with np.array(x) for a mutable NumPy copy."
        + (f"\n  at {where}" if where else "")
    )


def _mutator(name: str, fix: str):
    """An ndarray method that would change the array in place, refused with `fix`."""

    def refused(self, *args, **kwargs):
        raise TypeError(f"minijit arrays are immutable: x.{name}(...) would change x in "
                        f"place; {fix}")

    refused.__name__ = name
    return refused


_MUTATORS = {  # ndarray's in-place methods, which an immutable array does not have
    "fill": "use mnp.full_like(x, value)",
    "sort": "use np.sort(x), which returns a sorted NumPy copy",
    "partition": "use np.partition(x, k), which returns a NumPy copy",
    "put": "use x.at[indices].set(values)",
    "resize": "use mnp.reshape(x, shape) (or np.resize(x, shape) for a NumPy copy)",
    "setfield": "make a NumPy copy with np.array(x)",
    "itemset": "use x.at[index].set(value)",
}


def _contains(self, value):
    """`value in x`: whether some element equals `value`. As in JAX, `x` must be 1-D and
    `value` a scalar (NumPy's rules for other shapes are surprising); traced, `in` needs a
    concrete answer, so it is the TracerBoolConversionError of `if`."""
    if value is None or isinstance(value, str):
        raise TypeError(f"Array.__contains__: unsupported operand type {type(value)}.")
    if self.ndim != 1:
        raise ValueError("Array.__contains__: search array must be one-dimensional, got "
                         f"arr.shape={self.shape}.")
    if np.ndim(value) != 0:
        raise ValueError(f"Array.__contains__: query value must be a scalar, got "
                         f"shape {np.shape(value)}")
    return mnp.any(mnp.equal(self, value))


def _round(self, ndigits=None):
    """Python's `round(x)`: an int64 array (as `round(7.5)` is an int); with `ndigits`,
    `x.round(ndigits)`."""
    out = mnp.round(self, ndigits or 0)
    return out if ndigits is not None else mnp.astype(out, np.int64)


def _copy(self, order=None):
    return mnp.copy(self)  # `order` is NumPy's; an immutable copy has no layout to choose


def _no_flat(self):
    raise NotImplementedError("minijit arrays, like JAX's, do not implement the arr.flat "
                              "property: consider arr.flatten() instead.")


_METHODS = {
    "__getitem__": api_boundary(_getitem),
    "__contains__": api_boundary(_contains),
    "__round__": api_boundary(_round),
    "__copy__": _copy,
    "__deepcopy__": lambda self, memo: mnp.copy(self),
    "copy": _copy,
    "__setitem__": _setitem,
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
        "sum", "prod", "mean", "max", "min", "var", "std", "argmax", "argmin", "clip",
        "all", "any", "cumsum", "cumprod", "ptp", "round", "trace")},
    "dot": mnp.dot, "squeeze": mnp.squeeze, "ravel": mnp.ravel,
    "flatten": mnp.ravel, "conj": mnp.conj, "conjugate": mnp.conjugate,
    "diagonal": mnp.diagonal, "repeat": mnp.repeat,
    # also what NumPy's own functions call on an argument that is not an ndarray: np.split,
    # np.array_split and np.swapaxes work on a Tracer through it (and x[st:end]), as on JAX's
    "swapaxes": mnp.swapaxes, "nonzero": mnp.nonzero,
}

for _cls in (Tracer, Array):
    for _name, _fn in {**_OPERATORS, **_METHODS}.items():
        setattr(_cls, _name, _fn)
    _cls.T = property(lambda self: mnp.transpose(self))
    _cls.mT = property(lambda self: mnp.matrix_transpose(self))
    _cls.real = property(lambda self: mnp.real(self))
    _cls.imag = property(lambda self: mnp.imag(self))
    _cls.flat = property(_no_flat)
    _cls.at = property(lambda self: indexing.IndexUpdateHelper(self))
Array.__iter__ = _iter
Array.block_until_ready = lambda self: self  # computed already (see device.py)
for _name, _fix in _MUTATORS.items():
    setattr(Array, _name, _mutator(_name, _fix))
Array.__array_ufunc__ = _array_ufunc
Array.__array_function__ = _array_function
