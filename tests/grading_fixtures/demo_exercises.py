"""Demo exercises that need only NumPy, for testing the grading framework on its own.

They mirror the shape of the course's exercises (a function to write, a top-level answer to
predict) without depending on the minijit core. Enable them for ``check()`` with
``MINIJIT_GRADING_EXERCISES=tests/grading_fixtures/demo_exercises.py``.
"""

from __future__ import annotations

import numpy as np

from minijit.grading.cases import Case, Exercise
from minijit.grading.probing import get


def probe_add(ns, a, b):
    return get(ns, "add")(np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64))


def probe_mean(ns, xs):
    # np.asarray: a float or a NumPy scalar are both fine; an arbitrary object becomes an
    # object array, which the grader refuses to grade.
    return np.asarray(get(ns, "mean")(np.asarray(xs, dtype=np.float64)))


def probe_answer(ns):
    return get(ns, "ANSWER")


def _reference_add() -> dict:
    return {"add": lambda a, b: a + b}


def _reference_mean() -> dict:
    return {"mean": lambda xs: xs.sum() / xs.size}


EXERCISES = [
    Exercise(
        id="ex00_add", points=1, title="Add two arrays", chapter="00_demo",
        section="Adding", hint="Add elementwise with `+`; NumPy broadcasts for you.",
        probe=probe_add, reference=_reference_add,
        public=(Case("1-d", ([1, 2, 3], [10, 20, 30])), Case("scalars", (1.5, 2.5))),
        hidden=(Case("2-d broadcast", ([[1, 2], [3, 4]], [10, 20])),),
    ),
    Exercise(
        id="ex00_mean", points=2, title="Mean of an array", chapter="00_demo",
        section="Reductions", hint="The mean is the sum divided by the number of elements.",
        probe=probe_mean, reference=_reference_mean,
        public=(Case("four numbers", ([1, 2, 3, 4],)),),
        hidden=(Case("one number", ([7],)), Case("negative", ([-1, -2, -6],))),
        error_hints={"ZeroDivisionError": "Divide by the number of elements, not zero."},
    ),
    Exercise(
        id="ex00_answer", points=1, title="Predict a number", chapter="00_demo",
        section="Predicting", hint="Count the calls one by one.",
        probe=probe_answer, reference=lambda: {"ANSWER": 3},
        public=(Case("the answer", ()),),
    ),
]
