"""Autograding for the minijit course: ``check()`` in notebooks, and the instructor's grader.

- Learners call ``check("ex04_static_args")`` under an exercise for instant feedback on its
  public cases; hints come in tiers (the section to read, the pitfall, then a code-level hint:
  ``check("ex04_static_args", hint=True)`` asks for all of them).
- Instructors run ``python -m minijit.grading grade SUBMISSIONS... --out gradebook.csv``,
  which executes every submission in its own kernel and decides pass or fail outside it.
- Authors write exercises once in ``solutions/`` and run ``python -m minijit.grading
  generate`` to produce ``exercises/``.
- ``python -m minijit.grading release OUT_DIR`` writes what learners get: public cases with
  stored expected values, no reference solutions, no hidden cases.

One idea per module:

    cases.py      Exercise and Case
    comparing.py  compare() and describe() on plain data
    plain_data.py what a probe may return, and its JSON text
    probing.py    the probes: run in-process and, shipped as source, in kernels
    prelude.py    the grader's entry point in a kernel (install, serve)
    registry.py   where exercises come from (the course, extra modules, hidden-case folders)
    checking.py   check(), the in-notebook feedback table
    expected.py   check()'s expected values, computed in an interpreter of their own
    notebook.py   solution/exercise notebook conventions; generate and --check
    channel.py    how the grader asks a kernel for results (user expressions + nonce)
    limits.py     a submission's time limits and sandbox
    kernel.py     one grading kernel: start, run a cell, request, interrupt, stop
    sandbox.py    the bubblewrap sandbox each grading kernel runs in
    runner.py     one submission, whatever it does: limits, restarts, events
    event_loop.py the runner's coroutines run from any thread (a notebook's too)
    run_result.py what a run gives back: raw results, events, status words
    scoring.py    expected values (trusted side) and points
    pool.py       the worker processes, watched: deadlines, deaths, nothing left running
    process_tree.py every process below a pid, found and killed
    submissions.py which files, which students, which exercises a batch grades
    files.py      output files written atomically, links replaced, never followed
    gradebook.py  the gradebook CSV: rows appended and fsync'd, merged, backed up, never lost
    adjust.py     the instructor's overrides and late penalties, reapplied on every run
    shards.py     one batch on many machines: --shard K/N, and merging the shards' CSVs
    feedback.py   each student's feedback: what is shown, escaped; the Markdown file
    feedback_html.py  the same as a self-contained page; writes both files
    stats.py      class statistics of a gradebook: per exercise, per case, histograms
    export.py     a gradebook for an LMS (Canvas, Moodle, Gradescope, CSV) through a roster
    batch.py      the batch: workers, progress bar, signals; grade()
    release.py    the student release: the course without solutions or reference solutions
    released_module.py  one released exercise module, and its check
    __main__.py   the command line
    fast_nbformat.py nbformat without jsonschema's optional IRI parsers (1.6 s a process)
    exercises/    the course's exercises, one module per chapter

Importing this package imports only NumPy and the standard library: never the minijit core
(the reference solutions in :mod:`minijit.grading.exercises` load it on first use), nor
Jupyter (nbformat and nbclient are imported by the grader and the generator only).
"""

from .cases import Case, Exercise, Hint
from .checking import check

__all__ = ["Case", "Exercise", "Hint", "check"]
