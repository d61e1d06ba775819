"""Loops the fuzzer found wrong, each checked against JAX 0.10.2 (jax_enable_x64): on both
backends and under `minijit.disable_jit()`.

- A `fori_loop` body that reads a closed-over array with a dimension of size 1 (`where(v > 0,
  0.0, v)` of a `f64[1]`) is still interchanged (`codegen/control_rules.py`): each value of
  the body is its element at the loop's position, a size-1 dimension read at 0.
- Under `disable_jit`, as in JAX, loops are Python loops: `fori_loop`'s `i` is a Python int,
  and no carry's type is checked.
- A weakly typed initial carry (a Python scalar) that the body returns with its own dtype but
  strong stays weak, and the body is traced once; one that comes back as another dtype is
  promoted once to the dtype the two promote to (JAX's `_promote_weak_typed_input`), and a
  loop's results have the types its body returns.

The same file runs on real JAX, which is how every expected value here was checked:

    MINIJIT_EXAMPLES_ON_JAX=1 python -m pytest --noconftest -p no:cacheprovider \
        tests/test_loop_regressions.py          # in an environment with jax and pytest
"""

from __future__ import annotations

import os

import numpy as np
import pytest

ON_JAX = bool(os.environ.get("MINIJIT_EXAMPLES_ON_JAX"))
if ON_JAX:  # the same checks on real JAX, in 64-bit mode
    import jax as mj
    import jax.numpy as mnp
    from jax import lax

    mj.config.update("jax_enable_x64", True)
else:
    import minijit as mj
    import minijit.numpy as mnp
    from minijit import lax

WAYS = ["numba", "interpreter", "disable_jit"]


def jit(f, backend: str):
    """`mj.jit(f, backend=backend)`; on JAX, its one jit."""
    return mj.jit(f) if ON_JAX else mj.jit(f, backend=backend)


def run(way: str, f, *args):
    """`f(*args)` jitted on the backend `way`, or through `jit` under `disable_jit`."""
    if way == "disable_jit":
        with mj.disable_jit():
            return mj.jit(f)(*args)
    return jit(f, way)(*args)


def typed(x) -> tuple:
    """What JAX's repr shows of a result: the type of a Python or NumPy scalar, else dtype,
    weak type and values."""
    if isinstance(x, (tuple, list)):
        return tuple(typed(y) for y in x)
    if isinstance(x, (bool, int, float)):
        return (type(x).__name__, x)
    if isinstance(x, np.generic):
        return (f"np.{x.dtype.name}", x.item())
    assert isinstance(x, mj.Array), type(x)
    return (x.dtype.name, x.weak_type, np.asarray(x).tolist())


# --------------------------------------------------------------------------- size-1 dimensions
# in an interchanged fori_loop (and the same bodies in while_loop and scan)

def _where_size1(v):
    return lax.fori_loop(0, 2, lambda i, c: c + mnp.where(v > 0, 0.0, v), np.zeros(3))


def _where_size1_constant_branches(v):
    return lax.fori_loop(0, 2, lambda i, c: c + mnp.where(v > 0, 0.0, 1.0), np.zeros(3))


def _where_size1_reads_the_index(v):
    return lax.fori_loop(0, 3, lambda i, c: c + mnp.where(v > i, 1.0, v), np.zeros(3))


def _masked_2d(v):
    return lax.fori_loop(0, 3, lambda i, c: mnp.where(c < 5, c + mnp.where(v > 0, v, -v), c),
                         np.zeros((2, 3)))


def _int_size1(v):
    return lax.fori_loop(0, 4, lambda i, c: mnp.where(c < 6, c + mnp.where(v > 0, v, 1), c),
                         np.zeros(4, np.int32))


def _reads_a_column(v):  # v[:, None]: v along axis 0 of the carry, not NumPy's axis 1
    return lax.fori_loop(0, 2, lambda i, c: mnp.where(c < 5, c + v[:, None], c),
                         np.zeros((3, 3)))


def _traced_bound(v, n):
    return lax.fori_loop(0, n, lambda i, c: c + mnp.where(v > 0, 0.0, v), np.zeros(3))


def _while_size1(v):
    return lax.while_loop(lambda c: c[0] > -20, lambda c: c + mnp.where(v > 0, 0.0, v),
                          np.zeros(3))


def _scan_size1(v):
    return lax.scan(lambda c, x: (c + mnp.where(v > x, x, v), c.sum()), np.zeros(3),
                    np.arange(3.0))


# (function, arguments, what JAX gives, whether the numba backend interchanges the loop)
SIZE1 = {
    "where_f64[1]": (_where_size1, (np.array([-7.0]),), [-14.0] * 3, True),
    "constant_branches": (_where_size1_constant_branches, (np.array([-7.0]),), [2.0] * 3, True),
    "reads_the_index": (_where_size1_reads_the_index, (np.array([1.5]),), [3.5] * 3, True),
    "f64[2,1]_in_[2,3]": (_masked_2d, (np.array([[1.0], [-2.0]]),),
                          [[3.0, 3.0, 3.0], [6.0, 6.0, 6.0]], True),
    "f64[1,3]_in_[2,3]": (_masked_2d, (np.array([[1.0, -2.0, 3.0]]),),
                          [[3.0, 6.0, 6.0], [3.0, 6.0, 6.0]], True),
    "f64[1,1]_in_[2,3]": (_masked_2d, (np.array([[-2.0]]),), [[6.0] * 3] * 2, True),
    "i32[1]": (_int_size1, (np.array([2], np.int32),), [6, 6, 6, 6], True),
    "reads_a_column": (_reads_a_column, (np.arange(3.0),),
                       [[0.0] * 3, [2.0] * 3, [4.0] * 3], False),
    "traced_bound": (_traced_bound, (np.array([-7.0]), 2), [-14.0] * 3, True),
    "while_loop": (_while_size1, (np.array([-7.0]),), [-21.0] * 3, False),
    "scan": (_scan_size1, (np.array([1.5]),), ([2.5] * 3, [0.0, 0.0, 3.0]), False),
}


@pytest.mark.parametrize("way", WAYS)
@pytest.mark.parametrize("case", list(SIZE1))
def test_a_closed_over_array_with_a_size_1_dimension(case, way):
    f, args, want, _ = SIZE1[case]
    got = run(way, f, *args)
    if isinstance(want, tuple):
        for g, w in zip(got, want):
            np.testing.assert_array_equal(g, w)
    else:
        np.testing.assert_array_equal(got, want)
        assert got.dtype == np.asarray(args[0]).dtype


@pytest.mark.skipif(ON_JAX, reason="minijit's generated code")
@pytest.mark.parametrize("case", list(SIZE1))
def test_the_loop_stays_interchanged_where_each_value_has_one_element_per_position(case):
    f, args, _, interchanged = SIZE1[case]
    text = mj.jit(f, backend="numba").lower(*args).as_text()
    assert ("interchanged" in text) == interchanged


# --------------------------------------------------------------------------- disable_jit:
# Python loops, as JAX's


def _f4(n, c):
    return lax.fori_loop(0, n, lambda i, c: i, c)


@pytest.mark.parametrize("way", WAYS)
def test_fori_loop_index_is_the_bounds_type_jitted_and_a_python_int_without_jit(way):
    # JAX: jit gives Array(2, dtype=int32); under disable_jit the Python int 2
    got = run(way, _f4, np.int32(3), np.int32(0))
    assert typed(got) == (("int", 2) if way == "disable_jit" else ("int32", False, 2))


@pytest.mark.parametrize("bounds", [(0, np.int32(3)), (np.int32(0), np.int32(3)), (0, 3),
                                    (np.int64(0), np.int64(3)), (0, mnp.int32(3)),
                                    (np.uint32(0), np.uint32(3))],
                         ids=["0,i32", "i32,i32", "0,3", "i64,i64", "0,Array-i32", "u32,u32"])
def test_under_disable_jit_the_body_gets_python_ints(bounds):
    seen = []

    def body(i, c):
        seen.append(i)
        return c + 1

    with mj.disable_jit():
        out = lax.fori_loop(*bounds, body, np.int32(0))
    assert seen == [0, 1, 2] and all(type(i) is int for i in seen)
    assert typed(out) == ("np.int32", 3)  # NumPy's own int32 + 1


def test_the_index_under_jit_is_what_jax_traces():
    # JAX: static bounds give a weak int64 `i` (a Python int's), whatever their dtype; a
    # traced int32 bound gives an int32 `i`.
    seen = []

    def body(i, c):
        seen.append((i.aval.dtype.name, i.aval.weak_type))
        return c

    mj.jit(lambda c: lax.fori_loop(np.int32(0), np.int32(2), body, c))(np.int32(0))
    mj.jit(lambda n, c: lax.fori_loop(0, n, body, c))(np.int32(2), np.int32(0))
    assert seen == [("int64", True), ("int32", False)]


def test_under_disable_jit_nothing_checks_the_carry():
    # JAX runs each loop in Python: a carry may change type, and the results are whatever
    # the body returned (a while_loop's leaves made arrays, weakly typed from Python scalars)
    with mj.disable_jit():
        assert typed(lax.fori_loop(0, 3, lambda i, c: c + 0.5, 2)) == ("float", 3.5)
        assert typed(lax.fori_loop(0, 3, lambda i, c: mnp.array(3, mnp.int32), 0.0)) == (
            "int32", False, 3)
        assert typed(lax.scan(lambda c, x: (c + x, c + x), 0, np.arange(3.0))) == (
            ("float64", False, 3.0), ("float64", False, [0.0, 1.0, 3.0]))
        assert typed(lax.while_loop(lambda c: False, lambda c: c, (0.0, 1))) == (
            ("float64", True, 0.0), ("int64", True, 1))
        assert typed(lax.fori_loop(0, 0, lambda i, c: c, 5)) == ("int", 5)
        with pytest.raises(ValueError, match="zero-length scan"):
            lax.scan(lambda c, x: (c, x), 0.0, np.zeros(0))


def test_under_disable_jit_a_traced_loop_is_still_staged():
    # make_jaxpr under disable_jit, as JAX: a scan with static bounds unrolls, a while_loop
    # whose condition is traced is staged
    with mj.disable_jit():
        unrolled = mj.make_jaxpr(lambda x: lax.fori_loop(0, 3, lambda i, c: c * 2, x))(1.0)
        staged = mj.make_jaxpr(lambda x: lax.while_loop(lambda c: c < 10, lambda c: c * 2,
                                                        x))(1.0)
    assert [e.primitive.name for e in unrolled.jaxpr.eqns] == ["mul"] * 3
    assert "while" in [e.primitive.name for e in staged.jaxpr.eqns]


# --------------------------------------------------------------------------- weak carries


def _body5(i, c):
    return mnp.astype(c[0] + c[1], mnp.int64), c[0] + c[1]


LOOPS5 = {
    "fori_loop": lambda x: lax.fori_loop(0, 3, _body5, (2, x)),
    "fori_loop_traced_bound": lambda x, n: lax.fori_loop(0, n, _body5, (2, x)),
    "scan": lambda x: lax.scan(lambda c, _: (_body5(0, c), None), (2, x), length=3)[0],
    "while_loop": lambda x: lax.while_loop(lambda c: c[1] < 10, lambda c: _body5(0, c), (2, x)),
}


@pytest.mark.parametrize("way", WAYS)
@pytest.mark.parametrize("loop", list(LOOPS5))
def test_a_weak_carry_that_comes_back_strong_keeps_its_dtype(loop, way):
    # JAX traces the body once with the weak 2: 2 + int32 is int32, so the second carry stays
    # int32: (16 int64, 16 int32). Under disable_jit the Python loop's second carry is
    # int64 + int32 = int64 from the second step on: (16 int64, 16 int64).
    args = (np.int32(2), np.int32(3))[:LOOPS5[loop].__code__.co_argcount]
    got = run(way, LOOPS5[loop], *args)
    second = "int64" if way == "disable_jit" else "int32"
    assert typed(got) == (("int64", False, 16), (second, False, 16))


def test_the_body_is_traced_once():
    traced = []

    def body(i, c):
        traced.append([(a.aval.dtype.name, a.aval.weak_type) for a in c])
        return _body5(i, c)

    lax.fori_loop(0, 3, body, (2, np.int32(2)))
    assert traced == [[("int64", True), ("int32", False)]]


def _fori(init, fn):
    return lambda: lax.fori_loop(0, 3, lambda i, c: fn(c), init)


def _scan(init, fn):
    return lambda: lax.scan(lambda c, _: (fn(c), None), init, length=3)[0]


def _while(init, fn):  # no step: the result is the initial carry, in the loop's types
    return lambda: lax.while_loop(lambda c: False, fn, init)


# initial carry, body, and what JAX gives for fori_loop, scan and while_loop (jitted)
ACCEPTED = {
    "weak_int_back_strong": (2, lambda c: mnp.int64(1) * c, [("int64", False, 2)] * 3),
    "weak_int_to_int32": (2, lambda c: c + mnp.int32(1),
                          [("int32", False, 5), ("int32", False, 5), ("int32", False, 2)]),
    "weak_int_to_float64": (2, lambda c: c + mnp.float64(0.5),
                            [("float64", False, 3.5)] * 2 + [("float64", False, 2.0)]),
    "weak_int_to_weak_float": (2, lambda c: c + 0.5,
                               [("float64", False, 3.5)] * 2 + [("float64", False, 2.0)]),
    "weak_int_to_float32": (2, lambda c: c + mnp.float32(0.5),
                            [("float32", False, 3.5)] * 2 + [("float32", False, 2.0)]),
    "weak_float_to_float32": (0.0, lambda c: mnp.float32(1.5) * c + 1,
                              [("float32", False, 4.75)] * 2 + [("float32", False, 0.0)]),
    "weak_float_stays_weak": (0.0, lambda c: c + 1,
                              [("float64", True, 3.0)] * 2 + [("float64", True, 0.0)]),
    "strong_int32_weak_result": (np.int32(2), lambda c: c * 2,
                                 [("int32", False, 16)] * 2 + [("int32", False, 2)]),
}

# JAX: "... carry input and carry output must have equal types" for each loop
REFUSED = {
    "weak_float_to_int32": (0.0, lambda c: mnp.array(3, mnp.int32)),
    "weak_float_to_int64": (0.0, lambda c: mnp.array(3, mnp.int64)),
    "weak_float_to_bool": (0.0, lambda c: c > 1),
    "weak_int_to_an_array": (2, lambda c: mnp.zeros(3) + c),
    "strong_int32_to_int64": (np.int32(2), lambda c: c + mnp.int64(1)),
}


@pytest.mark.parametrize("backend", ["numba", "interpreter"])
@pytest.mark.parametrize("case", list(ACCEPTED))
def test_weak_carries_accepted_as_jax_accepts_them(case, backend):
    init, fn, want = ACCEPTED[case]
    for make, w in zip((_fori, _scan, _while), want):
        assert typed(jit(make(init, fn), backend)()) == w, make.__name__


@pytest.mark.parametrize("case", list(ACCEPTED))
def test_weak_carries_accepted_eagerly_with_the_same_types(case):
    init, fn, want = ACCEPTED[case]
    for make, w in zip((_fori, _scan, _while), want):
        assert typed(make(init, fn)()) == w, make.__name__


@pytest.mark.parametrize("backend", ["numba", "interpreter", "eager"])
@pytest.mark.parametrize("case", list(REFUSED))
def test_weak_carries_refused_as_jax_refuses_them(case, backend):
    init, fn = REFUSED[case]
    for make in (_fori, _scan, _while):
        f = make(init, fn)
        with pytest.raises(TypeError, match="carry"):
            f() if backend == "eager" else jit(f, backend)()


def test_under_disable_jit_the_refused_carries_run():
    # JAX's Python loops check nothing: fori_loop and scan give the body's last value
    with mj.disable_jit():
        assert typed(_fori(0.0, lambda c: mnp.array(3, mnp.int32))()) == ("int32", False, 3)
        assert typed(_scan(2, lambda c: mnp.zeros(3) + c)()) == ("float64", False, [2.0] * 3)
        assert typed(_fori(0.0, lambda c: c > 1)()) == ("bool", False)  # Python's 0.0 > 1


def test_a_loop_result_has_the_type_its_body_returns():
    # JAX: the weak 2 comes back strong int64, so `+ int32` gives int64 (a weak result would
    # give int32)
    out = mj.jit(lambda x: lax.fori_loop(0, 3, lambda i, c: mnp.int64(1) * c, 2) + x)(
        np.int32(1))
    assert typed(out) == ("int64", False, 3)
