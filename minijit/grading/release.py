"""The student release: what learners get, without the reference solutions.

``python -m minijit.grading release OUT_DIR`` (:func:`write_release`) writes, from the
instructor's copy this package was imported from:

- ``chapters/``, and ``exercises/`` generated afresh from ``solutions/`` (so a release never
  ships stale exercises); with ``--lang zh``, the Chinese ``chapters/zh/`` and ``exercises/zh/``
  (from ``solutions/zh/``) and ``README.zh.md`` instead, and with ``--lang all`` both;
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
compared with it, so the reference is never called (``not_released`` stands in for it and
says so if anything does). Each module is written and checked by
:mod:`minijit.grading.released_module`. The batch grader stays on the instructor's machine,
where the full package computes expected values from the references and runs the hidden
cases too.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

from .cases import Exercise
from .released_module import ReleaseError, render_module, verify_module

EXERCISES_PACKAGE = "minijit.grading.exercises"
TOP_FILES = ("README.md", "course.py", "pyproject.toml", "environment.yml", ".gitignore")
INSTRUCTORS_HEADING = "## Instructor's guide"
# Never copied: compiled files still hold the instructor's modules, references included.
SKIPPED_DIRS = ("__pycache__", ".ipynb_checkpoints")
SKIPPED_SUFFIXES = (".pyc", ".pyo")
LANGUAGES = {"en": ("en",), "zh": ("zh",), "all": ("en", "zh")}  # release --lang

RELEASE_NOTE = """\
> **Student release.** This copy of the course has the chapters, the exercise notebooks and
> the `minijit` library. `check("exNN_...")` in an exercise notebook compares your answers
> with expected values stored in `minijit/grading/exercises/`; your instructor grades with
> the full course, which adds hidden cases.
"""

# ----------------------------------------------------------------------------------------
# Writing the release
# ----------------------------------------------------------------------------------------


def instructor_root() -> Path:
    """The checkout this ``minijit`` was imported from (it must hold ``solutions/``)."""
    return Path(__file__).resolve().parents[2]


def write_release(out: str | os.PathLike, *, force: bool = False, lang: str = "en"
                  ) -> list[str]:
    """Write the student release into ``out``; return warnings (stale ``exercises/``).

    ``lang``: ``"en"`` the English course, ``"zh"`` the Chinese one (``chapters/zh/``,
    ``exercises/zh/``, ``README.zh.md``), ``"all"`` both.

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
        warnings = _write_tree(root, staging, LANGUAGES[lang])
        if out.exists():
            shutil.rmtree(out)
        staging.rename(out)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return warnings


def _write_tree(root: Path, dest: Path, langs: tuple[str, ...]) -> list[str]:
    from .fast_nbformat import nbformat
    from .notebook import check_call, exercise_headers, render_exercises
    from .registry import COURSE_MODULES, load_exercises

    warnings = []
    for name in TOP_FILES + tuple(f"README.{lang}.md" for lang in langs if lang != "en"):
        if (root / name).is_file():
            shutil.copy2(root / name, dest / name)
    for lang in langs:
        chapters = root / "chapters" / _folder(lang)
        _copy_dir(chapters, dest / "chapters" / _folder(lang),
                  skip={chapters / other for other in LANGUAGES["all"] if other != "en"})
    # the exercises are written anew below; the property checks are hidden cases only
    grading = root / "minijit" / "grading"
    _copy_dir(root / "minijit", dest / "minijit",
              skip={grading / "exercises", grading / "properties.py"})

    notebooks: dict[str, str] = {}
    for lang in langs:
        folder = f"exercises/{_folder(lang)}".rstrip("/")
        rendered = render_exercises(root / "solutions" / _folder(lang))
        (dest / folder).mkdir(parents=True)
        for name, text in rendered.items():
            (dest / folder / name).write_text(text, encoding="utf-8")
            notebooks[f"{folder}/{name}"] = text
            current = root / folder / name
            if not current.is_file() or current.read_text(encoding="utf-8") != text:
                update = ("python -m minijit.grading generate" if lang == "en" else
                          f"python -m minijit.course.translate build --lang {lang}")
                warnings.append(f"{folder}/{name} differs from what solutions/ generates; the "
                                f"release has the generated one (run `{update}` to update "
                                f"{folder}/)")

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
        released.update(verify_module(path, exercises, cache))

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


def _folder(lang: str) -> str:
    """Where a language's notebooks live under chapters/, solutions/, exercises/."""
    return "" if lang == "en" else lang


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
