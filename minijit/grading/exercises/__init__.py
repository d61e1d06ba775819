"""The course's exercises, one module per chapter (registered in ``registry.COURSE_MODULES``).

Each module defines ``EXERCISES``: the id, points, chapter section, hints, the probes (plain
top-level functions, shipped to the grading kernel as source: see
:mod:`minijit.grading.probing` for their rules) and a reference namespace. The references
import the minijit core when called, never at import time, so that listing exercises or
generating notebooks does not need the core.

The solution notebooks in ``solutions/`` hold the same answers as the references here; the
test suite grades those notebooks to full marks, which keeps the two in step.
"""
