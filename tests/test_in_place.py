"""Results written where they end up (minijit/codegen/in_place.py, plan_buffers.py).

- A kernel writes its rows of a concatenation, pad or update straight into the bigger array.
- `u.at[i].set(v)` in a loop body writes over the dead carry instead of copying it.
- A loop carry whose next value cannot be written over it gets one spare array, allocated
  before the loop, and holds its two arrays in turn; the loop over the sweep stays vectorized.
- Where any of that would let one value see another's writes, it is not done.
Every program is checked against the interpreter and NumPy (bitwise) and with the aliasing
harness, whose `outputs-overlap` check sees two results sharing memory."""

from __future__ import annotations

import re

import numpy as np
import pytest
from aliasing import check_aliasing

import minijit as mj
import minijit.numpy as mnp
from minijit import lax


def _source(f, *args) -> str:
    return f.lower(*args).compile().as_text()


def _body(src: str) -> str:
    """The lines inside the first loop of the entry function."""
    lines = src.split("def entry")[1].splitlines()
    start = next(i for i, t in enumerate(lines) if t.strip().startswith(("while ", "for ")))
    depth = len(lines[start]) - len(lines[start].lstrip())
    body = []
    for t in lines[start + 1:]:
        if t.strip() and len(t) - len(t.lstrip()) <= depth:
            break
        body.append(t)
    return "\n".join(body)


def _agree(fn, *args):
    """jit(fn) gives the interpreter's bits, with no aliasing violation."""
    got = mj.jit(fn, backend="numba")(*args)
    want = mj.jit(fn, backend="interpreter")(*args)
    for g, w in zip(got if isinstance(got, tuple) else (got,),
                    want if isinstance(want, tuple) else (want,)):
        assert np.asarray(g).tobytes() == np.asarray(w).tobytes()
    assert check_aliasing(mj.jit(fn, backend="numba"), args, distinct_outputs=True) == []
    return got


def jacobi(u0, f, h2, iters):
    def step(state):
        k, u = state
        inner = 0.5 * (u[:-2] + u[2:] + h2 * f[1:-1])
        return k + 1, mnp.concatenate([u[:1], inner, u[-1:]])

    return lax.while_loop(lambda s: s[0] < iters, step, (0, u0))[1]


def _jacobi_numpy(u, f, h2, iters):
    for _ in range(iters):
        new = u.copy()
        new[1:-1] = 0.5 * (u[:-2] + u[2:] + h2 * f[1:-1])
        u = new
    return u


def _jacobi_args(n=64):
    u0 = np.zeros(n)
    u0[0], u0[-1] = 1.0, 2.0
    return u0, np.linspace(0.0, 1.0, n), np.float64(1.0 / (n - 1) ** 2)


@pytest.mark.parametrize("iters", [0, 1, 2, 7])
def test_a_jacobi_carry_holds_two_arrays_in_turn(iters):
    u0, f, h2 = _jacobi_args()
    src = _source(mj.jit(jacobi, backend="numba"), u0, f, h2, iters)
    assert "_spare_" in src and "_turn_" in src
    assert "alloc.empty" not in _body(src)  # nothing allocated per iteration
    got = _agree(jacobi, u0, f, h2, iters)
    np.testing.assert_array_equal(got, _jacobi_numpy(u0, f, h2, iters))


def test_the_sweep_into_the_spare_is_vectorized():
    # LLVM does not vectorize a loop writing into an array variable the outer loop swaps;
    # the spare is chosen by a flag instead (in_place.py). Compiled here: the disk cache
    # keeps machine code, not LLVM IR.
    mj.config.update("disk_cache", False)
    try:
        f = mj.jit(lambda u, g, h: jacobi(u, g, h, 5) * 1.0000001, backend="numba")
        f(*_jacobi_args(256))
        (ir,) = f.cache_entries()[0].executable.entry.inspect_llvm().values()
    finally:
        mj.config.update("disk_cache", True)
    assert re.search(r"f(mul|add) (fast )?<\d+ x double>", ir), "the sweep is not vectorized"


def test_at_set_in_a_fori_loop_writes_over_the_carry():
    def fill(x):
        return lax.fori_loop(1, x.shape[0], lambda i, u: u.at[i].set(u[i - 1] * 0.5 + x[i]),
                             mnp.zeros_like(x))

    x = np.arange(12.0)
    src = _source(mj.jit(fill, backend="numba"), x)
    assert "in place, see plan_buffers" in _body(src)
    assert not re.search(r"= \w+\.copy\(\)", _body(src))  # no whole carry copied
    want = np.zeros(12)
    for i in range(1, 12):
        want[i] = want[i - 1] * 0.5 + x[i]
    np.testing.assert_array_equal(_agree(fill, x), want)


def test_at_set_of_an_argument_still_copies_it():
    x = np.arange(5.0)
    f = mj.jit(lambda x: x.at[2].set(-1.0), backend="numba")
    assert "in place" not in _source(f, x)
    np.testing.assert_array_equal(f(x), [0.0, 1.0, -1.0, 3.0, 4.0])
    np.testing.assert_array_equal(x, np.arange(5.0))


def test_at_set_of_a_donated_argument_writes_over_it():
    x = np.arange(5.0)
    f = mj.jit(lambda x: (x * 2.0).at[2].set(-1.0), donate_argnums=0, backend="numba")
    assert "alloc.empty" not in _source(f, x) and "alloc.copy(" not in _source(f, x)
    np.testing.assert_array_equal(f(np.arange(5.0)), [0.0, 2.0, -1.0, 6.0, 8.0])


# Loops whose carries must not get a spare: after the iteration something still sees the
# array the carry held, or two carries would share one.

def _roll(u):  # a new array whose elements are read from other places than their own
    return mnp.concatenate([u[1:], u[:1] * 2.0])


def _swap(a, b):  # the old carry `a` becomes the next `b`
    return lax.fori_loop(0, 4, lambda i, s: (_roll(s[1]), s[0]), (a, b))


def _over(a, b):  # the next `b` is written over the old `a`'s array (plan_buffers)
    return lax.fori_loop(0, 4, lambda i, s: (_roll(s[1]), s[0] * 2.0), (a, b))


def _view(a, b):  # the next `b` is a view of the next `a`
    def body(i, s):
        new = s[0] * 2.0 + 1.0
        return new, new.reshape(b.shape)
    return lax.fori_loop(0, 3, body, (a, b))


def _twice(a, b):  # one new array returned as both carries
    def body(i, s):
        new = s[0] + s[1]
        return new, new
    return lax.fori_loop(0, 3, body, (a, b))


def _keeps(a, b):  # the next `b` is a slice (a view) of the old `a`
    def body(i, s):
        return mnp.concatenate([s[0][1:], s[0][:1]]) + 1.0, s[0].reshape(b.shape)
    return lax.fori_loop(0, 4, body, (a, b))


@pytest.mark.parametrize("fn", [_swap, _over, _view, _twice, _keeps],
                         ids=lambda f: f.__name__)
def test_carries_that_something_else_sees_get_no_spare(fn):
    a, b = np.arange(6.0), np.arange(6.0) * -1.0
    _agree(fn, a, b)
    assert "_spare_" not in _source(mj.jit(fn, backend="numba"), a, b)


def test_an_update_that_views_its_operand_is_not_written_over_it():
    def shift(a):  # u.at[1:].set(u[:-1]) over u itself would smear u[0] along the row
        return lax.fori_loop(0, 3, lambda i, u: u.at[1:].set(u[:-1]), a)

    a = np.arange(6.0)
    src = _source(mj.jit(shift, backend="numba"), a)
    assert "in place, see plan_buffers" not in src and "_spare_" in src
    np.testing.assert_array_equal(_agree(shift, a), [0.0, 0.0, 0.0, 0.0, 1.0, 2.0])


def test_a_spare_is_given_where_another_carry_is_passed_through():
    def loop(a, b):  # `b` goes through unchanged: `a` may still have its spare
        def body(i, s):
            u = s[0]
            return mnp.concatenate([u[:1], u[:-2] + u[2:], u[-1:]]), s[1]
        return lax.fori_loop(0, 5, body, (a, b))

    a, b = np.arange(6.0), np.ones(6)
    assert "_spare_" in _source(mj.jit(loop, backend="numba"), a, b)
    got = _agree(loop, a, b)
    want = a.copy()
    for _ in range(5):
        want = np.concatenate([want[:1], want[:-2] + want[2:], want[-1:]])
    np.testing.assert_array_equal(got[0], want)


def _copies(fn, *args):
    from minijit.passes import run_passes
    from minijit.passes.plan_buffers import outputs_to_copy

    return outputs_to_copy(run_passes(mj.make_jaxpr(fn)(*args)).jaxpr)


def test_a_loop_result_is_copied_only_where_it_may_be_an_argument():
    # plan_buffers.storage follows what a loop body hands back: Mandelbrot's counts are new
    # (copying them cost 0.8 ms of a 12 ms call), a body that returns an argument is not.
    x = np.arange(4.0)

    def fresh(x):
        return lax.fori_loop(0, 3, lambda i, c: mnp.where(c < 2.0, c + x, c), x * 0.5)

    def returns_x(x):
        return lax.fori_loop(0, 3, lambda i, c: x, x * 0.5)

    def keeps_init(x):
        return lax.fori_loop(0, 3, lambda i, c: (c[1], c[0]), (x * 2.0, x))

    def branch(x):
        return lax.cond(x[0] > 0, lambda v: v, lambda v: v * 2.0, x)

    assert _copies(fresh, x) == [False]
    assert _copies(returns_x, x) == [True]
    assert _copies(keeps_init, x) == [True, True]  # either may be `x` after the swaps
    assert _copies(branch, x) == [True]
    for fn in (fresh, returns_x, keeps_init, branch):
        _agree(fn, x)


def test_a_traced_row_index_reads_a_view_and_a_returned_row_is_copied():
    x, i = np.arange(12.0).reshape(4, 3), np.int64(2)
    scaled = mj.jit(lambda x, i: x[i] * 2.0, backend="numba")
    src = _source(scaled, x, i)
    assert "= c_view(a[_s0:_s0 + 1])" in src and "alloc.copy(" not in src
    np.testing.assert_array_equal(scaled(x, i), x[2] * 2.0)
    row = mj.jit(lambda x, i: x[i], backend="numba")
    got = row(x, i)
    np.testing.assert_array_equal(got, x[2])
    assert not np.shares_memory(got, x)  # a view of the argument is returned as a copy
    _agree(lambda x, i: (x[i], x[i] + 1.0), x, i)


def test_scan_carries_are_written_in_place_or_held_in_two_arrays():
    xs = np.arange(20.0).reshape(5, 4)

    def running(xnp, c, x):  # elementwise: the next carry is written over the old one
        new = c * 0.5 + x
        return new, new * 2.0

    def shifting(xnp, c, x):  # reads neighbours: a spare array; the new carry is also the y
        new = xnp.concatenate([c[1:], c[:1]]) + x
        return new, new

    for step, marker in ((running, "# reused"), (shifting, "_spare_")):
        def fn(c0, xs, step=step):
            return lax.scan(lambda c, x: step(mnp, c, x), c0, xs)

        c0 = np.ones(4)
        assert marker in _body(_source(mj.jit(fn, backend="numba"), c0, xs)), step.__name__
        got = _agree(fn, c0, xs)
        carry, ys = c0, []
        for row in xs:
            carry, y = step(np, carry, row)
            ys.append(y)
        np.testing.assert_array_equal(got[0], carry)
        np.testing.assert_array_equal(got[1], np.stack(ys))


def test_a_reductions_scratch_row_is_allocated_once_before_the_loop():
    # max |new - u| folds a row it first computes into a scratch row (folds.py); in a loop
    # body that row is allocated before the loop, not in every iteration (Lowering.hoist)
    def solve(u0, f, h2, tol):
        def step(state):
            k, _, u = state
            inner = 0.5 * (u[:-2] + u[2:] + h2 * f[1:-1])
            new = mnp.concatenate([u[:1], inner, u[-1:]])
            return k + 1, mnp.max(mnp.abs(new - u)), new

        return lax.while_loop(lambda s: (s[1] >= tol) & (s[0] < 50), step,
                              (0, mnp.inf, u0))

    u0, f, h2 = _jacobi_args()
    src = _source(mj.jit(solve, backend="numba"), u0, f, h2, 1e-9)
    head = src.split("while True:")[0]
    assert re.search(r"_row_\w+ = alloc\.empty", head), "the scratch row is not before the loop"
    assert "alloc.empty" not in _body(src)
    k, change, u = _agree(solve, u0, f, h2, 1e-9)
    assert k == 50 and change > 0
