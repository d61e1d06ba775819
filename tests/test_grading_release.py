"""The student release (``python -m minijit.grading release OUT_DIR``).

- it holds what a learner needs (chapters, exercises generated from solutions, README without
  the instructor's guide, course.py, pyproject.toml, minijit) and nothing else: no solutions,
  tests, benchmarks or compiled files;
- its exercise modules hold no reference solution (no name, no line of one) and no hidden case
  (no arguments, no names, no probe only hidden cases use), and they are ruff-clean;
- in the released tree, run as a learner runs it (a process of its own per notebook, forked
  from one that only imported minijit, PYTHONPATH on the release):
  ``check()`` on the untouched exercises passes nothing, on the solutions everything;
- it refuses a non-empty OUT_DIR without ``--force``, and ``--help`` documents it.
"""

from __future__ import annotations

import ast
import dis
import inspect
import json
import os
import re
import shutil
import subprocess
import sys
import types
from pathlib import Path

import pytest

from minijit.grading.cases import as_hint, probe_source
from minijit.grading.notebook import render_exercises
from minijit.grading.registry import COURSE_MODULES, load_exercises, load_module
from minijit.grading.release import (
    INSTRUCTORS_HEADING,
    ReleaseError,
    learner_readme,
    write_release,
)

REPO = Path(__file__).resolve().parent.parent
EXERCISES = load_exercises(COURSE_MODULES)
MODULES = [load_module(m) for m in COURSE_MODULES]


def _env(pythonpath: Path) -> dict:
    env = {k: v for k, v in os.environ.items()
           if k not in ("MINIJIT_GRADING", "MINIJIT_GRADING_EXERCISES")}
    return dict(env, PYTHONPATH=str(pythonpath), MPLBACKEND="Agg")


def _release_cli(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "minijit.grading", "release", *args],
                          cwd=cwd, env=_env(REPO), capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="module")
def release_runs(tmp_path_factory) -> types.SimpleNamespace:
    """The module's release (written once: it takes seconds), written over a folder that
    holds a file of the user's: first without ``--force`` (``refused``: that run, and
    ``left``: the folder's names after it), then with it (``path``: the release). Run from
    another folder: the copy is found by the package."""
    base = tmp_path_factory.mktemp("release")
    out = base / "student"
    out.mkdir()
    (out / "notes.txt").write_text("mine")
    refused = _release_cli(str(out), cwd=base)
    left = [p.name for p in out.iterdir()]
    run = _release_cli(str(out), "--force", cwd=base)
    assert run.returncode == 0, run.stdout + run.stderr
    return types.SimpleNamespace(path=out, refused=refused, left=left)


@pytest.fixture(scope="module")
def release(release_runs) -> Path:
    return release_runs.path


def _files(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*") if p.is_file())


# ----------------------------------------------------------------------------------------
# What is in it, and what is not
# ----------------------------------------------------------------------------------------


def test_release_has_what_learners_need(release):
    for name in ("README.md", "course.py", "pyproject.toml", "minijit/__init__.py",
                 "minijit/grading/checking.py", "minijit/grading/programs.py"):
        assert (release / name).is_file(), name
    for name in ("course.py", "pyproject.toml"):
        assert (release / name).read_bytes() == (REPO / name).read_bytes(), name
    chapters = sorted(p.name for p in (REPO / "chapters").glob("*.ipynb"))
    assert sorted(p.name for p in (release / "chapters").glob("*.ipynb")) == chapters
    for name in chapters:
        assert (release / "chapters" / name).read_bytes() == (REPO / "chapters" / name
                                                              ).read_bytes()
    wanted = render_exercises(REPO / "solutions")
    assert sorted(p.name for p in (release / "exercises").iterdir()) == sorted(wanted)
    for name, text in wanted.items():
        assert (release / "exercises" / name).read_text() == text
    modules = sorted(m.rsplit(".", 1)[1] + ".py" for m in COURSE_MODULES)
    assert sorted(p.name for p in (release / "minijit/grading/exercises").iterdir()) == sorted(
        modules + ["__init__.py"])


def test_english_release_has_no_chinese_notebooks(release):
    assert not (release / "chapters" / "zh").exists()
    assert not (release / "exercises" / "zh").exists()


def test_chinese_release_has_the_chinese_course(tmp_path):
    """``release --lang zh``: chapters/zh/ as committed, exercises/zh/ made from
    solutions/zh/ (the committed ones), no English notebook, the same exercises checked."""
    from minijit.grading import fast_nbformat
    from minijit.grading.notebook import check_call

    out = tmp_path / "zh"
    assert write_release(out, lang="zh") == []
    chapters = sorted(p.name for p in (REPO / "chapters" / "zh").glob("*.ipynb"))
    assert chapters and sorted(p.name for p in (out / "chapters" / "zh").iterdir()) == chapters
    for name in chapters:
        assert (out / "chapters/zh" / name).read_bytes() == (REPO / "chapters/zh" / name
                                                             ).read_bytes()
    assert not list((out / "chapters").glob("*.ipynb"))
    assert not list((out / "exercises").glob("*.ipynb"))
    wanted = render_exercises(REPO / "solutions" / "zh")
    assert sorted(p.name for p in (out / "exercises" / "zh").iterdir()) == sorted(wanted)
    for name, text in wanted.items():
        assert (out / "exercises/zh" / name).read_text() == text
        assert (REPO / "exercises/zh" / name).read_text() == text  # committed, up to date

        def checked(path):
            nb = fast_nbformat.nbformat.read(str(path), as_version=4)
            return [check_call(c.source) for c in nb.cells if c.cell_type == "code"]

        assert checked(out / "exercises/zh" / name) == checked(REPO / "exercises" / name)
    if (REPO / "README.zh.md").exists():
        assert (out / "README.zh.md").is_file()


def test_release_leaves_out_what_learners_must_not_get(release):
    for name in ("solutions", "tests", "benchmarks", ".ci", ".venv", ".git"):
        assert not (release / name).exists(), name
    for path in release.rglob("*"):
        assert path.name != "__pycache__" and path.suffix not in (".pyc", ".pyo"), path
        assert not path.name.endswith(".egg-info"), path
    readme = (release / "README.md").read_text()
    assert INSTRUCTORS_HEADING not in readme and "--hidden-cases" not in readme
    assert "Student release" in readme and "## Quick start" in readme
    assert "solutions/ " not in readme.split("## Repository layout")[1].split("## ")[0]


def test_learner_readme_drops_the_guide_and_absent_paths(tmp_path):
    (tmp_path / "kept").mkdir()
    text = ("# title\n\nintro\n\n## Repository layout\n\n```\nkept/     here\n"
            "gone/     not here\n          its second line\n```\n\n"
            f"{INSTRUCTORS_HEADING}\n\nsecret\n\n## After\n\nstays\n")
    out = learner_readme(text, tmp_path)
    assert "kept/     here" in out and "gone/" not in out and "its second line" not in out
    assert "secret" not in out and "## After\n\nstays" in out and "Student release" in out


def _global_functions(fn, module: types.ModuleType) -> list:
    """``fn`` and every function of ``module`` that it reaches through global names."""
    seen, todo = [], [fn]
    while todo:
        f = todo.pop()
        if not inspect.isfunction(f) or f.__module__ != module.__name__ or f in seen:
            continue
        seen.append(f)
        codes = [f.__code__]
        while codes:
            code = codes.pop()
            codes += [c for c in code.co_consts if isinstance(c, types.CodeType)]
            for ins in dis.get_instructions(code):
                if ins.opname == "LOAD_GLOBAL":
                    todo.append(module.__dict__.get(ins.argval))
    return seen


def _public_texts() -> str:
    """Every hint of the course, and every probe's source: public by design."""
    parts = []
    for ex in EXERCISES.values():
        hints = [as_hint(ex.hint)] + [as_hint(h) for h in ex.error_hints.values()]
        hints += [as_hint(c.hint) for c in ex.public + ex.hidden if c.hint]
        parts += [t for h in hints for t in (h.pitfall, h.code) if t]
        parts += [probe_source(ex.probe_for(c))[0] for c in ex.public + ex.hidden]
    return "\n".join(parts)


def _released_grading_text(release: Path) -> dict[Path, str]:
    return {p: p.read_text() for p in _files(release / "minijit" / "grading")}


def test_release_has_no_reference_solution(release):
    """No name and no line of any reference solution (and of the module functions it uses)
    is in the released grading package; lines that are public anyway (a probe's, a hint's)
    and imports do not count."""
    texts = _released_grading_text(release)
    public = _public_texts()
    problems = []
    for module in MODULES:
        for ex in module.EXERCISES:
            for fn in _global_functions(ex.reference, module):
                if fn.__name__ != "<lambda>":
                    pattern = re.compile(rf"\b{re.escape(fn.__name__)}\b")
                    problems += [f"{ex.id}: {fn.__name__} in {p}" for p, t in texts.items()
                                 if pattern.search(t)]
                for line in inspect.getsource(fn).splitlines():
                    line = line.strip()
                    if (len(line) < 12 or line.startswith(("#", "@", "import ", "from ", '"""'))
                            or line in public):
                        continue
                    problems += [f"{ex.id}: {line!r} in {p}" for p, t in texts.items()
                                 if line in t]
    assert not problems, "\n".join(problems)


def _load_released(release: Path) -> dict:
    """The released exercises, loaded from their files (under private module names)."""
    import importlib.util

    out = {}
    for path in sorted((release / "minijit/grading/exercises").glob("ch*.py")):
        name = f"_released_{path.stem}"
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        try:
            spec.loader.exec_module(module)
        finally:
            del sys.modules[name]
        out[path.stem] = module
    return out


def test_released_exercises_have_public_cases_only(release):
    from minijit.grading.released_module import ReferenceNotReleased

    released = _load_released(release)
    ids = {ex.id: ex for m in released.values() for ex in m.EXERCISES}
    assert list(ids) == list(EXERCISES)
    for ex_id, ex in EXERCISES.items():
        got = ids[ex_id]
        assert got.hidden == ()
        assert [(c.name, tuple(c.args), c.hint, c.rtol, c.atol) for c in got.public] == [
            (c.name, tuple(c.args), c.hint, c.rtol, c.atol) for c in ex.public]
        assert all(c.has_literal_expected for c in got.public)
        fields = ("points", "title", "chapter", "section", "hint")
        assert [getattr(got, f) for f in fields] == [getattr(ex, f) for f in fields]
        assert dict(got.error_hints) == dict(ex.error_hints)
        with pytest.raises(ReferenceNotReleased, match=ex_id):
            got.reference()
    # the only functions are the probes that public cases use
    for stem, module in released.items():
        tree = ast.parse((release / f"minijit/grading/exercises/{stem}.py").read_text())
        defined = {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}
        used = {ex.probe_for(c).__name__ for ex in module.EXERCISES for c in ex.public}
        used |= {ex.probe.__name__ for ex in module.EXERCISES}
        assert defined == used, stem


def test_release_has_no_hidden_case(release):
    """Neither the arguments nor the names of hidden cases, nor the probes only they use."""
    texts = _released_grading_text(release)
    public_args = {repr(tuple(c.args)) for ex in EXERCISES.values() for c in ex.public}
    public_names = {c.name for ex in EXERCISES.values() for c in ex.public}
    public_probes = {ex.probe_for(c).__name__ for ex in EXERCISES.values() for c in ex.public}
    public_probes |= {ex.probe.__name__ for ex in EXERCISES.values()}
    problems = []
    for ex in EXERCISES.values():
        for case in ex.hidden:
            args = repr(tuple(case.args))
            if len(args) >= 8 and args not in public_args:
                problems += [f"{ex.id}: arguments {args[:60]} in {p}"
                             for p, t in texts.items() if args in t]
            if case.name not in public_names:
                problems += [f"{ex.id}: hidden case {case.name!r} in {p}"
                             for p, t in texts.items() if f"name={case.name!r}" in t]
            probe = ex.probe_for(case).__name__
            if probe not in public_probes:
                problems += [f"{ex.id}: probe {probe} in {p}"
                             for p, t in texts.items() if re.search(rf"\b{probe}\b", t)]
    assert not problems, "\n".join(problems)


def test_released_package_is_ruff_clean(release):
    ruff = Path(sys.executable).with_name("ruff")
    if not ruff.exists():
        pytest.skip("ruff is not installed next to this Python")
    run = subprocess.run([str(ruff), "check", "--no-cache", "minijit"], cwd=release,
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stdout + run.stderr


# ----------------------------------------------------------------------------------------
# check() in the released tree
# ----------------------------------------------------------------------------------------

# Runs each notebook's code cells as a learner would (a stub's cell raises and is passed over;
# cells tagged raises-exception are skipped), then check() on each of its exercises. One
# process imports minijit (and nbformat, to read the notebooks) once, then runs each notebook
# in a child forked before any notebook code ran: every notebook starts from the state of a
# fresh import, as in a new kernel, without paying the imports once per notebook.
_DRIVER = r"""
import contextlib, io, json, os, sys, traceback
from pathlib import Path
import nbformat
import minijit
from minijit.grading import check
from minijit.grading.notebook import exercise_headers

release = Path(sys.argv[1]).resolve()
files = [Path(minijit.__file__), Path(sys.modules[check.__module__].__file__)]
assert all(f.resolve().is_relative_to(release) for f in files), files


def run(notebook):
    os.chdir(notebook.parent)
    nb = nbformat.read(notebook, as_version=4)
    ns = {"__name__": "__main__"}
    out = {}
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        for cell in nb.cells:
            if (cell.cell_type == "code"
                    and "raises-exception" not in cell.metadata.get("tags", [])):
                try:
                    exec(compile(cell.source, str(notebook), "exec"), ns)
                except Exception:
                    pass
        for h in exercise_headers(nb):
            report = check(h.id, namespace=ns)
            where = Path(sys.modules[report.exercise.probe.__module__].__file__).resolve()
            assert where.is_relative_to(release), where
            out[h.id] = [report.passed, len(report.rows), report.attempted, str(report)]
    return out


results = {}
for notebook in sys.argv[2:]:
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read)
        try:
            answer = {"checked": run(Path(notebook))}
        except BaseException:
            answer = {"error": traceback.format_exc()}
        with os.fdopen(write, "w") as f:
            json.dump(answer, f)
        os._exit(0)
    os.close(write)
    with os.fdopen(read) as f:
        text = f.read()
    _, status = os.waitpid(pid, 0)
    results[notebook] = json.loads(text) if text else {"error": f"wait status {status}"}
print(json.dumps(results))
"""


def _check_in_release(release: Path, notebooks: list[Path]) -> dict[str, dict]:
    """notebook path -> {"checked": {exercise id: [passed, total, attempted, report]}}, or
    {"error": the traceback of the notebook's process}."""
    run = subprocess.run([sys.executable, "-c", _DRIVER, str(release), *map(str, notebooks)],
                         cwd=release, env=_env(release), capture_output=True, text=True,
                         timeout=600)  # a hang guard only
    assert run.returncode == 0, run.stdout + run.stderr
    return json.loads(run.stdout.strip().splitlines()[-1])


NOTEBOOKS = sorted(p.name for p in (REPO / "solutions").glob("*.ipynb"))


@pytest.mark.slow
def test_check_in_the_release(release):
    """For every chapter: the untouched exercise passes no public case (and says it is not
    attempted); the solution, copied into the release, passes every one. One test for all
    chapters (one process imports minijit once, see _DRIVER); every problem is collected
    before failing, so one report names every chapter that went wrong."""
    copied = release / "solutions_copied_by_the_test"
    copied.mkdir(exist_ok=True)
    for name in NOTEBOOKS:
        shutil.copy(REPO / "solutions" / name, copied / name)
    stub_paths = [release / "exercises" / name for name in NOTEBOOKS]
    solved_paths = [copied / name for name in NOTEBOOKS]
    results = _check_in_release(release, stub_paths + solved_paths)
    problems = []
    for name, stub_path, solved_path in zip(NOTEBOOKS, stub_paths, solved_paths, strict=True):
        stubs, solved = results[str(stub_path)], results[str(solved_path)]
        if "error" in stubs or "error" in solved:
            problems.append(f"{name}: {stubs.get('error') or solved.get('error')}")
            continue
        stubs, solved = stubs["checked"], solved["checked"]
        if not stubs:
            problems.append(f"{name}: the exercise notebook checks no exercise")
        for ex_id, (passed, total, attempted, text) in stubs.items():
            if passed != 0 or total != len(EXERCISES[ex_id].public) or attempted:
                problems.append(f"{name}, untouched: {text}")
        if set(solved) != set(stubs):
            problems.append(f"{name}: the solution checks {sorted(solved)}, the exercise "
                            f"notebook {sorted(stubs)}")
        for _ex_id, (passed, total, _attempted, text) in solved.items():
            if passed != total:
                problems.append(f"{name}, solved: {text}")
    assert not problems, "\n".join(problems)


# ----------------------------------------------------------------------------------------
# The command line
# ----------------------------------------------------------------------------------------


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def test_release_refuses_a_non_empty_folder_without_force(release_runs):
    """On the module's release (see release_runs): refused without --force, the user's
    file untouched; with --force, replaced."""
    out, refused = release_runs.path, release_runs.refused
    assert refused.returncode == 2 and "--force" in refused.stderr, refused.stderr
    assert release_runs.left == ["notes.txt"]
    assert not (out / "notes.txt").exists() and (out / "course.py").is_file()
    assert [p.name for p in out.parent.iterdir()] == [out.name]  # no staging folder left
    assert out.stat().st_mode & 0o077 == 0o777 & ~_umask() & 0o077  # not mkdtemp's 0700


def test_release_refuses_folders_of_the_course_itself(tmp_path):
    for bad in (REPO, REPO.parent, REPO / "minijit" / "release", REPO / "chapters" / "x"):
        with pytest.raises(ReleaseError):
            write_release(bad, force=True)
    (tmp_path / "file").write_text("")
    with pytest.raises(ReleaseError, match="not a folder"):
        write_release(tmp_path / "file", force=True)


def test_a_release_cannot_make_a_release(release, tmp_path):
    """In the released tree there is nothing to compute expected values from."""
    run = subprocess.run([sys.executable, "-m", "minijit.grading", "release",
                          str(tmp_path / "again")], cwd=tmp_path, env=_env(release),
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 2 and "solutions/" in run.stderr, run.stdout + run.stderr
    assert not (tmp_path / "again").exists()


def test_release_help_documents_it():
    run = subprocess.run([sys.executable, "-m", "minijit.grading", "release", "--help"],
                         env=_env(REPO), capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    text = " ".join(run.stdout.split())
    for needed in ("OUT_DIR", "--force", "check()", "reference solution", "hidden cases",
                   "solutions/", "course.py"):
        assert needed in text, needed
    top = subprocess.run([sys.executable, "-m", "minijit.grading", "--help"], env=_env(REPO),
                         capture_output=True, text=True, timeout=60)
    assert "release" in top.stdout


def probe_helper_import(ns, x):
    from minijit.grading.exercises.ch07_cleanup_passes import EXERCISES  # noqa: F401

    return x


def test_a_probe_that_imports_from_an_exercise_module_is_refused():
    """Such an import works in the instructor's copy and fails in the release (where the
    module holds probes and public cases only), so the release refuses to be written."""
    from minijit.grading.cases import Case, Exercise
    from minijit.grading.released_module import ReleaseError, render_module

    ex = Exercise(id="ex99_helper", points=1, title="t", chapter="99_x", section="1. s", hint="h",
                  probe=probe_helper_import, reference=lambda: {},
                  public=(Case("one", (1,), expected=1),), hidden=())
    with pytest.raises(ReleaseError, match="probe_helper_import imports from"):
        render_module([ex])
