"""What the probes of chapter 04's build-track exercises run: call sequences through `mj.jit`
with a learner's `cache_key` (ex04_cache_key) or `jit_call` (ex04_jit_call) switched in.

A probe runs in the learner's kernel and imports this at run time, so it lives in a module
that ships with every copy of minijit, the student release included; it holds the graded
call sequences and no exercise's answer. Every sequence jits a fresh function (a jitted
function's cache belongs to the function object, so nothing the notebook cached counts) on
the interpreter backend, and reports what each call returned and how often it traced.
"""

from __future__ import annotations

import contextlib

import numpy as np


@contextlib.contextmanager
def only_piece(name: str, fn):
    """`fn` as minijit's piece `name` for one block, every other piece minijit's own: a piece
    the notebook switched in must not take part in another exercise's grade."""
    from minijit import build

    with contextlib.ExitStack() as stack:
        for other, piece in build.PIECES.items():
            stack.enter_context(build.use(other, fn if other == name else piece.reference,
                                          verify=False))
        yield


def _as_float32(x):
    if isinstance(x, np.ndarray) and x.dtype == np.float64:
        return x.astype(np.float32)
    return x


def _catalogue(name: str):
    """A program of `minijit.grading.programs`: the same types twice (one trace), then in
    float32 twice (one more, where it has float64 arrays)."""
    from minijit.grading.programs import PROGRAMS, make_args

    program = PROGRAMS[name][0]
    calls = [(make_args(name, seed), {}) for seed in (0, 1)]
    calls += [(tuple(_as_float32(a) for a in make_args(name, seed)), {}) for seed in (2, 3)]
    return (lambda *args: program(*args)), {}, calls


def _scale(x, s):
    return x * s


def _power(x, n):
    out = x
    for _ in range(int(n) - 1):  # n is static: a Python loop, unrolled
        out = out * x
    return out + (0.5 if isinstance(n, float) else 0.0) + (1.0 if n is True else 0.0)


def _settings(x, n, *, mode):
    head = x[:n]
    return head.sum() if mode == "sum" else head.max()


def _tree(params, x):
    return params["w"] * x + params["b"]


def _pair(p):
    a, b = p
    return a * 2.0 + b if isinstance(p, tuple) else a - b


def _named(p):
    return p["u"] * 2.0 + p["v"] if "u" in p else p["r"] - p["s"]


def _shaped(x, kind):
    if kind == "one":
        return x * 2.0
    if kind == "pair":
        return x + 1.0, x.sum()
    return {"a": x, "b": (x * 2.0, 1.0), "c": None}


def _scenarios():
    x3, x4 = np.arange(1.0, 4.0), np.arange(1.0, 5.0)
    w, b = np.full(3, 2.0), np.ones(3)
    return {
        # 2.0 and 2 are weak (Python scalars); np.float64(2.0) and np.float32(2.0) are not
        "weak and strong scalars": (_scale, {}, [
            ((x3.astype(np.float32), 2.0), {}), ((x3.astype(np.float32), 3.5), {}),
            ((x3.astype(np.float32), np.float64(2.0)), {}),
            ((x3.astype(np.float32), np.float32(2.0)), {}),
            ((x3.astype(np.float32), 2), {}), ((x3.astype(np.float32), 7), {}),
            ((x3.astype(np.float32), np.float64(3.0)), {})]),
        "shapes and dtypes": (_scale, {}, [
            ((x3, 2.0), {}), ((x4, 2.0), {}), ((x3.astype(np.float32), 2.0), {}),
            ((x3.astype(np.int64), 2.0), {}), ((x3.reshape(3, 1), 2.0), {}), ((x3, 5.0), {}),
            ((x4 + 1.0, 1.0), {})]),
        # a static value, with its type: 2, 2.0 and True are equal in Python
        "a static argument's value and type": (_power, {"static_argnums": 1}, [
            ((x3, 2), {}), ((x3, 3), {}), ((x3, 2), {}), ((x3, 2.0), {}), ((x3, True), {}),
            ((x3, 1), {}), ((x4, 3), {}), ((x3, 3), {})]),
        # f(x, 2) and f(x, n=2) are two entries, as in JAX: `where` is in the key
        "one static argument, by position and by keyword": (_power, {"static_argnums": 1}, [
            ((x3, 2), {}), ((x3,), {"n": 2}), ((x3, 2), {}), ((x3,), {"n": 3}),
            ((x3, 3), {})]),
        "static by position and by keyword": (_settings, {"static_argnums": 1,
                                                           "static_argnames": "mode"}, [
            ((x4, 2), {"mode": "sum"}), ((x4, 2), {"mode": "max"}),
            ((x4, 3), {"mode": "sum"}), ((x4 * 2.0, 2), {"mode": "sum"}),
            ((x4,), {"n": 2, "mode": "sum"}), ((x4,), {"mode": "sum", "n": 2})]),
        # a dict's leaves are in the order of its sorted keys, whatever order it was built in
        "a dict's key order": (_tree, {}, [
            (({"w": w, "b": b}, x3), {}), (({"b": b, "w": w}, x3), {}),
            (({"b": b, "w": w * 3.0}, x3), {}), (({"w": w, "b": 1.0}, x3), {}),
            (({"b": 1.0, "w": w}, x3 + 1.0), {})]),
        "the pytree's structure": (_pair, {}, [
            (((x3, b),), {}), (([x3, b],), {}), (((x3 * 2.0, b),), {}), (([b, x3],), {})]),
        "dict keys with equal leaves": (_named, {}, [
            (({"u": x3, "v": b},), {}), (({"r": x3, "s": b},), {}),
            (({"u": b, "v": x3},), {}), (({"r": b, "s": x3},), {})]),
        # for jit_call: a hit never traces, whatever changes in the values
        "one signature, five calls": (_scale, {}, [
            ((x3 * k, 0.5 * k), {}) for k in range(1, 6)]),
        "outputs in a pytree": (_shaped, {"static_argnums": 1}, [
            ((x3, "one"), {}), ((x3, "pair"), {}), ((x3, "dict"), {}), ((x4, "dict"), {}),
            ((x3 + 1.0, "pair"), {}), ((2.0, "one"), {})]),
        "donated arguments": (_scale, {"donate_argnums": 0}, [
            ((x3.copy(), 2.0), {}), ((x3.copy(), 3.0), {}), ((x4.copy(), 2.0), {})]),
    }


SCENARIOS = tuple(_scenarios())


def _fresh(fun):
    """A new function object with `fun`'s code and signature: a fresh cache."""
    import types

    copy = types.FunctionType(fun.__code__, fun.__globals__, fun.__name__, fun.__defaults__,
                              fun.__closure__)
    copy.__kwdefaults__ = fun.__kwdefaults__
    return copy


def _run(piece: str, fn, scenario: str) -> tuple[dict, list]:
    """The call sequence `scenario` (a name of SCENARIOS or of the graded catalogue) through
    `mj.jit` with `fn` as minijit's piece `piece`: each call's outputs and their dtypes, how
    many times the function traced and how many entries its cache holds; and the results."""
    import minijit as mj
    from minijit.tree_util import tree_leaves

    values, dtypes, results = [], [], []
    with np.errstate(all="ignore"), only_piece(piece, fn):
        if scenario in SCENARIOS:
            fun, options, calls = _scenarios()[scenario]
            fun = _fresh(fun)
        else:
            fun, options, calls = _catalogue(scenario)
        jitted = mj.jit(fun, backend="interpreter", **options)
        for args, kwargs in calls:
            results.append(jitted(*args, **kwargs))
            outs = [np.asarray(v) for v in tree_leaves(results[-1])]
            values.append(outs)
            dtypes.append([str(v.dtype) for v in outs])
        report = {"values": values, "dtypes": dtypes, "traces": jitted.trace_count,
                  "entries": jitted._cache_size()}
    return report, results


def run_with_key(cache_key, scenario: str) -> dict:
    """`scenario` run with `cache_key` as minijit's piece: each call's outputs and their
    dtypes, and how many times the function traced."""
    report, _ = _run("cache_key", cache_key, scenario)
    return {k: report[k] for k in ("values", "dtypes", "traces")}


def run_with_call(jit_call, scenario: str) -> dict:
    """`scenario` run with `jit_call` as minijit's piece: what `run_with_key` reports, how
    many entries the cache holds, and each result's tree and the kind of its leaves (a
    minijit Array, weakly typed or not, or a plain NumPy array)."""
    from minijit.array import Array
    from minijit.tree_util import tree_leaves, tree_structure

    report, results = _run("jit_call", jit_call, scenario)
    report["trees"] = [str(tree_structure(r)) for r in results]
    report["kinds"] = [[("weak Array" if x.weak_type else "Array") if isinstance(x, Array)
                        else type(x).__name__ for x in tree_leaves(r)] for r in results]
    return report
