"""What JAX gives for integer shifts and dtype conversions: the tables test_int_semantics checks.

Measured with JAX 0.10.2 on CPU in 64-bit mode (`jax.config.update("jax_enable_x64", True)`),
eagerly and under `jax.jit` (they agree), by `regenerate()` below, which prints everything
after the "measured" line. Regenerate after a JAX upgrade with
`python tests/jax_int_semantics.py` in an environment that has JAX, and review the diff.

The inputs are chosen where C, NumPy and LLVM leave the result undefined or differ from XLA:
- shifts by amounts of at least the bit width, and by negative amounts (read as unsigned);
  right shifts of negative values, arithmetic and logical, and of unsigned values;
- float to int conversions of NaN, +-inf and values out of range (XLA saturates; NumPy's cast
  gives int_min on x86, with a RuntimeWarning), float to unsigned of negative values;
- int to a narrower int (wraps), to and from bool, float64 to float32 (overflow, rounding).

One thing JAX does that minijit does not mirror, so it is not in these tables: XLA on CPU
flushes a float32 *subnormal* result of a conversion to zero (`float64(1.4e-45)` to float32
is 0.0 in JAX, the subnormal 1e-45 in NumPy and minijit), and JAX's own docs call that
backend dependent ("sharp bits": flush-to-zero semantics on some backends).
"""

from __future__ import annotations

INT_DTYPES = ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64")
DTYPES = ("bool", *INT_DTYPES, "float32", "float64")


def _bits(dtype: str) -> int:
    return int("".join(c for c in dtype if c.isdigit()))


def _shift_inputs(dtype: str) -> tuple[list[int], list[int]]:
    """Values to shift (the extremes, a negative one) and amounts (in range, the bit width
    and beyond, negative or, unsigned, the largest)."""
    bits = _bits(dtype)
    if dtype.startswith("u"):
        top = 2 ** bits - 1
        return [1, 5, top, 1, top - 2, 0], [0, 1, bits - 1, bits, bits + 1, 2 * bits + 3, top]
    top = 2 ** (bits - 1) - 1
    return ([1, 5, top, -top - 1, -3, -1],
            [0, 1, bits - 1, bits, bits + 1, 2 * bits + 3, -1, -bits])


SHIFT_INPUTS = {dt: _shift_inputs(dt) for dt in INT_DTYPES}
SHIFT_PRIMITIVES = ("shift_left", "shift_right_logical", "shift_right_arithmetic")

# Floats to convert to every int dtype and bool: NaN, infinities, zeros, fractions (truncated
# toward zero), the edges of each int range, and far beyond them.
FLOATS = [float("nan"), float("inf"), float("-inf"), 0.0, -0.0, 0.5, -0.5, 0.99, -0.99, 1.5,
          -1.5, 2.5, -2.5, 127.5, 128.0, -128.5, -129.0, 255.9, 256.0, 32768.0, -32769.0,
          65536.0, 2.0 ** 31, -2.0 ** 31 - 4096, 2.0 ** 32, 2.0 ** 63, -2.0 ** 63, 2.0 ** 64,
          1e30, -1e30, -1.0, -255.0]
# Ints (and bools) to convert to every dtype: each one's extremes, and values that wrap.
INTS = {
    "int8": [-128, -1, 0, 1, 127],
    "int64": [0, 1, -1, 2, 127, 128, -129, 255, 256, 65535, 65536, 2 ** 31, -2 ** 31 - 1,
              2 ** 32 + 5, -2 ** 63, 2 ** 63 - 1],
    "uint64": [0, 1, 2 ** 63, 2 ** 64 - 1, 2 ** 32 + 7, 2 ** 24 + 1],
    "bool": [True, False],
}
# float64 to float32: overflow to inf (at and past the rounding boundary of float32's max),
# round to nearest even, signed zeros, NaN. Results as float32 bit patterns, to be exact.
FLOAT64_TO_FLOAT32 = [float("nan"), float("inf"), float("-inf"), 0.0, -0.0, 1e-300, -1e-300,
                      0.5, 1e300, -1e300, 3.4028235e38, 3.4028236e38, 3.4028235677973366e38,
                      3.4028235677973362e38, 1.0000000596046448, 1.0000000596046449,
                      1.0000001788139343, 16777217.0, 1e-46]

# `jnp.left_shift(a, b)` and `jnp.right_shift(a, b)` for every pair of dtypes and the weak
# Python scalars: the result dtype (`*` = weakly typed) or the error's class.
WEAK = ("int*", "float*")

# The operators on arrays, with Python scalars (weak: they wrap into the array's dtype first,
# so `i8 << 300` shifts by 44), NumPy scalars, reflected, and mixed dtypes. Each is evaluated
# with these operands, as JAX arrays in JAX and minijit arrays in minijit.
OPERANDS = {"i8": ([1, -3, 100], "int8"), "u8": ([1, 3, 200], "uint8"),
            "b": ([True, False], "bool"), "i16": ([1, 2, 3], "int16")}
OPERATOR_CASES = (
    "i8 << 2", "i8 >> 1", "u8 >> 1", "i8 << 300", "i8 << 2**40", "i8 >> -1", "u8 >> -1",
    "1 << i8", "200 >> u8", "i8 << u8", "u8 >> i8", "True << i8", "i8 << True", "b << b",
    "b >> b", "b << 1", "np.int8(3) << i8", "np.int32(3) << i8", "i8 << np.int32(3)",
    "jnp.left_shift(i16, 1)", "jnp.bitwise_left_shift(i16, 1)",
    "jnp.right_shift(-i16, 1)", "jnp.bitwise_right_shift(-i16, 1)",
)


# --------------------------------------------------------------------------- regenerate


def _print(prefix: str, value, end=",") -> None:
    """`prefix` and `value`'s repr, wrapped after commas to 96 columns."""
    import textwrap

    indent = " " * (len(prefix) - len(prefix.lstrip()) + 4)
    text = textwrap.fill(prefix + repr(value).replace("'", '"') + end, width=96,
                         subsequent_indent=indent, break_on_hyphens=False,
                         break_long_words=False)
    print(text)


def regenerate() -> None:  # pragma: no cover - needs JAX
    import jax
    import jax.numpy as jnp
    import numpy as np
    from jax import lax

    jax.config.update("jax_enable_x64", True)

    def both(f, *args):
        eager, jitted = f(*args), jax.jit(f)(*args)
        for e, j in zip(jax.tree.leaves(eager), jax.tree.leaves(jitted)):
            e, j = np.asarray(e), np.asarray(j)
            assert e.dtype == j.dtype and np.array_equal(e.view(np.uint8), j.view(np.uint8))
        return jax.tree.map(np.asarray, eager)

    print("# --- measured by regenerate() from JAX", jax.__version__)
    print("SHIFTS = {  # primitive -> dtype -> one row per amount in SHIFT_INPUTS[dtype][1]")
    for name in SHIFT_PRIMITIVES:
        print(f'    "{name}": {{')
        for dt in INT_DTYPES:
            xs, amounts = SHIFT_INPUTS[dt]
            x = np.array([xs] * len(amounts), dt)
            y = np.array([[a] * len(xs) for a in amounts], dt)
            print(f'        "{dt}": [')
            for amount, row in zip(amounts, both(getattr(lax, name), x, y).tolist()):
                _print("            ", row, end=f",  # by {amount}")
            print("        ],")
        print("    },")
    print("}")

    def dtype_of(v) -> str:
        return v.dtype.name + ("*" if getattr(v, "weak_type", False) else "")

    def operand(name):
        return {"int*": 3, "float*": 3.0}.get(name) or jnp.ones(2, name)

    print("SHIFT_DTYPES = {  # (x, y) -> (left_shift, right_shift)")
    for a in (*DTYPES, "int*"):
        for b in (*DTYPES, *WEAK):
            row = []
            for f in (jnp.left_shift, jnp.right_shift):
                try:
                    row.append(dtype_of(f(operand(a), operand(b))))
                except TypeError:
                    row.append("TypeError")
            print(f"    ({a!r}, {b!r}): {tuple(row)!r},".replace("'", '"'))
    print("}")

    print("OPERATORS = {  # case -> (values, dtype; `*` = weakly typed)")
    env = {"np": np, "jnp": jnp, **{k: jnp.array(v, dt) for k, (v, dt) in OPERANDS.items()}}
    for case in OPERATOR_CASES:
        out = eval(case, env)
        _print(f'    "{case}": ', (np.asarray(out).tolist(), dtype_of(out)))
    print("}")

    print("FROM_FLOAT = {  # source -> target -> one value per FLOATS")
    for src in ("float32", "float64"):
        print(f'    "{src}": {{')
        for dt in ("bool", *INT_DTYPES):
            out = both(lambda v, dt=dt: lax.convert_element_type(v, dt), np.array(FLOATS, src))
            _print(f'        "{dt}": ', out.tolist())
        print("    },")
    print("}")

    print("FROM_INT = {  # source -> target -> one value per INTS[source]")
    for src, values in INTS.items():
        print(f'    "{src}": {{')
        for dt in DTYPES:
            out = both(lambda v, dt=dt: lax.convert_element_type(v, dt), np.array(values, src))
            _print(f'        "{dt}": ', out.tolist())
        print("    },")
    print("}")

    out = both(lambda v: lax.convert_element_type(v, "float32"),
               np.array(FLOAT64_TO_FLOAT32, "float64"))
    _print("FLOAT32_BITS = ", [hex(b) for b in out.view(np.uint32).tolist()], end="")


# --- measured by regenerate() from JAX 0.10.2
SHIFTS = {  # primitive -> dtype -> one row per amount in SHIFT_INPUTS[dtype][1]
    "shift_left": {
        "int8": [
            [1, 5, 127, -128, -3, -1],  # by 0
            [2, 10, -2, 0, -6, -2],  # by 1
            [-128, -128, -128, 0, -128, -128],  # by 7
            [0, 0, 0, 0, 0, 0],  # by 8
            [0, 0, 0, 0, 0, 0],  # by 9
            [0, 0, 0, 0, 0, 0],  # by 19
            [0, 0, 0, 0, 0, 0],  # by -1
            [0, 0, 0, 0, 0, 0],  # by -8
        ],
        "int16": [
            [1, 5, 32767, -32768, -3, -1],  # by 0
            [2, 10, -2, 0, -6, -2],  # by 1
            [-32768, -32768, -32768, 0, -32768, -32768],  # by 15
            [0, 0, 0, 0, 0, 0],  # by 16
            [0, 0, 0, 0, 0, 0],  # by 17
            [0, 0, 0, 0, 0, 0],  # by 35
            [0, 0, 0, 0, 0, 0],  # by -1
            [0, 0, 0, 0, 0, 0],  # by -16
        ],
        "int32": [
            [1, 5, 2147483647, -2147483648, -3, -1],  # by 0
            [2, 10, -2, 0, -6, -2],  # by 1
            [-2147483648, -2147483648, -2147483648, 0, -2147483648, -2147483648],  # by 31
            [0, 0, 0, 0, 0, 0],  # by 32
            [0, 0, 0, 0, 0, 0],  # by 33
            [0, 0, 0, 0, 0, 0],  # by 67
            [0, 0, 0, 0, 0, 0],  # by -1
            [0, 0, 0, 0, 0, 0],  # by -32
        ],
        "int64": [
            [1, 5, 9223372036854775807, -9223372036854775808, -3, -1],  # by 0
            [2, 10, -2, 0, -6, -2],  # by 1
            [-9223372036854775808, -9223372036854775808, -9223372036854775808, 0,
                -9223372036854775808, -9223372036854775808],  # by 63
            [0, 0, 0, 0, 0, 0],  # by 64
            [0, 0, 0, 0, 0, 0],  # by 65
            [0, 0, 0, 0, 0, 0],  # by 131
            [0, 0, 0, 0, 0, 0],  # by -1
            [0, 0, 0, 0, 0, 0],  # by -64
        ],
        "uint8": [
            [1, 5, 255, 1, 253, 0],  # by 0
            [2, 10, 254, 2, 250, 0],  # by 1
            [128, 128, 128, 128, 128, 0],  # by 7
            [0, 0, 0, 0, 0, 0],  # by 8
            [0, 0, 0, 0, 0, 0],  # by 9
            [0, 0, 0, 0, 0, 0],  # by 19
            [0, 0, 0, 0, 0, 0],  # by 255
        ],
        "uint16": [
            [1, 5, 65535, 1, 65533, 0],  # by 0
            [2, 10, 65534, 2, 65530, 0],  # by 1
            [32768, 32768, 32768, 32768, 32768, 0],  # by 15
            [0, 0, 0, 0, 0, 0],  # by 16
            [0, 0, 0, 0, 0, 0],  # by 17
            [0, 0, 0, 0, 0, 0],  # by 35
            [0, 0, 0, 0, 0, 0],  # by 65535
        ],
        "uint32": [
            [1, 5, 4294967295, 1, 4294967293, 0],  # by 0
            [2, 10, 4294967294, 2, 4294967290, 0],  # by 1
            [2147483648, 2147483648, 2147483648, 2147483648, 2147483648, 0],  # by 31
            [0, 0, 0, 0, 0, 0],  # by 32
            [0, 0, 0, 0, 0, 0],  # by 33
            [0, 0, 0, 0, 0, 0],  # by 67
            [0, 0, 0, 0, 0, 0],  # by 4294967295
        ],
        "uint64": [
            [1, 5, 18446744073709551615, 1, 18446744073709551613, 0],  # by 0
            [2, 10, 18446744073709551614, 2, 18446744073709551610, 0],  # by 1
            [9223372036854775808, 9223372036854775808, 9223372036854775808, 9223372036854775808,
                9223372036854775808, 0],  # by 63
            [0, 0, 0, 0, 0, 0],  # by 64
            [0, 0, 0, 0, 0, 0],  # by 65
            [0, 0, 0, 0, 0, 0],  # by 131
            [0, 0, 0, 0, 0, 0],  # by 18446744073709551615
        ],
    },
    "shift_right_logical": {
        "int8": [
            [1, 5, 127, -128, -3, -1],  # by 0
            [0, 2, 63, 64, 126, 127],  # by 1
            [0, 0, 0, 1, 1, 1],  # by 7
            [0, 0, 0, 0, 0, 0],  # by 8
            [0, 0, 0, 0, 0, 0],  # by 9
            [0, 0, 0, 0, 0, 0],  # by 19
            [0, 0, 0, 0, 0, 0],  # by -1
            [0, 0, 0, 0, 0, 0],  # by -8
        ],
        "int16": [
            [1, 5, 32767, -32768, -3, -1],  # by 0
            [0, 2, 16383, 16384, 32766, 32767],  # by 1
            [0, 0, 0, 1, 1, 1],  # by 15
            [0, 0, 0, 0, 0, 0],  # by 16
            [0, 0, 0, 0, 0, 0],  # by 17
            [0, 0, 0, 0, 0, 0],  # by 35
            [0, 0, 0, 0, 0, 0],  # by -1
            [0, 0, 0, 0, 0, 0],  # by -16
        ],
        "int32": [
            [1, 5, 2147483647, -2147483648, -3, -1],  # by 0
            [0, 2, 1073741823, 1073741824, 2147483646, 2147483647],  # by 1
            [0, 0, 0, 1, 1, 1],  # by 31
            [0, 0, 0, 0, 0, 0],  # by 32
            [0, 0, 0, 0, 0, 0],  # by 33
            [0, 0, 0, 0, 0, 0],  # by 67
            [0, 0, 0, 0, 0, 0],  # by -1
            [0, 0, 0, 0, 0, 0],  # by -32
        ],
        "int64": [
            [1, 5, 9223372036854775807, -9223372036854775808, -3, -1],  # by 0
            [0, 2, 4611686018427387903, 4611686018427387904, 9223372036854775806,
                9223372036854775807],  # by 1
            [0, 0, 0, 1, 1, 1],  # by 63
            [0, 0, 0, 0, 0, 0],  # by 64
            [0, 0, 0, 0, 0, 0],  # by 65
            [0, 0, 0, 0, 0, 0],  # by 131
            [0, 0, 0, 0, 0, 0],  # by -1
            [0, 0, 0, 0, 0, 0],  # by -64
        ],
        "uint8": [
            [1, 5, 255, 1, 253, 0],  # by 0
            [0, 2, 127, 0, 126, 0],  # by 1
            [0, 0, 1, 0, 1, 0],  # by 7
            [0, 0, 0, 0, 0, 0],  # by 8
            [0, 0, 0, 0, 0, 0],  # by 9
            [0, 0, 0, 0, 0, 0],  # by 19
            [0, 0, 0, 0, 0, 0],  # by 255
        ],
        "uint16": [
            [1, 5, 65535, 1, 65533, 0],  # by 0
            [0, 2, 32767, 0, 32766, 0],  # by 1
            [0, 0, 1, 0, 1, 0],  # by 15
            [0, 0, 0, 0, 0, 0],  # by 16
            [0, 0, 0, 0, 0, 0],  # by 17
            [0, 0, 0, 0, 0, 0],  # by 35
            [0, 0, 0, 0, 0, 0],  # by 65535
        ],
        "uint32": [
            [1, 5, 4294967295, 1, 4294967293, 0],  # by 0
            [0, 2, 2147483647, 0, 2147483646, 0],  # by 1
            [0, 0, 1, 0, 1, 0],  # by 31
            [0, 0, 0, 0, 0, 0],  # by 32
            [0, 0, 0, 0, 0, 0],  # by 33
            [0, 0, 0, 0, 0, 0],  # by 67
            [0, 0, 0, 0, 0, 0],  # by 4294967295
        ],
        "uint64": [
            [1, 5, 18446744073709551615, 1, 18446744073709551613, 0],  # by 0
            [0, 2, 9223372036854775807, 0, 9223372036854775806, 0],  # by 1
            [0, 0, 1, 0, 1, 0],  # by 63
            [0, 0, 0, 0, 0, 0],  # by 64
            [0, 0, 0, 0, 0, 0],  # by 65
            [0, 0, 0, 0, 0, 0],  # by 131
            [0, 0, 0, 0, 0, 0],  # by 18446744073709551615
        ],
    },
    "shift_right_arithmetic": {
        "int8": [
            [1, 5, 127, -128, -3, -1],  # by 0
            [0, 2, 63, -64, -2, -1],  # by 1
            [0, 0, 0, -1, -1, -1],  # by 7
            [0, 0, 0, -1, -1, -1],  # by 8
            [0, 0, 0, -1, -1, -1],  # by 9
            [0, 0, 0, -1, -1, -1],  # by 19
            [0, 0, 0, -1, -1, -1],  # by -1
            [0, 0, 0, -1, -1, -1],  # by -8
        ],
        "int16": [
            [1, 5, 32767, -32768, -3, -1],  # by 0
            [0, 2, 16383, -16384, -2, -1],  # by 1
            [0, 0, 0, -1, -1, -1],  # by 15
            [0, 0, 0, -1, -1, -1],  # by 16
            [0, 0, 0, -1, -1, -1],  # by 17
            [0, 0, 0, -1, -1, -1],  # by 35
            [0, 0, 0, -1, -1, -1],  # by -1
            [0, 0, 0, -1, -1, -1],  # by -16
        ],
        "int32": [
            [1, 5, 2147483647, -2147483648, -3, -1],  # by 0
            [0, 2, 1073741823, -1073741824, -2, -1],  # by 1
            [0, 0, 0, -1, -1, -1],  # by 31
            [0, 0, 0, -1, -1, -1],  # by 32
            [0, 0, 0, -1, -1, -1],  # by 33
            [0, 0, 0, -1, -1, -1],  # by 67
            [0, 0, 0, -1, -1, -1],  # by -1
            [0, 0, 0, -1, -1, -1],  # by -32
        ],
        "int64": [
            [1, 5, 9223372036854775807, -9223372036854775808, -3, -1],  # by 0
            [0, 2, 4611686018427387903, -4611686018427387904, -2, -1],  # by 1
            [0, 0, 0, -1, -1, -1],  # by 63
            [0, 0, 0, -1, -1, -1],  # by 64
            [0, 0, 0, -1, -1, -1],  # by 65
            [0, 0, 0, -1, -1, -1],  # by 131
            [0, 0, 0, -1, -1, -1],  # by -1
            [0, 0, 0, -1, -1, -1],  # by -64
        ],
        "uint8": [
            [1, 5, 255, 1, 253, 0],  # by 0
            [0, 2, 255, 0, 254, 0],  # by 1
            [0, 0, 255, 0, 255, 0],  # by 7
            [0, 0, 255, 0, 255, 0],  # by 8
            [0, 0, 255, 0, 255, 0],  # by 9
            [0, 0, 255, 0, 255, 0],  # by 19
            [0, 0, 255, 0, 255, 0],  # by 255
        ],
        "uint16": [
            [1, 5, 65535, 1, 65533, 0],  # by 0
            [0, 2, 65535, 0, 65534, 0],  # by 1
            [0, 0, 65535, 0, 65535, 0],  # by 15
            [0, 0, 65535, 0, 65535, 0],  # by 16
            [0, 0, 65535, 0, 65535, 0],  # by 17
            [0, 0, 65535, 0, 65535, 0],  # by 35
            [0, 0, 65535, 0, 65535, 0],  # by 65535
        ],
        "uint32": [
            [1, 5, 4294967295, 1, 4294967293, 0],  # by 0
            [0, 2, 4294967295, 0, 4294967294, 0],  # by 1
            [0, 0, 4294967295, 0, 4294967295, 0],  # by 31
            [0, 0, 4294967295, 0, 4294967295, 0],  # by 32
            [0, 0, 4294967295, 0, 4294967295, 0],  # by 33
            [0, 0, 4294967295, 0, 4294967295, 0],  # by 67
            [0, 0, 4294967295, 0, 4294967295, 0],  # by 4294967295
        ],
        "uint64": [
            [1, 5, 18446744073709551615, 1, 18446744073709551613, 0],  # by 0
            [0, 2, 18446744073709551615, 0, 18446744073709551614, 0],  # by 1
            [0, 0, 18446744073709551615, 0, 18446744073709551615, 0],  # by 63
            [0, 0, 18446744073709551615, 0, 18446744073709551615, 0],  # by 64
            [0, 0, 18446744073709551615, 0, 18446744073709551615, 0],  # by 65
            [0, 0, 18446744073709551615, 0, 18446744073709551615, 0],  # by 131
            [0, 0, 18446744073709551615, 0, 18446744073709551615, 0],  # by 18446744073709551615
        ],
    },
}
SHIFT_DTYPES = {  # (x, y) -> (left_shift, right_shift)
    ("bool", "bool"): ("int32", "int32"),
    ("bool", "int8"): ("int8", "int8"),
    ("bool", "int16"): ("int16", "int16"),
    ("bool", "int32"): ("int32", "int32"),
    ("bool", "int64"): ("int64", "int64"),
    ("bool", "uint8"): ("uint8", "uint8"),
    ("bool", "uint16"): ("uint16", "uint16"),
    ("bool", "uint32"): ("uint32", "uint32"),
    ("bool", "uint64"): ("uint64", "uint64"),
    ("bool", "float32"): ("TypeError", "TypeError"),
    ("bool", "float64"): ("TypeError", "TypeError"),
    ("bool", "int*"): ("int64*", "int64*"),
    ("bool", "float*"): ("TypeError", "TypeError"),
    ("int8", "bool"): ("int8", "int8"),
    ("int8", "int8"): ("int8", "int8"),
    ("int8", "int16"): ("int16", "int16"),
    ("int8", "int32"): ("int32", "int32"),
    ("int8", "int64"): ("int64", "int64"),
    ("int8", "uint8"): ("int16", "int16"),
    ("int8", "uint16"): ("int32", "int32"),
    ("int8", "uint32"): ("int64", "int64"),
    ("int8", "uint64"): ("TypeError", "TypeError"),
    ("int8", "float32"): ("TypeError", "TypeError"),
    ("int8", "float64"): ("TypeError", "TypeError"),
    ("int8", "int*"): ("int8", "int8"),
    ("int8", "float*"): ("TypeError", "TypeError"),
    ("int16", "bool"): ("int16", "int16"),
    ("int16", "int8"): ("int16", "int16"),
    ("int16", "int16"): ("int16", "int16"),
    ("int16", "int32"): ("int32", "int32"),
    ("int16", "int64"): ("int64", "int64"),
    ("int16", "uint8"): ("int16", "int16"),
    ("int16", "uint16"): ("int32", "int32"),
    ("int16", "uint32"): ("int64", "int64"),
    ("int16", "uint64"): ("TypeError", "TypeError"),
    ("int16", "float32"): ("TypeError", "TypeError"),
    ("int16", "float64"): ("TypeError", "TypeError"),
    ("int16", "int*"): ("int16", "int16"),
    ("int16", "float*"): ("TypeError", "TypeError"),
    ("int32", "bool"): ("int32", "int32"),
    ("int32", "int8"): ("int32", "int32"),
    ("int32", "int16"): ("int32", "int32"),
    ("int32", "int32"): ("int32", "int32"),
    ("int32", "int64"): ("int64", "int64"),
    ("int32", "uint8"): ("int32", "int32"),
    ("int32", "uint16"): ("int32", "int32"),
    ("int32", "uint32"): ("int64", "int64"),
    ("int32", "uint64"): ("TypeError", "TypeError"),
    ("int32", "float32"): ("TypeError", "TypeError"),
    ("int32", "float64"): ("TypeError", "TypeError"),
    ("int32", "int*"): ("int32", "int32"),
    ("int32", "float*"): ("TypeError", "TypeError"),
    ("int64", "bool"): ("int64", "int64"),
    ("int64", "int8"): ("int64", "int64"),
    ("int64", "int16"): ("int64", "int64"),
    ("int64", "int32"): ("int64", "int64"),
    ("int64", "int64"): ("int64", "int64"),
    ("int64", "uint8"): ("int64", "int64"),
    ("int64", "uint16"): ("int64", "int64"),
    ("int64", "uint32"): ("int64", "int64"),
    ("int64", "uint64"): ("TypeError", "TypeError"),
    ("int64", "float32"): ("TypeError", "TypeError"),
    ("int64", "float64"): ("TypeError", "TypeError"),
    ("int64", "int*"): ("int64", "int64"),
    ("int64", "float*"): ("TypeError", "TypeError"),
    ("uint8", "bool"): ("uint8", "uint8"),
    ("uint8", "int8"): ("int16", "int16"),
    ("uint8", "int16"): ("int16", "int16"),
    ("uint8", "int32"): ("int32", "int32"),
    ("uint8", "int64"): ("int64", "int64"),
    ("uint8", "uint8"): ("uint8", "uint8"),
    ("uint8", "uint16"): ("uint16", "uint16"),
    ("uint8", "uint32"): ("uint32", "uint32"),
    ("uint8", "uint64"): ("uint64", "uint64"),
    ("uint8", "float32"): ("TypeError", "TypeError"),
    ("uint8", "float64"): ("TypeError", "TypeError"),
    ("uint8", "int*"): ("uint8", "uint8"),
    ("uint8", "float*"): ("TypeError", "TypeError"),
    ("uint16", "bool"): ("uint16", "uint16"),
    ("uint16", "int8"): ("int32", "int32"),
    ("uint16", "int16"): ("int32", "int32"),
    ("uint16", "int32"): ("int32", "int32"),
    ("uint16", "int64"): ("int64", "int64"),
    ("uint16", "uint8"): ("uint16", "uint16"),
    ("uint16", "uint16"): ("uint16", "uint16"),
    ("uint16", "uint32"): ("uint32", "uint32"),
    ("uint16", "uint64"): ("uint64", "uint64"),
    ("uint16", "float32"): ("TypeError", "TypeError"),
    ("uint16", "float64"): ("TypeError", "TypeError"),
    ("uint16", "int*"): ("uint16", "uint16"),
    ("uint16", "float*"): ("TypeError", "TypeError"),
    ("uint32", "bool"): ("uint32", "uint32"),
    ("uint32", "int8"): ("int64", "int64"),
    ("uint32", "int16"): ("int64", "int64"),
    ("uint32", "int32"): ("int64", "int64"),
    ("uint32", "int64"): ("int64", "int64"),
    ("uint32", "uint8"): ("uint32", "uint32"),
    ("uint32", "uint16"): ("uint32", "uint32"),
    ("uint32", "uint32"): ("uint32", "uint32"),
    ("uint32", "uint64"): ("uint64", "uint64"),
    ("uint32", "float32"): ("TypeError", "TypeError"),
    ("uint32", "float64"): ("TypeError", "TypeError"),
    ("uint32", "int*"): ("uint32", "uint32"),
    ("uint32", "float*"): ("TypeError", "TypeError"),
    ("uint64", "bool"): ("uint64", "uint64"),
    ("uint64", "int8"): ("TypeError", "TypeError"),
    ("uint64", "int16"): ("TypeError", "TypeError"),
    ("uint64", "int32"): ("TypeError", "TypeError"),
    ("uint64", "int64"): ("TypeError", "TypeError"),
    ("uint64", "uint8"): ("uint64", "uint64"),
    ("uint64", "uint16"): ("uint64", "uint64"),
    ("uint64", "uint32"): ("uint64", "uint64"),
    ("uint64", "uint64"): ("uint64", "uint64"),
    ("uint64", "float32"): ("TypeError", "TypeError"),
    ("uint64", "float64"): ("TypeError", "TypeError"),
    ("uint64", "int*"): ("uint64", "uint64"),
    ("uint64", "float*"): ("TypeError", "TypeError"),
    ("float32", "bool"): ("TypeError", "TypeError"),
    ("float32", "int8"): ("TypeError", "TypeError"),
    ("float32", "int16"): ("TypeError", "TypeError"),
    ("float32", "int32"): ("TypeError", "TypeError"),
    ("float32", "int64"): ("TypeError", "TypeError"),
    ("float32", "uint8"): ("TypeError", "TypeError"),
    ("float32", "uint16"): ("TypeError", "TypeError"),
    ("float32", "uint32"): ("TypeError", "TypeError"),
    ("float32", "uint64"): ("TypeError", "TypeError"),
    ("float32", "float32"): ("TypeError", "TypeError"),
    ("float32", "float64"): ("TypeError", "TypeError"),
    ("float32", "int*"): ("TypeError", "TypeError"),
    ("float32", "float*"): ("TypeError", "TypeError"),
    ("float64", "bool"): ("TypeError", "TypeError"),
    ("float64", "int8"): ("TypeError", "TypeError"),
    ("float64", "int16"): ("TypeError", "TypeError"),
    ("float64", "int32"): ("TypeError", "TypeError"),
    ("float64", "int64"): ("TypeError", "TypeError"),
    ("float64", "uint8"): ("TypeError", "TypeError"),
    ("float64", "uint16"): ("TypeError", "TypeError"),
    ("float64", "uint32"): ("TypeError", "TypeError"),
    ("float64", "uint64"): ("TypeError", "TypeError"),
    ("float64", "float32"): ("TypeError", "TypeError"),
    ("float64", "float64"): ("TypeError", "TypeError"),
    ("float64", "int*"): ("TypeError", "TypeError"),
    ("float64", "float*"): ("TypeError", "TypeError"),
    ("int*", "bool"): ("int64*", "int64*"),
    ("int*", "int8"): ("int8", "int8"),
    ("int*", "int16"): ("int16", "int16"),
    ("int*", "int32"): ("int32", "int32"),
    ("int*", "int64"): ("int64", "int64"),
    ("int*", "uint8"): ("uint8", "uint8"),
    ("int*", "uint16"): ("uint16", "uint16"),
    ("int*", "uint32"): ("uint32", "uint32"),
    ("int*", "uint64"): ("uint64", "uint64"),
    ("int*", "float32"): ("TypeError", "TypeError"),
    ("int*", "float64"): ("TypeError", "TypeError"),
    ("int*", "int*"): ("int64*", "int64*"),
    ("int*", "float*"): ("TypeError", "TypeError"),
}
OPERATORS = {  # case -> (values, dtype; `*` = weakly typed)
    "i8 << 2": ([4, -12, -112], "int8"),
    "i8 >> 1": ([0, -2, 50], "int8"),
    "u8 >> 1": ([0, 1, 100], "uint8"),
    "i8 << 300": ([0, 0, 0], "int8"),
    "i8 << 2**40": ([1, -3, 100], "int8"),
    "i8 >> -1": ([0, -1, 0], "int8"),
    "u8 >> -1": ([0, 0, 0], "uint8"),
    "1 << i8": ([2, 0, 0], "int8"),
    "200 >> u8": ([100, 25, 0], "uint8"),
    "i8 << u8": ([2, -24, 0], "int16"),
    "u8 >> i8": ([0, 0, 0], "int16"),
    "True << i8": ([2, 0, 0], "int8"),
    "i8 << True": ([2, -6, -56], "int8"),
    "b << b": ([2, 0], "int32"),
    "b >> b": ([0, 0], "int32"),
    "b << 1": ([2, 0], "int64*"),
    "np.int8(3) << i8": ([6, 0, 0], "int8"),
    "np.int32(3) << i8": ([6, 0, 0], "int32"),
    "i8 << np.int32(3)": ([8, -24, 800], "int32"),
    "jnp.left_shift(i16, 1)": ([2, 4, 6], "int16"),
    "jnp.bitwise_left_shift(i16, 1)": ([2, 4, 6], "int16"),
    "jnp.right_shift(-i16, 1)": ([-1, -1, -2], "int16"),
    "jnp.bitwise_right_shift(-i16, 1)": ([-1, -1, -2], "int16"),
}
FROM_FLOAT = {  # source -> target -> one value per FLOATS
    "float32": {
        "bool": [True, True, True, False, False, True, True, True, True, True, True, True, True,
            True, True, True, True, True, True, True, True, True, True, True, True, True, True,
            True, True, True, True, True],
        "int8": [0, 127, -128, 0, 0, 0, 0, 0, 0, 1, -1, 2, -2, 127, 127, -128, -128, 127, 127,
            127, -128, 127, 127, -128, 127, 127, -128, 127, 127, -128, -1, -128],
        "int16": [0, 32767, -32768, 0, 0, 0, 0, 0, 0, 1, -1, 2, -2, 127, 128, -128, -129, 255,
            256, 32767, -32768, 32767, 32767, -32768, 32767, 32767, -32768, 32767, 32767,
            -32768, -1, -255],
        "int32": [0, 2147483647, -2147483648, 0, 0, 0, 0, 0, 0, 1, -1, 2, -2, 127, 128, -128,
            -129, 255, 256, 32768, -32769, 65536, 2147483647, -2147483648, 2147483647,
            2147483647, -2147483648, 2147483647, 2147483647, -2147483648, -1, -255],
        "int64": [0, 9223372036854775807, -9223372036854775808, 0, 0, 0, 0, 0, 0, 1, -1, 2, -2,
            127, 128, -128, -129, 255, 256, 32768, -32769, 65536, 2147483648, -2147487744,
            4294967296, 9223372036854775807, -9223372036854775808, 9223372036854775807,
            9223372036854775807, -9223372036854775808, -1, -255],
        "uint8": [0, 255, 0, 0, 0, 0, 0, 0, 0, 1, 0, 2, 0, 127, 128, 0, 0, 255, 255, 255, 0,
            255, 255, 0, 255, 255, 0, 255, 255, 0, 0, 0],
        "uint16": [0, 65535, 0, 0, 0, 0, 0, 0, 0, 1, 0, 2, 0, 127, 128, 0, 0, 255, 256, 32768,
            0, 65535, 65535, 0, 65535, 65535, 0, 65535, 65535, 0, 0, 0],
        "uint32": [0, 4294967295, 0, 0, 0, 0, 0, 0, 0, 1, 0, 2, 0, 127, 128, 0, 0, 255, 256,
            32768, 0, 65536, 2147483648, 0, 4294967295, 4294967295, 0, 4294967295, 4294967295,
            0, 0, 0],
        "uint64": [0, 18446744073709551615, 0, 0, 0, 0, 0, 0, 0, 1, 0, 2, 0, 127, 128, 0, 0,
            255, 256, 32768, 0, 65536, 2147483648, 0, 4294967296, 9223372036854775808, 0,
            18446744073709551615, 18446744073709551615, 0, 0, 0],
    },
    "float64": {
        "bool": [True, True, True, False, False, True, True, True, True, True, True, True, True,
            True, True, True, True, True, True, True, True, True, True, True, True, True, True,
            True, True, True, True, True],
        "int8": [0, 127, -128, 0, 0, 0, 0, 0, 0, 1, -1, 2, -2, 127, 127, -128, -128, 127, 127,
            127, -128, 127, 127, -128, 127, 127, -128, 127, 127, -128, -1, -128],
        "int16": [0, 32767, -32768, 0, 0, 0, 0, 0, 0, 1, -1, 2, -2, 127, 128, -128, -129, 255,
            256, 32767, -32768, 32767, 32767, -32768, 32767, 32767, -32768, 32767, 32767,
            -32768, -1, -255],
        "int32": [0, 2147483647, -2147483648, 0, 0, 0, 0, 0, 0, 1, -1, 2, -2, 127, 128, -128,
            -129, 255, 256, 32768, -32769, 65536, 2147483647, -2147483648, 2147483647,
            2147483647, -2147483648, 2147483647, 2147483647, -2147483648, -1, -255],
        "int64": [0, 9223372036854775807, -9223372036854775808, 0, 0, 0, 0, 0, 0, 1, -1, 2, -2,
            127, 128, -128, -129, 255, 256, 32768, -32769, 65536, 2147483648, -2147487744,
            4294967296, 9223372036854775807, -9223372036854775808, 9223372036854775807,
            9223372036854775807, -9223372036854775808, -1, -255],
        "uint8": [0, 255, 0, 0, 0, 0, 0, 0, 0, 1, 0, 2, 0, 127, 128, 0, 0, 255, 255, 255, 0,
            255, 255, 0, 255, 255, 0, 255, 255, 0, 0, 0],
        "uint16": [0, 65535, 0, 0, 0, 0, 0, 0, 0, 1, 0, 2, 0, 127, 128, 0, 0, 255, 256, 32768,
            0, 65535, 65535, 0, 65535, 65535, 0, 65535, 65535, 0, 0, 0],
        "uint32": [0, 4294967295, 0, 0, 0, 0, 0, 0, 0, 1, 0, 2, 0, 127, 128, 0, 0, 255, 256,
            32768, 0, 65536, 2147483648, 0, 4294967295, 4294967295, 0, 4294967295, 4294967295,
            0, 0, 0],
        "uint64": [0, 18446744073709551615, 0, 0, 0, 0, 0, 0, 0, 1, 0, 2, 0, 127, 128, 0, 0,
            255, 256, 32768, 0, 65536, 2147483648, 0, 4294967296, 9223372036854775808, 0,
            18446744073709551615, 18446744073709551615, 0, 0, 0],
    },
}
FROM_INT = {  # source -> target -> one value per INTS[source]
    "int8": {
        "bool": [True, True, False, True, True],
        "int8": [-128, -1, 0, 1, 127],
        "int16": [-128, -1, 0, 1, 127],
        "int32": [-128, -1, 0, 1, 127],
        "int64": [-128, -1, 0, 1, 127],
        "uint8": [128, 255, 0, 1, 127],
        "uint16": [65408, 65535, 0, 1, 127],
        "uint32": [4294967168, 4294967295, 0, 1, 127],
        "uint64": [18446744073709551488, 18446744073709551615, 0, 1, 127],
        "float32": [-128.0, -1.0, 0.0, 1.0, 127.0],
        "float64": [-128.0, -1.0, 0.0, 1.0, 127.0],
    },
    "int64": {
        "bool": [False, True, True, True, True, True, True, True, True, True, True, True, True,
            True, True, True],
        "int8": [0, 1, -1, 2, 127, -128, 127, -1, 0, -1, 0, 0, -1, 5, 0, -1],
        "int16": [0, 1, -1, 2, 127, 128, -129, 255, 256, -1, 0, 0, -1, 5, 0, -1],
        "int32": [0, 1, -1, 2, 127, 128, -129, 255, 256, 65535, 65536, -2147483648, 2147483647,
            5, 0, -1],
        "int64": [0, 1, -1, 2, 127, 128, -129, 255, 256, 65535, 65536, 2147483648, -2147483649,
            4294967301, -9223372036854775808, 9223372036854775807],
        "uint8": [0, 1, 255, 2, 127, 128, 127, 255, 0, 255, 0, 0, 255, 5, 0, 255],
        "uint16": [0, 1, 65535, 2, 127, 128, 65407, 255, 256, 65535, 0, 0, 65535, 5, 0, 65535],
        "uint32": [0, 1, 4294967295, 2, 127, 128, 4294967167, 255, 256, 65535, 65536,
            2147483648, 2147483647, 5, 0, 4294967295],
        "uint64": [0, 1, 18446744073709551615, 2, 127, 128, 18446744073709551487, 255, 256,
            65535, 65536, 2147483648, 18446744071562067967, 4294967301, 9223372036854775808,
            9223372036854775807],
        "float32": [0.0, 1.0, -1.0, 2.0, 127.0, 128.0, -129.0, 255.0, 256.0, 65535.0, 65536.0,
            2147483648.0, -2147483648.0, 4294967296.0, -9.223372036854776e+18,
            9.223372036854776e+18],
        "float64": [0.0, 1.0, -1.0, 2.0, 127.0, 128.0, -129.0, 255.0, 256.0, 65535.0, 65536.0,
            2147483648.0, -2147483649.0, 4294967301.0, -9.223372036854776e+18,
            9.223372036854776e+18],
    },
    "uint64": {
        "bool": [False, True, True, True, True, True],
        "int8": [0, 1, 0, -1, 7, 1],
        "int16": [0, 1, 0, -1, 7, 1],
        "int32": [0, 1, 0, -1, 7, 16777217],
        "int64": [0, 1, -9223372036854775808, -1, 4294967303, 16777217],
        "uint8": [0, 1, 0, 255, 7, 1],
        "uint16": [0, 1, 0, 65535, 7, 1],
        "uint32": [0, 1, 0, 4294967295, 7, 16777217],
        "uint64": [0, 1, 9223372036854775808, 18446744073709551615, 4294967303, 16777217],
        "float32": [0.0, 1.0, 9.223372036854776e+18, 1.8446744073709552e+19, 4294967296.0,
            16777216.0],
        "float64": [0.0, 1.0, 9.223372036854776e+18, 1.8446744073709552e+19, 4294967303.0,
            16777217.0],
    },
    "bool": {
        "bool": [True, False],
        "int8": [1, 0],
        "int16": [1, 0],
        "int32": [1, 0],
        "int64": [1, 0],
        "uint8": [1, 0],
        "uint16": [1, 0],
        "uint32": [1, 0],
        "uint64": [1, 0],
        "float32": [1.0, 0.0],
        "float64": [1.0, 0.0],
    },
}
FLOAT32_BITS = ["0x7fc00000", "0x7f800000", "0xff800000", "0x0", "0x80000000", "0x0",
    "0x80000000", "0x3f000000", "0x7f800000", "0xff800000", "0x7f7fffff", "0x7f800000",
    "0x7f800000", "0x7f7fffff", "0x3f800000", "0x3f800001", "0x3f800002", "0x4b800000", "0x0"]


if __name__ == "__main__":
    regenerate()
