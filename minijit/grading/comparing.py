"""Comparison on plain data: :func:`compare` decides pass or fail, :func:`describe` says
what a value is in a few words (for feedback).

Both take plain data only (what :mod:`minijit.grading.plain_data` produces, or a literal
expected value): nothing the learner's code returns can take part in the decision. An error
record (``{"__error__": ...}``, :func:`error_of`) matches an expected error of the same type,
unless it is the probe's own failure (``"origin": "probe"``).
"""

from __future__ import annotations

import math
from typing import Any


def error_of(value: Any) -> dict | None:
    """The error record inside a probe result, if the probe raised."""
    if isinstance(value, dict) and set(value) == {"__error__"}:
        return value["__error__"]
    return None


def compare(expected: Any, got: Any, rtol: float = 1e-7, atol: float = 1e-12) -> str | None:
    """``None`` when ``got`` matches ``expected``, else a one-line reason.

    Both sides are plain data. An int expected value wants an int, equal (a float, however
    close, is wrong: ``56.0000028`` is not ``56``); floats compare within tolerance (an int
    is fine there); bools exactly (``True`` is not ``1``); arrays by shape, dtype and values.
    When the expected value is itself an error record, only the exception's class name has
    to match, and only an error the learner's code raised: a probe's own failure (marked
    ``"origin": "probe"``, see :mod:`minijit.grading.probing`) never does.
    """
    exp_err, got_err = error_of(expected), error_of(got)
    if exp_err is not None:
        if (got_err is not None and got_err.get("type") == exp_err.get("type")
                and got_err.get("origin") != "probe"):
            return None
        if got_err is not None and got_err.get("origin") == "probe":
            return (f"expected your code to raise {exp_err.get('type')}, but the test itself "
                    f"failed on what it got: {describe(got)}")
        return f"expected it to raise {exp_err.get('type')}, but got {describe(got)}"
    if got_err is not None:
        return f"raised {got_err.get('type')}: {got_err.get('message', '')}".rstrip(": ")
    return _compare(expected, got, rtol, atol, "")


def _where(path: str) -> str:
    return f" at {path}" if path else ""


def _compare(exp: Any, got: Any, rtol: float, atol: float, path: str) -> str | None:
    if _is_array(exp):
        if not _is_array(got):
            return f"expected an array{_where(path)}, got {describe(got)}"
        e, g = exp["__array__"], got["__array__"]
        if e["shape"] != g["shape"]:
            return f"shape{_where(path)}: expected {tuple(e['shape'])}, got {tuple(g['shape'])}"
        if e["dtype"] != g["dtype"]:
            return f"dtype{_where(path)}: expected {e['dtype']}, got {g['dtype']}"
        return _compare_values(e["data"], g["data"], rtol, atol, path)
    return _compare_values(exp, got, rtol, atol, path)


def _compare_values(exp: Any, got: Any, rtol: float, atol: float, path: str) -> str | None:
    te, tg = type(exp), type(got)
    if te is bool or tg is bool:
        if te is not tg or exp != got:
            return f"expected {describe(exp)}{_where(path)}, got {describe(got)}"
        return None
    if te in (int, float) and tg in (int, float):
        if te is int:
            ok = tg is int and exp == got
        elif math.isnan(exp) or math.isnan(got):
            ok = math.isnan(exp) and math.isnan(got)
        else:
            ok = math.isclose(exp, got, rel_tol=rtol, abs_tol=atol)
        return None if ok else f"expected {describe(exp)}{_where(path)}, got {describe(got)}"
    if te is list:
        if tg is not list:
            return f"expected a list{_where(path)}, got {describe(got)}"
        if len(exp) != len(got):
            return f"expected {len(exp)} items{_where(path)}, got {len(got)}"
        for i, (e, g) in enumerate(zip(exp, got)):
            reason = _compare(e, g, rtol, atol, f"{path}[{i}]")
            if reason:
                return reason
        return None
    if te is dict:
        if tg is not dict or set(exp) != set(got):
            return f"expected {describe(exp)}{_where(path)}, got {describe(got)}"
        for k in exp:
            reason = _compare(exp[k], got[k], rtol, atol, f"{path}.{k}" if path else k)
            if reason:
                return reason
        return None
    if te is not tg or exp != got:
        return f"expected {describe(exp)}{_where(path)}, got {describe(got)}"
    return None


def _is_array(value: Any) -> bool:
    return isinstance(value, dict) and set(value) == {"__array__"}


_DTYPE_SHORT = {"float64": "f64", "float32": "f32", "int64": "i64", "int32": "i32",
                "bool": "bool", "float16": "f16", "int8": "i8", "int16": "i16",
                "uint8": "u8", "uint32": "u32", "uint64": "u64"}


def describe(value: Any, limit: int = 120) -> str:
    """A short human-readable rendering of plain data, for tables and feedback."""
    text = _describe(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _describe(value: Any) -> str:
    err = error_of(value)
    if err is not None:
        message = err.get("message", "")
        return f"{err.get('type')}: {message}" if message else f"raises {err.get('type')}"
    if _is_array(value):
        a = value["__array__"]
        dtype = _DTYPE_SHORT.get(a["dtype"], a["dtype"])
        shape = ",".join(str(d) for d in a["shape"])
        return f"{dtype}[{shape}] {_describe(a['data'])}"
    if isinstance(value, list):
        return "[" + ", ".join(_describe(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {_describe(v)}" for k, v in value.items()) + "}"
    if isinstance(value, str):
        return repr(value)
    return repr(value)
