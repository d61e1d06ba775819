"""The Numba backend: generated source, its exactness against eval_jaxpr, its caches, errors."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import minijit as mj
import minijit.numpy as mnp
from minijit import lax
from minijit import primitives as P
from minijit.codegen import CodegenError, lower_jaxpr
from minijit.codegen.lower import interchangeable
from minijit.passes import run_passes


@pytest.fixture(autouse=True)
def private_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("MINIJIT_CACHE_DIR", str(tmp_path / "cache"))


def both(f, *args, **jit_kw):
    """Run `f` through the Numba backend and through eval_jaxpr; return both results."""
    closed = mj.make_jaxpr(f, **jit_kw)(*args)
    want = mj.eval_jaxpr(closed.jaxpr, closed.consts, *args)
    got = mj.jit(f, backend="numba", **jit_kw)(*args)
    got = list(got) if isinstance(got, (tuple, list)) else [got]
    return got, want


def assert_same(got, want):
    assert len(got) == len(want)
    for g, w in zip(got, want):
        g = np.asarray(g)
        assert g.shape == w.shape and g.dtype == w.dtype, (g.dtype, g.shape, w.dtype, w.shape)
        if w.dtype.kind == "f":
            np.testing.assert_allclose(g, w, rtol=1e-12 if w.dtype == np.float64 else 1e-6,
                                       equal_nan=True)
        else:
            np.testing.assert_array_equal(g, w)


rng = np.random.default_rng(0)


@pytest.mark.parametrize("shapes", [((3, 4), (4,)), ((3, 1), (1, 4)), ((2, 3, 4), (3, 1)),
                                    ((5,), ()), ((1,), (6,))])
def test_broadcasting_by_index_arithmetic(shapes):
    a, b = (rng.standard_normal(s) for s in shapes)
    assert_same(*both(lambda x, y: mnp.tanh(x * y + 1.0) - y, a, b))


@pytest.mark.parametrize("axis", [None, 0, 1, 2, (0, 2), (1, 2)])
@pytest.mark.parametrize("op", ["sum", "max", "min", "prod", "mean"])
@pytest.mark.parametrize("keepdims", [False, True])
def test_reductions_with_axes(axis, op, keepdims):
    x = rng.standard_normal((3, 4, 5))
    assert_same(*both(lambda x: getattr(mnp, op)(mnp.exp(x) - 1.0, axis=axis,
                                                 keepdims=keepdims), x))


def test_reductions_propagate_nan_and_argmax_ties():
    x = np.array([[1.0, np.nan, 3.0], [2.0, 2.0, -1.0]])
    assert_same(*both(lambda x: (x.max(axis=1), x.min(axis=0), mnp.argmax(x, axis=1),
                                 mnp.argmin(x, axis=1)), x))


@pytest.mark.parametrize("src,dst", [(np.float64, np.int32), (np.int64, np.float32),
                                     (np.int32, np.uint8), (np.bool_, np.float64),
                                     (np.float32, np.bool_), (np.uint16, np.int8)])
def test_dtype_casts_wrap_and_round_like_numpy(src, dst):
    x = (rng.standard_normal(20) * 300).astype(src)
    assert_same(*both(lambda x: (x.astype(dst), x.astype(dst) * 3), x))


def test_small_int_arithmetic_wraps_like_numpy():
    x = np.array([100, 120, -128, 127], np.int8)
    assert_same(*both(lambda x: (x * x + 7, x // 3, x % 5, -x), x))


def test_dynamic_indexing_and_updates_clamp_and_drop():
    x = np.arange(10.0)
    for i in (-12, -3, 0, 4, 9, 15):
        assert_same(*both(lambda x, i: (x[i], x.at[i].set(-1.0), x.at[i].add(5.0)), x, i))


def test_structural_ops():
    x = rng.standard_normal((4, 6))
    assert_same(*both(lambda x: (x.T @ x, x[1:3, ::-2], mnp.concatenate([x, x * 2], axis=1),
                                 mnp.pad(x, ((1, 0), (2, 1)), constant_values=7.0),
                                 x.reshape(3, 8), mnp.stack([x, x], axis=1),
                                 mnp.arange(6) * 2, mnp.eye(3, k=1)), x))


def test_integer_matmul_loops_instead_of_blas():
    a = rng.integers(-5, 5, (3, 4)).astype(np.int32)
    b = rng.integers(-5, 5, (4,)).astype(np.int32)
    assert_same(*both(lambda a, b: (a @ b, b @ a.T), a, b))


def test_control_flow_becomes_native_loops_and_branches():
    def f(x, n):
        y = lax.fori_loop(0, n, lambda i, c: c * 0.5 + x[i % 3], 0.0)
        z = lax.cond(y > 1.0, lambda v: v * 2.0, lambda v: v - 1.0, x)
        # steps of 2: a loop counting by 1 to a fixed bound is a `for` (counted_loops)
        w = lax.while_loop(lambda c: c[0] < 10, lambda c: (c[0] + 2, c[1] * 1.5), (0, z))
        return lax.scan(lambda c, v: (c + v, c * v), 0.0, w[1])
    got, want = both(f, np.array([1.0, 2.0, 3.0]), 7)
    assert_same([got[0], got[1]], want)
    source = mj.jit(f, backend="numba").lower(np.ones(3), 7).as_text()
    assert "for " in source and "while True:" in source and "if " in source


def test_a_cond_on_a_boolean_tests_the_boolean():
    """`lax.cond(pred, ...)` stages `index = convert_element_type[int32](pred)`; where only
    the cond reads the index, the code tests `pred` itself and never builds the index."""
    def f(x):
        return lax.cond(mnp.max(x) > 0.0, lambda v: v * 2.0, lambda v: v - 1.0, x)

    def index_read_too(x):  # cse makes the index and the second output one variable
        p = mnp.max(x) > 0.0
        return lax.cond(p, lambda v: v * 2.0, lambda v: v - 1.0, x), p.astype(np.int32)

    for x in (np.array([1.0, -2.0]), np.array([-1.0, -2.0])):
        assert_same(*both(f, x))
        assert_same(*both(index_read_too, x))
    source = mj.jit(f, backend="numba").lower(np.ones(2)).as_text()
    assert "if not " in source and "np.int32(" not in source
    source = mj.jit(index_read_too, backend="numba").lower(np.ones(2)).as_text()
    assert "np.int32(" in source


def test_generated_source_is_readable_and_names_equations():
    def gelu(x):
        return 0.5 * x * (1 + mnp.tanh(0.7978845608 * (x + 0.044715 * x**3)))
    source = mj.jit(gelu, backend="numba").lower(np.ones(100)).as_text()
    assert "def entry(" in source
    assert "# b:f64[100] = fused[kind=elementwise] a" in source
    assert "vecmath.tanh_f64(" in source  # minijit's own vectorizable tanh (codegen/vecmath)
    assert "_n0 = a.shape[0]" in source  # sizes are read from the arguments
    assert source.count("for i0 in range(_n0):") == 1  # one loop, no temporaries
    assert source.count("alloc.empty(") == 0  # the output buffer comes from the caller


def mandelbrot(cr, ci):
    """Escape counts of 50 steps: a loop that codegen interchanges (each point runs the whole
    loop); test_parallel.py threads it."""
    def body(i, s):
        zr, zi, n = s
        inside = zr * zr + zi * zi <= 4.0
        return (mnp.where(inside, zr * zr - zi * zi + cr, zr),
                mnp.where(inside, 2.0 * zr * zi + ci, zi), n + inside.astype(np.int32))
    z = mnp.zeros_like(cr)
    return lax.fori_loop(0, 50, body, (z, z, mnp.zeros(cr.shape, np.int32)))[2]


def test_mandelbrot_loop_is_interchanged_and_exact():
    ci, cr = np.mgrid[-1.5:1.5:40j, -2:1:40j]
    closed = run_passes(mj.make_jaxpr(mandelbrot)(cr, ci))
    loops = [e for e in closed.eqns if e.primitive.name == "fori_loop"]
    assert loops and interchangeable(loops[0])
    text = lower_jaxpr(closed).text
    # the escape test leaves the loop as soon as it fails, before the rest of the body
    assert "  # the state stops changing" in text and "np.signbit" not in text
    # the zeros it starts from are scalars in the loop, never arrays (at a size whose zeros
    # fold_constants does not turn into constants)
    big = np.mgrid[-1.5:1.5:300j, -2:1:300j]
    text = mj.jit(mandelbrot, backend="numba").lower(big[1], big[0]).as_text()
    assert text.count("# (not built: the loop below starts from the scalar)") == 2
    assert_same(*both(mandelbrot, cr, ci))


def test_a_fill_read_by_more_than_the_loop_is_built():
    def f(cr):
        z = mnp.zeros_like(cr)

        def body(i, s):
            zr, n = s
            inside = zr * zr <= 4.0
            return mnp.where(inside, zr * zr + cr, zr), n + inside.astype(np.int32)

        zr, n = lax.fori_loop(0, 20, body, (z, mnp.zeros(cr.shape, np.int32)))
        return zr + z, n  # z is read after the loop too
    cr = np.linspace(-2.2, 0.4, 300 * 300).reshape(300, 300)  # not folded into constants
    text = mj.jit(f, backend="numba").lower(cr).as_text()
    assert text.count("# (not built") == 1  # only the counter's zeros
    assert_same(*both(f, cr))


@pytest.mark.parametrize("case", ["float counter", "index read", "two tests", "no escape"])
def test_escape_test_only_where_a_false_test_freezes_the_state(case):
    """Each body below is interchanged, but none has one test whose falseness leaves every
    carry exactly as it was: they keep the general fixed-point check (or none), and their
    values are the interpreter's."""
    def run(cr):
        def body(i, s):
            z, n = s
            inside = z * z <= 4.0
            if case == "float counter":  # n + 0.0 would turn -0.0 into 0.0
                return mnp.where(inside, z * z + cr, z), n + inside.astype(np.float64)
            if case == "index read":
                return mnp.where(inside, z * z + cr + i * 0.0, z), n + inside.astype(np.int32)
            if case == "two tests":
                return (mnp.where(inside, z * z + cr, z),
                        n + (z < 1.5).astype(np.int32))
            return mnp.where(inside, z * z + cr, z * 0.5), n + inside.astype(np.int32)
        n0 = mnp.zeros(cr.shape, np.float64 if case == "float counter" else np.int32)
        return lax.fori_loop(0, 30, body, (mnp.zeros_like(cr), n0))
    cr = np.linspace(-2.5, 0.5, 64).reshape(8, 8)
    closed = run_passes(mj.make_jaxpr(run)(cr))
    assert interchangeable([e for e in closed.eqns if e.primitive.name == "fori_loop"][0])
    assert "# the state stops changing" not in lower_jaxpr(closed).text
    assert_same(*both(run, cr))


def test_newton_loop_keeps_the_array_loop_innermost():
    def newton(a):
        return lax.fori_loop(0, 10, lambda i, x: 0.5 * (x + a / x), a)
    closed = run_passes(mj.make_jaxpr(newton)(np.ones(8)))
    assert not interchangeable([e for e in closed.eqns if e.primitive.name == "fori_loop"][0])
    assert_same(*both(newton, np.linspace(1, 9, 8)))


def test_debug_print_runs_on_every_call(capsys):
    f = mj.jit(lambda x: (mj.debug.print("x = {}", x.sum()), x * 2)[1], backend="numba")
    f(np.ones(3))
    f(np.ones(3) * 2)
    assert capsys.readouterr().out.splitlines() == ["x = 3.0", "x = 6.0"]


def test_memory_cache_shares_identical_code():
    from minijit.codegen import compile as cc

    before = cc.stats["compiled"]
    mj.jit(lambda x: x * 3.0 + 1.0, backend="numba")(np.ones(4))
    mj.jit(lambda y: y * 3.0 + 1.0, backend="numba")(np.ones(4))  # same generated source
    assert cc.stats["compiled"] - before == 1


def test_disk_cache_is_reused_by_a_new_process(tmp_path):
    script = textwrap.dedent("""
        import numpy as np, minijit as mj, minijit.numpy as mnp
        f = mj.jit(lambda x: mnp.sin(x) * 2.0 + 0.25, backend="numba")
        f(np.ones(7))
        d = f.cache_entries()[0].executable.entry
        print(sum(d.stats.cache_hits.values()), sum(d.stats.cache_misses.values()))
    """)
    env = {**os.environ, "MINIJIT_CACHE_DIR": str(tmp_path / "disk")}
    runs = [subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                           text=True, check=True).stdout.split() for _ in range(2)]
    assert runs[0] == ["0", "1"]  # first process: compiled
    assert runs[1] == ["1", "0"]  # second process: loaded from disk, no compile
    assert list((tmp_path / "disk").glob("m_*.py"))


def test_disk_cache_can_be_turned_off(tmp_path):
    with mj.config.override("disk_cache", False):
        mj.jit(lambda x: x - 4.5, backend="numba")(np.ones(3))
    assert not list((tmp_path / "cache").glob("m_*.py"))


def test_compile_failure_is_a_clear_error_and_leaves_no_entry(monkeypatch, tmp_path):
    from minijit.codegen.rules import Statements, numba_rules

    def broken(lo, eqn, args, outs):
        lo.line(f"{outs[0]} = undefined_name({args[0]})")

    monkeypatch.setitem(numba_rules, P.rev_p, Statements(broken))
    f = mj.jit(lambda x: x[::-1] + 1.0, backend="numba")
    with pytest.raises(CodegenError) as info:
        f(np.ones(3))
    message = str(info.value)
    assert "rev" in message and "backend='interpreter'" in message
    assert f._cache_size() == 0
    assert not list((tmp_path / "cache").glob("m_*.py"))  # the failed source is removed


def test_unknown_primitive_names_itself():
    from minijit.core import Primitive, abstract_eval_rules, impl_rules

    odd_p = Primitive("odd_op")
    abstract_eval_rules[odd_p] = lambda x: [x]
    impl_rules[odd_p] = lambda x: [x]
    try:
        f = mj.jit(lambda x: mj.bind(odd_p, x), backend="numba")
        with pytest.raises(CodegenError, match="odd_op"):
            f(np.ones(2))
        np.testing.assert_array_equal(mj.jit(lambda x: mj.bind(odd_p, x),
                                             backend="interpreter")(np.ones(2)), np.ones(2))
    finally:
        del abstract_eval_rules[odd_p], impl_rules[odd_p]


@pytest.mark.parametrize("where", ["alone", "fused", "loop body"])
def test_elementwise_primitive_without_a_rule_names_itself(where):
    """Not a bare KeyError from deep inside the code generator: the primitive, its
    equation, and both ways out (an Expression rule, or the interpreter)."""
    from minijit.core import ELEMENTWISE, Primitive, abstract_eval_rules, impl_rules

    soft_p = Primitive("softplus_without_rule")
    abstract_eval_rules[soft_p] = lambda x: [x]
    impl_rules[soft_p] = lambda x: [np.logaddexp(0, x)]
    ELEMENTWISE.add(soft_p)
    bodies = {"alone": lambda x: mj.bind(soft_p, x),
              "fused": lambda x: mj.bind(soft_p, x * 2.0) + 1.0,
              "loop body": lambda x: lax.fori_loop(0, 3, lambda i, v: mj.bind(soft_p, v), x)}
    try:
        with pytest.raises(CodegenError, match="no rule for primitive `softplus_without_rul") as e:
            mj.jit(bodies[where], backend="numba")(np.ones(2))
        assert "an Expression rule to minijit.codegen.rules.numba_rules" in str(e.value)
        assert "backend='interpreter'" in str(e.value)
    finally:
        del abstract_eval_rules[soft_p], impl_rules[soft_p]
        ELEMENTWISE.discard(soft_p)


def test_disable_jit_still_means_eager():
    seen = []
    f = mj.jit(lambda x: seen.append(float(x.sum())) or x, backend="numba")
    with mj.disable_jit():
        f(np.ones(3))
    assert seen == [3.0]


def test_every_primitive_has_a_numba_rule():
    from minijit.codegen.rules import Expression, numba_rules
    from minijit.core import ELEMENTWISE
    from minijit.debug import debug_callback_p
    from minijit.lax.control_flow import CONTROL_FLOW
    from minijit.passes.fuse_elementwise import fused_p
    from minijit.primitives import ALL_PRIMITIVES

    every = {*ALL_PRIMITIVES.values(), *CONTROL_FLOW, debug_callback_p, fused_p}
    assert not {p.name for p in every - set(numba_rules)}
    # an elementwise primitive is written per element, inside the loop kernels
    assert not {p.name for p in ELEMENTWISE if not isinstance(numba_rules[p], Expression)}


def test_a_rule_added_at_run_time_is_used():
    """The table is read while lowering, not copied at import: chapter 09's exercise adds an
    entry and expects the next compile to use it (here: replacing rev's rule)."""
    from minijit.codegen.rules import Statements, numba_rules

    original = numba_rules[P.rev_p]

    def marked(lo, eqn, args, outs):
        lo.line("# rev, written by the replacement rule")
        original.rule(lo, eqn, args, outs)

    numba_rules[P.rev_p] = Statements(marked)
    try:
        f = mj.jit(lambda x: x[::-1] * 2.0, backend="numba")
        assert "written by the replacement rule" in f.lower(np.ones(3)).as_text()
        np.testing.assert_array_equal(f(np.arange(3.0)), [4.0, 2.0, 0.0])
    finally:
        numba_rules[P.rev_p] = original




def test_generated_source_uses_the_printers_names():
    """The source reads side by side with the printed optimized program: every equation's
    comment is its printed line, and the variable it assigns has the printed name."""
    def softmax(x):
        e = mnp.exp(x - mnp.max(x, axis=-1, keepdims=True))
        return e / mnp.sum(e, axis=-1, keepdims=True)

    lowered = mj.jit(softmax, backend="numba").lower(np.ones((4, 8)))
    text, printed = lowered.as_text(), str(lowered.jaxpr)
    for line in ("b:f64[4] = reduce_max[axes=(1,)] a", "c:f64[4,1] = reshape[new_sizes=(4, 1)] b",
                 "l:f64[4,1] = reshape[new_sizes=(4, 1)] e"):
        assert line in printed and f"# {line}" in text
    for assignment in ("b = alloc.empty((_n0,), np.float64)", "c = b.reshape((_n0, 1))",
                       "j = vecmath.exp_f64(i)", "d = out0", "m = d  # reused"):
        assert assignment in text
    assert text.rstrip().endswith("return")  # the output is in the caller's buffer out0


def test_a_row_reduction_of_computed_values_computes_the_row_then_folds_it():
    """Softmax's sum of exp: one loop computes a row's elements (LLVM vectorizes it), a second
    folds them in order (a sum LLVM may not reorder would keep the first loop scalar)."""
    def sums(x):
        return mnp.sum(mnp.exp(x) * 2.0, axis=1), mnp.max(mnp.sin(x) + x, axis=(1, 2))

    x = np.random.default_rng(0).normal(size=(6, 5, 4))
    f = mj.jit(sums, backend="numba")
    text = f.lower(x).as_text()
    assert text.count("_row_") >= 2  # both folded values are computed, kept in a scratch row
    got = f(x)
    np.testing.assert_allclose(got[0], np.sum(np.exp(x) * 2.0, axis=1), rtol=1e-14)
    np.testing.assert_array_equal(got[1], np.max(np.sin(x) + x, axis=(1, 2)))
    y = x.copy()
    y[2, 3, 1] = np.nan  # the NaN still wins its row, read back from the scratch row
    row_max = np.asarray(f(y)[1])
    assert np.isnan(row_max[2]) and not np.isnan(np.delete(row_max, 2)).any()


def test_a_compile_error_inside_a_kernel_names_the_member_equation():
    """Members of a fused kernel are described only when an error needs it; it still names
    the member whose code Numba rejected."""
    from minijit.codegen.rules import Expression, numba_rules

    rule = numba_rules[P.tanh_p]
    numba_rules[P.tanh_p] = Expression(lambda a, eqn: f"tanh({a[0]})")  # no such name
    try:
        with pytest.raises(CodegenError, match=r"in the code for `e:f64\[3\] = tanh d`"):
            mj.jit(lambda x: mnp.tanh(x * 2.0) + 1.0, backend="numba")(np.ones(3))
    finally:
        numba_rules[P.tanh_p] = rule


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_math_functions_give_the_bits_of_numpys_in_numba(dtype):
    """Generated code writes `math.sin(x)`, not `np.sin(x)` (cheaper for Numba to type): on a
    scalar of either float dtype Numba calls the same libm function for both."""
    import math

    import numba

    rng = np.random.default_rng(0)
    with np.errstate(over="ignore"):
        x = np.concatenate([[0.0, -0.0, 1.0, -1.0, 1e-310, 710.0, -750.0, np.inf, -np.inf,
                             np.nan, 1e22, -2.5], rng.standard_normal(500) * 10,
                            rng.standard_normal(500) * 1e5]).astype(dtype)
    pairs = [("exp", "exp"), ("log", "log"), ("log1p", "log1p"), ("expm1", "expm1"),
             ("sin", "sin"), ("cos", "cos"), ("tan", "tan"), ("tanh", "tanh"),
             ("sqrt", "sqrt")]
    for np_name, math_name in pairs:
        outs = []
        for fn in (getattr(np, np_name), getattr(math, math_name)):
            @numba.njit(error_model="numpy")
            def loop(x, out, fn=fn):
                for i in range(x.shape[0]):
                    out[i] = fn(x[i])

            out = np.empty_like(x)
            with np.errstate(all="ignore"):
                loop(x, out)
            outs.append(out)
        assert outs[0].dtype == outs[1].dtype == dtype
        assert outs[0].tobytes() == outs[1].tobytes(), np_name
    y = x[::-1].copy()

    @numba.njit(error_model="numpy")
    def atan2s(x, y, a, b):
        for i in range(x.shape[0]):
            a[i] = np.arctan2(x[i], y[i])
            b[i] = math.atan2(x[i], y[i])

    a, b = np.empty_like(x), np.empty_like(x)
    atan2s(x, y, a, b)
    assert a.tobytes() == b.tobytes()


def test_read_only_and_writable_arguments_share_one_compile():
    """Arguments that are not donated are typed read-only (compile.compile_source): a writable
    array converts to that type, so a read-only one no longer compiles the program again."""
    f = mj.jit(lambda x, y: x * 2.0 + y, backend="numba")
    x, y = np.arange(6.0), np.ones(6)
    f(x, y)
    ro = np.broadcast_to(np.arange(6.0), (6,))
    assert not ro.flags.writeable
    np.testing.assert_array_equal(f(ro, y), ro * 2.0 + y)
    (entry,) = f.cache_entries()
    assert len(entry.executable.entry.signatures) == 1


def test_a_misaligned_array_is_copied_at_the_boundary():
    raw = np.zeros(8 * 6 + 1, np.uint8)
    x = raw[1:].view(np.float64)  # six float64 values at an odd address
    x[:] = np.arange(6.0)
    assert not x.flags.aligned
    f = mj.jit(lambda x: x * 2.0 + 1.0, backend="numba")
    np.testing.assert_array_equal(f(x), np.arange(6.0) * 2.0 + 1.0)
    np.testing.assert_array_equal(f(x), np.arange(6.0) * 2.0 + 1.0)  # the fast path's turn


@pytest.mark.parametrize("perm", [(1, 0, 2), (2, 0, 1), (0, 2, 1)])
def test_a_transpose_is_a_loop_nest(perm):
    """Numba took 3.5 to 4.5 s to compile `a.transpose(perm)` in each new process: the
    generated code copies with loops instead (array_rules._transposed)."""
    x = np.arange(24.0).reshape(2, 3, 4)
    f = mj.jit(lambda x: mnp.transpose(x, perm) * 2.0, backend="numba")
    assert ".transpose(" not in f.lower(x).as_text()
    np.testing.assert_array_equal(f(x), np.transpose(x, perm) * 2.0)
    g = mj.jit(lambda x: mnp.argmax(x, axis=1), backend="numba")  # reduces a transposed copy
    assert ".transpose(" not in g.lower(x).as_text()
    np.testing.assert_array_equal(g(x), np.argmax(x, axis=1))
