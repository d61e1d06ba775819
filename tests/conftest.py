"""Shared pytest configuration for the minijit test suite."""

import os

# Plots in notebooks and tests must never try to open a window (course.py sets this too).
os.environ.setdefault("MPLBACKEND", "Agg")

import minijit  # noqa: E402

# Tests name the backend they test (the differential ones run every backend); everything else
# uses the interpreter, which needs no compile. The library's own default is Numba
# (tests/test_codegen.py checks that).
minijit.config.update("default_backend", "interpreter")
