#!/usr/bin/env python3
"""Set up the minijit course and open it, or test it: the project's only entry point.

    python3 course.py lab     set up, then open the course in JupyterLab
    python3 course.py test    set up, then lint with ruff and run the whole test suite
    python3 course.py setup   set up only

"Set up" means: create the virtual environment `.venv/` in the repository root (with
`python3 -m venv`) if it is absent, then `pip install -e ".[test]"` into it. The install is
skipped when `.venv/` holds a stamp with the sha256 of the current pyproject.toml and the
installed environment still looks intact, so every run after the first starts in seconds.

`test` passes any further arguments on to pytest (`python3 course.py test -k dtype -x`).
Browser tests need Chromium at /usr/bin/chromium, and the grader's sandbox tests need
bubblewrap (`bwrap`): when one is missing and we run as root on a Debian-like system, `test`
installs it with apt-get; otherwise those tests are skipped, saying why.

This file uses only the standard library, so it runs with a bare Python >= 3.10 before any
dependency exists. It relies on nothing outside the repository but python3, pip and apt.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent
VENV = ROOT / ".venv"
STAMP = VENV / "minijit-install.sha256"
PYPROJECT = ROOT / "pyproject.toml"
FIRST_CHAPTER = Path("chapters") / "00_welcome.ipynb"
LINT_TARGETS = ("minijit", "tests", "benchmarks", "course.py")
CHROMIUM = Path("/usr/bin/chromium")
BWRAP = Path("/usr/bin/bwrap")
CGROUP_CPU_MAX = Path("/sys/fs/cgroup/cpu.max")
PYTEST_TIMEOUT_S = 600
PYTEST_NO_TESTS_COLLECTED = 5

# Run inside the venv to decide whether the install can be skipped: minijit must be installed
# in editable mode from this very checkout, and the main packages must still be importable.
INTACT_CHECK = """
import json, sys
from importlib.metadata import PackageNotFoundError, distribution
from importlib.util import find_spec
try:
    url = json.loads(distribution("minijit").read_text("direct_url.json") or "{}").get("url")
except PackageNotFoundError:
    sys.exit(1)
modules = ("numpy", "numba", "jupyterlab", "pytest", "xdist", "pytest_timeout", "ruff")
sys.exit(0 if url == sys.argv[1] and all(find_spec(name) for name in modules) else 1)
"""


def say(message: str) -> None:
    print(f"[course] {message}", flush=True)


def run(cmd: list[str], **kwargs) -> int:
    """Run `cmd` from the repository root, echoing it first; return its exit status."""
    say("$ " + " ".join(str(part) for part in cmd))
    return subprocess.call([str(part) for part in cmd], cwd=ROOT, **kwargs)


def step(title: str):
    """Decorator: announce a set-up step and report how long it took."""

    def wrap(fn):
        def timed(*args, **kwargs):
            say(f"{title} ...")
            start = time.perf_counter()
            result = fn(*args, **kwargs)
            say(f"{title}: done in {time.perf_counter() - start:.1f} s")
            return result

        return timed

    return wrap


def venv_bin(name: str) -> Path:
    """Path of an executable inside .venv (bin/ on Linux and macOS, Scripts/ on Windows)."""
    if os.name == "nt":
        return VENV / "Scripts" / (name + ".exe")
    return VENV / "bin" / name


def venv_python() -> Path:
    return venv_bin("python")


def fail(message: str, code: int = 1) -> None:
    say("ERROR: " + message)
    sys.exit(code)


def check_python_version() -> None:
    # ruff assumes the project's own minimum; this script may be started by any older python3.
    if sys.version_info < (3, 10):  # noqa: UP036
        fail(f"minijit needs Python >= 3.10; this is {sys.version.split()[0]} ({sys.executable}).")


def venv_works() -> bool:
    python = venv_python()
    if not python.exists():
        return False
    return subprocess.call([str(python), "-c", "pass"], stderr=subprocess.DEVNULL) == 0


@step("Creating the virtual environment .venv")
def create_venv() -> None:
    # --clear: a .venv that exists but does not run (moved, or its base Python is gone) is rebuilt.
    status = run([sys.executable, "-m", "venv", "--clear", VENV])
    if status != 0:
        fail(
            "`python3 -m venv` failed. On Debian/Ubuntu install the venv module first: "
            "`sudo apt-get install python3-venv`.",
            status,
        )


def pyproject_hash() -> str:
    return hashlib.sha256(PYPROJECT.read_bytes()).hexdigest()


def stamp_matches() -> bool:
    return STAMP.exists() and STAMP.read_text().strip() == pyproject_hash()


def environment_intact() -> bool:
    """True when minijit is installed from this checkout and the main packages are present."""
    # -I keeps the current directory off sys.path, where a stray minijit.egg-info would answer.
    check = [str(venv_python()), "-I", "-c", INTACT_CHECK, ROOT.as_uri()]
    return subprocess.call(check, stderr=subprocess.DEVNULL) == 0


@step('Installing minijit and its dependencies: pip install -e ".[test]"')
def install_packages() -> None:
    STAMP.unlink(missing_ok=True)
    status = run([venv_python(), "-m", "pip", "install", "-e", ".[test]"])
    if status != 0:
        fail(
            "pip install failed (see its output above); fix that and run this command again.",
            status,
        )
    STAMP.write_text(pyproject_hash() + "\n")


def setup() -> None:
    """Create .venv if needed and install the project into it unless already up to date."""
    start = time.perf_counter()
    if not venv_works():
        create_venv()
    if stamp_matches() and environment_intact():
        say("Dependencies are up to date (pyproject.toml unchanged since the last install).")
    else:
        install_packages()
        if not environment_intact():
            say(f"WARNING: {VENV} still looks incomplete; delete it and run this command again.")
    say(f"Set-up finished in {time.perf_counter() - start:.1f} s; environment: {VENV}")


def running_as_root() -> bool:
    return hasattr(os, "geteuid") and os.geteuid() == 0


def skip_browser_tests(reason: str) -> None:
    say(f"Browser tests will be SKIPPED: {reason}")
    say("  To enable them, install Chromium at /usr/bin/chromium, e.g. on Debian/Ubuntu:")
    say("    sudo apt-get update && sudo apt-get install -y --no-install-recommends chromium")


def ensure_chromium() -> None:
    """Install Debian's Chromium for the browser tests if possible; never fail because of it."""
    if CHROMIUM.exists():
        say(f"Chromium found at {CHROMIUM}; browser tests will run.")
        return
    if not running_as_root():
        skip_browser_tests(f"{CHROMIUM} is missing and we are not root, so cannot install it.")
        return
    if shutil.which("apt-get") is None:
        skip_browser_tests(f"{CHROMIUM} is missing and apt-get is not available.")
        return
    install_chromium()
    if not CHROMIUM.exists():
        skip_browser_tests("installing Chromium with apt-get did not work (see output above).")


@step("Installing Chromium with apt-get for the browser tests")
def install_chromium() -> None:
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    if run(["apt-get", "update"], env=env) == 0:
        run(["apt-get", "install", "-y", "--no-install-recommends", "chromium"], env=env)


def skip_sandbox_tests(reason: str) -> None:
    say(f"Sandboxed grading tests will be SKIPPED: {reason}")
    say("  The grader needs bubblewrap to sandbox each kernel (without it, it grades only with")
    say("  --no-sandbox). To install it, e.g. on Debian/Ubuntu:")
    say("    sudo apt-get update && sudo apt-get install -y --no-install-recommends bubblewrap")


def ensure_bubblewrap() -> None:
    """Install Debian's bubblewrap for the grader's sandbox if possible; never fail because of
    it (tests/test_grading_sandbox.py then skips, naming the reason)."""
    if BWRAP.exists() or shutil.which("bwrap"):
        say("bubblewrap found; the grader's sandbox tests will run.")
        return
    if not running_as_root():
        skip_sandbox_tests("bwrap is missing and we are not root, so cannot install it.")
        return
    if shutil.which("apt-get") is None:
        skip_sandbox_tests("bwrap is missing and apt-get is not available.")
        return
    install_bubblewrap()
    if not BWRAP.exists():
        skip_sandbox_tests("installing bubblewrap with apt-get did not work (see output above).")


@step("Installing bubblewrap with apt-get for the grader's sandbox")
def install_bubblewrap() -> None:
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    if run(["apt-get", "update"], env=env) == 0:
        run(["apt-get", "install", "-y", "--no-install-recommends", "bubblewrap"], env=env)


def usable_cpus() -> int:
    """CPUs this process may use: the affinity mask, capped by a cgroup v2 quota in containers."""
    if hasattr(os, "sched_getaffinity"):
        cpus = len(os.sched_getaffinity(0))
    else:
        cpus = os.cpu_count() or 1
    try:
        quota, period = CGROUP_CPU_MAX.read_text().split()
        if quota != "max":
            cpus = min(cpus, -(-int(quota) // int(period)))
    except (OSError, ValueError):
        pass  # no cgroup v2 limit to respect
    return max(1, cpus)


@step("Linting with ruff")
def lint() -> int:
    targets = [name for name in LINT_TARGETS if (ROOT / name).exists()]
    return run([venv_bin("ruff"), "check", *targets])


def pytest_command(extra_args: list[str]) -> list:
    # xdist's `-n auto` can count more CPUs than a container may use; cap it at the usable ones.
    # Arguments the user passes come last, so `python3 course.py test -n 0` wins.
    workers = usable_cpus()
    if "--pdb" in extra_args or "--trace" in extra_args:
        workers = 0  # the debugger needs tests in this process, not in xdist workers
    options = ["-n", str(workers), f"--timeout={PYTEST_TIMEOUT_S}"]
    return [venv_python(), "-m", "pytest", *options, *extra_args]


@step("Running the test suite")
def run_pytest(extra_args: list[str]) -> int:
    env = dict(os.environ, MPLBACKEND="Agg")
    status = run(pytest_command(extra_args), env=env)
    if status == PYTEST_NO_TESTS_COLLECTED:
        say("pytest collected no tests (exit status 5); nothing failed, so this counts as success.")
        return 0
    return status


def cmd_setup(_extra_args: list[str]) -> int:
    setup()
    return 0


def cmd_lab(extra_args: list[str]) -> int:
    setup()
    target = [FIRST_CHAPTER] if (ROOT / FIRST_CHAPTER).exists() else []
    # Jupyter refuses to start as root (common in containers) unless told it is deliberate.
    root_flag = ["--allow-root"] if running_as_root() else []
    say("Opening JupyterLab; to stop it, press Ctrl-C in this terminal and confirm.")
    # Leave Ctrl-C to Jupyter, which asks to confirm and then shuts its kernels down cleanly.
    # (A Python-level handler, unlike SIG_IGN, is not inherited by the child process.)
    signal.signal(signal.SIGINT, lambda *_: None)
    return run([venv_bin("jupyter"), "lab", *target, *root_flag, *extra_args])


def cmd_test(extra_args: list[str]) -> int:
    setup()
    ensure_chromium()
    ensure_bubblewrap()
    lint_status = lint()
    test_status = run_pytest(extra_args)
    if lint_status != 0:
        say(f"ruff found problems (exit status {lint_status}); see its output above.")
    return test_status or lint_status


COMMANDS = {
    "lab": (cmd_lab, "set up, then open the course in JupyterLab"),
    "test": (cmd_test, "set up, then run ruff and the whole test suite (extra args go to pytest)"),
    "setup": (cmd_setup, "only set up: create .venv and install minijit with its dependencies"),
}


def parse_args(argv: list[str]) -> tuple[str, list[str]]:
    parser = argparse.ArgumentParser(
        prog="python3 course.py",
        description="Set up and run the minijit course.",
        epilog="example: python3 course.py test -k dtype",
    )
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, (_fn, help_text) in COMMANDS.items():
        subparsers.add_parser(name, help=help_text, add_help=False)
    # Everything after the command belongs to pytest or jupyter, including options like -k.
    return parser.parse_args(argv[:1]).command, argv[1:]


def main(argv: list[str]) -> int:
    check_python_version()
    command, extra_args = parse_args(argv)
    start = time.perf_counter()
    try:
        status = COMMANDS[command][0](extra_args)
    except KeyboardInterrupt:
        say("Interrupted.")
        status = 130
    say(f"Total time: {time.perf_counter() - start:.1f} s (exit status {status})")
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
