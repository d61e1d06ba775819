"""Run a course notebook top to bottom, the way a learner would, and report what went wrong.

    from notebook_runner import find_notebooks, check_clean, run_notebook  # tests/ is on sys.path

    for path in find_notebooks(REPO):
        assert not check_clean(path)          # committed without outputs, valid nbformat
        run = run_notebook(path)              # executes a temporary copy with nbclient
        assert run.ok, run.report()

A notebook is executed in a temporary copy of its folder (so files it writes, and its
outputs, never land in the repository) with the `python3` kernel and a short per-cell
timeout. Errors are allowed only in cells tagged `raises-exception`, and such a cell must
raise: a tagged cell that runs cleanly means the chapter's text no longer matches the code.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

import nbformat

RAISES_TAG = "raises-exception"
NOTEBOOK_FOLDERS = ("chapters", "solutions")
CELL_TIMEOUT_S = 60
KERNEL = "python3"


def find_notebooks(root: Path, folders=NOTEBOOK_FOLDERS) -> list[Path]:
    """`root/<folder>/*.ipynb` for each folder that exists, sorted; checkpoints skipped."""
    found = []
    for folder in folders:
        found += sorted(p for p in (Path(root) / folder).glob("*.ipynb")
                        if ".ipynb_checkpoints" not in p.parts)
    return found


def _tags(cell) -> list[str]:
    return list(cell.get("metadata", {}).get("tags", []))


def _first_line(cell) -> str:
    lines = [ln for ln in cell.source.splitlines() if ln.strip()]
    return lines[0][:80] if lines else "<empty>"


def check_clean(path: Path) -> list[str]:
    """Problems with the notebook as committed: invalid nbformat, cells without ids, stored
    outputs, execution counts or widget state. An empty list means clean."""
    problems = []
    try:
        nb = nbformat.read(str(path), as_version=4)
        nbformat.validate(nb)
    except Exception as e:  # noqa: BLE001 - any parse or schema error is the finding
        return [f"not a valid notebook: {type(e).__name__}: {str(e).splitlines()[0]}"]
    raw = json.loads(path.read_text(encoding="utf-8"))  # nbformat.read fills missing ids in
    ids = [cell.get("id") for cell in raw["cells"]]
    if raw.get("nbformat_minor", 0) >= 5 and (None in ids or len(set(ids)) != len(ids)):
        problems.append("every cell needs an id, unique in the notebook (nbformat 4.5)")
    for i, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        if cell.get("outputs"):
            problems.append(f"cell {i} ({_first_line(cell)!r}) has stored outputs")
        if cell.get("execution_count") is not None:
            problems.append(f"cell {i} ({_first_line(cell)!r}) has an execution count")
    if "widgets" in nb.metadata:
        problems.append("notebook metadata stores widget state ('widgets')")
    return problems


@dataclass
class CellError:
    index: int
    first_line: str
    ename: str
    evalue: str

    def __str__(self) -> str:
        return f"cell {self.index} ({self.first_line!r}): {self.ename}: {self.evalue}"


@dataclass
class NotebookRun:
    """The result of executing one notebook."""

    path: Path
    seconds: float
    executed: nbformat.NotebookNode | None = None
    failure: str | None = None  # an unexpected error, a timeout, a dead kernel
    tagged_but_clean: list[str] = field(default_factory=list)  # tagged cells that did not raise
    expected_errors: list[CellError] = field(default_factory=list)  # tagged cells that raised
    cell_seconds: dict[int, float] = field(default_factory=dict)  # code cell index -> seconds
    # Wall-clock seconds outside the cells: kernel start up to the first cell, the gaps
    # between cells, and shutdown after the last one (to say where a slow run's time went).
    outside: dict[str, float] = field(default_factory=dict)

    def slowest(self, n: int = 3) -> str:
        """`cell 4: 12.3 s, cell 7: 2.0 s; outside cells: start 0.8 s, ...`: where the time
        went."""
        top = sorted(self.cell_seconds.items(), key=lambda kv: -kv[1])[:n]
        text = ", ".join(f"cell {i}: {t:.1f} s" for i, t in top)
        if self.outside:
            text += "; outside cells: " + ", ".join(f"{k} {v:.1f} s"
                                                   for k, v in self.outside.items())
        return text

    @property
    def ok(self) -> bool:
        return self.failure is None and not self.tagged_but_clean

    def report(self) -> str:
        lines = [f"{self.path.name}: {'ok' if self.ok else 'FAILED'} in {self.seconds:.1f} s"]
        if self.failure:
            lines.append(f"unexpected error:\n{self.failure}")
        for cell in self.tagged_but_clean:
            lines.append(f"{cell} is tagged {RAISES_TAG!r} but did not raise: the text around "
                         "it probably describes an error that no longer happens")
        return "\n".join(lines)


def _error_of(cell) -> CellError | None:
    for out in cell.get("outputs", []):
        if out.get("output_type") == "error":
            return CellError(0, _first_line(cell), out.get("ename", "?"), out.get("evalue", ""))
    return None


def _cell_times(cell) -> tuple[datetime, datetime] | None:
    """When the kernel started and finished the cell, as nbclient recorded it in the cell's
    metadata (None if it did not run)."""
    timing = cell.get("metadata", {}).get("execution", {})
    start, end = timing.get("iopub.execute_input"), timing.get("shell.execute_reply")
    if not (start and end):
        return None
    parse = datetime.fromisoformat
    return parse(start.replace("Z", "+00:00")), parse(end.replace("Z", "+00:00"))


def _cell_seconds(cell) -> float | None:
    """Execution time that nbclient recorded in the cell's metadata (None if it did not run)."""
    times = _cell_times(cell)
    return None if times is None else (times[1] - times[0]).total_seconds()


def _outside(nb, cell_seconds: dict[int, float], began: datetime,
             ended: datetime) -> dict[str, float]:
    times = sorted((t, i) for i, t in ((i, _cell_times(c)) for i, c in enumerate(nb.cells))
                   if t is not None)
    if not times:
        return {}
    first, last = times[0][0][0], max(t[1] for t, _ in times)
    between = (last - first).total_seconds() - sum(cell_seconds.values())
    outside = {"start": (first - began).total_seconds(), "between": max(between, 0.0),
               "shutdown": (ended - last).total_seconds()}
    gaps = [((t[0] - prev[1]).total_seconds(), i) for (prev, _), (t, i) in zip(times, times[1:])]
    if gaps:
        gap, cell = max(gaps)
        outside[f"longest gap (before cell {cell})"] = gap
    return outside


def kernel_env() -> dict[str, str]:
    """The test process's environment, minus MPLBACKEND: the kernel then uses its default
    inline backend, as in JupyterLab (pytest's conftest sets Agg for the tests themselves)."""
    env = dict(os.environ)
    env.pop("MPLBACKEND", None)
    env.setdefault("PYDEVD_DISABLE_FILE_VALIDATION", "1")  # quiets a debugger warning
    return env


def run_notebook(path: Path, timeout: int = CELL_TIMEOUT_S, kernel_name: str = KERNEL,
                 startup_timeout: int = 60, siblings: tuple[str, ...] = ()) -> NotebookRun:
    """Execute a copy of `path`'s folder in a temporary directory; never writes to `path`.

    The folders named in `siblings`, next to `path`'s folder, are copied beside it (a chapter
    run with `siblings=("exercises",)` finds the learner's notebooks at `../exercises`)."""
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError, CellTimeoutError, DeadKernelError

    path = Path(path).resolve()
    nb = nbformat.read(str(path), as_version=4)
    with tempfile.TemporaryDirectory(prefix="minijit-nb-") as tmp:
        # the notebook's siblings (data files, helper modules) come along, outputs stay here
        workdir = Path(tmp) / path.parent.name
        for folder, to in ((path.parent, workdir),
                           *((path.parent.parent / name, Path(tmp) / name) for name in siblings)):
            shutil.copytree(folder, to,
                            ignore=shutil.ignore_patterns(".ipynb_checkpoints", "__pycache__"))
        client = NotebookClient(
            nb, timeout=timeout, startup_timeout=startup_timeout, kernel_name=kernel_name,
            allow_errors=False,  # except in cells tagged raises-exception (nbclient's rule)
            resources={"metadata": {"path": str(workdir)}},
        )
        # No stand-in for ipywidgets' Output widget (`interact` draws into one). nbclient's
        # stand-in answers each output drawn into the widget with a comm message on the shell
        # channel, sent while nbclient waits on that channel for the cell's execute_reply; the
        # send goes through a plain socket shadowing the asyncio one (jupyter_client's
        # Session.send), so a reply arriving meanwhile can go unnoticed until the wait's
        # timeout: the cell ends `timeout` seconds late, and as the kernel stamped its reply on
        # time, the delay shows as a gap before the next cell (a chapter with `interact` hit it
        # in 1 run in 4 to 1 in 10 on a busy machine; nbclient issue #312). Without it, what
        # the widget shows goes to the cell's own outputs, and nothing is sent while a cell runs.
        client.widget_registry = {}
        failure = None
        began = datetime.now(timezone.utc)
        start = time.perf_counter()
        try:
            client.execute(env=kernel_env(), cwd=str(workdir))
        except CellTimeoutError as e:
            failure = f"a cell ran past the {timeout} s timeout\n{e}"
        except CellExecutionError as e:
            failure = str(e)
        except DeadKernelError as e:
            failure = f"the kernel died: {e}"
        seconds = time.perf_counter() - start
        ended = datetime.now(timezone.utc)
    run = NotebookRun(path, seconds, nb, failure)
    for i, cell in enumerate(nb.cells):
        t = _cell_seconds(cell)
        if t is not None:
            run.cell_seconds[i] = t
    run.outside = _outside(nb, run.cell_seconds, began, ended)
    if failure is None:
        for i, cell in enumerate(nb.cells):
            if cell.cell_type != "code" or RAISES_TAG not in _tags(cell):
                continue
            err = _error_of(cell)
            if err is None:
                run.tagged_but_clean.append(f"cell {i} ({_first_line(cell)!r})")
            else:
                err.index = i
                run.expected_errors.append(err)
    return run
