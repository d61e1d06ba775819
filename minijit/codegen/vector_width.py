"""How wide the vectors of generated loops are: 512 bits where that was measured faster.

LLVM's loop vectorizer gives a loop as many lanes as the CPU's *preferred* vector width
holds, and LLVM prefers 256-bit vectors on every AVX-512 CPU (its `prefer-256-bit` tuning,
which came with the Skylake server cores: their clock drops while they run 512-bit
instructions). Generated loops are long runs of arithmetic, nothing else, and on an Ice Lake
server core (LLVM's CPU name `icelake-server`: the development machine) 512-bit vectors made
them faster. GELU's loop, 512-bit time / 256-bit time, both compiled in one process and timed
in turn (medians of 7 timings; three processes; load average 0.5-0.7):

    GELU                                   float64     float32
    Numba backend, 50,000, one thread      0.69-0.79   0.62-0.73
    Numba backend, 10**6, two threads      0.68-0.81   0.57-0.68
    LLVM backend, 10,000                   0.75-0.84   0.64-0.75

So minijit asks for 512 bits (the LLVM function attribute `"prefer-vector-width"="512"`) on
the Intel cores from Ice Lake on (`WIDE_CPUS`) and leaves every other CPU to LLVM's choice;
`config.update("vector_width", 256)` (or 128, or 512) chooses for programs compiled
afterwards, whatever the CPU. The attribute is on the functions minijit generates only: the
LLVM backend's two functions (`mark`), and the functions Numba lowers while it compiles a minijit
program (`numba_functions`). The user's own Numba code in the same process keeps its width.

Invariants: the width is part of the disk cache's key (`codegen/compile.py`), so code compiled
for one width is never loaded for another; elementwise results are equal bit for bit at every
width (each lane computes what the scalar code computes); a float sum adds its partial sums
lane by lane, so its last bits may differ between widths, as they do between NumPy and any.
"""

from __future__ import annotations

import contextlib
import functools

from minijit.config import config

# LLVM's names (`llvmlite.binding.get_host_cpu_name()`) for Intel's cores from Ice Lake on,
# server and client, which have AVX-512.
WIDE_CPUS = frozenset({
    "icelake-server", "icelake-client", "tigerlake", "rocketlake", "sapphirerapids",
    "emeraldrapids", "graniterapids", "graniterapids-d", "diamondrapids",
})
WIDTHS = (128, 256, 512)  # what `config.vector_width` may be, besides None (the CPU's)


@functools.cache
def _host() -> tuple[str, bool]:
    """(LLVM's name for this CPU, whether it has AVX-512F)."""
    import llvmlite.binding as llvm

    llvm.initialize_native_target()
    return llvm.get_host_cpu_name(), bool(llvm.get_host_cpu_features().get("avx512f"))


def preferred() -> int | None:
    """The width in bits generated code asks for now, or None: LLVM's own choice."""
    chosen = config.vector_width
    if chosen is None:
        name, avx512 = _host()
        return 512 if avx512 and name in WIDE_CPUS else None
    if chosen not in WIDTHS:
        raise ValueError(f"config vector_width is {chosen!r}; it must be None (the CPU's "
                         f"best), 128, 256 or 512: minijit.config.update('vector_width', None)")
    return chosen


def attribute() -> str | None:
    """The LLVM function attribute that asks for `preferred()`, or None."""
    width = preferred()
    return None if width is None else f'"prefer-vector-width"="{width}"'


def mark(function, wanted: str | None) -> None:
    """Give an `llvmlite.ir.Function` the attribute `wanted` (from `attribute()`), if any.
    llvmlite's attribute set takes only the attributes it knows by name, so this adds the
    string attribute to the set directly; it is printed as written, as LLVM reads it."""
    if wanted is not None:
        set.add(function.attributes, wanted)


@contextlib.contextmanager
def numba_functions():
    """While this block runs, every function Numba lowers is `mark`ed: the program's entry and
    the kernels Numba makes of its parallel loops, and any of Numba's own helpers compiled for
    the first time then (the attribute changes only how loops inside them are vectorized). The block
    holds Numba's compiler lock, so no other thread's Numba code is compiled meanwhile, and so
    none is marked. A Numba without the hook compiles at LLVM's width."""
    from numba.core.codegen import CPUCodeLibrary
    from numba.core.compiler_lock import global_compiler_lock

    wanted = attribute()
    with global_compiler_lock:
        add_ir_module = getattr(CPUCodeLibrary, "add_ir_module", None)
        if wanted is None or add_ir_module is None:  # no hook in this Numba: LLVM's width
            yield
            return

        def marking(library, ir_module):
            for function in ir_module.functions:
                if not function.is_declaration:  # a declaration's code is compiled elsewhere
                    mark(function, wanted)
            return add_ir_module(library, ir_module)

        CPUCodeLibrary.add_ir_module = marking
        try:
            yield
        finally:
            CPUCodeLibrary.add_ir_module = add_ir_module
