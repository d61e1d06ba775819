"""The test session leaves no trace (tests/conftest.py): minijit's disk cache is a temporary
folder for the whole session, kernels and pytest-xdist's workers included, and a run that
leaves the checkout changed, or with a new untracked file, fails.

The conftest's own behaviour is checked in a throw-away git repository holding a copy of
tests/conftest.py and a few tests, run by pytest in a subprocess."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

import minijit.codegen.compile as compile_

ROOT = Path(__file__).resolve().parents[1]
HOME_CACHE = Path.home() / ".cache" / "minijit"


def test_this_session_uses_its_own_disk_cache():
    folder = compile_.cache_dir()
    assert folder == Path(os.environ["MINIJIT_TESTS_SESSION_CACHE"])
    assert Path(tempfile.gettempdir()) in folder.parents
    assert folder != HOME_CACHE


def test_a_subprocess_inherits_the_sessions_cache():
    code = "import minijit.codegen.compile as c; print(c.cache_dir())"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert Path(out.stdout.strip()) == compile_.cache_dir()


# --- the conftest itself, in a repository of its own -------------------------------------------

SAMPLE_TESTS = """
import os
from pathlib import Path

HERE = Path(__file__).resolve().parent


def test_records_its_cache():
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    (HERE.parent.parent / "caches").mkdir(exist_ok=True)
    (HERE.parent.parent / "caches" / worker).write_text(os.environ["MINIJIT_CACHE_DIR"])


def test_records_its_cache_too():
    test_records_its_cache()


def test_maybe_leaves_a_file():
    if os.environ.get("LEAVE_A_FILE"):
        (HERE.parent / "left_behind.txt").write_text("oops")
    if os.environ.get("CHANGE_A_FILE"):
        (HERE.parent / "tracked.txt").write_text("changed")
"""


def git(*args: str, cwd: Path) -> None:
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.org", *args],
        cwd=cwd,
        check=True,
        capture_output=True,
        timeout=60,
    )


@pytest.fixture
def sample_repo(tmp_path):
    """tmp/repo: a git repository with tests/conftest.py (this one), a tracked file and the
    sample tests; they record each worker's MINIJIT_CACHE_DIR in tmp/caches/."""
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    repo = tmp_path / "repo"
    (repo / "tests").mkdir(parents=True)
    shutil.copyfile(ROOT / "tests" / "conftest.py", repo / "tests" / "conftest.py")
    (repo / "tests" / "test_sample.py").write_text(SAMPLE_TESTS)
    (repo / "tracked.txt").write_text("as committed")
    (repo / ".gitignore").write_text("__pycache__/\n.pytest_cache/\n")
    git("init", "-q", cwd=repo)
    git("add", "-A", cwd=repo)
    git("commit", "-q", "-m", "sample", cwd=repo)
    return repo


def run_pytest(repo: Path, *args: str, **env: str) -> subprocess.CompletedProcess:
    environ = {k: v for k, v in os.environ.items() if not k.startswith("MINIJIT_")}
    environ.update(env)
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests", *args],
        cwd=repo,
        env=environ,
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.mark.slow
def test_workers_share_one_cache_removed_at_the_end_and_a_file_left_behind_fails(sample_repo):
    """Both under pytest-xdist in one run (a run starts two workers that import minijit)."""
    result = run_pytest(sample_repo, "-n", "2", "--dist", "each",  # every test on both workers
                        LEAVE_A_FILE="1")
    assert result.returncode == 1, result.stdout + result.stderr
    assert "the test run changed the checkout" in result.stdout
    assert "?? left_behind.txt" in result.stdout
    records = {p.name: p.read_text() for p in (sample_repo.parent / "caches").iterdir()}
    assert sorted(records) == ["gw0", "gw1"], records
    caches = set(records.values())
    assert len(caches) == 1, caches  # both workers, one folder
    (cache,) = caches
    assert Path(cache).name.startswith("minijit-tests-cache-")
    assert not Path(cache).exists()  # removed when the session ended, failed or not


@pytest.mark.slow
def test_a_file_left_behind_or_a_changed_tracked_file_fails_the_run(sample_repo):
    result = run_pytest(sample_repo, "-p", "no:xdist", LEAVE_A_FILE="1", CHANGE_A_FILE="1")
    assert result.returncode == 1, result.stdout + result.stderr
    assert "the test run changed the checkout" in result.stdout
    assert "?? left_behind.txt" in result.stdout
    assert " M tracked.txt" in result.stdout


@pytest.mark.slow
def test_what_was_already_there_does_not_count(sample_repo):
    (sample_repo / "tracked.txt").write_text("edited before the run")
    (sample_repo / "notes.txt").write_text("untracked before the run")
    result = run_pytest(sample_repo, "-p", "no:xdist")
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.slow
def test_the_check_can_be_turned_off(sample_repo):
    result = run_pytest(
        sample_repo, "-p", "no:xdist", LEAVE_A_FILE="1", MINIJIT_CHECK_CLEAN_TREE="0"
    )
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.slow
def test_outside_a_git_checkout_nothing_is_checked(sample_repo):
    shutil.rmtree(sample_repo / ".git")
    result = run_pytest(sample_repo, "-p", "no:xdist", LEAVE_A_FILE="1")
    assert result.returncode == 0, result.stdout + result.stderr
