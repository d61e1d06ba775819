"""Edge cases of `minijit.numpy` that the catalogue does not reach naturally.

Error messages (they must name the shapes and say what to do instead), eager mode (outside
`jit`, `mnp` computes on NumPy and returns `mj.Array`, which is immutable and has `.at`), and
`mnp.asarray` of lists holding tracers.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

import minijit as mj
import minijit.numpy as mnp
from minijit import errors


def traced(f, *args):
    """Run `f` under `jit` (so errors are raised while tracing)."""
    return mj.jit(f)(*args)


# --------------------------------------------------------------------------- error messages


@pytest.mark.parametrize("run", ["eager", "traced", "method"])
def test_reshape_to_a_bad_size(run):
    x = np.ones(6)
    f = {"eager": lambda x: mnp.reshape(x, (4, 2)), "traced": lambda x: mnp.reshape(x, (4, 2)),
         "method": lambda x: x.reshape(4, 2)}[run]
    with pytest.raises(TypeError, match=re.escape("cannot reshape array of shape (6,) (size 6) "
                                                  "into shape (4, 2) (size 8)")):
        f(mnp.asarray(x)) if run == "eager" else traced(f, x)


@pytest.mark.parametrize("shape", [(4, 2), 4, (4, -1), (-1, -1)])  # JAX fails on (0, -1)
def test_reshape_errors_are_jaxs(shape):
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)

    def error(reshape):
        with pytest.raises(Exception) as info:
            reshape(np.ones(6), shape)
        return type(info.value), str(info.value).splitlines()[0]

    assert error(mnp.reshape) == error(lambda x, s: jax.numpy.asarray(x).reshape(s))


def test_reshape_with_two_unknown_dimensions():
    with pytest.raises(TypeError, match="only specify one unknown axis size"):
        traced(lambda x: x.reshape(-1, -1), np.ones(6))
    with pytest.raises(TypeError, match=re.escape("(size 6) into shape (4, -1) because")):
        traced(lambda x: x.reshape(4, -1), np.ones(6))


@pytest.mark.parametrize("a,b", [((2, 3), (2, 3)), ((3,), (4,)), ((2, 3), (4,)), ((5,), (4, 2))])
def test_matmul_misalignment_names_both_shapes(a, b):
    with pytest.raises(TypeError, match="not aligned") as info:  # JAX's class
        traced(lambda x, y: x @ y, np.ones(a), np.ones(b))
    assert str(a) in str(info.value) and str(b) in str(info.value)
    with pytest.raises(TypeError, match="not aligned"):
        mnp.dot(np.ones(a), np.ones(b))


def test_matmul_of_a_scalar_says_use_multiply():
    with pytest.raises(ValueError, match="use \\*"):
        traced(lambda x: mnp.matmul(x, 2.0), np.ones(3))


def test_too_many_indices():
    with pytest.raises(IndexError, match="array is 2-dimensional, but 3 were indexed"):
        traced(lambda x: x[0, 1, 0], np.ones((2, 3)))
    with pytest.raises(IndexError, match="array is 1-dimensional, but 2 were indexed"):
        traced(lambda x, i: x[i, i], np.ones(3), 1)


@pytest.mark.parametrize("read, want", [
    (lambda x: x[11], 9),  # clamped to the last element, as in JAX
    (lambda x: x[-11], 0),  # counted from the end (-1), then clamped to the first
    (lambda x: x.reshape(2, 5)[1, 7], 9),
    (lambda x: x.reshape(2, 5)[3, -9], 5),  # row 3 clamps to 1, column -9 + 5 = -4 to 0
    (lambda x: x.at[11].get(), 9),
])
def test_static_out_of_bounds_reads_clamp_eagerly_and_traced(read, want):
    x = mnp.arange(10)
    assert int(read(x)) == want  # eagerly
    assert int(mj.jit(read)(x)) == want  # traced
    with pytest.raises(IndexError, match="out of bounds for axis 0 with size 0"):
        mnp.zeros(0)[0]  # an empty axis has nothing to clamp to


def test_static_out_of_bounds_updates_are_dropped_eagerly_and_traced():
    x = mnp.arange(5)
    for update in (lambda x: x.at[11].set(7), lambda x: x.at[-11].add(7)):
        np.testing.assert_array_equal(update(x), np.arange(5))
        np.testing.assert_array_equal(mj.jit(update)(x), np.arange(5))


@pytest.mark.parametrize("index", [
    pytest.param(lambda x, i: x[np.array([0, 1])], id="numpy-array"),
    pytest.param(lambda x, i: x[mnp.stack([i, i])], id="traced-int-array"),
    pytest.param(lambda x, i: x[x > 0], id="boolean-mask"),
    pytest.param(lambda x, i: x[i * 1.0], id="traced-float"),
    pytest.param(lambda x, i: x[True], id="bool"),
])
def test_array_indexing_gives_a_clear_index_error(index):
    with pytest.raises(IndexError, match="minijit supports indexing with ints, slices") as info:
        traced(index, np.arange(3.0), 1)
    assert "mnp.where" in str(info.value)  # the suggested replacement for a mask


def test_a_list_index_is_jaxs_type_error_eagerly_and_traced():
    for run in (lambda f, x: f(x), lambda f, x: traced(f, x)):
        with pytest.raises(TypeError, match=r"non-tuple sequence.*arr\[array\(seq\)\]"):
            run(lambda x: x[[0, 1]], mnp.arange(3.0))
    np.testing.assert_array_equal(mnp.arange(3.0)[np.array([0, 2])], [0.0, 2.0])


def test_at_update_with_an_array_index_is_an_index_error():
    with pytest.raises(IndexError, match="minijit supports indexing"):
        traced(lambda x: x.at[np.array([0, 2])].set(1.0), np.zeros(3))


def test_two_ellipses():
    with pytest.raises(IndexError, match="single ellipsis"):
        traced(lambda x: x[..., 0, ...], np.ones((2, 2)))


@pytest.mark.parametrize("f,exc,pattern", [
    (lambda x: mnp.sum(x, axis=2), ValueError, "axis 2 is out of bounds for array of dimension 2"),
    (lambda x: mnp.squeeze(x, axis=0), ValueError, "size not equal to one"),
    (lambda x: mnp.concatenate([x, x[0]]), TypeError, "different numbers of dimensions"),
    (lambda x: mnp.stack([x, x[:1]]), ValueError, "same shape"),
    (lambda x: mnp.broadcast_to(x, (3, 4)), ValueError,
     re.escape("cannot broadcast an array of shape (2, 3) to shape (3, 4)")),
    (lambda x: mnp.pad(x, 1, mode="edge"), NotImplementedError, "mode='constant' only"),
    (lambda x: mnp.pad(x, -1), ValueError, "negative"),
    (lambda x: mnp.where(x > 0, x, 0, size=2), ValueError, "three-term where"),
    (lambda x: mnp.reshape(x, 6, order="F"), NotImplementedError, "order='C'"),
    (lambda x: mnp.matmul(x[None], x.T), NotImplementedError, "1-D and 2-D"),
    (lambda x: mnp.power(x.astype(mnp.int32), -1), ValueError, "negative integer powers"),
    (lambda x: mnp.invert(x), TypeError, "bool or integer"),
])
def test_errors_eager_and_traced_agree(f, exc, pattern):
    x = np.ones((2, 3))
    with pytest.raises(exc, match=pattern):
        f(mnp.asarray(x))
    with pytest.raises(exc, match=pattern):
        traced(f, x)


def test_shapes_must_be_static():
    with pytest.raises(errors.ConcretizationTypeError, match="static"):
        traced(lambda n: mnp.zeros(n), 3)
    with pytest.raises(errors.ConcretizationTypeError, match="arange"):
        traced(lambda n: mnp.arange(n), 3)
    assert mj.jit(lambda n: mnp.zeros(n), static_argnums=0)(3).shape == (3,)


@pytest.mark.parametrize("value", [np.ones(2, np.float16), np.array([1j]), np.array(["a"])],
                         ids=["float16", "complex", "str"])
def test_unsupported_dtypes_are_rejected(value):
    with pytest.raises(TypeError, match="minijit does not support"):
        mnp.asarray(value)


def test_jit_rejects_unsupported_argument_dtype_naming_the_argument():
    with pytest.raises(TypeError, match="argument `x` .* float16"):
        mj.jit(lambda x: x)(np.ones(2, np.float16))


# --------------------------------------------------------------------------- eager mode

EAGER_FUNCTIONS = {
    "sin": lambda x: mnp.sin(x),
    "add_scalar": lambda x: mnp.add(x, 1),
    "sum": lambda x: mnp.sum(x),
    "argmax": lambda x: mnp.argmax(x),
    "matmul": lambda x: mnp.matmul(x, x.T),
    "reshape_same_shape": lambda x: mnp.reshape(x, (2, 3)),
    "reshape": lambda x: mnp.reshape(x, -1),
    "astype_same_dtype": lambda x: mnp.astype(x, np.float64),
    "transpose": lambda x: mnp.transpose(x),
    "transpose_identity": lambda x: mnp.transpose(x, (0, 1)),
    "squeeze_nothing": lambda x: mnp.squeeze(x),
    "broadcast_to_same_shape": lambda x: mnp.broadcast_to(x, (2, 3)),
    "positive": lambda x: mnp.positive(x),
    "floor_of_ints": lambda x: mnp.floor(x.astype(np.int32)),
    "abs_of_uint": lambda x: mnp.abs(x.astype(np.uint8)),
    "asarray": lambda x: mnp.asarray(x),
    "where": lambda x: mnp.where(x > 1, x, 0.0),
    "zeros_0d": lambda x: mnp.zeros(()),
    "full_0d": lambda x: mnp.full((), 2.0),
    "zeros": lambda x: mnp.zeros((2, 2)),
    "eye": lambda x: mnp.eye(2),
    "arange": lambda x: mnp.arange(3),
    "getitem_traced_style": lambda x: mnp.asarray(x)[0, ::-1],
}


@pytest.mark.parametrize("name", sorted(EAGER_FUNCTIONS))
def test_eager_results_are_arrays(name):
    x = np.arange(6.0).reshape(2, 3)
    out = EAGER_FUNCTIONS[name](x)
    assert type(out) is mj.Array, f"mnp {name} returned {type(out).__name__}"
    assert isinstance(out, np.ndarray)
    assert type(x) is np.ndarray  # the input is left alone


def test_eager_results_match_numpy():
    x = np.linspace(-2, 2, 7)
    np.testing.assert_array_equal(mnp.tanh(x), np.tanh(x), strict=False)
    np.testing.assert_array_equal(mnp.clip(x, -1, 1), np.clip(x, -1, 1), strict=False)
    assert mnp.sum(x).shape == ()


def test_eager_at_updates():
    x = mnp.asarray(np.arange(5.0))
    np.testing.assert_array_equal(x.at[1].set(9.0), [0, 9, 2, 3, 4])
    np.testing.assert_array_equal(x.at[-1].add(1.0), [0, 1, 2, 3, 5])
    np.testing.assert_array_equal(x.at[1:3].multiply(10.0), [0, 10, 20, 3, 4])
    np.testing.assert_array_equal(x.at[2].min(-1.0), [0, 1, -1, 3, 4])
    np.testing.assert_array_equal(x.at[0].max(7.0), [7, 1, 2, 3, 4])
    assert x.at[3].get() == 3.0
    np.testing.assert_array_equal(x, np.arange(5.0))  # x itself never changes
    out = x.at[0].set(1)
    assert type(out) is mj.Array and out.dtype == np.float64


def test_eager_at_update_keeps_the_dtype():
    x = mnp.asarray(np.zeros(3, np.int32))
    out = x.at[1].add(2.7)
    assert out.dtype == np.int32
    np.testing.assert_array_equal(out, [0, 2, 0])


def test_eager_at_2d():
    x = mnp.zeros((2, 3))
    np.testing.assert_array_equal(x.at[1].set(np.arange(3.0)), [[0, 0, 0], [0, 1, 2]])
    np.testing.assert_array_equal(x.at[:, 2].add(1.0), [[0, 0, 1], [0, 0, 1]])


@pytest.mark.parametrize("make", [lambda: mnp.ones(3), lambda: mj.jit(lambda x: x * 2)(np.ones(3)),
                                  lambda: mnp.asarray(np.ones(3))],
                         ids=["mnp.ones", "jit-output", "asarray"])
def test_setitem_on_an_array_points_at_at(make):
    x = make()
    assert isinstance(x, mj.Array)
    with pytest.raises(TypeError, match=re.escape("x.at[idx].set(y)")):
        x[0] = 1
    np.testing.assert_array_equal(x, [x[0]] * 3)  # nothing was written


def test_setitem_on_a_tracer_points_at_at():
    def f(x):
        x[0] = 1.0
        return x

    with pytest.raises(TypeError, match=re.escape("x = x.at[idx].set(y)")):
        mj.jit(f)(np.ones(3))


def test_at_on_jit_output_and_inside_jit():
    y = mj.jit(lambda x: x + 1)(np.zeros(3))
    np.testing.assert_array_equal(y.at[0].set(5.0), [5, 1, 1])
    np.testing.assert_array_equal(mj.jit(lambda x: x.at[0].set(5.0))(np.zeros(3)), [5, 0, 0])


def test_disable_jit_passes_arrays_with_at():
    @mj.jit
    def f(x):
        assert isinstance(x, mj.Array)  # not a tracer: jit is off
        return x.at[0].set(3.0)

    with mj.disable_jit():
        np.testing.assert_array_equal(f(np.zeros(2)), [3, 0])


def test_square_of_bools_computes_in_int32_like_jax():
    b = np.array([True, False])
    out = mnp.square(b)
    assert out.dtype == np.int32  # JAX 0.10.2: int32; NumPy: int8
    np.testing.assert_array_equal(out, [1, 0])


# --------------------------------------------------------------------------- asarray of tracers


def test_asarray_of_a_list_of_tracers_stacks_them():
    def f(a, b):
        return mnp.asarray([a, b, a * b])

    closed = mj.make_jaxpr(f)(2.0, 3.0)
    assert "concatenate" in {e.primitive.name for e in closed.eqns}
    (aval,) = closed.out_avals
    assert aval.shape == (3,)
    np.testing.assert_array_equal(mj.jit(f)(2.0, 3.0), [2.0, 3.0, 6.0])


def test_asarray_of_nested_lists_of_tracers():
    out = mj.jit(lambda a, b: mnp.asarray([[a, b], [b, a]]))(np.float32(1), np.float32(2))
    np.testing.assert_array_equal(out, [[1, 2], [2, 1]])
    assert out.shape == (2, 2) and out.dtype == np.float32


def test_asarray_of_tracer_rows():
    out = mj.jit(lambda x: mnp.array([x, x * 2, x + 1]))(np.arange(2.0))
    np.testing.assert_array_equal(out, [[0, 1], [0, 2], [1, 2]])


def test_asarray_of_tracers_and_python_scalars_promotes_like_numpy():
    out = mj.jit(lambda i: mnp.asarray([i, 1.5]))(np.int32(2))
    expected = np.asarray([np.int32(2), 1.5])
    assert out.dtype == expected.dtype
    np.testing.assert_array_equal(out, expected)


def test_asarray_with_dtype_converts_tracers():
    out = mj.jit(lambda a, b: mnp.asarray([a, b], dtype=mnp.int32))(1.7, 2.2)
    assert out.dtype == np.int32
    np.testing.assert_array_equal(out, [1, 2])


def test_asarray_of_a_tracer_is_the_tracer():
    def f(x):
        y = mnp.asarray(x)
        assert y is x
        return y

    mj.jit(f)(np.ones(2))


def test_static_out_of_bounds_update_is_dropped_as_in_jax():
    np.testing.assert_array_equal(mnp.zeros(3).at[5].set(1.0), np.zeros(3))
    np.testing.assert_array_equal(mj.jit(lambda x: x.at[-7].add(1.0))(np.zeros(3)), np.zeros(3))


def test_mean_casts_to_a_requested_dtype_like_numpy():
    out = mnp.mean(np.arange(4), dtype=np.int32)
    assert out.dtype == np.int32 and out == np.mean(np.arange(4), dtype=np.int32)


@pytest.mark.parametrize("call,cls,text", [
    (lambda: mnp.sum(np.ones((2, 2)), axis=(1, -1)), ValueError, "duplicate value in 'axis'"),
    (lambda: mnp.max(np.zeros(0)), ValueError, "zero-size array"),
    (lambda: mnp.argmax(np.ones((2, 2)), axis=(0, 1)), TypeError, "axis must be an integer"),
    (lambda: mnp.concatenate([np.ones((2, 3)), np.ones((2, 4))]), TypeError,
     r"concatenating along dimension 0 for shapes \(2, 3\), \(2, 4\)"),
])
def test_errors_use_jaxs_classes(call, cls, text):
    with pytest.raises(cls, match=text):
        call()
