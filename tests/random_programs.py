"""Random minijit programs for differential tests of the optimizer (tests/test_passes.py).

`programs()` is a hypothesis strategy drawing a `RandomProgram`: the Python source of a function
over a few inputs of random shapes (broadcast-compatible, scalars and size-1 axes included) and
dtypes, the function itself, and its input arrays. The body is a list of `minijit.numpy` lines:
arithmetic (`// % **` included), comparisons, `where`, unary math, reductions with `axis` and
`keepdims`, reshapes, transposes, broadcasts, `astype`, literals chosen to trigger `simplify`
(0, 1, 2, -0.0, ...), repeated lines (for `cse`), values nobody returns (for `dce`), constants
built from `mnp.arange` / `mnp.ones` / closed-over NumPy arrays (for `fold_constants`),
`mj.debug.print`, and `lax.cond` / `lax.fori_loop` blocks whose bodies are drawn the same way.

While drawing, every line is traced as it is drawn: that gives the shape and dtype of each
name, so later lines only combine values that fit, and a line that raises is simply not kept
(a program that fails only when run, such as `-` on bools, is rejected as a whole). The source
is printed in hypothesis' failure report, so a failing example can be pasted and rerun.

Exactness: no pass reassociates floating-point arithmetic, so optimized programs must agree bit
for bit, except after power rewrites (`x**3 -> x*x*x`, `x**-2 -> 1/(x*x)`) which may differ
from `pow` in the last bit. Values touched by such a power are *inexact*; they only flow into
operations that keep a relative error small (products, quotients, max/min, shape changes, ...),
never into comparisons, floors, sums (cancellation) or casts to integers, and the outputs they
reach are listed in `RandomProgram.inexact` to be compared with a tight tolerance.
"""

from __future__ import annotations

import contextlib
import io
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from hypothesis import reject
from hypothesis import strategies as st

import minijit as mj
import minijit.numpy as mnp
from minijit import lax
from minijit.core import ShapedArray
from minijit.tracing import trace_to_jaxpr

DTYPES = ("bool", "int32", "int64", "float32", "float64")
LITERALS = (0, 1, 2, -1, 3, 0.0, -0.0, 1.0, 0.5, 2.0, True)
FLOAT_SPECIALS = (0.0, -0.0, 1.0, -1.0, 2.0, 0.5, -3.0, 0.25, 1.5, np.nan, np.inf, -np.inf)
MAX_TAINT = 2  # at most this many inexact power rewrites along any chain of values

# Operations that keep a small relative error small: inexact values may flow through them.
_TAINT_SAFE = {"neg", "abs", "mul", "div", "maximum", "minimum", "sqrt", "tanh", "square",
               "power", "rmax", "rmin", "reshape", "transpose", "broadcast", "expand",
               "where", "astype_float", "index", "negop", "doubleneg"}


@dataclass
class RandomProgram:
    """A drawn program: `fn(*args)` returns a tuple of outputs; `source` defines `fn`."""

    source: str
    fn: Callable[..., tuple]
    args: tuple[np.ndarray, ...]
    inexact: tuple[bool, ...]  # per output: reached by an inexact power rewrite

    def __repr__(self) -> str:
        args = ", ".join(
            f"np.array({a.tolist()!r}, dtype=np.{a.dtype.name})" for a in self.args)
        return f"RandomProgram(\n{self.source}\nargs=({args},)\ninexact={self.inexact})"

    def _repr_pretty_(self, printer, cycle) -> None:  # how hypothesis shows a failing example
        printer.text(repr(self))


@dataclass
class _Scope:
    """The names visible in one function body while drawing it."""

    env: dict[str, Any]  # traced values (and, as exec globals, mnp / lax / constants)
    names: list[str] = field(default_factory=list)
    taint: dict[str, int] = field(default_factory=dict)
    lines: list[str] = field(default_factory=list)
    exprs: list[tuple[str, str | None, int]] = field(default_factory=list)  # for repeats
    allow_inexact: bool = True
    depth: int = 0

    def child(self, allow_inexact: bool) -> _Scope:
        return _Scope(dict(self.env), list(self.names), dict(self.taint), [], [],
                      allow_inexact, self.depth + 1)


class _Counter:
    def __init__(self):
        self.n = 0

    def __call__(self, prefix: str) -> str:
        self.n += 1
        return f"{prefix}{self.n}"


def _shape(x) -> tuple[int, ...]:
    return tuple(np.shape(x))


def _dtype(x) -> np.dtype:
    return np.dtype(x.dtype)


def _is_array(x) -> bool:
    return hasattr(x, "shape") and hasattr(x, "dtype")


def _is_float(x) -> bool:
    return _dtype(x).kind == "f"


def broadcastable(a, b) -> bool:
    """Do shapes `a` and `b` broadcast together (NumPy's rules)?"""
    try:
        np.broadcast_shapes(a, b)
        return True
    except ValueError:
        return False


def _input_values(rng: np.random.Generator, shape, dtype: str) -> np.ndarray:
    if dtype == "bool":
        return rng.random(shape) < 0.5
    if dtype.startswith("int"):
        out = rng.integers(-5, 6, shape).astype(dtype)
        extremes = rng.random(shape) < 0.05  # overflow must wrap the same way everywhere
        info = np.iinfo(dtype)
        return np.where(extremes, rng.choice([info.min, info.max], shape), out).astype(dtype)
    values = rng.uniform(-4, 4, shape)
    special = rng.choice(np.array(FLOAT_SPECIALS), shape)
    return np.where(rng.random(shape) < 0.3, special, values).astype(dtype)


def _lit(v) -> str:
    return "-0.0" if isinstance(v, float) and np.signbit(v) and v == 0 else repr(v)


# --------------------------------------------------------------------------- one line


def _run(scope: _Scope, code: str) -> bool:
    """Run `code` (under the drawing trace) in the scope; False if it raises."""
    with contextlib.redirect_stdout(io.StringIO()), np.errstate(all="ignore"):
        try:
            exec(code, scope.env)
        except Exception:
            return False
    return True


def _emit(scope: _Scope, new, rhs: str, taint: int, swapped: str | None = None) -> str | None:
    """Try `name = rhs`; keep it (with its taint) if it runs and gives an array."""
    name = new("v")
    if not _run(scope, f"{name} = {rhs}"):
        return None
    if not _is_array(scope.env[name]) or int(np.prod(_shape(scope.env[name]))) > 256:
        del scope.env[name]
        return None
    if not _is_float(scope.env[name]):
        taint = 0  # inexact values never reach an integer (see the module docstring)
    scope.lines.append(f"{name} = {rhs}")
    scope.names.append(name)
    scope.taint[name] = taint
    scope.exprs.append((rhs, swapped, taint))
    return name


def _pick(draw, scope: _Scope, ok=lambda name: True) -> str | None:
    candidates = [n for n in scope.names if ok(n)]
    if not candidates:
        return None
    return candidates[draw(st.integers(0, len(candidates) - 1))]


def _exact(scope: _Scope):
    return lambda n: scope.taint[n] == 0 or not _is_float(scope.env[n])


def _allowed(scope: _Scope, op: str):
    """Which names may be operands of `op`: inexact ones only for taint-safe operations."""
    return (lambda n: True) if op in _TAINT_SAFE else _exact(scope)


_UNARY = {
    "neg": "mnp.negative({})", "abs": "mnp.abs({})", "sign": "mnp.sign({})",
    "floor": "mnp.floor({})", "ceil": "mnp.ceil({})", "sin": "mnp.sin({})",
    "cos": "mnp.cos({})", "tanh": "mnp.tanh({})", "exp": "mnp.exp(mnp.tanh({}))",
    "log": "mnp.log(mnp.abs({}) + 1.0)", "log1p": "mnp.log1p(mnp.abs({}))",
    "expm1": "mnp.expm1(mnp.minimum({}, 3.0))", "sqrt": "mnp.sqrt(mnp.abs({}))",
    "square": "mnp.square({})", "invert": "~{}", "logical_not": "mnp.logical_not({})",
    "isnan": "mnp.isnan({})", "negop": "-{}", "doubleneg": "-(-{})",
}
_BINARY = {
    "add": ("{} + {}", True), "sub": ("{} - {}", False), "mul": ("{} * {}", True),
    "div": ("{} / {}", False), "floordiv": ("{} // {}", False), "mod": ("{} % {}", False),
    "maximum": ("mnp.maximum({}, {})", True), "minimum": ("mnp.minimum({}, {})", True),
    "lt": ("{} < {}", False), "le": ("{} <= {}", False), "eq": ("{} == {}", True),
    "ne": ("{} != {}", True), "gt": ("{} > {}", False), "ge": ("{} >= {}", False),
    "and": ("{} & {}", True), "or": ("{} | {}", True), "xor": ("{} ^ {}", True),
    "logical_and": ("mnp.logical_and({}, {})", True),
}
_REDUCTIONS = {"rsum": "mnp.sum", "rprod": "mnp.prod", "rmax": "mnp.max", "rmin": "mnp.min",
               "rmean": "mnp.mean", "argmax": "mnp.argmax"}


def _unary(draw, scope, new):
    op = draw(st.sampled_from(sorted(_UNARY)))
    x = _pick(draw, scope, _allowed(scope, op))
    if x is None:
        return
    _emit(scope, new, _UNARY[op].format(x), scope.taint[x])


def _binary(draw, scope, new):
    op = draw(st.sampled_from(sorted(_BINARY)))
    template, commutative = _BINARY[op]
    ok = _allowed(scope, op)
    x = _pick(draw, scope, ok)
    if x is None:
        return
    if draw(st.integers(0, 2)) == 0:  # a Python literal on one side
        lit = _lit(draw(st.sampled_from(LITERALS)))
        args = (x, lit) if draw(st.booleans()) else (lit, x)
        taint = scope.taint[x]
    else:
        def fits(n):
            return broadcastable(_shape(scope.env[x]), _shape(scope.env[n])) and ok(n)

        y = _pick(draw, scope, fits)
        if y is None:
            return
        args = (x, y)
        taint = max(scope.taint[x], scope.taint[y])
    rhs = template.format(*args)
    swapped = template.format(*args[::-1]) if commutative else None
    _emit(scope, new, rhs, taint, swapped)


def _power(draw, scope, new):
    x = _pick(draw, scope)
    if x is None:
        return
    k = draw(st.sampled_from((0, 1, 2, 3, 4, -1, -2, "2.0", "3.0", "y")))
    taint = scope.taint[x]
    if k == "y":  # pow with an array exponent: never rewritten, so exact, but no ints
        y = _pick(draw, scope, lambda n: _is_float(scope.env[n]) and broadcastable(
            _shape(scope.env[x]), _shape(scope.env[n])))
        if y is None or not _is_float(scope.env[x]):
            return
        if scope.taint[x] or scope.taint[y]:
            return  # x**y is not continuous enough in y to keep a relative error small
        _emit(scope, new, f"mnp.power(mnp.abs({x}) + 0.5, {y})", 0)
        return
    inexact = str(k) not in ("0", "1", "2", "-1", "2.0")
    if inexact and _is_float(scope.env[x]):
        if not scope.allow_inexact or taint + 1 > MAX_TAINT:
            return
        taint += 1
    if isinstance(k, int) and k < 0 and not _is_float(scope.env[x]):
        return
    _emit(scope, new, f"{x} ** {k}", taint)


def _where(draw, scope, new):
    c = _pick(draw, scope, _exact(scope))
    if c is None:
        return
    cond = c if _dtype(scope.env[c]) == np.bool_ else f"{c} > 0"
    x = _pick(draw, scope)
    if x is None:
        return
    if draw(st.booleans()):
        y, taint = _lit(draw(st.sampled_from(LITERALS))), scope.taint[x]
    else:
        y = _pick(draw, scope)
        taint = max(scope.taint[x], scope.taint[y])
    _emit(scope, new, f"mnp.where({cond}, {x}, {y})", taint)


def _reduction(draw, scope, new):
    op = draw(st.sampled_from(sorted(_REDUCTIONS)))
    x = _pick(draw, scope, _allowed(scope, op))
    if x is None:
        return
    ndim = len(_shape(scope.env[x]))
    choices = ["None"] + [str(a) for a in range(-ndim, ndim)]
    if ndim >= 2:
        choices.append("(0, -1)")
    axis = draw(st.sampled_from(choices))
    if op == "argmax":
        if axis.startswith("("):
            axis = "None"
        keep = ", keepdims=True" if draw(st.booleans()) else ""
        _emit(scope, new, f"mnp.argmax({x}, axis={axis}{keep})", 0)
        return
    keep = draw(st.booleans())
    _emit(scope, new, f"{_REDUCTIONS[op]}({x}, axis={axis}, keepdims={keep})",
          scope.taint[x])


def _shape_op(draw, scope, new):
    x = _pick(draw, scope)
    if x is None:
        return
    shape = _shape(scope.env[x])
    size = int(np.prod(shape))
    kind = draw(st.sampled_from(("reshape", "transpose", "broadcast", "expand", "squeeze",
                                 "index")))
    if kind == "reshape":
        target = draw(st.sampled_from([(-1,), (1, size), (*shape, 1), (1, *shape),
                                       tuple(reversed(shape))]))
        rhs = f"mnp.reshape({x}, {target})"
    elif kind == "transpose":
        perm = draw(st.permutations(range(len(shape))))
        rhs = f"mnp.transpose({x}, {tuple(perm)})"
    elif kind == "broadcast":
        others = [_shape(scope.env[n]) for n in scope.names]
        target = draw(st.sampled_from(others + [(2, *shape)]))
        try:
            target = tuple(np.broadcast_shapes(shape, target))
        except ValueError:
            return
        rhs = f"mnp.broadcast_to({x}, {target})"
    elif kind == "expand":
        rhs = f"mnp.expand_dims({x}, {draw(st.integers(0, len(shape)))})"
    elif kind == "squeeze":
        rhs = f"mnp.squeeze({x})"
    else:
        if not shape:
            return
        rhs = draw(st.sampled_from([f"{x}[0]", f"{x}[::-1]", f"{x}[..., -1]", f"{x}[1:]"]))
    _emit(scope, new, rhs, scope.taint[x])


def _astype(draw, scope, new):
    dtype = draw(st.sampled_from(DTYPES))
    x = _pick(draw, scope, _allowed(scope, "astype_float" if dtype.startswith("float")
                                    else "astype"))
    if x is None:
        return
    _emit(scope, new, f"{x}.astype(mnp.{dtype})", scope.taint[x])


def _constant(draw, scope, new):
    """A value that does not depend on the inputs: constant folding's work."""
    shapes = [_shape(scope.env[n]) for n in scope.names] or [()]
    shape = shapes[draw(st.integers(0, len(shapes) - 1))]
    dtype = draw(st.sampled_from(DTYPES))
    kind = draw(st.sampled_from(("arange", "ones", "full", "numpy", "scalar")))
    if kind == "arange":
        n = shape[-1] if shape else 1
        rhs = f"mnp.arange({n}, dtype=mnp.{dtype}) * 2 + 1"
    elif kind == "ones":
        rhs = f"mnp.ones({shape}, mnp.{dtype})"
    elif kind == "full":
        rhs = f"mnp.full({shape}, {_lit(draw(st.sampled_from(LITERALS)))}, mnp.{dtype})"
    elif kind == "scalar":
        rhs = f"mnp.asarray({draw(st.integers(-3, 3))}, mnp.{dtype}) * 3"
    else:
        name = new("k")
        values = np.random.default_rng(len(scope.names)).integers(-3, 4, shape)
        scope.env[name] = values.astype(dtype)
        scope.env["__consts__"][name] = scope.env[name]
        rhs = f"mnp.sin({name}) + 1" if draw(st.booleans()) else f"({name} * 2)"
    _emit(scope, new, rhs, 0)


def _repeat(draw, scope, new):
    """The same expression again (or with a commutative op's operands swapped): for cse."""
    if not scope.exprs:
        return
    rhs, swapped, taint = scope.exprs[draw(st.integers(0, len(scope.exprs) - 1))]
    if swapped is not None and draw(st.booleans()):
        rhs = swapped
    _emit(scope, new, rhs, taint)


def _print(draw, scope, new):
    x = _pick(draw, scope, _exact(scope))
    if x is None:
        return
    label = new("p")
    if _run(scope, f"mj.debug.print('{label} {{}}', {x})"):
        scope.lines.append(f"mj.debug.print('{label} {{}}', {x})")


def _coerce(scope: _Scope, name: str, shape, dtype: np.dtype) -> tuple[str, int] | None:
    """An expression of exactly `shape` and `dtype` made from `name` (for branch/carry types)."""
    value = scope.env[name]
    if dtype.kind != "f" and scope.taint[name] and _is_float(value):
        return None
    cast = f"mnp.astype({name}, mnp.{dtype.name})"
    if not broadcastable(_shape(value), shape) or len(_shape(value)) > len(shape):
        cast = f"mnp.astype(mnp.sum({name}), mnp.{dtype.name})"
        if scope.taint[name] and _is_float(value):
            return None  # a sum may cancel: not for inexact values
    return f"mnp.broadcast_to({cast}, {tuple(shape)})", scope.taint[name]


def _body_outputs(draw, scope: _Scope, types) -> tuple[list[str], int] | None:
    outs, taint = [], 0
    for shape, dtype in types:
        candidates = [n for n in scope.names if _coerce(scope, n, shape, dtype) is not None]
        if candidates and draw(st.integers(0, 4)):
            expr, t = _coerce(scope, candidates[draw(st.integers(0, len(candidates) - 1))],
                              shape, dtype)
        else:
            expr, t = f"mnp.zeros({tuple(shape)}, mnp.{dtype.name})", 0
        outs.append(expr)
        taint = max(taint, t)
    return outs, taint


def _cond(draw, scope, new):
    if scope.depth >= 2:
        return
    p = _pick(draw, scope, _exact(scope))
    operands = [_pick(draw, scope) for _ in range(draw(st.integers(1, 2)))]
    if p is None or None in operands:
        return
    fname = new("f")
    bodies, out_types, out_taint = [], None, 0
    for branch in ("true", "false"):
        sub = scope.child(scope.allow_inexact)
        params = [new("c") for _ in operands]
        for c, o in zip(params, operands):
            sub.env[c] = scope.env[o]
            sub.names.append(c)
            sub.taint[c] = scope.taint[o]
        _draw_lines(draw, sub, new, draw(st.integers(1, 4)))
        if out_types is None:
            picks = [_pick(draw, sub) for _ in range(draw(st.integers(1, 2)))]
            out_types = [(_shape(sub.env[n]), _dtype(sub.env[n])) for n in picks]
        outs, t = _body_outputs(draw, sub, out_types)
        out_taint = max(out_taint, t)
        bodies.append(_function(f"{fname}_{branch}", params, sub.lines, outs))
    outs = [new("v") for _ in out_types]
    pred = f"mnp.sum({p}) > 0" if draw(st.booleans()) else f"mnp.sum({p}) <= 0"
    call = f"{', '.join(outs)}, = lax.cond({pred}, {fname}_true, {fname}_false, " \
           f"{', '.join(operands)})"
    _block(scope, bodies, call, outs, out_taint)


def _fori(draw, scope, new):
    if scope.depth >= 2:
        return
    exact = not scope.allow_inexact or draw(st.booleans())
    carry = [_pick(draw, scope, _exact(scope) if exact else lambda n: True)
             for _ in range(draw(st.integers(1, 2)))]
    if None in carry:
        return
    fname, i, packed = new("f"), new("i"), new("carry")
    sub = scope.child(allow_inexact=not exact)
    sub.names.append(i)
    sub.taint[i] = 0
    params = [new("c") for _ in carry]
    for c, o in zip(params, carry):
        sub.env[c] = scope.env[o]
        sub.names.append(c)
        sub.taint[c] = 0 if exact else 1
    sub.env[i] = mnp.asarray(np.int64(0))
    _draw_lines(draw, sub, new, draw(st.integers(1, 4)))
    types = [(_shape(scope.env[o]), _dtype(scope.env[o])) for o in carry]
    outs, _ = _body_outputs(draw, sub, types)
    lines = [f"{', '.join(params)}, = {packed}", *sub.lines]
    body = _function(fname, [i, packed], lines, outs)
    results = [new("v") for _ in carry]
    n = draw(st.integers(0, 3))
    call = f"{', '.join(results)}, = lax.fori_loop(0, {n}, {fname}, ({', '.join(carry)},))"
    _block(scope, [body], call, results, 0 if exact else MAX_TAINT)


def _function(name: str, params: list[str], lines: list[str], outs: list[str]) -> list[str]:
    return [f"def {name}({', '.join(params)}):", *[f"    {ln}" for ln in lines],
            f"    return ({', '.join(outs)},)"]


def _block(scope: _Scope, defs: list[list[str]], call: str, outs: list[str], taint: int):
    code = [ln for d in defs for ln in d] + [call]
    if not _run(scope, "\n".join(code)):
        return
    if not all(_is_array(scope.env[o]) for o in outs):
        return
    scope.lines.extend(code)
    for o in outs:
        scope.names.append(o)
        scope.taint[o] = taint if _is_float(scope.env[o]) else 0


_STEPS = {
    "unary": (_unary, 4), "binary": (_binary, 8), "power": (_power, 2), "where": (_where, 2),
    "reduction": (_reduction, 3), "shape": (_shape_op, 3), "astype": (_astype, 2),
    "constant": (_constant, 3), "repeat": (_repeat, 3), "print": (_print, 2),
    "cond": (_cond, 2), "fori": (_fori, 2),
}
_WEIGHTED = [name for name, (_, w) in _STEPS.items() for _ in range(w)]


def _draw_lines(draw, scope: _Scope, new, n: int) -> None:
    for _ in range(n):
        _STEPS[draw(st.sampled_from(_WEIGHTED))][0](draw, scope, new)


# --------------------------------------------------------------------------- the strategy


@st.composite
def input_specs(draw, max_inputs: int = 3) -> list[tuple[tuple[int, ...], str]]:
    """Shapes that broadcast together (each a suffix of one base shape, some axes 1)."""
    base = draw(st.lists(st.integers(1, 4), min_size=0, max_size=3))
    specs = []
    for _ in range(draw(st.integers(1, max_inputs))):
        rank = draw(st.integers(0, len(base)))
        shape = tuple(1 if draw(st.integers(0, 3)) == 0 else d
                      for d in base[len(base) - rank:])
        specs.append((shape, draw(st.sampled_from(DTYPES))))
    return specs


@st.composite
def programs(draw, max_lines: int = 14, control_flow: bool = True,
             prints: bool = True) -> RandomProgram:
    specs = draw(input_specs())
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    args = tuple(_input_values(rng, shape, dtype) for shape, dtype in specs)
    new = _Counter()
    inputs = [f"a{k}" for k in range(len(args))]
    env: dict[str, Any] = {"mnp": mnp, "lax": lax, "mj": mj, "np": np, "__consts__": {}}
    scope = _Scope(env)
    steps = dict(_STEPS)
    if not control_flow:
        steps.pop("cond"), steps.pop("fori")
    if not prints:
        steps.pop("print")
    weighted = [name for name, (_, w) in steps.items() for _ in range(w)]

    def draw_lines(*tracers):
        for name, t in zip(inputs, tracers):
            env[name] = t
            scope.names.append(name)
            scope.taint[name] = 0
        for _ in range(draw(st.integers(2, max_lines))):
            steps[draw(st.sampled_from(weighted))][0](draw, scope, new)
        return ()

    # Each line runs as it is drawn, under one trace: its shape and dtype are what the program
    # will have under `make_jaxpr` (eager arrays would follow NumPy's operators instead).
    trace_to_jaxpr(draw_lines, [ShapedArray(a.shape, a.dtype) for a in args], inputs)

    # Outputs: the last value, maybe a few others; whatever is not returned is dead code.
    outs = [scope.names[-1]]
    for _ in range(draw(st.integers(0, 2))):
        outs.append(_pick(draw, scope))
    if draw(st.integers(0, 9)) == 0:
        outs.append("2.5")  # a literal output
    source = "\n".join(_function("program", inputs, scope.lines, outs))
    consts = env["__consts__"]
    namespace: dict[str, Any] = {"mnp": mnp, "lax": lax, "mj": mj, "np": np, **consts}
    exec(source, namespace)
    inexact = tuple(scope.taint.get(o, 0) > 0 for o in outs)
    program = RandomProgram(source, namespace["program"], args, inexact)
    # Some errors only show when running (NumPy has no `-` for bools): drop those programs.
    with contextlib.redirect_stdout(io.StringIO()), np.errstate(all="ignore"):
        closed = mj.make_jaxpr(program.fn)(*args)  # (eager constants compute with NumPy)
        try:
            mj.eval_jaxpr(closed.jaxpr, closed.consts, *args)
        except mj.interpret.EvalError:
            reject()
    return program
