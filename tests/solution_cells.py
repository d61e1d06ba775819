"""Run the cells of a solution notebook that define an exercise's answer, outside a kernel.

The build-track tests plug the solutions' pieces into minijit and run the whole catalogue;
they need the functions the notebook defines, without running the rest of it.
"""

from __future__ import annotations

from pathlib import Path

import nbformat

from minijit import config

SOLUTIONS = Path(__file__).resolve().parent.parent / "solutions"


def solution_namespace(notebook: str, *exercise_ids: str) -> dict:
    """The namespace that `notebook`'s first code cell (its imports) and the cells of
    `exercise_ids` (`# EXERCISE <id>` at their top) make; nothing else runs, and whatever the
    import cell set in `minijit.config` (the chapters' default backend) is put back."""
    path = SOLUTIONS / notebook
    sources = [c.source for c in nbformat.read(path, as_version=4).cells
               if c.cell_type == "code"]
    ns: dict = {"__name__": "solution"}
    saved = dict(config._values)
    try:
        exec(compile(sources[0], str(path), "exec"), ns)
    finally:
        config._values.clear()
        config._values.update(saved)
        config._refresh()
    for exercise_id in exercise_ids:
        (source,) = [s for s in sources if s.startswith(f"# EXERCISE {exercise_id}")]
        exec(compile(source, str(path), "exec"), ns)
    return ns
