#!/usr/bin/env python3
"""Set up the minijit course and open it, test it or grade it: the project's only entry point.

    python3 course.py lab        set up, then open the course in JupyterLab
    python3 course.py test       set up for the tests, then lint with ruff and run the test suite
    python3 course.py setup      set up only (what `lab` needs)
    python3 course.py grade ...  set up, install bubblewrap if needed, then grade notebooks

"Set up" means: create the virtual environment `.venv/` in the repository root (with
`python3 -m venv`) if it is absent, then `pip install -e ".[EXTRAS]"` into it, with the
extras the command needs: `lab`, `setup` and `grade` the course's and the grader's
(`course,grading`), `test` everything (`test`, which includes the others plus the benchmarks'
JAX and the test tools). A stamp in `.venv/` records the sha256 of pyproject.toml and the
extras installed; the install is skipped while pyproject.toml is unchanged, the stamp's
extras cover the command's and the environment still looks intact, so every run after the
first starts in seconds. `test` after `lab` installs the rest; `lab` after `test` installs
nothing.

`lab` serves the repository root (so `chapters/` and `exercises/` are both in reach), opens
chapters/00_welcome.ipynb, and prints a URL, token included, that opens it directly: the one
to use without a browser on this machine (over SSH, in a container). `lab --lang zh` opens the
Chinese course, chapters/zh/00_welcome.ipynb, and installs a Chinese font for its plots where
it can (as root with apt-get). Further arguments go to JupyterLab (`python3 course.py lab
--no-browser --port 8899`).

`test` passes any further arguments on to pytest (`python3 course.py test -k dtype -x`).
Browser tests need Chromium at /usr/bin/chromium, and the grader's sandbox tests need
bubblewrap (`bwrap`), and the Chinese course's tests a Chinese font (`fonts-noto-cjk`): when
one is missing and we run as root on a Debian-like system, `test` installs it with apt-get;
otherwise those tests are skipped, saying why.

`grade` passes its arguments on to `python -m minijit.grading grade`, run from the current
folder (`python3 course.py grade submissions/ --out gradebook.csv`). The grader runs every
notebook in a bubblewrap sandbox: `grade` installs bubblewrap with apt-get when it is missing
and we are root, and otherwise stops, saying how to install it (with `--no-sandbox` it skips
all this; the README says what that gives up). A command of its own rather than a `setup`
option: the instructor needs one command, not a set-up step to remember before another, the
check happens when grading needs it, and the grader runs with .venv's Python without
activating it. Learners never meet apt-get.

This file uses only the standard library, so it runs with a bare Python >= 3.10 before any
dependency exists. It relies on nothing outside the repository but python3, pip and apt.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from urllib.parse import quote

ROOT = Path(__file__).resolve().parent
VENV = ROOT / ".venv"
STAMP = VENV / "minijit-install.sha256"
PYPROJECT = ROOT / "pyproject.toml"
FIRST_CHAPTER = "chapters/00_welcome.ipynb"
LANGUAGES = {"en": "chapters", "zh": "chapters/zh"}  # --lang: the folder of the chapters
LINT_TARGETS = ("minijit", "tests", "benchmarks", "course.py")
CHROMIUM = Path("/usr/bin/chromium")
BWRAP = Path("/usr/bin/bwrap")
PYTEST_TIMEOUT_S = 600
PYTEST_NO_TESTS_COLLECTED = 5
LAB_START_S = 180  # how long `lab` waits for JupyterLab's address before giving up on it

# The extras of pyproject.toml each command installs, and what each extra brings in: another
# extra it names (`minijit[course,grading,bench]`), and modules that must import afterwards
# (tests/test_setup_files.py checks both against pyproject.toml).
COURSE_EXTRAS = ("course", "grading")
TEST_EXTRAS = ("test",)
EXTRAS_INCLUDED = {"test": ("course", "grading", "bench")}
EXTRA_MODULES = {
    "": ("numpy", "numba", "scipy"),
    "course": ("jupyterlab", "ipywidgets", "matplotlib", "ipykernel"),
    "grading": ("nbformat", "nbclient", "tqdm"),
    "bench": ("numexpr", "jax"),
    "test": ("pytest", "xdist", "pytest_timeout", "hypothesis", "playwright", "ruff"),
}

# Run inside the venv to decide whether the install can be skipped: minijit must be installed
# in editable mode from this very checkout, and the given modules must still be importable.
INTACT_CHECK = """
import json, sys
from importlib.metadata import PackageNotFoundError, distribution
from importlib.util import find_spec
try:
    url = json.loads(distribution("minijit").read_text("direct_url.json") or "{}").get("url")
except PackageNotFoundError:
    sys.exit(1)
sys.exit(0 if url == sys.argv[1] and all(find_spec(name) for name in sys.argv[2:]) else 1)
"""

RUNTIME_DIR_QUERY = (
    "from jupyter_core.paths import jupyter_runtime_dir; print(jupyter_runtime_dir())"
)


def say(message: str) -> None:
    print(f"[course] {message}", flush=True)


def run(cmd: list, cwd: Path = ROOT, **kwargs) -> int:
    """Run `cmd` (from the repository root unless told), echoing it first; return its status."""
    say("$ " + shlex.join(str(part) for part in cmd))
    return subprocess.call([str(part) for part in cmd], cwd=cwd, **kwargs)


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


# --- what is installed: the stamp ---------------------------------------------------------------


def covered(extras) -> set[str]:
    """The extras that installing `extras` installs: themselves and those they include."""
    out = set(extras)
    for extra in extras:
        out |= set(EXTRAS_INCLUDED.get(extra, ()))
    return out


def minimal(extras) -> list[str]:
    """`extras` without those another of them includes: ["course", "test"] -> ["test"]."""
    implied = set().union(*(EXTRAS_INCLUDED.get(extra, ()) for extra in extras))
    return sorted(set(extras) - implied)


def pyproject_hash() -> str:
    return hashlib.sha256(PYPROJECT.read_bytes()).hexdigest()


def read_stamp() -> tuple[str, set[str]]:
    """(sha256 of pyproject.toml at the last install, extras installed then); ("", set()) when
    there is no stamp. A stamp of one bare hash was written when every command installed the
    test extra."""
    try:
        text = STAMP.read_text().strip()
    except OSError:
        return "", set()
    try:
        data = json.loads(text)
        return str(data["pyproject_sha256"]), set(data["extras"])
    except (ValueError, KeyError, TypeError):
        return (text, {"test"}) if len(text) == 64 else ("", set())


def write_stamp(extras) -> None:
    data = {"pyproject_sha256": pyproject_hash(), "extras": minimal(extras)}
    STAMP.write_text(json.dumps(data) + "\n")


def modules_for(extras) -> list[str]:
    names = list(EXTRA_MODULES[""])
    for extra in sorted(covered(extras)):
        names += EXTRA_MODULES.get(extra, ())
    return names


def environment_intact(extras) -> bool:
    """True when minijit is installed from this checkout with the modules of `extras`."""
    # -I keeps the current directory off sys.path, where a stray minijit.egg-info would answer.
    check = [str(venv_python()), "-I", "-c", INTACT_CHECK, ROOT.as_uri(), *modules_for(extras)]
    return subprocess.call(check, stderr=subprocess.DEVNULL) == 0


def up_to_date(extras) -> bool:
    """True when `extras` are installed, for the current pyproject.toml, and still intact."""
    digest, installed = read_stamp()
    return (
        digest == pyproject_hash()
        and set(extras) <= covered(installed)
        and environment_intact(extras)
    )


def install_packages(extras) -> None:
    spec = ".[" + ",".join(minimal(extras)) + "]"

    @step(f'Installing minijit and its dependencies: pip install -e "{spec}"')
    def install() -> None:
        STAMP.unlink(missing_ok=True)
        status = run([venv_python(), "-m", "pip", "install", "-e", spec])
        if status != 0:
            fail(
                "pip install failed (see its output above); fix that and run this command again.",
                status,
            )
        write_stamp(extras)

    install()


def setup(extras=COURSE_EXTRAS) -> None:
    """Create .venv if needed and install the project with `extras` unless already there.

    What an earlier command installed stays installed and is kept up to date: when
    pyproject.toml changed, the install covers the stamp's extras too."""
    start = time.perf_counter()
    if not venv_works():
        create_venv()
    if up_to_date(extras):
        say(
            f"Dependencies are up to date (extras {','.join(minimal(read_stamp()[1]))}; "
            "pyproject.toml unchanged since the last install)."
        )
    else:
        install_packages(covered(extras) | covered(read_stamp()[1]))
        if not environment_intact(extras):
            say(f"WARNING: {VENV} still looks incomplete; delete it and run this command again.")
    say(f"Set-up finished in {time.perf_counter() - start:.1f} s; environment: {VENV}")


# --- system packages: Chromium and bubblewrap ----------------------------------------------------


def running_as_root() -> bool:
    return hasattr(os, "geteuid") and os.geteuid() == 0


def apt_get_install(package: str) -> None:
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    if run(["apt-get", "update"], env=env) == 0:
        run(["apt-get", "install", "-y", "--no-install-recommends", package], env=env)


def system_package(found, package: str, install_step) -> str | None:
    """Install a Debian package with apt-get unless `found()`; return why it is still missing
    (None: it is there)."""
    if found():
        return None
    if not running_as_root():
        return f"{package} is missing and we are not root, so cannot install it."
    if shutil.which("apt-get") is None:
        return f"{package} is missing and apt-get is not available."
    install_step()
    if not found():
        return f"installing {package} with apt-get did not work (see output above)."
    return None


def skip_browser_tests(reason: str) -> None:
    say(f"Browser tests will be SKIPPED: {reason}")
    say("  To enable them, install Chromium at /usr/bin/chromium, e.g. on Debian/Ubuntu:")
    say("    sudo apt-get update && sudo apt-get install -y --no-install-recommends chromium")


def ensure_chromium() -> None:
    """Install Debian's Chromium for the browser tests if possible; never fail because of it."""
    problem = system_package(CHROMIUM.exists, "chromium", install_chromium)
    if problem is None:
        say(f"Chromium found at {CHROMIUM}; browser tests will run.")
    else:
        skip_browser_tests(problem)


@step("Installing Chromium with apt-get for the browser tests")
def install_chromium() -> None:
    apt_get_install("chromium")


def cjk_font_found() -> bool:
    """Whether fontconfig knows a Chinese font (what Chromium and the course's plots use)."""
    if shutil.which("fc-list") is None:
        return False
    out = subprocess.run(["fc-list", ":lang=zh", "family"], capture_output=True, text=True)
    return bool(out.stdout.strip())


def ensure_cjk_font(required: bool) -> None:
    """Install Debian's Noto CJK fonts for the Chinese course if possible (`test`: its
    browser and plot tests check that Chinese renders; `lab --lang zh`: readable plots)."""
    problem = system_package(cjk_font_found, "fonts-noto-cjk", install_cjk_font)
    if problem is None:
        return
    say(f"No Chinese font: {problem}")
    say("  Chinese plot labels will show as boxes" + (
        "; the tests that check Chinese text renders will be skipped." if required else "."))
    say("  To install one: sudo apt-get install -y fonts-noto-cjk (Debian/Ubuntu); macOS and "
        "Windows have one already.")


@step("Installing the Noto CJK fonts with apt-get for the Chinese course")
def install_cjk_font() -> None:
    apt_get_install("fonts-noto-cjk")


def bubblewrap_found() -> bool:
    return BWRAP.exists() or shutil.which("bwrap") is not None


BUBBLEWRAP_HINT = (
    "  To install it: `sudo apt-get update && sudo apt-get install -y bubblewrap` (Debian,\n"
    "  Ubuntu), `sudo dnf install bubblewrap` (Fedora), or your system's equivalent."
)


def ensure_bubblewrap() -> None:
    """Install Debian's bubblewrap for the grader's sandbox if possible; never fail because of
    it (tests/test_grading_sandbox.py then skips, naming the reason)."""
    problem = system_package(bubblewrap_found, "bubblewrap", install_bubblewrap)
    if problem is None:
        say("bubblewrap found; the grader's sandbox tests will run.")
        return
    say(f"Sandboxed grading tests will be SKIPPED: {problem}")
    say("  The grader needs bubblewrap to sandbox each kernel (without it, it grades only with")
    say("  --no-sandbox).")
    for line in BUBBLEWRAP_HINT.splitlines():
        say(line)


@step("Installing bubblewrap with apt-get for the grader's sandbox")
def install_bubblewrap() -> None:
    apt_get_install("bubblewrap")


# --- test ---------------------------------------------------------------------------------------


def usable_cpus() -> int:
    """CPUs this process may use (the affinity mask, capped by a cgroup v2 quota): minijit's own
    count, `minijit/threads.py`, loaded from its file. It imports only the standard library,
    and this runs before minijit's dependencies are installed."""
    spec = importlib.util.spec_from_file_location("minijit_threads",
                                                  ROOT / "minijit" / "threads.py")
    threads = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(threads)
    return threads.usable_cpus()


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


# --- lab ----------------------------------------------------------------------------------------


def first_chapter(lang: str = "en") -> str:
    return f"{LANGUAGES[lang]}/{Path(FIRST_CHAPTER).name}"


def split_lang(extra_args: list[str]) -> tuple[str, list[str]]:
    """`--lang zh` (or `--lang=zh`) taken out of `lab`'s arguments: (language, the rest)."""
    rest, lang, args = [], "en", iter(extra_args)
    for arg in args:
        if arg == "--lang":
            lang = next(args, "")
        elif arg.startswith("--lang="):
            lang = arg.split("=", 1)[1]
        else:
            rest.append(arg)
    if lang not in LANGUAGES:
        raise SystemExit(f"course.py lab: --lang must be one of {', '.join(LANGUAGES)}, "
                         f"not {lang!r}")
    return lang, rest


def lab_command(extra_args: list[str], lang: str = "en") -> list:
    """JupyterLab serving the repository root, opening the first chapter (of the course in
    `lang`: `chapters/zh/00_welcome.ipynb` for "zh").

    `python -m jupyterlab`, not the `jupyter` launcher: the server is then the process started
    here, so its runtime file is jpserver-<that pid>.json."""
    first = first_chapter(lang)
    target = [first] if (ROOT / first).exists() else []
    # Jupyter refuses to start as root (common in containers) unless told it is deliberate.
    root_flag = ["--allow-root"] if running_as_root() else []
    return [
        venv_python(),
        "-m",
        "jupyterlab",
        f"--ServerApp.root_dir={ROOT}",
        *target,
        *root_flag,
        *extra_args,
    ]


def jupyter_runtime_dir() -> Path | None:
    """Where the venv's Jupyter writes its servers' runtime files (None: cannot tell)."""
    try:
        out = subprocess.run(
            [str(venv_python()), "-c", RUNTIME_DIR_QUERY],
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return Path(out.stdout.strip()) if out.stdout.strip() else None


def course_url(info: dict, lang: str = "en") -> str:
    """The URL that opens the first chapter, from a server's runtime info (jpserver-PID.json)."""
    url = info["url"].rstrip("/") + "/lab/tree/" + quote(first_chapter(lang))
    return url + ("?token=" + quote(info["token"]) if info.get("token") else "")


def answers(url: str) -> bool:
    """True when an HTTP server answers at `url` (with any status)."""
    try:
        with urllib.request.urlopen(url, timeout=5):
            return True
    except urllib.error.HTTPError:
        return True
    except (OSError, ValueError):
        return False


def wait_for_lab(
    proc: subprocess.Popen, runtime_dir: Path | None, timeout_s: float = LAB_START_S,
    lang: str = "en",
) -> str | None:
    """The course's URL once JupyterLab (`proc`) serves it; None if it exits or never does."""
    if runtime_dir is None:
        return None
    info_file = runtime_dir / f"jpserver-{proc.pid}.json"
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline and proc.poll() is None:
        try:
            info = json.loads(info_file.read_text())
        except (OSError, ValueError):  # not written yet, or half written
            time.sleep(0.2)
            continue
        status = info["url"].rstrip("/") + "/api/status"
        if info.get("token"):
            status += "?token=" + quote(info["token"])
        if info.get("secure") or answers(status):
            return course_url(info, lang)
        time.sleep(0.2)
    return None


def announce_lab(url: str | None, lang: str = "en") -> None:
    if url is None:
        say("Could not read JupyterLab's address; use the URL it printed above, then open")
        say(f"{first_chapter(lang)} in its file browser.")
        return
    port = url.split("://", 1)[1].split("/", 1)[0].rsplit(":", 1)[-1]
    say("The course is open in JupyterLab. If no browser window opened, open this URL:")
    say("")
    say(f"    {url}")
    say("")
    say(f"(From another machine, forward the port first: ssh -L {port}:localhost:{port} HOST.)")
    say("To stop JupyterLab, press Ctrl-C here twice.")


def cmd_lab(extra_args: list[str]) -> int:
    lang, extra_args = split_lang(extra_args)
    setup(COURSE_EXTRAS)
    if lang == "zh":
        ensure_cjk_font(required=False)
    cmd = lab_command(extra_args, lang)
    runtime_dir = jupyter_runtime_dir()
    say("Starting JupyterLab; to stop it, press Ctrl-C in this terminal twice.")
    # Leave Ctrl-C to Jupyter, which asks to confirm and then shuts its kernels down cleanly.
    # (A Python-level handler, unlike SIG_IGN, is not inherited by the child process.)
    signal.signal(signal.SIGINT, lambda *_: None)
    say("$ " + shlex.join(str(part) for part in cmd))
    proc = subprocess.Popen([str(part) for part in cmd], cwd=ROOT)
    # `kill` of this process stops JupyterLab the same way, kernels included.
    signal.signal(signal.SIGTERM, lambda *_: proc.send_signal(signal.SIGTERM))
    url = wait_for_lab(proc, runtime_dir, lang=lang)
    if proc.poll() is None:  # not when it failed to start, or was stopped meanwhile
        announce_lab(url, lang)
    return proc.wait()


# --- commands -----------------------------------------------------------------------------------


def cmd_setup(_extra_args: list[str]) -> int:
    setup(COURSE_EXTRAS)
    return 0


def cmd_test(extra_args: list[str]) -> int:
    setup(TEST_EXTRAS)
    ensure_chromium()
    ensure_cjk_font(required=True)
    ensure_bubblewrap()
    lint_status = lint()
    test_status = run_pytest(extra_args)
    if lint_status != 0:
        say(f"ruff found problems (exit status {lint_status}); see its output above.")
    return test_status or lint_status


def cmd_grade(extra_args: list[str]) -> int:
    setup(COURSE_EXTRAS)
    if "--no-sandbox" not in extra_args:
        problem = system_package(bubblewrap_found, "bubblewrap", install_bubblewrap)
        if problem is not None:
            say("ERROR: the grader runs every notebook in a bubblewrap sandbox, and " + problem)
            for line in BUBBLEWRAP_HINT.splitlines():
                say(line)
            say("  Then run this command again. (`--no-sandbox` grades without it, as your own")
            say('  user: only for notebooks you trust; README, "The sandbox".)')
            return 1
    # From the folder the instructor is in: relative paths in the arguments are theirs.
    return run([venv_python(), "-m", "minijit.grading", "grade", *extra_args], cwd=Path.cwd())


COMMANDS = {
    "lab": (cmd_lab, "set up, then open the course in JupyterLab (extra args go to JupyterLab)"),
    "test": (cmd_test, "set up, then run ruff and the whole test suite (extra args go to pytest)"),
    "setup": (cmd_setup, "only set up: create .venv and install minijit with what `lab` needs"),
    "grade": (
        cmd_grade,
        "set up and install bubblewrap, then `python -m minijit.grading grade` with the extra args",
    ),
}


def parse_args(argv: list[str]) -> tuple[str, list[str]]:
    parser = argparse.ArgumentParser(
        prog="python3 course.py",
        description="Set up and run the minijit course.",
        epilog="examples: python3 course.py test -k dtype; "
        "python3 course.py grade submissions/ --out gradebook.csv",
    )
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, (_fn, help_text) in COMMANDS.items():
        subparsers.add_parser(name, help=help_text, add_help=False)
    # Everything after the command belongs to pytest, jupyter or the grader, options included.
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
