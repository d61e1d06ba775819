"""Row loops: consecutive loop nests over the same rows become one loop over the rows.

Why. A softmax is three loop nests over the rows of `x`: the rows' maxima, then `exp` and
the rows' sums, then the division. Each nest streams the whole array through memory; for a
large `x` the program is bound by those passes, not by arithmetic. But row `i` of each nest
needs only row `i` of what the nests before it wrote. So one loop can run all three for row
`i` while that row is in the cache:

    for i0 in range(_n0):
        b[i0] = folds.max_f64(a[i0])
        for i1 in range(_n1): d[i0, i1] = exp(a[i0, i1] - c[i0, 0])
        e[i0] = folds.sum_f64(d[i0])
        for i1 in range(_n1): m[i0, i1] = d[i0, i1] / l[i0, 0]

This is loop fusion of the outer loops, done where the optimizer's fusion (chapter 08)
cannot go: across a reduction, whose result the next kernel reads broadcast along the row.

When (`row_runs`). A run is a sequence of consecutive equations of one Jaxpr, at least two of
them loop kernels, in which
- every loop kernel (a fused kernel or a lone elementwise equation or reduction) has a loop
  shape of rank >= 2 whose first size is the same R >= 2, does not reduce axis 0 (so it
  writes row i0 of its outputs in iteration i0), and does not write into a concatenation
  (rank-1 kernels that could share a loop are fuse_elementwise's and fuse_siblings' to
  join, and fuse_siblings keeps them apart on purpose when they have many outputs);
- there are at most MAX_KERNELS kernels;
- every other equation is a `reshape` that keeps the first size R (`b.reshape((R, 1))`: row
  i0 of the result is row i0 of the operand, and the reshape is a view);
- an array written in the run is read in it only *row-locally*: at the loop's own index (an
  operand of the loop's shape) or through a `broadcast_in_dim` that maps its axis 0, of size
  R, to the loop's axis 0;
- a kernel writes into the buffer of a value from before the run (`plan_buffers` reuses dead
  buffers) only if every read in the run is row-local: a bias broadcast along the rows, read
  whole by every row, must not share memory with anything the run writes.
So iteration i0 reads, of what the run writes, only row i0, which the equations before it
wrote earlier in the same iteration, as they would have in separate loops: the values are
the same, bit for bit (tests/test_row_loops.py).

How (`emit_run`). Each equation is lowered as usual; its lines are then split into the
statements before its loop over axis 0 (allocations and views: hoisted before the one row
loop, in order), the `for i0 in range(R):` line (the same for all) and the loop's body (moved
into the row loop, in order). The hoisted statements allocate and make views, and write into
no array: a reduction's `acc[...] = 0.0` becomes `acc[i0] = 0.0` in the row's own iteration,
since acc may be an array that an earlier kernel of the run still fills (`_split_prologue`).
A kernel whose lines do not have that shape (a learner's
`loop_nest` that orders the loops otherwise) is lowered as before, unfused.
Threads (`minijit/threads.py`): a run at the function's top level over as many elements as
a threaded kernel (`Lowering.threads_for`) runs its row loop on Numba's threads
(`numba.prange`): iterations write disjoint rows, by the rule above. A kernel's scratch row
(`_row_...`), hoisted before a serial row loop, is then allocated in the loop body, so that
each thread has its own (Numba allocates it once per thread's chunk of rows).
"""

from __future__ import annotations

import re
import threading
from contextlib import contextmanager

import numpy as np

from minijit import primitives as P
from minijit.codegen.kernels import is_loop_kernel
from minijit.codegen.rules import Reduction, numba_rules
from minijit.ir import Jaxpr, Var
from minijit.passes.fuse_elementwise import as_kernel, fused_p

_ROW_LOOP = re.compile(r"for i0 in range\(.+\):$")
# At most this many kernels share a row loop. Numba's compile time grows faster than the
# loop body (why fuse_siblings caps a loop at 32 outputs), and a softmax, a layer norm or an
# attention score needs 2 to 4.
MAX_KERNELS = 8


def _is_loop_kernel(e) -> bool:
    """Is `e` lowered by `emit_kernel` to a loop nest over an array (not a scalar)?"""
    return is_loop_kernel(e.primitive) and bool(e.outvars) and bool(e.outvars[0].aval.shape)


def _loop_shape(e):
    """(kernel Jaxpr, iteration shape, reduced axes) of a loop-kernel equation."""
    kernel = (e if e.primitive is fused_p else as_kernel(e)).params["jaxpr"]
    last = kernel.eqns[-1]
    if isinstance(numba_rules.get(last.primitive), Reduction):
        return kernel, last.invars[0].aval.shape, set(last.params["axes"])
    return kernel, last.outvars[0].aval.shape, set()


def _row_local(kernel: Jaxpr, e, shape) -> dict[int, bool]:
    """{id(array operand of e): is it read only row-locally?} (see the module docstring)."""
    outer = {id(v): a for v, a in zip(kernel.invars, e.invars)
             if isinstance(a, Var) and a.aval.shape}
    local = {id(a): True for a in outer.values()}
    for m in kernel.eqns:
        for x in m.invars:
            a = outer.get(id(x))
            if a is not None and x.aval.shape != shape:
                local[id(a)] &= (m.primitive is P.broadcast_in_dim_p
                                 and tuple(m.params["broadcast_dimensions"])[:1] == (0,)
                                 and x.aval.shape[0] == shape[0])
    return local


class _Run:
    """A run being grown: where it starts, its row count R, and what its equations did."""

    def __init__(self, start: int):
        self.start = start
        self.stop = start  # one past its last loop kernel
        self.rows = None
        self.kernels = 0
        self.written: set[int] = set()  # ids of the Vars its equations produce
        self.names: set[str] = set()  # and their names in the generated code
        self.nonlocal_reads = False  # does one of its kernels read an operand otherwise?
        self.reuses_outside = False  # does one write into the buffer of a Var from before?

    def take(self, k: int, e, lo) -> bool:
        """Add equation k, `e`, if the run can compute it (see the module docstring)."""
        if e.primitive is P.reshape_p:
            if self.rows is None or not (e.invars[0].aval.shape[:1] == (self.rows,)
                                         == e.outvars[0].aval.shape[:1]):
                return False
        elif _is_loop_kernel(e) and id(e.outvars[0]) not in lo.fills:  # (fills: not built)
            kernel, shape, axes = _loop_shape(e)
            if (len(shape) < 2 or shape[0] < 2 or self.rows not in (None, shape[0])
                    or 0 in axes or self.kernels == MAX_KERNELS
                    or any(lo.name(v) in lo.into for v in e.outvars)):
                return False
            local = _row_local(kernel, e, shape)
            if not all(ok for a, ok in local.items() if a in self.written):
                return False
            # A kernel that writes into the buffer of a Var from before the run (plan_buffers)
            # may overwrite a row that another kernel of the run reads later, unless every
            # read in the run is row-local.
            nonlocal_reads = self.nonlocal_reads or not all(local.values())
            reuses_outside = self.reuses_outside or any(
                lo.reuse[lo.name(v)] not in self.names for v in e.outvars
                if lo.name(v) in lo.reuse)
            if nonlocal_reads and reuses_outside:
                return False
            self.nonlocal_reads, self.reuses_outside = nonlocal_reads, reuses_outside
            self.rows = shape[0]
            self.kernels += 1
            self.stop = k + 1
        else:
            return False
        self.written |= {id(v) for v in e.outvars}
        self.names |= {lo.name(v) for v in e.outvars}
        return True


_apart = threading.local()


@contextmanager
def kept_apart():
    """Programs lowered in this thread within the block keep every kernel in its own loops:
    the reference that row loops are compared with, bit for bit (tests/test_row_loops.py)."""
    _apart.on = True
    try:
        yield
    finally:
        _apart.on = False


def row_runs(jaxpr: Jaxpr, lo) -> dict[int, int]:
    """{start: stop} of the runs of `jaxpr.eqns` that one loop over the rows computes: at
    least two loop kernels each (a run's trailing reshapes are left out of it)."""
    runs: dict[int, int] = {}
    if getattr(_apart, "on", False):
        return runs
    run = None
    k = 0
    while k < len(jaxpr.eqns):
        e = jaxpr.eqns[k]
        if run is None:
            run = _Run(k)
        if run.take(k, e, lo):
            k += 1
            continue
        if run.kernels >= 2:
            runs[run.start] = run.stop
        # the equation that did not fit may start the next run, unless it started this one
        restart = run.start != k
        run = None
        if not restart:
            k += 1
    if run is not None and run.kernels >= 2:
        runs[run.start] = run.stop
    return runs


def emit_run(lo, eqns) -> None:
    """Lower `eqns`, a run, as one loop over the rows (see the module docstring), or one by
    one if some equation's lines do not have the expected shape."""
    base = "    " * lo.indent
    parts = []  # per equation: [(line, its equation's description)]
    size = max(int(np.prod(_loop_shape(e)[1])) for e in eqns if _is_loop_kernel(e))
    threaded = lo.threads_for(size)
    lo.in_row_run = True  # the kernels' own loops stay serial: the row loop gets the threads
    try:
        for e in eqns:
            start = len(lo.lines)
            lo.describe_and_lower(e)
            parts.append([(text, lo.line_eqns.get(start + i + 2, ""))
                          for i, text in enumerate(lo.lines[start:])])
            del lo.lines[start:]
    finally:
        lo.in_row_run = False
    prologue, body, header = [], [], None
    for e, lines in zip(eqns, parts):
        loop = [i for i, (text, _) in enumerate(lines)
                if text.startswith(base) and _ROW_LOOP.match(text[len(base):])]
        if e.primitive is P.reshape_p:
            if any(not t.startswith(base) or t.startswith(base + " ") for t, _ in lines):
                return _put_back(lo, parts)
            prologue += lines
            continue
        if len(loop) != 1 or (header is not None and lines[loop[0]][0] != header):
            return _put_back(lo, parts)
        i = loop[0]
        header = lines[i][0]
        inner = lines[i + 1:]
        if any(not t.startswith(base + "    ") for t, _ in inner):
            return _put_back(lo, parts)  # a statement after the loop over the rows
        hoisted, inits = _split_prologue(lines[:i], base)
        if hoisted is None:
            return _put_back(lo, parts)
        prologue += hoisted
        body += [(base + "    " + lines[0][0].strip(), lines[0][1])] + inits + inner
    prologue.append((f"{base}# one loop over the rows for the {len(eqns)} equations above "
                     f"(codegen/row_loops.py)", ""))
    if threaded:
        header = header.replace(" in range(", " in numba.prange(", 1)
        lo.threaded = True
        scratch = [(base + "    " + t.strip(), d) for t, d in prologue
                   if _SCRATCH.match(t.strip())]
        prologue = [p for p in prologue if not _SCRATCH.match(p[0].strip())]
        body = scratch + body
    _put_back(lo, [prologue, [(header, "")], body])


# What the prologue may hold: an allocation or a view (`d = alloc.empty(...)`, `c = b.reshape(...)`,
# `e = b  # reused`), or a comment. A reduction's `acc[...] = init` moves into the row loop.
_BINDS_A_NAME = re.compile(r"\w+ = [^=]|#")
_SCRATCH = re.compile(r"_row_\w+ = alloc\.empty\(")  # a kernel's scratch row (kernels.py)
_FILLS = re.compile(r"(\w+)\[\.\.\.\] = (.+)$")


def _split_prologue(lines, base):
    """(the statements to hoist before the row loop, the row's own initialisations), or
    (None, None) if a statement writes into an array in another way.

    The rule that keeps shared memory safe: the prologue runs once, before iteration 0 of
    every kernel of the run, so it must not write into an array. An array that a kernel of
    the run takes over (`plan_buffers`: `e = b  # reused`, b dead after an earlier kernel of
    the run) still holds b's rows for the iterations to come; b's row i0 is dead only once
    iteration i0 has read it. So a reduction's accumulator, filled whole before its loop when
    it stands alone (`e[...] = 0.0`), is filled one row at a time here (`e[i0] = 0.0`), at the
    start of its kernel's part of iteration i0: after the earlier kernels read row i0, before
    its own kernel adds to it. Every other write already stays inside the row loop, and reads
    of the run's arrays are row-local (`_Run.take`), so no iteration sees another's rows."""
    hoisted, inits = [], []
    for text, description in lines:
        statement = text.strip()
        fill = _FILLS.match(statement)
        if fill:
            inits.append((f"{base}    {fill[1]}[i0] = {fill[2]}", description))
        elif _BINDS_A_NAME.match(statement):
            hoisted.append((text, description))
        else:
            return None, None
    return hoisted, inits


def _put_back(lo, parts) -> None:
    for lines in parts:
        for text, description in lines:
            lo.lines.append(text)
            lo.line_eqns[len(lo.lines) + 1] = description
