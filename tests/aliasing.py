"""An aliasing harness: does a jitted function keep its arguments and its results apart?

A jitted function behaves like a pure function of values (as in JAX): it never writes into
its arguments, its results are new arrays that later calls leave alone, and a result never
shares memory with an argument, so changing the argument afterwards cannot change the result.
Buffer reuse in generated code (writing an elementwise result in place of a dead temporary)
breaks this when the "dead" temporary is in fact a view of an argument or of a result.

`check_aliasing(f, args, other_args)` calls `f` several times (`args`, `other_args`, `args`
again, ...) and returns the `Violation`s it saw, each with a sentence saying what went wrong:

- `input-modified`: an argument array (or, for a view, the array it views) changed in a call;
- `output-overwritten`: a result of call k changed during a later call;
- `output-shares-input`: a result shares memory with a non-donated argument (or a `protected`
  array, such as a closed-over constant);
- `output-shares-earlier-output`: a result shares memory with a result of an earlier call;
- `nondeterministic`: two calls with the same arguments gave different bits;
- `outputs-overlap` (only with `distinct_outputs=True`): two results of one call share memory,
  other than one value returned twice (`return y, y`: the same view of the same memory).
  minijit's arrays are immutable by convention, so this is invisible to correct code, but it
  is how a wrong in-place write shows (one result written over another: while_loop carries
  that are one array); JAX returns distinct buffers, and donating one would corrupt the other.

Comparisons are bitwise (a NaN stays the same NaN; -0.0 is not 0.0). `LAYOUTS` makes an
array's values in other memory layouts (a view into a bigger buffer, Fortran order, strides
on every axis, negative strides, read-only, big-endian) for the tests to feed the harness.
Used by tests/test_aliasing.py (the catalogue and the known bugs) and tests/fuzz.py.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass

import numpy as np

from minijit.tree_util import tree_flatten_with_names, tree_map

KINDS = ("input-modified", "output-overwritten", "output-shares-input",
         "output-shares-earlier-output", "nondeterministic", "outputs-overlap")


@dataclass(frozen=True)
class Violation:
    kind: str  # one of KINDS
    message: str

    def __str__(self) -> str:
        return f"[{self.kind}] {self.message}"


# --------------------------------------------------------------------------- memory helpers


def root(a: np.ndarray) -> np.ndarray:
    """The array that owns `a`'s memory (`a` itself unless it is a view)."""
    while isinstance(a.base, np.ndarray):
        a = a.base
    return a


def same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    """Same shape, dtype and bytes: stricter than equality (NaN == NaN, -0.0 != 0.0)."""
    return a.shape == b.shape and a.dtype == b.dtype and a.tobytes() == b.tobytes()


def shares_memory(a: np.ndarray, b: np.ndarray) -> bool:
    if a.size == 0 or b.size == 0 or not np.may_share_memory(a, b):
        return False
    try:
        return bool(np.shares_memory(a, b))
    except np.exceptions.TooHardError:  # overlapping bounds, strides too hard: assume yes
        return True


def _same_view(a: np.ndarray, b: np.ndarray) -> bool:
    """The same memory seen the same way: one value returned twice (`return y, y`)."""
    return (a.__array_interface__["data"][0] == b.__array_interface__["data"][0]
            and a.shape == b.shape and a.strides == b.strides and a.dtype == b.dtype)


def _arrays(tree, prefix: str) -> list[tuple[str, np.ndarray]]:
    return [(name, leaf) for name, leaf in tree_flatten_with_names(tree, prefix)[0]
            if isinstance(leaf, np.ndarray)]


def _first_difference(now: np.ndarray, before: np.ndarray) -> str:
    if now.shape != before.shape or now.dtype != before.dtype:
        return f"now {now.dtype}{list(now.shape)}, was {before.dtype}{list(before.shape)}"
    flat_now, flat_before = now.reshape(-1), before.reshape(-1)
    for k in range(flat_now.size):
        if flat_now[k:k + 1].tobytes() != flat_before[k:k + 1].tobytes():
            index = np.unravel_index(k, now.shape) if now.shape else ()
            return (f"element {tuple(int(i) for i in index)} is now {flat_now[k]!r}, "
                    f"was {flat_before[k]!r}")
    return "bytes differ"


# --------------------------------------------------------------------------- the harness


def _arg_sets(args: tuple, other_args: tuple | None, calls: int) -> list[tuple[int, tuple]]:
    sets = [args] if other_args is None else [args, other_args]
    return [(k % len(sets), sets[k % len(sets)]) for k in range(calls)]


def _donated_copy(args: tuple, donate_argnums: Collection[int]) -> tuple:
    """`args` with every donated argument deep-copied: a donated array may be used once."""
    return tuple(tree_map(lambda a: np.array(a, copy=True) if isinstance(a, np.ndarray) else a,
                          a) if i in donate_argnums else a for i, a in enumerate(args))


def check_aliasing(fn: Callable, args: tuple, other_args: tuple | None = None, *,
                   calls: int = 3, donate_argnums: Collection[int] = (),
                   protected: Sequence[np.ndarray] = (),
                   distinct_outputs: bool = False) -> list[Violation]:
    """Call `fn` `calls` times, alternating `args` and `other_args` (same types, other
    values), and return every aliasing violation seen (see the module docstring).

    Donated arguments (`donate_argnums`, as given to `jit`) are copied afresh for each call,
    may be overwritten and may share memory with the results."""
    violations: list[Violation] = []
    seen: set[tuple[str, str]] = set()

    def report(kind: str, key: str, message: str) -> None:
        if (kind, key) not in seen:  # one report per place, not one per call
            seen.add((kind, key))
            violations.append(Violation(kind, message))

    schedule = _arg_sets(args, other_args, calls)
    # Every argument array and, for views, the array it views: snapshots taken before any call.
    watched: dict[int, tuple[str, np.ndarray, np.ndarray]] = {}
    kept: list[tuple[str, np.ndarray]] = []  # arrays results must not share memory with
    for s, arg_set in dict(schedule).items():
        for i, a in enumerate(arg_set):
            if i in donate_argnums:
                continue
            for name, leaf in _arrays(a, f"args[{i}]" if s == 0 else f"other_args[{i}]"):
                kept.append((name, leaf))
                for what, arr in ((name, leaf), (f"the array {name} views", root(leaf))):
                    if id(arr) not in watched:
                        watched[id(arr)] = (what, arr, arr.copy(order="K"))
    kept += [(f"protected[{k}]", p) for k, p in enumerate(protected)]

    results: list[tuple[int, int, list[tuple[str, np.ndarray, np.ndarray]]]] = []
    for call, (s, arg_set) in enumerate(schedule):
        out = fn(*_donated_copy(arg_set, donate_argnums))
        outs = [(name, o, o.copy(order="K")) for name, o in _arrays(out, "result")]
        where = f"call {call}"
        for what, arr, before in watched.values():
            if not same_bits(arr, before):
                report("input-modified", what,
                       f"{what} changed during {where}: {_first_difference(arr, before)}")
        # (a result that shares memory with an argument is reported as such, not again for
        # sharing it with the result of an earlier call on the same argument)
        own = [(name, o) for name, o, _ in outs if not any(shares_memory(o, a) for _, a in kept)]
        for earlier, _, prev_outs in results:
            for name, o, copy in prev_outs:
                if not same_bits(o, copy):
                    report("output-overwritten", f"{earlier}:{name}",
                           f"{name} of call {earlier} changed during {where}: "
                           f"{_first_difference(o, copy)}")
                for new_name, new in own:
                    if shares_memory(o, new):
                        report("output-shares-earlier-output", f"{new_name}~{name}",
                               f"{new_name} of {where} shares memory with {name} of call "
                               f"{earlier}")
        for name, o, _ in outs:
            for arg_name, a in kept:
                if shares_memory(o, a):
                    report("output-shares-input", f"{name}~{arg_name}",
                           f"{name} of {where} shares memory with {arg_name}: changing the "
                           "argument later would change the result")
        if distinct_outputs:
            for j, (name_j, oj, _) in enumerate(outs):
                for name_i, oi, _ in outs[:j]:
                    if shares_memory(oi, oj) and not _same_view(oi, oj):
                        report("outputs-overlap", f"{name_i}~{name_j}",
                               f"{name_i} and {name_j} of {where} share memory")
        for earlier, earlier_set, prev_outs in results:
            if earlier_set == s and len(prev_outs) == len(outs):
                for (name, _, copy), (_, _, now) in zip(prev_outs, outs):
                    if not same_bits(copy, now):
                        report("nondeterministic", name,
                               f"{name}: calls {earlier} and {call} had the same arguments "
                               f"but differ: {_first_difference(now, copy)}")
                break
        results.append((call, s, outs))
    return violations


def format_violations(violations: Sequence[Violation]) -> str:
    return "\n".join(str(v) for v in violations)


# --------------------------------------------------------------------------- layouts

# Other memory layouts of the same values, each a Python expression of `{0}` (so a fuzzer's
# reproducer can spell it out). "offset" is C-contiguous yet a view into a bigger buffer: jit
# passes it to compiled code as is, so a stray write lands in the caller's memory.
LAYOUTS: dict[str, str] = {
    "c": "{0}.copy()",
    "offset": "np.concatenate([np.zeros(1, {0}.dtype), {0}.ravel()])[1:].reshape({0}.shape)",
    "fortran": "{0}.copy(order='F')",
    "strided": "np.stack([{0}, {0}], axis=-1)[..., 0]",
    "reversed": "np.flip(np.flip({0}).copy())",
    "readonly": "np.lib.stride_tricks.as_strided({0}.copy(), writeable=False)",
    # minijit rejects non-native byte order with a TypeError, as JAX does: not in ALL_LAYOUTS
    "bigendian": "{0}.astype({0}.dtype.newbyteorder('>'))",
}
ALL_LAYOUTS = tuple(name for name in LAYOUTS if name != "bigendian")
_MAKERS = {name: eval(f"lambda a: {src.format('a')}", {"np": np})  # noqa: S307 - our strings
           for name, src in LAYOUTS.items()}


def in_layout(a: np.ndarray, layout: str) -> np.ndarray:
    """An array equal to `a` (same shape, dtype, values) laid out as `LAYOUTS[layout]`."""
    return _MAKERS[layout](a)


def relayout(tree, layout: str):
    """`tree` with every array leaf replaced by an equal array in `layout`."""
    return tree_map(lambda a: in_layout(a, layout) if isinstance(a, np.ndarray) else a, tree)
