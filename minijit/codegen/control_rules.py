"""Code generation for control flow: native `if`, `while`, `for`, and callbacks (chapter 09).

A sub-Jaxpr (a branch, a loop body) is written inline: its inputs are bound to the operands'
names, its statements follow, and its outputs are assigned to the equation's results. Loop
carries are assigned simultaneously (`a, b = new_a, new_b`) and typed exactly, so Numba sees
one type per variable. An escape-time `fori_loop` is interchanged (see `interchangeable`):
its elements are independent, so a large one threads its outer axis, as a kernel does.
"""

from __future__ import annotations

import numpy as np

from minijit import primitives as P
from minijit.codegen.array_rules import copy_into, empty_like_var
from minijit.codegen.in_place import spare_carries
from minijit.codegen.kernels import emit_elements, loop_nest, open_loop
from minijit.codegen.rules import Statements, numba_rules
from minijit.codegen.scalar_rules import cast, literal
from minijit.debug import debug_callback_p
from minijit.ir import Eqn, Jaxpr, Lit, Var
from minijit.lax.control_flow import cond_p, scan_p, while_p
from minijit.passes.counted_loops import fori_loop_p
from minijit.passes.fuse_elementwise import fused_p


def _cond(lo, eqn, args, outs):
    index, *ops = args
    branches = eqn.params["branches"]
    pred = lo.predicates.get(id(eqn.invars[0]))  # the boolean the index was converted from
    for k, branch in enumerate(branches):
        head = "if" if k == 0 else "elif"
        test = f"not {lo.atom(pred)}" if pred is not None else f"{index} == {k}"
        lo.line("else:" if k == len(branches) - 1 and k else f"{head} {test}:")
        lo.indent += 1
        lo.bind_inputs(branch, ops)
        lo.jaxpr_body(branch)
        lo.assign_outputs(branch, outs)
        lo.indent -= 1


def _init_carries(lo, outs, init, invars) -> None:
    """The loop's carries start as copies of their initial values: the body may write the
    next value into the current one's array (see `Lowering.plan_reuse`), and the initial
    value may be the caller's argument, which must never change."""
    for o, v, a in zip(outs, init, invars):
        if not a.aval.shape:
            lo.line(f"{o} = {cast(v, a.aval.dtype)}")
        else:
            lo.line(f"{o} = alloc.copy({v})")


def _spares(lo, body, carries, outs) -> list[tuple[str, str]]:
    """A spare array for each carry whose next value cannot be written over it
    (`in_place.spare_carries`), allocated here, before the loop: the carry holds its initial
    array and the spare in turn. Returns what to assign at the end of each iteration (the
    flag saying whose turn it is)."""
    found = spare_carries(lo, body, carries)
    if not found:
        return []
    turn = f"_turn_{outs[0]}"
    lo.line(f"{turn} = False  # the carries below hold their two arrays in turn (in_place.py)")
    for k, owner in found.items():
        first, spare = f"_first_{outs[k]}", f"_spare_{outs[k]}"
        lo.line(f"{first}, {spare} = {outs[k]}, alloc.empty_like({outs[k]})")
        lo.reuse[lo.name(owner)] = f"({first} if {turn} else {spare})"
    return [(turn, f"not {turn}")]


def _while(lo, eqn, args, outs):
    p = eqn.params
    nc, nb = p["cond_nconsts"], p["body_nconsts"]
    cond_consts, body_consts, init = args[:nc], args[nc:nc + nb], args[nc + nb:]
    _init_carries(lo, outs, init, eqn.invars[nc + nb:])
    lo.plan_reuse(p["body_jaxpr"], (False,) * nb + (True,) * len(outs))
    swaps = _spares(lo, p["body_jaxpr"], p["body_jaxpr"].invars[nb:], outs)
    with lo.loop():  # the body's scratch arrays are allocated before it
        lo.line("while True:")
        lo.indent += 1
        lo.bind_inputs(p["cond_jaxpr"], [*cond_consts, *outs])
        lo.jaxpr_body(p["cond_jaxpr"])
        lo.line(f"if not {lo.atom(p['cond_jaxpr'].outvars[0])}:")
        lo.line("    break")
        lo.bind_inputs(p["body_jaxpr"], [*body_consts, *outs])
        lo.jaxpr_body(p["body_jaxpr"])
        lo.assign_outputs(p["body_jaxpr"], outs, carries=p["body_jaxpr"].invars[nb:], also=swaps)
        lo.indent -= 1


def _elementwise_body(body: Jaxpr) -> bool:
    """Is every equation of the loop body elementwise (or an elementwise kernel)?"""
    return all(
        (P.per_element(e.primitive)
         or (e.primitive is fused_p and e.params["kind"] == "elementwise"))
        and not e.primitive.effectful for e in body.eqns)


def _has_mask(body: Jaxpr) -> bool:
    eqns = [k for e in body.eqns for k in (e.params["jaxpr"].eqns if e.primitive is fused_p
                                             else (e,))]
    return any(e.primitive is P.select_n_p for e in eqns)


def interchangeable(eqn: Eqn) -> bool:
    """The rule for loop interchange (an escape-time loop, such as Mandelbrot's):
    a fori_loop whose body is elementwise, whose carries all have one shape S (rank >= 1),
    whose values all have one element at each position of S (`_aligned`: constants of shape
    S or broadcasting to it, as `where(v > 0, ...)` of a closed-over `f64[1]`), and whose
    body has a masked update (`where`/`select_n`), the sign that elements settle at
    different iterations. Such a loop runs one element at a time, in registers, and each
    element leaves the loop as soon as its state stops changing. Without a mask (Newton's
    method) every element needs every iteration, and the array loop stays innermost, where
    it vectorises."""
    body = eqn.params["body_jaxpr"]
    carries = eqn.outvars
    shapes = {v.aval.shape for v in carries}
    if len(shapes) != 1 or not next(iter(shapes)):
        return False
    (shape,) = shapes
    return _elementwise_body(body) and _has_mask(body) and _aligned(body, shape)


def _broadcasts(small, shape) -> bool:
    return len(small) <= len(shape) and all(
        a in (1, b) for a, b in zip(small[::-1], shape[::-1]))


def _aligned(body: Jaxpr, shape) -> bool:
    """Does every value of the elementwise `body` stand, at each position of a loop over
    `shape`, for the one element that NumPy's broadcasting reads there? Then the interchanged
    loop computes each value as a scalar, its element at the loop's position (a dimension of
    size 1 read at 0), and `broadcast_in_dim` changes nothing. That needs every shape to
    broadcast to `shape`, and every `broadcast_in_dim` to keep its operand's dimensions where
    NumPy aligns them, on the trailing ones (`v[:, None]` of a `f64[3]` in a `[3,3]` loop
    does not: it reads `v` along the other axis)."""
    def ok(invars, eqns) -> bool:
        if not all(_broadcasts(v.aval.shape, shape) for v in invars):
            return False
        for e in eqns:
            if e.primitive is fused_p and not ok(e.params["jaxpr"].invars,
                                                 e.params["jaxpr"].eqns):
                return False
            if e.primitive is P.broadcast_in_dim_p:
                src, out = e.invars[0].aval.shape, e.outvars[0].aval.shape
                dims = e.params["broadcast_dimensions"]
                if any(d != 1 and dims[k] != len(out) - len(src) + k for k, d in enumerate(src)):
                    return False
            if not all(_broadcasts(v.aval.shape, shape) for v in e.outvars):
                return False
        return True

    return ok(body.invars, body.eqns)


def _emit_aligned(lo, eqns, env: dict[int, str], idx: list[str], after) -> None:
    """`emit_elements` for an `_aligned` body, where each value is already its element at
    the loop's position: a `broadcast_in_dim` is that same scalar, not an array to index.
    Fused kernels are looked into, their variables named by the operands."""
    def atom(a):
        return literal(a.val, a.aval.dtype) if isinstance(a, Lit) else env[id(a)]

    for e in eqns:
        if e.primitive is fused_p:
            kernel = e.params["jaxpr"]
            for v, a in zip(kernel.invars, e.invars):
                env[id(v)] = atom(a)
            _emit_aligned(lo, kernel.eqns, env, idx, after)
            for v, k in zip(e.outvars, kernel.outvars):
                env[id(v)] = atom(k)
        elif e.primitive is P.broadcast_in_dim_p:
            env[id(e.outvars[0])] = atom(e.invars[0])
            for text in after.get(id(e.outvars[0]), ()):
                lo.line(text)
        else:
            emit_elements(lo, [e], env, idx, lo.name, after=after)


def _fori_interchanged(lo, eqn, args, outs):
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
    stored = [id(v) in lo.read for v in eqn.outvars]  # a carry nothing reads is not stored
    for o, v, keep in zip(outs, eqn.outvars, stored):
        if keep:
            lo.line(f"{o} = {empty_like_var(lo, v)}")
    # Elements are independent (each reads its own state and writes its own outputs), so a
    # large loop runs its outer axis on threads, as an elementwise kernel does
    threaded = lo.threads_for(int(np.prod(shape, dtype=np.int64)))
    for k, d in enumerate(shape):
        open_loop(lo, f"for {idx[k]} in range({lo.dim(d)}):", threaded and k == 0)
    env = {}
    _, subscripts = loop_nest(shape, [v.aval.shape for v in const_vars])
    for v, expr, sub in zip(const_vars, consts, subscripts):
        if v.aval.shape:  # its element here (`_aligned`): `b[0]` of a f64[1] in a [3] loop
            lo.line(f"{lo.name(v)} = {expr}[{sub}]")
            env[id(v)] = lo.name(v)
        else:
            env[id(v)] = expr
    for v, expr, a in zip(carry_vars, init, eqn.invars[2 + nc:]):
        fill = lo.fills.get(id(a)) if isinstance(a, Var) else None
        # a carry that starts as a scalar broadcast everywhere starts from the scalar
        lo.line(f"{lo.name(v)} = {lo.atom(fill)}" if fill is not None else
                f"{lo.name(v)} = {expr}[{index}]")
        env[id(v)] = lo.name(v)
    lo.line(f"for {lo.name(index_var)} in range({lower}, {upper}):")
    lo.indent += 1
    env[id(index_var)] = lo.name(index_var)
    if index_var.aval.dtype != np.int64:
        lo.line(f"{lo.name(index_var)} = {cast(lo.name(index_var), index_var.aval.dtype)}")
    escape = None if uses_index else _escape_test(body, carry_vars)
    after = {}
    if escape is not None:  # leave as soon as it is false, before computing the rest
        after[id(escape)] = [f"if not {lo.name(escape)}:  # the state stops changing",
                             "    break"]
    _emit_aligned(lo, body.eqns, env, idx, after)
    new = [literal(a.val, a.aval.dtype) if isinstance(a, Lit) else env[id(a)]
           for a in body.outvars]
    if not uses_index and escape is None:
        # A fixed point: the same state gives the same next state, so stop here.
        same = " and ".join(_identical(n, lo.name(c), c.aval.dtype)
                            for n, c in zip(new, carry_vars))
        lo.line(f"if {same}:")
        lo.line("    break")
    lo.line(f"{', '.join(lo.name(c) for c in carry_vars)} = {', '.join(new)}")
    lo.indent -= 1
    for o, c, keep in zip(outs, carry_vars, stored):
        if keep:
            lo.line(f"{o}[{index}] = {lo.name(c)}")
    lo.indent -= len(shape)


def _escape_test(body: Jaxpr, carries) -> Var | None:
    """The boolean w of an escape-time body, if it has one: where w is false, every carry's
    next value is exactly its current one, so the state is a fixed point and the element
    can leave the loop as soon as w is computed, before the rest of the body.

    Each carry must be passed on unchanged, or be `select_n(w, carry, new)` (`where(w, new,
    carry)`), or, for an integer carry, `carry + convert(w)` (adding False adds 0; for a
    float, -0.0 + 0.0 would be +0.0). Mandelbrot's body is all three: `w = |z|^2 <= 4`, two
    selects and the counter. The body must not read the loop index (checked by the caller),
    so w, computed from the same state, stays false in every later iteration.
    Fused kernels in the body are looked into, their variables named by the operands."""
    alias: dict[int, object] = {}  # a kernel's variable -> the body's atom it stands for
    defined: dict[int, Eqn] = {}  # a variable -> the (kernel member) equation computing it

    def atom(a):
        return alias.get(id(a), a) if isinstance(a, Var) else a

    def walk(eqns):
        for e in eqns:
            if e.primitive is fused_p:
                kernel = e.params["jaxpr"]
                for v, a in zip(kernel.invars, e.invars):
                    alias[id(v)] = atom(a)
                walk(kernel.eqns)
                for o, v in zip(e.outvars, kernel.outvars):
                    alias[id(o)] = atom(v)
            else:
                for o in e.outvars:
                    defined[id(o)] = e

    walk(body.eqns)
    escape = None
    for carry, out in zip(carries, body.outvars):
        value = atom(out)
        if value is carry:
            continue
        e = defined.get(id(value)) if isinstance(value, Var) else None
        if e is None:
            return None
        if e.primitive is P.select_n_p and len(e.invars) == 3 and atom(e.invars[1]) is carry:
            w = atom(e.invars[0])
        elif e.primitive is P.add_p and carry.aval.dtype.kind in "iu":
            x, y = (atom(a) for a in e.invars)
            other = y if x is carry else x if y is carry else None
            c = defined.get(id(other)) if isinstance(other, Var) else None
            if c is None or c.primitive is not P.convert_element_type_p:
                return None
            w = atom(c.invars[0])
        else:
            return None
        if (not isinstance(w, Var) or w.aval.dtype != np.bool_ or id(w) not in defined
                or escape not in (None, w)):
            return None
        escape = w
    return escape


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
    _init_carries(lo, outs, init, eqn.invars[2 + p["body_nconsts"]:])
    body = p["body_jaxpr"]
    lo.plan_reuse(body, (False,) * (len(consts) + 1) + (True,) * len(outs))
    swaps = _spares(lo, body, body.invars[len(consts) + 1:], outs)
    index_var = body.invars[len(consts)]
    with lo.loop():  # the body's scratch arrays are allocated before it
        lo.line(f"for {lo.name(index_var)} in range({lower}, {upper}):")
        lo.indent += 1
        lo.bind_inputs(Jaxpr((), body.invars[:len(consts)], (), ()), consts)
        if index_var.aval.dtype != np.int64:
            lo.line(f"{lo.name(index_var)} = {cast(lo.name(index_var), index_var.aval.dtype)}")
        lo.bind_inputs(Jaxpr((), body.invars[len(consts) + 1:], (), ()), outs)
        lo.jaxpr_body(body)
        lo.assign_outputs(body, outs, carries=body.invars[len(consts) + 1:], also=swaps)
        lo.indent -= 1


def _scan(lo, eqn, args, outs):
    p = eqn.params
    nc, nk, n = p["num_consts"], p["num_carry"], p["length"]
    body = p["jaxpr"]
    consts, init, xs = args[:nc], args[nc:nc + nk], args[nc + nk:]
    _init_carries(lo, outs[:nk], init, eqn.invars[nc:nc + nk])
    carries = body.invars[nc:nc + nk]
    lo.plan_reuse(body, (False,) * nc + (True,) * nk)
    swaps = _spares(lo, body, carries, outs[:nk])
    ys = outs[nk:]
    for y, v in zip(ys, eqn.outvars[nk:]):
        lo.line(f"{y} = {empty_like_var(lo, v)}")
    # A scan nested in another's body needs its own step variable, or the inner loop would
    # overwrite the outer one's (indentation is the nesting depth: one name per depth).
    t = "_t" if lo.indent == 1 else f"_t{lo.indent}"
    with lo.loop():  # the body's scratch arrays are allocated before it
        lo.line(f"for {t} in range({lo.dim(n)} - 1, -1, -1):" if p["reverse"]
                else f"for {t} in range({lo.dim(n)}):")
        lo.indent += 1
        x_exprs = [f"{x}[{t}]" for x in xs]
        lo.bind_inputs(body, [*consts, *outs[:nk], *x_exprs])
        lo.jaxpr_body(body)
        lo.assign_outputs(body, outs[:nk], carries=carries, also=swaps)
        for y, a in zip(ys, body.outvars[nk:]):  # element by element: see copy_into
            copy_into(lo, y, lo.atom(a), a.aval.shape, row=t)
        lo.indent -= 1


def _debug_callback(lo, eqn, args, outs):
    name = f"_callback{len(lo.callbacks)}"
    lo.callbacks[name] = eqn.params["callback"]
    lo.line("with numba.objmode():")
    lo.line(f"    {name}({', '.join(args)})")


for _p, _rule in {cond_p: _cond, while_p: _while, fori_loop_p: _fori_loop, scan_p: _scan,
                  debug_callback_p: _debug_callback}.items():
    numba_rules[_p] = Statements(_rule)
