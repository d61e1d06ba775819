"""Exercise notebooks generated from solution notebooks, and the conventions they follow.

Conventions (nbgrader's markers, so authors who know nbgrader feel at home):

- an exercise cell starts with ``# EXERCISE ex04_static_args (2 points)``;
- its solution sits between ``### BEGIN SOLUTION`` and ``### END SOLUTION`` (any number of
  regions per cell, at any indentation);
- the next code cell is exactly ``check("ex04_static_args")``.

Generation replaces every region by ``# YOUR CODE HERE`` and a
``raise NotImplementedError("ex04_static_args: ...")`` at the marker's indentation (in
markdown, by *YOUR ANSWER HERE*), clears outputs and execution counts, keeps cell ids, marks
check cells read-only (``editable``/``deletable`` false: JupyterLab then refuses to change
them by accident), and keeps only stable metadata. The output is a pure function of the
solution notebook, so a rerun is byte-identical and ``--check`` can detect drift.
"""

from __future__ import annotations

import copy
import difflib
import hashlib
import re
from dataclasses import dataclass
from pathlib import Path

from .cases import STUB_MESSAGE

HEADER_RE = re.compile(
    r"^\s*#\s*EXERCISE\s+(?P<id>ex\d\d_[a-z0-9_]+)\s*\(\s*(?P<points>\d+(?:\.\d+)?)\s+points?\s*\)"
)
CHECK_RE = re.compile(r"""^check\(\s*(["'])(?P<id>[A-Za-z0-9_]+)\1\s*\)\s*;?$""")
BEGIN = "### BEGIN SOLUTION"
END = "### END SOLUTION"
STUB_COMMENT = "# YOUR CODE HERE"
MARKDOWN_STUB = "*YOUR ANSWER HERE*"
# Cell metadata worth keeping in exercises; everything else (execution timings, collapsed
# state, scroll positions) changes when an author reruns a solution and would cause drift.
KEPT_CELL_METADATA = ("tags", "editable", "deletable")


class AuthoringError(ValueError):
    """A solution notebook breaks the conventions above."""


@dataclass(frozen=True)
class ExerciseHeader:
    id: str
    points: float
    cell_index: int


def exercise_header(source: str) -> tuple[str, float] | None:
    """``(id, points)`` when the cell's first line is an EXERCISE header."""
    first = source.lstrip("\n").split("\n", 1)[0]
    m = HEADER_RE.match(first)
    return (m["id"], float(m["points"])) if m else None


def check_call(source: str) -> str | None:
    """The exercise id when the cell is exactly a ``check("...")`` call."""
    m = CHECK_RE.match(source.strip())
    return m["id"] if m else None


def exercise_headers(nb) -> list[ExerciseHeader]:
    """The EXERCISE headers of a notebook's code cells, in order."""
    out = []
    for i, cell in enumerate(nb.cells):
        if cell.cell_type == "code":
            found = exercise_header(cell.source)
            if found:
                out.append(ExerciseHeader(found[0], found[1], i))
    return out


def strip_solutions(source: str, exercise_id: str | None, markdown: bool = False) -> str:
    """``source`` with each solution region replaced by the stub."""
    lines = source.split("\n")
    out: list[str] = []
    inside = False
    for number, line in enumerate(lines, 1):
        marker = line.strip()
        if marker == BEGIN:
            if inside:
                raise AuthoringError(f"line {number}: nested {BEGIN}")
            if not markdown and exercise_id is None:
                raise AuthoringError(f"line {number}: {BEGIN} in a cell without an "
                                     "'# EXERCISE exNN_name (N points)' header")
            inside = True
            indent = line[: len(line) - len(line.lstrip())]
            if markdown:
                out.append(indent + MARKDOWN_STUB)
            else:
                out.append(indent + STUB_COMMENT)
                out.append(f'{indent}raise NotImplementedError("{exercise_id}: '
                           f'{STUB_MESSAGE}")')
        elif marker == END:
            if not inside:
                raise AuthoringError(f"line {number}: {END} without {BEGIN}")
            inside = False
        elif not inside:
            out.append(line)
    if inside:
        raise AuthoringError(f"{BEGIN} without {END}")
    return "\n".join(out)


def _stable_cell_id(notebook_name: str, index: int) -> str:
    return hashlib.sha1(f"{notebook_name}:{index}".encode()).hexdigest()[:8]


def make_exercise(solution, name: str = "notebook"):
    """The exercise notebook for a solution notebook (a new object; input untouched)."""
    from .fast_nbformat import nbformat

    nb = copy.deepcopy(solution)
    nb.nbformat, nb.nbformat_minor = 4, max(5, nb.get("nbformat_minor", 5))
    kernelspec = nb.metadata.get("kernelspec") or {
        "display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"}
    nb.metadata = nbformat.from_dict({"kernelspec": dict(kernelspec),
                                      "language_info": {"name": "python"}})
    current: str | None = None
    for i, cell in enumerate(nb.cells):
        where = f"{name}, cell {i}"
        cell.setdefault("id", _stable_cell_id(name, i))
        cell.metadata = nbformat.from_dict(
            {k: cell.metadata[k] for k in KEPT_CELL_METADATA if k in cell.metadata})
        if cell.cell_type == "code":
            header = exercise_header(cell.source)
            if header:
                current = header[0]
            try:
                cell.source = strip_solutions(cell.source, header[0] if header else None)
            except AuthoringError as exc:
                raise AuthoringError(f"{where}: {exc}") from None
            cell.outputs = []
            cell.execution_count = None
            if check_call(cell.source):
                cell.metadata["editable"] = False
                cell.metadata["deletable"] = False
        elif cell.cell_type == "markdown" and BEGIN in cell.source:
            try:
                cell.source = strip_solutions(cell.source, current, markdown=True)
            except AuthoringError as exc:
                raise AuthoringError(f"{where}: {exc}") from None
    return nb


def validate_solution(nb, name: str) -> list[ExerciseHeader]:
    """Check the conventions; returns the exercise headers."""
    headers = exercise_headers(nb)
    code = [(i, c) for i, c in enumerate(nb.cells) if c.cell_type == "code"]
    for h in headers:
        if BEGIN not in nb.cells[h.cell_index].source:
            raise AuthoringError(f"{name}: {h.id} has no {BEGIN} region")
        later = [c for i, c in code if i > h.cell_index]
        if not later or check_call(later[0].source) != h.id:
            raise AuthoringError(f"{name}: the code cell after {h.id} must be "
                                 f'check("{h.id}")')
    return headers


def dumps(nb) -> str:
    """Deterministic text of a notebook (nbformat's layout plus a final newline)."""
    from .fast_nbformat import nbformat

    text = nbformat.writes(nb, version=4)
    return text if text.endswith("\n") else text + "\n"


def render_exercises(solutions_dir: Path) -> dict[str, str]:
    """File name -> text of every exercise notebook generated from ``solutions_dir``."""
    from .fast_nbformat import nbformat

    out: dict[str, str] = {}
    seen: dict[str, str] = {}
    for path in sorted(Path(solutions_dir).glob("*.ipynb")):
        solution = nbformat.read(path, as_version=4)
        for h in validate_solution(solution, path.name):
            if h.id in seen:
                raise AuthoringError(f"{h.id} is defined in both {seen[h.id]} and {path.name}")
            seen[h.id] = path.name
        out[path.name] = dumps(make_exercise(solution, path.stem))
    return out


@dataclass(frozen=True)
class Drift:
    name: str
    kind: str  # "changed", "missing" or "extra"
    diff: str = ""


def generate(solutions_dir: Path, exercises_dir: Path, check: bool = False) -> list[Drift]:
    """Write (or with ``check``, only compare) ``exercises_dir``; returns what differed."""
    wanted = render_exercises(solutions_dir)
    exercises_dir = Path(exercises_dir)
    drift: list[Drift] = []
    present = {p.name for p in exercises_dir.glob("*.ipynb")} if exercises_dir.is_dir() else set()
    for name, text in wanted.items():
        path = exercises_dir / name
        if name not in present:
            drift.append(Drift(name, "missing"))
        else:
            old = path.read_text(encoding="utf-8")
            if old != text:
                diff = "".join(list(difflib.unified_diff(
                    old.splitlines(True), text.splitlines(True),
                    f"exercises/{name} (on disk)", f"exercises/{name} (generated)"))[:60])
                drift.append(Drift(name, "changed", diff))
    for name in sorted(present - set(wanted)):
        drift.append(Drift(name, "extra"))
    if not check:
        exercises_dir.mkdir(parents=True, exist_ok=True)
        for name, text in wanted.items():
            (exercises_dir / name).write_text(text, encoding="utf-8")
        for d in drift:
            if d.kind == "extra":
                (exercises_dir / d.name).unlink()
    return drift
