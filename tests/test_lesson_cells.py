"""Chapters hold lessons, not plumbing: no code cell of a chapter defines a function or class
longer than `LONGEST` lines, except the code the chapter teaches (listed in `TAUGHT`, with
why). Plots, widgets, tables and measuring loops live in `minijit.course`, where they are
written once and tested."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
LONGEST = 15

# chapter -> {name: what it teaches}. Anything else longer than LONGEST lines is plumbing.
TAUGHT = {
    "02_tracing": {"Program": "the toy tracer's recorder that section 1 builds"},
    "03_the_ir": {"tiny_pp": "the printer of section 4", "my_eval_jaxpr": "the interpreter of "
                  "section 5"},
    "07_cleanup_passes": {"my_fold_constants": "constant folding, built in section 2",
                          "my_simplify": "algebraic simplification, built in section 3",
                          "my_cse": "common subexpression elimination, built in section 4"},
    "09_code_generation": {"generate": "the tiny code generator of section 1"},
}


def _definitions(path: Path):
    """(name, lines) of every top-level def/class in the notebook's code cells."""
    for cell in json.loads(path.read_text())["cells"]:
        if cell["cell_type"] != "code":
            continue
        source = "".join(cell["source"])
        # IPython magics and shell lines are not Python: blank them, keeping line numbers
        python = "\n".join("" if line.lstrip().startswith(("%", "!")) else line
                           for line in source.splitlines())
        for node in ast.parse(python).body:
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                yield node.name, node.end_lineno - node.lineno + 1


CHAPTERS = sorted((REPO / "chapters").glob("*.ipynb"))


@pytest.mark.parametrize("path", CHAPTERS, ids=[p.stem for p in CHAPTERS])
def test_no_lesson_cell_defines_a_long_helper(path):
    taught = TAUGHT.get(path.stem, {})
    long = [f"{name} ({lines} lines)" for name, lines in _definitions(path)
            if lines > LONGEST and name not in taught]
    assert not long, (f"{path.name} defines {', '.join(long)} in its cells: move plumbing to "
                      "minijit.course, or list code the chapter teaches in TAUGHT")


def test_every_taught_name_is_still_defined_and_long():
    for stem, names in TAUGHT.items():
        defined = dict(_definitions(REPO / "chapters" / f"{stem}.ipynb"))
        for name in names:
            assert defined.get(name, 0) > LONGEST, f"{stem}: {name} is gone or short: drop it"
