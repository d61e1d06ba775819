"""The catalogue at Numba's default optimization level, as learners run it.

The suite compiles with NUMBA_OPT=0 (tests/conftest.py says why the results are the same at
every level). This test runs a slice of the differential catalogue and of the aliasing checks
at the default level (3) in a pytest process of its own, with caches of its own: the programs
where LLVM's optimizations do the most (vectorized elementwise loops, reductions along every
axis, matmul epilogues, loops and carries written in place, buffers reused, outputs that alias
inputs, integer wraparound), and the aliasing checks of those that write in
place, in every argument layout.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent

SLICE = ["relu_gelu", "softmax", "layer_norm_axis1", "logsumexp", "mlp_forward", "sum_axes",
         "variance_middle_axis", "matmul_2d", "while_loop", "scan_cumulative",
         "carries_in_place", "written_in_place", "buffer_reuse_chain", "outputs_alias_inputs",
         "int64_uint64_wraparound", "pairwise_distances"]
# ... and, in every argument layout, those that write in place or return their inputs
ALIASING = ["written_in_place", "buffer_reuse_chain", "outputs_alias_inputs"]


@pytest.mark.slow
def test_a_slice_of_the_catalogue_at_numbas_default_level(tmp_path):
    env = {**os.environ, "NUMBA_OPT": "3", "MINIJIT_TESTS_SESSION_CACHE": str(tmp_path),
           "NUMBA_CACHE_DIR": str(tmp_path / "numba"), "MINIJIT_CHECK_CLEAN_TREE": "0"}
    differential = " or ".join(f"test_jit and {name}-numba" for name in SLICE)
    aliasing = " or ".join(f"test_catalogue and {name}-numba" for name in ALIASING)
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist",
         "-k", f"{differential} or {aliasing}",
         str(TESTS / "test_catalogue.py"), str(TESTS / "test_aliasing.py")],
        env=env, cwd=TESTS.parent, capture_output=True, text=True, timeout=1200)
    tail = (done.stdout + done.stderr)[-4000:]
    assert done.returncode == 0, tail
    # every program of the slice ran, in both files: none was deselected by a renamed id
    assert f"{len(SLICE) + len(ALIASING)} passed" in done.stdout, tail
