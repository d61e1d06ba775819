"""Explaining cache misses: why did this call trace again? (chapter 04)

For each retrace we compare the new cache key with every key seen before and describe the
closest one's differences, in JAX's words: `* at x, now f64[4] and before f64[3]`. We also
notice a jitted function whose cache is empty although the same code was traced before: the
sign of a function (or `jit(...)` wrapper) re-created on every call.
"""

from __future__ import annotations

from minijit.arguments import SplitArgs
from minijit.core import ShapedArray


def aval_str(aval: tuple) -> str:
    return ShapedArray(*aval).str_short()


def differences(new: SplitArgs, old: SplitArgs) -> list[str]:
    """One `* at NAME, now ... and before ...` line per differing part of two calls."""
    out = []
    if new.in_tree != old.in_tree:
        out.append(f"* the structure of the traced arguments, now {new.in_tree} "
                   f"and before {old.in_tree}")
    else:
        for name, a, b in zip(new.leaf_names, new.leaf_avals, old.leaf_avals):
            if a != b:
                weak = ""
                if a[:2] == b[:2]:
                    weak = " (a Python scalar is weakly typed; an array is not)"
                out.append(f"* at {name}, now {aval_str(a)} and before {aval_str(b)}{weak}")
    new_static = dict(zip(new.static_names, (k[2] for k in new.static_key)))
    old_static = dict(zip(old.static_names, (k[2] for k in old.static_key)))
    new_type = dict(zip(new.static_names, (k[3] for k in new.static_key)))
    old_type = dict(zip(old.static_names, (k[3] for k in old.static_key)))
    how = {"arg": "by position", "kwarg": "by keyword"}
    new_how = {n: how[k[0]] for n, k in zip(new.static_names, new.static_key)}
    old_how = {n: how[k[0]] for n, k in zip(old.static_names, old.static_key)}
    for name in sorted(set(new_static) | set(old_static)):
        a, b = new_static.get(name, "<absent>"), old_static.get(name, "<absent>")
        if name not in new_static or name not in old_static or a != b:
            out.append(f"* at {name} (static), now {a!r} and before {b!r}")
        elif new_type[name] is not old_type[name]:  # 1 == 1.0 == True, but not as settings
            out.append(f"* at {name} (static), now {a!r} of type {new_type[name].__name__} "
                       f"and before {b!r} of type {old_type[name].__name__} (equal values of "
                       "different types are different static arguments)")
        elif new_how[name] != old_how[name]:  # same value, passed by position vs by keyword
            out.append(f"* at {name} (static), now passed {new_how[name]} "
                       f"and before {old_how[name]}")
    return out


def _distance(new: SplitArgs, old: SplitArgs) -> tuple[int, str]:
    """How far a previous key is from the new one, as JAX ranks them: by how many parts
    differ, then by the explanation's text (JAX takes the `min` of (count, message)). So
    after f64[3] and f64[4], a new f32[3] is closest to `before f64[3]` (only the dtype
    changed), and a new f32[4] too (its text sorts first)."""
    diffs = differences(new, old)
    return len(diffs), "\n".join(diffs)


def explain_miss(fun_name: str, where: str | None, new: SplitArgs,
                 previous: list[SplitArgs], recreated_from: str | None) -> str:
    head = f"TRACING CACHE MISS at {where or '<unknown>'} for `{fun_name}` because:"
    if not previous:
        if recreated_from:
            return (f"{head}\n  never seen function: `{fun_name}` was traced before as a "
                    f"different function object (defined at {recreated_from}). A lambda or "
                    "nested def created on every call, or jit(...) applied inside a loop, starts "
                    "with an empty cache each time. Create the jitted function once and reuse it.")
        return f"{head}\n  this is the first call (nothing is cached yet)."
    ranked = sorted(reversed(previous), key=lambda old: _distance(new, old))
    diffs = differences(new, ranked[0])
    if not diffs:
        return (f"{head}\n  this key was compiled before, but the cache was emptied since: by "
                "`clear_cache()`, or because a piece of minijit was switched (`minijit.build`).")
    n = len(previous)
    seen = f"all {n} previously seen cache keys differ" if n > 1 else (
        "the previously seen cache key differs")
    return f"{head}\n  {seen}. Closest previous key:\n  " + "\n  ".join(diffs)
