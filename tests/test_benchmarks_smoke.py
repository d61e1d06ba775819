"""Smoke test of `benchmarks/bench_minijit.py --quick`: it runs in both modes (one core, all
cores), every contender's result passes its check against NumPy, and the tables and the
plots are written. No timing assertions: the numbers of a quick run on a shared machine mean
little."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent

# One row of each mode's table per timed workload (the minijit-against-JAX table has them
# too, the copy excepted).
TIMED_ROWS = ["| W1 GELU float64 |", "| W1 GELU float32 |", "| COPY copy of W1's input",
              "| W2 row-wise softmax |", "| W3 relu(A @ B + b) |", "| W4 Newton sqrt",
              "| W4 Mandelbrot", "| W5 cached call", "| W7 MLP forward float64 |",
              "| W7 MLP forward float32 |", "| W8 Jacobi solver", "| LN layer norm",
              "| ATT attention"]
# Sections that run once.
ROWS = ["## W6: time of the first call", "## W9: first call at a new shape",
        "## Compile scaling", "| K elementwise ops in a chain | 100 |",
        "| K outputs `x * c_k + k`, each reading x | 10 |",
        "| control flow K deep: while_loop > cond > fori_loop | 3 |", "## Peak memory of W1"]


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("bench")
    proc = subprocess.run(
        [sys.executable, str(REPO / "benchmarks" / "bench_minijit.py"), "--quick", "--out",
         str(out)], capture_output=True, text=True, timeout=600, cwd=REPO)  # a hang guard only
    assert proc.returncode == 0, proc.stderr[-3000:]
    return out, proc


@pytest.mark.slow
def test_quick_run_writes_the_table_with_every_workload(quick_run):
    out, proc = quick_run
    table = (out / "results.md").read_text()
    for row in ROWS:
        assert row in table, f"{row!r} missing from results.md"
    modes = json.loads((out / "results.json").read_text())["modes"]
    tables = table.split("## Time per call: ")[1:]
    assert [t.split("\n")[0] for t in tables] == [modes["one"]["label"], modes["all"]["label"]]
    for row in TIMED_ROWS:
        for t in tables:
            assert row in t.split("\n## ")[0], f"{row!r} missing from a mode's table"
    assert "## Goals" in table and "## minijit against JAX, both modes" in table
    for goal in ("within 1.5× of a copy of its input", "no slower than at one thread",
                 "LN layer norm: minijit no slower than JAX", "ATT attention: minijit no "
                 "slower than JAX", "control flow 3 deep: minijit no slower than JAX"):
        assert goal in table, goal
    assert table.strip() in proc.stdout  # the table is also printed


@pytest.mark.slow
def test_no_contender_failed_its_correctness_check(quick_run):
    out, _ = quick_run
    assert "FAILED" not in (out / "results.md").read_text()
    res = json.loads((out / "results.json").read_text())
    assert set(res["modes"]) == {"one", "all"}
    assert res["modes"]["one"]["threads"] == 1
    for mode in res["modes"].values():
        assert len(mode["rows"]) == len(res["modes"]["one"]["rows"])
        for row in mode["rows"]:
            for contender, cell in row["cells"].items():
                assert cell["status"] in ("ok", "n/a", "skipped"), (
                    mode["label"], row["name"], contender, cell)
            # the tools that can run every workload did run it (the copy: NumPy and Numba)
            can = {"numpy", "numba"} if row["group"] == "COPY" else {"numpy", "numba",
                                                                      "minijit"}
            assert can <= {c for c, cell in row["cells"].items() if cell["status"] == "ok"}, (
                mode["label"], row["name"])
    assert "w6_failed" not in res and res["w6"]["cold"]["ok"] and res["w6"]["new"]["ok"]
    assert all(m["status"] == "ok" for m in res["memory"].values())
    assert "w9_failed" not in res and res["w9"]["ok"]
    # A compile-scaling case may run past its limit on a loaded machine (that is reported,
    # not a failure), but none may crash or compute a wrong result; a K up to 10 always runs.
    for row in res["scale"]:
        for contender in ("minijit", "minijit-numba", "jax"):
            cell = row[contender]
            assert cell["status"] in ("ok", "timeout", "not run", "skipped"), (row, contender)
        if row["k"] <= 10:
            assert row["minijit"]["status"] == "ok", row


@pytest.mark.slow
def test_the_plots_exist(quick_run):
    out, _ = quick_run
    for name in ("w1_gelu.png", "ratios.png", "vs_jax.png"):
        data = (out / name).read_bytes()
        assert data.startswith(b"\x89PNG") and len(data) > 5000, name
