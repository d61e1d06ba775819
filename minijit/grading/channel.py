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
- The probe code is shipped as source (:mod:`minijit.grading.probing`) and executed in a
  fresh dictionary, so patching ``minijit.grading`` in the notebook changes nothing.

What the kernel sends back is data only: the verdict is decided in the grader's process.
This is a guard against tricks, not a sandbox: code that rewrites the kernel's own message
handling could still forge answers (no better than copying the reference solution, which
the course publishes). Run the grader in a container when that matters.
"""

from __future__ import annotations

import ast
import inspect
import json
import secrets
from dataclasses import dataclass
from typing import Any

from . import probing

PRELUDE_SOURCE = inspect.getsource(probing)

# Runs in the kernel: executes the prelude in a fresh dict and calls its run_calls. Written
# against the builtins module passed in, not names from the notebook's namespace.
_BOOT = """
def _minijit_boot(b, ns, payload):
    scope = {"__name__": "minijit_grader_prelude", "__builtins__": b}
    b.exec(b.compile(payload["prelude"], "<minijit-grader-prelude>", "exec"), scope)
    return scope["run_calls"](ns, payload["calls"], payload["nonce"])
"""


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


def expression(calls: list[ProbeCall] | tuple[ProbeCall, ...], nonce: str) -> str:
    """The user expression that runs ``calls`` in the kernel and returns their results."""
    payload = {
        "nonce": nonce,
        "prelude": PRELUDE_SOURCE,
        "calls": [[c.key, c.source, c.name, list(c.args)] for c in calls],
    }
    # repr() of plain data is a Python literal; the payload is never JSON-decoded in the
    # kernel, so a patched json module there is irrelevant.
    return (
        "(lambda b, boot: (b.exec(b.compile(boot, '<minijit-grader>', 'exec'), d := {}),"
        f" d['_minijit_boot'](b, b.globals(), {payload!r}))[1])"
        f"(__import__('builtins'), {_BOOT!r})"
    )


def user_expression_key(nonce: str) -> str:
    return f"minijit_grader_{nonce}"


def parse_reply(content: dict[str, Any], nonce: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """``(results by case key, environment report)`` from an ``execute_reply`` content."""
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
        data = json.loads(text)
    except (KeyError, TypeError, ValueError, SyntaxError, MemoryError, RecursionError):
        raise ChannelError("the kernel's answer is not what the grader sent for") from None
    if not isinstance(data, dict) or data.get("nonce") != nonce:
        raise ChannelError("the kernel's answer does not carry this run's nonce")
    results, env = data.get("results"), data.get("env")
    if not isinstance(results, dict) or not isinstance(env, dict):
        raise ChannelError("the kernel's answer is malformed")
    return results, env
