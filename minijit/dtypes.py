"""Dtypes and type promotion (chapter 03).

minijit follows NumPy's dtypes and NumPy 2's promotion rules (NEP 50), which agree with JAX's
on the case that matters most: a Python scalar is *weakly typed* and takes the dtype of the
array it meets (`int32_array * 2` stays int32, `int_array + 0.5` becomes float). Unlike JAX,
the default float is float64 and the default int is int64, as in NumPy.

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

# The Python scalar that stands for each weak kind when we ask NumPy to promote.
_WEAK_STANDIN = {"b": False, "i": 0, "u": 0, "f": 0.0}


def canonicalize(dtype) -> np.dtype:
    """Turn anything NumPy understands as a dtype into a supported `np.dtype`, or raise."""
    try:
        dt = np.dtype(dtype)
    except TypeError as e:
        raise TypeError(f"{dtype!r} is not a dtype minijit understands") from e
    if dt not in SHORT_NAMES:
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


def result_type(*typed: tuple[np.dtype, bool]) -> tuple[np.dtype, bool]:
    """Promote `(dtype, weak_type)` pairs; returns the result's `(dtype, weak_type)`.

    Strong dtypes promote as in NumPy; a weak one only contributes its kind (bool < int <
    float), exactly as a Python scalar would in NumPy 2. The result is weak only if every
    input is weak.
    """
    strong = [dt for dt, weak in typed if not weak]
    weak = [dt for dt, w in typed if w]
    if not strong:
        # All weak: the highest kind wins, at its default width, and stays weak.
        kinds = {dt.kind for dt in weak}
        for kind, default in (("f", float_), ("i", int_), ("u", int_), ("b", bool_)):
            if kind in kinds:
                return default, True
    standins = [_WEAK_STANDIN[dt.kind] for dt in weak]
    return canonicalize(np.result_type(*strong, *standins)), False


def float_result(dtype: np.dtype) -> np.dtype:
    """The dtype of a float function (`sqrt`, `exp`, `/`) applied to `dtype`.

    Floats keep their width; bools and ints go to the default float. (NumPy would pick
    float16 for int8 and bool; minijit, like JAX, picks the default float.)
    """
    return dtype if is_float(dtype) else float_
