"""The student release: what learners get, without the reference solutions.

``python -m minijit.grading release OUT_DIR`` (:func:`write_release`) writes, from the
instructor's copy this package was imported from:

- ``chapters/``, and ``exercises/`` generated afresh from ``solutions/`` (so a release never
  ships stale exercises);
- ``course.py``, ``pyproject.toml``, ``environment.yml``, ``.gitignore``, and ``README.md``
  without its instructor's guide, so that ``python3 course.py lab`` works there;
- ``minijit/`` as it is, except ``minijit/grading/exercises/``, which is written anew: one
  module per chapter with the exercises' probes (their source, as the grader ships them),
  hints, sections and *public* cases, each case with its expected value as a literal
  (``Case(..., expected=...)``), computed now by running the probe on the reference solution,
  and the ``case_hints`` that a public case's name or category selects (none keyed by a
  hidden case's name, which may state its inputs).

Not in it: ``solutions/``, ``tests/``, ``benchmarks/``, the reference solutions, the hidden
cases and the probes only they use, and compiled files (``__pycache__``).

``check()`` in a released notebook works as before: a case with a literal expected value is
compared with it, so the reference is never called (:func:`not_released` stands in for it and
says so if anything does). The batch grader stays on the instructor's machine, where the full
package computes expected values from the references and runs the hidden cases too.
"""

from __future__ import annotations

import dis
import math
import os
import pprint
import shutil
import tempfile
import types
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, NoReturn

from .cases import Case, Exercise, Hint, category_of, error_of

EXERCISES_PACKAGE = "minijit.grading.exercises"
TOP_FILES = ("README.md", "course.py", "pyproject.toml", "environment.yml", ".gitignore")
INSTRUCTORS_HEADING = "## Instructor's guide"
# Never copied: compiled files still hold the instructor's modules, references included.
SKIPPED_DIRS = ("__pycache__", ".ipynb_checkpoints")
SKIPPED_SUFFIXES = (".pyc", ".pyo")
WIDTH = 100

RELEASE_NOTE = """\
> **Student release.** This copy of the course has the chapters, the exercise notebooks and
> the `minijit` library. `check("exNN_...")` in an exercise notebook compares your answers
> with expected values stored in `minijit/grading/exercises/`; your instructor grades with
> the full course, which adds hidden cases.
"""


class ReleaseError(RuntimeError):
    """The release cannot be written (a non-empty OUT_DIR, no instructor's copy, ...)."""


class ReferenceNotReleased(LookupError):
    """Raised by a released exercise's ``reference``: the references stay with the instructor."""


def not_released(exercise_id: str) -> Callable[[], NoReturn]:
    """The ``reference`` of a released exercise: it raises, naming the exercise."""

    def reference() -> NoReturn:
        raise ReferenceNotReleased(
            f"{exercise_id}: the reference solution is not part of the student release; "
            "check() uses the expected values stored with the public cases")

    return reference


# ----------------------------------------------------------------------------------------
# Writing the release
# ----------------------------------------------------------------------------------------


def instructor_root() -> Path:
    """The checkout this ``minijit`` was imported from (it must hold ``solutions/``)."""
    return Path(__file__).resolve().parents[2]


def write_release(out: str | os.PathLike, *, force: bool = False) -> list[str]:
    """Write the student release into ``out``; return warnings (stale ``exercises/``).

    Refuses a non-empty ``out`` unless ``force``, which replaces its contents. Everything
    is written into a temporary folder next to ``out`` first, so a failure leaves ``out``
    as it was.
    """
    root = instructor_root()
    out = Path(out).resolve()
    for needed in ("minijit", "chapters", "solutions"):
        if not (root / needed).is_dir():
            raise ReleaseError(f"{root} has no {needed}/: run the release from the "
                               "instructor's copy of the course (not from a release)")
    if out == root or root.is_relative_to(out):
        raise ReleaseError(f"{out} holds the course itself; choose another folder")
    for inside in ("minijit", "chapters", "exercises", "solutions"):
        if out.is_relative_to(root / inside):
            raise ReleaseError(f"{out} is inside {root / inside}; choose another folder")
    if out.exists() and not out.is_dir():
        raise ReleaseError(f"{out} exists and is not a folder")
    if out.is_dir() and any(out.iterdir()) and not force:
        raise ReleaseError(f"{out} is not empty; pass --force to replace what is in it")

    out.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    umask = os.umask(0)
    os.umask(umask)
    staging.chmod(0o777 & ~umask)  # mkdtemp's 0700 would make the release private
    try:
        warnings = _write_tree(root, staging)
        if out.exists():
            shutil.rmtree(out)
        staging.rename(out)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return warnings


def _write_tree(root: Path, dest: Path) -> list[str]:
    import nbformat

    from .notebook import check_call, exercise_headers, render_exercises
    from .registry import COURSE_MODULES, load_exercises

    warnings = []
    for name in TOP_FILES:
        if (root / name).is_file():
            shutil.copy2(root / name, dest / name)
    _copy_dir(root / "chapters", dest / "chapters")
    # the exercises are written anew below; the property checks are hidden cases only
    grading = root / "minijit" / "grading"
    _copy_dir(root / "minijit", dest / "minijit",
              skip={grading / "exercises", grading / "properties.py"})

    notebooks = render_exercises(root / "solutions")
    (dest / "exercises").mkdir()
    for name, text in notebooks.items():
        (dest / "exercises" / name).write_text(text, encoding="utf-8")
        current = root / "exercises" / name
        if not current.is_file() or current.read_text(encoding="utf-8") != text:
            warnings.append(f"exercises/{name} differs from what solutions/ generates; the "
                            "release has the generated one (run `python -m minijit.grading "
                            "generate` to update exercises/)")

    exercises_dir = dest / "minijit" / "grading" / "exercises"
    exercises_dir.mkdir()
    (exercises_dir / "__init__.py").write_text(_INIT, encoding="utf-8")
    released: dict[str, Exercise] = {}
    for module_name in COURSE_MODULES:
        if not module_name.startswith(EXERCISES_PACKAGE + "."):
            continue
        exercises = list(load_exercises([module_name]).values())
        path = exercises_dir / (module_name.rsplit(".", 1)[1] + ".py")
        cache: dict = {}
        path.write_text(render_module(exercises, cache), encoding="utf-8")
        released.update(_verify_module(path, exercises, cache))

    wanted = set()
    for text in notebooks.values():
        nb = nbformat.reads(text, as_version=4)
        wanted |= {h.id for h in exercise_headers(nb)}
        wanted |= {check_call(c.source) for c in nb.cells if c.cell_type == "code"} - {None}
    missing = sorted(wanted - set(released))
    if missing:
        raise ReleaseError(f"the exercise notebooks check {', '.join(missing)}, which no "
                           "course exercise module defines")
    if (dest / "README.md").is_file():
        text = (dest / "README.md").read_text(encoding="utf-8")
        (dest / "README.md").write_text(learner_readme(text, dest), encoding="utf-8")
    return warnings


def _copy_dir(src: Path, dest: Path, skip: frozenset | set = frozenset()) -> None:
    for dirpath, dirnames, filenames in os.walk(src):
        here = Path(dirpath)
        dirnames[:] = sorted(d for d in dirnames
                             if d not in SKIPPED_DIRS and not d.startswith(".")
                             and not d.endswith(".egg-info") and here / d not in skip)
        target = dest / here.relative_to(src)
        target.mkdir(parents=True, exist_ok=True)
        for name in sorted(filenames):
            if (not name.endswith(SKIPPED_SUFFIXES) and not name.startswith(".")
                    and here / name not in skip):
                shutil.copy2(here / name, target / name)


_INIT = '''\
"""The course's exercises, one module per chapter, as released to learners.

Generated by ``python -m minijit.grading release`` from the instructor's copy: the probes,
hints and public cases of each exercise, with each public case's expected value stored as a
literal. The reference solutions and the hidden cases are not part of the release.
"""
'''


def learner_readme(text: str, release: Path) -> str:
    """The README without its instructor's guide, with a note on the release, and without
    the layout lines of paths the release does not have."""
    start = text.find("\n" + INSTRUCTORS_HEADING + "\n")
    if start >= 0:
        end = text.find("\n## ", start + 1)
        text = text[: start + 1] + (text[end + 1:] if end >= 0 else "")
    lines = text.split("\n")
    out, in_layout, fence, dropping = [], False, False, False
    for line in lines:
        if line.startswith("## "):
            in_layout = line.strip() == "## Repository layout"
        if in_layout and line.startswith("```"):
            fence = not fence
        elif in_layout and fence:
            if line[:1] not in (" ", ""):
                entry = line.split()[0]
                dropping = not (release / entry).exists()
            if dropping:
                continue
        out.append(line)
    text = "\n".join(out).rstrip("\n") + "\n"
    # the note goes right after the title
    title_end = text.find("\n") + 1
    return text[:title_end] + "\n" + RELEASE_NOTE + text[title_end:]


# ----------------------------------------------------------------------------------------
# One released exercise module
# ----------------------------------------------------------------------------------------


def expected_for(ex: Exercise, case: Case, cache: dict | None = None) -> Any:
    """A public case's expected value: its literal, or its probe run on a fresh reference
    (as ``check()`` computes it in the instructor's copy); ``cache`` keeps it by case."""
    from .probing import run_probe

    if cache is not None:
        key = (ex.id, id(case))
        if key not in cache:
            cache[key] = expected_for(ex, case)
        return cache[key]
    if case.has_literal_expected:
        return case.expected
    value = run_probe(ex.probe_for(case), ex.reference(), case.args)
    err = error_of(value)
    if err is not None:
        raise ReleaseError(f"{ex.id} ({case.name}): the reference raised {err['type']}: "
                           f"{err['message']}")
    return value


def render_module(exercises: list[Exercise], cache: dict | None = None) -> str:
    """The source of a released exercise module: probes, then ``EXERCISES``."""
    from .cases import probe_source

    probes: dict[str, Callable] = {}
    for ex in exercises:
        for fn in [ex.probe] + [ex.probe_for(c) for c in ex.public]:
            if probes.setdefault(fn.__name__, fn) is not fn:
                raise ReleaseError(f"two probes are named {fn.__name__}")
    sources = [probe_source(fn)[0].rstrip("\n") for fn in probes.values()]
    for fn, source in zip(probes.values(), sources):
        _refuse_exercise_imports(fn.__name__, source)
    imports = _imports(probes.values())
    used = {"Case", "Exercise"} | ({"Hint"} if _uses_hint(exercises) else set())

    titles = ", ".join(f"{ex.id} ({ex.title})" for ex in exercises)
    chapter = exercises[0].chapter if exercises else ""
    doc = (f"Chapter {chapter[:2]}'s exercises, as released to learners: {titles}.\n\n"
           "Generated by ``python -m minijit.grading release`` from the instructor's copy; do "
           "not edit. The probes are the course's own; the expected value of each public case "
           "was computed from the reference solution when the release was made. The reference "
           "solutions and the hidden cases are not part of the release.")
    lines = ['"""' + _wrap(doc) + '\n"""', "", "from __future__ import annotations", ""]
    lines += imports["stdlib"] + ([""] if imports["stdlib"] else [])
    lines += imports["third"] + ([""] if imports["third"] else [])
    lines.append(f"from minijit.grading.cases import {', '.join(_isort(used))}")
    if imports["probing"]:
        lines.append(f"from minijit.grading.probing import {', '.join(_isort(imports['probing']))}")
    lines.append("from minijit.grading.release import not_released")
    for source in sources:
        lines += ["", "", source]
    lines += ["", "", "EXERCISES = ["]
    for ex in exercises:
        lines += _render_exercise(ex, cache)
    lines.append("]")
    return "\n".join(lines) + "\n"


def _refuse_exercise_imports(name: str, source: str) -> None:
    """A probe runs in the learner's kernel and may import from minijit at run time, but not
    from an exercise module: the release rewrites those, keeping only probes and cases."""
    import ast

    for node in ast.walk(ast.parse(source)):
        module = getattr(node, "module", None) if isinstance(node, ast.ImportFrom) else None
        names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
        for target in [module or "", *names]:
            if target.startswith("minijit.grading.exercises"):
                raise ReleaseError(
                    f"probe {name} imports from {target}, which the release rewrites (it keeps "
                    "only probes and public cases): move what it needs into a module that "
                    "ships, such as minijit/grading/optimizer_probes.py")


def _wrap(text: str, width: int = WIDTH - 4) -> str:
    import textwrap

    return "\n\n".join(textwrap.fill(p, width) for p in text.split("\n\n"))


def _isort(names: Iterable[str]) -> list[str]:
    # isort's order by type: CONSTANTS, Classes, then functions and variables
    def key(n: str) -> tuple:
        return (0 if n.isupper() else 1 if n[:1].isupper() else 2, n.lower())

    return sorted(set(names), key=key)


def _global_names(code: types.CodeType) -> set[str]:
    names = {i.argval for i in dis.get_instructions(code) if i.opname == "LOAD_GLOBAL"}
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= _global_names(const)
    return names


def _imports(probes: Iterable[Callable]) -> dict[str, list[str]]:
    """The imports that give the probes the prelude names they use (and nothing else)."""
    import builtins

    from . import probing

    prelude = vars(probing)
    out: dict[str, list[str]] = {"stdlib": [], "third": [], "probing": []}
    for fn in probes:
        for name in sorted(_global_names(fn.__code__)):
            if name in prelude:
                value = prelude[name]
                if isinstance(value, types.ModuleType):
                    line = (f"import {value.__name__}" if value.__name__ == name
                            else f"import {value.__name__} as {name}")
                    group = "third" if value.__name__.split(".")[0] == "numpy" else "stdlib"
                    if line not in out[group]:
                        out[group].append(line)
                elif name not in out["probing"]:
                    out["probing"].append(name)
            elif not hasattr(builtins, name):
                raise ReleaseError(f"probe {fn.__name__} uses {name!r}, which is not one of "
                                   "the probes' prelude names (minijit.grading.probing)")
    out["stdlib"].sort()
    out["third"].sort()
    return out


def _uses_hint(exercises: list[Exercise]) -> bool:
    hints = [h for ex in exercises for h in [ex.hint, *ex.error_hints.values(),
                                              *_public_case_hints(ex).values(),
                                              *(c.hint for c in ex.public)]]
    return any(isinstance(h, Hint) for h in hints)


def _public_case_hints(ex: Exercise) -> dict[str, str | Hint]:
    """The exercise's ``case_hints`` that one of its public cases selects, by its name or
    its category: the only ones ``check()`` can show."""
    keys = {c.name for c in ex.public} | {category_of(c) for c in ex.public}
    return {k: h for k, h in ex.case_hints.items() if k in keys}


class _Literal:
    """Python source pprint writes as it is (for nan and infinities)."""

    def __init__(self, source: str):
        self.source = source

    def __repr__(self) -> str:
        return self.source


def _plain(value: Any, where: str) -> Any:
    """``value`` checked to be plain data, with non-finite floats made writable."""
    t = type(value)
    if value is None or t in (bool, int, str):
        return value
    if t is float:
        if math.isnan(value):
            return _Literal('float("nan")')
        if math.isinf(value):
            return _Literal('float("inf")' if value > 0 else '-float("inf")')
        return value
    if t in (list, tuple):
        return t(_plain(v, where) for v in value)
    if t is dict and all(type(k) is str for k in value):
        return {k: _plain(v, where) for k, v in value.items()}
    raise ReleaseError(f"{where}: {value!r} is not plain data, so it cannot be released")


def _value(value: Any, column: int, where: str) -> str:
    """Python source for plain data, to be written at ``column`` (lines kept short)."""
    text = pprint.pformat(_plain(value, where), width=max(40, WIDTH - column - 2),
                          sort_dicts=False, compact=True)
    return text.replace("\n", "\n" + " " * column)


def _field(indent: int, key: str, value: Any, where: str, sep: str = "=") -> str:
    prefix = " " * indent + key + sep
    return prefix + _value(value, len(prefix), where) + ","


def _hint_lines(indent: int, key: str, hint: str | Hint, where: str,
                sep: str = "=") -> list[str]:
    if not isinstance(hint, Hint):
        return [_field(indent, key, hint, where, sep)]
    lines = [" " * indent + key + sep + "Hint("]
    lines.append(_field(indent + 4, "pitfall", hint.pitfall, where))
    if hint.code is not None:
        lines.append(_field(indent + 4, "code", hint.code, where))
    lines.append(" " * indent + "),")
    return lines


def _render_exercise(ex: Exercise, cache: dict | None) -> list[str]:
    where = ex.id
    lines = ["    Exercise("]
    for key in ("id", "points", "title", "chapter", "section"):
        lines.append(_field(8, key, getattr(ex, key), where))
    lines += _hint_lines(8, "hint", ex.hint, where)
    lines.append(f"        probe={ex.probe.__name__},")
    lines.append(f"        reference=not_released({ex.id!r}),")
    lines.append("        public=(")
    defaults = Case("")
    for case in ex.public:
        cw = f"{ex.id} ({case.name})"
        lines.append("            Case(")
        lines.append(_field(16, "name", case.name, cw))
        lines.append(_field(16, "args", tuple(case.args), cw))
        if case.probe is not None and case.probe is not ex.probe:
            lines.append(f"                probe={case.probe.__name__},")
        lines.append(_field(16, "expected", expected_for(ex, case, cache), cw))
        if case.hint is not None:
            lines += _hint_lines(16, "hint", case.hint, cw)
        if case.category is not None:
            lines.append(_field(16, "category", case.category, cw))
        for key in ("rtol", "atol"):
            if getattr(case, key) != getattr(defaults, key):
                lines.append(_field(16, key, getattr(case, key), cw))
        lines.append("            ),")
    lines.append("        ),")
    for field_name, hints in (("error_hints", ex.error_hints),
                              ("case_hints", _public_case_hints(ex))):
        if hints:
            lines.append(f"        {field_name}={{")
            for name, hint in hints.items():
                lines += _hint_lines(12, repr(name), hint, where, sep=": ")
            lines.append("        },")
    lines.append("    ),")
    return lines


def _verify_module(path: Path, originals: list[Exercise], cache: dict | None = None
                   ) -> dict[str, Exercise]:
    """Load a written module and check it holds what it should: the same exercises, and
    their public cases with the same arguments and expected values."""
    import importlib.util
    import sys

    name = f"_minijit_release_check_{path.stem}"
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except Exception as exc:
        raise ReleaseError(f"the released {path.name} does not load: {exc!r}") from exc
    finally:
        sys.modules.pop(name, None)
    released = {ex.id: ex for ex in module.EXERCISES}
    from .cases import compare

    for ex in originals:
        got = released.get(ex.id)
        if got is None or len(got.public) != len(ex.public) or got.hidden:
            raise ReleaseError(f"the released {path.name} lost {ex.id}'s public cases")
        for a, b in zip(ex.public, got.public):
            expected = expected_for(ex, a, cache)
            same = (tuple(a.args) == tuple(b.args) and b.has_literal_expected
                    and compare(expected, b.expected, 0.0, 0.0) is None
                    and compare(b.expected, expected, 0.0, 0.0) is None)
            if not same:
                raise ReleaseError(f"the released {path.name} changed {ex.id} ({a.name})")
    return released
