"""Loop nests: elementwise kernels and reductions with accumulators (chapter 09).

A kernel is a sub-Jaxpr of elementwise equations over one iteration shape (a `fused`
equation's body, or a single elementwise equation). It becomes one loop nest that computes
every equation for one element in registers and writes only the values used outside: no
temporaries. Broadcasting is index arithmetic: an operand of shape (4, 1) in a (4, 5) loop is
read at `[i0, 0]`. A reduction as the kernel's last equation accumulates in the same loop.

The `for` lines and the operands' subscripts come from one function, `loop_nest`, a piece of
the build track (`minijit.build`, exercise `ex09_loop_nest`): `emit_kernel` calls it through
`build.call("loop_nest", ...)`, and a learner's version is checked (`_check_loop_nest`)
before any code is compiled, since Numba does not check bounds.
"""

from __future__ import annotations

import functools
import re

import numpy as np

from minijit import build
from minijit import primitives as P
from minijit.codegen.reroll import emit_loop, emit_output_loop, output_runs, repeated_runs
from minijit.codegen.rules import (
    Indexed,
    Reduction,
    Statements,
    is_kernel_member,
    numba_rules,
)
from minijit.codegen.scalar_rules import (
    cast,
    dtype_name,
    float_max,
    float_min,
    literal,
    scalar_expr,
    wrapping,
)
from minijit.ir import Jaxpr, Lit, Var
from minijit.passes.fuse_elementwise import fused_p


def _fold(op: str):
    def combine(acc: str, v: str, dt) -> list[str]:
        return [f"{acc} = {cast(wrapping(op, acc, v, dt), dt)}"]

    return combine


def _pick(op: str):
    def combine(acc: str, v: str, dt) -> list[str]:
        if dt.kind == "f":  # NaN propagates, and -0.0 orders below +0.0, as in JAX
            return [f"{acc} = {(float_max if op == '>' else float_min)(acc, v)}"]
        return [f"if {v} {op} {acc}:", f"    {acc} = {v}"]

    return combine


def _folds(name: str):
    def row(dt) -> str | None:  # the `folds` function for a contiguous row of dtype dt
        return f"folds.{name}_f{dt.itemsize * 8}" if dt in (np.float32, np.float64) else None

    return row


def _lowest(dt) -> str:
    return literal(-np.inf if dt.kind == "f" else False if dt.kind == "b" else np.iinfo(dt).min,
                   dt)


def _highest(dt) -> str:
    return literal(np.inf if dt.kind == "f" else True if dt.kind == "b" else np.iinfo(dt).max,
                   dt)


numba_rules[P.reduce_sum_p] = Reduction(lambda dt: literal(0, dt), _fold("+"), _folds("sum"))
numba_rules[P.reduce_prod_p] = Reduction(lambda dt: literal(1, dt), _fold("*"))
numba_rules[P.reduce_max_p] = Reduction(_lowest, _pick(">"), _folds("max"))
numba_rules[P.reduce_min_p] = Reduction(_highest, _pick("<"), _folds("min"))


def _broadcast_read(array: str, eqn, idx: list[str]) -> str:
    """One element of `broadcast_in_dim`'s result: its operand read by index arithmetic."""
    src, v = eqn.invars[0], eqn.outvars[0]
    if src.aval.shape == ():
        return array
    offset = len(idx) - len(v.aval.shape)  # loops may be wider than this value
    sub = [("0" if src.aval.shape[k] == 1 else idx[offset + d])
           for k, d in enumerate(eqn.params["broadcast_dimensions"])]
    return f"{array}[{', '.join(sub)}]"


numba_rules[P.broadcast_in_dim_p] = Indexed(_broadcast_read)


def loop_nest(shape: tuple, operands: list) -> tuple[list[str], list[str]]:
    """The loops of an elementwise kernel over `shape`, and how each operand is read in them.

    `shape` is the loop's shape; `operands` the shapes of the arrays the loop body reads or
    writes, each broadcastable to `shape` by NumPy's rules (leading dimensions may be
    missing, a dimension of size 1 is repeated). Returns `(loops, indices)`: `loops`, the
    `for` lines, outermost first and without indentation, loop k being
    `for i{k} in range(shape[k]):`; `indices`, for each operand the subscript that reads its
    element in the loop body: all the loop indices for an operand of the loop's own shape,
    else, aligned on the trailing loops, `0` in a dimension of size 1 (`"i0, 0"` for (4, 1)
    in a (4, 5) loop, `"i1"` for (5,)), and `""` for rank 0.
    """
    build.guard("loop_nest")  # fails when a learner's piece hands its work to this one
    idx = [f"i{k}" for k in range(len(shape))]
    loops = [f"for {i} in range({d}):" for i, d in zip(idx, shape)]
    indices = []
    for s in operands:
        if tuple(s) == tuple(shape):
            indices.append(", ".join(idx))
            continue
        offset = len(shape) - len(s)
        indices.append(", ".join("0" if d == 1 else idx[offset + k] for k, d in enumerate(s)))
    return loops, indices


_LOOP = re.compile(r"\s*for\s+(\w+)\s+in\s+range\(\s*(\d+)\s*\)\s*:\s*")
_LOOP_SIZE = re.compile(r"range\(\s*(\d+)\s*\)")  # the size a checked loop line runs to


def _subscripts(text: str) -> list[str]:
    return [] if not text.strip() else [t.strip() for t in text.split(",")]


def _check_loop_nest(result, shape, operands) -> str | None:
    """Is `result` a loop nest over `shape` that reads every operand in bounds, at the
    element NumPy's broadcasting reads? (Checked before any code is compiled: generated
    code runs in Numba, where an index out of bounds is not caught.)"""
    shape = tuple(shape)
    if not (isinstance(result, (tuple, list)) and len(result) == 2):
        return (f"returned {type(result).__name__} {result!r:.80}, not a pair "
                f"(loops, indices)")
    loops, indices = result
    if not isinstance(loops, (list, tuple)) or not all(isinstance(x, str) for x in loops):
        return f"returned loops {loops!r:.80}: a list of strings (the for lines) is needed"
    if len(loops) != len(shape):
        return f"returned {len(loops)} for lines for a loop over shape {shape}: one per dimension"
    for k, (line, d) in enumerate(zip(loops, shape)):
        m = _LOOP.fullmatch(line)
        if not m or m[1] != f"i{k}" or int(m[2]) != d:
            return (f"returned the loop line {line!r} for dimension {k} of shape {shape}, "
                    f"where {f'for i{k} in range({d}):'!r} is needed")
    if not isinstance(indices, (list, tuple)) or not all(isinstance(x, str) for x in indices):
        return (f"returned indices {indices!r:.80}: a list of strings (one subscript per "
                f"operand) is needed")
    if len(indices) != len(operands):
        return f"returned {len(indices)} indices for {len(operands)} operands"
    for n, (text, s) in enumerate(zip(indices, operands)):
        s = tuple(s)
        subs = _subscripts(text)
        where = f"index {text!r} of operand {n} (shape {s}) in a loop over {shape}"
        if len(subs) != len(s):
            return f"returned the {where}: it needs {len(s)} subscripts, one per dimension"
        for j, (sub, d) in enumerate(zip(subs, s)):
            p = len(shape) - len(s) + j  # the loop that runs along this dimension
            if sub == f"i{p}" and shape[p] == d or sub == "0" and d == 1:
                continue
            runs = (f"i{int(sub[1:])} runs to {shape[int(sub[1:])]}"
                    if re.fullmatch(r"i\d+", sub) and int(sub[1:]) < len(shape) else
                    "that is not a loop index of this nest" if sub != "0" else
                    f"0 reads one element of {d}")
            want = "0" if d == 1 else f"i{p}"
            return (f"returned the {where}: dimension {j} (size {d}) is read with {sub!r} "
                    f"({runs}), where NumPy's broadcasting reads {want!r}")
    return None


def _selftest_loop_nest(candidate) -> str | None:
    """Run a candidate on a (4, 5) loop reading (4, 5), (4, 1), (5,), (1, 5), and on rank 0."""
    for shape, operands in [((4, 5), [(4, 5), (4, 1), (5,), (1, 5)]), ((), [()])]:
        problem = _check_loop_nest(candidate(shape, operands), shape, operands)
        if problem:
            return problem
    return None


build.register("loop_nest", loop_nest, chapter="09_code_generation",
               signature="loop_nest(shape, operands) -> (loops, indices)",
               check=_check_loop_nest, selftest=_selftest_loop_nest)


def _numpy_broadcasts(eqns, rank: int) -> list:
    """The `broadcast_in_dim` equations (nested kernels too) that broadcast by NumPy's rules
    in a loop of rank `rank`: their operand's dimensions are the trailing loops'."""
    found = []
    for eqn in eqns:
        if eqn.primitive is fused_p:
            found += _numpy_broadcasts(eqn.params["jaxpr"].eqns, rank)
        elif eqn.primitive is P.broadcast_in_dim_p:
            src, v = eqn.invars[0].aval.shape, eqn.outvars[0].aval.shape
            offset = rank - len(v)
            dims = tuple(offset + d for d in eqn.params["broadcast_dimensions"])
            if src != () and src != v and dims == tuple(range(rank - len(src), rank)):
                found.append(eqn)
    return found


def open_loop(out, line: str, threaded: bool) -> None:
    """Write a `for` line and indent; on Numba's threads (`numba.prange`) if `threaded`."""
    if threaded:
        line = line.replace(" in range(", " in numba.prange(", 1)
        out.threaded = True
    out.line(line)
    out.indent += 1


def _element_body(out, members, full_inputs, env, idx, name, reads, index, live=None,
                  stores=None, stored=None):
    """Inside the loops: read each input of the loop's shape once, compute the members.
    Returns `atom(a)`, the expression of a kernel value for this element."""
    for v, outer in full_inputs:
        env[id(v)] = name(v)
        out.line(f"{name(v)} = {outer}[{index}]")
    emit_elements(out, members, env, idx, name, reads, live=live, stores=stores,
                  stored=stored)

    def atom(a):
        return literal(a.val, a.aval.dtype) if isinstance(a, Lit) else env[id(a)]

    return atom


def _store(out, outer: str, value: str, index: str) -> None:
    """outer[index] = value, or its row of the buffer of many outputs (lower._stackable)."""
    if outer in out.stacked:
        buffer, row = out.stacked[outer]
        out.line(f"{buffer}[{row}, {index}] = {value}")
    else:
        out.line(f"{outer}[{index}] = {value}" if index else f"{outer}[()] = {value}")


def emit_kernel(out, kernel: Jaxpr, in_exprs: list[str], out_names: list[str], name) -> None:
    """Emit the loop nest computing `kernel` into the emitter `out`.

    `in_exprs` are the outer names of the kernel's inputs (arrays, or scalars for rank 0);
    `out_names` the outer names its outputs get. `name(var)` names a kernel variable.
    """
    last = kernel.eqns[-1]
    reduction = isinstance(numba_rules.get(last.primitive), Reduction)
    members = kernel.eqns[:-1] if reduction else kernel.eqns
    shape = (last.invars[0].aval.shape if reduction else last.outvars[0].aval.shape)
    idx = [f"i{k}" for k in range(len(shape))]
    # The loops and the subscripts of the operands, from the piece `loop_nest`: the first
    # operand is the loop's own shape (the outputs, the inputs of that shape), the others
    # are what broadcast_in_dim reads by NumPy's rules.
    broadcasts = _numpy_broadcasts(members, len(shape))
    loops, indices = build.call("loop_nest", tuple(shape),
                                [tuple(shape)] + [e.invars[0].aval.shape for e in broadcasts])
    index = ", ".join(_subscripts(indices[0]))
    reads = {id(e): ", ".join(_subscripts(ix)) for e, ix in zip(broadcasts, indices[1:])}
    outputs = dict(zip(map(id, kernel.outvars), out_names))

    # Allocate what the loop writes.
    for v, outer in zip(kernel.outvars, out_names):
        if isinstance(v, Var) and not (reduction and v is last.outvars[0]) and (
                outer not in out.stacked):
            into = getattr(out, "into", {}).get(outer)
            if into:  # its rows of the bigger array that alone reads it (in_place.py)
                bigger, allocate, rows = into
                if bigger not in out.allocated:
                    out.allocated.add(bigger)
                    out.line(f"{bigger} = {allocate}")
                out.imports.add("from minijit.codegen.layout import c_view")
                out.line(f"{outer} = c_view({bigger}[{rows}])  # in place, see in_place.py")
                continue
            given = out.prealloc.get(outer) or out.reuse.get(outer)
            out.line(f"{outer} = {given}  # reused, see plan_buffers" if outer in out.reuse
                     else f"{outer} = {given}" if given else
                     f"{outer} = alloc.empty({out.shape(v.aval.shape)}, "
                     f"np.{dtype_name(v.aval.dtype)})")
    acc = None
    # Reducing the trailing axes (a row-wise sum): the accumulator lives in a register for
    # each row and is stored once, after the inner loops.
    in_register = False
    if reduction:
        axes = set(last.params["axes"])
        dt = last.outvars[0].aval.dtype
        kept = [i for k, i in enumerate(idx) if k not in axes]
        acc_name = outputs.get(id(last.outvars[0])) or name(last.outvars[0])
        rule = numba_rules[last.primitive]
        init = rule.init(dt)
        n_kept = len(shape) - len(axes)
        trailing = axes == set(range(n_kept, len(shape)))
        in_register = bool(kept) and trailing
        # Trailing axes of a float dtype: each row along the last axis is folded by one call
        # of a function that LLVM vectorizes (`folds.py`), not element by element.
        row_fold = rule.row(dt) if rule.row and trailing and shape else None
        if in_register:
            kept_shape = tuple(shape[:n_kept])
            # plan_buffers gives a reduction only buffers dead before it, never its operand's
            given = out.prealloc.get(acc_name) or out.reuse.get(acc_name)
            out.line(f"{acc_name} = {given}  # reused, see plan_buffers"
                     if acc_name in out.reuse else f"{acc_name} = {given}" if given else
                     f"{acc_name} = alloc.empty({out.shape(kept_shape)}, np.{dtype_name(dt)})")
            acc = f"_acc_{acc_name}"
        elif kept:
            kept_shape = tuple(d for k, d in enumerate(shape) if k not in axes)
            given = out.prealloc.get(acc_name) or out.reuse.get(acc_name)
            if given:
                out.line(f"{acc_name} = {given}  # reused, see plan_buffers"
                         if acc_name in out.reuse else f"{acc_name} = {given}")
                out.line(f"{acc_name}[...] = {init}")
            else:
                out.line(f"{acc_name} = alloc.full({out.shape(kept_shape)}, {init}, "
                         f"np.{dtype_name(dt)})")
            acc = f"{acc_name}[{', '.join(kept)}]"
        else:
            out.line(f"{acc_name} = {init}")
            acc = acc_name

    # Scalars are read once, outside the loops.
    env: dict[int, str] = {}
    full_inputs = []
    for v, outer in zip(kernel.invars, in_exprs):
        if v.aval.shape == ():
            env[id(v)] = outer
        elif v.aval.shape == shape:
            full_inputs.append((v, outer))
        else:
            env[id(v)] = outer  # read through broadcast_in_dim's index arithmetic

    # The outer loop of a large kernel runs on Numba's threads (minijit/threads.py), when its
    # iterations write disjoint elements (a reduction only along other axes than the first);
    # a row loop (row_loops.py) threads its kernels' shared loop instead
    threads = (shape and not (reduction and 0 in last.params["axes"])
               and hasattr(out, "threads_for") and out.threads_for(int(np.prod(shape))))
    def loop_line(k: int) -> str:  # loop k, its size read from the arguments (`out.dim`)
        return _LOOP_SIZE.sub(lambda m: f"range({out.dim(int(m[1]))})", loops[k].strip())

    if reduction and row_fold:
        _emit_rows(out, kernel, members, in_exprs, out_names, name, reads, env, full_inputs,
                   idx, index, loop_line, threads, row_fold, acc, n_kept)
        return
    # A row-wise reduction of computed values (an integer sum) runs the row twice: a first
    # loop computes the elements and stores them, which LLVM vectorizes, and a second one
    # folds them in order.
    split = in_register and bool(members)
    if split:
        reduced_shape = tuple(shape[n_kept:])
        reduced_index = ", ".join(idx[n_kept:])
        folded = last.invars[0]
        inner_of = dict(zip(map(id, kernel.invars), in_exprs))
        if id(folded) in outputs and outputs[id(folded)] in out.stacked:
            buffer, row = out.stacked[outputs[id(folded)]]
            folded_at = f"{buffer}[{row}, {index}]"
        elif id(folded) in outputs:
            folded_at = f"{outputs[id(folded)]}[{index}]"
        elif id(folded) in inner_of and folded.aval.shape == shape:
            folded_at = f"{inner_of[id(folded)]}[{index}]"
        else:
            scratch = f"_row_{acc_name}"
            allocate_scratch = (f"{scratch} = alloc.empty({out.shape(reduced_shape)}, "
                                f"np.{dtype_name(folded.aval.dtype)})")
            if not threads:
                _allocate_scratch(out, allocate_scratch)
            folded_at = None
    for k in range(len(shape)):
        if in_register and k == n_kept and not split:
            out.line(f"{acc} = {init}")
        open_loop(out, loop_line(k), threads and k == 0)
        if split and folded_at is None and threads and k == 0:
            out.line(allocate_scratch)  # each thread its own scratch row
    live = {id(v) for v in kernel.outvars} | ({id(last.invars[0])} if reduction else set())
    # outputs that are rows of a stacked buffer, each computed once: a run of blocks that
    # compute them may store them from a loop (reroll.output_runs)
    once = [v for v in kernel.outvars if isinstance(v, Var)
            and sum(w is v for w in kernel.outvars) == 1]
    stores = {} if reduction or not shape else {
        id(v): (*out.stacked[outputs[id(v)]], index) for v in once
        if outputs[id(v)] in out.stacked}
    stored: set[int] = set()
    atom = _element_body(out, members, full_inputs, env, idx, name, reads, index, live,
                         stores, stored)
    if reduction and not split:
        for stmt in rule.combine(acc, atom(last.invars[0]), last.outvars[0].aval.dtype):
            out.line(stmt)
    for v, outer in zip(kernel.outvars, out_names):
        if isinstance(v, Var) and not (reduction and v is last.outvars[0]) and (
                id(v) not in stored):
            _store(out, outer, atom(v), index if shape else "")
    if split:
        if folded_at is None:
            out.line(f"{scratch}[{reduced_index}] = {atom(folded)}")
            folded_at = f"{scratch}[{reduced_index}]"
        out.indent -= len(shape) - n_kept
        out.line(f"{acc} = {init}")
        for k in range(n_kept, len(shape)):
            out.line(loop_line(k))
            out.indent += 1
        out.line(f"_v_{acc_name} = {folded_at}")
        for stmt in rule.combine(acc, f"_v_{acc_name}", last.outvars[0].aval.dtype):
            out.line(stmt)
    if in_register:
        out.indent -= len(shape) - n_kept
        out.line(f"{acc_name}[{', '.join(kept)}] = {acc}")
        out.indent -= n_kept
    else:
        out.indent -= len(shape)


def _emit_rows(out, kernel: Jaxpr, members, in_exprs, out_names, name, reads, env,
               full_inputs, idx, index, loop_line, threads, row_fold: str, acc: str,
               n_kept: int) -> None:
    """The loops of a reduction over trailing axes whose dtype has a row fold (`folds.py`).

    The loops run over every axis but the last. Inside them, if the kernel computes the
    reduced operand, one loop over the last axis computes the row's elements and stores them
    (into the kernel's output if it has one, else into a scratch row); LLVM vectorizes that
    loop. Then one call folds the stored row: `b[i0] = folds.max_f64(a[i0])`. When more than
    one row reduces into one result (a full reduction, or two reduced axes), the rows' folds
    are combined in order by the rule's `combine`.
    """
    last = kernel.eqns[-1]
    rule = numba_rules[last.primitive]
    dt = last.outvars[0].aval.dtype
    shape = last.invars[0].aval.shape
    rank = len(shape)
    outputs = dict(zip(map(id, kernel.outvars), out_names))
    acc_name = outputs.get(id(last.outvars[0])) or name(last.outvars[0])
    folded = last.invars[0]
    prefix = ", ".join(idx[:-1])
    stores = [(v, outer) for v, outer in zip(kernel.outvars, out_names)
              if isinstance(v, Var) and v is not last.outvars[0]]
    scratch = None
    if id(folded) in outputs and outputs[id(folded)] in out.stacked:
        buffer, r = out.stacked[outputs[id(folded)]]
        row = f"{buffer}[{r}, {prefix}]" if prefix else f"{buffer}[{r}]"
    else:
        array = outputs.get(id(folded)) or dict(zip(map(id, kernel.invars), in_exprs)).get(
            id(folded))
        if array is None:  # computed and not an output: stored into a scratch row
            array = scratch = f"_row_{acc_name}"
        row = f"{array}[{prefix}]" if prefix and not scratch else array
    allocate_scratch = (f"{scratch} = alloc.empty({out.shape(shape[-1:])}, "
                        f"np.{dtype_name(folded.aval.dtype)})")
    if scratch and not threads:  # one scratch row for every row
        _allocate_scratch(out, allocate_scratch)
    one_row = n_kept == rank - 1  # each result is the fold of exactly one row
    for k in range(rank - 1):
        if k == n_kept and not one_row:
            out.line(f"{acc} = {rule.init(dt)}")
        open_loop(out, loop_line(k), threads and k == 0)
        if scratch and threads and k == 0:  # each thread its own scratch row
            out.line(allocate_scratch)
    if members or stores:
        open_loop(out, loop_line(rank - 1), False)
        atom = _element_body(out, members, full_inputs, env, idx, name, reads, index,
                             {id(v) for v, _ in stores} | {id(folded)})
        for v, outer in stores:
            _store(out, outer, atom(v), index)
        if scratch:
            out.line(f"{scratch}[{idx[-1]}] = {atom(folded)}")
        out.indent -= 1
    out.imports.add("from minijit.codegen import folds")
    if one_row:
        out.line(f"{acc_name}[{prefix}] = {row_fold}({row})" if n_kept else
                 f"{acc_name} = {row_fold}({row})")
    else:
        out.line(f"_part_{acc_name} = {row_fold}({row})")
        for stmt in rule.combine(acc, f"_part_{acc_name}", dt):
            out.line(stmt)
    if n_kept and not one_row:
        out.indent -= rank - 1 - n_kept
        out.line(f"{acc_name}[{', '.join(idx[:n_kept])}] = {acc}")
        out.indent -= n_kept
    else:
        out.indent -= rank - 1


def emit_elements(out, eqns, env: dict[int, str], idx: list[str], name,
                  reads: dict[int, str] | None = None,
                  after: dict[int, list[str]] | None = None, live: set | None = None,
                  stores: dict | None = None, stored: set | None = None,
                  tabled: dict | None = None) -> None:
    """Per-element statements for elementwise equations (and nested elementwise kernels).

    `env` maps a variable to its per-element scalar expression, or, for an operand that
    `broadcast_in_dim` reads, to the array it indexes with the loop indices `idx`; `reads`
    maps a `broadcast_in_dim` equation to the subscript `loop_nest` gave its operand;
    `after` maps a variable to lines written right after the statement that computes it.
    Given `live`, the ids of the values read after `eqns`, long runs of repeated equations
    become loops (reroll.py). Given `stores` too ({id(value): (buffer, row, index)} of the
    values stored into rows of a stacked buffer), runs of blocks that each compute one
    such row and differ only in their literals become loops that store the rows
    themselves (`reroll.output_runs`); the ids of the values they stored are added to
    `stored`. `tabled` maps (id(eqn), operand) to the expression that replaces a literal.
    """
    reads = reads or {}
    after = after or {}
    tabled = tabled or {}

    def atom(a):
        return literal(a.val, a.aval.dtype) if isinstance(a, Lit) else env[id(a)]

    unique = {id(e) for e in eqns if e.primitive is fused_p or id(e) in reads
              or any(id(v) in after for v in e.outvars)}
    table_runs = {}
    if live is not None and stores and hasattr(out, "tables"):
        # an output run's equations are written by `scalar_expr`, whose literals a table can
        # take
        scalar_only = unique | {id(e) for e in eqns
                                if isinstance(numba_rules.get(e.primitive), Indexed)}
        table_runs = output_runs(eqns, {k: v[:2] for k, v in stores.items()}, live,
                                 scalar_only)
    runs = table_runs or (repeated_runs(eqns, live, unique) if live is not None else {})
    done = 0  # equations before this one are written (a rolled loop wrote several)
    for k, eqn in enumerate(eqns):
        if k < done:
            continue
        if k in table_runs:
            done = emit_output_loop(out, eqns, k, *table_runs[k], env, stores, stored,
                                     lambda block, tables: emit_elements(
                                         out, block, env, idx, name, reads, after,
                                         tabled=tables))
            continue
        if k in runs:
            done = emit_loop(out, eqns, k, *runs[k], env, lambda block: emit_elements(
                out, block, env, idx, name, reads, after))
            continue
        if eqn.primitive is fused_p:  # an elementwise kernel inside a loop body
            kernel = eqn.params["jaxpr"]
            for v, a in zip(kernel.invars, eqn.invars):
                env[id(v)] = atom(a)
            emit_elements(out, kernel.eqns, env, idx, name, reads, after)
            for v, k in zip(eqn.outvars, kernel.outvars):
                env[id(v)] = atom(k)
            continue
        v = eqn.outvars[0]
        # a compile error then names this equation (described only if one happens)
        out.current_eqn = functools.partial(out.describe, eqn)
        rule = numba_rules[eqn.primitive]
        if id(eqn) in reads:
            expr = f"{atom(eqn.invars[0])}[{reads[id(eqn)]}]"
        elif isinstance(rule, Indexed):
            expr = rule.rule(atom(eqn.invars[0]), eqn, idx)
        else:
            expr = scalar_expr(eqn, [tabled.get((id(eqn), j)) or atom(a)
                                     for j, a in enumerate(eqn.invars)])
        out.line(f"{name(v)} = {expr}")
        env[id(v)] = name(v)
        for text in after.get(id(v), ()):
            out.line(text)


def _allocate_scratch(out, line: str) -> None:
    """Write the allocation of a scratch array, which no value outlives: in a loop body, once
    before the loop (`Lowering.hoist`), not in every iteration."""
    if not (hasattr(out, "hoist") and out.hoist(line)):
        out.line(line)


def is_loop_kernel(p) -> bool:
    """Is `p` lowered to a loop nest (`emit_kernel`), which writes a new or reused array?"""
    return p is fused_p or is_kernel_member(p)


def _fused(lo, eqn, args, outs) -> None:
    emit_kernel(lo, eqn.params["jaxpr"], args, outs, lo.name)


numba_rules[fused_p] = Statements(_fused)  # one loop nest for the whole kernel
