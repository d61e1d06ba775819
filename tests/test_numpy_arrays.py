"""`nonzero` and its family (minijit/numpy/searching.py), `convolve`/`correlate`
(numpy/convolution.py), and `swapaxes`, `moveaxis`, `split`, `array_split` (numpy/lax_numpy.py),
checked against the values, dtypes and errors of JAX 0.10.2 (jax_enable_x64), eagerly and
under `jit` on every backend.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

import minijit as mj
import minijit.numpy as mnp
from minijit import backends, errors

BACKENDS = backends.DISTINCT_BACKENDS
WAYS = ["eager", *BACKENDS]


def run(way: str, f, *args):
    """`f(*args)` eagerly (on minijit Arrays), or jitted on the backend `way`."""
    if way == "eager":
        return f(*[mnp.asarray(a) for a in args])
    return mj.jit(f, backend=way)(*args)


def on_numba_too(way: str, numba: bool) -> bool:
    """Whether a case runs on `way`: every case eagerly and on the interpreter (cheap); on a
    compiling backend, Numba or LLVM, where each distinct program is a compile of its own
    (~0.5 s on Numba: the generated code has sizes baked in, so each new shape or `size` is a
    new program; the LLVM backend compiles for exact shapes), only the cases marked for it,
    chosen so that together they still reach every path of the generated code."""
    return way in ("eager", "interpreter") or numba


def same(got, want, dtype=np.int64):
    np.testing.assert_array_equal(got, want)
    assert got.dtype == dtype, f"dtype {got.dtype}, JAX gives {np.dtype(dtype)}"


X = np.array([0, 3, 0, 5, 7])
M = np.array([[1, 0], [0, 2], [3, 0]])

# --------------------------------------------------------------------------- nonzero


def test_nonzero_without_size_eagerly():
    (i,) = mnp.nonzero(mnp.asarray(X))
    same(i, [1, 3, 4])
    same(mnp.argwhere(mnp.asarray(X)), [[1], [3], [4]])
    same(mnp.flatnonzero(mnp.asarray(M)), [0, 3, 4])
    (w,) = mnp.where(mnp.asarray(X) > 2)
    same(w, [1, 3, 4])
    assert isinstance(i, mj.Array)


@pytest.mark.parametrize("way", WAYS)
def test_nonzero_with_size_pads_and_truncates_as_jax(way):
    """Every case eagerly and on the interpreter. On Numba, one case per distinct program
    shape (marked True): 1-D without and with a fill (the select), 2-D with a fill per axis
    (the division and remainder that unravel), argwhere's columns joined, a float input with
    a NaN and a bool one (the compare to zero, or none), an empty input (no scan at all).
    The others differ from one of these only in a static size or in which wrapper
    (flatnonzero, where) calls the same code, which the interpreter checks."""
    cases = [  # (function, argument, JAX 0.10.2's output, run on numba too)
        (lambda x: mnp.nonzero(x, size=4)[0], X, [1, 3, 4, 0], True),  # default fill 0
        (lambda x: mnp.nonzero(x, size=2)[0], X, [1, 3], False),
        (lambda x: mnp.nonzero(x, size=4, fill_value=-1)[0], X, [1, 3, 4, -1], True),
        (lambda x: mnp.flatnonzero(x, size=4), X, [1, 3, 4, 0], False),
        (lambda x: mnp.argwhere(x, size=4), X, [[1], [3], [4], [0]], False),
        (lambda m: mnp.stack(mnp.nonzero(m, size=4, fill_value=(9, 8))), M,
         [[0, 1, 2, 9], [0, 1, 0, 8]], True),
        (lambda m: mnp.argwhere(m, size=4, fill_value=-1), M,
         [[0, 0], [1, 1], [2, 0], [-1, -1]], True),
        (lambda m: mnp.argwhere(m, size=4), M, [[0, 0], [1, 1], [2, 0], [0, 0]], False),
        (lambda m: mnp.flatnonzero(m, size=3, fill_value=-1), np.array([[1, 0], [0, 2]]),
         [0, 3, -1], False),
        (lambda x: mnp.where(x > 2, size=3)[0], X, [1, 3, 4], False),
        (lambda x: mnp.where(x, size=4, fill_value=7)[0], np.array([1, 0, 2]), [0, 2, 7, 7],
         False),
        (lambda x: mnp.nonzero(x, size=3)[0], np.array([0.5, 0, np.nan]), [0, 2, 0], True),
        (lambda x: mnp.nonzero(x, size=3)[0], np.array([True, False, True]), [0, 2, 0], True),
        (lambda x: mnp.nonzero(x, size=2, fill_value=5)[0], np.zeros(0), [0, 0],  # unfilled
         True),
    ]
    for f, x, want, numba in cases:
        if on_numba_too(way, numba):
            same(run(way, f, x), want)


@pytest.mark.parametrize("way", WAYS)
def test_nonzero_fill_value_dtype_promotes_as_jax(way):
    # JAX: a Python float fill makes float64 indices; a float32 one makes float32 (its lattice)
    same(run(way, lambda x: mnp.nonzero(x, size=3, fill_value=2.7)[0], X), [1, 3, 4],
         np.float64)
    same(run(way, lambda x: mnp.nonzero(x, size=4, fill_value=np.float32(-1))[0], X),
         [1, 3, 4, -1], np.float32)
    same(run(way, lambda x: mnp.nonzero(x, size=3, fill_value=np.int8(-1))[0],
             np.array([1, 0, 2], np.int8)), [0, 2, -1])


# shape -> the sizes checked on Numba (every size of the sweep on the interpreter): one array
# of one element; 1-D truncated and padded; 2-D and 3-D (one and two divisions to unravel)
NONZERO_NUMBA_SIZES = {(1,): (1,), (7,): (1, 9), (3, 4): (3,), (2, 3, 2): (14,)}


@pytest.mark.parametrize("backend", BACKENDS)
def test_nonzero_agrees_with_numpy_on_random_arrays(backend):
    """Sizes 1, 3, n and n + 2 of each shape on the interpreter. On Numba each (shape, size)
    is a compile of its own, and the generated code depends on them only through the number
    of axes (how many divisions unravel a flat index) and the sizes baked in: the subset in
    NONZERO_NUMBA_SIZES keeps each number of axes, a single element, and a result both
    truncated and padded (asserted below, so a new draw cannot lose either)."""
    rng = np.random.default_rng(0)
    seen = set()
    for shape in [(1,), (7,), (3, 4), (2, 3, 2)]:
        a = rng.integers(0, 2, shape) * rng.integers(1, 5, shape)
        for size in [1, 3, a.size, a.size + 2]:
            if not on_numba_too(backend, size in NONZERO_NUMBA_SIZES[shape]):
                continue
            got = mj.jit(lambda a, size=size: mnp.nonzero(a, size=size, fill_value=-1),
                         static_argnames="size", backend=backend)(a)
            count = np.count_nonzero(a)
            seen.add("truncated" if size < count else "padded" if size > count else "exact")
            for g, w in zip(got, np.nonzero(a)):
                padded = np.concatenate([w[:size], np.full(max(0, size - len(w)), -1)])
                np.testing.assert_array_equal(g, padded)
    assert {"truncated", "padded"} <= seen, seen


def test_argwhere_of_a_scalar():
    assert mnp.argwhere(mnp.asarray(3)).shape == (1, 0)
    assert mnp.argwhere(mnp.asarray(0)).shape == (0, 0)
    assert mnp.argwhere(mnp.asarray(3), size=2).shape == (2, 0)
    assert mnp.argwhere(mnp.zeros((2, 0))).shape == (0, 2)
    same(mnp.flatnonzero(mnp.asarray(3)), [0])


@pytest.mark.parametrize("fn,name", [
    (mnp.nonzero, "nonzero"), (mnp.argwhere, "argwhere"), (mnp.flatnonzero, "flatnonzero"),
    (lambda c: mnp.where(c), "nonzero"),
])
def test_nonzero_under_jit_without_size_names_the_fix(fn, name):
    with pytest.raises(errors.ConcretizationTypeError) as info:
        mj.jit(fn)(X)
    text = str(info.value)
    assert text.startswith("Abstract tracer value encountered where concrete value is "
                           "expected: traced array with shape i64[]")
    assert f"The size argument of mnp.{name} must be statically specified" in text
    assert "size=k" in text


@pytest.mark.parametrize("call,cls,match", [
    (lambda: mnp.nonzero(mnp.asarray(3)), ValueError,
     "Calling nonzero on 0d arrays is not allowed"),
    (lambda: mnp.nonzero(mnp.asarray(X), size=2, fill_value=(1, 2)), ValueError,
     re.escape("fill_value must be a scalar or a tuple of length 1; got (1, 2)")),
    (lambda: mnp.nonzero(mnp.asarray(X), size=2.5), TypeError,
     "'float' object cannot be interpreted as an integer"),
    (lambda: mnp.nonzero([1, 2]), TypeError, "nonzero requires ndarray or scalar arguments"),
    (lambda: mnp.where(mnp.ones(2), 1, 2, size=3), ValueError,
     "size and fill_value arguments cannot be used in three-term where function"),
    (lambda: mnp.where(mnp.ones(2), 1), TypeError, "takes both x and y, or neither"),
])
def test_nonzero_errors(call, cls, match):
    with pytest.raises(cls, match=match):
        call()


# --------------------------------------------------------------------------- convolve


A, V = np.array([1.0, 2, 3, 4, 5]), np.array([4.0, 1, 2])
JAX_CONVOLVE = {  # mode -> (convolve(A, V), correlate(A, V), correlate(V, A)) from JAX 0.10.2
    "full": ([4, 9, 16, 23, 30, 13, 10], [2, 5, 12, 19, 26, 21, 20], [20, 21, 26, 19, 12, 5, 2]),
    "same": ([9, 16, 23, 30, 13], [5, 12, 19, 26, 21], [21, 26, 19, 12, 5]),
    "valid": ([16, 23, 30], [12, 19, 26], [26, 19, 12]),
}


@pytest.mark.parametrize("way", WAYS)
@pytest.mark.parametrize("mode", sorted(JAX_CONVOLVE))
def test_convolve_and_correlate_modes_as_jax(way, mode):
    conv, corr, corr_swapped = JAX_CONVOLVE[mode]
    same(run(way, lambda a, v: mnp.convolve(a, v, mode), A, V), conv, np.float64)
    same(run(way, lambda a, v: mnp.convolve(v, a, mode), A, V), conv, np.float64)  # v longer
    same(run(way, lambda a, v: mnp.correlate(a, v, mode), A, V), corr, np.float64)
    same(run(way, lambda a, v: mnp.correlate(v, a, mode), A, V), corr_swapped, np.float64)


@pytest.mark.parametrize("way", WAYS)
def test_convolve_dtypes_as_jax(way):
    ai, vi = np.array([1, 2, 3, 4, 5]), np.array([4, 1, 2])
    same(run(way, mnp.convolve, ai, vi), [4, 9, 16, 23, 30, 13, 10], np.float64)
    same(run(way, mnp.correlate, ai, vi), [12, 19, 26], np.float64)  # default mode 'valid'
    same(run(way, mnp.convolve, ai.astype(np.int32), vi.astype(np.int8)),
         [4, 9, 16, 23, 30, 13, 10], np.float32)
    same(run(way, mnp.convolve, ai.astype(np.float32), vi), [4, 9, 16, 23, 30, 13, 10],
         np.float32)
    same(run(way, mnp.convolve, np.array([True, False]), np.array([True, True])), [1, 1, 0],
         np.float32)
    same(run(way, lambda a, v: mnp.convolve(a, v, preferred_element_type=np.int64), ai, vi),
         [4, 9, 16, 23, 30, 13, 10])


# (len(a), len(v)) pairs checked on Numba (all pairs 1..5 on the interpreter), one per class
CONVOLVE_NUMBA_LENGTHS = [
    (1, 1),  # both of one element: no padding in any mode, a result of one element
    (4, 1),  # v of one element: one window row, no padding
    (1, 4),  # a shorter: the two swap, correlate's result is reversed; then m == 1
    (5, 2),  # even m: 'same' pads one side only (m // 2, m - m // 2 - 1 = 1, 0)
    (5, 4),  # even m: 'same' pads both sides, unequally (2, 1)
    (3, 3),  # equal odd lengths: 'valid' is one element
    (2, 4),  # swap with an even shorter one
    (3, 5),  # swap with an odd shorter one: 'same' pads equal sides
]


@pytest.mark.parametrize("backend", BACKENDS)
def test_convolve_agrees_with_numpy_for_every_pair_of_lengths(backend):
    """Every pair of lengths 1..5, each mode, both functions, on the interpreter: that checks
    the staged program for each. On Numba each (lengths, mode, function) is a compile of its
    own (~0.5 s: at lengths this small, sizes of 1 and sizes that coincide make the generated
    code differ; longer signals with one kernel share a compile, tests/test_shape_generic.py),
    and that code depends on the lengths only through which is shorter (a swap, and for
    correlate a reversal), the padding each mode adds (none, one side, equal or unequal
    sides) and sizes of one: the pairs in
    CONVOLVE_NUMBA_LENGTHS reach each of those: 36 compiles instead of 114."""
    rng = np.random.default_rng(1)
    for n in range(1, 6):
        for m in range(1, 6):
            a, v = rng.normal(size=n), rng.normal(size=m)
            if not on_numba_too(backend, (n, m) in CONVOLVE_NUMBA_LENGTHS):
                continue
            if backend == "llvm" and (n, m) != (5, 4):
                continue  # a product: the LLVM backend hands it to Numba (asserted below),
                # so the other pairs would only repeat the Numba backend's compiles
            for mode in ("full", "same", "valid"):
                for fn in ("convolve", "correlate"):
                    jitted = mj.jit(getattr(mnp, fn), static_argnums=2, backend=backend)
                    got = jitted(a, v, mode)
                    np.testing.assert_allclose(got, getattr(np, fn)(a, v, mode), rtol=1e-12,
                                               atol=1e-12)
                    if backend == "llvm":
                        executable = jitted.lower(a, v, mode).compile().executable
                        assert "dot_general" in executable.llvm_declined


@pytest.mark.parametrize("call,match", [
    (lambda: mnp.convolve(mnp.ones((2, 2)), mnp.ones(3)),
     re.escape("convolve() only support 1-dimensional inputs")),
    (lambda: mnp.correlate(mnp.ones(3), 2.0),
     re.escape("correlate() only support 1-dimensional inputs")),
    (lambda: mnp.convolve(mnp.ones(3), mnp.ones(2), "bogus"),
     re.escape("mode must be one of ['full', 'same', 'valid']")),
    (lambda: mnp.convolve(mnp.ones(5), mnp.ones(0)),
     re.escape("convolve: inputs cannot be empty, got shapes (5,) and (0,).")),
])
def test_convolve_errors(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_convolve_rejects_lists_as_jax():
    with pytest.raises(TypeError, match="convolve requires ndarray or scalar arguments"):
        mnp.convolve(mnp.ones(3), [1.0, 2.0])


# --------------------------------------------------------------------------- split, swapaxes


@pytest.mark.parametrize("way", WAYS)
def test_split_and_array_split_as_jax(way):
    cases = [  # (function, JAX 0.10.2's pieces of arange(6) / arange(7) / arange(3))
        (lambda x: mnp.split(x, 3), np.arange(6), [[0, 1], [2, 3], [4, 5]]),
        (lambda x: mnp.split(x, [1, 4]), np.arange(6), [[0], [1, 2, 3], [4, 5]]),
        (lambda x: mnp.split(x, np.array([2])), np.arange(6), [[0, 1], [2, 3, 4, 5]]),
        (lambda x: mnp.array_split(x, 3), np.arange(7), [[0, 1, 2], [3, 4], [5, 6]]),
        (lambda x: mnp.array_split(x, 5), np.arange(3), [[0], [1], [2], [], []]),
    ]
    for f, x, want in cases:
        got = run(way, f, x)
        assert isinstance(got, list) and len(got) == len(want)
        for g, w in zip(got, want):
            same(g, w)
    left, right = run(way, lambda m: mnp.split(m, 2, axis=1), np.arange(12.0).reshape(3, 4))
    same(left, [[0, 1], [4, 5], [8, 9]], np.float64)
    same(right, [[2, 3], [6, 7], [10, 11]], np.float64)


@pytest.mark.parametrize("call,cls,match", [
    (lambda: mnp.split(mnp.arange(7), 3), ValueError,
     "array split does not result in an equal division: rest is 1"),
    (lambda: mnp.split(mnp.arange(6), [4, 2]), ValueError,
     re.escape("Sizes passed to split must be nonnegative, got [4, -2, 4]")),
    (lambda: mnp.split(mnp.arange(6), 0), ZeroDivisionError, "by zero"),
    (lambda: mnp.split(mnp.asarray(3.0), 1), IndexError, "0-d array"),
    (lambda: mnp.split(mnp.ones((3, 4)), 2, axis=2), IndexError,
     "axis 2 is out of bounds for array of dimension 2"),
    (lambda: mnp.swapaxes(mnp.ones((3, 4)), 0, 2), IndexError,
     "axis 2 is out of bounds for array of dimension 2"),
    (lambda: mnp.moveaxis(mnp.ones((3, 4)), [0, 1], [0]), ValueError,
     "Inconsistent number of elements: 2 vs 1"),
])
def test_split_and_axis_errors(call, cls, match):
    with pytest.raises(cls, match=match):
        call()


def test_split_needs_static_sections():
    with pytest.raises(errors.ConcretizationTypeError, match="static_argnums"):
        mj.jit(lambda x, n: mnp.split(x, n))(np.arange(4.0), 2)


@pytest.mark.parametrize("way", WAYS)
def test_swapaxes_and_moveaxis_shapes_as_jax(way):
    y = np.arange(24.0).reshape(2, 3, 4)
    for f, shape in [(lambda a: mnp.swapaxes(a, 0, 2), (4, 3, 2)),
                     (lambda a: a.swapaxes(-1, 0), (4, 3, 2)),
                     (lambda a: mnp.moveaxis(a, 0, -1), (3, 4, 2)),
                     (lambda a: mnp.moveaxis(a, [0, 1], [-1, -2]), (4, 3, 2))]:
        got = run(way, f, y)
        assert got.shape == shape
        np.testing.assert_array_equal(got, f(y))  # NumPy's own swapaxes/moveaxis


def test_swapaxes_is_one_transpose():
    printed = str(mj.make_jaxpr(lambda a: mnp.swapaxes(a, 0, 1))(np.ones((3, 4))))
    assert "b:f64[4,3] = transpose[permutation=(1, 0)] a" in printed


@pytest.mark.parametrize("backend", BACKENDS)
def test_numpys_split_works_on_tracers_as_on_jax_arrays(backend):
    """np.split and np.array_split call `.swapaxes` and slice: a tracer has both."""
    x = np.arange(4.0)
    for f, want in [(lambda a: np.split(a, 2), [[0, 1], [2, 3]]),
                    (lambda a: np.split(a, [1, 3]), [[0], [1, 2], [3]]),
                    (lambda a: np.array_split(a, 3), [[0, 1], [2], [3]])]:
        got = mj.jit(f, backend=backend)(x)
        assert len(got) == len(want)
        for g, w in zip(got, want):
            same(g, w, np.float64)
    m = np.ones((3, 4))
    assert mj.jit(lambda a: np.swapaxes(a, 0, 1), backend=backend)(m).shape == (4, 3)
    assert mj.jit(lambda a: np.moveaxis(a, 0, 1), backend=backend)(m).shape == (4, 3)
