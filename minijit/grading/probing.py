"""Probes: the small programs that exercise a learner's code and return plain data.

A probe is a function ``probe(ns, *args)`` that looks up the learner's definitions in the
namespace ``ns``, calls them, and returns plain data (numbers, strings, lists, dicts, and
arrays turned into ``{"__array__": ...}``). The same probe runs in two places:

- in the learner's own process, for ``check()`` (trusted: it is their own feedback), and
- inside the kernel that executed a submission, for the batch grader. There this whole
  module is shipped *as source text* and executed in a fresh dictionary, so a notebook that
  monkeypatches ``minijit.grading`` cannot change what the probes do.

Because of that second use, this module must stay self-contained: only the standard library
and NumPy at the top, no imports from the rest of ``minijit``. Probe functions follow the
same rule: they may use the names defined here (``np``, ``get``, ``to_data``, ``printed``,
...) and import ``minijit`` inside their body, nothing else from their own module.

Nothing here decides pass or fail. Results are serialised by :func:`encode` (our own tiny
JSON writer, so a patched ``json`` module in the kernel changes nothing) and compared in the
grader's process, against expected values the kernel never sees.
"""

from __future__ import annotations

import contextlib
import io
import math
import sys
import traceback
from collections.abc import Callable, Mapping
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


def get(ns: Mapping[str, Any], name: str) -> Any:
    """The learner's definition ``name``, or a NameError that says what to do."""
    try:
        return ns[name]
    except KeyError:
        raise NameError(
            f"name {name!r} is not defined: run the exercise cell (and the cells above it)"
        ) from None


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
        return _array_data(np.asarray(value))
    if t is list or t is tuple:
        return [to_data(v, _depth + 1) for v in value]
    if t is dict:
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


def error_data(exc: BaseException) -> dict:
    """Plain-data description of an exception raised by the learner's code."""
    # Walk the traceback to the innermost frame so feedback can name the learner's line.
    line = ""
    tb = exc.__traceback__
    frames = traceback.extract_tb(tb) if tb is not None else []
    if frames:
        last = frames[-1]
        line = (last.line or "").strip()
    return {"__error__": {"type": type(exc).__name__, "message": str(exc)[:2000],
                          "line": line[:300]}}


class _BoundedText(io.StringIO):
    """A stdout replacement that stops growing, so a print loop cannot exhaust memory."""

    def write(self, s: str) -> int:
        if self.tell() < MAX_TEXT:
            super().write(s[: MAX_TEXT - self.tell()])
        return len(s)


def printed(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> tuple[Any, str]:
    """Call ``fn`` and return ``(result, text it printed to stdout)``."""
    buf = _BoundedText()
    with contextlib.redirect_stdout(buf):
        result = fn(*args, **kwargs)
    return result, buf.getvalue()


def run_probe(probe: Callable[..., Any], ns: Mapping[str, Any], args: Any) -> Any:
    """Run one probe and return plain data; any exception becomes an error record.

    ``BaseException`` on purpose: a learner's ``sys.exit()`` inside a function must fail the
    case, not end the grading. ``KeyboardInterrupt`` is re-raised so that the grader's
    interrupt (a timeout) still stops the kernel's work.
    """
    try:
        with contextlib.redirect_stdout(_BoundedText()), contextlib.redirect_stderr(
            _BoundedText()
        ):
            return to_data(probe(ns, *args))
    except KeyboardInterrupt:
        raise
    except BaseException as exc:  # noqa: BLE001 - see the docstring
        return error_data(exc)


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
        out.append(_quote(value))
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
            out.append(_quote(str.__str__(k)))
            out.append(":")
            _encode(v, out, depth + 1)
        out.append("}")
    else:
        raise NotGradable(f"cannot encode {t.__name__}")


def _quote(s: str) -> str:
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


# ----------------------------------------------------------------------------------------
# The grader's entry point inside the kernel
# ----------------------------------------------------------------------------------------


def environment_report(ns: Mapping[str, Any]) -> dict:
    """What a notebook may have changed that matters to grading, as plain data.

    Counts of IPython's input and AST transformers (compared by the grader against the
    counts before any learner code ran), and the names of ``minijit.grading`` functions
    that were replaced by functions defined in the notebook.
    """
    report: dict = {"transformers": None, "replaced": []}
    get_ipython = ns.get("get_ipython")
    try:
        shell = get_ipython() if callable(get_ipython) else None
        if shell is not None:
            report["transformers"] = [
                len(shell.input_transformers_cleanup),
                len(shell.input_transformers_post),
                len(shell.ast_transformers),
            ]
    except Exception:  # noqa: BLE001 - a broken shell is itself worth reporting
        report["transformers"] = "unavailable"
    replaced = []
    user_check = ns.get("check")
    if user_check is not None and getattr(user_check, "__globals__", None) is ns:
        replaced.append("check (redefined in the notebook)")
    for mod_name, mod in list(sys.modules.items()):
        if not mod_name.startswith("minijit.grading") or mod is None:
            continue
        for attr, obj in list(vars(mod).items()):
            # A function that lives in the notebook's namespace was put there by the notebook.
            if getattr(obj, "__globals__", None) is ns:
                replaced.append(f"{mod_name}.{attr}")
    report["replaced"] = replaced
    return report


def run_calls(ns: Mapping[str, Any], calls: list, nonce: str) -> str:
    """Run ``calls`` (``[key, probe source, probe name, args]``) and return encoded results.

    Each probe source is executed in a copy of this module's own namespace, so probes see
    only the prelude, never the learner's globals, except through ``ns``.
    """
    prelude = dict(globals())
    results = {}
    for key, source, name, args in calls:
        scope = dict(prelude)
        try:
            exec(compile(source, f"<probe {name}>", "exec"), scope)
            results[key] = run_probe(scope[name], ns, args)
        except KeyboardInterrupt:
            raise
        except BaseException as exc:  # noqa: BLE001 - reported as the case's result
            results[key] = error_data(exc)
    payload = {"nonce": nonce, "results": results, "env": environment_report(ns)}
    try:
        return encode(payload)
    except NotGradable as exc:  # pragma: no cover - to_data already guarantees plain data
        return encode({"nonce": nonce, "results": {}, "env": {}, "error": str(exc)})
