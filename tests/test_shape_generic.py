"""Shape-generic kernels: a program traced again for other sizes shares its Numba compile
(chapters 04 and 09).

The jit cache stays keyed by shape, as JAX's: a new shape retraces. But the generated code
reads sizes from its arguments (`Lowering.shape_generic`), so the retrace generates the same
code and finds the compile in memory, or on disk in a new process. Sizes 0 and 1 stay literal
(they decide broadcasting), so a program with another pattern of them compiles afresh. Every
call here is checked against NumPy or the interpreter: a shared compile must be right for
every shape that shares it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import minijit as mj
import minijit.lax as lax
import minijit.numpy as mnp
from minijit.codegen import compile as cc
from minijit.codegen.compile import code_of


def gelu(x):
    return 0.5 * x * (1 + mnp.tanh(0.7978845608 * (x + 0.044715 * x ** 3)))


def softmax(x):
    e = mnp.exp(x - mnp.max(x, axis=1, keepdims=True))
    return e / mnp.sum(e, axis=1, keepdims=True)


def _compiles(f, *args):
    """(value, programs it compiled or loaded from disk, compiles it found in memory) of one
    call of f. (A test run may find on disk what an earlier run compiled.)"""
    before = dict(cc.stats)
    out = f(*args)
    return out, (cc.stats["compiled"] + cc.stats["disk_hits"]
                 - before["compiled"] - before["disk_hits"]), (
        cc.stats["memory_hits"] - before["memory_hits"])


def _fresh(fun):
    # a new function object each time: its own jit cache, and no compile from an earlier test
    # can be reused unless the code is the same
    return mj.jit(lambda *a: fun(*a), backend="numba")


def test_a_new_length_retraces_but_does_not_compile():
    f = _fresh(gelu)
    x = np.linspace(-3, 3, 1000)
    f(x)
    for n in (1001, 4096, 77):
        x = np.linspace(-3, 3, n)
        y, compiled, hits = _compiles(f, x)
        assert (compiled, hits) == (0, 1), n
        want = 0.5 * x * (1 + np.tanh(0.7978845608 * (x + 0.044715 * x ** 3)))
        np.testing.assert_allclose(y, want, rtol=1e-14, atol=1e-15)
    assert f.trace_count == 4  # keyed by shape, as in JAX


def test_two_dimensions_and_reductions_share_one_compile():
    f = _fresh(softmax)
    rng = np.random.default_rng(0)
    f(rng.normal(size=(4, 5)))
    for shape in [(6, 7), (300, 100), (5, 4), (2, 3)]:
        x = rng.normal(size=shape)
        y, compiled, hits = _compiles(f, x)
        assert (compiled, hits) == (0, 1), shape
        ref = np.exp(x - x.max(1, keepdims=True))
        np.testing.assert_allclose(y, ref / ref.sum(1, keepdims=True), rtol=1e-14)


@pytest.mark.parametrize("first,second", [((4, 5), (4, 1)), ((4, 5), (1, 5)), ((4, 4), (4, 5))])
def test_another_pattern_of_ones_or_equal_sizes_is_another_program(first, second):
    """A size 1 broadcasts, and two equal sizes are read from one name: either pattern
    changing gives other code (compiled apart), and right."""
    f = _fresh(softmax)
    rng = np.random.default_rng(1)
    a, b = rng.normal(size=first), rng.normal(size=second)
    assert code_of(f.lower(a).as_text()) != code_of(f.lower(b).as_text())
    for x in (a, b):
        ref = np.exp(x - x.max(1, keepdims=True))
        np.testing.assert_allclose(f(x), ref / ref.sum(1, keepdims=True), rtol=1e-14)


def _structural(x, w):
    """Slices, padding, concatenation, a product, a transpose, iota, argmax, a scan and a
    dynamic slice: every rule that writes sizes."""
    h = x @ w
    s = h[1:, :] - h[:-1, :]
    p = lax.pad(s, 0.0, ((1, 0, 0), (0, 2, 1)))  # interior padding
    c = mnp.concatenate([p, p[:, ::-1]], axis=1)
    t = c.T + mnp.arange(c.shape[0])[None, :]
    m = mnp.argmax(t, axis=0)
    cums = lax.scan(lambda carry, row: (carry + row, carry * 2.0), mnp.zeros(t.shape[1]), t)
    d = lax.dynamic_slice(t, (1, 2), (2, 1))
    r = lax.fori_loop(0, 3, lambda i, v: v * 0.5 + d[0, 0], mnp.ones(t.shape[1]))
    return mnp.sum(t), m, cums[0], cums[1], d, r


@pytest.mark.parametrize("shapes", [[(5, 3), (3, 4)], [(7, 6), (6, 5)], [(9, 2), (2, 8)],
                                    [(1, 3), (3, 1)], [(2, 2), (2, 2)]])
def test_structural_rules_agree_with_the_interpreter_at_every_shape(shapes):
    f = _fresh(_structural)
    ref = mj.jit(_structural, backend="interpreter")
    rng = np.random.default_rng(2)
    f(*(rng.normal(size=s) for s in [(4, 3), (3, 4)]))  # another shape compiled first
    args = [rng.normal(size=s) for s in shapes]
    for got, want in zip(f(*args), ref(*args)):
        np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-13)


def _stencil(u, f):
    """One Jacobi sweep on a 1-D grid with fixed ends: slices one and two short of `u`."""
    inner = 0.5 * (u[:-2] + u[2:] + 0.01 * f[1:-1])
    new = mnp.concatenate([u[:1], inner, u[-1:]])
    return new, mnp.max(mnp.abs(new - u))


def test_slices_a_few_elements_short_share_one_compile():
    f = _fresh(_stencil)
    rng = np.random.default_rng(3)
    f(rng.normal(size=50), rng.normal(size=50))
    for n in (51, 1000, 7):
        u, g = rng.normal(size=n), rng.normal(size=n)
        (new, change), compiled, hits = _compiles(f, u, g)
        assert (compiled, hits) == (0, 1), n
        want = u.copy()
        want[1:-1] = 0.5 * (u[:-2] + u[2:] + 0.01 * g[1:-1])
        np.testing.assert_allclose(new, want, rtol=1e-15)
        assert change == np.max(np.abs(want - u))


def _strided(x, b):
    return x[::2] * mnp.sum(b), x[1::3]


def test_a_slice_step_is_a_literal_and_other_sizes_share_one_compile():
    """A step is the program's constant, not a size: `x[::2]` reads `:2]` in the source,
    whatever sizes the arguments have. (It was `(_n1 - 1)` where `b` had 3 elements and
    `(_n1 - 2)` where it had 4: two sources, two compiles, for one program. Output sizes
    that happen to be within 2 of another size still give other sources, which is why `x`
    is long here.)"""
    f = _fresh(_strided)
    rng = np.random.default_rng(4)
    x, b = rng.normal(size=100), rng.normal(size=3)
    text = f.lower(x, b).as_text()
    assert "a[0:(_n0 - 1):2]" in text and "a[1:(_n0 - 2):3]" in text, text
    f(x, b)
    for n, m in ((100, 4), (100, 5), (106, 6)):  # 106: the same limits, n - 1 and n - 2
        x, b = rng.normal(size=n), rng.normal(size=m)
        (even, third), compiled, hits = _compiles(f, x, b)
        assert (compiled, hits) == (0, 1), (n, m)
        np.testing.assert_allclose(even, x[::2] * b.sum(), rtol=1e-15)
        np.testing.assert_array_equal(third, x[1::3])


def test_the_source_reads_sizes_from_the_arguments():
    text = mj.jit(gelu, backend="numba").lower(np.ones(100)).as_text()
    assert "_n0 = a.shape[0]" in text and "range(_n0)" in text
    assert "100" in text  # still named in the comments, which say the IR equation
    assert all("100" not in line for line in text.splitlines()
               if not line.lstrip().startswith("#"))


CHILD = textwrap.dedent("""
    import json, sys
    import numpy as np
    import minijit as mj, minijit.numpy as mnp
    from minijit.codegen import compile as cc
    n = int(sys.argv[1])
    f = mj.jit(lambda x: mnp.tanh(x) * 3.0 - x, backend="numba")
    x = np.linspace(-2, 2, n)
    ok = bool(np.allclose(f(x), np.tanh(x) * 3.0 - x))
    print(json.dumps({"ok": ok, "stats": cc.stats}))
""")


def test_a_new_process_with_another_size_loads_the_compile_from_disk(tmp_path):
    env = {**os.environ, "MINIJIT_CACHE_DIR": str(tmp_path)}
    env.pop("MINIJIT_DISK_CACHE", None)

    def child(n):
        out = subprocess.run([sys.executable, "-c", CHILD, str(n)], env=env, capture_output=True,
                             text=True, timeout=300)
        assert out.returncode == 0, out.stderr[-2000:]
        return json.loads(out.stdout.splitlines()[-1])

    first, second = child(1000), child(123)
    assert first["ok"] and second["ok"]
    assert first["stats"]["compiled"] == 1
    assert second["stats"]["compiled"] == 0 and second["stats"]["disk_hits"] == 1
    assert len(list(tmp_path.glob("m_*.py"))) == 1


@pytest.mark.parametrize("mode", ["full", "same", "valid"])
def test_convolve_of_another_signal_length_shares_one_compile(mode):
    """convolve's windows are m + 1 copies of the padded signal re-read as m rows: sizes of
    the signal plus its padding, and products of two sizes (array_rules.py `_size`), written
    from the arguments' sizes too, so a new signal length with the same kernel compiles
    nothing."""
    f = _fresh(lambda a, v: (mnp.convolve(a, v, mode), mnp.correlate(a, v, mode)))
    rng = np.random.default_rng(4)
    v = rng.normal(size=3)
    f(rng.normal(size=10), v)
    for n in (20, 57):
        a = rng.normal(size=n)
        (conv, corr), compiled, hits = _compiles(f, a, v)
        assert (compiled, hits) == (0, 1), n
        np.testing.assert_allclose(conv, np.convolve(a, v, mode), rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(corr, np.correlate(a, v, mode), rtol=1e-12, atol=1e-12)
