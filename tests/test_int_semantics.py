"""JAX's integer semantics for shifts and dtype conversions, eagerly and under jit.

The expected values are JAX 0.10.2's own outputs, measured and checked in as tables in
`tests/jax_int_semantics.py` (its docstring says how to regenerate them). Every case runs three
ways, eagerly and under `mj.jit` with each backend, and must give JAX's values and dtypes bit
for bit: where C, NumPy and LLVM leave a result undefined (a shift by the bit width, a NaN cast
to int), minijit computes XLA's defined one. No warning may reach the user on the way.
"""

from __future__ import annotations

import numpy as np
import pytest
from jax_int_semantics import (
    DTYPES,
    FLOAT32_BITS,
    FLOAT64_TO_FLOAT32,
    FLOATS,
    FROM_FLOAT,
    FROM_INT,
    INT_DTYPES,
    INTS,
    OPERANDS,
    OPERATORS,
    SHIFT_DTYPES,
    SHIFT_INPUTS,
    SHIFT_PRIMITIVES,
    SHIFTS,
)

import minijit as mj
import minijit.numpy as mnp
from minijit import lax
from minijit.core import get_aval

pytestmark = pytest.mark.filterwarnings("error")  # a RuntimeWarning from a cast fails a test

WAYS = ("eager", "interpreter", "numba")


def run(way: str, f, *args) -> list[np.ndarray]:
    """`f(*args)` eagerly (on minijit arrays) or jitted with backend `way`, as NumPy arrays."""
    if way == "eager":
        out = f(*map(mnp.asarray, args))
    else:
        out = mj.jit(f, backend=way)(*args)
    return [np.asarray(o) for o in (out if isinstance(out, tuple) else (out,))]


def assert_exact(got: np.ndarray, want, dtype, what: str) -> None:
    want = np.asarray(want, dtype=dtype)
    assert got.dtype == want.dtype, f"{what}: dtype {got.dtype}, JAX gives {want.dtype}"
    assert got.shape == want.shape, f"{what}: shape {got.shape}, JAX gives {want.shape}"
    # bit for bit: NaN equals NaN, and -0.0 differs from 0.0
    assert got.tobytes() == want.tobytes(), (
        f"{what}:\n  got  {got.tolist()}\n  JAX  {want.tolist()}")


def _dtype_of(x) -> str:
    aval = get_aval(x)
    return aval.dtype.name + ("*" if aval.weak_type else "")


# --------------------------------------------------------------------------- shifts


def _shift_grid(dtype: str) -> tuple[np.ndarray, np.ndarray]:
    """Every value of SHIFT_INPUTS shifted by every amount: one row per amount."""
    xs, amounts = SHIFT_INPUTS[dtype]
    return np.array([xs] * len(amounts), dtype), np.array([[a] * len(xs) for a in amounts],
                                                          dtype)


@pytest.mark.parametrize("way", WAYS)
@pytest.mark.parametrize("dtype", INT_DTYPES)
def test_shifts_match_jax(dtype, way):
    """The three primitives, and the operators: `>>` is arithmetic on signed ints, logical on
    unsigned ones (as in JAX and NumPy)."""
    x, y = _shift_grid(dtype)
    got = run(way, lambda x, y: (lax.shift_left(x, y), lax.shift_right_logical(x, y),
                                 lax.shift_right_arithmetic(x, y), x << y, x >> y), x, y)
    for name, g in zip(SHIFT_PRIMITIVES, got):
        assert_exact(g, SHIFTS[name][dtype], dtype, f"{name} on {dtype} ({way})")
    right = "shift_right_logical" if dtype.startswith("u") else "shift_right_arithmetic"
    assert_exact(got[3], SHIFTS["shift_left"][dtype], dtype, f"<< on {dtype} ({way})")
    assert_exact(got[4], SHIFTS[right][dtype], dtype, f">> on {dtype} ({way})")


@pytest.mark.parametrize("way", WAYS)
@pytest.mark.parametrize("dtype", INT_DTYPES)
def test_shifts_by_a_constant_match_jax(dtype, way):
    """An amount known while tracing is a literal, which the Numba rule checks when it writes
    the code rather than when it runs; a scalar amount (or value) broadcasts."""
    xs, amounts = SHIFT_INPUTS[dtype]
    x = np.array(xs, dtype)
    consts = [np.asarray(a, dtype)[()] for a in amounts]  # NumPy scalars: strongly typed

    def f(x):
        return tuple(op(x, c) for c in consts for op in (
            lax.shift_left, lax.shift_right_logical, lax.shift_right_arithmetic))

    got = iter(run(way, f, x))
    for k, amount in enumerate(amounts):
        for name in SHIFT_PRIMITIVES:
            assert_exact(next(got), SHIFTS[name][dtype][k], dtype,
                         f"{name} on {dtype} by the constant {amount} ({way})")
    # a rank-0 array operand on either side, traced
    first, last = np.asarray(xs[3], dtype), np.asarray(amounts[-1], dtype)
    got = run(way, lambda x, y, a, b: (lax.shift_right_arithmetic(x, b),
                                       lax.shift_left(a, y)), x, np.array(amounts[:6], dtype),
              first, last)
    assert_exact(got[0], SHIFTS["shift_right_arithmetic"][dtype][-1], dtype, f"x >> b ({way})")
    want = [SHIFTS["shift_left"][dtype][k][3] for k in range(6)]
    assert_exact(got[1], want, dtype, f"a << y ({way})")


@pytest.mark.parametrize("way", WAYS)
def test_shift_operators_match_jax(way):
    """Python scalars are weak (they wrap into the array's dtype first: `i8 << 300` shifts by
    44, so every bit goes), NumPy scalars are not, reflected operators, mixed dtypes."""
    names = list(OPERANDS)
    args = [np.array(v, dt) for v, dt in OPERANDS.values()]
    for case, (values, dtype) in OPERATORS.items():
        def f(*xs, case=case):
            return eval(case, {"np": np, "jnp": mnp, **dict(zip(names, xs))})

        (got,) = run(way, f, *args)
        assert_exact(got, values, dtype.rstrip("*"), f"{case} ({way})")
        if way == "eager":
            assert _dtype_of(f(*map(mnp.asarray, args))) == dtype, case


@pytest.mark.parametrize("way", WAYS)
def test_in_place_shift_operators(way):
    """`x <<= 2` rebinds x to a new array, as every augmented assignment does on JAX's
    immutable arrays (JAX 0.10.2: [1, 2, 3] int16 gives [2, 4, 6] int16)."""
    def f(x):
        y = x
        x <<= 2
        x >>= 1
        return x, y

    x = np.array([1, 2, 3], np.int16)
    got, kept = run(way, f, x)
    assert_exact(got, [2, 4, 6], "int16", f"<<= then >>= ({way})")
    assert_exact(kept, [1, 2, 3], "int16", "the array x named before")


@pytest.mark.parametrize("pair", sorted(SHIFT_DTYPES))
def test_shift_result_dtypes_match_jax(pair):
    """JAX's promotion (the lattice in minijit/dtypes.py), with two bools shifting in int32,
    and a float anywhere (uint64 with a signed int promotes to one) a TypeError."""
    def operand(name):
        return {"int*": 3, "float*": 3.0}.get(name) or mnp.ones(2, name)

    for f, want in zip((mnp.left_shift, mnp.right_shift), SHIFT_DTYPES[pair]):
        try:
            got = _dtype_of(f(operand(pair[0]), operand(pair[1])))
        except TypeError:
            got = "TypeError"
        assert got == want, f"{f.__name__}{pair}"


def test_shift_jaxprs_print_as_jax():
    """JAX 0.10.2's printed jaxprs (`jax.make_jaxpr(lambda x, y: x << y)(...)`), up to line
    breaks (JAX prints a short jaxpr on one line; minijit's printer always breaks)."""
    i32, u32, i8 = np.int32(1), np.uint32(1), np.int8(1)
    jaxprs = [  # (function, arguments, JAX's jaxpr)
        (lambda x, y: x << y, (i32, i32),
            "{ lambda ; a:i32[] b:i32[]. let c:i32[] = shift_left a b in (c,) }"),
        (lambda x, y: x >> y, (i32, i32),
            "{ lambda ; a:i32[] b:i32[]. let c:i32[] = shift_right_arithmetic a b in (c,) }"),
        (lambda x, y: x >> y, (u32, u32),
            "{ lambda ; a:u32[] b:u32[]. let c:u32[] = shift_right_logical a b in (c,) }"),
        (lambda x: 1 << x, (i8,),
            "{ lambda ; a:i8[]. let b:i8[] = shift_left 1:i8[] a in (b,) }"),
        (lambda x: x >> 2, (np.array([1, 3, 200], np.uint8),),
            "{ lambda ; a:u8[3]. let b:u8[3] = shift_right_logical a 2:u8[] in (b,) }"),
        (lambda x, y: x << y, (i8, 2),  # a weak int traced: converted (wrapping) to int8
            "{ lambda ; a:i8[] b:i64[]. let c:i8[] = convert_element_type[new_dtype=int8 "
            "weak_type=False] b d:i8[] = shift_left a c in (d,) }"),
        (lambda x, y: x >> y, (i8, np.uint8(2)),
            "{ lambda ; a:i8[] b:u8[]. let c:i16[] = convert_element_type[new_dtype=int16 "
            "weak_type=False] a d:i16[] = convert_element_type[new_dtype=int16 "
            "weak_type=False] b e:i16[] = shift_right_arithmetic c d in (e,) }"),
        (lambda x: mnp.right_shift(x, 2), (np.array([True, False]),),
            "{ lambda ; a:bool[2]. let b:i64[2] = convert_element_type[new_dtype=int64 "
            "weak_type=True] a c:i64[2] = shift_right_arithmetic b 2:i64[] in (c,) }"),
    ]
    for f, args, want in jaxprs:
        assert " ".join(str(mj.make_jaxpr(f)(*args)).split()) == want


@pytest.mark.parametrize("way", WAYS)
def test_shifts_refuse_floats_as_jax_does(way):
    """JAX: `TypeError: shift_left does not accept dtype float64 at position 0. Accepted
    dtypes at position 0 are subtypes of integer.` (for `<<`, `>>` and lax alike)."""
    f64 = np.array([1.0, 2.0])
    cases = {
        "shift_left": lambda x: x << 1,
        "shift_right_arithmetic": lambda x: x >> 1,
        "shift_right_logical": lambda x: lax.shift_right_logical(x, x),
    }
    for name, f in cases.items():
        with pytest.raises(TypeError, match=rf"{name}: does not accept dtype float64 at "
                                            r"position 0: it needs integer inputs"):
            run(way, f, f64)
    with pytest.raises(TypeError, match="does not accept dtype float64 at position 0"):
        run(way, lambda x: mnp.left_shift(x, 1.0), np.array([1, 2], np.int8))


def test_lax_shifts_are_strict():
    """As every lax function: one dtype (JAX: `lax.shift_left requires arguments to have the
    same dtypes, got int8, uint8`), and no bools (JAX: `does not accept dtype bool`)."""
    i8, u8, b = np.array([1], np.int8), np.array([1], np.uint8), np.array([True])
    with pytest.raises(TypeError, match="equal dtypes, got i8.* and u8"):
        lax.shift_left(i8, u8)
    with pytest.raises(TypeError, match="does not accept dtype bool at position 0"):
        lax.shift_right_arithmetic(b, b)


# --------------------------------------------------------------------------- conversions


def _convert_all(targets):
    """x converted to each target, by each of the three spellings (which must agree)."""
    def f(x):
        return tuple(out for dt in targets for out in (
            lax.convert_element_type(x, dt), x.astype(dt), mnp.asarray(x, dt)))

    return f


@pytest.mark.parametrize("way", WAYS)
@pytest.mark.parametrize("source", ["float32", "float64"])
def test_float_to_int_matches_jax(source, way):
    """XLA saturates: NaN is 0, beyond the range is its nearest end (negative to unsigned is
    0), the rest truncate toward 0; to bool is `!= 0` (NaN is True)."""
    targets = list(FROM_FLOAT[source])
    got = iter(run(way, _convert_all(targets), np.array(FLOATS, source)))
    for dt in targets:
        for how in ("convert_element_type", "astype", "asarray"):
            assert_exact(next(got), FROM_FLOAT[source][dt], dt, f"{source} -> {dt} by {how}")


@pytest.mark.parametrize("source", ["float32", "float64"])
def test_asarray_of_host_floats_saturates_too(source):
    """`mnp.asarray(numpy_array, int_dtype)` converts as `astype` does. (JAX 0.10.2 uses
    NumPy's cast there, on host data: int_min for NaN, with a RuntimeWarning; minijit keeps
    one conversion, so closed-over and traced data agree.)"""
    x = np.array(FLOATS, source)
    for dt, want in FROM_FLOAT[source].items():
        assert_exact(np.asarray(mnp.asarray(x, dt)), want, dt, f"asarray({source} data, {dt})")
    assert_exact(np.asarray(mnp.asarray([float("nan"), 300.0, -1.0], "uint8")), [0, 255, 0],
                 "uint8", "asarray(list of floats, uint8)")
    with pytest.raises(OverflowError):  # NumPy's error (and JAX's) for a Python int
        mnp.asarray([300], "int8")


@pytest.mark.parametrize("way", WAYS)
@pytest.mark.parametrize("source", sorted(INTS))
def test_int_and_bool_conversions_match_jax(source, way):
    """Int to a narrower int wraps (two's complement); to bool is `!= 0`; bool is 0 or 1;
    int to float rounds to nearest (2**24 + 1 to float32 is 2**24)."""
    got = iter(run(way, _convert_all(DTYPES), np.array(INTS[source], source)))
    for dt in DTYPES:
        for how in ("convert_element_type", "astype", "asarray"):
            assert_exact(next(got), FROM_INT[source][dt], dt, f"{source} -> {dt} by {how}")


@pytest.mark.parametrize("way", WAYS)
def test_float64_to_float32_matches_jax(way):
    """Round to nearest even; beyond float32's range (past the halfway point to 2**128) inf."""
    (got,) = run(way, lambda x: lax.convert_element_type(x, "float32"),
                 np.array(FLOAT64_TO_FLOAT32))
    want = np.array([int(b, 16) for b in FLOAT32_BITS], np.uint32).view(np.float32)
    assert_exact(got, want, "float32", f"float64 -> float32 ({way})")


@pytest.mark.parametrize("way", WAYS)
def test_float32_subnormals_are_kept(way):
    """Not mirrored: XLA on CPU flushes a float32 subnormal result to zero (JAX 0.10.2 turns
    float64 1.4e-45 into 0.0); minijit gives IEEE's subnormal, as NumPy does."""
    (got,) = run(way, lambda x: x.astype(np.float32), np.array([1.4e-45, -1e-40]))
    assert_exact(got, np.array([1.4e-45, -1e-40]).astype(np.float32), "float32", way)
    assert got[0] != 0


def test_float_to_int_code_checks_only_where_needed():
    """The generated code pays for the range checks on float to int only; other conversions
    stay a single cast."""
    x = np.array([1.5, 2.5])
    to_int = mj.jit(lambda x: x.astype(np.int32), backend="numba").lower(x).as_text()
    to_f32 = mj.jit(lambda x: x.astype(np.float32), backend="numba").lower(x).as_text()
    assert "2147483648.0" in to_int and " if " in to_int
    assert " if " not in to_f32
