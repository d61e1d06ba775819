"""The LLVM backend (`minijit/llvm/`): what it compiles, that it computes what `eval_jaxpr`
computes, and that a program it declines runs on Numba with the reason kept.

Every catalogue program also runs through `jit(..., backend="llvm")` in test_catalogue.py
(it is one of `DISTINCT_BACKENDS`); here the list of those LLVM compiles itself is pinned, so that
no program quietly moves to Numba."""

from __future__ import annotations

import gc
import sys
import threading
from pathlib import Path

import numpy as np
import pytest
from catalogue import PROGRAMS

import minijit as mj
import minijit.lax as lax
import minijit.numpy as mnp
from minijit.interpret import eval_jaxpr
from minijit.llvm import LLVMExecutable, LLVMUnsupported
from minijit.llvm.emit import emit_program
from minijit.passes import run_passes

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
from workloads import EagerLax, scale_program  # noqa: E402

# The catalogue programs the LLVM backend compiles itself (the rest go to Numba).
COMPILED_BY_LLVM = {
    "arith_add_sub_mul", "arith_true_divide", "arith_floordiv_mod_int", "arith_power_float",
    "arith_integer_pow", "arith_integer_pow_int32", "arith_unary_float", "arith_unary_int32",
    "arith_reflected_numpy_operand", "compare_int", "compare_float_scalar", "logical_bool",
    "logical_numbers", "bitwise_int", "exp_log", "trig_sqrt", "floor_ceil_sign",
    "floor_ceil_int", "maximum_minimum_clip", "maximum_propagates_nan", "where",
    "where_broadcast", "relu_gelu", "special_float_max_min", "int_division_by_zero",
    "dtype_weak_scalars", "arctan2", "isfinite", "lax_clamp", "dtype_bool_arithmetic",
    "sum_axes", "mean_axes", "max_min_axes", "max_min_int_bool", "prod_axes", "var_std",
    "reduce_empty", "reshape", "transpose", "expand_squeeze", "broadcast_to",
    "concatenate_stack", "concatenate_promotes", "static_slicing", "static_slicing_2d",
    "shape_methods", "iterate_rows", "traced_index_1d[1]", "traced_index_1d[-2]",
    "traced_index_1d[7]", "traced_index_1d[-10]", "traced_index_2d_row", "traced_index_two",
    "at_set_static", "at_set_row_2d", "at_traced[2]", "at_traced[-1]", "at_traced[9]",
    "at_traced[-9]", "at_traced_int32_dtype", "creation_static_n", "arange", "linspace",
    "scalar_argument", "zero_d_array_argument", "static_int_loop", "static_string_mode",
    "cond[+1]", "cond[-1]", "switch[0]", "switch[2]", "switch[5]", "switch[-1]", "while_loop",
    "fori_loop_traced_bound", "split_swapaxes_moveaxis", "nested_jit_static_kwargs_pytree",
    "nested_jit_in_fori_and_cond", "passes_float_identities", "passes_int_identities",
    "passes_dead_code", "buffer_reuse_chain", "outputs_alias_inputs",
    "broadcast_then_reduce_fusion", "softmax", "variance_middle_axis", "layer_norm_axis1",
    "reduce_twice_middle_axes", "layer_norm", "logsumexp", "mean_squared_error",
    "polyval_static_loop", "cumsum_unrolled", "pairwise_distances", "normalize_rows",
    "pytree_in_out", "carries_in_place", "pad", "written_in_place", "associative_scan",
    "nonzero_sized",
}


def _executable(jf, *args):
    """The executable of `jf`'s one cache entry, after a call on `args` (if any)."""
    if args:
        jf(*args)
    (entry,) = jf.cache_entries()
    return entry.executable


def _optimized(fn, *args, **kw):
    return run_passes(mj.make_jaxpr(fn, **kw)(*args))


@pytest.mark.parametrize("prog", PROGRAMS, ids=[p.name for p in PROGRAMS])
def test_which_catalogue_programs_llvm_compiles(prog):
    """LLVM compiles exactly the listed programs; for every other one it names the equation
    it cannot compile, and that program runs on Numba's executable."""
    args = prog.make_args()
    jf = mj.jit(prog.minijit_fn(), static_argnums=prog.static_argnums, backend="llvm")
    executable = _executable(jf, *args)
    if prog.name in COMPILED_BY_LLVM:
        assert isinstance(executable, LLVMExecutable), executable.llvm_declined
        assert executable.llvm_declined is None
        assert "define i8* @\"entry\"" in executable.as_text()
    else:
        assert not isinstance(executable, LLVMExecutable)
        # where: the equation as the IR prints it, or the argument or result
        assert " in `" in executable.llvm_declined or " in the program's " in \
            executable.llvm_declined


@pytest.mark.parametrize("k", [1, 2, 3])
def test_nested_control_flow_of_the_benchmark(k):
    """The compile-speed benchmark's control flow, 1 to 3 deep, against NumPy and against
    `eval_jaxpr` (the same C library `sin` as NumPy here or not: 1e-12 relative)."""
    x = np.linspace(-1.0, 1.0, 1000)
    jf = mj.jit(scale_program(mnp, lax, "nested", k), backend="llvm")
    got = np.asarray(jf(x))
    assert isinstance(_executable(jf, x), LLVMExecutable)
    np.testing.assert_allclose(got, scale_program(np, EagerLax, "nested", k)(x), rtol=1e-12)
    closed = _optimized(scale_program(mnp, lax, "nested", k), x)
    np.testing.assert_allclose(got, eval_jaxpr(closed.jaxpr, closed.consts, x)[0], rtol=1e-12)


def test_a_carry_that_swaps_its_parts():
    """(a, b) -> (b, a + 1): each slot is written only after every slot was read."""
    def swap(a, b):
        def body(i, c):
            return c[1], c[0] + 1.0
        return lax.fori_loop(0, 3, body, (a, b))

    def swap_while(a, s):
        def body(c):
            return c[0] + 1, c[2], c[1] * 2.0, c[4], c[3]
        return lax.while_loop(lambda c: c[0] < 5, body, (0, a, a + 1.0, s, s - 1.0))

    a, b = np.arange(4.0), np.arange(4.0) * 10
    got = _check_like_interpreter(swap, a, b)
    np.testing.assert_array_equal(got[0], b + 1.0)  # (b, a+1), (a+1, b+1), (b+1, a+2)
    np.testing.assert_array_equal(got[1], a + 2.0)
    _check_like_interpreter(swap_while, a, np.float64(2.5))


def test_cond_index_out_of_range_is_clamped():
    """`lax.switch`'s index picks the first branch below 0 and the last above, as `cond`'s
    impl rule does."""
    def f(i, x):
        return lax.switch(i, [lambda v: v + 1.0, lambda v: v * 2.0, lambda v: -v], x)

    jf = mj.jit(f, backend="llvm")
    x = np.arange(3.0)
    for i, want in [(-5, x + 1.0), (0, x + 1.0), (1, x * 2.0), (2, -x), (7, -x)]:
        np.testing.assert_array_equal(jf(np.int32(i), x), want)
    assert isinstance(_executable(jf, np.int32(0), x), LLVMExecutable)


def _check_like_interpreter(fn, *args, rtol=0.0):
    """`fn` on the LLVM backend against `eval_jaxpr`: the same dtypes and shapes, the same
    values (bit for bit, unless `rtol` allows rounding), and no argument written."""
    jf = mj.jit(fn, backend="llvm")
    snapshot = [np.array(a, copy=True) for a in args]
    got = jf(*args)
    assert isinstance(_executable(jf, *args), LLVMExecutable), \
        _executable(jf, *args).llvm_declined
    closed = _optimized(fn, *args)
    want = eval_jaxpr(closed.jaxpr, closed.consts, *args)
    got = got if isinstance(got, (list, tuple)) else [got]
    assert len(got) == len(want)
    for g, w in zip(got, want):
        g = np.asarray(g)
        assert g.dtype == w.dtype and g.shape == w.shape
        if rtol:
            np.testing.assert_allclose(g, w, rtol=rtol)
        else:
            np.testing.assert_array_equal(g, w)
    for a, s in zip(args, snapshot):
        np.testing.assert_array_equal(a, s)  # arguments are never written
    return got


def test_nan_and_signed_zeros_in_max_min_and_reductions():
    x = np.array([0.0, -0.0, np.nan, 1.0, -2.0])
    y = np.array([-0.0, 0.0, 3.0, np.nan, -1.0])

    def f(x, y):
        return mnp.maximum(x, y), mnp.minimum(x, y), mnp.max(x), mnp.min(y), mnp.sum(x)

    got = _check_like_interpreter(f, x, y)
    assert np.signbit(got[0][:2]).tolist() == [False, False]
    assert np.signbit(got[1][:2]).tolist() == [True, True]
    zeros = np.array([0.0, -0.0, -0.0])
    got = _check_like_interpreter(lambda z: (mnp.max(z), mnp.min(z)), zeros)
    assert not np.signbit(got[0]) and np.signbit(got[1])


def test_float_to_int_saturates_as_xla():
    x = np.array([np.nan, np.inf, -np.inf, 3e10, -3e10, 2.7, -2.7, 0.5], dtype=np.float64)
    got = _check_like_interpreter(lambda v: (v.astype(mnp.int32), v.astype(mnp.int64)), x)
    assert got[0].tolist() == [0, 2**31 - 1, -2**31, 2**31 - 1, -2**31, 2, -2, 0]


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.int64, np.bool_])
def test_dtypes_through_loops_and_cond(dtype):
    x = (np.arange(6) % 3).astype(dtype)

    def f(x):
        def body(i, c):
            return mnp.where(c > 0, c, x) if x.dtype == np.bool_ else c + x
        y = lax.fori_loop(0, 3, body, x)
        return lax.cond(mnp.any(y), lambda v: v, lambda v: x, y), mnp.max(y), y.astype(mnp.float32)

    _check_like_interpreter(f, x)


def test_zero_sizes_ranks_and_outputs_that_alias():
    """Empty arrays, rank-0 arguments and results, a constant captured from Python, and
    results that are an argument, a literal, or one value twice: each result is its own
    buffer, and no argument is written."""
    captured = np.linspace(0.0, 1.0, 5)

    def f(x, s, e):
        y = x * s + captured
        return y, y, x, s, 2.0, e * 2.0, mnp.sum(e)

    got = _check_like_interpreter(f, np.arange(5.0), np.float64(3.0), np.zeros((0, 3)))
    assert not np.shares_memory(got[0], got[1])
    assert got[5].shape == (0, 3)


def test_memory_error_when_temporaries_do_not_fit():
    """An 80 TB carry cannot be allocated: a MemoryError, not a crash, and the function
    still works for a size that fits."""
    def f(x):
        c = lax.fori_loop(0, 1, lambda i, c: c + mnp.sum(x), mnp.zeros((10**13,)))
        return mnp.max(c)

    jf = mj.jit(f, backend="llvm")
    with pytest.raises(MemoryError):
        jf(np.ones(3))
    assert isinstance(_executable(jf), LLVMExecutable)


def test_sixteen_threads_call_one_function_cold_and_warm():
    def f(x):
        return lax.fori_loop(0, 4, lambda i, c: mnp.sin(c) * 0.5 + x, x)

    jf = mj.jit(f, backend="llvm")
    x = np.linspace(-1.0, 1.0, 257)
    want = _check_like_interpreter(f, x)[0]
    for rounds in (1, 20):  # cold: all at once on an empty cache; warm: many calls each
        jf = mj.jit(f, backend="llvm")
        errors = _in_sixteen_threads(lambda jf=jf, rounds=rounds: [
            np.testing.assert_array_equal(jf(x), want) for _ in range(rounds)])
        assert not errors, errors[0]
        assert jf.trace_count == 1


def _in_sixteen_threads(work) -> list:
    """Run `work` in 16 threads released at once; the exceptions they raised."""
    barrier, errors = threading.Barrier(16), []

    def run():
        barrier.wait()
        try:
            work()
        except Exception as e:  # noqa: BLE001 - returned to the test
            errors.append(e)

    threads = [threading.Thread(target=run) for _ in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return errors


def test_the_machine_code_lives_as_long_as_a_reference_to_its_call():
    """A call kept after its function, its cache and its executable are gone still runs."""
    jf = mj.jit(lambda v: mnp.sin(v) * 2.0, backend="llvm")
    x = np.linspace(0.0, 1.0, 9)
    call = _executable(jf, x).fast_call
    del jf
    for _ in range(3):
        gc.collect()
    np.testing.assert_array_equal(call([x])[0], np.sin(x) * 2.0)


def test_the_same_program_traced_again_reuses_its_machine_code():
    """A new function of the same program (a notebook cell run again) compiles nothing; a
    program that differs in a constant or a shape compiles its own."""
    def make(c):
        return mj.jit(lambda v: lax.fori_loop(0, 3, lambda i, u: mnp.sin(u) + c, v),
                      backend="llvm")

    x = np.linspace(0.0, 1.0, 17)
    first, again, other = make(0.5), make(0.5), make(0.25)
    compiled = [_executable(f, x).compiled for f in (first, again, other)]
    assert compiled[0] is compiled[1] and compiled[2] is not compiled[0]
    assert _executable(make(0.5), x[:5]).compiled is not compiled[0]
    np.testing.assert_array_equal(again(x), first(x))


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int32, np.int64])
def test_broadcasts_and_reductions_over_some_axes(dtype):
    """Operands broadcast along every kind of axis, and reductions over leading, middle,
    trailing and several axes, fused after elementwise work or alone."""
    rng = np.random.default_rng(0)
    x = (rng.normal(size=(3, 4, 5)) * 10).astype(dtype)
    row = (rng.normal(size=5) * 10).astype(dtype)
    col = (rng.normal(size=(3, 1, 1)) * 10).astype(dtype)

    def f(x, row, col):
        y = x * row + col  # (3, 4, 5) with (5,) and (3, 1, 1)
        return (y, mnp.sum(y, axis=0), mnp.max(x, axis=1), mnp.min(y, axis=2),
                mnp.sum(x * 2, axis=(0, 2)), mnp.max(y, axis=(1, 2), keepdims=True),
                mnp.prod(mnp.sign(x), axis=1))

    # sums in another order than NumPy's pairwise one: equal up to rounding
    _check_like_interpreter(f, x, row, col, rtol=2e-6 if dtype == np.float32 else 1e-12)


def test_nan_and_signed_zeros_in_reductions_over_some_axes():
    x = np.array([[0.0, -0.0, 1.0], [-0.0, -0.0, np.nan], [-0.0, 0.0, -1.0]])

    def f(x):
        return mnp.max(x, axis=0), mnp.min(x, axis=0), mnp.max(x, axis=1), mnp.sum(x, axis=0)

    got = _check_like_interpreter(f, x)
    assert np.signbit(got[0]).tolist() == [False, False, False]
    assert np.isnan(got[2][1])


def test_reshape_shares_the_buffer_and_a_carry_stays_right():
    """A reshaped carry returned as the next carry (the buffer is its own), and the rank-0
    and one-element reshapes that move a value between a register and memory."""
    def f(x, s):
        def body(i, c):
            u, t = c
            return (u * 0.5 + 1.0).reshape(4, 3).reshape(12), t + u.reshape(3, 4).sum()
        u, t = lax.fori_loop(0, 5, body, (x, s))
        return u.reshape(2, 6), t.reshape(1, 1), mnp.sum(x).reshape(1)[0] + t

    _check_like_interpreter(f, np.arange(12.0), np.float64(0.5))


@pytest.mark.parametrize("start", [-7, -1, 0, 2, 3, 9])
def test_windows_move_the_right_elements(start):
    """Static and dynamic slices (starts clamped so the window fits), an update written into
    a copy, transposes, reversals and concatenations, on a 3-D array; `start` is traced."""
    x = np.arange(60.0).reshape(3, 4, 5)

    def f(x, i):
        j = i.astype(mnp.int32)
        return (x[:, 1:4:2, ::3], lax.dynamic_slice(x, (i, j, i), (2, 2, 3)),
                lax.dynamic_update_slice(x, -x[:1, :2, :2], (j, i, i)),
                x.transpose(2, 0, 1), mnp.flip(x, axis=(0, 2)),
                mnp.concatenate([x, x[:, :1] * 2.0], axis=1))

    _check_like_interpreter(f, x, np.int64(start))


@pytest.mark.parametrize("dtype", [np.float64, np.int32, np.bool_])
def test_pad_with_low_high_and_interior_padding(dtype):
    """`lax.pad` with low, high and interior padding, negative padding (a `slice` of the
    padded result), and an operand of no elements, against the interpreter; on Numba too."""
    x = (np.arange(12) % 3 - 1).reshape(3, 4).astype(dtype)

    def f(x, fill):
        return (lax.pad(x, fill, ((1, 2, 1), (0, 3, 2))),
                lax.pad(x, fill, ((0, 1, 0), (2, 0, 1))),
                lax.pad(x, fill, ((0, 0, 2), (0, 0, 0))),
                lax.pad(x[:, :0], fill, ((1, 1, 1), (2, 0, 3))),
                lax.pad(x, fill, ((-1, 1, 0), (2, -2, 1))),
                lax.pad(x, fill, ((-2, -1, 2), (0, 0, 0))))

    _check_like_interpreter(f, x, np.ones((), dtype))
    on_numba = mj.jit(f, backend="numba")(x, np.ones((), dtype))
    for got, want in zip(on_numba, mj.jit(f, backend="interpreter")(x, np.ones((), dtype))):
        np.testing.assert_array_equal(got, want)
    jf = mj.jit(f, backend="llvm")
    assert isinstance(_executable(jf, x, np.ones((), dtype)), LLVMExecutable)


def test_a_loop_that_fills_an_array_one_element_at_a_time():
    def fill(x):
        def step(i, u):
            return u.at[i].set(u[i - 1] * 0.5 + x[i])
        return lax.fori_loop(1, x.shape[0], step, x * 0.0)

    _check_like_interpreter(fill, np.linspace(1.0, 2.0, 33))


@pytest.mark.parametrize("dtype", [np.int32, np.int64])
def test_integer_division_corners(dtype):
    """Every sign, a zero divisor and int_min / -1: lax.div and lax.rem as XLA (x / 0 is -1,
    x rem 0 is x), `//` and `%` as NumPy (x // 0 and x % 0 are 0), all wrapping."""
    low = np.iinfo(dtype).min
    x = np.array([7, -7, 7, -7, 0, 5, -5, low, low, low, 3], dtype=dtype)
    y = np.array([2, 2, -2, -2, 3, 0, 0, -1, 1, 0, low], dtype=dtype)

    def f(x, y):
        return lax.div(x, y), lax.rem(x, y), x // y, x % y

    got = _check_like_interpreter(f, x, y)
    assert got[0][5] == -1 and got[1][5] == 5 and got[2][5] == 0 and got[3][5] == 0
    assert got[0][7] == low and got[2][7] == low and got[1][7] == 0 and got[3][7] == 0


def test_lower_as_text_is_what_runs():
    """`f.lower(x).as_text()` is the IR the executable was compiled from, or, for a program
    LLVM leaves to Numba, the Numba backend's source."""
    x = np.linspace(0.0, 1.0, 6)

    def f(v):
        return lax.fori_loop(0, 3, lambda i, u: mnp.sin(u) + 1.0, v)

    jf = mj.jit(f, backend="llvm")
    assert jf.lower(x).as_text() == _executable(jf, x).as_text()
    assert "define i8* @\"entry\"" in jf.lower(x).as_text()

    def g(v):
        return mnp.dot(v.reshape(2, 3), v.reshape(3, 2))

    assert (mj.jit(g, backend="llvm").lower(x).as_text()
            == mj.jit(g, backend="numba").lower(x).as_text())


def test_what_llvm_declines_runs_on_numba_with_the_reason():
    def f(x):
        return mnp.dot(x.reshape(2, 3), x.reshape(3, 2))

    jf = mj.jit(f, backend="llvm")
    x = np.arange(6.0) ** 2
    np.testing.assert_array_equal(jf(x), x.reshape(2, 3) @ x.reshape(3, 2))
    executable = _executable(jf, x)
    assert "the primitive dot_general, in `" in executable.llvm_declined
    with pytest.raises(LLVMUnsupported, match="dot_general"):
        emit_program(_optimized(f, x))
    threaded = mj.jit(lambda v: v * 2.0, backend="llvm", parallel=True)
    assert "parallel=True" in _executable(threaded, x).llvm_declined


_WITHOUT_NUMBA = """
import sys, threading
import numpy as np
import minijit as mj
import minijit.numpy as mnp


def gelu(x):
    return 0.5 * x * (1 + mnp.tanh(0.7978845608 * (x + 0.044715 * x**3)))


x = np.linspace(-3.0, 3.0, 1001)
want = 0.5 * x * (1 + np.tanh(0.7978845608 * (x + 0.044715 * x**3)))
first = mj.jit(gelu)(x)
assert np.allclose(first, want, rtol=1e-14, atol=1e-15), "llvm before numba"
assert "numba" not in sys.modules, "the LLVM backend's program imported Numba"
numba_made = mj.jit(gelu, backend="numba")(x)
assert "numba" in sys.modules
assert np.array_equal(numba_made, first), "the two backends differ"
again = mj.jit(lambda v: gelu(v) + 0.0)(x)  # another program, on LLVM, Numba now loaded
assert np.array_equal(again, first), "llvm after numba"

# 16 threads at once, in a process where Numba is loaded by one of them: LLVM and Numba
# compiles of new programs, never two at a time (llvm/engine.py), all finishing.
results, barrier = {}, threading.Barrier(16)


def work(k):
    barrier.wait()
    f = mj.jit(lambda v: gelu(v) * (k + 1), backend="numba" if k % 2 else "llvm")
    results[k] = np.array_equal(f(x), first * (k + 1))


threads = [threading.Thread(target=work, args=(k,)) for k in range(16)]
for t in threads:
    t.start()
for t in threads:
    t.join(timeout=240)
assert len(results) == 16 and all(results.values()), results
print("ok")
"""


def test_a_program_the_llvm_backend_compiles_does_not_import_numba(tmp_path):
    """A new process's first call on the LLVM backend imports no Numba (about 0.4 s of it:
    `codegen/vecmath/deferred.py`); the Numba backend loaded later computes the same values;
    LLVM programs compiled after it still do; and compiles of both kinds from 16 threads at
    once, Numba loaded by one of them, all finish right (`llvm/engine.compiling`)."""
    import os
    import subprocess

    env = dict(os.environ, MINIJIT_CACHE_DIR=str(tmp_path / "cache"))
    run = subprocess.run([sys.executable, "-c", _WITHOUT_NUMBA], capture_output=True,
                         text=True, timeout=300, env=env)
    assert run.returncode == 0 and run.stdout.strip() == "ok", run.stdout + run.stderr
