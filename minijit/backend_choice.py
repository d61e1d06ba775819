"""Which code generator compiles a program under `backend="auto"`, `jit`'s default (chapter 09).

The two code generators trade first calls against run time:

- the LLVM backend (`minijit/llvm/`) writes LLVM IR itself: a first call costs LLVM's
  optimization and machine code only, tens of milliseconds where Numba's pipeline costs a
  few hundred;
- the Numba backend (`minijit/codegen/`) compiles slower but runs faster where its code is
  better: threads for large kernels, and memory reused between values
  (`passes/plan_buffers.py`; the LLVM backend gives each value a buffer of its own); windows
  (slices, concatenations, pads, `x.at[i].set(v)`) that its kernels read and write in place where
  the LLVM backend copies them, which matters in a loop; donated arguments written in place;
  programs of hundreds of repeated results, which it rolls into one loop and compiles faster;
  and `sin`, `cos` and `erf` of minijit's vector math where the setting asks for them
  (`config.update("vector_math", "all")`; the LLVM backend has the other functions, compiled
  from the same source: `llvm/vecmath.py`).

So `numba_reason` sends a program to Numba when any of those would show in the run time, and
says why; everything else is tried on LLVM (which may still decline it: a product, `scan`,
`argmax`, a dtype it does not compile; it goes to Numba then too). Every rule reads only the
optimized program and the call's options, so a shape's choice is made once, at compile time.
Both backends compute what `eval_jaxpr` computes (the differential tests hold each to it; a
float sum may differ in its last bits, as each adds in its own order), so the choice changes
how fast a program runs, not what it returns.
"""

from __future__ import annotations

from math import prod

from minijit import build
from minijit.ir import ClosedJaxpr, Jaxpr, pp_eqn_alone, subjaxprs
from minijit.primitives import (
    concatenate_p,
    dynamic_slice_p,
    dynamic_update_slice_p,
    pad_p,
    rev_p,
    slice_p,
    transpose_p,
)

# A value this large runs long enough that a compile's tens of milliseconds do not matter,
# and its kernels get threads on the Numba backend (`codegen.lower.Lowering.PARALLEL_AT`).
LONG_RUNNING_AT = 1 << 16

# More results than this and the LLVM backend compiles slower than the Numba backend, which
# rolls repeated results into one loop (`codegen/reroll.py`): measured, a program of K
# results `x * c_k + k` took 0.29 / 0.68 / 2.13 s on LLVM and 0.43 / 1.11 / 1.56 s on Numba
# for K = 200 / 400 / 700.
MANY_RESULTS = 512

# The primitives whose bodies run once per iteration.
LOOPS = frozenset({"while", "fori_loop", "scan"})

# The windows the LLVM backend copies into a buffer of their own, where the Numba backend's
# kernels read them in place (and write a `dynamic_update_slice` in place).
COPIED_WINDOWS = frozenset({slice_p, dynamic_slice_p, dynamic_update_slice_p, transpose_p, rev_p,
                            concatenate_p, pad_p})


def numba_reason(closed: ClosedJaxpr, donated: tuple = (), parallel: bool | None = None
                 ) -> str | None:
    """Why `closed` should compile with Numba rather than LLVM, or None to try LLVM first."""
    if parallel:
        return "parallel=True asks for threads, which only the Numba backend runs"
    if "loop_nest" in build.using():
        return "your loop_nest (chapter 09) is in use, and only the Numba backend calls it"
    if any(donated):  # one flag per argument
        return "a donated argument, which only the Numba backend writes in place"
    if len(closed.jaxpr.outvars) > MANY_RESULTS:
        return (f"{len(closed.jaxpr.outvars):,} results, which the Numba backend compiles "
                "faster: it rolls repeated results into one loop")
    return _reason_in(closed.jaxpr, in_loop=False)


def _reason_in(jaxpr: Jaxpr, in_loop: bool) -> str | None:
    for v in (*jaxpr.constvars, *jaxpr.invars, *jaxpr.outvars):
        if prod(v.aval.shape) >= LONG_RUNNING_AT:
            return _large(v.aval)
    for eqn in jaxpr.eqns:
        for v in eqn.outvars:
            if prod(v.aval.shape) >= LONG_RUNNING_AT:
                return f"{_large(v.aval)}, in `{pp_eqn_alone(eqn)}`"
        name = eqn.primitive.name
        if _vector_math(name, eqn):
            return (f"the Numba backend calls minijit's vectorized {name} (codegen/vecmath), "
                    f"which the LLVM backend does not have, in `{pp_eqn_alone(eqn)}`")
        if in_loop and eqn.primitive in COPIED_WINDOWS and _copies(eqn) > 1:
            return (f"a {name} in a loop, which the LLVM backend copies on every iteration "
                    f"where the Numba backend works in place, in `{pp_eqn_alone(eqn)}`")
        for sub in subjaxprs(eqn):
            reason = _reason_in(sub, in_loop or name in LOOPS)
            if reason:
                return reason
    return None


def _copies(eqn) -> int:
    """How many elements the LLVM backend copies for a window: its result's, or for a
    `dynamic_update_slice` its operand's (the whole array, of which one window changes)."""
    v = eqn.invars[0] if eqn.primitive is dynamic_update_slice_p else eqn.outvars[0]
    return prod(v.aval.shape)


def _large(aval) -> str:
    return (f"{aval.str_short()} has {prod(aval.shape):,} elements, where the Numba backend's "
            "threads and vector code pay for its compile")


def _vector_math(name: str, eqn) -> bool:
    """Does the Numba backend call a `codegen/vecmath` function for this equation
    (`config.vector_math`) that the LLVM backend does not have (`llvm/vecmath.py`)?"""
    if not eqn.invars:
        return False
    from minijit.codegen.vecmath import SOURCES
    from minijit.llvm import vecmath

    return (name, eqn.invars[0].aval.dtype.name) in SOURCES and vecmath.in_use(name) \
        and name not in vecmath.NAMES
