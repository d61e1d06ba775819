"""The Numba backend: optimized Jaxpr -> Python source -> one `numba.njit` function (ch. 08).

`lower.py` writes the source (`kernels.py` the loop nests, `scalar_rules.py` the per-element
expressions), `compile.py` compiles and caches it, and `executable.py` calls it.

Importing this package loads no Numba: the LLVM backend uses some of its modules (`buffers`,
`boundary`, `vector_width`, `vecmath`'s source), and a program it compiles does not pay for
importing Numba. It does fill `rules.numba_rules` (importing `lower` imports the rule modules),
so that the table is whole wherever one reads it; `NumbaExecutable`, which compiles with
Numba, loads on first use.
"""

from __future__ import annotations

from minijit.codegen.boundary import c_array
from minijit.codegen.lower import CodegenError, lower_jaxpr


def __getattr__(name: str):
    """`NumbaExecutable`, imported (with Numba) when first asked for."""
    if name == "NumbaExecutable":
        from minijit.codegen.executable import NumbaExecutable

        return NumbaExecutable
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["CodegenError", "NumbaExecutable", "c_array", "lower_jaxpr"]
