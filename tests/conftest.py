"""Shared pytest configuration for the minijit test suite.

Hypothesis runs under the "ci" settings profile unless `HYPOTHESIS_PROFILE` names another, so
that CI and every local run draw the same examples and cannot flake:

- `ci` (the default): `derandomize=True` (examples come from each test's name, not from a
  random seed), `database=None` (no replay of examples saved by an earlier run), no
  `deadline` and no `too_slow` health check (both measure time, which a loaded two-core
  machine does not keep). The health checks that do not depend on time still run, and they
  are deterministic too: a strategy that filters too much fails every run, not one in ten.
- `explore`: for campaigns that look for new failures. Random examples, five times the
  examples where a test scales its own `max_examples` (`MINIJIT_HYPOTHESIS_SCALE`, read by
  tests/test_passes.py and tests/test_promotion.py; set it yourself to override), 1000 where
  a test does not set any, failures saved in `.hypothesis/` and printed with a
  `@reproduce_failure` blob. Run: `HYPOTHESIS_PROFILE=explore pytest tests/test_promotion.py`.
  (A test's own `settings(...)` wins over the profile: tests/test_passes.py pins
  `derandomize=True`, so there `explore` draws more examples, not other ones.)

Larger fuzzing campaigns, without hypothesis: `python tests/fuzz.py --seed S -n N`.
"""

import os
import tempfile

import pytest
from hypothesis import HealthCheck, settings

# Plots in notebooks and tests must never try to open a window (course.py sets this too).
os.environ.setdefault("MPLBACKEND", "Agg")
# Every kernel the tests start (notebooks, the grader without its sandbox) gets an empty
# IPython profile of this run's own: an IPython startup file in the user's real profile
# must not change what a test sees, and an attack notebook must not leave one there.
os.environ["IPYTHONDIR"] = tempfile.mkdtemp(prefix="minijit-tests-ipython-")

settings.register_profile("ci", derandomize=True, database=None, deadline=None,
                          print_blob=False, suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("explore", derandomize=False, deadline=None, max_examples=1000,
                          print_blob=True, suppress_health_check=[HealthCheck.too_slow])
PROFILE = os.environ.get("HYPOTHESIS_PROFILE", "ci")
if PROFILE == "explore":
    os.environ.setdefault("MINIJIT_HYPOTHESIS_SCALE", "5")
settings.load_profile(PROFILE)

import minijit  # noqa: E402

# Tests name the backend they test (the differential ones run every backend); everything else
# uses the interpreter, which needs no compile. The library's own default is Numba
# (tests/test_codegen.py checks that).
minijit.config.update("default_backend", "interpreter")


@pytest.fixture
def minijits_own_pieces():
    """minijit's own build-track pieces before and after the test, whatever it switched in
    (`minijit.build`). The build-track tests use it on every test
    (`pytestmark = pytest.mark.usefixtures("minijits_own_pieces")`)."""
    minijit.build.reset()
    yield
    minijit.build.reset()
