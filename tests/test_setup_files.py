"""The set-up and CI entry points agree with each other: README, .ci/run, course.py,
environment.yml and pyproject.toml. Fast; no network, nothing installed."""

from __future__ import annotations

import ast
import importlib.util
import json
import os
import re
import shutil
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


def pyproject_requirements(extras: tuple[str, ...] | None = None) -> dict[str, str]:
    """The third-party requirements of pyproject.toml, as {name: spec}: the dependencies and
    those of `extras` (None: all extras)."""
    project = load_pyproject()["project"]
    lines = list(project["dependencies"])
    for name, extra in project["optional-dependencies"].items():
        if extras is None or name in extras:
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


def test_environment_yml_has_what_course_py_lab_installs_with_the_same_ranges():
    extras = import_course().COURSE_EXTRAS
    assert environment_requirements() == pyproject_requirements(extras)


def test_every_requirement_has_one_range_across_extras():
    pyproject_requirements()  # asserts it while merging


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
    for command in ("lab", "test", "setup", "grade"):
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
    monkeypatch.setattr(
        course.shutil, "which", lambda name: None if name == "bwrap" else "/usr/bin/" + name
    )
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


# --- course.py: what each command installs, and the stamp --------------------------------------


@pytest.fixture
def course(tmp_path, monkeypatch):
    """course.py with its stamp in tmp_path, a working .venv, and pip recorded, not run."""
    module = import_course()
    monkeypatch.setattr(module, "STAMP", tmp_path / "minijit-install.sha256")
    monkeypatch.setattr(module, "venv_works", lambda: True)
    monkeypatch.setattr(module, "environment_intact", lambda extras: True)
    module.pip_installs = []

    def fake_run(cmd, **kwargs):
        cmd = [str(part) for part in cmd]
        assert cmd[1:4] == ["-m", "pip", "install"], cmd
        module.pip_installs.append(cmd[-1])
        return 0

    monkeypatch.setattr(module, "run", fake_run)
    return module


def test_lab_installs_the_course_and_the_grader_only(course):
    course.setup(course.COURSE_EXTRAS)
    assert course.pip_installs == [".[course,grading]"]
    assert course.read_stamp() == (course.pyproject_hash(), {"course", "grading"})


def test_test_after_lab_installs_the_rest(course):
    course.setup(course.COURSE_EXTRAS)
    course.setup(course.TEST_EXTRAS)
    assert course.pip_installs == [".[course,grading]", ".[test]"]
    assert course.read_stamp()[1] == {"test"}


def test_lab_after_test_installs_nothing(course):
    course.setup(course.TEST_EXTRAS)
    course.setup(course.COURSE_EXTRAS)
    course.setup(course.COURSE_EXTRAS)
    assert course.pip_installs == [".[test]"]


def test_a_changed_pyproject_reinstalls_everything_installed_before(course):
    course.write_stamp(["test"])
    data = json.loads(course.STAMP.read_text())
    course.STAMP.write_text(json.dumps(dict(data, pyproject_sha256="0" * 64)))
    course.setup(course.COURSE_EXTRAS)
    assert course.pip_installs == [".[test]"]


def test_an_environment_that_lost_a_package_is_reinstalled(course, monkeypatch):
    course.setup(course.COURSE_EXTRAS)
    monkeypatch.setattr(course, "environment_intact", lambda extras: False)
    course.setup(course.COURSE_EXTRAS)
    assert course.pip_installs == [".[course,grading]", ".[course,grading]"]


def test_a_stamp_of_one_bare_hash_stands_for_the_test_extra(course):
    # course.py once installed `.[test]` for every command and stamped the bare sha256.
    course.STAMP.write_text(course.pyproject_hash() + "\n")
    course.setup(course.COURSE_EXTRAS)
    course.setup(course.TEST_EXTRAS)
    assert course.pip_installs == []


def test_course_py_knows_the_extras_of_pyproject():
    course = import_course()
    extras = load_pyproject()["project"]["optional-dependencies"]
    assert set(course.EXTRA_MODULES) - {""} == set(extras)
    assert {*course.COURSE_EXTRAS, *course.TEST_EXTRAS} <= set(extras)
    for extra, lines in extras.items():
        named = [re.match(r"minijit\[(.*)\]", line) for line in lines]
        included = {e.strip() for m in named if m for e in m.group(1).split(",")}
        assert included == set(course.EXTRAS_INCLUDED.get(extra, ())), extra


def test_each_extra_brings_the_modules_course_py_checks_for():
    from importlib.metadata import packages_distributions

    course = import_course()
    project = load_pyproject()["project"]
    requirements = {"": project["dependencies"], **project["optional-dependencies"]}
    dists = packages_distributions()
    for extra, modules in course.EXTRA_MODULES.items():
        names = {split_requirement(line)[0] for line in requirements[extra]}
        for module in modules:
            if module not in dists:
                continue  # not installed here (e.g. a run without the test extra)
            provided = {normalize_name(d) for d in dists[module]}
            assert provided & names, f"{module} ({provided}) is not in the {extra!r} extra"


# --- course.py lab ------------------------------------------------------------------------------


def test_lab_serves_the_repository_root_and_opens_the_first_chapter():
    course = import_course()
    cmd = [str(part) for part in course.lab_command(["--no-browser", "--port", "8899"])]
    assert cmd[1:3] == ["-m", "jupyterlab"]
    assert f"--ServerApp.root_dir={ROOT}" in cmd
    assert "chapters/00_welcome.ipynb" in cmd and (ROOT / "chapters/00_welcome.ipynb").exists()
    assert cmd[-3:] == ["--no-browser", "--port", "8899"]


def test_lab_lang_zh_opens_the_chinese_course():
    course = import_course()
    lang, rest = course.split_lang(["--no-browser", "--lang", "zh", "--port", "8899"])
    assert (lang, rest) == ("zh", ["--no-browser", "--port", "8899"])
    assert course.split_lang(["--lang=zh"]) == ("zh", [])
    assert course.split_lang([]) == ("en", [])
    with pytest.raises(SystemExit, match="--lang must be one of en, zh"):
        course.split_lang(["--lang", "fr"])
    cmd = [str(part) for part in course.lab_command(rest, lang)]
    first = "chapters/zh/00_welcome.ipynb"
    assert first in cmd and (ROOT / first).exists()
    url = course.course_url({"url": "http://localhost:8888/", "token": "t"}, "zh")
    assert url == "http://localhost:8888/lab/tree/chapters/zh/00_welcome.ipynb?token=t"


def test_the_course_url_opens_the_first_chapter_with_the_token():
    course = import_course()
    info = {"url": "http://localhost:8888/", "token": "abc"}
    assert course.course_url(info) == (
        "http://localhost:8888/lab/tree/chapters/00_welcome.ipynb?token=abc"
    )
    info = {"url": "http://127.0.0.1:9000/base/", "token": ""}
    assert (
        course.course_url(info) == "http://127.0.0.1:9000/base/lab/tree/chapters/00_welcome.ipynb"
    )


class FakeServer:
    def __init__(self, pid: int, exit_status: int | None = None):
        self.pid, self.exit_status = pid, exit_status

    def poll(self):
        return self.exit_status


def test_lab_reads_the_address_from_the_servers_runtime_file(tmp_path, monkeypatch, capsys):
    course = import_course()
    monkeypatch.setattr(course, "answers", lambda url: "token=abc" in url)
    info = {"url": "http://localhost:8891/", "token": "abc", "pid": 4242, "secure": False}
    (tmp_path / "jpserver-4242.json").write_text(json.dumps(info))
    url = course.wait_for_lab(FakeServer(4242), tmp_path, timeout_s=5)
    assert url == "http://localhost:8891/lab/tree/chapters/00_welcome.ipynb?token=abc"
    course.announce_lab(url)
    out = capsys.readouterr().out
    assert f"    {url}\n" in out and "Ctrl-C" in out and "ssh -L 8891:localhost:8891" in out


def test_lab_gives_up_on_the_address_when_jupyterlab_exits(tmp_path, capsys):
    course = import_course()
    assert course.wait_for_lab(FakeServer(4242, exit_status=1), tmp_path, timeout_s=5) is None
    course.announce_lab(None)
    assert "Could not read JupyterLab's address" in capsys.readouterr().out


# --- course.py grade ----------------------------------------------------------------------------


@pytest.fixture
def grading(monkeypatch, tmp_path):
    """course.py with set-up skipped and commands recorded; no bubblewrap, not root."""
    course = import_course()
    monkeypatch.setattr(course, "setup", lambda extras: None)
    monkeypatch.setattr(course, "BWRAP", tmp_path / "no-bwrap")
    monkeypatch.setattr(course.shutil, "which", lambda name: None)
    monkeypatch.setattr(course, "running_as_root", lambda: False)
    course.commands = []

    def fake_run(cmd, **kwargs):
        course.commands.append(([str(part) for part in cmd], kwargs.get("cwd")))
        return 0

    monkeypatch.setattr(course, "run", fake_run)
    return course


def test_grade_without_bubblewrap_and_root_stops_and_says_how_to_install_it(grading, capsys):
    assert grading.cmd_grade(["submissions/"]) == 1
    out = capsys.readouterr().out
    assert "bubblewrap" in out and "not root" in out and "apt-get install" in out
    assert "--no-sandbox" in out
    assert grading.commands == []


def test_grade_installs_bubblewrap_as_root_then_grades_from_the_current_folder(
    grading, monkeypatch, tmp_path
):
    monkeypatch.setattr(grading, "running_as_root", lambda: True)
    monkeypatch.setattr(grading.shutil, "which", lambda name: "/usr/bin/" + name)
    monkeypatch.chdir(tmp_path)

    def fake_run(cmd, **kwargs):
        cmd = [str(part) for part in cmd]
        grading.commands.append((cmd, kwargs.get("cwd")))
        if cmd[:2] == ["apt-get", "install"]:
            grading.BWRAP.write_text("")  # "installed"
        return 0

    monkeypatch.setattr(grading, "run", fake_run)
    monkeypatch.setattr(grading, "bubblewrap_found", lambda: grading.BWRAP.exists())
    assert grading.cmd_grade(["subs/", "--out", "book.csv"]) == 0
    (update, _), (install, _), (grade, cwd) = grading.commands
    assert update == ["apt-get", "update"] and "bubblewrap" in install
    assert grade[1:] == ["-m", "minijit.grading", "grade", "subs/", "--out", "book.csv"]
    assert Path(cwd) == tmp_path


def test_grade_with_no_sandbox_needs_no_bubblewrap(grading):
    assert grading.cmd_grade(["subs/", "--no-sandbox"]) == 0
    ((grade, _cwd),) = grading.commands
    assert grade[-4:] == ["minijit.grading", "grade", "subs/", "--no-sandbox"]


def test_the_graders_default_outputs_are_ignored_by_git():
    result = subprocess.run(
        [sys.executable, "-m", "minijit.grading", "grade", "--help"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
    )
    assert result.returncode == 0, result.stderr
    help_text = " ".join(result.stdout.split())
    out = re.search(r"--out OUT CSV path.*?\(default: (\S+)\)", help_text).group(1)
    feedback = re.search(r"--feedback-dir FEEDBACK_DIR .*?\(default: (\S+)\)", help_text)
    # the gradebook, its temporary file and numbered backups, each student's two files
    paths = [out, f".{out}.x1y2.tmp", f"{out}.~1~", f"{out}.~12~",
             f"{feedback.group(1)}/student.md", f"{feedback.group(1)}/student.html"]
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("not a git checkout")
    check = subprocess.run(
        ["git", "check-ignore", *paths], capture_output=True, text=True, cwd=ROOT, timeout=60
    )
    assert check.stdout.split() == paths, f"not ignored: {set(paths) - set(check.stdout.split())}"
