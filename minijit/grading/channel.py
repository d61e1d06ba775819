"""The channel between the grader and a submission's kernel.

After the learner's cells have run, the grader sends each exercise's probes as a Jupyter
*user expression* attached to an empty ``execute_request``, and reads the answer from the
reply to that request. Why this channel rather than an injected code cell:

- IPython evaluates user expressions with a plain ``eval``: no input transformers, no AST
  transformers, no ``pre_run_cell`` hooks. A notebook that installs
  ``get_ipython().input_transformers_cleanup.append(...)`` to rewrite "later cells" cannot
  touch it (an injected cell would be rewritten before it ran).
- The empty code of the request never runs (IPython returns early on blank cells).
- The answer comes back in the reply to *our* message id, under a key that holds a fresh
  random nonce, and the answer must repeat the nonce; printed text cannot pass for it.

Two kinds of request:

- :func:`setup_expression`, sent once to a new kernel before any learner code runs: it
  executes the probes' prelude (:mod:`minijit.grading.prelude`, shipped as source) in a fresh
  dictionary whose builtins are a private copy of the pristine ones, and registers the
  prelude's ``serve`` under a key private to this kernel (see ``prelude.install``).
- :func:`expression`, one per batch of probe calls: it reaches ``serve`` without looking up
  any name at all (the eval runs in the notebook's namespace, where a global ``__import__``
  or ``__builtins__`` would shadow anything looked up by name): only attribute access on
  literals and C-level descriptors, which a notebook cannot redefine. The calls travel as
  Python literals written by :func:`literal` (no name in them either: ``inf`` is ``1e999``).

What the kernel sends back is data only: the verdict is decided in the grader's process.
This guards against cheap tricks inside the kernel; the sandbox (:mod:`minijit.grading.sandbox`)
keeps the kernel away from everything else. Code that digs the private key out of the
kernel's memory or rewrites the kernel's own message handling could still forge answers for
its own notebook. See the README's instructor's guide for what a determined student can
still do.
"""

from __future__ import annotations

import ast
import builtins
import hashlib
import hmac
import inspect
import json
import math
import secrets
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from . import plain_data, prelude, probing

_PRELUDE_MODULES = {"plain_data": plain_data, "probing": probing, "prelude": prelude}


def prelude_source() -> str:
    """The probes' prelude as one program: the source of each module of
    :data:`minijit.grading.prelude.SHIPPED`, in order, without their imports of each other
    (in one namespace their names are simply there) and with a single ``__future__`` line.
    """
    parts = ["from __future__ import annotations\n"]
    for name in prelude.SHIPPED:
        source = inspect.getsource(_PRELUDE_MODULES[name])
        lines = source.splitlines(keepends=True)
        for node in ast.parse(source).body:
            dropped = isinstance(node, ast.ImportFrom) and (
                node.level > 0 or node.module == "__future__")
            if dropped:
                for i in range(node.lineno - 1, node.end_lineno):
                    lines[i] = "\n"  # blank, not removed: line numbers stay the module's
        parts.append("".join(lines))
    return "\n".join(parts)


PRELUDE_SOURCE = prelude_source()

# Runs in the kernel at setup: executes the prelude in a fresh dict whose builtins are a
# private copy, and installs it. Written against the builtins module passed in (the kernel is
# still pristine then: no learner code has run).
_BOOT = """
def _minijit_boot(b, ns, payload):
    scope = {"__name__": "minijit_grader_prelude", "__builtins__": dict(b.__dict__)}
    b.exec(b.compile(payload[0], "<minijit-grader-prelude>", "exec"), scope)
    return scope["install"](ns, payload[1], payload[2], payload[3])
"""

# The globals of _frozen_importlib, reached from literals only: type(()) is tuple, its
# metaclass is type, and type's own descriptors (mappingproxy items, C getters) give the
# subclasses of object and each one's name without running any code of the notebook.
# BuiltinImporter is created when the interpreter starts, so the first class of that name
# in object.__subclasses__() is the real one; str.__eq__ is called directly so that a name
# that is a str subclass cannot run code either.
_REACH = ("(lambda T, E: [T.__dict__['__dict__'].__get__(c)['find_spec'].__func__.__globals__"
          " for c in T.__dict__['__subclasses__'](T.__dict__['__base__'].__get__(().__class__))"
          " if E('BuiltinImporter', T.__dict__['__name__'].__get__(c))][0])"
          "(().__class__.__class__, ''.__class__.__dict__['__eq__'])")


@dataclass(frozen=True)
class ProbeCall:
    """One case as the kernel sees it: no expected value, no hint, just what to run."""

    key: str
    source: str
    name: str
    args: tuple


class ChannelError(RuntimeError):
    """The kernel's answer is missing or malformed: the notebook interfered."""


def new_nonce() -> str:
    return secrets.token_hex(16)


def new_key() -> str:
    """A kernel's private key for the installed prelude (fresh for each kernel)."""
    return "_minijit_grader_" + secrets.token_hex(12)


def new_mac_key() -> str:
    """A kernel's private key for signing its answers (fresh for each kernel)."""
    return secrets.token_hex(32)


def literal(value: Any) -> str:
    """Python source for plain data that evaluates without looking up a name.

    ``repr`` would write ``inf`` and ``nan`` (names, which the notebook could define) and
    ``np.float64(1.5)`` for a NumPy scalar: arguments must be plain data (registry checks
    that at setup), and non-finite floats are written as ``1e999`` arithmetic.
    """
    t = type(value)
    if value is None or t is bool:
        return repr(value)
    if t is int:
        return int.__repr__(value)
    if t is float:
        if math.isnan(value):
            return "(1e999-1e999)"
        if math.isinf(value):
            return "1e999" if value > 0 else "(-1e999)"
        return float.__repr__(value)
    if t is str or t is bytes:
        return repr(value)
    if t is list:
        return "[" + ", ".join(literal(v) for v in value) + "]"
    if t is tuple:
        return "(" + "".join(literal(v) + ", " for v in value) + ")"
    if t is dict:
        return "{" + ", ".join(f"{literal(k)}: {literal(v)}" for k, v in value.items()) + "}"
    raise TypeError(f"not plain data: {t.__name__}")


def setup_expression(key: str, nonce: str, mac_key: str) -> str:
    """The user expression that installs the prelude in a fresh kernel (see the docstring)."""
    payload = (PRELUDE_SOURCE, key, nonce, mac_key)
    return (
        "(lambda b, boot: (b.exec(b.compile(boot, '<minijit-grader>', 'exec'), d := {}),"
        f" d['_minijit_boot'](b, b.globals(), {payload!r}))[1])"
        f"(__import__('builtins'), {_BOOT!r})"
    )


def expression(calls: list[ProbeCall] | tuple[ProbeCall, ...], nonce: str, key: str,
               guard: bool = True) -> str:
    """The user expression that runs ``calls`` with the prelude installed under ``key``."""
    payload = (nonce, guard, tuple((c.key, c.source, c.name, tuple(c.args)) for c in calls))
    # (lambda: 0).__globals__ is the namespace the expression is evaluated in: the notebook's.
    return f"{_REACH}[{key!r}]({literal(payload)}, (lambda: 0).__globals__)"


def run_locally(calls: list[ProbeCall] | tuple[ProbeCall, ...], namespace: Mapping[str, Any]
                ) -> dict[str, Any]:
    """Run ``calls`` as a kernel would, in this process, against ``namespace``.

    Same prelude source, same probe sources, same literals: a probe that works here works
    in a kernel. Used to compute expected values and to check probes at setup. No guard:
    the trace hooks of this process (a debugger, coverage) are left alone.
    """
    ns = dict(namespace)
    ns.setdefault("__builtins__", builtins)
    key, nonce, mac_key = new_key(), new_nonce(), new_mac_key()
    boot = vars(sys.modules["_frozen_importlib"])
    try:
        eval(setup_expression(key, nonce, mac_key), ns)  # noqa: S307 - our own expression
        text = eval(expression(calls, nonce, key, guard=False), ns)  # noqa: S307
    finally:
        boot.pop(key, None)
    return _verified(text, nonce, mac_key)["results"]


def user_expression_key(nonce: str) -> str:
    return f"minijit_grader_{nonce}"


def _verified(text: Any, nonce: str, mac_key: str) -> dict[str, Any]:
    """The JSON object behind a signed answer, or ChannelError."""
    if not isinstance(text, str) or len(text) < 64:
        raise ChannelError("the kernel's answer is not what the grader sent for")
    mac, body = text[:64], text[64:]
    want = hmac.new(mac_key.encode("ascii"), body.encode("ascii", "replace"),
                    hashlib.sha256).hexdigest()
    if not hmac.compare_digest(mac, want):
        raise ChannelError("the kernel's answer is not signed by the grader's prelude")
    try:
        data = json.loads(body)
    except (ValueError, RecursionError):
        raise ChannelError("the kernel's answer is not what the grader sent for") from None
    if not isinstance(data, dict) or data.get("nonce") != nonce:
        raise ChannelError("the kernel's answer does not carry this run's nonce")
    return data


def parse_reply(content: dict[str, Any], nonce: str, mac_key: str
                ) -> tuple[dict[str, Any], dict[str, Any]]:
    """``(results by case key, environment report)`` from an ``execute_reply`` content,
    once its signature (``mac_key``) and nonce are checked."""
    if content.get("status") != "ok":
        raise ChannelError(f"the grader's request failed: {content.get('ename', '?')}")
    answer = content.get("user_expressions", {}).get(user_expression_key(nonce))
    if not isinstance(answer, dict):
        raise ChannelError("the kernel did not answer the grader's request")
    if answer.get("status") != "ok":
        raise ChannelError(f"the grader's probe failed in the kernel: "
                           f"{answer.get('ename', '?')}: {answer.get('evalue', '')}")
    try:
        text = ast.literal_eval(answer["data"]["text/plain"])
    except (KeyError, TypeError, ValueError, SyntaxError, MemoryError, RecursionError):
        raise ChannelError("the kernel's answer is not what the grader sent for") from None
    data = _verified(text, nonce, mac_key)
    results, env = data.get("results"), data.get("env")
    if not isinstance(results, dict) or not isinstance(env, dict):
        raise ChannelError("the kernel's answer is malformed")
    return results, env
