"""Numeric corner cases where a backend used to disagree with NumPy or JAX.

Each program runs three ways: eagerly (minijit.numpy on NumPy), jitted on the interpreter
(eval_jaxpr) and jitted on Numba; all three must give the same dtype and the same bits
(sign of zero included). The expected values are NumPy's, or JAX's (with x64 on) where the
two differ and minijit follows JAX; the comments say which, as measured with jax 0.10.2.
"""

from __future__ import annotations

import numpy as np
import pytest

import minijit as mj
import minijit.numpy as mnp

BACKENDS = ("interpreter", "numba")
INT64_MIN = np.iinfo(np.int64).min


@pytest.fixture(autouse=True)
def private_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("MINIJIT_CACHE_DIR", str(tmp_path / "cache"))


def three_ways(f, *args) -> dict[str, list[np.ndarray]]:
    """`f(*args)` eagerly and jitted on each backend, each as a list of NumPy arrays."""
    runs = {"eager": f(*args)}
    for backend in BACKENDS:
        runs[backend] = mj.jit(f, backend=backend)(*args)
    return {k: [np.asarray(o) for o in (v if isinstance(v, tuple) else (v,))]
            for k, v in runs.items()}


def assert_bits_equal(got, want, how: str = ""):
    """Same dtype, shape and values; floats bit for bit (so -0.0 differs from 0.0)."""
    got, want = np.asarray(got), np.asarray(want)
    assert (got.dtype, got.shape) == (want.dtype, want.shape), how
    if want.dtype.kind == "f":
        np.testing.assert_array_equal(np.signbit(got), np.signbit(want), err_msg=how)
    np.testing.assert_array_equal(got, want, err_msg=how)


def assert_all_give(f, args, *expected):
    for how, outs in three_ways(f, *args).items():
        assert len(outs) == len(expected), how
        for got, want in zip(outs, expected):
            assert_bits_equal(got, want, how)


# --------------------------------------------------------------------------- bool arithmetic


MASK = np.array([True, False, True, False])


def test_bool_plus_bool_is_logical_or():
    # Numba used to store True + True as the byte 2: it printed as True but summed as 2.
    assert_all_give(lambda m: mnp.sum(mnp.add(m, m)), (MASK,), np.sum(MASK + MASK))
    assert_all_give(lambda m: mnp.logical_and(mnp.add(m, m), m), (MASK,),
                    np.logical_and(MASK + MASK, MASK))


@pytest.mark.parametrize("op", [mnp.add, mnp.multiply, mnp.maximum, mnp.minimum],
                         ids=lambda op: op.__name__)
@pytest.mark.parametrize("rank0", [False, True], ids=["array", "scalar"])
def test_bool_arithmetic_gives_real_bools(op, rank0):
    """+ * max min on bools are or, and, or, and: every stored byte is 0 or 1."""
    x = np.array([True, True, False, False])
    y = np.array([True, False, True, False])
    np_op = getattr(np, op.__name__)
    for a, b in ([(x[i], y[i]) for i in range(4)] if rank0 else [(x, y)]):
        a, b = np.asarray(a), np.asarray(b)
        outs = three_ways(lambda a, b: (op(a, b), mnp.sum(op(a, b))), a, b)
        for how, (out, total) in outs.items():
            assert_bits_equal(out, np_op(a, b), how)
            assert out.view(np.uint8).max(initial=0) <= 1, how
            assert_bits_equal(total, np.sum(np_op(a, b)), how)


# --------------------------------------------------------------------------- integers


@pytest.mark.parametrize("dtype", [np.int8, np.int16, np.int32, np.int64])
def test_int_min_floor_divide_minus_one_wraps_around(dtype):
    # NumPy (and JAX) wrap around to int_min; Numba alone gave 0 for int64.
    x = np.array([np.iinfo(dtype).min, 7, -7, 0], dtype)
    with np.errstate(over="ignore"):
        assert_all_give(lambda x: (mnp.floor_divide(x, -1), mnp.remainder(x, -1)), (x,),
                        np.floor_divide(x, dtype(-1)), np.remainder(x, dtype(-1)))


HUGE_EXPONENTS = [100, 70000, 2**40 + 3, 2**62, 2**63 - 1]


@pytest.mark.parametrize("dtype", [np.int64, np.uint64, np.int32, np.uint32, np.int8])
def test_integer_power_with_huge_exponents_wraps_like_numpy(dtype):
    # Numba's integer ** switches to float pow above 2**16 and gave int64_min for 2 ** 2**62;
    # NumPy squares repeatedly with wraparound: 2 ** 100 is 0, 3 ** 2**62 is 1.
    info = np.iinfo(dtype)
    bases = np.array([b for b in (2, 3, -1, -2, 0, 1, 7, -3) if info.min <= b], dtype)
    exps = [e for e in HUGE_EXPONENTS if e <= info.max]
    x = np.repeat(bases, len(exps))
    y = np.tile(np.array(exps, dtype), len(bases))
    assert_all_give(lambda x, y: mnp.power(x, y), (x, y), np.power(x, y))
    wide = np.uint64 if info.min == 0 else np.int64
    for e in exps:  # a Python int exponent is a param (integer_pow)
        want = np.power(bases, np.asarray(e, wide)).astype(dtype)
        assert_all_give(lambda x, e=e: mnp.power(x, e), (bases,), want)


@pytest.mark.parametrize("fn", [mnp.floor, mnp.ceil], ids=lambda f: f.__name__)
def test_floor_and_ceil_of_bools_are_bools(fn):
    # NumPy and JAX (jnp.floor, jnp.ceil, jnp.trunc) return the bools unchanged.
    assert_all_give(fn, (MASK,), getattr(np, fn.__name__)(MASK))


@pytest.mark.parametrize("reduce", [mnp.sum, mnp.prod, mnp.max, mnp.min],
                         ids=lambda f: f.__name__)
def test_reducing_a_weak_int_gives_a_strong_int64(reduce):
    # JAX: jnp.sum(3) is int64 and not weak (jnp converts with weak_type=False before
    # reducing), so jit(lambda x, y: jnp.sum(x) + y)(3, np.int32(1)) is int64.
    assert_all_give(lambda x, y: mnp.add(reduce(x), y), (3, np.int32(1)), np.int64(4))
    (aval,) = mj.make_jaxpr(reduce)(3).out_avals
    assert (aval.dtype, aval.weak_type) == (np.dtype(np.int64), False)
    assert reduce(3).dtype == np.int64


# --------------------------------------------------------------------------- uint8 and ints


U8 = np.array([1, 128, 255], np.uint8)


def test_uint8_divided_by_256():
    # NumPy and JAX: [0.0039 0.5 0.996], NumPy in float64, JAX (and minijit) in float32.
    want = (U8 / 256).astype(np.float32)
    assert_all_give(lambda x: mnp.true_divide(x, 256), (U8,), want)
    assert_all_give(lambda x, d: mnp.true_divide(x, d), (U8, 256), want)
    assert_all_give(lambda x, d: mnp.true_divide(d, x), (U8, 256),
                    (256 / U8).astype(np.float32))


def test_uint8_compared_with_out_of_range_int_wraps_like_jax():
    # JAX converts the Python int to uint8 with wraparound: -1 is 255, 256 is 0.
    # u > -1 -> [F F F], u == -1 -> [F F T], u < -1 -> [T T F], u > 256 -> [T T T].
    # (NumPy 2 compares exactly: u > -1 is all True.)
    def compare(x, n):
        return mnp.greater(x, n), mnp.equal(x, n), mnp.less(n, x), mnp.not_equal(x, n)

    for n, wrapped in ((-1, 255), (256, 0), (-255, 1)):
        want = compare(U8, np.uint8(wrapped))
        assert_all_give(lambda x, n=n: compare(x, n), (U8,), *want)  # closed over
        assert_all_give(compare, (U8, n), *want)  # a traced (weakly typed) argument


# --------------------------------------------------------------------------- signed zeros


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("rank0", [False, True], ids=["array", "scalar"])
def test_minimum_and_maximum_of_signed_zeros(dtype, rank0):
    # JAX (IEEE 754 minimum/maximum): minimum(-0.0, 0.0) and minimum(0.0, -0.0) are -0.0,
    # maximum is 0.0, in either order. NumPy returns the second operand on a tie (so its
    # result depends on the order); min and max are COMMUTATIVE, so minijit follows JAX.
    neg, pos = (np.asarray(v, dtype) for v in (-0.0, 0.0))
    if not rank0:
        neg, pos = np.full(3, neg), np.full(3, pos)
    for x, y in ((neg, pos), (pos, neg)):
        assert_all_give(lambda x, y: (mnp.minimum(x, y), mnp.maximum(x, y)), (x, y),
                        neg, pos)
    both = lambda x, y: (mnp.minimum(x, y), mnp.minimum(y, x),  # noqa: E731
                         mnp.maximum(x, y), mnp.maximum(y, x))
    assert_all_give(both, (neg, pos), neg, neg, pos, pos)
    assert_all_give(both, (neg, neg), neg, neg, neg, neg)
    assert_all_give(both, (pos, pos), pos, pos, pos, pos)


def test_minimum_and_maximum_still_propagate_nan():
    x = np.array([np.nan, 1.0, np.nan, -0.0])
    y = np.array([1.0, np.nan, np.nan, np.nan])
    assert_all_give(lambda x, y: (mnp.minimum(x, y), mnp.maximum(y, x)), (x, y),
                    np.minimum(x, y), np.maximum(y, x))


# --------------------------------------------------------------------------- negative powers


def test_negative_integer_powers():
    """Eagerly NumPy's ValueError; under jit both backends give trunc(1 / x**|y|).

    JAX: jnp.array(2) ** -1 raises TypeError while tracing (integer_pow); with a traced
    exponent it gives 1 for 1**-1, -1 for (-1)**-1, 0 for 0**-1 (and int64_min for 2**-1).
    """
    x = np.array([2, 1, -1, 0, -1, -3])
    y = np.array([-1, -1, -1, -1, -2, -3])
    with pytest.raises(ValueError, match="negative integer powers"):
        mnp.power(x, y)
    with pytest.raises(ValueError, match="negative integer powers"):
        mnp.power(x, -1)
    for backend in BACKENDS:
        got = mj.jit(mnp.power, backend=backend)(x, y)
        assert_bits_equal(got, np.array([0, 1, -1, 0, 1, 0]), backend)
        for dtype in (np.int8, np.int32):
            got = mj.jit(mnp.power, backend=backend)(x.astype(dtype), y.astype(dtype))
            assert_bits_equal(got, np.array([0, 1, -1, 0, 1, 0], dtype), backend)
        with pytest.raises(ValueError, match="negative integer powers"):
            mj.jit(lambda x: x ** -1, backend=backend)(x)


# --------------------------------------------------------------------------- masked arrays

MASKED = np.ma.masked_array([1.0, 2.0, 3.0], mask=[False, True, False])


@pytest.mark.parametrize("backend", BACKENDS)
def test_masked_arrays_are_rejected_by_jit(backend):
    with pytest.raises(TypeError, match=r"argument `w` of `scale` is a masked array.*filled"):
        def scale(w):
            return w * 2

        mj.jit(scale, backend=backend)(MASKED)
    with pytest.raises(TypeError, match=r"argument `params\['w'\]`.*masked.*np\.asarray"):
        mj.jit(lambda params: params["w"] + 1, backend=backend)({"w": MASKED})


@pytest.mark.parametrize("fn", [mnp.sum, mnp.asarray, lambda x: mnp.add(x, 1.0),
                                lambda x: mnp.add(np.ones(3), x)])
def test_masked_arrays_are_rejected_by_mnp(fn):
    with pytest.raises(TypeError, match=r"masked array.*filled.*np\.asarray"):
        fn(MASKED)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name", ["sum", "prod", "dot", "mul", "sub"])
def test_int64_overflow_wraps_and_later_code_sees_the_wrapped_value(backend, name):
    """Signed int64 overflow wraps (NumPy, JAX). Numba's int64 `+ - *` carry LLVM's `nsw`
    flag, which makes overflow undefined: the sum below came out right, but `sum > 0` was
    folded to False. A comparison must see the wrapped value, in reductions too."""
    x = np.array([[-2**63], [0], [-2]], np.int64)
    ops = {"sum": lambda x: mnp.sum(x), "prod": lambda x: mnp.prod(x - 1),
           "dot": lambda x: (x.T @ x)[0, 0], "mul": lambda x: x * 3, "sub": lambda x: x - 3}
    op = ops[name]
    with np.errstate(over="ignore"):
        want = op(x), op(x) > 0
    got = mj.jit(lambda x: (op(x), op(x) > 0), backend=backend)(x)
    for g, w in zip(got, want):
        assert_bits_equal(g, w, name)


@pytest.mark.parametrize("backend", BACKENDS)
def test_int64_min_as_a_literal_stays_int64(backend):
    # Written as -9223372036854775808 in generated code, Numba read -(2**63) as a uint64.
    f = mj.jit(lambda a: a + -9223372036854775808, backend=backend)
    with np.errstate(over="ignore"):
        want = np.array([-1, 8]) + np.int64(-(2**63))
    assert_bits_equal(f(np.array([-1, 8])), want)


@pytest.mark.parametrize("dtype", [np.uint8, np.uint16, np.uint32, np.uint64])
def test_sign_of_unsigned_ints_with_the_top_bit_set_is_one(dtype):
    x = np.array([np.iinfo(dtype).max, np.iinfo(dtype).max // 2 + 1, 1, 0], dtype)
    assert_all_give(mnp.sign, (x,), np.sign(x))


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name", ["argmax", "argmin"])
def test_argmax_of_an_empty_axis_is_a_value_error(backend, name):
    """NumPy and JAX: ValueError "attempt to get argmax of an empty sequence"."""
    f = getattr(mnp, name)
    with pytest.raises(ValueError, match="empty sequence"):
        mj.jit(f, backend=backend)(np.zeros((0,)))
    with pytest.raises(ValueError, match="empty sequence"):
        f(np.zeros((2, 0)), axis=1)


@pytest.mark.parametrize("name", ["logical_and", "logical_or", "logical_xor"])
def test_logical_ops_reject_ints_beyond_int64(name):
    """JAX: OverflowError for `jnp.logical_or(np.array([1, 2]), 2**64 - 1)`."""
    with pytest.raises(OverflowError, match="int64"):
        getattr(mnp, name)(np.array([1, 2]), 2**64 - 1)


def test_small_integer_powers_wrap_by_definition_in_generated_code():
    """`integer_pow` with y <= 4 is written as products; on int64 those go through `wrapping`
    like `mul` does (simplify usually rewrites x**3 to muls first; this lowers it as traced)."""
    from minijit.codegen import lower_jaxpr

    x = np.array([2**62, 3], np.int64)
    text = lower_jaxpr(mj.make_jaxpr(lambda x: mj.lax.integer_pow(x, 3))(x)).text
    assert "np.uint64" in text
    text32 = lower_jaxpr(mj.make_jaxpr(lambda x: mj.lax.integer_pow(x, 3))(x.astype(np.int32))).text
    assert "np.uint64" not in text32  # narrower ints compute in int64 and cannot overflow
