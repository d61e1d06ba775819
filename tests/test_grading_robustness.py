"""Small robustness promises of the grader, each with the scenario that broke it.

- A lone surrogate in a string literal of an answer ("\\ud800", "\\udcff": JSON and Python
  allow them, UTF-8 does not) grades like any other answer, with the string unchanged.
- An endless loop in an answer costs one cell timeout, not one per request that calls it,
  and the feedback says why the rest was not run.
- The pool's workers leave no folder in the system's temporary folder, killed ones included.
- CPUs are counted as the container allows (cgroup v2 ``cpu.max``), not as the host has.

Demo exercises only (``tests/grading_fixtures``), no sandbox: a grade takes a few seconds.
"""

from __future__ import annotations

import json
import multiprocessing.util
import os
import re
import tempfile
from pathlib import Path

import nbformat
import pytest

from minijit import threads
from minijit.grading import sandbox
from minijit.grading.batch import grade
from minijit.grading.kernel import sendable
from minijit.grading.pool import DIED, DONE, WorkerPool
from minijit.grading.registry import load_exercises
from minijit.grading.runner import Limits

FIXTURES = Path(__file__).parent / "grading_fixtures"
DEMO = str(FIXTURES / "demo_exercises.py")
CELL_TIMEOUT = 3.0
SURROGATES = "\udcff\ud800"  # one that surrogateescape turns into a byte, one it cannot


def _with_add(source: str, extra: tuple[str, ...] = ()) -> dict:
    nb = nbformat.read(FIXTURES / "solutions" / "00_demo.ipynb", as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "code" and "EXERCISE ex00_add" in cell.source:
            cell.source = "# EXERCISE ex00_add (1 point)\n" + source
    nb.cells += [nbformat.v4.new_code_cell(c) for c in extra]
    return nb


@pytest.fixture(scope="module")
def rows(tmp_path_factory):
    folder = tmp_path_factory.mktemp("subs")
    notebooks = {
        "a_right": _with_add("def add(a, b):\n    return a + b\n"),
        # the characters themselves in the notebook's JSON (escaped there), not their escapes
        "b_surrogates": _with_add(
            f"def add(a, b):\n    s = '{SURROGATES}'\n"
            "    assert [ord(c) for c in s] == [0xDCFF, 0xD800], s\n    return a + b\n"),
        "c_loops_when_called": _with_add("def add(a, b):\n    while True:\n        pass\n"),
        "d_loops_in_its_cell": _with_add(
            "def add(a, b):\n    while True:\n        pass\n\n\nadd(1, 2)\n"),
    }
    for name, nb in notebooks.items():
        (folder / f"{name}.ipynb").write_text(json.dumps(nb), encoding="utf-8")
    found = grade([str(folder)], exercises=load_exercises([DEMO]), sandbox=False,
                  progress=False, jobs=2,
                  limits=Limits(cell_timeout=CELL_TIMEOUT, timeout=60, settle_timeout=2))
    return {r.student: r for r in found}


def test_sendable_escapes_lone_surrogates_only():
    source = f"x = 'a{SURROGATES}b\u00e9\U0001f600'  # \udfff"
    sent = sendable(source)
    sent.encode("utf-8")  # what jupyter_client does with it
    ns: dict = {}
    exec(sent, ns)
    assert ns["x"] == f"a{SURROGATES}b\u00e9\U0001f600"
    assert sendable("plain = 'text'") == "plain = 'text'"


def test_a_lone_surrogate_in_an_answer_grades_normally(rows):
    right, odd = rows["a_right"], rows["b_surrogates"]
    assert odd.status == "ok", odd.detail
    assert odd.total == right.total == odd.max_total


def _waits(row) -> list[float]:
    """The time limits the grader waited out for this row, from its timeout events: "... ran
    past 3 s ..." is one wait of 3 s. (Counted, not clocked: a row's seconds also hold kernel
    starts and interrupts, which move with the machine's load.)"""
    return [float(m.group(1)) for e in row.events if e.kind == "timeout"
            for m in [re.search(r"ran past ([0-9.]+) s", e.message)] if m]


def test_an_endless_loop_costs_one_cell_timeout(rows):
    right = rows["a_right"]
    # the cell's own limit, then a quarter of it for the tests of a cell that ran past it;
    # each of public and hidden tests used to wait the full limit (and the cell too)
    expected = {"c_loops_when_called": [CELL_TIMEOUT],
                "d_loops_in_its_cell": [CELL_TIMEOUT, CELL_TIMEOUT / 4]}
    for name, waits in expected.items():
        row = rows[name]
        assert row.status == "timeout"
        assert "ex00_add: its hidden tests were not run" in row.detail, row.detail
        assert _waits(row) == waits, row.detail
        assert row.total == right.total - 1  # ex00_add lost; the others still graded
    looped = rows["d_loops_in_its_cell"].detail
    assert "a quarter of the cell limit, since its cell had run past" in looped


def test_workers_leave_no_temporary_folder(tmp_path, monkeypatch):
    # multiprocessing's own folder (pymp-*), made once per process on first need, is made
    # before: whether an earlier test in this process made it must not matter
    multiprocessing.util.get_temp_dir()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # where the pool's folder goes
    make = "__import__('tempfile').mkdtemp(prefix='minijit-grade-')"
    die = f"({make}, __import__('os').kill(__import__('os').getpid(), 9))"
    pool = WorkerPool(1, eval, deadline=60)
    try:
        outcomes = []
        for index, task in enumerate([make, die]):
            while not pool.free():
                pool.wait()
            pool.submit(index, (task,))
            while pool.busy():
                outcomes += pool.wait()
        assert [o.kind for o in outcomes] == [DONE, DIED]
        made = Path(outcomes[0].value)  # by the worker that then died
        assert made.parent.parent == Path(pool.scratch)
        # the dead worker's folder went with it; the live one's is all that is left
        assert not made.exists()
        live = {f"worker-{w.process.pid}" for w in pool.workers}
        assert {p.name for p in Path(pool.scratch).iterdir()} <= live
    finally:
        pool.close()
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(("cpu_max", "expected"), [
    ("200000 100000\n", 2), ("150000 100000\n", 2), ("max 100000\n", None), ("junk", None)])
def test_cpus_are_counted_within_the_containers_quota(tmp_path, monkeypatch, cpu_max,
                                                      expected):
    mask = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    (tmp_path / "cpu.max").write_text(cpu_max)
    monkeypatch.setattr(threads, "CGROUP_CPU_MAX", tmp_path / "cpu.max")
    want = mask if expected is None else min(mask, expected)
    assert threads.usable_cpus() == want
    # the sandbox's limits and the kernels' thread pools follow
    assert sandbox.default_processes() == max(256, 3 * want + 64)
    monkeypatch.delenv("NUMBA_NUM_THREADS", raising=False)
    monkeypatch.setenv("OMP_NUM_THREADS", "7")
    monkeypatch.delenv("MINIJIT_THREADS", raising=False)
    counts = sandbox.thread_counts()
    assert counts["NUMBA_NUM_THREADS"] == str(want) and counts["OMP_NUM_THREADS"] == "7"
    assert counts["MINIJIT_THREADS"] == "1"  # kernels graded side by side: serial code
    monkeypatch.setenv("MINIJIT_THREADS", "3")
    assert sandbox.thread_counts()["MINIJIT_THREADS"] == "3"


def test_jobs_default_is_the_usable_cpus(monkeypatch, capsys):
    from minijit.grading import __main__ as cli

    monkeypatch.setattr(cli, "usable_cpus", lambda: 3)
    with pytest.raises(SystemExit):
        cli.main(["grade", "--help"])
    assert "its cgroup's quota included: 3)" in " ".join(capsys.readouterr().out.split())


def test_a_submission_runs_from_a_thread_that_runs_an_event_loop(tmp_path):
    """An instructor's notebook cell runs inside an event loop, where asyncio.run refuses to
    start: run_submission then runs in a thread of its own and grades as anywhere else."""
    import asyncio

    from minijit.grading.runner import Limits, run_submission

    nb = tmp_path / "s.ipynb"
    nb.write_text(json.dumps({"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": [
        {"cell_type": "code", "id": "a", "source": "x = 1", "execution_count": None,
         "outputs": [], "metadata": {}}]}))

    async def inside_a_loop():
        return run_submission(nb, (), Limits(cell_timeout=20, timeout=60))

    run = asyncio.run(inside_a_loop())
    assert not [e for e in run.events if e.kind == "grader_error"], run.events
