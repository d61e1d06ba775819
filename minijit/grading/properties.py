"""Property checks for the build track's pieces: a learner's piece against minijit's own on
many programs (one hidden case of each build exercise: `property_case`, at the end).

`check_piece(name, fn)` runs each program with `fn` as piece `name` (the others minijit's
own), then with minijit's own, and compares what the piece decides (`_observe`: a text, the
values, the groups, the keys' equalities, as fits the piece). Programs: `N_RANDOM` random ones
(`random_program`: up to 32 lines of `minijit.numpy` over inputs that broadcast, literals, a
value used twice, lines nobody reads, a `cond` and a `fori_loop` that capture values), then
those of `minijit.grading.programs`. A failing random program is shrunk (`shrink`) and shown
as source with its jaxpr. Deterministic (seeds, and a bound on shrinking, never a clock); a
program minijit's own cannot run is skipped; no switch outlives the check.
"""

from __future__ import annotations

import contextlib
import dataclasses
import re
from dataclasses import dataclass, replace

import numpy as np

from minijit.grading.build_pieces import BUILD_PIECES
from minijit.grading.cases import Case
from minijit.grading.probing import get

N_RANDOM = 24
MAX_TRIES = 300  # programs a shrink may run: a bound, not a time, so messages are stable

_BINARY = ("{a} + {b}", "{a} * {b}", "{a} - {b}", "{a} / (1.0 + {b} * {b})",
           "mnp.maximum({a}, {b})", "mnp.where({a} > {b}, {a}, {b})")
_UNARY = ("{a} * {a}", "mnp.exp(-{a} * {a})", "mnp.sin({a})", "mnp.tanh({a}) * 2.0",
          "{a} + 1.0", "-{a}", "mnp.sum({a}, axis=-1, keepdims=True)", "mnp.max({a})")
_BODIES = ("lax.cond(mnp.sum({a}) > 0.0, lambda u: u * {b}, lambda u: u - {c}, {a})",
           "lax.fori_loop(0, 3, lambda i, u: u * 0.5 + {b}, {a})")


@dataclass(frozen=True)
class Program:
    """`def f(x, y, z)`: `lines` (`vK = ...`), then `outputs`; inputs of `shapes`, `dtype`."""

    lines: tuple[str, ...]
    outputs: tuple[str, ...]
    shapes: tuple[tuple[int, ...], ...]
    dtype: str
    seed: int

    def source(self) -> str:
        return "\n".join(["def f(x, y, z):", *(f"    {line}" for line in self.lines),
                          f"    return ({', '.join(self.outputs)},)"])

    def fun(self):
        import minijit.numpy as mnp
        from minijit import lax
        exec(self.source(), scope := {"mnp": mnp, "lax": lax})  # text this module wrote
        return scope["f"]

    def args(self) -> tuple:
        rng = np.random.default_rng(self.seed)  # one draw per input, in order
        return tuple(rng.standard_normal(s).astype(self.dtype) for s in self.shapes)


def random_program(seed: int) -> Program:
    """A program that traces, the same for the same seed (NumPy's rules track shapes)."""
    rng = np.random.default_rng(seed)
    r, c = (int(n) for n in rng.integers(1, 5, 2))
    same = rng.random() < 0.5  # all inputs of one shape: no broadcast_in_dim in the jaxpr
    shapes = ((r, c), (r, c), (r, c)) if same else ((r, c), (c,), (r, 1))
    known = dict(zip("xyz", shapes))
    lines: list[str] = []
    for _ in range(4 * (n := int(rng.integers(3, 33)))):  # n lines, if that many fit
        names = list(known)
        a, b, c = (names[int(k)] for k in rng.integers(0, len(names), 3))
        kind = rng.random()
        template = (_BODIES[int(rng.integers(2))] if kind < 0.12 else
                    _UNARY[int(rng.integers(len(_UNARY)))] if kind < 0.5 else
                    _BINARY[int(rng.integers(len(_BINARY)))])
        sa, sb, sc = known[a], known[b], known[c]  # shapes, all broadcastable to (r, c)
        if "keepdims" in template:
            shape = None if same or sa == () else sa[:-1] + (1,)
        elif template == "mnp.max({a})":
            shape = ()
        elif "lax." in template:  # a loop's carry and a cond's branches keep their type
            fits = {np.broadcast_shapes(sa, sb), np.broadcast_shapes(sa, sc)} == {sa}
            shape = sa if fits or "fori" in template and np.broadcast_shapes(sa, sb) == sa \
                else None
        else:
            shape = np.broadcast_shapes(sa, sb) if "{b}" in template else sa
        if shape is not None and not (same and shape not in (shapes[0], ())):
            lines.append(f"v{len(lines) + 1} = " + template.format(a=a, b=b, c=c))
            known[lines[-1].split(" = ")[0]] = shape
        if len(lines) == n:
            break
    picked = sorted({int(k) for k in rng.integers(1, len(lines) + 1, int(rng.integers(1, 4)))})
    return Program(tuple(lines), tuple(f"v{k}" for k in picked), shapes,  # the rest: dead code
                   str(rng.choice(["float64", "float32"])), seed)


def _text(jaxpr, *width: int) -> str:
    from minijit.ir import reference_pp_jaxpr
    return reference_pp_jaxpr(getattr(jaxpr, "jaxpr", jaxpr), *width)


def _values(outs) -> list[str]:  # equal texts exactly for equal values (NaN equal to NaN)
    return [f"{a.dtype.name}{list(a.shape)} "
            + np.array2string(a, floatmode="unique", threshold=a.size + 1)
            for a in map(np.asarray, outs)]


def _jaxprs(jaxpr) -> list:  # `jaxpr` and every sub-jaxpr in it, outermost first
    from minijit.ir import subjaxprs
    out = [jaxpr]
    for j in out:
        out += [s for e in j.eqns for s in subjaxprs(e)]
    return out


def _nest(result) -> tuple:
    """loop_nest's answer up to spaces: ((index, size) per loop, subscripts per operand)."""
    loop = r"\s*for\s+(\w+)\s+in\s+range\(\s*(\d+)\s*\)\s*:\s*"
    return ([(m[1], int(m[2])) if (m := re.fullmatch(loop, x)) else x for x in result[0]],
            [[t.strip() for t in ix.split(",") if t.strip()] for ix in result[1]])


def _observe(name: str, fun, args: tuple):
    """What piece `name` decides on `fun(*args)`, as plain data, with the pieces as now."""
    import minijit as mj
    from minijit import build
    from minijit.tree_util import tree_leaves
    if name == "cache_key":  # `args` are the calls, split as jit splits them
        return [build.call(name, s.static_values, list(s.leaf_avals), s.in_tree) for s in args]
    closed = mj.make_jaxpr(fun)(*args)
    leaves = [np.asarray(a, v.aval.dtype) for a, v in zip(args, closed.jaxpr.invars)]
    if name in ("process_primitive", "closure_convert", "stage_cond"):
        return _text(closed)
    if name == "bind":  # staged, and eagerly
        return _text(closed), _values(tree_leaves(fun(*args)))
    if name in ("eval_jaxpr", "while_impl"):  # the interpreter runs the impl rule of while
        return _values(mj.eval_jaxpr(closed.jaxpr, closed.consts, *leaves))
    if name == "jit_call":  # a new function each time, so a fresh cache: miss, then hit
        jitted = mj.jit(lambda *a: fun(*a), backend="interpreter")
        first, again = (tree_leaves(jitted(*args)) for _ in range(2))
        return _values(first), _values(again), jitted.trace_count
    if name == "pp_jaxpr":
        return " ".join(str(closed.jaxpr).split())
    if name == "dce":  # no dead equation left, the same top level, the same values
        from minijit.grading.optimizer_probes import dead_equations

        out = build.call("dce", closed.jaxpr)
        return (dead_equations(out), [e.primitive.name for e in out.eqns],
                _values(mj.eval_jaxpr(out, closed.consts, *leaves)))
    from minijit.passes import PIPELINE, fuse_elementwise, run_passes
    if name == "fusion_groups":  # the groups of the program and of each sub-jaxpr, as sets
        before = run_passes(closed, PIPELINE[:PIPELINE.index(fuse_elementwise)]).jaxpr
        return [sorted(sorted(g) for g in build.call("fusion_groups", j) if len(g) > 1)
                for j in _jaxprs(before)]
    if name == "loop_nest":  # each kernel's (shape, operands) and what yours answered
        fn, calls = build.using().get(name), []

        def recorder(shape, operands):
            calls.append((tuple(shape), [tuple(o) for o in operands], fn(shape, operands)))
            return calls[-1][2]

        with build.use(name, recorder, verify=False) if fn else contextlib.nullcontext():
            mj.jit(fun, backend="numba").lower(*args)
        return [(shape, operands, _nest(out)) for shape, operands, out in calls]
    return _text(run_passes(closed))  # any other piece: the program the optimizer makes


def _run(name: str, fn, fun, args):
    """(observation, None), or (None, what raised), with `fn` as piece `name` and every other
    piece minijit's own; NumPy's warnings off (NaN and inf are values of these programs)."""
    from minijit import build
    from minijit.grading.primitive_probes import own_pieces
    try:
        with own_pieces(), build.use(name, fn, verify=False), np.errstate(all="ignore"):
            return _observe(name, fun, args), None
    except Exception as e:  # noqa: BLE001 - a failing piece is a finding, not a crash
        return None, f"{type(e).__name__}: {str(e).strip().splitlines()[0][:300]}"


def _verdict(name: str, fn, fun, args) -> str | None:
    """What differs on `fun(*args)`, in words; None if nothing (or minijit's own raises)."""
    import minijit as mj
    from minijit import build
    from minijit.ir import pp_eqn_rules
    reference = build.PIECES[name].reference
    own, own_error = _run(name, reference, fun, args)
    if own_error is not None:
        return None
    closed = mj.make_jaxpr(fun)(*args)
    if name == "pp_jaxpr" and any(e.primitive in pp_eqn_rules for j in _jaxprs(closed.jaxpr)
                                  for e in j.eqns):
        return None  # chapter 03's printer knows the default layout only
    mine, error = _run(name, fn, fun, args)
    if error is not None:
        return f"yours raised {error}"
    if name == "loop_nest":  # minijit's answers to the same questions
        own = [(s, o, _nest(reference(s, o))) for s, o, _ in mine]
    if mine == own or name == "pp_jaxpr" and mine == " ".join(_text(closed, 1 << 30).split()):
        return None  # the printer's layout is free: minijit's, or all on one line
    if isinstance(own, str):  # where the texts part, and the text before it
        k = next((i for i, ab in enumerate(zip(mine, own)) if ab[0] != ab[1]), len(own))
        mine, own = (f"...{t[max(0, k - 150):k + 50]}..." for t in (mine, own))
    pair = (mine, own) if isinstance(own, str) else next(
        ((a, b) for a, b in zip(mine, own) if a != b), (mine, own))
    return f"yours: {str(pair[0])[:2000]}\nminijit's own: {str(pair[1])[:2000]}"


def _check_cache_key(fn, seeds: range) -> str | None:
    """Do two calls `f(a, b, n)` (n static) share a key under `fn` exactly when they do
    under minijit's own? The calls come from a pool, drawn per seed."""
    from minijit import build
    from minijit.arguments import ArgSpec, split_args
    spec = ArgSpec.make(lambda a, b, n: a, static_argnums=2)
    for seed in seeds:
        rng = np.random.default_rng(seed)
        z = np.zeros(tuple(int(n) for n in rng.integers(1, 4, int(rng.integers(0, 3)))))
        pool = {"zeros": z, "ones": z + 1, "zeros(float32)": z.astype("f4"), "1.0": 1.0,
                "zeros(more)": np.zeros((*z.shape, 2)), "2.5": 2.5, "1": 1, "True": True,
                "np.float64(1.0)": np.float64(1.0), "np.array(1.0)": np.array(1.0),
                "np.int32(1)": np.int32(1), "(zeros, 1.0)": (z, 1.0), "[zeros, 1.0]": [z, 1.0],
                "{'p': zeros, 'q': 1.0}": {"p": z, "q": 1.0}, "{'p': 1.0}": {"p": 1.0}}
        statics = {"1": 1, "2": 2, "1.0": 1.0, "True": True, "'a'": "a", "(1, 2)": (1, 2)}
        calls = []
        for _ in range(24):
            (a, b), n = map(str, rng.choice(list(pool), 2)), str(rng.choice(list(statics)))
            keyword = bool(rng.random() < 0.3)
            calls.append((f"f({a}, {b}, {'n=' * keyword}{n})", (pool[a], pool[b]) + (
                () if keyword else (statics[n],)), {"n": statics[n]} if keyword else {}))
        splits = [split_args(spec, args, kwargs) for _, args, kwargs in calls]
        own, _ = _run("cache_key", build.PIECES["cache_key"].reference, None, splits)
        mine, error = _run("cache_key", fn, None, splits)
        try:
            pairs = [(i, j) for j in range(len(calls)) for i in range(j)
                     if (mine[i] == mine[j]) != (own[i] == own[j])]
        except Exception as e:  # noqa: BLE001 - a failing piece (or its keys) is a finding
            error = error or f"{type(e).__name__}: {e}"
        if error:
            return f"your cache_key raised {error}"
        if pairs:  # the first pair of calls it keys wrongly
            (i, j), same = pairs[0], bool(own[pairs[0][0]] == own[pairs[0][1]])
            return (f"your cache_key gives these two calls {'different' if same else 'equal'} "
                    f"keys, where minijit's gives them {'equal' if same else 'different'} ones "
                    f"(f(a, b, n), n static; zeros is np.zeros({z.shape})):\n  {calls[i][0]}"
                    f"\n  {calls[j][0]}")
    return None


def _smaller(p: Program):
    """Programs a little smaller than `p`: fewer outputs or lines (halves first), smaller."""
    for k in range(len(p.outputs) if len(p.outputs) > 1 else 0):
        yield replace(p, outputs=p.outputs[:k] + p.outputs[k + 1:])
    lines = {line.split(" = ")[0]: line for line in p.lines}
    for k, out in enumerate(p.outputs):  # an output replaced by a value its line reads
        for read in dict.fromkeys(re.findall(r"\b[xyz]\b|\bv\d+\b", lines.get(out, "")[3:])):
            yield replace(p, outputs=(*p.outputs[:k], read, *p.outputs[k + 1:]))
    n = size = len(p.lines)
    while size > 1:
        size //= 2
        for start in range(n - size, -1, -size):
            yield replace(p, lines=p.lines[:start] + p.lines[start + size:])
    (r, c), same = p.shapes[0], p.shapes[1] == p.shapes[0]
    for r2, c2 in sorted({(1, c), (r, 1), (max(r - 1, 1), c), (r, max(c - 1, 1))} - {(r, c)}):
        yield replace(p, shapes=((r2, c2),) * 3 if same else ((r2, c2), (c2,), (r2, 1)))


def shrink(p: Program, fails) -> Program:
    """The smallest program reached from `p` by `_smaller` steps that each still `fails`."""
    tries = 0
    while tries < MAX_TRIES:
        for q in _smaller(p):
            tries += 1
            if tries > MAX_TRIES or fails(q):
                break
        else:
            return p  # no smaller program fails
        p = q if tries <= MAX_TRIES else p
    return p


def check_piece(name: str, fn, n_random: int = N_RANDOM, *, selftest: bool = True) -> str | None:
    """None when `fn`, as minijit's piece `name`, passes its selftest and decides as
    minijit's own on every program; else the message: what the selftest found, or the
    smallest failing program and how yours differs."""
    import minijit as mj
    from minijit import build
    from minijit.grading.primitive_probes import own_pieces
    from minijit.grading.programs import CONTROL_FLOW, PROGRAMS, make_args

    # the piece's small example first: a stub fails it (`selftest=False` skips it, for tests
    # of the programs' checks)
    problem = build.selftest(name, fn) if selftest else None
    if problem:
        return f"your {name} {problem} on minijit's small example for it"
    if name == "cache_key":
        return _check_cache_key(fn, range(n_random))
    for seed in range(n_random):
        p = random_program(seed)
        if _verdict(name, fn, p.fun(), p.args()):
            small = shrink(p, lambda q: _verdict(name, fn, q.fun(), q.args()) is not None)
            inputs = ", ".join(f"{v}: {small.dtype}{list(s)}" for v, s in zip("xyz", small.shapes))
            with own_pieces():
                jaxpr = _text(mj.make_jaxpr(small.fun())(*small.args()))
            return (f"your {name} differs from minijit's on a random program (seed {seed}), "
                    f"shrunk from {len(p.lines)} lines to {len(small.lines)}:\n\n"
                    f"{small.source()}\n\ncalled on {inputs} (values: np.random.default_rng("
                    f"{small.seed}).standard_normal); its jaxpr:\n{jaxpr}\n\n"
                    f"{_verdict(name, fn, small.fun(), small.args())}")
    catalogue = CONTROL_FLOW if name == "closure_convert" else {**PROGRAMS, **CONTROL_FLOW}
    for program, (fun, _) in catalogue.items():
        args = make_args(program, 0)
        problem = _verdict(name, fn, fun, args)
        if problem:
            with own_pieces():
                return (f"your {name} differs from minijit's on program {program!r} of "
                        f"minijit/grading/programs.py, whose jaxpr is\n"
                        f"{_text(mj.make_jaxpr(fun)(*args))}\n\n{problem}")
    return None


# --------------------------------------------------------------------------- the hidden case


def probe_properties(ns, piece, function):
    # a probe runs in the grader's kernel from its source: it imports what it uses
    import minijit.codegen.kernels  # noqa: F401 - registers loop_nest
    from minijit.grading.properties import check_piece

    problem = check_piece(piece, get(ns, function))
    if problem and "raised NotImplementedError" in problem:
        raise NotImplementedError(problem)  # the stub: not attempted yet
    return problem or "ok"


def property_case(exercise_id: str) -> Case:
    """The hidden case of a build exercise that its piece decides as minijit's own on the
    catalogue's programs and on random ones (`minijit.grading.properties`); a failure's
    message shows the smallest failing program."""
    piece, function = BUILD_PIECES[exercise_id]
    return Case(f"properties: {piece} decides as minijit's own on catalogue and random "
                "programs", (piece, function), probe=probe_properties, expected="ok")


def with_property_case(exercise):
    """`exercise`, with its property case last among its hidden cases if it is a build
    exercise (the registry loads every exercise through this, in the instructor's copy: the
    student release ships neither this module nor hidden cases)."""
    if exercise.id not in BUILD_PIECES or property_case(exercise.id) in exercise.hidden:
        return exercise
    return dataclasses.replace(exercise, hidden=(*exercise.hidden, property_case(exercise.id)))
