"""Dtypes and type promotion (chapter 03).

minijit promotes as JAX does in its 64-bit mode (`jax_enable_x64`): the join in JAX's type
promotion lattice (`result_type`), with float64 and int64 as the default float and int. A
Python scalar is *weakly typed*: it takes the dtype of the array it meets (`int32_array * 2`
stays int32, `float32_array * 2.5` stays float32), and a value computed only from weak values
stays weak. Where JAX's lattice and NumPy 2's rules differ, JAX never widens past what the
inputs ask for: `float32` with any int is float32 (NumPy: float64), and a weak int that does
not fit the array's dtype wraps around (NumPy: OverflowError).

Invariant: every dtype that reaches an abstract value is one of `SUPPORTED`.
"""

from __future__ import annotations

import numpy as np

SUPPORTED: tuple[np.dtype, ...] = tuple(
    np.dtype(name)
    for name in (
        "bool", "int8", "int16", "int32", "int64",
        "uint8", "uint16", "uint32", "uint64", "float32", "float64",
    )
)

SHORT_NAMES: dict[np.dtype, str] = {
    np.dtype("bool"): "bool",
    np.dtype("int8"): "i8",
    np.dtype("int16"): "i16",
    np.dtype("int32"): "i32",
    np.dtype("int64"): "i64",
    np.dtype("uint8"): "u8",
    np.dtype("uint16"): "u16",
    np.dtype("uint32"): "u32",
    np.dtype("uint64"): "u64",
    np.dtype("float32"): "f32",
    np.dtype("float64"): "f64",
}

float_ = np.dtype("float64")  # the default float, as in NumPy (JAX's is float32)
int_ = np.dtype("int64")
bool_ = np.dtype("bool")

def canonicalize(dtype) -> np.dtype:
    """Turn anything NumPy understands as a dtype into a supported `np.dtype`, or raise."""
    try:
        dt = np.dtype(dtype)
    except TypeError as e:
        raise TypeError(f"{dtype!r} is not a dtype minijit understands") from e
    if dt not in SHORT_NAMES:
        native = dt.newbyteorder("=")
        if native in SHORT_NAMES:  # '>i8' on a little-endian machine: say so, as jit does
            raise TypeError(
                f"dtype {dt.str} is {native.name} stored in the other byte order (endianness) "
                f"than this machine's. minijit, like JAX, takes arrays in native byte order "
                f"only; convert it with x.astype(np.{native.name})")
        names = ", ".join(d.name for d in SUPPORTED)
        raise TypeError(f"minijit does not support dtype {dt.name}; supported dtypes: {names}")
    return dt


def short_name(dtype: np.dtype) -> str:
    return SHORT_NAMES[np.dtype(dtype)]


def is_float(dtype) -> bool:
    return np.dtype(dtype).kind == "f"


def is_int(dtype) -> bool:
    return np.dtype(dtype).kind in "iu"


def python_scalar_dtype(value) -> np.dtype:
    """The dtype a Python scalar gets on its own: bool, int64 or float64."""
    if isinstance(value, bool):
        return bool_
    if isinstance(value, int):
        if not _INT64_MIN <= value <= _INT64_MAX:
            # As in JAX: a Python int is an int64, so one that does not fit is an error
            # rather than a silent conversion to float.
            raise OverflowError(
                f"Python int {value} does not fit in int64, the dtype minijit (like JAX with "
                f"64-bit mode) gives Python ints; write it as a float ({float(value)!r}) or "
                "pass an array of another dtype")
        return int_
    if isinstance(value, float):
        return float_
    raise TypeError(f"{type(value).__name__} is not a Python scalar minijit understands")


_INT64_MIN, _INT64_MAX = int(np.iinfo(np.int64).min), int(np.iinfo(np.int64).max)


# JAX's type promotion lattice, restricted to minijit's dtypes, in JAX's 64-bit mode. Each
# node lists the nodes directly above it; `i*` and `f*` are the weak int and weak float (a
# Python scalar, or a value computed only from them). Promotion is the join: the least node
# above both. (JAX's lattice also has f16, bf16 and complex above `f*`; minijit has none.)
_LATTICE: dict[str, tuple[str, ...]] = {
    "bool": ("i*",),
    "i*": ("uint8", "int8"),
    "uint8": ("int16", "uint16"), "uint16": ("int32", "uint32"),
    "uint32": ("int64", "uint64"), "uint64": ("f*",),
    "int8": ("int16",), "int16": ("int32",), "int32": ("int64",), "int64": ("f*",),
    "f*": ("float32",), "float32": ("float64",), "float64": (),
}


def _above(node: str) -> frozenset[str]:
    """`node` and every node above it in the lattice."""
    seen, todo = {node}, [node]
    while todo:
        for up in _LATTICE[todo.pop()]:
            if up not in seen:
                seen.add(up)
                todo.append(up)
    return frozenset(seen)


_ABOVE = {node: _above(node) for node in _LATTICE}


def _node(dtype: np.dtype, weak: bool) -> str:
    if weak and dtype.kind != "b":  # a bool is never weak: it has no narrower partner
        return "f*" if dtype.kind == "f" else "i*"
    return np.dtype(dtype).name


def result_type(*typed: tuple[np.dtype, bool]) -> tuple[np.dtype, bool]:
    """Promote `(dtype, weak_type)` pairs as JAX does; returns the result's `(dtype, weak)`.

    The result is the join of the inputs in JAX's lattice (`_LATTICE`). Unlike NumPy's rules
    it never widens past what the inputs ask for: `float32` with any int is `float32`, and
    `int64` with `uint64` is a weak float64 (NumPy: a strong float64). A weak result is
    float64 or int64 (JAX's defaults in 64-bit mode), marked weak.
    """
    common = frozenset(_LATTICE)
    for dt, weak in typed:
        common &= _ABOVE[_node(dt, weak)]
    # the least upper bound is the common node that every other common node is above
    join = next(n for n in common if common <= _ABOVE[n])
    if join == "i*":
        return int_, True
    if join == "f*":
        return float_, True
    return np.dtype(join), False


def float_result(dtype: np.dtype) -> np.dtype:
    """The dtype of a float function (`sqrt`, `exp`, `/`, `mean`) applied to `dtype`, as JAX
    gives it: floats keep their width; int64 and uint64 go to float64; bool and the narrower
    ints to float32, a float that holds all their values exactly (NumPy: float16 for int8 and
    bool). A weak int is an int64, so it becomes float64 (and stays weak).
    """
    dtype = np.dtype(dtype)
    if is_float(dtype):
        return dtype
    return float_ if dtype.itemsize == 8 else np.dtype("float32")


def int_range_as_floats(dtype) -> tuple[float, float]:
    """`(lo, hi)`: the floats that bound int `dtype`'s values, lo <= v < hi (float to int
    conversion saturates outside). Both are 0 or powers of two, exact in float32 and float64,
    so comparing a float with them never rounds."""
    bits = np.dtype(dtype).itemsize * 8
    if np.dtype(dtype).kind == "u":
        return 0.0, 2.0 ** bits
    return -(2.0 ** (bits - 1)), 2.0 ** (bits - 1)
