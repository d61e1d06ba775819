"""The grading package's layout: modules a learner reads in one sitting, imports one way.

Read with ``ast``, nothing imported: every module of ``minijit/grading`` (the course's
exercise modules, one per chapter, are course content and exempt from the size limit) stays
under :data:`MAX_LINES`, and no two modules import each other, directly or round a cycle.
Every import counts: inside functions and under ``TYPE_CHECKING`` too, since a cycle there
still means two ideas that cannot be read apart.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from import_cycles import one_cycle, strongly_connected

PACKAGE = "minijit.grading"
ROOT = Path(__file__).resolve().parent.parent / "minijit" / "grading"
MAX_LINES = 400


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join((PACKAGE, *parts))


def modules() -> dict[str, Path]:
    return {module_name(p): p for p in sorted(ROOT.rglob("*.py"))
            if "__pycache__" not in p.parts}


def imported(path: Path, name: str, known: set[str]) -> set[str]:
    """The package's modules that the module ``name`` (at ``path``) imports, anywhere in it."""
    is_package = path.name == "__init__.py"
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                # from . import x / from .x import y, resolved against this module's package
                package = name.split(".")
                package = package[: len(package) - node.level + (1 if is_package else 0)]
                base = ".".join(package + ([base] if base else []))
            # "from package import submodule" imports the submodule, not the package
            targets = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base
                       for alias in node.names]
        else:
            continue
        for target in targets:
            # the deepest module of the package that the target names
            while target and target not in known:
                target = target.rpartition(".")[0]
            if target and target != name:
                found.add(target)
    return found


def import_graph() -> dict[str, set[str]]:
    found = modules()
    return {name: imported(path, name, set(found)) for name, path in found.items()}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One cycle through each group of modules that import each other, as ``[a, b, ..., a]``."""
    return [one_cycle(graph, group) for group in strongly_connected(graph)]


def test_no_module_is_too_long():
    long = {name: n for name, path in modules().items()
            if ".exercises" not in name
            and (n := len(path.read_text(encoding="utf-8").splitlines())) > MAX_LINES}
    assert not long, (f"modules over {MAX_LINES} lines (split them by idea, one idea per "
                      f"file): {long}")


def test_no_import_cycles():
    found = cycles(import_graph())
    assert not found, "modules that import each other: " + "; ".join(
        " -> ".join(c) for c in found)


def test_the_checks_see_what_they_check(tmp_path, monkeypatch):
    """The checks themselves: relative, absolute, function-local and TYPE_CHECKING imports
    are all edges, and a cycle is named module by module."""
    pkg = tmp_path / "grading"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("from .a import x\n")
    (pkg / "a.py").write_text("def f():\n    from minijit.grading import b\n")
    (pkg / "b.py").write_text("from typing import TYPE_CHECKING\n"
                              "if TYPE_CHECKING:\n    from .c import y\n")
    (pkg / "c.py").write_text("from . import a\nimport numpy\n")
    monkeypatch.setattr(__import__(__name__), "ROOT", pkg)
    graph = import_graph()
    assert graph == {PACKAGE: {f"{PACKAGE}.a"}, f"{PACKAGE}.a": {f"{PACKAGE}.b"},
                     f"{PACKAGE}.b": {f"{PACKAGE}.c"}, f"{PACKAGE}.c": {f"{PACKAGE}.a"}}
    assert cycles(graph) == [[f"{PACKAGE}.{m}" for m in "abca"]]
    with pytest.raises(AssertionError, match="grading.a -> minijit.grading.b"):
        test_no_import_cycles()
