"""Rolled loops (`minijit/codegen/reroll.py`): a kernel's long run of repeated equations (a
Python loop unrolled by tracing) is generated as one `for` loop over one block.

The loop computes the same operations in the same order, so its values are compared bit for
bit with `eval_jaxpr`'s. What would go wrong if a run were cut badly: a block reading a value
two blocks back, or a later equation reading a value of a block other than the last, would
read the wrong iteration's value; the programs below put such reads on purpose.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

import minijit as mj
import minijit.numpy as mnp
from minijit import lax
from minijit.codegen.reroll import MIN_EQNS


@pytest.fixture(autouse=True)
def private_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("MINIJIT_CACHE_DIR", str(tmp_path / "cache"))


def check_exact(f, *args):
    closed = mj.make_jaxpr(f)(*args)
    want = mj.eval_jaxpr(closed.jaxpr, closed.consts, *args)
    got = mj.jit(f, backend="numba")(*args)
    got = list(got) if isinstance(got, (tuple, list)) else [got]
    assert len(got) == len(want)
    for g, w in zip(got, want):
        g = np.asarray(g)
        assert g.dtype == w.dtype and g.shape == w.shape
        np.testing.assert_array_equal(g, w)


def chain(k):
    def f(x):
        for j in range(k):
            x = x * 1.0001 if j % 3 == 0 else x + 0.001 if j % 3 == 1 else mnp.sin(x)
        return x
    return f


X = np.linspace(-1.0, 1.0, 7)


def source(f, *args) -> str:
    return mj.jit(f, backend="numba").lower(*args).as_text()


def test_a_long_chain_is_one_loop_and_exact():
    text = source(chain(300), X)
    assert text.count("for _r") == 1 and len(text.splitlines()) < 40
    check_exact(chain(300), X)


def test_a_short_chain_stays_straight_line():
    assert "for _r" not in source(chain(MIN_EQNS - 3), X)


def test_two_carries_and_an_outside_value():
    def f(x, w):
        y = x * 0.5
        for _ in range(40):
            x, y = y, x * w + y * 0.25  # each block reads both values of the block before
        return x - y

    assert "for _r" in source(f, X, X[::-1].copy())
    check_exact(f, X, X[::-1].copy())


def test_values_of_earlier_blocks_read_later():
    def f(x):
        seen = []
        for _ in range(80):
            x = mnp.sin(x) * 0.999
            seen.append(x)
        # the 10th and the 70th values are read after the chain: no loop may hide them
        return x + seen[10] * seen[70], seen[79] - seen[40]

    check_exact(f, X)


def test_a_block_reading_two_blocks_back():
    def f(x):
        prev, cur = x, mnp.cos(x)
        for _ in range(50):
            prev, cur = cur, cur * 0.5 + prev * 0.25
        return cur

    check_exact(f, X)


@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.int64])
def test_other_dtypes(dtype):
    def f(x):
        for _ in range(40):
            x = x * 3 + 1  # wraps around for the integers, as in JAX
        return x

    x = (np.arange(5) - 2).astype(dtype)
    assert "for _r" in source(f, x)
    check_exact(f, x)


def test_a_reduction_of_a_chain_and_a_chain_in_a_loop_body():
    def f(x):
        return mnp.sum(chain(150)(x), axis=0), lax.fori_loop(0, 3, lambda i, v: chain(90)(v), x)

    assert source(f, X).count("for _r") == 2
    check_exact(f, X)


def test_a_rolled_loop_inside_a_threaded_kernel():
    x = np.linspace(-1.0, 1.0, 1 << 17)  # large enough for the outer loop to use threads
    f = mj.jit(chain(150), backend="numba", parallel=True)
    text = f.lower(x).as_text()
    assert "numba.prange(" in text and "for _r" in text
    closed = mj.make_jaxpr(chain(150))(x)
    want = mj.eval_jaxpr(closed.jaxpr, closed.consts, x)[0]
    np.testing.assert_array_equal(np.asarray(f(x)), want)


def test_generated_functions_have_no_c_callable_wrapper():
    """Only Python calls a generated `entry`: Numba's `cfunc` wrapper (a C-callable twin,
    about a tenth of a small function's compile) is not built."""
    f = mj.jit(chain(6), backend="numba")
    f(X)
    (ir,) = f.cache_entries()[0].executable.entry.inspect_llvm().values()
    assert "define" in ir and not re.search(r"define[^\n]*@\"?cfunc\.", ir)


# Runs of outputs (`reroll.output_runs`): blocks that each compute one output and differ only
# in their literals. What would go wrong: a literal taken from the wrong block's table entry,
# a row stored in the wrong place, a value that something else reads computed only in the
# loop, an output returned twice stored once.


def many_outputs(k, dtype=np.float64):
    def f(x):
        if np.dtype(dtype).kind == "f":
            return [x * dtype(1.0 + j / k) + dtype(j) for j in range(k)]
        return [x * dtype(j + 2) + dtype(j) for j in range(k)]  # integers wrap as JAX's do
    return f


def test_outputs_that_differ_in_their_literals_are_one_loop_and_exact():
    text = source(many_outputs(100), X)
    assert re.search(r"^_T0 = np\.array\(\[", text, re.M)
    assert "outputs, one row each" in text and len(text.splitlines()) < 60
    check_exact(many_outputs(100), X)


@pytest.mark.parametrize("dtype", [np.float32, np.int64, np.int8])
def test_outputs_of_other_dtypes(dtype):
    x = np.arange(7).astype(dtype)
    text = source(many_outputs(64, dtype), x)
    assert "outputs, one row each" in text
    check_exact(many_outputs(64, dtype), x)


def test_outputs_read_elsewhere_or_returned_twice():
    def also_summed(x):
        outs = [x * (1.0 + j / 64) + j for j in range(64)]
        return (*outs, outs[10] + outs[20])  # two rows read again after the run

    def returned_twice(x):
        outs = [x * (1.0 + j / 64) + j for j in range(64)]
        return (*outs, outs[5])

    def same_literal(x):  # a literal the same in every block stays a literal
        return [x * (1.0 + j / 64) - 0.5 for j in range(64)]

    for f in (also_summed, returned_twice, same_literal):
        check_exact(f, X)
    text = source(same_literal, X)  # one table per rolled loop: the multipliers
    assert text.count("outputs, one row each") == text.count(" = np.array([") > 0
    assert "- 0.5)" in text
