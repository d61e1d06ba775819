"""Examples from JAX's documentation that run on minijit with only the imports changed.

Each snippet is JAX's text with `import jax` / `import jax.numpy as jnp` replaced by minijit's
modules; the assertions check the values JAX's documentation shows.
"""

from functools import partial

import numpy as np

import minijit as jax
import minijit.numpy as jnp
from minijit import lax


def test_jit_tutorial_make_jaxpr_and_static_argnames():
    # "Just-in-time compilation": make_jaxpr of log2, and a while loop on a static n.
    def log2(x):
        ln_x = jnp.log(x)
        ln_2 = jnp.log(2.0)
        return ln_x / ln_2

    printed = str(jax.make_jaxpr(log2)(3.0))
    assert "log a" in printed and "div b c" in printed

    def g(x, n):
        i = 0
        while i < n:
            i += 1
        return x + i

    g_jit_correct = jax.jit(g, static_argnames=["n"])
    assert g_jit_correct(10, 20) == 30

    @partial(jax.jit, static_argnames=["n"])
    def g_jit_decorated(x, n):
        i = 0
        while i < n:
            i += 1
        return x + i

    assert g_jit_decorated(10, 20) == 30


def test_sharp_bits_in_place_updates():
    # "Sharp bits": array updates with .at, including a strided slice.
    jax_array = jnp.zeros((3, 3), dtype=jnp.float32)
    new_jax_array = jax_array.at[1, :].set(1.0)
    np.testing.assert_array_equal(jax_array, np.zeros((3, 3)))
    np.testing.assert_array_equal(new_jax_array, [[0, 0, 0], [1, 1, 1], [0, 0, 0]])
    assert new_jax_array.dtype == np.float32

    jax_array = jnp.ones((5, 6))
    new_jax_array = jax_array.at[::2, 3:].add(7.0)
    expected = np.ones((5, 6))
    expected[::2, 3:] += 7
    np.testing.assert_array_equal(new_jax_array, expected)


def test_control_flow_tutorial():
    # "Control flow and logical operators with JIT": cond, while_loop, fori_loop, where.
    operand = jnp.array([0.0])
    np.testing.assert_array_equal(lax.cond(True, lambda x: x + 1, lambda x: x - 1, operand), [1])
    np.testing.assert_array_equal(lax.cond(False, lambda x: x + 1, lambda x: x - 1, operand),
                                  [-1])
    assert lax.while_loop(lambda x: x < 10, lambda x: x + 1, 0) == 10
    assert lax.fori_loop(0, 10, lambda i, x: x + i, 0) == 45

    @jax.jit
    def f(x):
        return jnp.where(x < 3, 3.0 * x**2, -4 * x)

    np.testing.assert_array_equal(f(jnp.arange(6.0)), [0, 3, 12, -12, -16, -20])


# --- integer shifts and conversions
# Outputs as JAX 0.10.2 gives them with jax_enable_x64 (int64 where the docs, in 32-bit mode,
# show int32).


def test_left_shift_docstring():
    # `jnp.left_shift`'s docstring examples.
    def print_binary(x):
        return [bin(int(val)) for val in x]

    x1 = jnp.arange(5)
    assert print_binary(x1) == ["0b0", "0b1", "0b10", "0b11", "0b100"]
    x2 = 1
    result = jnp.left_shift(x1, x2)
    np.testing.assert_array_equal(result, [0, 2, 4, 6, 8])
    assert result.dtype == jnp.int64
    assert print_binary(result) == ["0b0", "0b10", "0b100", "0b110", "0b1000"]

    x3 = 4
    assert print_binary([x3]) == ["0b100"]
    x4 = jnp.array([1, 2, 3, 4])
    result1 = jnp.left_shift(x3, x4)
    np.testing.assert_array_equal(result1, [8, 16, 32, 64])
    assert print_binary(result1) == ["0b1000", "0b10000", "0b100000", "0b1000000"]


def test_right_shift_docstring():
    # `jnp.right_shift`'s docstring examples.
    def print_binary(x):
        return [bin(int(val)) for val in x]

    x1 = jnp.array([1, 2, 4, 8])
    assert print_binary(x1) == ["0b1", "0b10", "0b100", "0b1000"]
    x2 = 1
    result = jnp.right_shift(x1, x2)
    np.testing.assert_array_equal(result, [0, 1, 2, 4])
    assert print_binary(result) == ["0b0", "0b1", "0b10", "0b100"]

    x1 = 16
    assert print_binary([x1]) == ["0b10000"]
    x2 = jnp.array([1, 2, 3, 4])
    result = jnp.right_shift(x1, x2)
    np.testing.assert_array_equal(result, [8, 4, 2, 1])
    assert result.dtype == jnp.int64
    assert print_binary(result) == ["0b1000", "0b100", "0b10", "0b1"]


def test_sharp_bits_unsafe_cast():
    # "Sharp bits", Miscellaneous divergences from NumPy: an unsafe float-to-int cast.
    # NumPy's np.arange(254.0, 258.0).astype('uint8') is [254, 255, 0, 1] on x86 (C leaves
    # the cast undefined, so it is not asserted here); JAX's, and minijit's, saturates.
    out = jnp.arange(254.0, 258.0).astype('uint8')
    np.testing.assert_array_equal(out, [254, 255, 255, 255])
    assert out.dtype == jnp.uint8


def test_astype_docstring():
    # `jnp.astype`'s docstring examples.
    x = jnp.array([0, 1, 2, 3])
    out = x.astype('float32')
    np.testing.assert_array_equal(out, [0.0, 1.0, 2.0, 3.0])
    assert out.dtype == jnp.float32

    y = jnp.array([0.0, 0.5, 1.0])
    out = y.astype(int)  # truncates fractional values
    np.testing.assert_array_equal(out, [0, 0, 1])
    assert out.dtype == jnp.int64

# --- nonzero, lax.map, associative_scan, convolve and split


def test_nonzero_with_a_static_size():
    # jnp.nonzero's docstring: eagerly, then under jit with a static `size`.
    x = jnp.array([[0, 5, 0],
                   [6, 0, 7]])
    rows, cols = jnp.nonzero(x)
    np.testing.assert_array_equal(rows, [0, 1, 1])
    np.testing.assert_array_equal(cols, [1, 0, 2])
    indices = jnp.nonzero(x)
    np.testing.assert_array_equal(x[indices], [5, 6, 7])

    x = jnp.array([0, 5, 0, 6, 0, 7])
    try:
        jax.jit(jnp.nonzero)(x)
    except jax.errors.ConcretizationTypeError as e:
        assert "The size argument of" in str(e)
    else:
        raise AssertionError("jit(jnp.nonzero) without size must raise")

    nonzero_jit = jax.jit(jnp.nonzero, static_argnames='size')
    (i,) = nonzero_jit(x, size=3)
    np.testing.assert_array_equal(i, [1, 3, 5])
    (i,) = nonzero_jit(x, size=2)  # size < 3: indices are truncated
    np.testing.assert_array_equal(i, [1, 3])
    (i,) = nonzero_jit(x, size=5)  # size > 3: indices are padded with zeros.
    np.testing.assert_array_equal(i, [1, 3, 5, 0, 0])
    (i,) = nonzero_jit(x, size=5, fill_value=len(x))
    np.testing.assert_array_equal(i, [1, 3, 5, 6, 6])
    assert i.dtype == jnp.int64


def test_lax_map_with_batch_size(capsys):
    # lax.map's docstring: f is traced once for the batches and once for the remainder.
    x = jnp.ones((10, 3, 4))

    def f(x):
        print('inner shape:', x.shape)
        return x + 1

    y = lax.map(f, x, batch_size=3)
    assert capsys.readouterr().out == "inner shape: (3, 4)\ninner shape: (3, 4)\n"
    assert y.shape == (10, 3, 4)
    np.testing.assert_array_equal(y, 2.0)


def test_associative_scan_partial_sums():
    # lax.associative_scan's docstring, examples 1 and 3.
    np.testing.assert_array_equal(lax.associative_scan(jnp.add, jnp.arange(0, 4)), [0, 1, 3, 6])
    np.testing.assert_array_equal(
        lax.associative_scan(jnp.add, jnp.arange(0, 4), reverse=True), [6, 6, 5, 3])


def test_convolve_modes():
    # jnp.convolve's docstring.
    x = jnp.array([1, 2, 3, 2, 1])
    y = jnp.array([4, 1, 2])
    full = jnp.convolve(x, y)
    np.testing.assert_array_equal(full, [4., 9., 16., 15., 12., 5., 2.])
    assert full.dtype == jnp.float64  # ints convolve in a float (float32 without x64)
    np.testing.assert_array_equal(jnp.convolve(x, y, mode='same'), [9., 16., 15., 12., 5.])
    np.testing.assert_array_equal(jnp.convolve(x, y, mode='valid'), [16., 15., 12.])


def test_split(capsys):
    # jnp.split's docstring.
    x = jnp.array([1, 2, 3, 4, 5, 6, 7, 8, 9])
    chunks = jnp.split(x, 3)
    print(*chunks)
    chunks = jnp.split(x, [2, 7])  # [x[0:2], x[2:7], x[7:]]
    print(*chunks)
    x = jnp.array([[1, 2, 3, 4],
                   [5, 6, 7, 8]])
    x1, x2 = jnp.split(x, 2, axis=1)
    print(x1)
    print(x2)
    assert capsys.readouterr().out == (
        "[1 2 3] [4 5 6] [7 8 9]\n[1 2] [3 4 5 6 7] [8 9]\n[[1 2]\n [5 6]]\n[[3 4]\n [7 8]]\n")

# --- pytrees, ShapeDtypeStruct and debugging


def test_pytrees_tutorial_custom_pytree_nodes():
    # "Pytrees": a custom node registered with flatten and unflatten functions.
    from collections.abc import Iterable

    class MyContainer:
        """A named container."""

        def __init__(self, name: str, a: int, b: int, c: int):
            self.name = name
            self.a = a
            self.b = b
            self.c = c

    def flatten_MyContainer(container) -> tuple[Iterable[int], str]:
        flat_contents = [container.a, container.b, container.c]
        aux_data = container.name
        return flat_contents, aux_data

    def unflatten_MyContainer(aux_data: str, flat_contents: Iterable[int]) -> MyContainer:
        return MyContainer(aux_data, *flat_contents)

    jax.tree_util.register_pytree_node(MyContainer, flatten_MyContainer, unflatten_MyContainer)

    trees = [MyContainer('Alice', 1, 2, 3), MyContainer('Bob', 4, 5, 6)]
    assert jax.tree.leaves(trees) == [1, 2, 3, 4, 5, 6]
    out = jax.tree.map(lambda x: x + 1, trees)
    assert [(c.name, c.a, c.b, c.c) for c in out] == [('Alice', 2, 3, 4), ('Bob', 5, 6, 7)]
    assert str(jax.tree.structure(trees[:1])) == (
        "PyTreeDef([CustomNode(MyContainer[Alice], [*, *, *])])")


def test_pytrees_tutorial_key_paths(capsys):
    # "Pytrees": explicit key paths, printed with keystr and as key objects.
    import collections

    ATuple = collections.namedtuple("ATuple", ('name'))

    tree = [1, {'k1': 2, 'k2': (3, 4)}, ATuple('foo')]
    flattened, _ = jax.tree_util.tree_flatten_with_path(tree)

    for key_path, value in flattened:
        print(f'Value of tree{jax.tree_util.keystr(key_path)}: {value}')
    for key_path, _ in flattened:
        print(f'Key path of tree{jax.tree_util.keystr(key_path)}: {repr(key_path)}')

    assert capsys.readouterr().out.splitlines() == [
        "Value of tree[0]: 1",
        "Value of tree[1]['k1']: 2",
        "Value of tree[1]['k2'][0]: 3",
        "Value of tree[1]['k2'][1]: 4",
        "Value of tree[2].name: foo",
        "Key path of tree[0]: (SequenceKey(idx=0),)",
        "Key path of tree[1]['k1']: (SequenceKey(idx=1), DictKey(key='k1'))",
        "Key path of tree[1]['k2'][0]: (SequenceKey(idx=1), DictKey(key='k2'), SequenceKey(idx=0))",
        "Key path of tree[1]['k2'][1]: (SequenceKey(idx=1), DictKey(key='k2'), SequenceKey(idx=1))",
        "Key path of tree[2].name: (SequenceKey(idx=2), GetAttrKey(name='name'))",
    ]


def test_register_dataclass_docstring():
    # `jax.tree_util.register_dataclass`: data fields are traced, meta fields static.
    from dataclasses import dataclass, field

    @jax.tree_util.register_dataclass
    @dataclass
    class MyStruct:
        x: jax.Array  # defaults to non-static data field
        y: jax.Array  # defaults to non-static data field
        op: str = field(metadata=dict(static=True))  # marked as static meta field.

    m = MyStruct(x=jnp.ones(3), y=jnp.arange(3), op='add')
    leaves, treedef = jax.tree.flatten(m)
    assert repr(leaves) == (
        "[Array([1., 1., 1.], dtype=float64), Array([0, 1, 2], dtype=int64)]")
    assert str(treedef) == "PyTreeDef(CustomNode(MyStruct[('add',)], [*, *]))"
    # (a class defined in a function: its dataclass repr starts with the qualified name)
    assert repr(jax.tree.unflatten(treedef, leaves)).endswith(
        "MyStruct(x=Array([1., 1., 1.], dtype=float64), y=Array([0, 1, 2], dtype=int64), "
        "op='add')")

    @jax.jit
    def compiled_func(m):
        if m.op == 'add':
            return m.x + m.y
        else:
            raise ValueError(f"{m.op=}")

    assert repr(compiled_func(m)) == "Array([1., 2., 3.], dtype=float64)"


def test_aot_trace_with_shape_dtype_struct_and_eval_shape():
    # "Ahead-of-time lowering and compilation": trace for a ShapeDtypeStruct, then compile;
    # `jax.eval_shape`: shapes and dtypes with no FLOPs performed.
    def f(x, y): return 2 * x + y
    x, y = 3, 4

    i32_scalar = jax.ShapeDtypeStruct((), jnp.dtype('int32'))
    compiled = jax.jit(f).trace(i32_scalar, i32_scalar).lower().compile()
    assert repr(compiled(jnp.int32(x), jnp.int32(y))) == "Array(10, dtype=int32)"

    f = lambda A, x: jnp.tanh(jnp.dot(A, x))  # noqa: E731 - the docs write it so
    A = jax.ShapeDtypeStruct((2000, 3000), jnp.float32)
    x = jax.ShapeDtypeStruct((3000, 1000), jnp.float32)
    out = jax.eval_shape(f, A, x)  # no FLOPs performed
    assert out.shape == (2000, 1000)
    assert out.dtype == jnp.float32


def test_debugging_debug_print(capsys):
    # "Introduction to debugging": jax.debug.print inside jit prints the runtime values.
    @jax.jit
    def f(x):
        jax.debug.print("🤯 {x} 🤯", x=x)
        y = jnp.sin(x)
        jax.debug.print("🤯 {y} 🤯", y=y)
        return y

    f(2.)
    assert capsys.readouterr().out.splitlines() == ["🤯 2.0 🤯", "🤯 0.9092974268256817 🤯"]
