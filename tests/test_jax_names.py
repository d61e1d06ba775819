"""minijit's names against JAX's (0.10.2, `jax_enable_x64`): the functions of `jax.numpy`
and the attributes of `jax.Array` that minijit has, and, grouped with the reason, the ones
it deliberately does not have.

A name JAX has that minijit neither implements nor lists here fails the first two tests, so
a new JAX (or a removed minijit function) is noticed; a listed name that minijit now has, or
that JAX no longer has, fails too, so the lists stay true. Then each function minijit has
for JAX's sake runs on a few inputs next to JAX itself: eagerly, traced and run by the
interpreter, and (a sample that covers each kind of lowering) compiled by Numba; the values
(to a tolerance: XLA's float32 transcendentals and reduction orders are its own), dtypes,
weak types and error classes must agree.
"""

from __future__ import annotations

import copy

import numpy as np
import pytest

import minijit as mj
import minijit.numpy as mnp
from minijit import array_methods
from minijit.array import Array
from minijit.core import Tracer
from minijit.tracing import JaxprTracer

jax = pytest.importorskip("jax")
jax.config.update("jax_enable_x64", True)
jnp = jax.numpy

# --------------------------------------------------------------------------- the lists

# group -> (why minijit does not have these, the names)
NOT_IN_MINIJIT_NUMPY: dict[str, tuple[str, frozenset[str]]] = {
    "complex numbers": (
        "minijit's dtypes are real (bool, ints, floats); conj, real and imag exist and are "
        "what they are for real arrays",
        frozenset({"complex64", "complex128", "complex_", "cdouble", "csingle",
                   "complexfloating", "ComplexWarning", "angle", "sort_complex"})),
    "dtypes minijit lacks": (
        "minijit supports bool, int8-64, uint8-64, float32 and float64 only (no half or "
        "narrow floats, no packed ints, no strings or objects)",
        frozenset({"float16", "bfloat16", "float4_e2m1fn", "float6_e2m3fn", "float6_e3m2fn",
                   "float8_e3m4", "float8_e4m3", "float8_e4m3b11fnuz", "float8_e4m3fn",
                   "float8_e4m3fnuz", "float8_e5m2", "float8_e5m2fnuz", "float8_e8m0fnu",
                   "int1", "int2", "int4", "uint1", "uint2", "uint4", "object_", "flexible",
                   "character"})),
    "elementwise functions with no primitive": (
        "no primitive computes them, and composing them from exp and log loses accuracy "
        "near 0 or at the ends of the range (a new primitive is chapter 10's exercise)",
        frozenset({"sinh", "cosh", "arcsin", "asin", "arccos", "acos", "arcsinh", "asinh",
                   "arccosh", "acosh", "arctanh", "atanh", "cbrt", "i0", "kaiser"})),
    "bit-level functions": (
        "they read or write a float's bits (sign, exponent, neighbours) or count bits, and "
        "minijit has no bitcast or popcount primitive",
        frozenset({"signbit", "copysign", "frexp", "ldexp", "nextafter", "spacing",
                   "bitwise_count", "packbits", "unpackbits"})),
    "sorting": (
        "minijit has no sort primitive, and these sort (or search a sorted array)",
        frozenset({"sort", "argsort", "lexsort", "partition", "argpartition", "searchsorted",
                   "digitize", "interp", "median", "nanmedian", "percentile",
                   "nanpercentile", "quantile", "nanquantile", "histogram", "histogram2d",
                   "histogramdd", "histogram_bin_edges", "unique", "unique_all",
                   "unique_counts", "unique_inverse", "unique_values", "intersect1d",
                   "setdiff1d", "setxor1d", "union1d", "trim_zeros"})),
    "gather and scatter": (
        "they index with integer arrays or return index arrays to do so; minijit has no "
        "gather or scatter primitive (under jit it indexes with slices and dynamic_slice)",
        frozenset({"take", "take_along_axis", "put", "put_along_axis", "choose", "compress",
                   "extract", "place", "delete", "insert", "fill_diagonal", "bincount", "ix_",
                   "ravel_multi_index", "unravel_index", "diag_indices", "diag_indices_from",
                   "tril_indices", "tril_indices_from", "triu_indices", "triu_indices_from",
                   "mask_indices"})),
    "submodules and linear algebra": (
        "jnp.linalg and jnp.fft, and what needs them (least squares, eigenvalues) or a "
        "general contraction planner, are beyond the course's subset",
        frozenset({"linalg", "fft", "einsum", "einsum_path", "polyfit", "roots", "poly"})),
    "functions of functions": (
        "they map a Python function over an array (vmap, which minijit does not have) or "
        "choose one per element",
        frozenset({"vectorize", "frompyfunc", "ufunc", "apply_along_axis", "apply_over_axes",
                   "piecewise", "fromfunction"})),
    "files and buffers": (
        "reading and writing files, buffers and other libraries' arrays: use NumPy, then "
        "mnp.asarray",
        frozenset({"load", "save", "savez", "fromfile", "frombuffer", "fromstring",
                   "fromiter", "from_dlpack"})),
    "not written yet": (
        "compositions of minijit's primitives that no course program has needed so far; "
        "each is a candidate for the next additions (gcd and lcm need a loop per element)",
        frozenset({"block", "cross", "cov", "corrcoef", "geomspace", "gradient", "unwrap",
                   "matvec", "vecmat", "polyadd", "polysub", "polymul", "polydiv", "polyder",
                   "polyint", "gcd", "lcm", "c_", "r_", "mgrid", "ogrid"})),
}

NOT_ON_MINIJIT_ARRAYS: dict[str, tuple[str, frozenset[str]]] = {
    "devices and sharding": (
        "minijit runs on one CPU in one process: no devices, shards or transfers "
        "(mj.device_put and x.block_until_ready cover the calls JAX code makes most)",
        frozenset({"addressable_data", "addressable_shards", "committed",
                   "copy_to_host_async", "device", "global_shards", "is_fully_addressable",
                   "is_fully_replicated", "sharding", "to_device"})),
    "sorting": ("minijit has no sort primitive",
                frozenset({"sort", "argsort", "argpartition", "searchsorted"})),
    "gather": ("minijit has no gather primitive", frozenset({"take", "choose", "compress"})),
    "bit-level views": ("minijit has no bitcast primitive", frozenset({"view", "byteswap"})),
    "protocols and JAX's internals": (
        "the array API namespace and NumPy's dtype protocol hooks, and JAX's private "
        "helpers",
        frozenset({"__array_namespace__", "__numpy_dtype__", "_multi_slice", "_split"})),
}


def _listed(groups) -> set[str]:
    return set().union(*(names for _, names in groups.values()))


def _jax_numpy_names() -> set[str]:
    return {n for n in dir(jnp) if not n.startswith("_")}


def _jax_array_names() -> set[str]:
    return set(dir(jax.Array))


def test_every_jax_numpy_name_is_in_minijit_or_listed():
    unaccounted = {n for n in _jax_numpy_names() if not hasattr(mnp, n)} - _listed(
        NOT_IN_MINIJIT_NUMPY)
    assert not unaccounted, (
        f"jax.numpy {jax.__version__} has names that minijit.numpy neither has nor lists in "
        f"NOT_IN_MINIJIT_NUMPY: {sorted(unaccounted)}. Implement them, or list each in a "
        "group with its reason.")


def test_every_jax_array_attribute_is_on_minijit_tracers_or_listed():
    unaccounted = {n for n in _jax_array_names() if not hasattr(JaxprTracer, n)} - _listed(
        NOT_ON_MINIJIT_ARRAYS)
    assert not unaccounted, (
        f"jax.Array has attributes that minijit's tracers neither have nor list in "
        f"NOT_ON_MINIJIT_ARRAYS: {sorted(unaccounted)}")


@pytest.mark.parametrize("groups, has, jax_names", [
    (NOT_IN_MINIJIT_NUMPY, lambda n: hasattr(mnp, n), _jax_numpy_names),
    (NOT_ON_MINIJIT_ARRAYS, lambda n: hasattr(JaxprTracer, n), _jax_array_names),
], ids=["numpy", "Array"])
def test_the_lists_are_true(groups, has, jax_names):
    listed = _listed(groups)
    assert sum(len(names) for _, names in groups.values()) == len(listed), "a name is in two groups"
    assert not {n for n in listed if has(n)}, "minijit has these now: take them off the list"
    assert not listed - jax_names(), "JAX no longer has these: take them off the list"
    assert all(reason and "\n" not in reason for reason, _ in groups.values())


def test_arrays_and_tracers_share_every_method():
    """Eager arrays answer JAX's names with minijit's code (JAX's semantics), not NumPy's
    methods of the same name (`int8_array.cumsum()` stays int8, as in JAX)."""
    for name in (*array_methods._METHODS, *array_methods._OPERATORS):
        assert getattr(Array, name) is getattr(JaxprTracer, name), name
    for name in ("T", "mT", "real", "imag", "flat", "at"):
        assert Array.__dict__[name].fget.__code__ is Tracer.__dict__[name].fget.__code__


# --------------------------------------------------------------------------- behaviour

F = np.array([[1.5, -2.5, 0.5], [np.nan, 3.25, -0.0]])
G = np.array([[0.5, 2.5, -1.5, 7.0], [1.0, np.inf, -np.inf, 2.0], [3.0, 4.0, 5.0, 6.0]])
I8 = np.array([[1, -3, 5], [7, 0, -2]], np.int8)
B = np.array([[True, False, True], [True, True, True]])
V = np.array([0.5, -1.25, 2.0, 3.5])
M = np.arange(12.0).reshape(3, 4)
T3 = np.arange(24).reshape(2, 3, 4)
N = np.array([[1.0, np.nan, 3.0], [np.nan, np.nan, np.nan], [-1.0, 2.0, 0.5]])
F32 = np.array([0.5, 1.5, 2.5, -2.5, 1e8 + 0.5, 3.4e7 + 0.5], np.float32)
HALVES = np.array([-0.5, 0.5, -1.5, 2.5, 0.49999999999999994, -0.49999999999999994,
                   4503599627370495.5, -4503599627370497.0, 1e300, -np.inf, np.nan, -0.0])
E = np.zeros((0, 3))

# (function, arguments, keywords); NumPy arrays among the arguments are traced under jit
CASES: list[tuple[str, tuple, dict]] = []


def case(name, *args, **kwargs):
    CASES.append((name, args, kwargs))


for _x in (F, I8, B, E, 3, 0.0):
    case("all", _x)
    case("any", _x)
case("all", F, axis=0)
case("any", I8, axis=1, keepdims=True)
case("all", E, axis=0)
case("any", E, axis=(0, 1))
for _x in (F, I8, B, V, F32, 3, 2.5):
    case("cumsum", _x)
    case("cumprod", _x)
case("cumsum", T3, axis=1)
case("cumsum", I8, dtype=np.float32)
case("cumsum", np.array([-1, 1, 0]), dtype=bool)
case("cumsum", E, axis=0)
case("cumsum", np.array(2.0), axis=0)  # an error in both
case("cumsum", np.arange(37.0) * 0.1)
case("cumulative_sum", I8, axis=1)
case("cumulative_sum", V, include_initial=True)
case("cumulative_prod", T3[0], axis=0, include_initial=True)
case("cumulative_sum", T3)  # an error in both: axis is needed above 1-D
case("nancumsum", F)
case("nancumprod", N, axis=0)
for _x in (F, G, F32, HALVES, 2.5, 3, I8, B):
    case("round", _x)
case("round", G, 1)
case("round", np.array([1.005, 2.675, 1.235, -1.5e-3, 123.456]), 2)
case("round", np.array([15.0, 25.0, 35.0, -45.0]), -1)
case("round", I8, -1)
case("round", np.array([1.23]), 400)
case("around", 2.5)
case("rint", G)
case("rint", I8)
case("trunc", F)
for _x in (F, I8, B, 2.0, 3):
    for _name in ("conj", "conjugate", "real", "imag", "copy"):
        case(_name, _x)
for _x in (F, I8, G):
    case("ptp", _x)
    case("count_nonzero", _x)
case("ptp", G, axis=1, keepdims=True)
for _x in (G, I8, B, 2.5, 3):
    for _name in ("fabs", "reciprocal", "log2", "log10", "exp2", "arctan", "deg2rad",
                  "rad2deg", "sinc", "isinf", "isposinf", "isneginf", "modf", "nan_to_num"):
        case(_name, _x)
case("radians", V)
case("degrees", V)
case("atan", V)
case("nan_to_num", G.astype(np.float32), nan=-1.0, posinf=9.0)
for _x, _y in ((F, G[:2, :3]), (I8, np.int8(3)), (I8, 2), (G, 1.5), (B, B), (3, 2),
               (2.5, -1), (I8, I8[::-1])):
    for _name in ("fmod", "fmax", "fmin", "float_power", "hypot", "logaddexp", "logaddexp2",
                  "heaviside", "isclose", "allclose", "atan2", "array_equal", "array_equiv"):
        case(_name, _x, _y)
case("isclose", F, F, equal_nan=True)
case("isclose", np.float32(1.0), np.float32(1.000001))
case("fmod", np.array([7, -7, 7, -7]), np.array([3, 3, -3, 0]))
case("divmod", np.array([7, -7, 7, -7, 0]), np.array([3, 3, -3, -3, 5]))
case("divmod", np.array([7.5, -7.5, 2.0]), np.array([2.0, 2.0, -0.75]))
case("array_equal", F, F, equal_nan=True)
case("array_equal", F, F[:1])
case("array_equiv", F, F[:1])
case("bitwise_invert", I8)
case("pow", V, 2)
for _x in (M, I8, T3, V):
    case("flip", _x)
case("flip", T3, axis=(0, 2))
case("fliplr", M)
case("flipud", V)
for _s, _axis in ((1, None), (-2, None), (5, 0), (1, 1), ((1, 2), (0, 1)), (0, 0)):
    case("roll", M, _s, axis=_axis)
case("roll", M, np.array(5), axis=1)  # a traced shift
case("roll", V, np.array(-3))
for _k in (0, 1, 2, 3, -1):
    case("rot90", M, _k)
case("rot90", T3, 1, axes=(1, 2))
for _x in (2.5, V, M, T3):
    case("atleast_1d", _x)
    case("atleast_2d", _x)
    case("atleast_3d", _x)
case("atleast_1d", 1, V)
case("hstack", [V, V])
case("hstack", [M, M])
case("vstack", [M, V])
case("dstack", [M, M])
case("column_stack", [V, V])
case("hsplit", M, 2)
case("vsplit", M, 3)
case("dsplit", T3, [1, 3])
case("tile", V, 2)
case("tile", M, (2, 1))
case("tile", 2.5, 3)
case("tile", V, (2, 1, 2))
case("repeat", V, 2)
case("repeat", M, 2, axis=1)
case("repeat", M, [1, 0, 2], axis=0)  # a list is refused, as in JAX
case("repeat", 2.5, 3)
case("repeat", V, 2, total_repeat_length=5)
case("repeat", V, 2, total_repeat_length=11)
case("resize", M, (2, 7))
case("resize", np.zeros(0), (2, 2))
case("append", V, M)
case("append", M, M, axis=0)
for _x in (V, M, I8, B):
    case("diff", _x)
case("diff", M, 2, axis=0)
case("diff", V, prepend=0.0, append=9.0)
case("ediff1d", M)
case("ediff1d", V, to_end=np.array([1.0, 2.0]), to_begin=-1.0)
case("broadcast_arrays", V, M[:1])
case("unstack", T3, axis=2)
case("rollaxis", T3, 2)
case("rollaxis", T3, 0, 3)
case("permute_dims", T3, (2, 0, 1))
case("matrix_transpose", T3)
case("concat", [M, M], axis=1)
for _offset in (0, 1, -1, 3, -4, 10):
    case("diagonal", M, _offset)
case("diagonal", T3, 1, 2, 0)
case("trace", M, 1)
case("trace", T3, 0, 1, 2)
case("trace", I8, dtype=np.float32)
case("diag", V)
case("diag", V, 1)
case("diag", V, -2)
case("diag", M, -1)
case("diagflat", M[:2, :2])
case("tri", 3)
case("tri", 3, 4, 1, dtype=int)
case("tril", M, 1)
case("triu", T3, -1)
case("identity", 2, dtype=np.int32)
case("indices", (2, 3))
case("indices", (2, 3), sparse=True)
case("meshgrid", V, V[:2])
case("meshgrid", V, V[:3], indexing="ij")
case("meshgrid", V, V[:2], V[:3], sparse=True)
case("vander", V)
case("vander", V, 2, increasing=True)
case("vander", np.array([1, 2, 3], np.int8))
case("select", [V > 0, V < -1], [V, V * 2])
case("select", [I8 > 0, I8 < 0], [I8, -I8])
case("polyval", np.array([1.0, -2.0, 3.0]), V)
case("polyval", np.array([2, 1]), np.array([1, 2, 3]))
case("empty", (2, 3))
case("empty_like", I8, dtype=bool)
for _x in (2.5, V, np.array(2.0)):
    case("isscalar", _x)
case("isrealobj", V)
case("iscomplexobj", V)
case("isreal", M)
case("iscomplex", I8)
for _x in (N, I8):
    for _name in ("nansum", "nanprod", "nanmax", "nanmin", "nanmean", "nanvar", "nanstd",
                  "nanargmax", "nanargmin"):
        case(_name, _x)
        case(_name, _x, axis=1)
case("nanvar", N, ddof=1)
case("nanmax", N.astype(np.float32), axis=1)
case("average", M, axis=1)
case("average", M, weights=M + 1)
case("average", M, axis=0, weights=np.array([1.0, 2.0, 3.0]), returned=True)
case("average", I8, returned=True)
case("tensordot", M, M.T, 1)
case("tensordot", T3, T3, axes=([1, 2], [1, 2]))
case("tensordot", M, M, axes=0)
case("tensordot", T3, M.T, axes=([2, 1], [0, 1]))
case("tensordot", M, M.T)  # an error in both: the contracted sizes differ
case("inner", V, V)
case("inner", M, V)
case("inner", T3, np.ones((5, 4)))
case("outer", I8, V)
case("vdot", M, M)
case("vecdot", M, M[0])
case("vecdot", I8, I8)
case("kron", V, V[:2])
case("kron", M[:2, :2], I8)
case("trapezoid", V)
case("trapezoid", M, dx=0.5)
case("trapezoid", V, V * V)
case("trapezoid", M, np.array([0.0, 1.0, 3.0]), axis=0)
case("isin", M, V * 2)
case("isin", I8, np.array([0, 5, 7]), invert=True)
case("logspace", 0, 2, 5)
case("logspace", 0.0, 1.0, 4, endpoint=False, base=2.0)
case("logspace", 1, 3, 3, dtype=np.float32)
for _m in (0, 1, 5):
    for _name in ("bartlett", "blackman", "hamming", "hanning"):
        case(_name, _m)
case("promote_types", np.float32, np.int64)
case("promote_types", np.int8, np.uint8)

# Compiled by Numba too: one case of each kind of lowering these functions use (strided
# slices, matrix products of reshaped operands, dynamic_slice, associative_scan's pads, the
# rounding trick in float32 and float64, rev, pad, iota, select_n, reductions of bools).
NUMBA_SAMPLE = {
    ("all", 0), ("any", 2), ("cumsum", 6), ("cumprod", 9), ("cumsum", 14),
    ("cumulative_prod", 0), ("round", 2), ("round", 3), ("round", 9), ("diagonal", 3),
    ("trace", 1), ("tensordot", 1), ("tensordot", 3), ("inner", 2), ("kron", 1), ("roll", 6),
    ("roll", 4), ("rot90", 1), ("diag", 2), ("tril", 0), ("vander", 0), ("isin", 0),
    ("nanmax", 2), ("hypot", 0), ("logaddexp", 0), ("fmod", 8), ("repeat", 4),
    ("trapezoid", 3), ("meshgrid", 0), ("select", 0), ("nanvar", 4),
}


def _numbered(cases):
    seen: dict[str, int] = {}
    for name, args, kwargs in cases:
        k = seen[name] = seen.get(name, -1) + 1
        yield name, k, args, kwargs


NUMBERED = list(_numbered(CASES))


def _leaves(x):
    if isinstance(x, (list, tuple)):
        return [leaf for v in x for leaf in _leaves(v)]
    return [x]


def _describe(x):
    if isinstance(x, np.ndarray):
        return f"{x.dtype}{list(x.shape)}"
    return repr(x)


def _run(fn, args, kwargs, backend):
    if backend is None:
        return fn(*args, **kwargs)
    traced = [i for i, a in enumerate(args) if isinstance(a, np.ndarray)]

    def f(*arrays):
        full = list(args)
        for i, a in zip(traced, arrays):
            full[i] = a
        return fn(*full, **kwargs)

    return mj.jit(f, backend=backend)(*[args[i] for i in traced])


def _compare(want, got, where: str):
    if isinstance(want, Exception):
        assert isinstance(got, Exception), f"{where}: JAX raised {want!r}, minijit gave {got}"
        shared = [c for c in type(want).__mro__ if c in (TypeError, ValueError, IndexError,
                                                         NotImplementedError)]
        assert isinstance(got, tuple(shared)), f"{where}: JAX raised {want!r}, minijit {got!r}"
        return
    if isinstance(got, Exception):
        raise AssertionError(f"{where}: minijit raised {got!r}; JAX gave {want}") from got
    if isinstance(want, (list, tuple)):
        assert type(got) is type(want) and len(got) == len(want), f"{where}: {got} vs {want}"
    wants, gots = _leaves(want), _leaves(got)
    for w, g in zip(wants, gots):
        if isinstance(w, (bool, int, float, np.dtype)):
            assert w == g and type(g) is type(w), f"{where}: {g!r} vs JAX's {w!r}"
            continue
        w_np, g_np = np.asarray(w), np.asarray(g)
        weak_w, weak_g = bool(getattr(w, "weak_type", False)), bool(getattr(g, "weak_type", False))
        assert (g_np.dtype, g_np.shape, weak_g) == (w_np.dtype, w_np.shape, weak_w), (
            f"{where}: {g_np.dtype}{list(g_np.shape)} weak={weak_g}, JAX: "
            f"{w_np.dtype}{list(w_np.shape)} weak={weak_w}")
        if w_np.dtype.kind == "f":
            rtol = 1e-6 if w_np.dtype == np.float32 else 1e-13
            np.testing.assert_allclose(g_np, w_np, rtol=rtol, atol=0, err_msg=where)
        else:
            np.testing.assert_array_equal(g_np, w_np, err_msg=where)


# Functions whose result is not an array (a dtype, a bool): nothing to trace.
_NOT_TRACEABLE = {"promote_types", "isscalar", "isrealobj", "iscomplexobj"}


@pytest.mark.parametrize("name, k, args, kwargs", NUMBERED,
                         ids=[f"{n}-{k}" for n, k, _, _ in NUMBERED])
def test_minijit_computes_what_jax_computes(name, k, args, kwargs):
    try:
        want = getattr(jnp, name)(*args, **kwargs)
    except Exception as e:  # noqa: BLE001 - the error is what minijit must match
        want = e
    backends = [None] if name in _NOT_TRACEABLE else [None, "interpreter"] + (
        ["numba"] if (name, k) in NUMBA_SAMPLE else [])
    call = (f"mnp.{name}(" + ", ".join([*map(_describe, args),
                                        *(f"{key}={v!r}" for key, v in kwargs.items())]) + ")")
    for backend in backends:
        try:
            got = _run(getattr(mnp, name), args, kwargs, backend)
        except Exception as e:  # noqa: BLE001
            got = e
        _compare(want, got, f"{call} {backend or 'eagerly'}")


# --------------------------------------------------------------------------- methods

METHOD_CASES = [  # (method, receiver, arguments)
    ("all", F, ()), ("any", I8, (1,)), ("copy", V, ()), ("round", G, (1,)),
    ("cumsum", I8, ()), ("cumprod", M, (1,)), ("conj", V, ()), ("conjugate", I8, ()),
    ("ptp", G, (0,)), ("diagonal", M, (1,)), ("trace", M, ()), ("repeat", V, (2,)),
]


@pytest.mark.parametrize("method, x, args", METHOD_CASES, ids=[m for m, _, _ in METHOD_CASES])
def test_methods_of_arrays_and_tracers_compute_what_jax_computes(method, x, args):
    want = getattr(jnp.asarray(x), method)(*args)
    eager = getattr(mnp.asarray(x), method)(*args)
    _compare(want, eager, f"Array.{method} eagerly")
    traced = mj.jit(lambda a: getattr(a, method)(*args), backend="interpreter")(x)
    _compare(want, traced, f"Tracer.{method}")


def _protocols(a):
    """Attributes and Python protocols, written once for JAX's arrays and minijit's."""
    return (a.mT, a.real, a.imag, a.itemsize, a.nbytes, round(a[0, 1] + 1.5), round(a, 1),
            copy.copy(a), copy.deepcopy(a), divmod(a, 4), divmod(7, a + 1))


def test_properties_and_python_protocols_as_jax():
    x = np.arange(6.0).reshape(2, 3) / 3
    _compare(_protocols(jnp.asarray(x)), _protocols(mnp.asarray(x)), "eagerly")
    _compare(jax.jit(_protocols)(x), mj.jit(_protocols)(x), "traced")


def test_contains_item_and_flat_as_jax():
    x = np.arange(6.0).reshape(2, 3)
    assert 2.0 in mnp.asarray(np.arange(3.0)) and 5.0 not in mnp.asarray(np.arange(3.0))
    with pytest.raises(ValueError, match="one-dimensional"):
        1.0 in mnp.asarray(x)  # noqa: B015 - JAX's rule: only a 1-D array is searched
    with pytest.raises(mj.errors.TracerBoolConversionError):
        mj.jit(lambda a: 1.0 in a)(np.arange(3.0))
    with pytest.raises(mj.errors.ConcretizationTypeError, match="item"):
        mj.jit(lambda a: a.item())(np.float64(1.0))
    assert mnp.asarray(np.float64(1.5)).item() == 1.5
    with pytest.raises(NotImplementedError, match="flatten"):
        mnp.asarray(x).flat  # noqa: B018 - NumPy's flat iterator could write into it
    with pytest.raises(NotImplementedError, match="flatten"):
        mj.jit(lambda a: a.flat)(x)
