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

Errors carry their origin. A probe's own failure (a name the learner must define is missing,
a result that is not plain data, :class:`ProbeFailure` raised by a probe's own check) is
marked ``"origin": "probe"``; :func:`minijit.grading.cases.compare` never lets such a record
match a case that expects the learner's code to raise. The origin is decided from the
innermost frame of the traceback (a frame of the probe's or the prelude's own code), which
the learner's code cannot reach: code of theirs that raises is always the innermost frame.

In a grading kernel (see :mod:`minijit.grading.channel`) the prelude is installed once, by
:func:`install`, before any of the learner's code runs. It keeps a private copy of the
builtins and the pristine hooks of ``sys`` and ``threading``, so that later requests run with
what the kernel started with, whatever the notebook replaced; :func:`serve` then answers each
request, reporting the cheap forgeries it finds (:func:`forgery_report`) and serialising each
result the moment its probe returns. An exercise's probes run on minijit's own build pieces
(:func:`minijits_own_pieces`), as ``check()`` runs them, whatever the notebook switched in.
"""

from __future__ import annotations

import contextlib
import gc
import io
import math
import sys
import threading
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
# Names of dicts that stand for arrays and errors in plain data: a learner's result may not
# use them, or a dict returned by their code could pass for an error it never raised.
_RESERVED_KEYS = ({"__array__"}, {"__error__"})


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


def _own_files(probe: Any) -> frozenset:
    """File names of the code that is the probe's own: the probe's and the prelude's.

    In a kernel the probe's file is ``<probe NAME>``, its source alone; run in-process (for
    ``check()``), it is the exercise module, which the learner's code (in their notebook)
    never shares.
    """
    code = getattr(probe, "__code__", None)
    names = {get.__code__.co_filename}
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


# Builtins the prelude and the probes rely on, and a notebook could wrap to forge results.
GUARDED_BUILTINS = (
    "__import__", "exec", "eval", "compile", "isinstance", "issubclass", "type", "getattr",
    "setattr", "hasattr", "len", "repr", "str", "int", "float", "bool", "list", "tuple",
    "dict", "set", "object", "iter", "next", "vars", "globals", "locals", "id", "hash",
    "callable", "super", "print", "range", "enumerate", "zip", "sorted", "min", "max", "abs",
    "sum", "any", "all", "round", "BaseException", "Exception", "KeyboardInterrupt",
)
# Prefixes of modules a notebook must not import: the course's reference solutions, and
# exercise or hidden-case files the grader loaded from paths.
REFERENCE_PREFIXES = ("minijit.grading.exercises.", "_minijit_grading_ext_")
# Every phrase forgery_report() and disarm() may report: the grader shows no other text from
# a kernel once hidden cases were sent there.
# A hook runs the notebook's code inside the grader's own frames (it can read and rewrite
# them), so results obtained while one was set are void; the other forgeries only ever
# affect the notebook's own code, which the prelude does not call.
HOOK_PHRASES = frozenset(["a sys.settrace hook", "a sys.setprofile hook",
                          "a threading.settrace hook", "a threading.setprofile hook"])
FORGERY_PHRASES = frozenset(
    [f"builtins.{name} replaced" for name in GUARDED_BUILTINS]
    + ["a global named __import__", "a global named __builtins__"]) | HOOK_PHRASES
# Set by install(): what the kernel started with (see the module docstring).
_PRISTINE: dict = {}


def install(ns: Mapping[str, Any], key: str, nonce: str, mac_key: str) -> str:
    """Set up the grader inside a fresh kernel, before any learner code; return the report.

    Keeps the pristine builtins, ``sys``/``threading`` hooks and the namespace's own
    ``__builtins__``, and registers :func:`serve` under ``key`` in the globals of
    ``_frozen_importlib`` (where :mod:`minijit.grading.channel` reaches it without looking up
    a single name the notebook could shadow). Every answer from then on is signed with
    ``mac_key`` (an HMAC computed by a C function kept now), so code that rewrites an answer
    after it left :func:`serve` (a wrapped ``eval``, an IPython formatter, a ``__del__``)
    cannot make it pass.
    """
    import builtins

    try:
        from _hashlib import hmac_digest as digest
    except ImportError:  # an interpreter without OpenSSL
        from hmac import digest
    _PRISTINE.update(
        mac=(digest, mac_key.encode("ascii")),
        builtins_module=builtins, builtins=dict(vars(builtins)),
        ns_builtins=ns.get("__builtins__"), ns_import="__import__" in ns,
        settrace=sys.settrace, setprofile=sys.setprofile, gettrace=sys.gettrace,
        getprofile=sys.getprofile, trace=sys.gettrace(), profile=sys.getprofile(),
        threading=threading, thread_trace=getattr(threading, "_trace_hook", None),
        thread_profile=getattr(threading, "_profile_hook", None),
        modules=sys.modules, shell=_shell(ns))
    vars(sys.modules["_frozen_importlib"])[key] = serve
    return signed(encode({"nonce": nonce, "results": {}, "env": environment_report(ns)}))


def signed(text: str) -> str:
    """``text`` (ASCII JSON) behind its HMAC-SHA256, in hex: what the grader checks."""
    digest, key = _PRISTINE["mac"]
    return bytes.hex(digest(key, str.encode(text, "ascii"), "sha256")) + text


def _shell(ns: Mapping[str, Any]) -> Any:
    get_ipython = ns.get("get_ipython")
    try:
        return get_ipython() if callable(get_ipython) else None
    except Exception:  # noqa: BLE001 - no shell: the transformer counts are unavailable
        return None


def disarm(found: set) -> None:
    """Put back the trace and profile hooks the kernel started with, noting any other."""
    p = _PRISTINE
    if p["gettrace"]() is not p["trace"]:
        found.add("a sys.settrace hook")
        p["settrace"](p["trace"])
    if p["getprofile"]() is not p["profile"]:
        found.add("a sys.setprofile hook")
        p["setprofile"](p["profile"])
    th = p["threading"]
    for attr, word, phrase in (("_trace_hook", "thread_trace", "a threading.settrace hook"),
                               ("_profile_hook", "thread_profile",
                                "a threading.setprofile hook")):
        if vars(th).get(attr) is not p[word]:
            found.add(phrase)
            vars(th)[attr] = p[word]


def forgery_report(ns: Mapping[str, Any], found: set) -> None:
    """Add to ``found`` what a notebook changed to forge results (fixed phrases only)."""
    p = _PRISTINE
    if "__import__" in ns and not p["ns_import"]:
        found.add("a global named __import__")
    if ns.get("__builtins__") is not p["ns_builtins"]:
        found.add("a global named __builtins__")
    current = vars(p["builtins_module"])
    for name in GUARDED_BUILTINS:
        if current.get(name) is not p["builtins"].get(name):
            found.add(f"builtins.{name} replaced")


def reference_modules() -> list:
    """Names of the grader's reference or exercise modules the notebook imported."""
    found = []
    for name in list(_PRISTINE.get("modules", sys.modules)):
        if type(name) is str and name.startswith(REFERENCE_PREFIXES):
            found.append(name[:80])
    package = _PRISTINE.get("modules", sys.modules).get("minijit.grading.exercises")
    for attr, value in list(vars(package).items()) if package is not None else ():
        if type(attr) is str and type(value).__name__ == "module" and not attr.startswith("_"):
            found.append(f"minijit.grading.exercises.{attr[:40]}")
    return sorted(set(found))


def environment_report(ns: Mapping[str, Any]) -> dict:
    """What a notebook may have changed that matters to grading, as plain data.

    Counts of IPython's input and AST transformers (compared by the grader against the
    counts before any learner code ran), the names of ``minijit.grading`` functions
    that were replaced by functions defined in the notebook, the grader's reference modules
    it imported, and (once :func:`install` ran) the forgeries of :func:`forgery_report`.
    """
    report: dict = {"transformers": None, "replaced": [], "forgery": [], "references": []}
    shell = _PRISTINE.get("shell") or _shell(ns)
    try:
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
        if type(mod_name) is not str or not mod_name.startswith("minijit.grading") or mod is None:
            continue
        for attr, obj in list(vars(mod).items()):
            # A function that lives in the notebook's namespace was put there by the notebook.
            if getattr(obj, "__globals__", None) is ns:
                replaced.append(f"{mod_name}.{attr}"[:120])
    report["replaced"] = replaced
    report["references"] = reference_modules()
    if _PRISTINE:
        found: set = set()
        forgery_report(ns, found)
        report["forgery"] = sorted(found)
    return report


def minijits_own_pieces():
    """A block in which every build piece is minijit's own, the notebook's switches back at
    its end (``minijit.build.minijits_own``): each exercise is graded on its own answer,
    never on a piece a cell switched in for another. Nothing to do where the notebook has
    not imported minijit."""
    build = _PRISTINE.get("modules", sys.modules).get("minijit.build")
    own = getattr(build, "minijits_own", None)
    return own() if callable(own) else contextlib.nullcontext()


def serve(payload: tuple, ns: Mapping[str, Any]) -> str:
    """Answer one grader request: ``payload`` is ``(nonce, guard, calls)``, each call
    ``(key, probe source, probe name, args)``; return the answer as JSON text.

    With ``guard`` (always, in a kernel), trace and profile hooks are put back to what the
    kernel started with before the first probe and after each one, and the forgeries found
    on the way are reported. Each probe source is executed in a copy of this module's
    namespace, so probes see only the prelude, never the learner's globals except through
    ``ns``. Each result is serialised as its probe returns and kept in an immutable string.
    """
    nonce, guard, calls = payload
    found: set = set()
    if guard:
        disarm(found)
        forgery_report(ns, found)
    prelude = dict(globals())
    parts = ()
    with minijits_own_pieces():
        for key, source, name, args in calls:
            scope = dict(prelude)
            try:
                exec(compile(source, f"<probe {name}>", "exec"), scope)
                text = probe_text(scope[name], ns, args)
            except KeyboardInterrupt:
                raise
            except BaseException as exc:  # noqa: BLE001 - reported as the case's result
                text = encode(error_data(exc, frozenset({f"<probe {name}>"})))
            parts = parts + (_quote(key) + ":" + text,)
            if guard:
                disarm(found)
                forgery_report(ns, found)
    env = environment_report(ns)
    env["forgery"] = sorted(found | set(env["forgery"]))
    return signed('{"nonce":' + _quote(nonce) + ',"results":{' + ",".join(parts) + '},"env":'
                  + encode(env) + "}")
