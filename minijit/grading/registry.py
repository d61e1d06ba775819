"""Where exercises come from: the course's modules, extra modules, and private hidden cases.

An *exercise module* is a Python file or importable module that defines ``EXERCISES``, a
list of :class:`~minijit.grading.cases.Exercise`. The course's own live in
``minijit.grading.exercises``. More can be added without touching the package: the grader's
``--exercises`` option, or, for ``check()`` in a notebook, the environment variable
``MINIJIT_GRADING_EXERCISES`` (module names or ``.py`` paths, separated by ``os.pathsep``).

A *hidden-cases folder* (the grader's ``--hidden-cases DIR``) is private to an instructor
and not in the repository. Every ``*.py`` file in it (sorted, skipping names that start with
``_``) is run as a module and must define ``HIDDEN_CASES``, a dict from exercise id to a list
of :class:`~minijit.grading.cases.Case`. A case without a ``probe`` uses the exercise's own
probe with new arguments; a custom probe is a top-level function in that file that follows
the probe rules in :mod:`minijit.grading.probing`. An unknown exercise id is an error: a typo
must not silently drop cases.

Case arguments are literal data (:func:`literal_args`): they travel to the kernel as Python
literals, never evaluated in the learner's namespace, so ``None``, bools, ints, floats
(``inf`` and ``nan`` included), strings, bytes, and lists, tuples and dicts of those. NumPy
scalars are turned into Python scalars; NumPy arrays are refused with a message that says to
pass ``.tolist()`` (a silent conversion would drop the dtype the instructor meant).

Loading is lazy: importing :mod:`minijit.grading` imports none of this, and only the
exercise modules import the minijit core (for their reference solutions).
"""

from __future__ import annotations

import ast
import hashlib
import importlib
import importlib.util
import math
import os
import sys
from collections.abc import Iterable
from functools import lru_cache
from pathlib import Path
from types import ModuleType
from typing import Any

from .cases import Case, Exercise

COURSE_MODULES = (
    "minijit.grading.exercises.ch01_why_jit",
    "minijit.grading.exercises.ch02_tracing",
    "minijit.grading.exercises.ch03_the_ir",
    "minijit.grading.exercises.ch04_jit_and_the_cache",
    "minijit.grading.exercises.ch05_control_flow",
    "minijit.grading.exercises.ch06_side_effects_and_debugging",
    "minijit.grading.exercises.ch07_cleanup_passes",
    "minijit.grading.exercises.ch08_fusion_and_buffers",
    "minijit.grading.exercises.ch09_code_generation",
    "minijit.grading.exercises.ch10_putting_it_together",
)
ENV_VAR = "MINIJIT_GRADING_EXERCISES"


class RegistryError(ValueError):
    """An exercise module or hidden-cases file is malformed (an authoring mistake)."""


def load_module(spec: str) -> ModuleType:
    """Import a module by dotted name, or run a ``.py`` file as a module."""
    if spec.endswith(".py") or os.sep in spec or "/" in spec:
        path = Path(spec).resolve()
        if not path.is_file():
            raise RegistryError(f"no such file: {spec}")
        name = "_minijit_grading_ext_" + hashlib.sha1(str(path).encode()).hexdigest()[:12]
        if name in sys.modules:
            return sys.modules[name]
        module_spec = importlib.util.spec_from_file_location(name, path)
        if module_spec is None or module_spec.loader is None:
            raise RegistryError(f"cannot load {spec}")
        module = importlib.util.module_from_spec(module_spec)
        # Registered before running so that inspect.getsource finds the probes' source.
        sys.modules[name] = module
        try:
            module_spec.loader.exec_module(module)
        except SyntaxError as exc:
            del sys.modules[name]
            where = f"{exc.filename or path}:{exc.lineno}" if exc.lineno else str(path)
            raise RegistryError(f"{where}: SyntaxError: {exc.msg}") from None
        except Exception as exc:
            del sys.modules[name]
            raise RegistryError(f"{path}: loading it raised {type(exc).__name__}: {exc}"
                                ) from exc
        return module
    return importlib.import_module(spec)


def _property_cases():
    """`properties.with_property_case`, which gives each build exercise its hidden property
    case; where the module is absent (a student release, which ships no hidden cases), the
    exercises as they are. Only absence counts: an error inside the module propagates."""
    if importlib.util.find_spec("minijit.grading.properties") is None:
        return lambda exercise: exercise
    from .properties import with_property_case

    return with_property_case


def load_exercises(modules: Iterable[str]) -> dict[str, Exercise]:
    """Exercises by id from the given modules, in definition order; ids must be unique."""
    with_property_case = _property_cases()

    exercises: dict[str, Exercise] = {}
    for spec in modules:
        module = load_module(spec)
        found = getattr(module, "EXERCISES", None)
        if not isinstance(found, (list, tuple)):
            raise RegistryError(f"{spec} does not define a list EXERCISES")
        for ex in found:
            if not isinstance(ex, Exercise):
                raise RegistryError(f"{spec}: {ex!r} is not an Exercise")
            if ex.id in exercises:
                raise RegistryError(f"exercise id {ex.id!r} is defined twice")
            exercises[ex.id] = with_property_case(ex)
    return exercises


def env_modules() -> tuple[str, ...]:
    """Extra exercise modules named in ``MINIJIT_GRADING_EXERCISES``."""
    raw = os.environ.get(ENV_VAR, "")
    return tuple(part for part in raw.split(os.pathsep) if part.strip())


@lru_cache(maxsize=8)
def _cached(modules: tuple[str, ...]) -> dict[str, Exercise]:
    return load_exercises(modules)


def default_exercises() -> dict[str, Exercise]:
    """The course's exercises plus those named in ``MINIJIT_GRADING_EXERCISES``."""
    return _cached(COURSE_MODULES + env_modules())


def load_hidden_cases(folder: str | os.PathLike, exercises: dict[str, Exercise]
                      ) -> dict[str, tuple[Case, ...]]:
    """Extra hidden cases by exercise id from every ``*.py`` file in ``folder``."""
    root = Path(folder)
    if not root.is_dir():
        raise RegistryError(f"hidden-cases folder {folder} does not exist")
    extra: dict[str, list[Case]] = {}
    for path in sorted(root.glob("*.py")):
        if path.name.startswith("_"):
            continue
        module = load_module(str(path))
        found = getattr(module, "HIDDEN_CASES", None)
        if not isinstance(found, dict):
            raise RegistryError(f"{path} does not define a dict HIDDEN_CASES")
        for ex_id, cases in found.items():
            if ex_id not in exercises:
                raise RegistryError(f"{path}: unknown exercise id {ex_id!r}")
            for case in cases:
                if not isinstance(case, Case):
                    raise RegistryError(f"{path}: {case!r} is not a Case")
                literal_args(case.args, f"{path}: {ex_id} case {case.name!r}")
            extra.setdefault(ex_id, []).extend(cases)
    return {k: tuple(v) for k, v in extra.items()}


def literal_args(args: Any, where: str) -> tuple:
    """``args`` as literal data (NumPy scalars made Python scalars), or RegistryError.

    Each leaf must survive ``ast.literal_eval(repr(x)) == x``, except non-finite floats,
    which the channel writes itself (see :func:`minijit.grading.channel.literal`).
    """
    if type(args) not in (tuple, list):
        raise RegistryError(f"{where}: args must be a tuple, got {type(args).__name__}")
    return tuple(_literal(a, f"{where}: argument {i + 1}") for i, a in enumerate(args))


def _literal(value: Any, where: str) -> Any:
    import numpy as np

    if isinstance(value, np.ndarray):
        raise RegistryError(f"{where} is a NumPy array; pass plain data instead, e.g. "
                            f"{value.tolist()!r}"[:300] + " (x.tolist()), and let the probe "
                            "build the array with the dtype it needs")
    if isinstance(value, np.generic):
        value = value.item()
    t = type(value)
    if t is list or t is tuple:
        return t(_literal(v, f"{where}[{i}]") for i, v in enumerate(value))
    if t is dict:
        return {_literal(k, f"{where} key"): _literal(v, f"{where}[{k!r}]")
                for k, v in value.items()}
    if t is float and not math.isfinite(value):
        return value
    if value is None or t in (bool, int, float, str, bytes):
        try:
            same = ast.literal_eval(repr(value)) == value
        except (ValueError, SyntaxError):
            same = False
        if same:
            return value
    raise RegistryError(f"{where} is not literal data ({t.__name__}: {value!r:.60}); use "
                        "None, bools, numbers, strings, and lists, tuples or dicts of them")
