"""JAX's result dtype for every pair of minijit's dtypes: the table the promotion tests check.

Measured with JAX 0.10.2 in 64-bit mode (`jax.config.update("jax_enable_x64", True)`) as the
dtype of `jnp.add(a, b)` (`logical_or` for two bools), by `regenerate()` below; `FLOAT_OF`,
the dtype of a float function of each dtype, by `regenerate_float_of()`. `int*` and
`float*` are weakly typed values (Python scalars); a result marked `*` is weakly typed.
Regenerate after a JAX upgrade with `python tests/jax_promotion.py` in an environment that has
JAX, and review the diff.
"""

from __future__ import annotations

DTYPES = ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
          "float32", "float64")
WEAK = ("int*", "float*")

TABLE: dict[str, dict[str, str]] = {
    "bool": {
        "bool": "bool", "int8": "int8", "int16": "int16", "int32": "int32", "int64": "int64",
        "uint8": "uint8", "uint16": "uint16", "uint32": "uint32", "uint64": "uint64",
        "float32": "float32", "float64": "float64", "int*": "int64*", "float*": "float64*",
    },
    "int8": {
        "bool": "int8", "int8": "int8", "int16": "int16", "int32": "int32", "int64": "int64",
        "uint8": "int16", "uint16": "int32", "uint32": "int64", "uint64": "float64*",
        "float32": "float32", "float64": "float64", "int*": "int8", "float*": "float64*",
    },
    "int16": {
        "bool": "int16", "int8": "int16", "int16": "int16", "int32": "int32", "int64": "int64",
        "uint8": "int16", "uint16": "int32", "uint32": "int64", "uint64": "float64*",
        "float32": "float32", "float64": "float64", "int*": "int16", "float*": "float64*",
    },
    "int32": {
        "bool": "int32", "int8": "int32", "int16": "int32", "int32": "int32", "int64": "int64",
        "uint8": "int32", "uint16": "int32", "uint32": "int64", "uint64": "float64*",
        "float32": "float32", "float64": "float64", "int*": "int32", "float*": "float64*",
    },
    "int64": {
        "bool": "int64", "int8": "int64", "int16": "int64", "int32": "int64", "int64": "int64",
        "uint8": "int64", "uint16": "int64", "uint32": "int64", "uint64": "float64*",
        "float32": "float32", "float64": "float64", "int*": "int64", "float*": "float64*",
    },
    "uint8": {
        "bool": "uint8", "int8": "int16", "int16": "int16", "int32": "int32", "int64": "int64",
        "uint8": "uint8", "uint16": "uint16", "uint32": "uint32", "uint64": "uint64",
        "float32": "float32", "float64": "float64", "int*": "uint8", "float*": "float64*",
    },
    "uint16": {
        "bool": "uint16", "int8": "int32", "int16": "int32", "int32": "int32", "int64": "int64",
        "uint8": "uint16", "uint16": "uint16", "uint32": "uint32", "uint64": "uint64",
        "float32": "float32", "float64": "float64", "int*": "uint16", "float*": "float64*",
    },
    "uint32": {
        "bool": "uint32", "int8": "int64", "int16": "int64", "int32": "int64", "int64": "int64",
        "uint8": "uint32", "uint16": "uint32", "uint32": "uint32", "uint64": "uint64",
        "float32": "float32", "float64": "float64", "int*": "uint32", "float*": "float64*",
    },
    "uint64": {
        "bool": "uint64", "int8": "float64*", "int16": "float64*", "int32": "float64*",
        "int64": "float64*", "uint8": "uint64", "uint16": "uint64", "uint32": "uint64",
        "uint64": "uint64", "float32": "float32", "float64": "float64", "int*": "uint64",
        "float*": "float64*",
    },
    "float32": {
        "bool": "float32", "int8": "float32", "int16": "float32", "int32": "float32",
        "int64": "float32", "uint8": "float32", "uint16": "float32", "uint32": "float32",
        "uint64": "float32", "float32": "float32", "float64": "float64", "int*": "float32",
        "float*": "float32",
    },
    "float64": {
        "bool": "float64", "int8": "float64", "int16": "float64", "int32": "float64",
        "int64": "float64", "uint8": "float64", "uint16": "float64", "uint32": "float64",
        "uint64": "float64", "float32": "float64", "float64": "float64", "int*": "float64",
        "float*": "float64",
    },
    "int*": {
        "bool": "int64*", "int8": "int8", "int16": "int16", "int32": "int32", "int64": "int64",
        "uint8": "uint8", "uint16": "uint16", "uint32": "uint32", "uint64": "uint64",
        "float32": "float32", "float64": "float64", "int*": "int64*", "float*": "float64*",
    },
    "float*": {
        "bool": "float64*", "int8": "float64*", "int16": "float64*", "int32": "float64*",
        "int64": "float64*", "uint8": "float64*", "uint16": "float64*", "uint32": "float64*",
        "uint64": "float64*", "float32": "float32", "float64": "float64", "int*": "float64*",
        "float*": "float64*",
    },
}


# The dtype of a float function (`jnp.sqrt`) of each dtype, measured the same way.
FLOAT_OF: dict[str, str] = {
    "bool": "float32", "int8": "float32", "int16": "float32", "int32": "float32",
    "int64": "float64", "uint8": "float32", "uint16": "float32", "uint32": "float32",
    "uint64": "float64", "float32": "float32", "float64": "float64", "int*": "float64*",
    "float*": "float64*",
}


def regenerate_float_of() -> dict[str, str]:  # pragma: no cover - needs JAX
    import jax

    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp

    out = {}
    for a in (*DTYPES, *WEAK):
        r = jnp.sqrt({"int*": 1, "float*": 1.0}.get(a) or jnp.ones((), a))
        out[a] = r.dtype.name + ("*" if r.weak_type else "")
    return out


def regenerate() -> dict[str, dict[str, str]]:  # pragma: no cover - needs JAX
    import jax

    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp

    def value(name):
        return {"int*": 1, "float*": 1.0}.get(name) or jnp.zeros((), name)

    table = {}
    for a in (*DTYPES, *WEAK):
        table[a] = {}
        for b in (*DTYPES, *WEAK):
            op = jnp.logical_or if a == b == "bool" else jnp.add
            r = op(value(a), value(b))
            table[a][b] = r.dtype.name + ("*" if r.weak_type else "")
    return table


if __name__ == "__main__":  # pragma: no cover
    import pprint

    pprint.pprint(regenerate(), width=100, sort_dicts=False)
    pprint.pprint(regenerate_float_of(), width=100, sort_dicts=False)
