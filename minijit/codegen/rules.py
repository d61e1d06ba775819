"""The Numba backend's one rule table: how each primitive becomes code (chapter 09).

`numba_rules[p]` says how primitive `p` is written, as one of four kinds of entry:

- `Expression(rule)`: `rule(args, eqn) -> str` is the Python expression for one element of an
  elementwise primitive's result, given one element of each operand as an expression (such as
  `a`, `x[i0, i1]` or `(-0.5)`). Loop kernels put it inside their loop nest; an equation on
  rank-0 values uses it directly (`scalar_rules.py`).
- `Indexed(rule)`: `rule(array, eqn, idx) -> str` is one element of the result read from the
  operand `array` at other indices than the loop's own `idx` (`broadcast_in_dim`: an operand
  of shape (4, 1) in a (4, 5) loop is read at `[i0, 0]`; `kernels.py`).
- `Reduction(init, combine, row)`: `init(dtype) -> str` is the accumulator's first value, and
  `combine(acc, v, dtype) -> list[str]` the statements that fold element `v` into it, inside
  the kernel's loop (`kernels.py`). `row(dtype) -> str | None`, if given, names a function
  that folds a whole contiguous row in one call (`folds.sum_f64`), used for the last axis
  when the reduced axes are the trailing ones; it must agree with `combine` up to rounding.
- `Statements(rule)`: `rule(lo, eqn, args, outs)` writes whole statements through the
  `Lowering` `lo`: reshapes, slices, the matrix product (`array_rules.py`), control flow
  (`control_rules.py`), a fused kernel's loop nest (`kernels.py`).

The first three are *loop-kernel members*: `fuse_elementwise` groups them and one loop nest
computes them all. Lowering reads the table while it writes each program, so an entry added
at run time (chapter 09's exercise) is used by the next compile; a primitive with no entry is
a `CodegenError` naming its equation and the interpreter as the way out.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from minijit.core import Primitive


@dataclass(frozen=True)
class Expression:
    rule: Callable  # (args, eqn) -> str


@dataclass(frozen=True)
class Indexed:
    rule: Callable  # (array, eqn, idx) -> str


@dataclass(frozen=True)
class Reduction:
    init: Callable  # (dtype) -> str
    combine: Callable  # (acc, v, dtype) -> list[str]
    row: Callable | None = None  # (dtype) -> str | None


@dataclass(frozen=True)
class Statements:
    rule: Callable  # (lo, eqn, args, outs) -> None


NumbaRule = Expression | Indexed | Reduction | Statements

numba_rules: dict[Primitive, NumbaRule] = {}


def is_kernel_member(p: Primitive) -> bool:
    """Is `p` computed element by element inside a loop kernel?"""
    return isinstance(numba_rules.get(p), (Expression, Indexed, Reduction))
