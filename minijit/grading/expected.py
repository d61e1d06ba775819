"""Expected values of public cases, computed in a process of their own, for ``check()``.

``check()`` in a learner's notebook compares with expected values that reach it as data: a
case's literal (what the student release stores, see :mod:`minijit.grading.release`), or, in
the instructor's copy, values computed here, in a fresh interpreter started by
:mod:`minijit.grading.checking`: the reference solutions never run in the learner's kernel,
so nothing the notebook patched there (``minijit``, NumPy, the references' module) can
change what "expected" means. The probes run as the grader ships them
(:func:`minijit.grading.channel.run_locally`).

Protocol: a JSON object ``{"modules": [...], "ids": [...]}`` on stdin; on stdout, JSON
``{"expected": {case key: value}}`` or ``{"error": "one line"}``.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from typing import Any

from .cases import probe_source
from .channel import ProbeCall, run_locally
from .registry import RegistryError, literal_args, load_exercises


def public_expected(modules: Sequence[str], ids: Sequence[str]) -> dict[str, Any]:
    """Expected values of the public cases without a literal, for exercises ``ids``."""
    exercises = load_exercises(modules)
    out: dict[str, Any] = {}
    for ex_id in ids:
        ex = exercises[ex_id]
        calls = []
        for key, case, _public in ex.cases()[: len(ex.public)]:
            if case.has_literal_expected:
                continue
            source, name = probe_source(ex.probe_for(case))
            calls.append(ProbeCall(key, source, name, literal_args(case.args, key)))
        if calls:
            out.update(run_locally(calls, ex.reference()))
    return out


def main() -> int:
    request = json.loads(sys.stdin.read())
    try:
        answer: dict = {"expected": public_expected(request["modules"], request["ids"])}
    except (RegistryError, KeyError, TypeError, OSError) as exc:
        answer = {"error": f"{type(exc).__name__}: {exc}"}
    sys.stdout.write(json.dumps(answer))
    return 0


if __name__ == "__main__":
    sys.exit(main())
