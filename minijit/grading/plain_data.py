"""Plain data: what a probe may return (:func:`to_data`), and its JSON text (:func:`encode`).

A probe's result is converted to plain data (numbers, strings, lists, dicts, and arrays as
``{"__array__": ...}``) the moment it returns, by exact type checks, so nothing of the
learner's (a subclass with its own ``__eq__``, an object array) reaches the comparison.
:func:`encode` is our own tiny JSON writer, so a patched ``json`` module in the kernel changes
nothing; its text is pure ASCII.

Part of the probes' prelude (see :mod:`minijit.grading.prelude`): shipped as source into
kernels, so only the standard library and NumPy, no imports from the rest of ``minijit``.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

# Results bigger than this are refused: a probe returns a few small arrays, never data sets.
MAX_ARRAY_SIZE = 100_000
MAX_DEPTH = 16
MAX_TEXT = 20_000
# The kinds of array we grade: bool, signed and unsigned ints, floats. Object, complex,
# string and datetime arrays are refused rather than guessed at.
_GRADABLE_KINDS = "biuf"


class NotGradable(TypeError):
    """A probe produced something that is not plain data (an unknown object, say)."""


# Names of dicts that stand for arrays and errors in plain data: a learner's result may not
# use them, or a dict returned by their code could pass for an error it never raised.
_RESERVED_KEYS = ({"__array__"}, {"__error__"})


def to_data(value: Any, _depth: int = 0) -> Any:
    """Convert a result into plain data, or raise NotGradable.

    Exact type checks (``type(x) is float``, not ``isinstance``) on purpose: a subclass can
    override ``__eq__`` or ``__repr__``, so only the real built-in types pass through
    untouched; NumPy values go through ``np.asarray`` and ``tolist()``.
    """
    if _depth > MAX_DEPTH:
        raise NotGradable("result is nested too deeply")
    t = type(value)
    if value is None or t is bool or t is int or t is str:
        if t is str and len(value) > MAX_TEXT:
            return value[:MAX_TEXT] + "...[truncated]"
        return value
    if t is float:
        return value
    if isinstance(value, (np.ndarray, np.generic)):
        # A base-class copy: a subclass's properties (dtype, shape) are never consulted.
        return _array_data(np.array(value, copy=True, subok=False))
    if t is list or t is tuple:
        return [to_data(v, _depth + 1) for v in value]
    if t is dict:
        if set(value) in _RESERVED_KEYS:
            raise NotGradable(f"a dict with the single key {next(iter(value))!r} is reserved "
                              "for the grader")
        out = {}
        for k, v in value.items():
            if type(k) is not str:
                raise NotGradable(f"dict key {k!r} is not a string")
            out[k] = to_data(v, _depth + 1)
        return out
    raise NotGradable(f"cannot grade an object of type {t.__name__}: expected an array, "
                      "a number, a string, or a list of those")


def _array_data(a: np.ndarray) -> dict:
    if a.dtype.kind not in _GRADABLE_KINDS:
        raise NotGradable(f"cannot grade an array of dtype {a.dtype}")
    if a.size > MAX_ARRAY_SIZE:
        raise NotGradable(f"array of {a.size} elements is too large to grade")
    # ndarray.tolist of the base class gives Python scalars of exact built-in types.
    return {"__array__": {"shape": list(a.shape), "dtype": a.dtype.name,
                          "data": np.ndarray.tolist(a)}}


# ----------------------------------------------------------------------------------------
# Serialisation: plain data -> JSON text, without the json module (see the module docstring)
# ----------------------------------------------------------------------------------------


def encode(value: Any) -> str:
    """JSON text for plain data (as produced by to_data); raises NotGradable otherwise."""
    parts: list[str] = []
    _encode(value, parts, 0)
    return "".join(parts)


def _encode(value, out: list, depth: int) -> None:
    if depth > MAX_DEPTH + 4:
        raise NotGradable("result is nested too deeply")
    t = type(value)
    if value is None:
        out.append("null")
    elif t is bool:
        out.append("true" if value else "false")
    elif t is int:
        out.append(int.__repr__(value))
    elif t is float:
        if math.isnan(value):
            out.append("NaN")
        elif math.isinf(value):
            out.append("Infinity" if value > 0 else "-Infinity")
        else:
            out.append(float.__repr__(value))
    elif t is str:
        out.append(json_string(value))
    elif t is list:
        out.append("[")
        for i, v in enumerate(value):
            if i:
                out.append(",")
            _encode(v, out, depth + 1)
        out.append("]")
    elif t is dict:
        out.append("{")
        for i, (k, v) in enumerate(value.items()):
            if i:
                out.append(",")
            out.append(json_string(str.__str__(k)))
            out.append(":")
            _encode(v, out, depth + 1)
        out.append("}")
    else:
        raise NotGradable(f"cannot encode {t.__name__}")


def json_string(s: str) -> str:
    # Escape everything outside printable ASCII: the result is pure ASCII, so lone surrogates
    # or odd code points in a learner's output cannot break the kernel's message encoding.
    chars = ['"']
    for ch in s:
        o = ord(ch)
        if ch == '"' or ch == "\\":
            chars.append("\\" + ch)
        elif 0x20 <= o < 0x7F:
            chars.append(ch)
        elif o > 0xFFFF:
            o -= 0x10000
            chars.append(f"\\u{0xD800 + (o >> 10):04x}\\u{0xDC00 + (o & 0x3FF):04x}")
        else:
            chars.append(f"\\u{o:04x}")
    chars.append('"')
    return "".join(chars)
