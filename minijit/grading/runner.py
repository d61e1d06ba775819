"""Executing one submission: its own kernel, time limits, and recovery from anything.

``run_submission(path, plan, limits)`` never raises and never hangs past the submission's
time limit: whatever the notebook does, it returns a :class:`RunResult` holding the raw
probe results (plain data, not yet compared) and a list of events that explain what
happened. The steps:

1. Read the file with nbformat. Unreadable JSON or a non-notebook is ``invalid_notebook``.
   Only the *source* of code cells is kept: outputs and metadata are the submitter's and
   are ignored (tags such as ``skip-execution`` too), except that a cell tagged
   ``raises-exception`` is expected to raise: no event when it does, a note when not.
2. Start a fresh kernel (the grader's own interpreter, in a sandbox of its own when
   ``limits.sandbox`` is set: :mod:`minijit.grading.kernel`), record the
   IPython transformers it starts with, then run the code cells one by one with nbclient,
   each under ``min(cell timeout, time left)``. An exception is recorded and execution goes
   on, as a learner running "all cells" would; a cell that times out is interrupted.
3. Run each exercise's probes through :mod:`minijit.grading.channel`, one request per
   exercise, so that a probe that loops or kills the kernel costs only that exercise: first
   the public cases of every exercise, then the hidden ones. An endless loop costs one
   cell timeout: hidden cases are not sent after the public ones ran past the limit, and
   an exercise one of whose cells did gets a quarter of it for its tests. A new kernel is
   set up (the prelude installed, the pristine builtins and hooks kept) before any cell runs.
   Once hidden cases were sent to a kernel, nothing it says reaches the events (and so the
   gradebook and feedback) but fixed phrases: code of the notebook that reads the hidden
   arguments during a hidden probe (walking the stack, ``gc.get_objects()``) has no way to
   put them anywhere the student will see. Hidden results are raw values, compared here.
   A notebook that imported the grader's reference solutions, or whose trace or profile hook
   was set when the grader's requests came, gets no points (status ``tampered``): its
   answers may be the references', its hook could read and rewrite the grader's frames.
4. If the kernel dies (``os._exit``, a segfault) or stops answering (a loop that swallows
   ``KeyboardInterrupt``), start a new one and replay the cells, skipping the culprit, then
   go on with the exercises not yet graded. At most ``limits.max_kernel_starts`` kernels.

``check()`` cells run too, but ``MINIJIT_GRADING=1`` makes them return at once; grading
never reads them. Edited or deleted check cells are reported, not needed.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from dataclasses import dataclass
from typing import Any

from .channel import (
    ChannelError,
    expression,
    new_key,
    new_mac_key,
    new_nonce,
    parse_reply,
    setup_expression,
)
from .channel import user_expression_key as _key
from .event_loop import run_to_the_end
from .fast_nbformat import nbformat
from .kernel import Kernel, first_line
from .limits import Limits
from .notebook import check_call, exercise_header
from .prelude import FORGERY_PHRASES, HOOK_PHRASES
from .run_result import (  # noqa: F401 - STATUS_ORDER: read from here by the gradebook
    NOTE,
    STATUS_ORDER,
    ExercisePlan,
    RunResult,
)


class InvalidNotebook(ValueError):
    pass


@dataclass(frozen=True)
class SubmittedCell:
    source: str
    # A cell tagged raises-exception fails on purpose (a chapter's demonstration); its error
    # is then no event, not an ``error`` status. Trusting the tag costs nothing: it never
    # changes a score, only how the row is labelled.
    expects_error: bool = False


def read_submission(path: str | os.PathLike) -> list[SubmittedCell]:
    """The non-empty code cells, or InvalidNotebook."""
    try:
        nb = nbformat.read(path, as_version=4)
    except Exception as exc:  # noqa: BLE001 - any failure to read is the same verdict
        raise InvalidNotebook(f"not a readable notebook: {type(exc).__name__}: "
                              f"{first_line(str(exc), 200)}") from None
    cells = nb.get("cells")
    if not isinstance(cells, list):
        raise InvalidNotebook("not a notebook: no list of cells")
    found = []
    for cell in cells:
        if not isinstance(cell, dict) or cell.get("cell_type") != "code":
            continue
        source = cell.get("source", "")
        if isinstance(source, list):
            source = "".join(str(s) for s in source)
        if not isinstance(source, str):
            raise InvalidNotebook("not a notebook: a cell's source is not text")
        metadata = cell.get("metadata")
        tags = metadata.get("tags") if isinstance(metadata, dict) else None
        expects_error = isinstance(tags, list) and "raises-exception" in tags
        if source.strip():
            found.append(SubmittedCell(source, expects_error))
    return found


def _label(sources: list[str], index: int) -> str:
    """A cell named as the learner sees it, never by a number (the grader's count of code
    cells is not one the notebook shows): ``the ex02_where cell``, ``the check("ex02_where")
    cell``, or ``the cell after ex02_where starting `y = f(x)` `` (its first line, cut
    short; before any exercise, ``the cell starting ...``)."""
    header = exercise_header(sources[index])
    if header:
        return f"the {header[0]} cell"
    checked = check_call(sources[index])
    if checked:
        return f'the check("{checked}") cell'
    first = next((ln.strip() for ln in sources[index].splitlines() if ln.strip()), "")
    first = first if len(first) <= 60 else first[:57] + "..."
    for before in range(index - 1, -1, -1):
        header = exercise_header(sources[before])
        if header:
            return f"the cell after {header[0]} starting `{first}`"
    return f"the cell starting `{first}`"


def _env_changes(before: dict[str, Any], after: dict[str, Any], hidden: bool = False,
                 seen: set | None = None) -> list[str]:
    """What changed since the kernel was set up, in words; with ``hidden`` (the report
    came after hidden cases were sent), fixed phrases only. ``seen`` holds the replaced
    names already reported by name (after public cases); it grows with them."""
    seen = set() if seen is None else seen
    found = []
    if before.get("transformers") != after.get("transformers"):
        found.append("the notebook installed IPython input or AST transformers")
    replaced = [n for n in after.get("replaced", []) if isinstance(n, str)]
    if hidden:
        if set(replaced) - seen:
            found.append("the notebook replaced minijit.grading functions during the hidden "
                         "tests")
    else:
        seen.update(replaced)
        found += [f"the notebook replaced {name}" for name in replaced]
    for phrase in after.get("forgery", []):
        if phrase in HOOK_PHRASES:
            found.append(f"the notebook's code ran inside the grader's tests ({phrase}); its "
                         "exercises score 0")
        elif phrase in FORGERY_PHRASES:
            found.append(f"the notebook forged the grader's environment: {phrase}")
        else:
            found.append("the notebook forged the grader's environment")
    references = [n for n in after.get("references", []) if isinstance(n, str)]
    if references and references != before.get("references"):
        names = "" if hidden else f" ({', '.join(references)[:200]})"
        found.append(f"the notebook imported the grader's reference solutions{names}; its "
                     "exercises score 0")
    return found


async def _run(path: str, plan: tuple[ExercisePlan, ...], limits: Limits,
               result: RunResult) -> None:
    start = time.monotonic()
    deadline = start + limits.timeout
    try:
        cells = read_submission(path)
    except InvalidNotebook as exc:
        result.add("invalid_notebook", str(exc))
        return

    # Static look at the notebook: missing or edited check cells are worth telling.
    checked = {check_call(c.source) for c in cells}
    for ex in plan:
        if ex.id not in checked:
            result.add("tampered", f'the check("{ex.id}") cell was edited or deleted')

    skip: set[int] = set()
    seen: set[int] = set()
    slow: set[str] = set()  # exercises one of whose cells ran past the cell timeout
    # All public cases before any hidden one (see the module docstring).
    pending = [(ex, False) for ex in plan] + [(ex, True) for ex in plan if ex.hidden]
    # in a grader worker, inside its own folder, which the pool removes (pool.py)
    cwd = tempfile.mkdtemp(prefix="minijit-grade-")
    try:
        for _ in range(limits.max_kernel_starts):
            kernel = Kernel(limits, cwd, len(cells))
            try:
                restart = await _attempt(kernel, cells, pending, skip, seen, slow, limits,
                                         deadline, result)
            finally:
                await kernel.stop()
            if not restart:
                break
        else:
            result.add("kernel_died", f"gave up after {limits.max_kernel_starts} kernels")
    finally:
        shutil.rmtree(cwd, ignore_errors=True)
    for ex, _hidden in pending:
        result.outcome.setdefault(ex.id, "not_run")
    if result.voided:
        for ex in plan:
            result.outcome[ex.id] = "tampered"


async def _attempt(kernel: Kernel, cells: list[SubmittedCell],
                   pending: list[tuple[ExercisePlan, bool]],
                   skip: set[int], seen: set[int], slow: set[str], limits: Limits,
                   deadline: float, result: RunResult) -> bool:
    """One kernel's worth of work; True when a new kernel is needed to go on.

    An endless loop in an answer costs one cell timeout, not one per request that calls it:
    the tests of an exercise whose cell already ran past the limit (``slow``) get a quarter
    of it, and once an exercise's public tests ran past their time its hidden ones are not
    sent (they would call the same code again)."""

    def left() -> float:
        return deadline - time.monotonic()

    def out_of_time() -> bool:
        if left() <= 0:
            result.add("timeout", f"the submission ran past its {limits.timeout:g} s limit")
            return True
        return False

    try:
        await kernel.start(deadline)
    except Exception as exc:  # noqa: BLE001 - reported, and the attempt is over
        if out_of_time():
            return False
        result.add("grader_error", f"the kernel did not start: {type(exc).__name__}: {exc}")
        return False

    key, mac_key = new_key(), new_mac_key()
    baseline = await _environment(kernel, key, mac_key,
                                  min(limits.cell_timeout, max(left(), 0.1)))
    if baseline is None:
        result.add("grader_error", "the new kernel did not answer")
        return False

    sources = [c.source for c in cells]
    for i, cell in enumerate(cells):
        if i in skip:
            continue
        if out_of_time():
            return False
        outcome, detail = await kernel.run_cell(i, cell.source,
                                                min(limits.cell_timeout, left()))
        label = _label(sources, i)
        first = i not in seen  # a replayed cell's error was reported the first time
        seen.add(i)
        if cell.expects_error and outcome in ("ok", "error", "not_attempted"):
            # A chapter's demonstration that raised, as its raises-exception tag says, is
            # nothing that happened to the learner's work: no event. One that did not raise
            # may be (the code it demonstrates on behaves otherwise). The tag names no
            # exception class, so what it raised is not judged.
            if outcome == "ok" and first:
                result.add(NOTE, f"{label} did not raise, though it is tagged "
                                 "raises-exception: the error it demonstrates did not happen")
        elif outcome == "error" and first:
            result.add("error", f"{label}: {detail}")
        elif outcome == "not_attempted" and first:
            result.add(NOTE, f"{label}: not attempted")
        elif outcome == "timeout":
            skip.add(i)
            owner = _exercise_of(sources, i)
            if owner is not None:
                slow.add(owner)
            if out_of_time():
                return False
            result.add("timeout", f"{label} ran past {limits.cell_timeout:g} s and was "
                                  "interrupted; later cells still ran")
            if not await kernel.interrupt_and_settle():
                result.add("timeout", f"{label} ignored the interrupt; the kernel was "
                                      "restarted without it")
                return True
        elif outcome == "exit":
            skip.add(i)
            result.add("kernel_died", f"{label} called exit(); the kernel was restarted and "
                                      "the notebook replayed without that cell")
            return True
        elif outcome == "died":
            skip.add(i)
            result.add("kernel_died", f"the kernel died in {label}; it was restarted and "
                                      "the notebook replayed without that cell")
            return True
        elif outcome == "broken":
            skip.add(i)
            # a replay after hidden cases were sent says nothing in the kernel's words
            why = "" if pending and pending[0][1] else f" ({detail[:80]})"
            result.add("tampered", f"after {label} the kernel's messages could not be read"
                                   f"{why}; it was restarted without that cell")
            return True

    while pending:
        ex, hidden = pending[0]
        if out_of_time():
            return False
        calls = ex.hidden if hidden else ex.calls
        if hidden and result.outcome.get(ex.id) == "timeout":
            pending.pop(0)
            result.add("timeout", f"{ex.id}: its hidden tests were not run: they call the "
                                  "same code as the public ones, which ran past the limit")
            continue
        # its cell ran past the limit already: a quarter more is enough for a right answer
        budget = limits.cell_timeout / 4 if ex.id in slow and not hidden else limits.cell_timeout
        nonce = new_nonce()
        reply = await kernel.request({_key(nonce): expression(calls, nonce, key)},
                                     min(budget, left()))
        pending.pop(0)
        if reply == "timeout":
            result.outcome[ex.id] = "timeout"
            why = (f", a quarter of the cell limit, since its cell had run past "
                   f"{limits.cell_timeout:g} s already (an endless loop?)"
                   if budget < limits.cell_timeout else "")
            result.add("timeout", f"{ex.id}: the tests ran past {budget:g} s{why}")
            if not await kernel.interrupt_and_settle():
                return bool(pending)
            continue
        if reply == "died":
            result.outcome[ex.id] = "kernel_died"
            result.add("kernel_died", f"{ex.id}: the kernel died while testing it")
            return bool(pending)
        if reply == "broken":
            result.outcome[ex.id] = "tampered"
            result.add("tampered", f"{ex.id}: the kernel's answer could not be read")
            return bool(pending)
        try:
            results, env = parse_reply(reply, nonce, mac_key)
        except ChannelError as exc:
            result.outcome[ex.id] = "tampered"
            # the kernel's own words (an exception's message) could carry hidden arguments
            why = "the answer to the hidden tests could not be read" if hidden else str(exc)
            result.add("tampered", f"{ex.id}: {why}")
            continue
        for change in _env_changes(baseline, env, hidden, result.replaced_seen):
            if hidden and result.voided and "reference solutions" in change:
                continue  # said already, with the modules' names, after the public cases
            result.add("tampered", change)
        if env.get("references") or HOOK_PHRASES & set(env.get("forgery", [])):
            result.voided = True
        expected_keys = {c.key for c in calls}
        result.results.update({k: v for k, v in results.items() if k in expected_keys})
        # an exercise whose public request failed stays failed
        result.outcome.setdefault(ex.id, "ran")
    return False


def _exercise_of(sources: list[str], index: int) -> str | None:
    """The exercise a cell belongs to: the one its header names, or the last one above it."""
    for before in range(index, -1, -1):
        header = exercise_header(sources[before])
        if header:
            return header[0]
    return None


async def _environment(kernel: Kernel, key: str, mac_key: str, timeout: float
                       ) -> dict[str, Any] | None:
    """Set up a fresh kernel (the prelude installed under ``key``, its answers signed with
    ``mac_key``); its first report."""
    nonce = new_nonce()
    reply = await kernel.request({_key(nonce): setup_expression(key, nonce, mac_key)},
                                 timeout)
    if not isinstance(reply, dict):
        return None
    try:
        return parse_reply(reply, nonce, mac_key)[1]
    except ChannelError:
        return None


def run_submission(path: str | os.PathLike, plan: tuple[ExercisePlan, ...],
                   limits: Limits) -> RunResult:
    """Execute and probe one submission; never raises (see the module docstring)."""
    result = RunResult()
    start = time.monotonic()
    try:
        run_to_the_end(lambda: _run(str(path), plan, limits, result))
    except BaseException as exc:  # noqa: BLE001 - a row must come back whatever happened
        if isinstance(exc, KeyboardInterrupt):
            raise
        result.add("grader_error", f"{type(exc).__name__}: {exc}")
    result.seconds = time.monotonic() - start
    return result
