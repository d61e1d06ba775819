"""The grader's entry point inside a kernel: :func:`install` once, then :func:`serve`.

The probes' prelude is this module with :mod:`minijit.grading.plain_data` and
:mod:`minijit.grading.probing`, shipped as source (:data:`SHIPPED`, joined by
:mod:`minijit.grading.channel`) and executed in one fresh dictionary in the kernel. It is
installed by :func:`install` before any of the learner's code runs. It keeps a private copy
of the builtins and the pristine hooks of ``sys`` and ``threading``, so that later requests
run with what the kernel started with, whatever the notebook replaced; :func:`serve` then
answers each request, reporting the cheap forgeries it finds (:func:`forgery_report`) and
serialising each result the moment its probe returns. Same rules as ``probing``: the
standard library and NumPy only, no other import from ``minijit``.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Mapping
from typing import Any

from .plain_data import encode, json_string
from .probing import _PRISTINE, error_data, minijits_own_pieces, probe_text

# The prelude's modules, in the order their source is joined (each uses the ones before).
SHIPPED = ("plain_data", "probing", "prelude")

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
            parts = parts + (json_string(key) + ":" + text,)
            if guard:
                disarm(found)
                forgery_report(ns, found)
    env = environment_report(ns)
    env["forgery"] = sorted(found | set(env["forgery"]))
    return signed('{"nonce":' + json_string(nonce) + ',"results":{' + ",".join(parts)
                  + '},"env":' + encode(env) + "}")
