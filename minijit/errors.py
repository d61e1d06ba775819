"""The errors a learner meets, with JAX's class names and hierarchy (chapter 04).

All tracer errors are `TypeError`s, as in JAX:

    ConcretizationTypeError          int(x), float(x) on a traced value
      TracerBoolConversionError      `if x > 0:` / `while x:` on a traced value
    TracerIntegerConversionError     range(x), x used as an index into a Python list
    TracerArrayConversionError       np.asarray(x), np.sin(x) on a traced value
    UnexpectedTracerError            a tracer used after the trace that made it has ended

Every message says what was concretized, which argument it came from, the line of the user's
code, and how to fix it. This module also finds "the user's line": the innermost stack frame
that is not inside minijit itself, and hides minijit's own frames from the tracebacks of errors
raised through its public functions (`api_boundary`).
"""

from __future__ import annotations

import functools
import linecache
import os
import sys
import types
from collections.abc import Callable

from minijit import build
from minijit.config import config

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


class JAXIndexError(IndexError):
    """Base of minijit's indexing errors (named as in `jax.errors`)."""


class NonConcreteBooleanIndexError(JAXIndexError):
    """A traced boolean mask was used as an index: the result's shape would depend on data."""


def user_frame(skip_internal: bool = True):
    """The innermost frame outside the minijit package (the learner's code), or None.

    A piece of the build track that the learner switched in is minijit's code while it runs:
    a run of frames outside the package that `build.call` (or a selftest's `build.trial`)
    called is skipped, helpers and wrappers of the piece included, so the line found is the
    one being traced or run, whoever wrote the piece."""
    frame = sys._getframe(1)
    if not skip_internal:
        return frame
    found = None  # the innermost frame of the run of frames outside minijit being walked
    while frame is not None:
        if not in_package(frame.f_code.co_filename):
            found = found or frame
        elif found is not None:
            if frame.f_code not in build.PIECE_RUNNERS:
                return found
            found = None  # minijit called that run to run a piece: it is minijit's
        frame = frame.f_back
    return found


# filename -> whether it is one of minijit's files. Tracing asks for every equation it records
# (`user_location`), walking a dozen of minijit's frames each time; os.path.abspath is most of
# that cost, and a code object's filename never changes.
_package_files: dict[str, bool] = {}


def in_package(filename: str) -> bool:
    """Whether `filename` (a code object's `co_filename`) is one of minijit's own files.

    Never fails: a pseudo file name (`<stdin>`, `<string>`, `<ipython-input-1-...>`) is no
    file of minijit's and is not looked up, and a relative name whose working directory was
    deleted (a notebook that removed its own folder) counts as the learner's."""
    inside = _package_files.get(filename)
    if inside is None:
        if filename.startswith("<"):
            inside = False
        else:
            try:  # abspath asks for the working directory when `filename` is relative
                inside = os.path.abspath(filename).startswith(_PACKAGE_DIR + os.sep)
            except OSError:
                return False  # not cached: the directory may come back
        _package_files[filename] = inside
    return inside


def user_line() -> str | None:
    """`file.py:12 (fn): <source line>` for the learner's current line, or None."""
    frame = user_frame()
    if frame is None:
        return None
    return describe_frame(frame)


def describe_frame(frame) -> str:
    filename, lineno = frame.f_code.co_filename, frame.f_lineno
    source = linecache.getline(filename, lineno).strip()
    where = f"{short_filename(filename)}:{lineno} ({frame.f_code.co_name})"
    return f"{where}: {source}" if source else where


def user_location() -> str | None:
    """`file.py:12 (fn)`, cheap enough to record for every staged equation."""
    frame = user_frame()
    if frame is None:
        return None
    return f"{short_filename(frame.f_code.co_filename)}:{frame.f_lineno} ({frame.f_code.co_name})"


def short_filename(filename: str) -> str:
    # Notebook cells are compiled from files like /tmp/ipykernel_123/4567.py: say "cell".
    if "ipykernel_" in filename or filename.startswith("<ipython-input"):
        return "<notebook cell>"
    if filename.startswith("<"):  # <stdin>, <string>: no file to shorten
        return filename
    # Relative to the working directory, which may change: os.path.relpath costs more than
    # the rest of recording an equation, so each (directory, file) is worked out once.
    try:
        key = (os.getcwd(), filename)
    except OSError:  # the working directory was deleted: nothing to be relative to
        return filename
    short = _short_filenames.get(key)
    if short is None:
        try:
            rel = os.path.relpath(filename, key[0])
        except ValueError:  # another drive, on Windows
            rel = ".."
        short = _short_filenames[key] = rel if not rel.startswith("..") else filename
    return short


_short_filenames: dict[tuple[str, str], str] = {}


# --------------------------------------------------------------------------- traceback filtering
#
# An error raised deep inside minijit passes through a dozen of its frames before it reaches
# the learner's call. Every public entry point (`jit(...)`, calling a jitted function, the
# `make_jaxpr`, `trace`/`lower`/`compile` stages, each `mnp`, `lax` and `debug` function,
# `x.at[...]` and `Array` indexing) is wrapped in `api_boundary`. The outermost boundary on the
# stack, and only it, drops minijit's frames from the exception's traceback and re-raises it
# with a bare `raise`, which adds no frame of its own. Frames above the boundary are the
# learner's, so what plain Python, IPython, Jupyter and pytest print shows their code only.
# This is JAX's mechanism (jax._src.traceback_util, its "quiet_remove_frames" mode). Until
# something raises it costs one extra call (about 0.1 us); there is no global counter, so
# threads cannot confuse each other's boundaries. `traceback_filtering` False (or "off")
# keeps the full traceback, for debugging minijit itself.


def filtered_traceback(tb):
    """`tb` without minijit's own frames (None if only those are left; `tb` itself if none
    of them were there)."""
    kept, first, total = [], tb, 0
    while tb is not None:
        if not in_package(tb.tb_frame.f_code.co_filename):
            kept.append(tb)
        tb, total = tb.tb_next, total + 1
    if len(kept) == total:
        return first
    new = None
    for t in reversed(kept):
        new = types.TracebackType(new, t.tb_frame, t.tb_lasti, t.tb_lineno)
    return new


_HIDDEN_NOTE = ("(minijit hid its own frames from this traceback; "
                "minijit.config.update('traceback_filtering', False) shows them)")


def _hide_internal_frames(e: BaseException) -> None:
    """Filter the traceback of `e` and of the exceptions chained to it (`raise ... from`, or
    raised while handling another), which Python prints too; then say so in a note."""
    top, seen, hid = e, set(), False
    while e is not None and id(e) not in seen:
        seen.add(id(e))
        tb = e.__traceback__
        new = filtered_traceback(tb)
        if new is not tb:
            hid = True
            e.__traceback__ = new
        e = e.__cause__ if e.__cause__ is not None else (
            None if e.__suppress_context__ else e.__context__)
    # add_note is Python 3.11+; on 3.10 the frames are hidden all the same
    if hid and hasattr(top, "add_note") and _HIDDEN_NOTE not in getattr(top, "__notes__", ()):
        top.add_note(_HIDDEN_NOTE)


def _filtering_enabled() -> bool:
    mode = config.traceback_filtering
    return bool(mode) and mode != "off"


def api_boundary(fn: Callable) -> Callable:
    """Make `fn` a public entry point: an exception raised inside it (in minijit, or in the
    learner's code that minijit called) shows only the learner's frames, as in JAX.

    Boundaries nest (a jitted function calls `mnp.sin`, which calls `lax.sin`); only the
    outermost one filters. `config.update("traceback_filtering", False)` keeps every frame, for
    debugging minijit itself."""

    @functools.wraps(fn)
    def reraise_with_filtered_traceback(*args, **kwargs):
        __tracebackhide__ = True  # noqa: F841 - pytest and IPython skip frames marked so
        try:
            return fn(*args, **kwargs)
        except Exception as e:
            leaving_minijit(e, sys._getframe(1))
            raise  # a bare raise keeps the filtered traceback and adds no frame

    return reraise_with_filtered_traceback


def leaving_minijit(e: Exception, caller) -> None:
    """Called by a boundary as `e` leaves it for `caller` (a frame): if no boundary is further
    out, hide minijit's frames. A hot entry point (calling a jitted function) does this in its
    own `except` clause instead of paying for a wrapper, and registers with `boundary_code`."""
    if _inside_a_boundary(caller):
        return
    _add_translation(e)  # first, so that it comes right under the message
    if _filtering_enabled():
        _hide_internal_frames(e)


# The course's message catalogue (minijit.grading.messages) gives the message in the course's
# language, or None (English, or nothing of it translated): set by whichever of the two
# modules loads second, so that this one, at the bottom of the library, imports nothing of
# the grader's.
translation_note: Callable[[str], str | None] | None = getattr(
    sys.modules.get("minijit.grading.messages"), "error_note", None)


def _add_translation(e: BaseException) -> None:
    """A note under minijit's message saying the same in the course's language, where it is
    not English; the message itself stays English, as JAX's, so it can still be searched for."""
    if translation_note is None or not hasattr(e, "add_note") or not e.args:
        return
    said = translation_note(str(e))
    if said and said not in getattr(e, "__notes__", ()):
        e.add_note(said)


_BOUNDARY_CODES = {api_boundary(lambda: None).__code__}


def boundary_code(fn: Callable) -> Callable:
    """Mark `fn` as a boundary that calls `leaving_minijit` itself (see there)."""
    _BOUNDARY_CODES.add(fn.__code__)
    return fn


def _inside_a_boundary(frame) -> bool:
    """Whether an `api_boundary` is among `frame` and its callers."""
    while frame is not None:
        if frame.f_code in _BOUNDARY_CODES:
            return True
        frame = frame.f_back
    return False


def api_boundaries(namespace: dict) -> None:
    """Wrap every public function of a module (`namespace` is its `globals()`) in
    `api_boundary`: each name in `__all__`, or else each function the module defines.
    Aliases (`divide = true_divide`) stay the same object."""
    names = namespace.get("__all__") or [
        n for n, v in namespace.items()
        if isinstance(v, types.FunctionType) and v.__module__ == namespace["__name__"]]
    wrapped: dict[int, Callable] = {}
    for name in names:
        value = namespace[name]
        if name.startswith("_") or not isinstance(value, types.FunctionType):
            continue
        if id(value) not in wrapped:
            wrapped[id(value)] = api_boundary(value)
        namespace[name] = wrapped[id(value)]
