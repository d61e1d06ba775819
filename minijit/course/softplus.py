"""Chapter 10 runs the learner's chapter-09 `softplus` rule: the Numba rule of a primitive
minijit did not have, written in `exercises/09_code_generation.ipynb`.

- `load_softplus()`: the notebook's `softplus` primitive, its `using_softplus` context
  manager and the learner's `softplus_rule`, read from the exercise notebook as last saved
  (as `use_mine` reads a piece: the first code cell, the cell that defines `using_softplus`,
  then the cell of `ex09_softplus_rule`, in a fresh namespace), and checked by compiling
  `softplus(x)` with the Numba backend on float64 values from -1000 to 1000 against NumPy's
  `np.logaddexp(0, x)`; otherwise the course's reference answer, and the reason in one line.
  Never raises; under the batch grader it reads nothing.
- `Softplus.registered()`: softplus with the rule in minijit's tables for a `with` block,
  every table as before afterwards; it yields the list of expressions the rule returned.
- `lines_written(source, written)`: the lines of generated source that hold one of them.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from minijit.course import mine

NOTEBOOK = "09_code_generation.ipynb"
EXERCISE = "ex09_softplus_rule"
PRIMITIVE_CELL = "def using_softplus"  # the given cell: softplus_p, its rules, using_softplus
# Both pitfalls of the exercise: e^x overflows past 709, and log(1 + tiny) rounds to 0.
CHECK_VALUES = [-1000.0, -40.0, -20.0, -1.0, 0.0, 0.5, 2.0, 40.0, 800.0, 1000.0]
CHECK_RTOL = 1e-9  # the exercise's own tolerance in float64


@dataclass(frozen=True)
class Softplus:
    """`softplus(x)` binds the notebook's primitive; `using_softplus(rule)` registers it for a
    block; `softplus_rule` is the Numba rule; `whose` is "yours" or why it is the reference."""

    softplus: Callable
    softplus_rule: Callable
    using_softplus: Callable
    whose: str

    @contextlib.contextmanager
    def registered(self) -> Iterator[list[str]]:
        """softplus and its rule in minijit's tables inside the block; yields the list of the
        expressions the rule returns while the block compiles (each is one generated line)."""
        written: list[str] = []

        def rule(args, eqn):
            text = self.softplus_rule(args, eqn)
            written.append(text)
            return text

        with self.using_softplus(rule):
            yield written


def load_softplus(exercises: str | os.PathLike | None = None) -> Softplus:
    """The learner's softplus from their exercise notebook 09, else the reference (why)."""
    try:
        if os.environ.get(mine.GRADING_ENV) == "1":
            raise mine.NotYours("off while grading")
        if exercises is None:
            exercises = mine.exercises_folder()
            if exercises is None:
                raise mine.NotYours("no course folder")
        path = Path(exercises) / NOTEBOOK
        setup, exercise_cell = mine._cells(path, EXERCISE)
        setup += "\n\n" + _cell_with(path, PRIMITIVE_CELL)
        ns = mine._run_cells(path, setup, exercise_cell, EXERCISE)
        found = Softplus(*(ns.get(n) for n in ("softplus", "softplus_rule", "using_softplus")),
                         "yours")
        problem = _problem(found)
        if problem:
            raise mine.NotYours(problem)
        return found
    except Exception as e:  # noqa: BLE001 - the chapter runs whatever the notebook holds
        why = mine.why_not_yours(e)
        return reference(f"the course's reference answer ({mine._one_line(why)})")


def _cell_with(path: Path, text: str) -> str:
    """The first code cell of the notebook at `path` whose source holds `text`."""
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    for cell in cells:
        if cell.get("cell_type") == "code" and text in mine._source(cell):
            return mine._source(cell)
    raise mine.NotYours(f"no cell with '{text}' in {path.name}")


def _problem(found: Softplus) -> str | None:
    """What is wrong with a loaded softplus on a small example, if anything."""
    for name in ("softplus", "softplus_rule", "using_softplus"):
        if not callable(getattr(found, name)):
            return f"the notebook's cells define no function {name}"
    import minijit as mj

    stub = []

    def rule(args, eqn):  # tells the exercise's stub apart from a rule that fails
        try:
            return found.softplus_rule(args, eqn)
        except NotImplementedError:
            stub.append(True)
            raise

    x = np.array(CHECK_VALUES)
    try:
        with found.using_softplus(rule), np.errstate(all="ignore"):
            got = np.asarray(mj.jit(found.softplus, backend="numba")(x))
    except Exception as e:  # noqa: BLE001 - reported as the reason
        if stub:
            return "not written yet"
        return f"compiling softplus(x) raised {type(e).__name__}: {mine._one_line(e)}"
    want = np.logaddexp(0.0, x)
    if got.shape != x.shape or not np.allclose(got, want, rtol=CHECK_RTOL, atol=1e-300):
        return ("its rule computes other values than np.logaddexp(0, x) on float64 values "
                "from -1000 to 1000")
    return None


def reference(whose: str = "the course's reference answer") -> Softplus:
    """The notebook's given cell and the exercise's reference rule, made afresh (a new
    primitive each call, in no table until `using_softplus` enters it). Where the reference
    rule is not there (a student release), `np.logaddexp(0, x)` is the rule, and `whose`
    says so."""
    from minijit.codegen.rules import Expression, numba_rules
    from minijit.core import ELEMENTWISE, Primitive, abstract_eval_rules, impl_rules

    try:
        from minijit.grading.exercises.ch09_code_generation import (
            _reference_softplus_rule as rule,
        )
    except ImportError:  # a student release ships no reference answers: NumPy's logaddexp,
        rule = _logaddexp_rule  # which Numba compiles, stands in for the rule
        whose += "; this copy of the course has none, so the rule calls np.logaddexp"

    softplus_p = Primitive("softplus")

    def softplus(x):
        return softplus_p.bind(x)

    def shape_rule(x):
        if x.dtype.kind != "f":
            raise TypeError(f"softplus needs floating-point inputs, got {x.str_short()}")
        return [x]

    @contextlib.contextmanager
    def using_softplus(numba_rule=None):
        abstract_eval_rules[softplus_p] = shape_rule
        impl_rules[softplus_p] = lambda x: [np.logaddexp(x.dtype.type(0), x)]
        if numba_rule is not None:
            numba_rules[softplus_p] = Expression(numba_rule)
            ELEMENTWISE.add(softplus_p)
        try:
            yield
        finally:
            for table in (abstract_eval_rules, impl_rules, numba_rules):
                table.pop(softplus_p, None)
            ELEMENTWISE.discard(softplus_p)

    return Softplus(softplus, rule, using_softplus, whose)


def _logaddexp_rule(args, eqn):
    return f"np.logaddexp(0.0, {args[0]})"


def lines_written(source: str, written: list[str]) -> list[str]:
    """The lines of `source` that hold one of the `written` expressions, stripped."""
    return [line.strip() for line in source.splitlines()
            if any(text and text in line for text in written)]
