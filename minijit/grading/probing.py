"""Probes: the small programs that exercise a learner's code and return plain data.

A probe is a function ``probe(ns, *args)`` that looks up the learner's definitions in the
namespace ``ns``, calls them, and returns plain data (:mod:`minijit.grading.plain_data`). The
same probe runs in two places:

- in the learner's own process, for ``check()`` (trusted: it is their own feedback), and
- inside the kernel that executed a submission, for the batch grader. There this module,
  with :mod:`~minijit.grading.plain_data` and :mod:`~minijit.grading.prelude`, is shipped
  *as source text* and executed in a fresh dictionary (the probes' prelude), so a notebook
  that monkeypatches ``minijit.grading`` cannot change what the probes do.

Because of that second use, this module must stay self-contained: only the standard library
and NumPy at the top, no imports from the rest of ``minijit`` but the prelude's own modules.
Probe functions follow the same rule: they may use the names defined here and in
``plain_data`` (``np``, ``get``, ``to_data``, ``printed``, ...) and import ``minijit`` inside
their body, nothing else from their own module.

Nothing here decides pass or fail: results are compared in the grader's process, against
expected values the kernel never sees.

Errors carry their origin. A probe's own failure (a name the learner must define is missing,
a result that is not plain data, :class:`ProbeFailure` raised by a probe's own check) is
marked ``"origin": "probe"``; :func:`minijit.grading.cases.compare` never lets such a record
match a case that expects the learner's code to raise. The origin is decided from the
innermost frame of the traceback (a frame of the probe's or the prelude's own code), which
the learner's code cannot reach: code of theirs that raises is always the innermost frame.
An exercise's probes run on minijit's own build pieces (:func:`minijits_own_pieces`), as
``check()`` runs them, whatever the notebook switched in.
"""

from __future__ import annotations

import contextlib
import gc
import io
import sys
import traceback
from collections.abc import Callable, Mapping
from typing import Any

from .plain_data import MAX_DEPTH, MAX_TEXT, NotGradable, encode, to_data


class ProbeFailure(Exception):
    """Raised by a probe about its own checks (the learner's result has the wrong type, say).

    Its records are marked ``"origin": "probe"`` and never count as the learner's code
    raising. In a kernel the class is created afresh by each installed prelude, so the
    learner's code has no cheap way to raise it.
    """


class ProbeTimeLimit(BaseException):
    """A case ran past its time limit (``check()`` in the notebook). A BaseException, so
    that the learner's ``except Exception`` cannot swallow it."""


# Exceptions that are always the probe's own failure, whatever frame raised them.
_PROBE_ERRORS = (NotGradable, ProbeFailure, ProbeTimeLimit)


def get(ns: Mapping[str, Any], name: str) -> Any:
    """The learner's definition ``name``, or a NameError that says what to do."""
    try:
        return ns[name]
    except KeyError:
        raise NameError(
            f"name {name!r} is not defined: run the exercise cell (and the cells above it)"
        ) from None


def _own_files(probe: Any) -> frozenset:
    """File names of the code that is the probe's own: the probe's and the prelude's.

    In a kernel the probe's file is ``<probe NAME>``, its source alone; run in-process (for
    ``check()``), it is the exercise module, which the learner's code (in their notebook)
    never shares.
    """
    code = getattr(probe, "__code__", None)
    # the prelude's files: one, <minijit-grader-prelude>, in a kernel; two modules here
    names = {get.__code__.co_filename, to_data.__code__.co_filename}
    if code is not None:
        names.add(code.co_filename)
    return frozenset(names)


def _text(value: Any, limit: int) -> str:
    # str.__str__ gives an exact str even for a str subclass with its own methods.
    try:
        return str.__str__(value)[:limit] if isinstance(value, str) else str(value)[:limit]
    except Exception:  # noqa: BLE001 - an unprintable message is still an error
        return "<unprintable>"


def error_data(exc: BaseException, own_files: frozenset = frozenset()) -> dict:
    """Plain-data description of an exception, marked ``"origin": "probe"`` when it is the
    probe's own failure (see the module docstring) rather than the learner's code raising."""
    # Walk the traceback to the innermost frame so feedback can name the learner's line.
    line = ""
    tb = exc.__traceback__
    frames = traceback.extract_tb(tb) if tb is not None else []
    innermost = frames[-1].filename if frames else None
    if frames:
        line = (frames[-1].line or "").strip()
    record = {"type": _text(type.__dict__["__name__"].__get__(type(exc)), 200),
              "message": _text(exc, 2000), "line": line[:300]}
    if isinstance(exc, _PROBE_ERRORS) or innermost in own_files or innermost is None:
        record["origin"] = "probe"
    return {"__error__": record}


class _BoundedText(io.StringIO):
    """A stdout replacement that stops growing, so a print loop cannot exhaust memory."""

    def write(self, s: str) -> int:
        if self.tell() < MAX_TEXT:
            super().write(s[: MAX_TEXT - self.tell()])
        return len(s)


def minijits_code(fn: Any, reference: Any, package_dir: str) -> str | None:
    """What makes ``fn`` minijit's code rather than the learner's, in words; None if nothing.

    ``fn`` is minijit's when it is ``reference`` (minijit's own piece), shares its code, or is
    a function defined in a file under ``package_dir`` (minijit's folder). A
    ``functools.partial``, a bound method and a ``functools.wraps`` wrapper are looked
    through to what they call. Exact type checks only, so no code of the learner's runs.
    """
    import functools
    import os
    import types

    root = os.path.realpath(package_dir)
    how = ""
    for _ in range(MAX_DEPTH):
        t = type(fn)
        if t is functools.partial:
            how, fn = how + "a functools.partial of ", fn.func
        elif t is types.MethodType:
            how, fn = how + "a method bound to ", fn.__func__
        elif t is not types.FunctionType:
            return None
        elif fn is not reference and "__wrapped__" in fn.__dict__:
            how, fn = how + "a functools.wraps wrapper of ", fn.__dict__["__wrapped__"]
        else:
            code = fn.__code__
            path = os.path.realpath(code.co_filename)
            ref_code = getattr(reference, "__code__", None)
            in_minijit = os.path.isabs(code.co_filename) and path.startswith(root + os.sep)
            if fn is not reference and code is not ref_code and not in_minijit:
                return None
            where = os.path.relpath(path, os.path.dirname(root)).replace(os.sep, "/")
            own = "minijit's own piece" if code is ref_code else "minijit's"
            return f"{how}{own} {code.co_name} (in {where})"
    return None


def probe_own_work(ns, piece, function):
    """None when the learner's ``function`` (their build piece ``piece``) is their own work;
    else why not: it is minijit's code (``minijit.build.refused_own`` says whose), or it
    hands its work to minijit's own piece on the piece's small example
    (``minijit.build.handed_over``)."""
    import os

    import minijit
    from minijit import build

    if piece not in build.PIECES:
        import minijit.codegen.kernels  # noqa: F401 - registers loop_nest
    registered = build.PIECES.get(piece)
    fn = ns.get(function)
    if registered is None or fn is None:
        return None
    what = minijits_code(fn, registered.reference, os.path.dirname(minijit.__file__))
    if what is not None:
        return build.refused_own(function, what)
    return build.handed_over(piece, fn) if callable(fn) else None


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
        return error_data(exc, _own_files(probe))


def probe_text(probe: Callable[..., Any], ns: Mapping[str, Any], args: Any) -> str:
    """Run one probe and return its result already serialised (JSON text).

    The text is made while the learner's result is still referenced here and with the
    garbage collector off, so no ``__del__`` of theirs runs between the probe returning and
    the result becoming an immutable string: what such a hook finds later cannot change it.
    """
    value = None
    try:
        with contextlib.redirect_stdout(_BoundedText()), contextlib.redirect_stderr(
            _BoundedText()
        ):
            value = probe(ns, *args)
        was_enabled = gc.isenabled()
        gc.disable()
        try:
            text = encode(to_data(value))
        finally:
            if was_enabled:
                gc.enable()
    except KeyboardInterrupt:
        raise
    except BaseException as exc:  # noqa: BLE001 - see run_probe
        text = encode(error_data(exc, _own_files(probe)))
    del value
    return text


# Filled by prelude.install in a kernel: what the kernel started with (its modules, hooks,
# builtins). Empty in the grader's own process, where the probes run for check().
_PRISTINE: dict = {}


def minijits_own_pieces():
    """A block in which every build piece is minijit's own, the notebook's switches back at
    its end (``minijit.build.minijits_own``): each exercise is graded on its own answer,
    never on a piece a cell switched in for another. Nothing to do where the notebook has
    not imported minijit."""
    build = _PRISTINE.get("modules", sys.modules).get("minijit.build")
    own = getattr(build, "minijits_own", None)
    return own() if callable(own) else contextlib.nullcontext()
