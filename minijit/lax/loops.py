"""`map` and `associative_scan`: loops built from `scan` and from slicing (chapter 05).

Named after JAX's `jax/_src/lax/control_flow/loops.py`, where both live. Neither adds a
primitive: `map` is a `scan` with an empty carry, exactly as JAX lowers it (its Jaxpr shows
one `scan` equation), and `associative_scan` is the recursive doubling of Blelloch's parallel
prefix sum, written with `lax.slice`, `lax.pad`, `lax.concatenate` and `lax.rev`, so it unrolls
into about 10 equations per halving: O(log n) levels of whole-array work instead of a
sequential loop of n steps.
"""

from __future__ import annotations

import operator
from collections.abc import Callable

import numpy as np

from minijit.core import get_aval
from minijit.errors import api_boundaries
from minijit.lax import ops as lax
from minijit.lax.control_flow import scan
from minijit.tree_util import tree_flatten, tree_unflatten


def _leading_length(what: str, leaves) -> int:
    """The common length of the leaves' leading axes, with JAX's errors when there is none."""
    if not leaves:
        raise ValueError(f"{what} got no values to map over: xs has no array leaves")
    shapes = [get_aval(x).shape for x in leaves]
    if any(not s for s in shapes):
        raise ValueError(f"{what}: every leaf of xs needs a leading axis to map over, got "
                         f"shapes {shapes}")
    lengths = sorted({s[0] for s in shapes})
    if len(lengths) != 1:
        raise ValueError(f"{what} got values with different leading axis sizes: "
                         f"{', '.join(str(n) for n in lengths)}.")
    return lengths[0]


def _map_leaves(f: Callable, xs):
    """`f` over the leading axis of every leaf of `xs`: one `scan` with an empty carry."""
    _, ys = scan(lambda carry, x: (carry, f(x)), (), xs)
    return ys


def map(f: Callable, xs, *, batch_size: int | None = None):  # noqa: A001 - JAX's name
    """`stack([f(x) for x in xs])` along the leading axis of every leaf of the pytree `xs`,
    staged as one `scan` (the body is traced once, whatever the length).

    With `batch_size=b`, the leading axis is cut into `n // b` batches of `b`, the batches are
    mapped in an outer scan, and the `n % b` left over are mapped after it, then concatenated.
    JAX runs `vmap(f)` on each batch; minijit has no `vmap`, so each batch is an inner scan:
    the same results, in the same layout of equations (slice, reshape, scan, concatenate).
    """
    leaves, tree = tree_flatten(xs)
    n = _leading_length("lax.map", leaves)
    if not batch_size:  # JAX treats batch_size=0 as no batching too
        return _map_leaves(f, xs)
    batch_size = operator.index(batch_size)
    if batch_size < 0:
        raise ValueError(f"lax.map: batch_size must be a positive int, got {batch_size}")
    batches, rest = divmod(n, batch_size)
    cut = batches * batch_size

    def rows(x, start, stop):
        shape = get_aval(x).shape
        return lax.slice(x, (start, *[0] * (len(shape) - 1)), (stop, *shape[1:]))

    outs = []
    if batches:
        batched = [lax.reshape(rows(x, 0, cut), (batches, batch_size, *get_aval(x).shape[1:]))
                   for x in leaves]
        ys = _map_leaves(lambda batch: _map_leaves(f, batch), tree_unflatten(tree, batched))
        y_leaves, y_tree = tree_flatten(ys)
        outs.append((y_tree, [lax.reshape(y, (cut, *get_aval(y).shape[2:])) for y in y_leaves]))
    if rest:
        ys = _map_leaves(f, tree_unflatten(tree, [rows(x, cut, n) for x in leaves]))
        y_leaves, y_tree = tree_flatten(ys)
        outs.append((y_tree, y_leaves))
    if len(outs) == 1:
        return tree_unflatten(*outs[0])
    (y_tree, full), (_, tail) = outs
    return tree_unflatten(y_tree, [lax.concatenate([a, b], 0) for a, b in zip(full, tail)])


# --------------------------------------------------------------------------- associative_scan


def _slice_in_dim(x, start: int, stop: int, stride: int, axis: int):
    """`x[start:stop:stride]` along `axis`, every other axis whole."""
    shape = get_aval(x).shape
    starts = [0] * len(shape)
    limits = list(shape)
    strides = [1] * len(shape)
    starts[axis], limits[axis], strides[axis] = start, stop, stride
    return lax.slice(x, starts, limits, strides if stride != 1 else None)


def _interleave(evens, odds, axis: int):
    """`evens[0], odds[0], evens[1], odds[1], ...` along `axis` (`evens` has as many elements
    as `odds`, or one more): each spread out with zeros in between by `pad`, then added (or
    or-ed, for bools), since each position holds a value from exactly one of them."""
    n_even, n_odd = get_aval(evens).shape[axis], get_aval(odds).shape[axis]
    ndim = get_aval(evens).ndim
    even_pad = [(0, 0, 0)] * ndim
    odd_pad = [(0, 0, 0)] * ndim
    even_pad[axis] = (0, 1 if n_even == n_odd else 0, 1)
    odd_pad[axis] = (1, 0 if n_even == n_odd else 1, 1)
    dtype = get_aval(evens).dtype
    zero = np.zeros((), dtype)
    join = lax.bitwise_or if dtype == np.bool_ else lax.add
    return join(lax.pad(evens, zero, even_pad), lax.pad(odds, zero, odd_pad))


def associative_scan(fn: Callable, elems, reverse: bool = False, axis: int = 0):
    """All prefix combinations along `axis`: `out[i] = fn(...fn(fn(e[0], e[1]), e[2])..., e[i])`
    for an associative `fn` of two pytrees shaped like `elems` (`lax.associative_scan(lax.add,
    x)` is a cumulative sum). With `reverse=True`, the combinations run from the end.

    Invariant of the recursion (Blelloch): the scan's odd positions are the scan of the sums of
    adjacent pairs, computed by recursing on half as many elements; each even position is then
    one `fn` of the odd result before it and the original element. `fn` is applied elementwise
    to whole slices, so it must keep the shapes it is given.
    """
    if not callable(fn):
        raise TypeError("lax.associative_scan: fn argument should be callable.")
    leaves, tree = tree_flatten(elems)
    if not leaves:
        raise ValueError("lax.associative_scan: elems has no array leaves to scan")
    ndim = get_aval(leaves[0]).ndim
    axis = operator.index(axis)
    if not -ndim <= axis < ndim:
        raise ValueError(f"axis {axis} is out of bounds for array of dimension {ndim}")
    axis %= ndim
    if any(get_aval(x).ndim <= axis or get_aval(x).shape[axis] != get_aval(leaves[0]).shape[axis]
           for x in leaves):
        raise ValueError("Array inputs to associative_scan must have the same first dimension. "
                         f"(saw: {[get_aval(x).shape for x in leaves]})")
    if reverse:
        leaves = [lax.rev(x, (axis,)) for x in leaves]

    def combine(a_leaves, b_leaves):
        out, out_tree = tree_flatten(fn(tree_unflatten(tree, a_leaves),
                                        tree_unflatten(tree, b_leaves)))
        want = [get_aval(x).shape for x in a_leaves]
        got = [get_aval(x).shape for x in out]
        if out_tree != tree or got != want:
            raise ValueError(
                "lax.associative_scan: fn must return a pytree of the structure and shapes it "
                f"is given (it combines whole slices elementwise): given shapes {want}, it "
                f"returned {got}")
        return out

    def prefix_scan(xs):
        n = get_aval(xs[0]).shape[axis]
        if n < 2:
            return xs
        pairs = combine([_slice_in_dim(x, 0, n - 1, 2, axis) for x in xs],
                        [_slice_in_dim(x, 1, n, 2, axis) for x in xs])
        odds = prefix_scan(pairs)  # the scan at positions 1, 3, 5, ...
        n_odd = get_aval(odds[0]).shape[axis]
        # positions 2, 4, ...: the odd result just before, combined with the element itself
        before = odds if n % 2 else [_slice_in_dim(o, 0, n_odd - 1, 1, axis) for o in odds]
        evens = combine(before, [_slice_in_dim(x, 2, n, 2, axis) for x in xs])
        evens = [lax.concatenate([_slice_in_dim(x, 0, 1, 1, axis), e], axis)
                 for x, e in zip(xs, evens)]
        return [_interleave(e, o, axis) for e, o in zip(evens, odds)]

    out = prefix_scan(leaves)
    if reverse:
        out = [lax.rev(x, (axis,)) for x in out]
    return tree_unflatten(tree, out)


# Keep last: every public function becomes an API boundary (errors.api_boundary).
api_boundaries(globals())
