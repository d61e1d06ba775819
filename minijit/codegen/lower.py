"""Lowering an optimized Jaxpr to the Python source of one Numba function (chapter 08).

The whole program becomes a single function `entry(consts..., args...)`, so Numba compiles
one entry point per traced function. Every block of the source starts with a comment holding
the IR equation it came from, and variables keep the names the printer gives them, so the
source reads side by side with `make_jaxpr`'s output.

Values inside the function: rank-0 values are Numba scalars; arrays are C-contiguous NumPy
arrays that are never modified after they are written (rules that update copy first).
Control flow becomes native `if` / `while` / `for`; `debug_callback` calls back into Python
through `numba.objmode`.
"""

from __future__ import annotations

import keyword
from dataclasses import dataclass, field

import numpy as np

from minijit import primitives as P
from minijit.codegen.kernels import _REDUCE_INIT, emit_kernel
from minijit.codegen.scalar_rules import cast, dtype_name, literal, scalar_expr
from minijit.control_flow import cond_p, fori_loop_p, scan_p, while_p
from minijit.core import ELEMENTWISE
from minijit.debug import debug_callback_p
from minijit.ir import ClosedJaxpr, Eqn, Jaxpr, Lit, Var, _Names, pp_eqn
from minijit.passes.fuse_elementwise import fused_p
from minijit.passes.plan_buffers import plan_buffers

_RESERVED = {"np", "nb", "numba", "math", "entry", "range", "abs", "min", "max", "len"}


class CodegenError(RuntimeError):
    """A program or primitive the Numba backend cannot compile."""


@dataclass
class Source:
    """Generated source plus what the compiler needs alongside it."""

    text: str
    callbacks: dict[str, object] = field(default_factory=dict)  # global name -> callable
    line_eqns: dict[int, str] = field(default_factory=dict)  # source line -> IR equation
    out_avals: list = field(default_factory=list)  # outputs the caller allocates and passes


def _describe(eqn: Eqn, names) -> str:
    """The equation on one line; a fused kernel or control flow is summarised."""
    text = pp_eqn(eqn, names, 0)
    if "\n" not in text:
        return text
    outs = " ".join(f"{names(v)}:{v.aval.str_short()}" for v in eqn.outvars)
    ins = " ".join(names(a) if isinstance(a, Var) else str(a.val) for a in eqn.invars)
    extra = f"[kind={eqn.params['kind']}]" if "kind" in eqn.params else "[...]"
    return f"{outs} = {eqn.primitive.name}{extra} {ins}"


class Lowering:
    def __init__(self):
        self.lines: list[str] = []
        self.indent = 1
        self.names = _Names()
        self.safe: dict[int, str] = {}
        self.callbacks: dict[str, object] = {}
        # outer name of an output -> the entry parameter holding its preallocated buffer
        self.prealloc: dict[str, str] = {}
        # outer name of a kernel output -> the dead array it writes into (plan_buffers)
        self.reuse: dict[str, str] = {}
        self.line_eqns: dict[int, str] = {}
        self.current_eqn = ""

    # -- writing
    def line(self, text: str) -> None:
        self.lines.append("    " * self.indent + text)
        self.line_eqns[len(self.lines) + 1] = self.current_eqn  # +1: the `def` line

    def name(self, v: Var) -> str:
        if id(v) not in self.safe:
            n = self.names(v)
            self.safe[id(v)] = n + "_" if keyword.iskeyword(n) or n in _RESERVED else n
        return self.safe[id(v)]

    def atom(self, a) -> str:
        return literal(a.val, a.aval.dtype) if isinstance(a, Lit) else self.name(a)

    # -- programs
    def lower(self, closed: ClosedJaxpr, fun_name: str, donated: tuple = ()) -> Source:
        jaxpr = closed.jaxpr
        params = [self.name(v) for v in (*jaxpr.constvars, *jaxpr.invars)]
        out_params = []
        for k, v in enumerate(_preallocatable_outputs(jaxpr)):
            self.prealloc[self.name(v)] = f"out{k}"
            out_params.append(f"out{k}")
        params += out_params
        self._plan_reuse(jaxpr, donated)
        self.jaxpr_body(jaxpr)
        outs = [self.atom(a) for a in jaxpr.outvars]
        self.line(f"return ({', '.join(outs)}{',' if len(outs) == 1 else ''})")
        head = [f"# minijit: generated from `{fun_name}`; each block names its IR equation.",
                "import numba", "import numpy as np", "", "",
                "@numba.njit(error_model='numpy', cache=True)",
                f"def entry({', '.join(params)}):"]
        shift = len(head) - 1
        line_eqns = {k + shift: e for k, e in self.line_eqns.items()}
        return Source("\n".join(head + self.lines) + "\n", self.callbacks, line_eqns,
                      [v.aval for v in _preallocatable_outputs(jaxpr)])

    def _plan_reuse(self, jaxpr: Jaxpr, donated: tuple) -> None:
        """Follow `plan_buffers`: a kernel's output may take over the array of a value that
        died (or of a donated argument), instead of allocating.

        Only arrays that no view can still reach are handed over: every reader of the
        dead value must be a loop kernel (a reshape would share its memory), it must not be
        a program output, and the shapes and dtypes must match (the plan matches bytes)."""
        plan = plan_buffers(jaxpr, tuple(donated) + (False,) * (len(jaxpr.invars) - len(donated)))
        kernel_prims = {fused_p, P.broadcast_in_dim_p, *ELEMENTWISE, *_REDUCE_INIT}
        readers: dict[int, set] = {}
        for e in jaxpr.eqns:
            for a in e.invars:
                if isinstance(a, Var):
                    readers.setdefault(id(a), set()).add(e.primitive)
        outputs = {id(a) for a in jaxpr.outvars}
        owner: dict[int, Var] = {}  # buffer -> the last value that held it
        for b, k in plan.reused_from_input.items():  # donated arguments' arrays
            owner[b] = jaxpr.invars[k]
        for v in (o for e in jaxpr.eqns for o in e.outvars):
            b = plan.buffer_of.get(id(v))
            if b is None:
                continue
            prev = owner.get(b)
            if (prev is not None and prev.aval.shape == v.aval.shape
                    and prev.aval.dtype == v.aval.dtype and id(prev) not in outputs
                    and readers.get(id(prev), set()) <= kernel_prims
                    and self.name(v) not in self.prealloc):
                self.reuse[self.name(v)] = self.name(prev)
            owner[b] = v

    def jaxpr_body(self, jaxpr: Jaxpr) -> None:
        for eqn in jaxpr.eqns:
            self.current_eqn = _describe(eqn, self.names)
            self.line(f"# {self.current_eqn}")
            self.eqn(eqn)

    def bind_inputs(self, jaxpr: Jaxpr, exprs: list[str]) -> None:
        for v, e in zip(jaxpr.invars, exprs):
            self.line(f"{self.name(v)} = {e}")

    def assign_outputs(self, jaxpr: Jaxpr, targets: list[str]) -> None:
        """`t1, t2 = o1, o2` (simultaneous, so a carry can feed another), typed exactly."""
        if not targets:
            return
        values = [cast(self.atom(a), a.aval.dtype) if not a.aval.shape else self.atom(a)
                  for a in jaxpr.outvars]
        self.line(f"{', '.join(targets)} = {', '.join(values)}")

    # -- equations
    def eqn(self, eqn: Eqn) -> None:
        p = eqn.primitive
        outs = [self.name(v) for v in eqn.outvars]
        args = [self.atom(a) for a in eqn.invars]
        if (p in ELEMENTWISE or p is P.broadcast_in_dim_p) and not eqn.outvars[0].aval.shape:
            self.line(f"{outs[0]} = {scalar_expr(eqn, args)}")
        elif p in ELEMENTWISE or p is P.broadcast_in_dim_p or p in _REDUCE_INIT:
            kernel, inputs = _one_equation_kernel(eqn)
            emit_kernel(self, kernel, [self.atom(a) for a in inputs], outs, self.name)
        elif p is fused_p:
            emit_kernel(self, eqn.params["jaxpr"], args, outs, self.name)
        elif p in ARRAY_RULES:
            ARRAY_RULES[p](self, eqn, args, outs)
        else:
            raise CodegenError(
                f"the Numba backend has no rule for primitive `{p.name}` "
                f"(in `{self.current_eqn}`); run this function with "
                "jit(f, backend='interpreter') instead"
            )


def _preallocatable_outputs(jaxpr: Jaxpr) -> list[Var]:
    """Outputs that a loop kernel writes and that the caller should allocate with NumPy.

    NumPy's allocator asks the kernel for huge pages on large arrays; memory Numba allocates
    inside the compiled function faults in 4 KiB at a time (about 30 ms per 80 MB)."""
    producers = {id(v): e for e in jaxpr.eqns for v in e.outvars}
    seen, out = set(), []
    for a in jaxpr.outvars:
        e = producers.get(id(a)) if isinstance(a, Var) else None
        if e is None or id(a) in seen or not a.aval.shape or not a.aval.size:
            continue
        seen.add(id(a))
        if e.primitive in ELEMENTWISE or e.primitive is P.broadcast_in_dim_p or (
                e.primitive is fused_p) or e.primitive in _REDUCE_INIT:
            out.append(a)
    return out


def _one_equation_kernel(eqn: Eqn) -> tuple[Jaxpr, list[Var]]:
    """A kernel holding just `eqn`, with fresh variables (its own scope, as in `fused`)."""
    inputs = list(dict.fromkeys(a for a in eqn.invars if isinstance(a, Var)))
    fresh = {id(a): Var(a.aval) for a in inputs}
    outvars = tuple(Var(v.aval) for v in eqn.outvars)
    inner = Eqn(eqn.primitive, tuple(fresh.get(id(a), a) for a in eqn.invars), outvars,
                eqn.params, eqn.source)
    return Jaxpr((), tuple(fresh[id(a)] for a in inputs), (inner,), outvars), inputs


# --------------------------------------------------------------------------- array rules


def _shape(v) -> tuple:
    return tuple(v.aval.shape)


def _empty(v) -> str:
    return f"np.empty({_shape(v)}, np.{dtype_name(v.aval.dtype)})"


def _as_array(lo: Lowering, a, expr: str) -> str:
    """An array expression for an operand (a rank-0 operand becomes a 0-d array)."""
    if a.aval.shape:
        return expr
    return f"np.full((), {expr}, np.{dtype_name(a.aval.dtype)})"


def _reshape(lo, eqn, args, outs):
    (x,), (o,) = eqn.invars, eqn.outvars
    if not _shape(o):
        lo.line(f"{outs[0]} = {args[0]}.ravel()[0]" if _shape(x) else f"{outs[0]} = {args[0]}")
    elif not _shape(x):
        lo.line(f"{outs[0]} = np.full({_shape(o)}, {args[0]}, "
                f"np.{dtype_name(o.aval.dtype)})")
    else:
        lo.line(f"{outs[0]} = {args[0]}.reshape({_shape(o)})")


def _transpose(lo, eqn, args, outs):
    perm = tuple(eqn.params["permutation"])
    lo.line(f"{outs[0]} = np.ascontiguousarray({args[0]}.transpose({perm}))")


def _slices(starts, limits, strides=None) -> str:
    strides = strides or (1,) * len(starts)
    parts = [f"{s}:{e}" + (f":{st}" if st != 1 else "") for s, e, st in
             zip(starts, limits, strides)]
    return ", ".join(parts)


def _slice(lo, eqn, args, outs):
    p = eqn.params
    sub = _slices(p["start_indices"], p["limit_indices"], p["strides"])
    lo.line(f"{outs[0]} = {args[0]}[{sub}].copy()")


def _rev(lo, eqn, args, outs):
    dims = set(eqn.params["dimensions"])
    sub = ", ".join("::-1" if k in dims else ":" for k in range(len(_shape(eqn.invars[0]))))
    lo.line(f"{outs[0]} = {args[0]}[{sub}].copy()")


def _squeeze(lo, eqn, args, outs):
    o = eqn.outvars[0]
    if not _shape(o):
        lo.line(f"{outs[0]} = {args[0]}.ravel()[0]")
    else:
        lo.line(f"{outs[0]} = {args[0]}.reshape({_shape(o)})")


def _concatenate(lo, eqn, args, outs):
    o, dim = eqn.outvars[0], eqn.params["dimension"]
    lo.line(f"{outs[0]} = {_empty(o)}")
    offset = 0
    for a, expr in zip(eqn.invars, args):
        n = _shape(a)[dim]
        sub = ", ".join(f"{offset}:{offset + n}" if k == dim else ":" for k in
                        range(len(_shape(o))))
        lo.line(f"{outs[0]}[{sub}] = {expr}")
        offset += n


def _pad(lo, eqn, args, outs):
    x, o = eqn.invars[0], eqn.outvars[0]
    lo.line(f"{outs[0]} = np.full({_shape(o)}, {args[1]}, np.{dtype_name(o.aval.dtype)})")
    if 0 in _shape(x):
        return
    sub = ", ".join(
        f"{lo_}:{lo_ + d + max(d - 1, 0) * i}:{i + 1}"
        for d, (lo_, _, i) in zip(_shape(x), eqn.params["padding_config"]))
    lo.line(f"{outs[0]}[{sub}] = {args[0]}")


def _clamped(lo, x_shape, sizes, starts) -> list[str]:
    names = []
    for k, (s, d, n) in enumerate(zip(starts, x_shape, sizes)):
        lo.line(f"_s{k} = min(max({s}, 0), {d - n})")
        names.append(f"_s{k}")
    return names


def _dynamic_slice(lo, eqn, args, outs):
    x, sizes = eqn.invars[0], eqn.params["slice_sizes"]
    s = _clamped(lo, _shape(x), sizes, args[1:])
    sub = ", ".join(f"{a}:{a} + {n}" for a, n in zip(s, sizes))
    lo.line(f"{outs[0]} = {args[0]}[{sub}].copy()")


def _dynamic_update_slice(lo, eqn, args, outs):
    x, u = eqn.invars[0], eqn.invars[1]
    s = _clamped(lo, _shape(x), _shape(u), args[2:])
    lo.line(f"{outs[0]} = {args[0]}.copy()")
    sub = ", ".join(f"{a}:{a} + {n}" for a, n in zip(s, _shape(u)))
    lo.line(f"{outs[0]}[{sub}] = {_as_array(lo, u, args[1])}")


def _iota(lo, eqn, args, outs):
    o, dim = eqn.outvars[0], eqn.params["dimension"]
    shape = _shape(o)
    lo.line(f"{outs[0]} = {_empty(o)}")
    idx = [f"i{k}" for k in range(len(shape))]
    for k, d in enumerate(shape):
        lo.line(f"for {idx[k]} in range({d}):")
        lo.indent += 1
    lo.line(f"{outs[0]}[{', '.join(idx)}] = {cast(idx[dim], o.aval.dtype)}")
    lo.indent -= len(shape)


def _argminmax(lo, eqn, args, outs):
    x, o = eqn.invars[0], eqn.outvars[0]
    (axis,) = eqn.params["axes"]
    shape = _shape(x)
    perm = tuple(k for k in range(len(shape)) if k != axis) + (axis,)
    rows = int(np.prod([shape[k] for k in perm[:-1]], dtype=np.int64))
    op = ">" if eqn.primitive is P.argmax_p else "<"
    t, r, best, at = (f"_{n}_{outs[0]}" for n in ("rows", "r", "best", "at"))
    lo.line(f"{t} = np.ascontiguousarray({args[0]}.transpose({perm})).reshape(({rows}, "
            f"{shape[axis]}))")
    lo.line(f"{r} = np.empty({rows}, np.{dtype_name(o.aval.dtype)})")
    lo.line(f"for _i in range({rows}):")
    lo.line(f"    {best} = {t}[_i, 0]")
    lo.line(f"    {at} = 0")
    lo.line(f"    for _k in range(1, {shape[axis]}):")
    lo.line(f"        if ({t}[_i, _k] {op} {best} or {t}[_i, _k] != {t}[_i, _k]) "
            f"and {best} == {best}:")
    lo.line(f"            {best} = {t}[_i, _k]")
    lo.line(f"            {at} = _k")
    lo.line(f"    {r}[_i] = {at}")
    lo.line(f"{outs[0]} = {r}.reshape({_shape(o)})" if _shape(o) else f"{outs[0]} = {r}[0]")


def _dot_general(lo, eqn, args, outs):
    lhs, rhs = eqn.invars
    o = eqn.outvars[0]
    (lc, rc), _ = eqn.params["dimension_numbers"]
    a, b = args
    if len(_shape(lhs)) == 2 and lc == (0,):
        a = f"np.ascontiguousarray({a}.T)"
    if len(_shape(rhs)) == 2 and rc == (1,):
        b = f"np.ascontiguousarray({b}.T)"
    if o.aval.dtype.kind == "f":
        lo.line(f"{outs[0]} = np.dot({a}, {b})")
        return
    # Integers and bools: BLAS has no integer routines, so loop.
    ta, tb, r, acc = (f"_{n}_{outs[0]}" for n in ("a", "b", "r", "acc"))
    ra, rb = len(_shape(lhs)), len(_shape(rhs))
    m = f"{a}.shape[0]" if ra == 2 else "1"
    n = f"{b}.shape[1]" if rb == 2 else "1"
    lo.line(f"{ta} = np.ascontiguousarray({a}).reshape(({m}, {a}.shape[-1]))")
    lo.line(f"{tb} = np.ascontiguousarray({b}).reshape(({b}.shape[0], {n}))")
    lo.line(f"{r} = np.zeros(({m}, {n}), np.{dtype_name(o.aval.dtype)})")
    lo.line(f"for _i in range({ta}.shape[0]):")
    lo.line(f"    for _j in range({tb}.shape[1]):")
    lo.line(f"        {acc} = {literal(0, o.aval.dtype)}")
    lo.line(f"        for _k in range({ta}.shape[1]):")
    combine = (f"{acc} = {acc} or ({ta}[_i, _k] and {tb}[_k, _j])" if o.aval.dtype == np.bool_
               else f"{acc} = {cast(f'{acc} + {ta}[_i, _k] * {tb}[_k, _j]', o.aval.dtype)}")
    lo.line(f"            {combine}")
    lo.line(f"        {r}[_i, _j] = {acc}")
    lo.line(f"{outs[0]} = {r}.reshape({_shape(o)})" if _shape(o) else f"{outs[0]} = {r}[0, 0]")


def _cond(lo, eqn, args, outs):
    index, *ops = args
    branches = eqn.params["branches"]
    for k, branch in enumerate(branches):
        head = "if" if k == 0 else "elif"
        lo.line("else:" if k == len(branches) - 1 and k else f"{head} {index} == {k}:")
        lo.indent += 1
        lo.bind_inputs(branch, ops)
        lo.jaxpr_body(branch)
        lo.assign_outputs(branch, outs)
        lo.indent -= 1


def _while(lo, eqn, args, outs):
    p = eqn.params
    nc, nb = p["cond_nconsts"], p["body_nconsts"]
    cond_consts, body_consts, init = args[:nc], args[nc:nc + nb], args[nc + nb:]
    for o, v, a in zip(outs, init, eqn.invars[nc + nb:]):
        lo.line(f"{o} = {cast(v, a.aval.dtype) if not a.aval.shape else v}")
    lo.line("while True:")
    lo.indent += 1
    lo.bind_inputs(p["cond_jaxpr"], [*cond_consts, *outs])
    lo.jaxpr_body(p["cond_jaxpr"])
    lo.line(f"if not {lo.atom(p['cond_jaxpr'].outvars[0])}:")
    lo.line("    break")
    lo.bind_inputs(p["body_jaxpr"], [*body_consts, *outs])
    lo.jaxpr_body(p["body_jaxpr"])
    lo.assign_outputs(p["body_jaxpr"], outs)
    lo.indent -= 1


def _elementwise_body(body: Jaxpr) -> bool:
    """Is every equation of the loop body elementwise (or an elementwise kernel)?"""
    return all(
        (e.primitive in ELEMENTWISE or e.primitive is P.broadcast_in_dim_p
         or (e.primitive is fused_p and e.params["kind"] == "elementwise"))
        and not e.primitive.effectful for e in body.eqns)


def _has_mask(body: Jaxpr) -> bool:
    eqns = [k for e in body.eqns for k in (e.params["jaxpr"].eqns if e.primitive is fused_p
                                             else (e,))]
    return any(e.primitive is P.select_n_p for e in eqns)


def interchangeable(eqn: Eqn) -> bool:
    """The rule for loop interchange (an escape-time loop, such as Mandelbrot's):
    a fori_loop whose body is elementwise, whose carries all have one shape S (rank >= 1),
    whose array constants have shape S or broadcast to it, and whose body has a masked
    update (`where`/`select_n`), the sign that elements settle at different iterations.
    Such a loop runs one element at a time, in registers, and each element leaves the loop as
    soon as its state stops changing. Without a mask (Newton's method) every element needs
    every iteration, and the array loop stays innermost, where it vectorises."""
    body = eqn.params["body_jaxpr"]
    carries = eqn.outvars
    shapes = {v.aval.shape for v in carries}
    if len(shapes) != 1 or not next(iter(shapes)):
        return False
    (shape,) = shapes
    consts = body.invars[:eqn.params["body_nconsts"]]
    return (_elementwise_body(body) and _has_mask(body)
            and all(c.aval.shape in ((), shape) or _broadcasts(c.aval.shape, shape)
                    for c in consts))


def _broadcasts(small, shape) -> bool:
    return len(small) <= len(shape) and all(
        a in (1, b) for a, b in zip(small[::-1], shape[::-1]))


def _fori_interchanged(lo, eqn, args, outs):
    from minijit.codegen.kernels import emit_elements

    p = eqn.params
    lower, upper, *rest = args
    nc = p["body_nconsts"]
    consts, init = rest[:nc], rest[nc:]
    body = p["body_jaxpr"]
    shape = eqn.outvars[0].aval.shape
    idx = [f"i{k}" for k in range(len(shape))]
    index = ", ".join(idx)
    const_vars, index_var, carry_vars = body.invars[:nc], body.invars[nc], body.invars[nc + 1:]
    uses_index = any(a is index_var for e in body.eqns for a in e.invars) or any(
        a is index_var for a in body.outvars)
    lo.line("# interchanged: each element runs the whole loop in registers")
    for o, v in zip(outs, eqn.outvars):
        lo.line(f"{o} = {_empty(v)}")
    for k, d in enumerate(shape):
        lo.line(f"for {idx[k]} in range({d}):")
        lo.indent += 1
    env = {}
    for v, expr in zip(const_vars, consts):
        if v.aval.shape == shape:
            lo.line(f"{lo.name(v)} = {expr}[{index}]")
            env[id(v)] = lo.name(v)
        else:
            env[id(v)] = expr  # a scalar, or an array read through broadcast_in_dim
    for v, expr in zip(carry_vars, init):
        lo.line(f"{lo.name(v)} = {expr}[{index}]")
        env[id(v)] = lo.name(v)
    lo.line(f"for {lo.name(index_var)} in range({lower}, {upper}):")
    lo.indent += 1
    env[id(index_var)] = lo.name(index_var)
    if index_var.aval.dtype != np.int64:
        lo.line(f"{lo.name(index_var)} = {cast(lo.name(index_var), index_var.aval.dtype)}")
    emit_elements(lo, body.eqns, env, idx, lo.name)
    new = [literal(a.val, a.aval.dtype) if isinstance(a, Lit) else env[id(a)]
           for a in body.outvars]
    if not uses_index:
        # A fixed point: the same state gives the same next state, so stop here.
        same = " and ".join(_identical(n, lo.name(c), c.aval.dtype)
                            for n, c in zip(new, carry_vars))
        lo.line(f"if {same}:")
        lo.line("    break")
    lo.line(f"{', '.join(lo.name(c) for c in carry_vars)} = {', '.join(new)}")
    lo.indent -= 1
    for o, c in zip(outs, carry_vars):
        lo.line(f"{o}[{index}] = {lo.name(c)}")
    lo.indent -= len(shape)


def _identical(a: str, b: str, dtype) -> str:
    """`a` and `b` are the same value (for floats, -0.0 and 0.0 differ)."""
    if np.dtype(dtype).kind == "f":
        return f"({a} == {b} and np.signbit({a}) == np.signbit({b}))"
    return f"{a} == {b}"


def _fori_loop(lo, eqn, args, outs):
    if interchangeable(eqn):
        return _fori_interchanged(lo, eqn, args, outs)
    p = eqn.params
    lower, upper, *rest = args
    consts, init = rest[:p["body_nconsts"]], rest[p["body_nconsts"]:]
    for o, v, a in zip(outs, init, eqn.invars[2 + p["body_nconsts"]:]):
        lo.line(f"{o} = {cast(v, a.aval.dtype) if not a.aval.shape else v}")
    body = p["body_jaxpr"]
    index_var = body.invars[len(consts)]
    lo.line(f"for {lo.name(index_var)} in range({lower}, {upper}):")
    lo.indent += 1
    lo.bind_inputs(Jaxpr((), body.invars[:len(consts)], (), ()), consts)
    if index_var.aval.dtype != np.int64:
        lo.line(f"{lo.name(index_var)} = {cast(lo.name(index_var), index_var.aval.dtype)}")
    lo.bind_inputs(Jaxpr((), body.invars[len(consts) + 1:], (), ()), outs)
    lo.jaxpr_body(body)
    lo.assign_outputs(body, outs)
    lo.indent -= 1


def _scan(lo, eqn, args, outs):
    p = eqn.params
    nc, nk, n = p["num_consts"], p["num_carry"], p["length"]
    body = p["jaxpr"]
    consts, init, xs = args[:nc], args[nc:nc + nk], args[nc + nk:]
    for o, v, a in zip(outs[:nk], init, eqn.invars[nc:nc + nk]):
        lo.line(f"{o} = {cast(v, a.aval.dtype) if not a.aval.shape else v}")
    ys = outs[nk:]
    for y, v in zip(ys, eqn.outvars[nk:]):
        lo.line(f"{y} = {_empty(v)}")
    lo.line(f"for _t in range({n}):")
    lo.indent += 1
    x_exprs = [f"{x}[_t]" if len(_shape(a)) > 1 else f"{x}[_t]" for x, a in
               zip(xs, eqn.invars[nc + nk:])]
    lo.bind_inputs(body, [*consts, *outs[:nk], *x_exprs])
    lo.jaxpr_body(body)
    carry_out = Jaxpr((), (), (), body.outvars[:nk])
    lo.assign_outputs(carry_out, outs[:nk])
    for y, a in zip(ys, body.outvars[nk:]):
        lo.line(f"{y}[_t] = {lo.atom(a)}")
    lo.indent -= 1


def _debug_callback(lo, eqn, args, outs):
    name = f"_callback{len(lo.callbacks)}"
    lo.callbacks[name] = eqn.params["callback"]
    lo.line("with numba.objmode():")
    lo.line(f"    {name}({', '.join(args)})")


ARRAY_RULES = {
    P.reshape_p: _reshape, P.transpose_p: _transpose, P.slice_p: _slice, P.rev_p: _rev,
    P.squeeze_p: _squeeze, P.concatenate_p: _concatenate, P.pad_p: _pad,
    P.dynamic_slice_p: _dynamic_slice, P.dynamic_update_slice_p: _dynamic_update_slice,
    P.iota_p: _iota, P.argmax_p: _argminmax, P.argmin_p: _argminmax,
    P.dot_general_p: _dot_general, cond_p: _cond, while_p: _while, fori_loop_p: _fori_loop,
    scan_p: _scan, debug_callback_p: _debug_callback,
}


def lower_jaxpr(closed: ClosedJaxpr, fun_name: str = "f", donated: tuple = ()) -> Source:
    """The Numba source for `closed` (see the module docstring)."""
    return Lowering().lower(closed, fun_name, donated)
