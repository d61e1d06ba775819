"""Shared pytest configuration for the minijit test suite."""

import os

# Plots in notebooks and tests must never try to open a window (course.py sets this too).
os.environ.setdefault("MPLBACKEND", "Agg")
