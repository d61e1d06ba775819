"""Code generation for structural primitives: reshapes, slices, padding, dot (chapter 09).

Sizes are written through `Lowering.dim` (read from the arguments' shapes, see
`Lowering.shape_generic`); a padded axis's size and a product of two sizes (a reshape, a
slice's bound) are written from those names too (`_derive`, `_size`), so that convolve's
windows, for one, give the same code for every signal length.

The `Statements` entries of the rule table (`codegen/rules.py`) for primitives that are not
elementwise. Each `rule(lo, eqn, args, outs)` writes statements through the `Lowering` `lo`:
`args` are the operands' expressions, `outs` the names its results get. Every rule leaves a
fresh, C-contiguous array (or a C-contiguous view that nothing modifies), so later rules can
rely on the layout.
"""

from __future__ import annotations

import numpy as np

from minijit import primitives as P
from minijit import threads
from minijit.codegen.in_place import leading_pad, update_start
from minijit.codegen.rules import Statements, numba_rules
from minijit.codegen.scalar_rules import cast, dtype_name, literal, wrapping


def shape_of(v) -> tuple:
    return tuple(v.aval.shape)


def _size(lo, n: int, derive: bool = False) -> str:
    """`lo.dim(n)`, or where that is a literal, a product of a size with a name and another
    written by `dim`: a reshape's flattened axis, or the bound of a slice that is re-read in
    rows (convolve's windows: `m * (P + 1)` elements, then m rows). With `derive`, later sizes
    `n` read it too (a loop over the flattened array). Sound as `dim` is: each name holds its
    size for the shapes this source is generated for, whichever product is found (one found
    by coincidence costs at most a compile where a literal would have been shared)."""
    written = lo.dim(n)
    if not written.isdigit():
        return written
    for a, name in list(lo.dims.items()):
        if a > 1 and n % a == 0 and not (b := lo.dim(n // a)).isdigit():
            if derive:
                _derive(lo, n, f"{name} * {b}")
            return f"{name} * {b}"
    return written


def _derive(lo, n: int, expr: str) -> None:
    """Later sizes `n` read `expr` (made of names `dim` wrote, so valid anywhere in the
    function): a padded axis is its operand's size plus the padding."""
    if n > 1 and n not in lo.dims and not expr.isdigit():
        lo.dims[n] = expr


def empty_like_var(lo, v) -> str:
    return f"alloc.empty({lo.shape(shape_of(v))}, np.{dtype_name(v.aval.dtype)})"


def _new_array(lo, v, name: str) -> str:
    """The array an equation's result `v` (named `name`) is written into: a dead one
    (`Lowering.plan_reuse`), a loop carry's spare, or a new one."""
    given = lo.reuse.get(name)
    return f"{given}  # reused, see plan_buffers" if given else empty_like_var(lo, v)


def _as_array(lo, a, expr: str) -> str:
    """An array expression for an operand (a rank-0 operand becomes a 0-d array)."""
    if a.aval.shape:
        return expr
    return f"alloc.full((), {expr}, np.{dtype_name(a.aval.dtype)})"


def copy_into(lo, window: str, src: str, shape, row: str = "") -> None:
    """`window[...] = src` for an array `src` of static `shape` (the window's shape too),
    written as a loop nest over a view of the window; with `row`, `window[row] = src` for a
    `window` array, indexed directly (no view: a loop body writes one row per step).

    Why not `window[...] = src`: Numba compiles an array assigned to a slice through its
    general slice assignment, which compiles the shape-mismatch message it could raise (a
    formatted string) for every such statement: 0.15 to 0.3 s each, and seconds for the first
    one in a process. The loop nest compiles in milliseconds (benchmarks/README.md)."""
    if not shape:  # a scalar: nothing to loop over
        lo.line(f"{window}[{row}] = {src}" if row else f"{window} = {src}")
        return
    sizes = [lo.dim(d) for d in shape]
    if "0" in sizes:  # nothing to copy
        return
    if row:
        view, lead = window, f"{row}, "
    elif window.endswith("[...]"):  # the whole array (Numba has no `a[...]` view)
        view, lead = window[:-len("[...]")], ""
    else:
        view, lead = f"_w{len(lo.lines)}", ""  # the line's number: unique in the function
        lo.line(f"{view} = {window}")
    if not src.isidentifier():  # a slice of an array: taken once, not in the loop
        lo.line(f"_s{len(lo.lines)} = {src}")
        src = f"_s{len(lo.lines) - 1}"
    idx = [f"_q{k}" if n != "1" else "0" for k, n in enumerate(sizes)]  # no loop of one
    loops = [(i, n) for i, n in zip(idx, sizes) if n != "1"]
    for i, n in loops:
        lo.line(f"for {i} in range({n}):")
        lo.indent += 1
    lo.line(f"{view}[{lead}{', '.join(idx)}] = {src}[{', '.join(idx)}]")
    lo.indent -= len(loops)


def _reshape(lo, eqn, args, outs):
    (x,), (o,) = eqn.invars, eqn.outvars
    if not shape_of(o):
        lo.line(f"{outs[0]} = {args[0]}.ravel()[0]" if shape_of(x) else f"{outs[0]} = {args[0]}")
    elif not shape_of(x):
        lo.line(f"{outs[0]} = alloc.full({lo.shape(shape_of(o))}, {args[0]}, "
                f"np.{dtype_name(o.aval.dtype)})")
    else:
        sizes = [_size(lo, d, derive=True) for d in shape_of(o)]
        shape = f"({sizes[0]},)" if len(sizes) == 1 else f"({', '.join(sizes)})"
        lo.line(f"{outs[0]} = {args[0]}.reshape({shape})")


def _transpose(lo, eqn, args, outs):
    x = eqn.invars[0]
    _transposed(lo, args[0], shape_of(x), tuple(eqn.params["permutation"]), x.aval.dtype,
                outs[0])


def _transposed(lo, src: str, shape, perm, dtype, name: str) -> None:
    """`name = ` a new C array: `src` with its axes permuted as NumPy's `transpose(perm)`,
    written by a loop nest. Numba took 3.5 to 4.5 s to compile `a.transpose(perm)` (with or
    without `np.ascontiguousarray`) in every new process, and 0.1 s for the loops."""
    if not shape:
        lo.line(f"{name} = {src}")
        return
    out_shape = tuple(shape[p] for p in perm)
    lo.line(f"{name} = alloc.empty({lo.shape(out_shape)}, np.{dtype_name(dtype)})")
    idx = [f"i{k}" for k in range(len(perm))]
    source_idx = [""] * len(perm)
    for k, p in enumerate(perm):  # axis k of the result is axis p of the operand
        source_idx[p] = idx[k]
        lo.line(f"for {idx[k]} in range({lo.dim(out_shape[k])}):")
        lo.indent += 1
    lo.line(f"{name}[{', '.join(idx)}] = {src}[{', '.join(source_idx)}]")
    lo.indent -= len(perm)


def _slices(lo, starts, limits, strides=None) -> str:
    """Python slices for `slice`'s parameters. A start or a limit may be a size (`x[1:]`
    ends at `_n0`); a step is the program's own constant, written as one: through `dim` a
    step of 2 became `(_n1 - 1)` wherever some size was 3, which read as a size and gave
    the same program at other sizes another source, and another compile."""
    strides = strides or (1,) * len(starts)
    parts = [f"{lo.dim(s)}:{_size(lo, e)}" + (f":{int(st)}" if st != 1 else "")
             for s, e, st in zip(starts, limits, strides)]
    return ", ".join(parts)


def _slice(lo, eqn, args, outs):
    p = eqn.params
    sub = _slices(lo, p["start_indices"], p["limit_indices"], p["strides"])
    shape = shape_of(eqn.invars[0])
    # A unit-step slice of the leading axis alone is a C-contiguous view: no copy.
    # `plan_buffers` counts every slice as a view of its operand (NumPy's slices are views
    # too), so nothing writes the operand while the view is alive.
    leading = all(st == 1 for st in (p["strides"] or (1,) * len(shape))) and all(
        (s, e) == (0, d) for s, e, d in
        zip(p["start_indices"][1:], p["limit_indices"][1:], shape[1:]))
    if leading:  # Numba types the view as layout 'A': `c_view` says what it is (layout.py)
        lo.imports.add("from minijit.codegen.layout import c_view")
        lo.line(f"{outs[0]} = c_view({args[0]}[{sub}])")
    else:
        lo.line(f"{outs[0]} = alloc.copy({args[0]}[{sub}])")


def _rev(lo, eqn, args, outs):
    dims = set(eqn.params["dimensions"])
    sub = ", ".join("::-1" if k in dims else ":" for k in range(len(shape_of(eqn.invars[0]))))
    lo.line(f"{outs[0]} = alloc.copy({args[0]}[{sub}])")


def _squeeze(lo, eqn, args, outs):
    o = eqn.outvars[0]
    if not shape_of(o):
        lo.line(f"{outs[0]} = {args[0]}.ravel()[0]")
    else:
        lo.line(f"{outs[0]} = {args[0]}.reshape({lo.shape(shape_of(o))})")


def _concatenate(lo, eqn, args, outs):
    o, dim = eqn.outvars[0], eqn.params["dimension"]
    if outs[0] not in lo.allocated:  # else a kernel operand allocated it, to write into it
        lo.line(f"{outs[0]} = {_new_array(lo, o, outs[0])}")
    offset = 0
    for a, expr in zip(eqn.invars, args):
        n = shape_of(a)[dim]
        if lo.into.get(expr, ("",))[0] == outs[0]:  # already in place
            offset += n
            continue
        sub = ", ".join(f"{lo.dim(offset)}:{lo.dim(offset + n)}" if k == dim else ":"
                        for k in range(len(shape_of(o))))
        copy_into(lo, f"{outs[0]}[{sub}]", expr, shape_of(a))
        offset += n


def _pad(lo, eqn, args, outs):
    x, o = eqn.invars[0], eqn.outvars[0]
    for d, n, (_, _, interior) in zip(shape_of(x), shape_of(o), eqn.params["padding_config"]):
        if not lo.dim(d).isdigit():  # n = d + (d - 1) * interior + low + high
            grown = lo.dim(d) if not interior else f"{lo.dim(d)} * {interior + 1}"
            extra = n - d * (interior + 1)
            _derive(lo, n, f"({grown} {'-' if extra < 0 else '+'} {abs(extra)})")
    pads = leading_pad(eqn.params["padding_config"])
    if pads is not None:  # rows of padding around the operand's rows: each written once
        low, high = pads
        n, total = shape_of(x)[0], shape_of(o)[0]
        if lo.into.get(args[0], ("",))[0] != outs[0]:  # else the kernel wrote them in place
            lo.line(f"{outs[0]} = {_new_array(lo, o, outs[0])}")
            if n:
                copy_into(lo, f"{outs[0]}[{lo.dim(low)}:{lo.dim(low + n)}]", args[0],
                          shape_of(x))
        for start, stop in ((0, low), (low + n, total)):
            if stop > start:
                lo.line(f"{outs[0]}[{lo.dim(start)}:{lo.dim(stop)}] = {args[1]}")
        return
    lo.line(f"{outs[0]} = alloc.full({lo.shape(shape_of(o))}, {args[1]}, "
            f"np.{dtype_name(o.aval.dtype)})")
    if 0 in shape_of(x):
        return
    sub = ", ".join(
        f"{lo.dim(lo_)}:{lo.dim(lo_ + d + max(d - 1, 0) * i)}:{i + 1}"
        for d, (lo_, _, i) in zip(shape_of(x), eqn.params["padding_config"]))
    copy_into(lo, f"{outs[0]}[{sub}]", args[0], shape_of(x))


def _clamped(lo, x_shape, sizes, starts, start_vars) -> list[str]:
    """The starts clamped so the window fits, as the primitive's impl rule (interpret.py)
    does. An unsigned start is compared as unsigned: mixed with a signed int, Numba would
    compare (and slice) in float64."""
    names = []
    for k, (s, v, d, n) in enumerate(zip(starts, start_vars, x_shape, sizes)):
        if v.aval.dtype.kind == "u":
            lo.line(f"_s{k} = np.int64(min({s}, np.uint64({lo.dim(d - n)})))")
        else:
            lo.line(f"_s{k} = min(max({s}, 0), {lo.dim(d - n)})")
        names.append(f"_s{k}")
    return names


def _dynamic_slice(lo, eqn, args, outs):
    x, sizes = eqn.invars[0], eqn.params["slice_sizes"]
    shape = shape_of(x)
    if tuple(sizes[1:]) == shape[1:]:  # rows: a C-contiguous view, as for a static slice
        (start,) = _clamped(lo, shape[:1], sizes[:1], args[1:2], eqn.invars[1:2])
        lo.imports.add("from minijit.codegen.layout import c_view")
        lo.line(f"{outs[0]} = c_view({args[0]}[{start}:{start} + {lo.dim(sizes[0])}])")
        return
    s = _clamped(lo, shape, sizes, args[1:], eqn.invars[1:])
    sub = ", ".join(f"{a}:{a} + {lo.dim(n)}" for a, n in zip(s, sizes))
    lo.line(f"{outs[0]} = alloc.copy({args[0]}[{sub}])")


def _dynamic_update_slice(lo, eqn, args, outs):
    x, u = eqn.invars[0], eqn.invars[1]
    if lo.into.get(args[1], ("",))[0] == outs[0]:  # the kernel wrote the update in place:
        start = update_start(eqn)                  # the operand's other rows are copied
        n, total = shape_of(u)[0], shape_of(x)[0]
        for a, b in ((0, start), (start + n, total)):
            if b > a:
                rows = f"{lo.dim(a)}:{lo.dim(b)}"
                copy_into(lo, f"{outs[0]}[{rows}]", f"{args[0]}[{rows}]",
                          (b - a, *shape_of(x)[1:]))
        return
    s = _clamped(lo, shape_of(x), shape_of(u), args[2:], eqn.invars[2:])
    given = lo.reuse.get(outs[0])  # the operand's own array (plan_buffers), or a dead one
    if given == args[0]:
        lo.line(f"{outs[0]} = {given}  # in place, see plan_buffers")
    elif given:
        lo.line(f"{outs[0]} = {given}  # reused, see plan_buffers")
        copy_into(lo, f"{outs[0]}[...]", args[0], shape_of(x))
    else:
        lo.line(f"{outs[0]} = alloc.copy({args[0]})")
    sub = ", ".join(f"{a}:{a} + {lo.dim(n)}" for a, n in zip(s, shape_of(u)))
    if shape_of(u):
        copy_into(lo, f"{outs[0]}[{sub}]", args[1], shape_of(u))
    else:
        lo.line(f"{outs[0]}[{sub}] = {_as_array(lo, u, args[1])}")


def _iota(lo, eqn, args, outs):
    o, dim = eqn.outvars[0], eqn.params["dimension"]
    shape = shape_of(o)
    lo.line(f"{outs[0]} = {empty_like_var(lo, o)}")
    idx = [f"i{k}" for k in range(len(shape))]
    for k, d in enumerate(shape):
        lo.line(f"for {idx[k]} in range({lo.dim(d)}):")
        lo.indent += 1
    lo.line(f"{outs[0]}[{', '.join(idx)}] = {cast(idx[dim], o.aval.dtype)}")
    lo.indent -= len(shape)


def _argminmax(lo, eqn, args, outs):
    x, o = eqn.invars[0], eqn.outvars[0]
    (axis,) = eqn.params["axes"]
    shape = shape_of(x)
    perm = tuple(k for k in range(len(shape)) if k != axis) + (axis,)
    rows = int(np.prod([shape[k] for k in perm[:-1]], dtype=np.int64))
    op = ">" if eqn.primitive is P.argmax_p else "<"
    t, r, best, at = (f"_{n}_{outs[0]}" for n in ("rows", "r", "best", "at"))
    _transposed(lo, args[0], shape, perm, x.aval.dtype, f"{t}_all")
    lo.line(f"{t} = {t}_all.reshape(({lo.dim(rows)}, {lo.dim(shape[axis])}))")
    lo.line(f"{r} = alloc.empty(({lo.dim(rows)},), np.{dtype_name(o.aval.dtype)})")
    lo.line(f"for _i in range({lo.dim(rows)}):")
    lo.line(f"    {best} = {t}[_i, 0]")
    lo.line(f"    {at} = 0")
    lo.line(f"    for _k in range(1, {lo.dim(shape[axis])}):")
    lo.line(f"        if ({t}[_i, _k] {op} {best} or {t}[_i, _k] != {t}[_i, _k]) "
            f"and {best} == {best}:")
    lo.line(f"            {best} = {t}[_i, _k]")
    lo.line(f"            {at} = _k")
    lo.line(f"    {r}[_i] = {at}")
    lo.line(f"{outs[0]} = {r}.reshape({lo.shape(shape_of(o))})" if shape_of(o)
            else f"{outs[0]} = {r}[0]")


def _dot_general(lo, eqn, args, outs):
    lhs, rhs = eqn.invars
    o = eqn.outvars[0]
    (lc, rc), _ = eqn.params["dimension_numbers"]
    a, b = args
    ra, rb = len(shape_of(lhs)), len(shape_of(rhs))
    ta, tb = int(ra == 2 and lc == (0,)), int(rb == 2 and rc == (1,))
    # the dtype the products are computed in (`P.multiplies_in_preferred`)
    pd = o.aval.dtype if P.multiplies_in_preferred(lhs.aval.dtype, o.aval.dtype) else (
        lhs.aval.dtype)
    if pd.kind == "f" and pd != lhs.aval.dtype:
        a, b = (f"{x}.astype(np.{dtype_name(pd)})" for x in (a, b))

    def finish(product: str) -> str:  # the products' dtype -> the output's
        if pd == o.aval.dtype:
            return product
        name = dtype_name(o.aval.dtype)
        return f"{product}.astype(np.{name})" if shape_of(o) else f"np.{name}({product})"

    from minijit.codegen import blas  # imports Numba: here, not where the rules are filled

    if pd in (np.float64, np.float32) and blas.usable(threads.num_threads()):
        # NumPy's BLAS, told to transpose rather than given a transposed copy; a vector is a
        # matrix of one row (left) or one column (right)
        if ra == 1:
            a = f"np.ascontiguousarray({a}).reshape((1, -1))"
        if rb == 1:
            b = f"np.ascontiguousarray({b}).reshape((-1, 1))"
        lo.imports.add("from minijit.codegen import blas")
        product = f"blas.matmul({a}, {b}, {ta}, {tb})"
        lo.line(f"{outs[0]} = " + finish(
            product if ra == rb == 2 else
            f"{product}.reshape({lo.shape(shape_of(o))})" if shape_of(o) else f"{product}[0, 0]"))
        return
    # Numba's np.dot passes a Fortran-ordered operand (a C array's `.T`) to BLAS as transposed,
    # with no copy
    if ta:
        a = f"np.ascontiguousarray({a}).T"
    if tb:
        b = f"np.ascontiguousarray({b}).T"
    if pd.kind == "f":
        lo.line(f"{outs[0]} = " + finish(f"np.dot({a}, {b})"))
        return
    # Integers and bools: BLAS has no integer routines, so loop.
    # ma, mb: the operands as 2-D C arrays (ta, tb above are the transpose flags)
    ma, mb, r, acc = (f"_{n}_{outs[0]}" for n in ("a", "b", "r", "acc"))
    m = f"{a}.shape[0]" if ra == 2 else "1"
    n = f"{b}.shape[1]" if rb == 2 else "1"
    lo.line(f"{ma} = np.ascontiguousarray({a}).reshape(({m}, {a}.shape[-1]))")
    lo.line(f"{mb} = np.ascontiguousarray({b}).reshape(({b}.shape[0], {n}))")
    lo.line(f"{r} = alloc.zeros(({m}, {n}), np.{dtype_name(o.aval.dtype)})")
    lo.line(f"for _i in range({ma}.shape[0]):")
    lo.line(f"    for _j in range({mb}.shape[1]):")
    lo.line(f"        {acc} = {literal(0, o.aval.dtype)}")
    lo.line(f"        for _k in range({ma}.shape[1]):")
    combine = (f"{acc} = {acc} or ({ma}[_i, _k] and {mb}[_k, _j])" if o.aval.dtype == np.bool_
               else f"{acc} = " + cast(wrapping("+", acc, wrapping(
                   "*", f"{ma}[_i, _k]", f"{mb}[_k, _j]", o.aval.dtype), o.aval.dtype),
                   o.aval.dtype))
    lo.line(f"            {combine}")
    lo.line(f"        {r}[_i, _j] = {acc}")
    lo.line(f"{outs[0]} = {r}.reshape({lo.shape(shape_of(o))})" if shape_of(o)
            else f"{outs[0]} = {r}[0, 0]")


for _p, _rule in {
    P.reshape_p: _reshape, P.transpose_p: _transpose, P.slice_p: _slice, P.rev_p: _rev,
    P.squeeze_p: _squeeze, P.concatenate_p: _concatenate, P.pad_p: _pad,
    P.dynamic_slice_p: _dynamic_slice, P.dynamic_update_slice_p: _dynamic_update_slice,
    P.iota_p: _iota, P.argmax_p: _argminmax, P.argmin_p: _argminmax,
    P.dot_general_p: _dot_general,
}.items():
    numba_rules[_p] = Statements(_rule)
