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

The test session leaves the learner's machine and the checkout as it found them:

- minijit's disk cache is a fresh temporary folder for the whole session
  (`MINIJIT_CACHE_DIR`, set here before anything runs, so pytest-xdist's workers, notebook
  kernels and subprocesses inherit it) and is removed at the end: `~/.cache/minijit` is never
  read or written, and no run depends on an earlier one. A test that means to use another
  folder sets `MINIJIT_CACHE_DIR` itself.
- When the tests run from a git checkout, the run fails if it leaves a file in it changed or
  untracked that `git status` did not show before (screenshots and other outputs go to
  pytest's temporary folders). `MINIJIT_CHECK_CLEAN_TREE=0` turns the check off, e.g. while
  editing files during a run.
"""

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

# Plots in notebooks and tests must never try to open a window (course.py sets this too).
os.environ.setdefault("MPLBACKEND", "Agg")
# Every kernel the tests start (notebooks, the grader without its sandbox) gets an empty
# IPython profile of this run's own: an IPython startup file in the user's real profile
# must not change what a test sees, and an attack notebook must not leave one there.
os.environ["IPYTHONDIR"] = tempfile.mkdtemp(prefix="minijit-tests-ipython-")
# One disk cache for the session: made by the main process (xdist's workers start after this
# file was imported there, and inherit the variable), removed by it at the end.
SESSION_CACHE = "MINIJIT_TESTS_SESSION_CACHE"
_MADE_SESSION_CACHE = not os.environ.get(SESSION_CACHE)
if _MADE_SESSION_CACHE:
    os.environ[SESSION_CACHE] = tempfile.mkdtemp(prefix="minijit-tests-cache-")
os.environ["MINIJIT_CACHE_DIR"] = os.environ[SESSION_CACHE]

settings.register_profile("ci", derandomize=True, database=None, deadline=None,
                          print_blob=False, suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("explore", derandomize=False, deadline=None, max_examples=1000,
                          print_blob=True, suppress_health_check=[HealthCheck.too_slow])
PROFILE = os.environ.get("HYPOTHESIS_PROFILE", "ci")
if PROFILE == "explore":
    os.environ.setdefault("MINIJIT_HYPOTHESIS_SCALE", "5")
settings.load_profile(PROFILE)

import minijit  # noqa: E402

# nbformat without jsonschema's IRI parsers (1.6 s of every test process that reads a notebook)
import minijit.grading.fast_nbformat  # noqa: E402, F401

# Tests name the backend they test (the differential ones run every backend); everything else
# uses the interpreter, which needs no compile. The library's own default is "auto", LLVM or
# Numba by program (tests/test_backend_choice.py checks that).
minijit.config.update("default_backend", "interpreter")


@pytest.fixture
def minijits_own_pieces():
    """minijit's own build-track pieces before and after the test, whatever it switched in
    (`minijit.build`). The build-track tests use it on every test
    (`pytestmark = pytest.mark.usefixtures("minijits_own_pieces")`)."""
    minijit.build.reset()
    yield
    minijit.build.reset()


# --- the checkout is left as it was found ------------------------------------------------------

ROOT = Path(__file__).resolve().parents[1]
_TREE_BEFORE = pytest.StashKey[set | None]()
_TREE_LEFT = pytest.StashKey[list]()


def checkout_status() -> set[str] | None:
    """`git status --porcelain` entries of the checkout these tests are in (untracked files one
    by one); None when it is not a git checkout or git is missing."""
    try:
        out = subprocess.run(
            ["git", "status", "--porcelain=v1", "-z", "--untracked-files=all", "--", "."],
            cwd=ROOT, capture_output=True, timeout=300,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    if out.returncode != 0:
        return None
    return {entry for entry in out.stdout.decode("utf-8", "replace").split("\0") if entry}


def _is_main_process(config) -> bool:
    return not hasattr(config, "workerinput")  # pytest-xdist's workers have it


def pytest_configure(config):
    if _is_main_process(config) and os.environ.get("MINIJIT_CHECK_CLEAN_TREE", "1") != "0":
        config.stash[_TREE_BEFORE] = checkout_status()


def pytest_sessionfinish(session, exitstatus):
    config = session.config
    before = config.stash.get(_TREE_BEFORE, None)
    if before is None or not _is_main_process(config):
        return
    after = checkout_status()
    left = sorted((after or set()) - before)
    if left:
        config.stash[_TREE_LEFT] = left
        if session.exitstatus == pytest.ExitCode.OK:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    left = config.stash.get(_TREE_LEFT, None)
    if not left:
        return
    terminalreporter.write_sep("=", "FAILED: the test run changed the checkout", red=True)
    terminalreporter.write_line("`git status --porcelain` shows what it did not show before:")
    for entry in left:
        terminalreporter.write_line(f"    {entry}")
    terminalreporter.write_line(
        "Tests must write into tmp_path (or pytest's other temporary folders), not the\n"
        "repository. (If you edited files while the tests ran, that is the cause:\n"
        "MINIJIT_CHECK_CLEAN_TREE=0 turns this check off.)"
    )


def pytest_unconfigure(config):
    if _is_main_process(config) and _MADE_SESSION_CACHE:
        shutil.rmtree(os.environ[SESSION_CACHE], ignore_errors=True)
