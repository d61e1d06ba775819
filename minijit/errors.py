"""The errors a learner meets, with JAX's class names and hierarchy (chapter 04).

All tracer errors are `TypeError`s, as in JAX:

    ConcretizationTypeError          int(x), float(x) on a traced value
      TracerBoolConversionError      `if x > 0:` / `while x:` on a traced value
    TracerIntegerConversionError     range(x), x used as an index into a Python list
    TracerArrayConversionError       np.asarray(x), np.sin(x) on a traced value
    UnexpectedTracerError            a tracer used after the trace that made it has ended

Every message says what was concretized, which argument it came from, the line of the user's
code, and how to fix it. This module also finds "the user's line": the innermost stack frame
that is not inside minijit itself.
"""

from __future__ import annotations

import linecache
import os
import sys

_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))


class JAXTypeError(TypeError):
    """Base of minijit's tracer errors (named as in `jax.errors`)."""


class ConcretizationTypeError(JAXTypeError):
    """A traced value was needed as a concrete Python value."""


class TracerBoolConversionError(ConcretizationTypeError):
    """A traced value was used where Python needs True or False."""


class TracerIntegerConversionError(JAXTypeError):
    """A traced value was used where Python needs an int (`range`, list indexing)."""


class TracerArrayConversionError(JAXTypeError):
    """A traced value was handed to NumPy, which needs real data."""


class UnexpectedTracerError(JAXTypeError):
    """A tracer escaped the function being traced and was used afterwards."""


def user_frame(skip_internal: bool = True):
    """The innermost frame outside the minijit package (the learner's code), or None."""
    frame = sys._getframe(1)
    while frame is not None:
        filename = frame.f_code.co_filename
        if not (skip_internal and os.path.abspath(filename).startswith(_PACKAGE_DIR)):
            return frame
        frame = frame.f_back
    return None


def user_line() -> str | None:
    """`file.py:12 (fn): <source line>` for the learner's current line, or None."""
    frame = user_frame()
    if frame is None:
        return None
    return describe_frame(frame)


def describe_frame(frame) -> str:
    filename, lineno = frame.f_code.co_filename, frame.f_lineno
    source = linecache.getline(filename, lineno).strip()
    where = f"{_short_filename(filename)}:{lineno} ({frame.f_code.co_name})"
    return f"{where}: {source}" if source else where


def user_location() -> str | None:
    """`file.py:12 (fn)`, cheap enough to record for every staged equation."""
    frame = user_frame()
    if frame is None:
        return None
    return f"{_short_filename(frame.f_code.co_filename)}:{frame.f_lineno} ({frame.f_code.co_name})"


def _short_filename(filename: str) -> str:
    # Notebook cells are compiled from files like /tmp/ipykernel_123/4567.py: say "cell".
    if "ipykernel_" in filename or filename.startswith("<ipython-input"):
        return "<notebook cell>"
    try:
        rel = os.path.relpath(filename)
    except ValueError:
        return filename
    return rel if not rel.startswith("..") else filename


# --------------------------------------------------------------------------- traceback filtering

_api_depth = 0


def filtered_traceback(tb):
    """The traceback without minijit's own frames: the learner sees their code only."""
    import types

    kept = []
    while tb is not None:
        if not os.path.abspath(tb.tb_frame.f_code.co_filename).startswith(_PACKAGE_DIR):
            kept.append(tb)
        tb = tb.tb_next
    new = None
    for t in reversed(kept):
        new = types.TracebackType(new, t.tb_frame, t.tb_lasti, t.tb_lineno)
    return new


def api_boundary(fn):
    """Wrap a public entry point (a jitted call, make_jaxpr) so that errors raised inside
    show the learner's frames only, as JAX does. `config.update("traceback_filtering",
    False)` shows everything (for debugging minijit itself)."""
    import functools

    @functools.wraps(fn)
    def wrapped(*args, **kwargs):
        global _api_depth
        _api_depth += 1
        try:
            return fn(*args, **kwargs)
        except Exception as e:
            from minijit.config import config

            if _api_depth > 1 or not config.traceback_filtering:
                raise
            tb = filtered_traceback(e.__traceback__)
            if tb is None or tb is e.__traceback__:
                raise
            if hasattr(e, "add_note") and not getattr(e, "_minijit_noted", False):
                e.add_note("(minijit's internal frames are hidden; "
                           "config.update('traceback_filtering', False) shows them)")
                e._minijit_noted = True
            raise e.with_traceback(tb) from e.__cause__
        finally:
            _api_depth -= 1

    return wrapped
