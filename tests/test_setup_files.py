"""The set-up and CI entry points agree with each other: README, .ci/run, course.py,
environment.yml and pyproject.toml. Fast; no network, nothing installed."""

from __future__ import annotations

import ast
import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
CI_RUN = ROOT / ".ci" / "run"
COURSE = ROOT / "course.py"
ENVIRONMENT = ROOT / "environment.yml"
PYPROJECT = ROOT / "pyproject.toml"

REQUIREMENT = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*(.*?)\s*$")


# --- helpers -----------------------------------------------------------------------------------


def quick_start_commands() -> list[str]:
    """The shell commands in the README's "Quick start" section, in order."""
    section = README.read_text().split("## Quick start", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```(?:bash|sh|console)?\n(.*?)```", section, flags=re.S)
    return [line.strip() for block in blocks for line in block.splitlines() if line.strip()]


def normalize_name(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def normalize_spec(spec: str) -> str:
    """'>=2.0, <2.5' and '<2.5,>=2.0' compare equal."""
    return ",".join(sorted(part.strip() for part in spec.split(",") if part.strip()))


def split_requirement(text: str) -> tuple[str, str]:
    match = REQUIREMENT.match(text)
    assert match, f"cannot parse requirement {text!r}"
    return normalize_name(match.group(1)), normalize_spec(match.group(2))


def load_pyproject() -> dict:
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        tomllib = pytest.importorskip("tomli")
    return tomllib.loads(PYPROJECT.read_text())


def pyproject_requirements() -> dict[str, str]:
    """Every third-party requirement in pyproject.toml (all extras), as {name: spec}."""
    project = load_pyproject()["project"]
    lines = list(project["dependencies"])
    for extra in project["optional-dependencies"].values():
        lines += extra
    requirements: dict[str, str] = {}
    for line in lines:
        name, spec = split_requirement(line)
        if name == "minijit":  # self-reference such as minijit[course,grading]
            continue
        assert requirements.setdefault(name, spec) == spec, f"{name} has two ranges in pyproject"
        requirements[name] = spec
    return requirements


def environment_entries() -> tuple[list[str], list[str]]:
    """(conda dependencies, pip dependencies) of environment.yml, by a small hand parser.

    Handles the subset of YAML the file uses: a top-level `dependencies:` list of strings,
    one of whose items is `- pip:` holding a more deeply indented list.
    """
    conda: list[str] = []
    pip: list[str] = []
    in_dependencies = False
    pip_indent = None
    for line in ENVIRONMENT.read_text().splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        if not line.startswith((" ", "-")):  # a new top-level key
            in_dependencies = line.strip() == "dependencies:"
            continue
        item = re.match(r"^(\s*)- (.*)$", line)
        if not in_dependencies or not item:
            continue
        indent, text = len(item.group(1)), item.group(2).strip()
        if text == "pip:":
            pip_indent = indent
        elif pip_indent is not None and indent > pip_indent:
            pip.append(text)
        else:
            conda.append(text)
    return conda, pip


def environment_requirements() -> dict[str, str]:
    conda, pip = environment_entries()
    requirements: dict[str, str] = {}
    for line in conda + pip:
        if line.startswith("-e ") or line == "pip" or line.startswith("python="):
            continue
        name, spec = split_requirement(line)
        requirements[name] = spec
    return requirements


def import_course():
    spec = importlib.util.spec_from_file_location("course", COURSE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def system_python() -> str:
    """The interpreter the venv was made from (a learner's bare python3), not the venv's."""
    return getattr(sys, "_base_executable", None) or sys.executable


# --- README and .ci/run ------------------------------------------------------------------------


def test_readme_quick_start_is_the_two_commands():
    assert quick_start_commands()[:2] == ["python3 course.py lab", "python3 course.py test"]


def test_ci_runs_exactly_the_readme_test_command():
    lines = [line.strip() for line in CI_RUN.read_text().splitlines()]
    assert lines[0].startswith("#!") and "bash" in lines[0]
    assert "set -euo pipefail" in lines
    exec_lines = [line for line in lines if line.startswith("exec ")]
    assert len(exec_lines) == 1
    assert exec_lines[0].removeprefix("exec ") == quick_start_commands()[1]


@pytest.mark.skipif(os.name == "nt", reason="no executable bit on Windows")
def test_ci_run_is_executable():
    assert os.access(CI_RUN, os.X_OK)


# --- environment.yml vs pyproject.toml ---------------------------------------------------------


def test_environment_yml_has_every_requirement_with_the_same_range():
    assert environment_requirements() == pyproject_requirements()


def test_environment_yml_installs_minijit_itself_with_a_supported_python():
    conda, pip = environment_entries()
    assert "-e ." in pip
    (python,) = [line for line in conda if line.startswith("python=")]
    version = tuple(int(part) for part in python.removeprefix("python=").split("."))
    minimum = load_pyproject()["project"]["requires-python"].removeprefix(">=")
    assert version >= tuple(int(part) for part in minimum.split("."))


def test_environment_yml_hand_parser_agrees_with_yaml():
    yaml = pytest.importorskip("yaml")
    data = yaml.safe_load(ENVIRONMENT.read_text())
    conda = [item for item in data["dependencies"] if isinstance(item, str)]
    (pip_section,) = [item for item in data["dependencies"] if isinstance(item, dict)]
    assert data["name"] == "minijit"
    assert environment_entries() == (conda, pip_section["pip"])


# --- course.py ---------------------------------------------------------------------------------


def test_course_py_uses_only_the_standard_library():
    tree = ast.parse(COURSE.read_text())
    imported = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imported |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            imported.add((node.module or "").split(".")[0])
    assert imported - set(sys.stdlib_module_names) - {"__future__"} == set()


def test_course_py_help_runs_on_bare_python_and_lists_the_commands():
    # -I -S: isolated mode without site-packages, as on a machine where nothing is installed yet.
    result = subprocess.run(
        [system_python(), "-I", "-S", str(COURSE), "--help"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
    )
    assert result.returncode == 0, result.stderr
    for command in ("lab", "test", "setup"):
        assert re.search(rf"^\s+{command}\s", result.stdout, flags=re.M), result.stdout


def test_extra_arguments_after_test_go_to_pytest_last():
    course = import_course()
    command, extra = course.parse_args(["test", "-k", "dtype", "-x"])
    assert (command, extra) == ("test", ["-k", "dtype", "-x"])
    pytest_args = [str(part) for part in course.pytest_command(extra)]
    assert pytest_args[1:3] == ["-m", "pytest"]
    assert f"--timeout={course.PYTEST_TIMEOUT_S}" in pytest_args
    assert pytest_args[-3:] == ["-k", "dtype", "-x"]
    workers = int(pytest_args[pytest_args.index("-n") + 1])
    assert 1 <= workers <= (os.cpu_count() or 1)


def test_debugger_runs_without_xdist_workers():
    pytest_args = [str(part) for part in import_course().pytest_command(["--pdb"])]
    assert pytest_args[pytest_args.index("-n") + 1] == "0"


def test_no_tests_collected_counts_as_success(monkeypatch, capsys):
    course = import_course()
    monkeypatch.setattr(course, "run", lambda cmd, **kwargs: course.PYTEST_NO_TESTS_COLLECTED)
    assert course.run_pytest(["-k", "nothing_matches_this"]) == 0
    assert "no tests" in capsys.readouterr().out


def test_test_run_uses_a_headless_matplotlib_backend(monkeypatch):
    course = import_course()
    seen = {}
    monkeypatch.setattr(course, "run", lambda cmd, env: seen.update(env) or 0)
    assert course.run_pytest([]) == 0
    assert seen["MPLBACKEND"] == "Agg"


def test_missing_chromium_never_fails_set_up(monkeypatch, capsys, tmp_path):
    course = import_course()
    monkeypatch.setattr(course, "CHROMIUM", tmp_path / "no-chromium")
    monkeypatch.setattr(course, "running_as_root", lambda: True)
    monkeypatch.setattr(course.shutil, "which", lambda name: "/usr/bin/" + name)
    commands = []
    monkeypatch.setattr(course, "run", lambda cmd, **kwargs: commands.append(cmd[:2]) or 100)
    course.ensure_chromium()  # apt-get fails: a warning, not an error
    assert commands == [["apt-get", "update"]]
    assert "SKIPPED" in capsys.readouterr().out


def test_without_root_browser_tests_are_skipped_with_a_hint(monkeypatch, capsys, tmp_path):
    course = import_course()
    monkeypatch.setattr(course, "CHROMIUM", tmp_path / "no-chromium")
    monkeypatch.setattr(course, "running_as_root", lambda: False)
    monkeypatch.setattr(course, "run", lambda *args, **kwargs: pytest.fail("must not run apt"))
    course.ensure_chromium()
    out = capsys.readouterr().out
    assert "SKIPPED" in out and "apt-get install" in out


def test_missing_bubblewrap_is_installed_as_root(monkeypatch, capsys, tmp_path):
    course = import_course()
    monkeypatch.setattr(course, "BWRAP", tmp_path / "no-bwrap")
    monkeypatch.setattr(course, "running_as_root", lambda: True)
    monkeypatch.setattr(course.shutil, "which",
                        lambda name: None if name == "bwrap" else "/usr/bin/" + name)
    commands = []
    monkeypatch.setattr(course, "run", lambda cmd, **kwargs: commands.append(cmd) or 0)
    course.ensure_bubblewrap()  # apt-get "works" but installs nothing: a warning
    assert commands[0] == ["apt-get", "update"]
    assert commands[1][:2] == ["apt-get", "install"] and "bubblewrap" in commands[1]
    assert "SKIPPED" in capsys.readouterr().out


def test_without_root_sandbox_tests_are_skipped_with_a_hint(monkeypatch, capsys, tmp_path):
    course = import_course()
    monkeypatch.setattr(course, "BWRAP", tmp_path / "no-bwrap")
    monkeypatch.setattr(course.shutil, "which", lambda name: None)
    monkeypatch.setattr(course, "running_as_root", lambda: False)
    monkeypatch.setattr(course, "run", lambda *args, **kwargs: pytest.fail("must not run apt"))
    course.ensure_bubblewrap()
    out = capsys.readouterr().out
    assert "SKIPPED" in out and "apt-get install" in out and "bubblewrap" in out


def test_readme_library_example_runs(capsys):
    section = README.read_text().split("## Using minijit as a library", 1)[1]
    code = re.search(r"```python\n(.*?)```", section, flags=re.S).group(1)
    exec(compile(code, "README.md", "exec"), {})
    out = capsys.readouterr().out
    assert "{ lambda ; a:f64[1000]. let" in out and "sin a" in out
