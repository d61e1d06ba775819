"""Autograding for the minijit course: ``check()`` in notebooks, and the instructor's grader.

- Learners call ``check("ex04_static_args")`` under an exercise for instant feedback on its
  public cases (:mod:`minijit.grading.checking`).
- Instructors run ``python -m minijit.grading grade SUBMISSIONS... --out gradebook.csv``
  (:mod:`minijit.grading.gradebook`), which executes every submission in its own kernel and
  decides pass or fail outside it (:mod:`minijit.grading.runner`).
- Authors write exercises once in ``solutions/`` and run ``python -m minijit.grading
  generate`` to produce ``exercises/`` (:mod:`minijit.grading.notebook`).

Importing this package imports only NumPy and the standard library: never the minijit core
(the reference solutions in :mod:`minijit.grading.exercises` load it on first use), nor
Jupyter (nbformat and nbclient are imported by the grader and the generator only).
"""

from .cases import Case, Exercise
from .checking import check

__all__ = ["Case", "Exercise", "check"]
