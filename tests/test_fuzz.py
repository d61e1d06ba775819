"""The fuzzer of tests/fuzz.py in the suite: a fixed set of programs, and the fuzzer's own parts.

Each of `SUITE_PROGRAMS` programs of seed `SUITE_SEED` is one test, run against NumPy on every
backend with the aliasing harness; a failure prints the program as a script to paste and the
command that reruns it. The number is sized for the suite on two cores: nearly all of a
program's time is Numba compiling it (and its arguments' layouts), and 100 programs draw every
feature that `test_the_suite_covers_what_the_fuzzer_is_for` asks for at least twice (the first
34 already draw each once); 200 took twice the time and drew no feature the first 100 do not.
Longer campaigns use the command line: `python tests/fuzz.py --seed S -n N`.
"""

from __future__ import annotations

import contextlib
import io

import numpy as np
import pytest
from fuzz import compare, generate, main, run_program

SUITE_SEED = 0
SUITE_PROGRAMS = 100


@pytest.mark.parametrize("index", range(SUITE_PROGRAMS), ids=lambda i: f"{SUITE_SEED}:{i}")
def test_program(index: int):
    prog = generate(SUITE_SEED, index)
    failures = run_program(prog)
    assert not failures, "\n".join(
        [f"{f.kind} [{f.backend}] {f.message}" for f in failures] + ["", prog.reproducer()])


def test_the_suite_covers_what_the_fuzzer_is_for():
    features = set().union(*(generate(SUITE_SEED, i).features for i in range(SUITE_PROGRAMS)))
    wanted = {"view-elementwise-view", "cond-passthrough", "scan-passthrough",
              "while-duplicate-carry", "fori-passthrough", "same-array-twice",
              "bool-arithmetic", "sum-of-bools", "int-division", "small-int-with-python-scalar",
              "python-scalar-argument", "result-and-its-view", "expected-error", "0-d", "empty",
              "layout-fortran", "layout-strided", "layout-reversed", "layout-offset",
              "layout-readonly", "layout-bigendian", "reduce-compose", "dynamic-slice",
              "dynamic-update-slice", "loop-closed-over-size-1", "fori-typed-index",
              "weak-carry"}
    assert wanted <= features, sorted(wanted - features)


def test_programs_are_reproducible():
    a, b = generate(5, 17), generate(5, 17)
    assert a.source() == b.source() and a.args_source() == b.args_source()
    for x, y in zip(a.make_args(), b.make_args()):
        np.testing.assert_array_equal(x, y, strict=True)
    assert generate(5, 18).source() != a.source()


def test_the_reproducer_is_a_script_that_runs():
    prog = next(p for p in map(lambda i: generate(SUITE_SEED, i), range(50))
                if not p.expect_error and not any(i.layout == "bigendian" for i in p.inputs))
    with contextlib.redirect_stdout(io.StringIO()) as out:
        exec(prog.reproducer(("interpreter",)), {})
    assert out.getvalue().startswith("numpy ")
    assert "\ninterpreter " in out.getvalue()


def test_compare_is_bitwise_unless_inexact():
    assert compare(np.array([np.nan, 1.0]), np.array([-np.nan, 1.0]), False) is None
    assert compare(np.array([0.0]), np.array([-0.0]), False).startswith("numeric")
    assert compare(np.array([1.0 + 2e-16]), np.array([1.0]), False).startswith("numeric")
    assert compare(np.array([1.0 + 2e-16]), np.array([1.0]), True) is None
    assert compare(np.array([1], np.int32), np.array([1], np.int64), False).startswith("type")
    assert compare(np.array(3), 3, False) is None


def test_command_line_prints_a_summary_and_its_exit_status_says_whether_all_passed():
    with contextlib.redirect_stdout(io.StringIO()) as out:
        status = main(["--seed", "0", "-n", "3", "--backend", "interpreter", "--no-shrink"])
    text = out.getvalue()
    assert "Summary: seed 0, programs 0..2 (3 run" in text
    assert status == (1 if "\nFAIL seed=0" in text else 0)
