"""Loop nests: elementwise kernels and reductions with accumulators (chapter 08).

A kernel is a sub-Jaxpr of elementwise equations over one iteration shape (a `fused`
equation's body, or a single elementwise equation). It becomes one loop nest that computes
every equation for one element in registers and writes only the values used outside: no
temporaries. Broadcasting is index arithmetic: an operand of shape (4, 1) in a (4, 5) loop is
read at `[i0, 0]`. A reduction as the kernel's last equation accumulates in the same loop.
"""

from __future__ import annotations

import numpy as np

from minijit import primitives as P
from minijit.codegen.rules import Indexed, Reduction, Statements, numba_rules
from minijit.codegen.scalar_rules import cast, dtype_name, literal, scalar_expr, wrapping
from minijit.ir import Jaxpr, Lit, Var
from minijit.passes.fuse_elementwise import fused_p


def _fold(op: str):
    def combine(acc: str, v: str, dt) -> list[str]:
        return [f"{acc} = {cast(wrapping(op, acc, v, dt), dt)}"]

    return combine


def _pick(op: str):
    def combine(acc: str, v: str, dt) -> list[str]:  # NaN propagates: it is never replaced
        return [f"if {v} {op} {acc} or {v} != {v}:", f"    {acc} = {v}"]

    return combine


def _lowest(dt) -> str:
    return literal(-np.inf if dt.kind == "f" else False if dt.kind == "b" else np.iinfo(dt).min,
                   dt)


def _highest(dt) -> str:
    return literal(np.inf if dt.kind == "f" else True if dt.kind == "b" else np.iinfo(dt).max,
                   dt)


numba_rules[P.reduce_sum_p] = Reduction(lambda dt: literal(0, dt), _fold("+"))
numba_rules[P.reduce_prod_p] = Reduction(lambda dt: literal(1, dt), _fold("*"))
numba_rules[P.reduce_max_p] = Reduction(_lowest, _pick(">"))
numba_rules[P.reduce_min_p] = Reduction(_highest, _pick("<"))


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
    index = ", ".join(idx) if idx else ""
    outputs = dict(zip(map(id, kernel.outvars), out_names))

    # Allocate what the loop writes.
    for v, outer in zip(kernel.outvars, out_names):
        if isinstance(v, Var) and not (reduction and v is last.outvars[0]):
            given = out.prealloc.get(outer) or out.reuse.get(outer)
            out.line(f"{outer} = {given}  # reused, see plan_buffers" if outer in out.reuse
                     else f"{outer} = {given}" if given else
                     f"{outer} = np.empty({tuple(v.aval.shape)}, np.{dtype_name(v.aval.dtype)})")
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
        in_register = bool(kept) and axes == set(range(n_kept, len(shape)))
        if in_register:
            kept_shape = tuple(shape[:n_kept])
            given = out.prealloc.get(acc_name)
            out.line(f"{acc_name} = {given}" if given else
                     f"{acc_name} = np.empty({kept_shape}, np.{dtype_name(dt)})")
            acc = f"_acc_{acc_name}"
        elif kept:
            kept_shape = tuple(d for k, d in enumerate(shape) if k not in axes)
            given = out.prealloc.get(acc_name)
            if given:
                out.line(f"{acc_name} = {given}")
                out.line(f"{acc_name}[...] = {init}")
            else:
                out.line(f"{acc_name} = np.full({kept_shape}, {init}, np.{dtype_name(dt)})")
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

    for k, d in enumerate(shape):
        if in_register and k == n_kept:
            out.line(f"{acc} = {init}")
        out.line(f"for {idx[k]} in range({d}):")
        out.indent += 1
    for v, outer in full_inputs:
        env[id(v)] = name(v)
        out.line(f"{name(v)} = {outer}[{index}]")
    emit_elements(out, members, env, idx, name)

    def atom(a):
        return literal(a.val, a.aval.dtype) if isinstance(a, Lit) else env[id(a)]

    if reduction:
        for stmt in rule.combine(acc, atom(last.invars[0]), last.outvars[0].aval.dtype):
            out.line(stmt)
    for v, outer in zip(kernel.outvars, out_names):
        if isinstance(v, Var) and not (reduction and v is last.outvars[0]):
            out.line(f"{outer}[{index}] = {atom(v)}" if shape else f"{outer}[()] = {atom(v)}")
    if in_register:
        out.indent -= len(shape) - n_kept
        out.line(f"{acc_name}[{', '.join(kept)}] = {acc}")
        out.indent -= n_kept
    else:
        out.indent -= len(shape)


def emit_elements(out, eqns, env: dict[int, str], idx: list[str], name) -> None:
    """Per-element statements for elementwise equations (and nested elementwise kernels).

    `env` maps a variable to its per-element scalar expression, or, for an operand that
    `broadcast_in_dim` reads, to the array it indexes with the loop indices `idx`.
    """

    def atom(a):
        return literal(a.val, a.aval.dtype) if isinstance(a, Lit) else env[id(a)]

    for eqn in eqns:
        if eqn.primitive is fused_p:  # an elementwise kernel inside a loop body
            kernel = eqn.params["jaxpr"]
            for v, a in zip(kernel.invars, eqn.invars):
                env[id(v)] = atom(a)
            emit_elements(out, kernel.eqns, env, idx, name)
            for v, k in zip(eqn.outvars, kernel.outvars):
                env[id(v)] = atom(k)
            continue
        v = eqn.outvars[0]
        out.current_eqn = out.describe(eqn)  # a compile error then names this equation
        rule = numba_rules[eqn.primitive]
        if isinstance(rule, Indexed):
            expr = rule.rule(atom(eqn.invars[0]), eqn, idx)
        else:
            expr = scalar_expr(eqn, [atom(a) for a in eqn.invars])
        out.line(f"{name(v)} = {expr}")
        env[id(v)] = name(v)


def _fused(lo, eqn, args, outs) -> None:
    emit_kernel(lo, eqn.params["jaxpr"], args, outs, lo.name)


numba_rules[fused_p] = Statements(_fused)  # one loop nest for the whole kernel
