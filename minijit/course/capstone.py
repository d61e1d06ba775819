"""Chapter 10's capstone: the learner's `logsumexp`, on their `logaddexp` primitive, through
the learner's minijit, with a trail of where each build piece acted.

- `load_capstone()`: the learner's `logsumexp` and the primitive it runs on, read from
  `exercises/10_putting_it_together.ipynb` as last saved (as `use_mine` reads a piece: the
  first code cell, then the cells of `ex10_new_primitive` and `ex10_capstone`, in a fresh
  namespace), checked on a small example against NumPy's `np.logaddexp.reduce`; otherwise
  the course's reference answer, and the reason. Never raises; under the batch grader it
  reads nothing.
- `registered(capstone)`: the primitive in minijit's tables for a block, every table as
  before afterwards (`grading.primitive_probes.registered`).
- `piece_trail(steps)`: runs each step and counts, per step, the calls of each build piece
  (`minijit.build.call`, seen by a `sys.setprofile` hook for the step's duration), then
  prints them as a table: which piece acted in which step, and whose it was.
- `on_jax(fn, **names)`: `fn`'s code with `mnp`, `lax` and the given globals bound to JAX's.
- `record_stepper(record)`: chapter 07's pass stepper on a program already traced: a slider
  over `run_passes(..., record=record)`'s stages, each pass's program before and after it.
"""

from __future__ import annotations

import contextlib
import html
import os
import sys
import types
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from minijit import build
from minijit.course import mine

NOTEBOOK = "10_putting_it_together.ipynb"
EXERCISES = ("ex10_new_primitive", "ex10_capstone")
# What `jax.make_jaxpr` printed for the reference logsumexp (fori_loop over the columns of an
# f64[3,4], jnp.logaddexp in the body), JAX 0.10.2 on CPU with jax_enable_x64: shown where JAX
# is not installed. logaddexp is a custom_jvp_call around ten primitives, not a primitive.
RECORDED_JAX = {
    "where": "recorded with JAX 0.10.2 on CPU, 64-bit mode on",
    "primitives": ["slice", "squeeze", "scan", "add", "convert_element_type", "lt",
                   "select_n", "dynamic_slice", "squeeze", "custom_jvp_call"],
    "logaddexp": ["max", "sub", "ne", "add", "abs", "neg", "exp", "log1p", "add", "select_n"],
}


@dataclass(frozen=True)
class Capstone:
    """The program and its primitive: `logsumexp`, `logaddexp_p`, `register_logaddexp`;
    `whose` is "yours" or why it is the course's reference answer."""

    logsumexp: Callable
    logaddexp_p: object
    register_logaddexp: Callable
    whose: str


def load_capstone(exercises: str | os.PathLike | None = None) -> Capstone:
    """The learner's capstone from their exercise notebook 10, else the reference (why)."""
    try:
        if os.environ.get(mine.GRADING_ENV) == "1":
            raise mine.NotYours("off while grading")
        folder = Path(exercises) if exercises is not None else mine.exercises_folder()
        if folder is None:
            raise mine.NotYours("no course folder")
        path = folder / NOTEBOOK
        setup, first = mine._cells(path, EXERCISES[0])
        _, second = mine._cells(path, EXERCISES[1])
        ns = mine._run_cells(path, setup, first + "\n\n" + second, EXERCISES[1])
        found = Capstone(*(ns.get(n) for n in ("logsumexp", "logaddexp_p",
                                                "register_logaddexp")), "yours")
        problem = _problem(found)
        if problem:
            raise mine.NotYours(problem)
        return found
    except Exception as e:  # noqa: BLE001 - the chapter runs whatever the notebook holds
        why = mine.why_not_yours(e)
        return _reference(why)


def _reference(why: str) -> Capstone:
    try:
        from minijit.grading.exercises.ch10_putting_it_together import _reference_capstone
    except ImportError:  # a student release ships no reference answers
        return _stand_in(why)
    ns = _reference_capstone()
    return Capstone(ns["logsumexp"], ns["logaddexp_p"], ns["register_logaddexp"],
                    f"the course's reference answer ({mine._one_line(why)})")


def _stand_in(why: str) -> Capstone:
    """Where the reference answer is not shipped: a logaddexp primitive on NumPy's and Numba's
    np.logaddexp, and a logsumexp that is not the exercise's answer (it shifts by the row's max
    and takes exp and log itself, then hands the result through logaddexp with -inf)."""
    import minijit.numpy as mnp
    from minijit.codegen.rules import Expression, numba_rules
    from minijit.core import BINARY, ELEMENTWISE, Primitive, abstract_eval_rules, impl_rules

    logaddexp_p = Primitive("logaddexp")

    def register_logaddexp():
        abstract_eval_rules[logaddexp_p] = lambda x, y: [x]
        impl_rules[logaddexp_p] = lambda x, y: [np.logaddexp(x, y)]
        numba_rules[logaddexp_p] = Expression(lambda args, eqn: f"np.logaddexp({', '.join(args)})")
        BINARY.add(logaddexp_p)
        ELEMENTWISE.add(logaddexp_p)

    def logsumexp(x):
        x = mnp.asarray(x)
        top = mnp.max(x, axis=1)
        shifted = top + mnp.log(mnp.sum(mnp.exp(x - top[:, None]), axis=1))
        return logaddexp_p.bind(shifted, mnp.full_like(shifted, -np.inf))

    return Capstone(logsumexp, logaddexp_p, register_logaddexp,
                    f"minijit's stand-in, not the exercise's answer ({mine._one_line(why)})")


def _problem(c: Capstone) -> str | None:
    """What is wrong with a capstone on a small example, if anything."""
    if not callable(c.logsumexp) or not callable(c.register_logaddexp):
        return "its cells define no logsumexp or register_logaddexp"
    x = np.array([[0.0, 1.0, 2.0], [1000.0, 1000.0, 999.0], [-1000.0, -np.inf, -1001.0]])
    import minijit as mj

    with registered(c), np.errstate(all="ignore"):
        got = np.asarray(mj.jit(c.logsumexp, backend="interpreter")(x))
        jaxpr = mj.make_jaxpr(c.logsumexp)(x).jaxpr
    if got.shape != (3,) or not np.allclose(got, np.logaddexp.reduce(x, axis=1), rtol=1e-9):
        return "its logsumexp computes other values than np.logaddexp.reduce"
    if c.logaddexp_p not in _primitives(jaxpr):
        return "its logsumexp does not use logaddexp_p"
    return None


def _primitives(jaxpr) -> list:
    """The primitives of `jaxpr`'s equations, sub-jaxprs included, in order."""
    from minijit.ir import subjaxprs

    found = []
    for eqn in jaxpr.eqns:
        found.append(eqn.primitive)
        for sub in subjaxprs(eqn):
            found += _primitives(sub)
    return found


def registered(capstone: Capstone):
    """The capstone's primitive in minijit's tables for a `with` block."""
    from minijit.grading.primitive_probes import registered as with_registered

    return with_registered(capstone.register_logaddexp)


@contextlib.contextmanager
def _counting(counts: Counter):
    """Count the calls of `build.call` by piece name while the block runs."""
    call, before = build.call.__code__, sys.getprofile()

    def hook(frame, event, arg):
        if event == "call" and frame.f_code is call:
            counts[frame.f_locals["name"]] += 1

    sys.setprofile(hook)
    try:
        yield
    finally:
        sys.setprofile(before)


def piece_trail(steps: Mapping[str, Callable[[], object]]) -> dict[str, object]:
    """Run each step in order, print which build pieces it called and how often (a column
    per piece that acted, marked "yours" when it is the learner's), and return the steps'
    results by label."""
    results, counts = {}, {}
    for label, step in steps.items():
        counts[label] = Counter()
        with _counting(counts[label]):
            results[label] = step()
    acted = [n for n in build.PIECES if any(c[n] for c in counts.values())]
    mine_now = build.using()
    heads = [f"{n} ({'yours' if n in mine_now else 'own'})" for n in acted]
    width = max(len(label) for label in steps)
    print(" " * width + "  " + "  ".join(heads))
    for label, c in counts.items():
        cells = [f"{c[n] if c[n] else '.':>{len(h)}}" for n, h in zip(acted, heads)]
        print(f"{label:{width}}  " + "  ".join(cells))
    return results


def on_jax(fn: Callable, **names) -> Callable:
    """`fn`'s code with `mnp` as `jax.numpy`, `lax` as `jax.lax`, and `names` (for example
    `logaddexp=jnp.logaddexp`) bound in its globals; functions it defines see them too."""
    import jax
    import jax.numpy as jnp

    bound = {"mnp": jnp, "lax": jax.lax, **names}
    cells = tuple(types.CellType(bound[n]) if n in bound else c  # names it closes over too
                  for n, c in zip(fn.__code__.co_freevars, fn.__closure__ or ()))
    return types.FunctionType(fn.__code__, {**fn.__globals__, **bound}, fn.__name__,
                              fn.__defaults__, cells or None)


def stage_html(record: Sequence[tuple[str, object]], k: int) -> str:
    """Step `k` of `record` (`[("traced", program), (pass, program after it), ...]`) as HTML:
    the traced program at 0, else the program before and after pass `k`, with its size."""
    from minijit.course.measure import describe
    from minijit.course.views import side_by_side_html

    name, program = record[k]
    if k == 0:
        view = f"<pre style='font-size:85%'>{html.escape(str(program))}</pre>"
    else:
        same = " (unchanged)" if str(program) == str(record[k - 1][1]) else ""
        view = side_by_side_html(record[k - 1][1], program, f"before {name}",
                                 f"after {name}{same}")
    return (f"<b>step {k} of {len(record) - 1}: {html.escape(name)}</b> · "
            f"{html.escape(describe(program))}{view}")


def record_stepper(record: Sequence[tuple[str, object]], start: int = 0):
    """A widget: a slider (or Play, or "next pass") over the recorded stages, showing
    `stage_html` of the step it is on; it starts at step `start`."""
    from ipywidgets import HTML, Button, HBox, IntSlider, Play, VBox, link

    last = len(record) - 1
    step = IntSlider(value=start, min=0, max=last, description="step")
    play = Play(value=start, min=0, max=last, interval=1500)
    next_button = Button(description="next pass")
    view = HTML(stage_html(record, start))
    link((play, "value"), (step, "value"))
    step.observe(lambda change: setattr(view, "value", stage_html(record, change["new"])),
                 names="value")
    next_button.on_click(lambda _: setattr(step, "value", (step.value + 1) % (last + 1)))
    return VBox([HBox([step, play, next_button]), view])
