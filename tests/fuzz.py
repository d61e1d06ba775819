"""A random-program fuzzer for minijit: programs the catalogue does not have, run every way.

Each program is drawn by a plain `random.Random` from a seed and an index, so program `i` of
seed `S` is the same on every machine and can be drawn alone. It is printable Python source
(`FuzzProgram.reproducer()` is a script that can be pasted and run) and is aimed at what
tests/catalogue.py and tests/random_programs.py leave out:

- views (reshape, transpose, `.T`, slices with negative steps, squeeze, expand_dims,
  broadcast_to) feeding elementwise operations that code generation may compute in place;
- `lax.cond` / `lax.scan` / `lax.while_loop` / `lax.fori_loop` passing operands and carries
  straight through, loops whose carries start as (and stay) one array, the same array passed
  as two arguments (or an argument and a view of it);
- bool arithmetic (`b + b`, `b * b`, sums of bools), integer edge values (int64 min and max,
  0, -1, large exponents, `//` and `%` by -1 and by 0), uint8 / int8 with Python scalars,
  floats with nan, inf and -0.0, 0-d and empty arrays;
- arguments in every layout of `aliasing.LAYOUTS`: Fortran order, strided, negative strides,
  views into bigger buffers, read-only and big-endian;
- reductions over every axis set of arrays with rows (up to rank 4), composed with an
  elementwise op of their input and reduced again over the same axes (`_reduce_compose`: the
  kernels the code generator runs as one loop over the rows, var and layer norm included);
- `lax.dynamic_slice` / `dynamic_update_slice` with negative, out-of-range and unsigned starts,
  constant or traced (the reference is JAX's rule, `_start`, which minijit/indexing.py states
  and tests/test_dynamic_index.py checks against JAX itself);
- loop bodies that read closed-over arrays with size-1 axes through `where`; fori_loops whose
  index is typed by traced int32 / int8 / uint8 bounds; carries that start as Python scalars
  (weakly typed) and come back strong.

How a program is checked (`run_program`). The reference is NumPy itself: the same source run
with `mnp` bound to NumPy (`NUMPY_SHIM`, which adds minijit's one deliberate difference: float
functions of ints and bools compute in float64) and `lax` bound to Python loops (`LAX_SHIM`).
Then `jit(program, backend=...)` on each backend, and the program run eagerly under
`disable_jit`, are called on the arguments and on a second set with the same types (each
array's values rolled by one), and must agree with NumPy:

- shapes and dtypes exactly; ints and bools bit for bit; floats bit for bit too (any NaN
  equals any NaN), except outputs marked inexact, compared with a relative tolerance.
  A float is inexact where NumPy and Numba may legitimately differ in the last bits: after a
  transcendental function, a power other than 0, 1, 2, a float sum / mean / matmul (summation
  order, BLAS) or max / min (which zero, 0.0 or -0.0, comes out is unspecified). Inexact
  values only flow on through operations that keep a relative error small (`*`, `/` as the
  numerator, `-x`, `abs`, `sqrt`, views, max/min, `where` data), never into comparisons,
  `+`/`-` (cancellation), floors, sums or casts to integers; so every int and bool is exact.
- Integer division by zero follows NumPy (`x // 0 == 0`, `x % 0 == 0`, as minijit documents;
  see the catalogue's `int_division_by_zero`), and so does overflow: it wraps, including
  `int64_min // -1 == int64_min`. Floats are cast to ints only after a `where`/`clip` that
  makes them finite and in range (C leaves other casts undefined).
- Where NumPy raises (`-bool_array`, a reduction of an empty array without identity,
  `int ** -1`), minijit must raise an exception of the same family (TypeError, ValueError,
  OverflowError, IndexError).
  Not drawn, being deliberate differences: Python ints outside an int array's dtype
  (minijit wraps them, as JAX does; NumPy raises, or compares exactly), Python ints beyond
  int64 (minijit raises, as JAX), `int ** -1` of an empty array (NumPy raises only when
  there is an element), int array exponents (NumPy raises value by value), powers of bools
  (NumPy: int8 for `b ** 2`, int64 for `b ** 3`; minijit int8; JAX 0.10.2 int32 for both),
  matmul beyond 2-D (minijit's documented limit), and any statement whose dtype under JAX's
  promotion lattice, which minijit follows, differs from NumPy's (`float32 + int32` is
  float32, and a weak float stays weak): the drawing step runs each statement eagerly in
  minijit to know (`_Draw._same_types_as_jax`), and tests/test_promotion.py checks the
  lattice itself against JAX's own table.
  Big-endian arguments: minijit rejects them with a TypeError that names the dtype (as JAX
  0.10.2 does, eagerly and under jit); the fuzzer accepts exactly that.
- The aliasing harness (tests/aliasing.py, `distinct_outputs=True`) finds no violation; under
  `disable_jit`, where a value passed straight through is the argument itself (as in JAX),
  no input is written and no output changes after it was returned.

Command line, for campaigns (prints progress, each failing program's reproducer with its
seed and index, a summary of failures by kind; exits 1 if any program failed)::

    python tests/fuzz.py --seed 0 -n 1000                  # every backend
    python tests/fuzz.py --seed 7 -n 200 --backend numba
    python tests/fuzz.py --seed 7 --index 42 --show        # one program: its source, result

Failing programs are shrunk (statements, outputs and argument layouts dropped while the same
failure remains) unless `--no-shrink`. `HYPOTHESIS_PROFILE` does not apply: the fuzzer has no
hypothesis in it. tests/test_fuzz.py runs 100 programs of one fixed seed in the suite.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import itertools
import os
import random
import re
import sys
import tempfile
import time
import types
import warnings
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))  # `python tests/fuzz.py` imports the harness
from aliasing import LAYOUTS, check_aliasing, in_layout  # noqa: E402
from random_programs import broadcastable  # noqa: E402

import minijit as mj  # noqa: E402
import minijit.numpy as mnp  # noqa: E402
from minijit import lax  # noqa: E402

# Each program runs under jit on every backend (the LLVM one hands what it cannot compile to
# Numba), and eagerly under `disable_jit`, where JAX runs loops as Python loops (a
# fori_loop's index is then a Python int).
BACKENDS = ("interpreter", "numba", "llvm", "disable_jit")


def compiled(fn: Callable, backend: str) -> Callable:
    """`fn` jitted on `backend`, or run eagerly under `disable_jit`."""
    if backend != "disable_jit":
        return mj.jit(fn, backend=backend)

    def eager(*args):
        with mj.disable_jit():
            return fn(*args)

    return eager

# --------------------------------------------------------------------------- the NumPy reference


def _float_function(fn):
    """minijit's float functions compute ints and bools as JAX's do: in float32, or float64
    for int64 and uint64 (NumPy: float16 for int8 and bool)."""
    def wrapped(x):
        if isinstance(x, np.ndarray | np.generic) and x.dtype.kind in "biu":
            x = np.asarray(x, np.float64 if x.dtype.itemsize == 8 else np.float32)
        return fn(x)

    return wrapped


NUMPY_SHIM = types.SimpleNamespace(**{k: getattr(np, k) for k in dir(np) if not k.startswith("_")})
for _name in ("exp", "log", "log1p", "expm1", "sin", "cos", "tan", "tanh", "sqrt"):
    setattr(NUMPY_SHIM, _name, _float_function(getattr(np, _name)))


def _scan(f, init, xs, length=None):
    carry, ys = init, []
    for x in (xs if xs is not None else [None] * length):
        carry, y = f(carry, x)
        ys.append(y)
    return carry, (np.stack(ys) if ys and ys[0] is not None else None)


def _while_loop(cond_fun, body_fun, val):
    while cond_fun(val):
        val = body_fun(val)
    return val


def _fori_loop(lower, upper, body_fun, val):
    # The index as JAX traces it: with Python int bounds a weak int (a Python int here), with
    # traced bounds their dtype. (The fuzzer draws no concrete NumPy-scalar bound, which JAX
    # turns into a Python int.)
    typed = isinstance(lower, np.generic | np.ndarray) or isinstance(upper, np.generic | np.ndarray)
    dtype = np.result_type(lower, upper) if typed else None
    for i in range(int(lower), int(upper)):
        val = body_fun(dtype.type(i) if typed else i, val)
    return val


def _start(start, dim: int, size: int) -> int:
    """JAX's rule for a dynamic start (minijit/indexing.py states it): a negative signed
    start counts from the end, then the start is clamped so that the window fits."""
    start = int(start)  # an unsigned start is never negative
    if start < 0:
        start += dim
    return min(max(start, 0), dim - size)


def _dynamic_slice(x, starts, sizes):
    x = np.asarray(x)
    at = [_start(s, d, n) for s, d, n in zip(starts, x.shape, sizes)]
    return x[tuple(slice(a, a + n) for a, n in zip(at, sizes))].copy()


def _dynamic_update_slice(x, update, starts):
    x, update = np.array(x), np.asarray(update)
    at = [_start(s, d, n) for s, d, n in zip(starts, x.shape, update.shape)]
    x[tuple(slice(a, a + n) for a, n in zip(at, update.shape))] = update
    return x


LAX_SHIM = types.SimpleNamespace(
    cond=lambda pred, true_fun, false_fun, *ops: true_fun(*ops) if pred else false_fun(*ops),
    scan=_scan, while_loop=_while_loop, fori_loop=_fori_loop, dynamic_slice=_dynamic_slice,
    dynamic_update_slice=_dynamic_update_slice)

# --------------------------------------------------------------------------- programs

DTYPES = ("bool_", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64",
          "float32", "float64")
_DTYPE_WEIGHTS = (4, 2, 3, 1, 1, 2, 1, 3, 1, 2, 5)
BASE_SHAPES = ((), (1,), (3,), (0,), (6,), (2, 3), (3, 1), (1, 3), (2, 0), (2, 2, 3), (1, 2, 1),
               (3, 4), (2, 3, 4), (2, 3, 2, 2))
INT_LITERALS = (0, 1, -1, 2, 3, 7, 63, 127, 128, 255, 256, -128, -129, 2**31 - 1, 2**31,
                2**63 - 1, -2**63, 2**64 - 1)
FLOAT_LITERALS = ("0.0", "-0.0", "0.5", "1.5", "-2.0", "1e300", "1e-310", "mnp.nan", "mnp.inf",
                  "-mnp.inf")
FLOAT_EDGES = (0.0, -0.0, 1.0, -1.0, 0.5, -2.5, np.nan, np.inf, -np.inf, 1e308, -1e308, 5e-324,
               1e-300, 3.0)


@dataclass
class Input:
    name: str
    value: Any  # a NumPy array (C order) or a Python scalar
    layout: str = "c"
    alias_of: str | None = None  # this argument is another one, or a view of it
    alias_expr: str = "{}"  # how: "{}" (the same object), "{}[::-1]", ...

    def is_array(self) -> bool:
        return isinstance(self.value, np.ndarray)


@dataclass
class Stmt:
    lines: list[str]
    defines: list[str]


@dataclass
class FuzzProgram:
    """One program: `inputs`, a body of statements, the names it returns."""

    seed: int
    index: int
    inputs: list[Input]
    body: list[Stmt]
    outputs: list[str]
    inexact: dict[str, bool]  # per defined name: may differ from NumPy in the last bits
    expect_error: bool = False  # the last statement raises in NumPy
    features: set[str] = field(default_factory=set)

    # -- source
    def source(self) -> str:
        params = ", ".join(i.name for i in self.inputs)
        lines = [f"def program({params}):"]
        lines += [f"    {ln}" for s in self.body for ln in s.lines]
        lines.append(f"    return ({''.join(o + ', ' for o in self.outputs)})")
        return "\n".join(lines)

    def args_source(self) -> str:
        lines = []
        for inp in self.inputs:
            if inp.alias_of is not None:
                lines.append(f"{inp.name} = {inp.alias_expr.format(inp.alias_of)}")
            elif inp.is_array():
                lines.append(f"{inp.name} = {_array_source(inp.value)}")
                if inp.layout != "c":
                    lines.append(f"{inp.name} = {LAYOUTS[inp.layout].format(inp.name)}"
                                 f"  # {inp.layout}")
            else:
                lines.append(f"{inp.name} = {inp.value!r}")
        lines.append(f"args = ({''.join(i.name + ', ' for i in self.inputs)})")
        return "\n".join(lines)

    def reproducer(self, backends=BACKENDS) -> str:
        return "\n".join([
            f"# minijit fuzz program: python tests/fuzz.py --seed {self.seed} "
            f"--index {self.index} --show",
            "import numpy as np", "import minijit as mj", "import minijit.numpy as mnp",
            "from minijit import lax", "", self.source(), "", self.args_source(),
            "with np.errstate(all='ignore'):",
            "    print('numpy', program(*args))  # with mnp = numpy, as tests/fuzz.py does",
            f"for backend in {tuple(b for b in backends if b != 'disable_jit')!r}:",
            "    print(backend, mj.jit(program, backend=backend)(*args))",
            *(["with mj.disable_jit():", "    print('disable_jit', program(*args))"]
              if "disable_jit" in backends else []), ""])

    # -- arguments
    def make_args(self, other: bool = False) -> tuple:
        """The arguments; `other=True`: the same types, each array's values rolled by one."""
        made: dict[str, Any] = {}
        for inp in self.inputs:
            if inp.alias_of is not None:
                made[inp.name] = eval(inp.alias_expr.format("a"), {"np": np},  # noqa: S307
                                      {"a": made[inp.alias_of]})
                continue
            value = inp.value
            if inp.is_array():
                value = np.roll(value.reshape(-1), 1).reshape(value.shape) if other else value
                value = in_layout(value.copy(), inp.layout)
            made[inp.name] = value
        return tuple(made[i.name] for i in self.inputs)

    def functions(self) -> tuple[Callable, Callable]:
        """(the program over minijit.numpy, the same source over NumPy)."""
        mine = {"mnp": mnp, "lax": lax, "np": np}
        ref = {"mnp": NUMPY_SHIM, "lax": LAX_SHIM, "np": np}
        exec(self.source(), mine)  # noqa: S102 - our own generated source
        exec(self.source(), ref)  # noqa: S102
        return mine["program"], ref["program"]

    def inexact_outputs(self) -> list[bool]:
        return [self.inexact.get(o, False) for o in self.outputs]


def _literal(x) -> str:
    if isinstance(x, bool | np.bool_):
        return repr(bool(x))
    if isinstance(x, int | np.integer):
        return repr(int(x))
    x = float(x)
    if np.isnan(x):
        return "np.nan"
    if np.isinf(x):
        return "np.inf" if x > 0 else "-np.inf"
    return repr(x)


def _array_source(a: np.ndarray) -> str:
    if a.size == 0:
        return f"np.zeros({a.shape!r}, np.{a.dtype.name})"
    items = ", ".join(_literal(x) for x in a.reshape(-1))
    if a.ndim == 0:
        return f"np.array({items}, np.{a.dtype.name})"
    reshape = f".reshape({a.shape!r})" if a.ndim > 1 else ""
    return f"np.array([{items}], np.{a.dtype.name}){reshape}"


# --------------------------------------------------------------------------- drawing programs


@dataclass
class _Value:
    name: str
    ref: Any  # its value in the NumPy run on the arguments
    other: Any  # ... and on the other arguments
    exact: bool
    scalar: bool = False  # a Python scalar argument (weakly typed)

    @property
    def shape(self) -> tuple[int, ...]:
        return np.shape(self.ref)

    @property
    def dtype(self) -> np.dtype:
        return np.asarray(self.ref).dtype

    @property
    def is_float(self) -> bool:
        return self.dtype.kind == "f"


class _Draw:
    """The state while drawing one program: the values defined so far, in both NumPy runs."""

    def __init__(self, rng: random.Random, program: FuzzProgram):
        self.rng = rng
        self.program = program
        self.values: list[_Value] = []
        self.n = 0
        base = {"mnp": NUMPY_SHIM, "lax": LAX_SHIM, "np": np}
        self.env, self.env_other = dict(base), dict(base)
        # The same statements run eagerly in minijit, only to learn each value's type under
        # JAX's promotion lattice (eager minijit follows it, tests/test_promotion.py checks it
        # against JAX's own table): a statement whose dtype there differs from NumPy's is not
        # drawn, since the NumPy reference could not check it.
        self.env_types = {"mnp": mnp, "lax": mj.lax, "np": np}

    def fresh(self, prefix: str = "v") -> str:
        self.n += 1
        return f"{prefix}{self.n}"

    def pick(self, ok: Callable[[_Value], bool] = lambda v: True) -> _Value | None:
        candidates = [v for v in self.values if ok(v)]
        if not candidates:
            return None
        if self.rng.random() < 0.5:  # favour recent values: longer chains of dependent ops
            candidates = candidates[-3:]
        return self.rng.choice(candidates)

    def run(self, lines: list[str], defines: list[str], exact: bool | list[bool],
            feature: str | None = None) -> bool | str:
        """Run a statement in both NumPy runs; keep it if it runs. Returns True, False, or
        the name of the exception family NumPy raised (for a program expected to fail)."""
        code = "\n".join(lines)
        outcomes = []
        for env in (self.env, self.env_other):
            with np.errstate(all="ignore"), warnings.catch_warnings():
                warnings.simplefilter("ignore")
                try:
                    exec(code, env)  # noqa: S102 - generated by this module
                    outcomes.append(None)
                except Exception as e:  # noqa: BLE001 - NumPy decides what is valid
                    outcomes.append(error_family(e))
        if outcomes[0] is not None:
            return outcomes[0] if outcomes[0] == outcomes[1] else False
        if outcomes[1] is not None:
            return False
        refs = [self.env[d] for d in defines]
        if any(not _is_value(r) or np.size(r) > 64 for r in refs):
            return False
        if not self._same_types_as_jax(code, defines):
            return False
        flags = exact if isinstance(exact, list) else [exact] * len(defines)
        for d, flag in zip(defines, flags):
            value = _Value(d, self.env[d], self.env_other[d], flag)
            self.values.append(value)
            self.program.inexact[d] = not flag and value.is_float
        self.program.body.append(Stmt(lines, defines))
        if feature:
            self.program.features.add(feature)
        return True


    def _same_types_as_jax(self, code: str, defines: list[str]) -> bool:
        """Run `code` eagerly in minijit; False if a value defined gets another dtype there
        than in NumPy (JAX's lattice: `float32 + int32` is float32, a weak float stays weak).
        A statement minijit rejects is kept: running the program reports it."""
        env = dict(self.env_types)
        try:
            with np.errstate(all="ignore"), warnings.catch_warnings(), \
                    contextlib.redirect_stdout(io.StringIO()):
                warnings.simplefilter("ignore")
                exec(code, env)  # noqa: S102 - generated by this module
        except Exception:  # noqa: BLE001 - minijit's errors are the real run's to report
            return True
        for d in defines:
            if np.asarray(env[d]).dtype != np.asarray(self.env[d]).dtype:
                return False
            # A weakly typed array (`bool_array % 1` in JAX) promotes as a Python scalar
            # would, where NumPy's array is strong: later statements would part ways.
            if getattr(env[d], "weak_type", False) and not isinstance(self.env[d], int | float):
                return False
        self.env_types.update({d: env[d] for d in defines})
        return True


def _is_value(x) -> bool:
    return isinstance(x, np.ndarray | np.generic | bool | int | float)


def error_family(e: BaseException) -> str:
    """TypeError, ValueError, OverflowError, IndexError or ZeroDivisionError; else the name."""
    for family in (OverflowError, ZeroDivisionError, IndexError, TypeError, ValueError):
        if isinstance(e, family):
            return family.__name__
    return type(e).__name__


def _input_values(rng: random.Random, shape, dtype: str) -> np.ndarray:
    gen = np.random.default_rng(rng.getrandbits(32))
    dt = np.dtype(dtype)
    if dt.kind == "b":
        return np.asarray(gen.random(shape) < 0.5)
    if dt.kind in "iu":
        info = np.iinfo(dt)
        edges = [0, 1, 2, 7, info.max, info.max - 1]
        if dt.kind == "i":
            edges += [-1, -7, info.min, info.min + 1]
        small = gen.integers(max(info.min, -9), min(info.max, 9), shape, dt, endpoint=True)
        edge = np.array(edges, dt)[gen.integers(0, len(edges), shape)]
        return np.where(gen.random(shape) < 0.3, edge, small).astype(dt)
    values = gen.uniform(-4, 4, shape).round(2)
    special = gen.choice(np.array(FLOAT_EDGES), shape)
    with np.errstate(over="ignore"):  # 1e308 is inf in float32: fine, another edge
        return np.asarray(np.where(gen.random(shape) < 0.3, special, values), dt)


def _shapes(rng: random.Random, n: int) -> list[tuple[int, ...]]:
    """Shapes that broadcast together: suffixes of one base shape, some axes set to 1."""
    base = rng.choice(BASE_SHAPES)
    out = []
    for _ in range(n):
        rank = len(base) if rng.random() < 0.6 else rng.randint(0, len(base))
        out.append(tuple(1 if rng.random() < 0.25 and d != 0 else d
                         for d in base[len(base) - rank:]))
    return out


def _draw_inputs(d: _Draw) -> None:
    rng, prog = d.rng, d.program
    n = rng.choice((1, 2, 2, 3))
    shapes = _shapes(rng, n)
    dtype = rng.choices(DTYPES, _DTYPE_WEIGHTS)[0]  # one common dtype, sometimes mixed
    for k, shape in enumerate(shapes):
        name = f"a{k}"
        src = prog.inputs[rng.randrange(k)] if k else None
        if src is not None and src.is_array() and rng.random() < 0.15:
            # the same array twice, or an argument and a view of it
            expr = rng.choice(("{}", "{}", "{}.T", "{}[...]")
                              + (("{}[::-1]",) if src.value.ndim else ()))
            value = eval(expr.format("a"), {}, {"a": src.value}).copy()  # noqa: S307
            prog.inputs.append(Input(name, value, "c", src.name, expr))
            prog.features.add("same-array-twice")
            continue
        if k and rng.random() < 0.1:  # a Python scalar: weakly typed (small: see the docs)
            prog.inputs.append(Input(name, rng.choice((0, 1, 2, 3, 7, 0.5, -1.5, True, False))))
            prog.features.add("python-scalar-argument")
            continue
        if rng.random() < 0.3:
            dtype = rng.choices(DTYPES, _DTYPE_WEIGHTS)[0]
        value = _input_values(rng, shape, dtype)
        layout = rng.choice(("c", "c", "c", "offset", "fortran", "strided", "reversed",
                             "readonly")) if rng.random() < 0.6 else "c"
        if value.dtype.itemsize > 1 and rng.random() < 0.03:
            layout = "bigendian"
        prog.inputs.append(Input(name, value, layout))
        prog.features.add(f"layout-{layout}")
        if value.ndim == 0:
            prog.features.add("0-d")
        if value.size == 0:
            prog.features.add("empty")
    for inp, a, o in zip(prog.inputs, prog.make_args(), prog.make_args(other=True)):
        d.env[inp.name], d.env_other[inp.name] = a, o
        # (the types of a big-endian array's values; a NumPy scalar, which a 0-d argument in
        # some layouts becomes, is an array to jit, typed by JAX's rules, not NumPy's)
        d.env_types[inp.name] = mnp.asarray(a.astype(a.dtype.newbyteorder("="))) if (
            isinstance(a, np.ndarray | np.generic)) else a
        d.values.append(_Value(inp.name, a, o, True, scalar=not inp.is_array()))


# -- statements. Each returns nothing; `_Draw.run` keeps a statement only if NumPy runs it.

_TRANSCENDENTAL = ("sin", "cos", "tan", "tanh", "exp", "log", "log1p", "expm1")
_EXACT_UNARY = ("abs", "negative", "sqrt", "floor", "ceil", "sign", "square", "invert",
                "logical_not", "isnan", "positive")
_RELATIVE_SAFE_UNARY = ("abs", "negative", "sqrt", "square", "positive")


def _unary(d: _Draw) -> None:
    op = d.rng.choice(_TRANSCENDENTAL + _EXACT_UNARY + ("-", "~", "abs()"))
    safe = op in _RELATIVE_SAFE_UNARY or op == "-"
    x = d.pick(lambda v: not v.scalar and (v.exact or safe))
    if x is None:
        return
    rhs = {"-": f"-{x.name}", "~": f"~{x.name}", "abs()": f"abs({x.name})"}.get(
        op, f"mnp.{op}({x.name})")
    exact = x.exact and op not in _TRANSCENDENTAL
    if x.dtype == np.bool_:
        d.program.features.add("bool-arithmetic")
    d.run([f"{(name := d.fresh())} = {rhs}"], [name], exact, "unary")


_BINARY = {"+": "{} + {}", "-": "{} - {}", "*": "{} * {}", "/": "{} / {}", "//": "{} // {}",
           "%": "{} % {}", "**": "{} ** {}", "max": "mnp.maximum({}, {})",
           "min": "mnp.minimum({}, {})", "==": "{} == {}", "!=": "{} != {}", "<": "{} < {}",
           ">=": "{} >= {}", "&": "{} & {}", "|": "{} | {}", "^": "{} ^ {}",
           "and": "mnp.logical_and({}, {})", "or": "mnp.logical_or({}, {})",
           "xor": "mnp.logical_xor({}, {})", "fdiv": "mnp.floor_divide({}, {})",
           "rem": "mnp.remainder({}, {})", "pow": "mnp.power({}, {})"}


_COMPARISONS = ("==", "!=", "<", ">=")


def _literal_for(d: _Draw, x: _Value, op: str) -> str:
    literal = _drawn_literal(d, x, op)
    if op in ("and", "or", "xor") and x.dtype == np.float32 and literal == "1e-310":
        # A weak float takes the array's dtype first, as in JAX: 1e-310 is 0 in float32, so
        # False there, and True to NumPy, which tests it in float64.
        return "0.0"
    return literal


def _drawn_literal(d: _Draw, x: _Value, op: str) -> str:
    rng = d.rng
    if op in _COMPARISONS and x.dtype.kind in "biu":
        # NumPy compares with an int that does not fit the dtype exactly; minijit wraps it
        # into the dtype first, as JAX does (tests/test_promotion.py): a deliberate difference
        info = np.iinfo(x.dtype) if x.dtype.kind != "b" else types.SimpleNamespace(min=0, max=1)
        # (and, as below, no Python int beyond int64, which minijit rejects as JAX does)
        top = min(info.max, 2**63 - 1)
        return repr(rng.choice([i for i in INT_LITERALS if info.min <= i <= top]))
    if op in ("//", "%", "fdiv", "rem") and rng.random() < 0.5:
        # no negative int with an unsigned array: NumPy raises, JAX and minijit wrap it
        return rng.choice(("0", "2", "1", "3") if x.dtype.kind == "u" else ("0", "-1", "1", "-2"))
    if op in ("**", "pow"):
        return rng.choice(("0", "1", "2", "3", "-1", "2.0", "0.5", "63", "64", "-2"))
    kind = rng.random()
    if x.dtype.kind in "biu" and kind < 0.6:
        # minijit, as JAX, rejects Python ints beyond int64 wherever they appear (NumPy takes
        # some: uint64 arrays, true division), so none is drawn; and with an int array, only
        # ints its dtype holds: JAX (and minijit) wrap one that does not fit, NumPy raises.
        if x.dtype.kind in "iu":
            info = np.iinfo(x.dtype)
            top = min(info.max, 2**63 - 1)
            return repr(rng.choice([i for i in INT_LITERALS if info.min <= i <= top]))
        return repr(min(rng.choice(INT_LITERALS), 2**63 - 1))
    if kind < 0.85:
        return rng.choice(FLOAT_LITERALS)
    return rng.choice(("True", "False"))


def _binary(d: _Draw) -> None:
    rng = d.rng
    op = rng.choice(list(_BINARY))
    # Which operands may be inexact (see the module docstring): both sides of `*`, max, min;
    # the numerator of `/`; nothing else.
    lhs_ok = op in ("*", "max", "min", "/")
    rhs_ok = op in ("*", "max", "min")
    x = d.pick(lambda v: not v.scalar and (v.exact or lhs_ok))
    if x is None:
        return
    if rng.random() < 0.35:
        y_src, y = _literal_for(d, x, op), None
    else:
        y = d.pick(lambda v: (v.exact or rhs_ok) and (
            rng.random() < 0.05 or broadcastable(v.shape, x.shape)))
        if y is None:
            return
        y_src = y.name
    operands = [x.name, y_src]
    if rng.random() < 0.3 and (y is None or y.exact or lhs_ok) and (x.exact or rhs_ok):
        operands.reverse()
    if op in ("**", "pow") and operands[1].startswith("-") and x.dtype.kind in "biu" and (
            np.size(x.ref) == 0):
        return  # NumPy raises for `int ** -1` only if there is an element; minijit always
    if op in ("**", "pow") and (x.dtype == np.bool_ or (y is not None and y.dtype == np.bool_)):
        return  # bool powers: NumPy gives int8 for `b ** 2` but int64 for `b ** 3`, JAX int32
    exponent = y if operands[1] == y_src else x
    if op in ("**", "pow") and exponent is not None and exponent.dtype.kind in "biu" and (
            exponent is x or x.dtype.kind in "biu"):
        return  # an int array exponent: NumPy raises for negative ones, value by value
    native = [v.dtype.newbyteorder("=") for v in (x, y) if v is not None]
    if y is not None and op in (*_COMPARISONS, "and", "or", "xor") and (
            mnp.promote_types(*native) != np.promote_types(*native)):
        return  # compared in JAX's common type (int32 with float32: float32), NumPy's differs
    rhs = _BINARY[op].format(*operands)
    exact = x.exact and (y is None or y.exact)
    float_involved = x.is_float or (y.is_float if y is not None else isinstance(
        eval(y_src, {"mnp": np, "np": np}), float))  # noqa: S307 - one of our literals
    if op in ("**", "pow") and float_involved and operands[1] not in ("0", "1", "2", "2.0"):
        exact = False  # x**3 is x*x*x in minijit, pow(x, 3) in NumPy: the last bit differs
    if op in ("max", "min") and float_involved:
        exact = False  # which zero max(0.0, -0.0) gives is unspecified
    if x.dtype == np.bool_ and (y is None or y.dtype == np.bool_):
        d.program.features.add("bool-arithmetic")
    if op in ("//", "%", "fdiv", "rem") and x.dtype.kind in "iu":
        d.program.features.add("int-division")
    if y is None and x.dtype.itemsize == 1 and x.dtype.kind in "iu":
        d.program.features.add("small-int-with-python-scalar")
    outcome = d.run([f"{(name := d.fresh())} = {rhs}"], [name], exact, "binary")
    if isinstance(outcome, str):
        _expect_error(d, [f"{name} = {rhs}"])


def _views(shape: tuple[int, ...]) -> list[str]:
    """View expressions of a value of `shape` (`{}` is the value)."""
    size = int(np.prod(shape))
    out = ["{}.reshape(-1)", "mnp.reshape({}, (1, -1))", f"{{}}.reshape({(*shape, 1)})",
           "{}[None]", "mnp.expand_dims({}, 0)", "mnp.squeeze({})", "{}.T",
           f"mnp.reshape({{}}, {shape})"]
    if len(shape) >= 1:
        out += ["{}[::-1]", "{}[1:]", "{}[::2]", "{}[..., ::-1]", "mnp.ravel({})",
                f"mnp.expand_dims({{}}, {len(shape)})", f"mnp.broadcast_to({{}}, {(2, *shape)})"]
        if shape[0] >= 1:
            out.append("{}[0]")
    if len(shape) >= 2:
        perm = tuple(range(len(shape)))[::-1]
        out += [f"mnp.transpose({{}}, {perm})", "{}[:, ::-1]", "{}[1:, :]", "{}[:, None]"]
    for a in range(2, 4):
        if size % a == 0 and size // a > 1:
            out.append(f"{{}}.reshape({a}, {size // a})")
    return out


def _view(d: _Draw) -> None:
    x = d.pick(lambda v: not v.scalar)
    if x is None:
        return
    rhs = d.rng.choice(_views(x.shape)).format(x.name)
    name = d.fresh()
    if d.run([f"{name} = {rhs}"], [name], x.exact, "view") is True and d.rng.random() < 0.6:
        _in_place_bait(d, d.values[-1])


def _in_place_bait(d: _Draw, view: _Value) -> None:
    """An elementwise op on a view whose result is used only by another view or a matmul:
    the pattern in which generated code wrote into the viewed array."""
    op = d.rng.choice(("mnp.tanh({})", "mnp.sin({})", "{} * 2", "{} + 1", "mnp.abs({})",
                       "-{}", "mnp.exp({})", "{} ^ True", "mnp.sqrt({})"))
    exact = view.exact and not op.startswith(("mnp.tanh", "mnp.sin", "mnp.exp"))
    if not view.exact and op in ("{} + 1", "{} ^ True"):
        return
    name = d.fresh()
    if d.run([f"{name} = {op.format(view.name)}"], [name], exact) is not True:
        return
    y = d.values[-1]
    follow = d.rng.choice(_views(y.shape) + ["{0} @ {0}.T", "mnp.sum({})"])
    if follow == "{0} @ {0}.T" and len(y.shape) > 2:
        follow = "{}.T"  # minijit's matmul takes 1-D and 2-D arrays only (documented)
    if follow in ("{0} @ {0}.T", "mnp.sum({})") and y.is_float:
        exact = False  # summation order
    d.run([f"{(name2 := d.fresh())} = {follow.format(name)}"], [name2], exact,
          "view-elementwise-view")


_REDUCTIONS = ("sum", "sum", "prod", "max", "min", "mean", "argmax", "argmin", "var")


def _reduction(d: _Draw) -> None:
    op = d.rng.choice(_REDUCTIONS)
    x = d.pick(lambda v: not v.scalar and (v.exact or op in ("max", "min")))
    if op == "sum" and d.rng.random() < 0.5:  # sums of bools count Trues, in int64
        x = d.pick(lambda v: not v.scalar and v.dtype == np.bool_) or x
    if x is None:
        return
    ndim = len(x.shape)
    axis = d.rng.choice(["None"] + [str(a) for a in range(-ndim, ndim)]
                        + (["(0, 1)"] if ndim >= 2 else []))
    keep = d.rng.random() < 0.3
    if op in ("argmax", "argmin"):
        axis = "None" if axis.startswith("(") else axis
        rhs = f"mnp.{op}({x.name}, axis={axis})"
    else:
        rhs = f"mnp.{op}({x.name}, axis={axis}, keepdims={keep})"
    exact = x.exact and not (x.is_float and op in ("sum", "prod", "mean", "var", "max", "min"))
    if op in ("mean", "var"):
        exact = False
    if op == "sum" and x.dtype == np.bool_:
        d.program.features.add("sum-of-bools")
    outcome = d.run([f"{(name := d.fresh())} = {rhs}"], [name], exact, "reduction")
    if isinstance(outcome, str):
        _expect_error(d, [f"{name} = {rhs}"])


def _matmul(d: _Draw) -> None:
    x = d.pick(lambda v: v.exact and not v.scalar and len(v.shape) in (1, 2))
    if x is None:
        return
    y = d.pick(lambda v: v.exact and not v.scalar and len(v.shape) in (1, 2)
               and v.shape[0] == x.shape[-1])
    if y is None:
        return
    exact = not (x.is_float or y.is_float)
    d.run([f"{(name := d.fresh())} = {x.name} @ {y.name}"], [name], exact, "matmul")


def _astype(d: _Draw) -> None:
    target = d.rng.choice(DTYPES)
    x = d.pick(lambda v: not v.scalar and (v.exact or target.startswith("float")))
    if x is None:
        return
    src = x.name
    if x.is_float and target not in ("bool_", "float32", "float64"):
        hi = 100 if np.iinfo(target).max >= 100 else 50
        lo = 0 if target.startswith("u") else -hi
        src = f"mnp.clip(mnp.where({x.name} == {x.name}, {x.name}, 0.0), {lo}.0, {hi}.0)"
    d.run([f"{(name := d.fresh())} = {src}.astype(mnp.{target})"], [name], x.exact, "astype")


def _concatenate(d: _Draw) -> None:
    x = d.pick(lambda v: not v.scalar and len(v.shape) >= 1)
    if x is None:
        return
    y = d.pick(lambda v: not v.scalar and v.shape[1:] == x.shape[1:] and len(v.shape) >= 1)
    fn = d.rng.choice(("concatenate", "stack"))
    if fn == "stack":
        y = x if y is None or y.shape != x.shape else y
    d.run([f"{(name := d.fresh())} = mnp.{fn}([{x.name}, {y.name}])"], [name],
          x.exact and y.exact, "concatenate")


def _expect_error(d: _Draw, lines: list[str]) -> None:
    """Sometimes end the program at a statement NumPy rejects: minijit must reject it too."""
    if d.rng.random() < 0.5 and not d.program.expect_error:
        d.program.body.append(Stmt(lines, []))
        d.program.expect_error = True
        d.program.features.add("expected-error")


# -- control flow: operands and carries passed straight through


def _same_type_transform(d: _Draw, v: _Value, param: str) -> tuple[str, bool]:
    """An expression of `param` with `v`'s shape and dtype, and whether it is exact. For an
    inexact `v`, only transforms that keep a relative error small."""
    choices = [(param, True), (param, True)]  # passed straight through: the usual case
    if v.dtype.kind in "iuf":
        choices += [(f"{param} * 2", True), (f"mnp.abs({param})", True)]
        if v.exact:
            choices.append((f"{param} + 1", True))
    if v.dtype == np.bool_:
        choices += [(f"{param} ^ True", True), (f"~{param}", True), (f"{param} | {param}", True)]
    if v.is_float:
        choices.append((f"{param} / 3.0", True))
        if v.exact:
            choices.append((f"mnp.sin({param})", False))
    if len(v.shape) >= 1:
        choices.append((f"{param}[::-1]", True))
    expr, exact = d.rng.choice(choices)
    return expr, exact and v.exact


def _predicate(d: _Draw) -> str | None:
    p = d.pick(lambda v: v.exact and not v.scalar and (not v.is_float or np.size(v.ref) > 0))
    if p is None or d.rng.random() < 0.15:
        return d.rng.choice(("True", "False"))
    if p.is_float:
        return f"mnp.max({p.name}) > 0"
    return f"mnp.sum({p.name}) > 0" if p.dtype != np.bool_ else f"mnp.sum({p.name}) > 1"


def _control_operands(d: _Draw, n: int) -> list[_Value]:
    ops = [d.pick(lambda v: not v.scalar) for _ in range(n)]
    return [o for o in ops if o is not None]


def _cond(d: _Draw) -> None:
    ops = _control_operands(d, d.rng.choice((1, 1, 2)))
    pred = _predicate(d)
    if not ops or pred is None:
        return
    f = d.fresh("f")
    params = [f"c{k}" for k in range(len(ops))]
    lines, exact = [], [True] * len(ops)
    for branch in ("true", "false"):
        outs = []
        for k, (o, p) in enumerate(zip(ops, params)):
            expr, ex = _same_type_transform(d, o, p)
            outs.append(expr)
            exact[k] = exact[k] and ex
        lines += [f"def {f}_{branch}({', '.join(params)}):",
                  f"    return ({''.join(e + ', ' for e in outs)})"]
    names = [d.fresh() for _ in ops]
    lines.append(f"{', '.join(names)}, = lax.cond({pred}, {f}_true, {f}_false, "
                 f"{', '.join(o.name for o in ops)})")
    d.run(lines, names, exact, "cond-passthrough")


def _while(d: _Draw) -> None:
    """Carries that start as one array, and stay one (`return i + 1, out, out`)."""
    x = d.pick(lambda v: not v.scalar)
    if x is None:
        return
    f, n = d.fresh("f"), d.rng.randint(0, 3)
    second, ex2 = (x.name, True) if d.rng.random() < 0.7 else _same_type_transform(d, x, x.name)
    new, ex = _same_type_transform(d, x, "a")
    combine = d.rng.choice((f"{new}, {new}", "a, b", "b, a", f"{new}, b", f"a, {new}"))
    lines = [f"def {f}_body(carry):", "    i, a, b = carry",
             f"    return i + 1, {combine}"]
    names = [d.fresh(), d.fresh()]
    lines.append(f"_, {names[0]}, {names[1]} = lax.while_loop(lambda c: c[0] < {n}, "
                 f"{f}_body, (0, {x.name}, {second}))")
    d.run(lines, names, ex and ex2 and x.exact, "while-duplicate-carry")


def _fori(d: _Draw) -> None:
    x = d.pick(lambda v: not v.scalar)
    if x is None:
        return
    f, n = d.fresh("f"), d.rng.randint(0, 3)
    new, ex = _same_type_transform(d, x, "c[0]")
    body = d.rng.choice(("c", f"({new}, c[1])", "(c[1], c[0])", f"({new}, {new})"))
    lines = [f"def {f}_body(i, c):", f"    return {body}"]
    names = [d.fresh(), d.fresh()]
    lines.append(f"{names[0]}, {names[1]} = lax.fori_loop(0, {n}, {f}_body, "
                 f"({x.name}, {x.name}))")
    d.run(lines, names, ex and x.exact, "fori-passthrough")


def _scan(d: _Draw) -> None:
    xs = d.pick(lambda v: not v.scalar and len(v.shape) >= 1 and v.shape[0] >= 1)
    init = d.pick(lambda v: not v.scalar)
    if xs is None or init is None:
        return
    f = d.fresh("f")
    new, ex = _same_type_transform(d, init, "c")
    carry, carry_exact = d.rng.choice((("c", True), ("c", True), (new, ex)))
    carry_exact = carry_exact and init.exact
    y, y_exact = d.rng.choice((("v", xs.exact), ("c", carry_exact), (
        "v * 2" if xs.dtype.kind in "iuf" else "v", xs.exact)))
    lines = [f"def {f}_body(c, v):", f"    return {carry}, {y}"]
    names = [d.fresh(), d.fresh()]
    lines.append(f"{names[0]}, {names[1]} = lax.scan({f}_body, {init.name}, {xs.name})")
    d.run(lines, names, [carry_exact, y_exact], "scan-passthrough")


# -- reductions over every axis set, composed and reduced again (one loop over the rows)

_FIRST_REDUCTIONS = ("sum", "max", "min")
_SECOND_REDUCTIONS = ("sum", "max", "min", "mean", "var", "std")
_RECOMBINE = ("{x} - {r}", "{x} * {r}", "mnp.maximum({x}, {r})", "mnp.abs({x} - {r})",
              "({x} - {r}) * ({x} - {r})")


def _reduce_compose(d: _Draw) -> None:
    """r = reduce(x) over an axis set, an elementwise op of x and r (broadcast back), reduced
    again over the same axes: the code generator runs such kernels as one loop over the rows,
    where a reduction's accumulator may take over an array an earlier one still fills. Floats
    are first made small whole numbers, so every sum is exact in any order; only mean, var and
    std at the end round, and their error stays relative."""
    x = d.pick(lambda v: v.exact and not v.scalar and np.size(v.ref) >= 4
               and v.dtype != np.bool_)
    if x is None:
        return
    shape, size = x.shape, int(np.size(x.ref))
    if (len(shape) < 3 or shape[0] < 2) and d.rng.random() < 0.8:
        # rows of at least two axes each, so that the kernels run as one loop over the rows
        shape = (2, 2, size // 4) if size % 4 == 0 and size >= 8 else (
            (2, size // 2) if size % 2 == 0 else shape)
    if len(shape) < 2:
        return
    ndim = len(shape)
    subsets = [c for k in range(1, ndim + 1) for c in itertools.combinations(range(ndim), k)]
    # Half the time an axis set that keeps axis 0 and an axis after the ones reduced: its
    # accumulator is a whole array, filled before its loops (the case row loops must order).
    middle = [c for c in subsets if 0 not in c and max(c) < ndim - 1]
    axes = d.rng.choice(middle if middle and d.rng.random() < 0.5 else subsets)
    src = x.name if shape == x.shape else f"{x.name}.reshape({shape})"
    if x.is_float:
        src = f"mnp.floor(mnp.clip(mnp.where({src} == {src}, {src}, 0.0), -8.0, 8.0))"
    first, second = d.rng.choice(_FIRST_REDUCTIONS), d.rng.choice(_SECOND_REDUCTIONS)
    keep = d.rng.random() < 0.5
    r = f"mnp.{first}(t, axis={axes}, keepdims={keep})"
    if not keep:
        r = f"mnp.expand_dims({r}, {axes})"
    combined = d.rng.choice(_RECOMBINE).format(x="t", r="r")
    if d.rng.random() < 0.3:  # the second reduction of the input itself (var over axis 1)
        combined = "t"
    name = d.fresh()
    lines = [f"t = {src}", f"r = {r}",
             f"{name} = mnp.{second}({combined}, axis={axes}, keepdims={d.rng.random() < 0.3})"]
    # floats: a product may be -0.0, and which zero max and min give is unspecified
    exact = not x.is_float and second in ("sum", "max", "min")
    d.run(lines, [name], exact, "reduce-compose")


# -- dynamic slices: negative, out-of-range and unsigned starts, constant or traced

_STARTS = (-9, -5, -4, -3, -1, 0, 1, 2, 3, 9)


def _start_source(d: _Draw, k: int) -> str:
    """A start of value `k`: a Python int, or a traced scalar of some int dtype (its value
    computed from an input, so that jit cannot fold it)."""
    anchor = d.pick(lambda v: not v.scalar and np.size(v.ref) > 0)
    if anchor is None or d.rng.random() < 0.4:
        return repr(k)
    traced = f"(mnp.sum({anchor.name} != {anchor.name}) * 0 + {k})"
    dtype = d.rng.choice(("int64", "int32", "int8", "uint8", "uint32", "uint64"))
    return traced if dtype == "int64" else f"{traced}.astype(mnp.{dtype})"


def _dynamic_slice(d: _Draw) -> None:
    x = d.pick(lambda v: not v.scalar and len(v.shape) >= 1)
    if x is None:
        return
    sizes = tuple(d.rng.randint(0, n) for n in x.shape)
    starts = [_start_source(d, d.rng.choice(_STARTS)) for _ in x.shape]
    starts_src = f"({', '.join(starts)},)"
    name = d.fresh()
    if d.rng.random() < 0.5:
        line = f"{name} = lax.dynamic_slice({x.name}, {starts_src}, {sizes})"
    else:
        update = d.pick(lambda v: v.dtype == x.dtype and v.shape == sizes and not v.scalar)
        upd = update.name if update is not None else (
            f"lax.dynamic_slice({x.name}, {(0,) * len(sizes)}, {sizes})[::-1]")
        exact = x.exact and (update is None or update.exact)
        line = f"{name} = lax.dynamic_update_slice({x.name}, {upd}, {starts_src})"
        d.run([line], [name], exact, "dynamic-update-slice")
        return
    d.run([line], [name], x.exact, "dynamic-slice")


# -- loops: closed-over arrays with size-1 axes, typed indices, weakly typed carries


def _loop_closure(d: _Draw) -> None:
    """A loop body that reads an array from outside the loop, broadcast against the carry
    (size-1 axes included), through `where`."""
    c = d.pick(lambda v: not v.scalar and v.exact and v.dtype.kind in "iuf"
               and len(v.shape) >= 1)
    if c is None:
        return
    v = d.pick(lambda w: w.exact and not w.scalar and w.dtype == c.dtype and 0 < len(w.shape)
               <= len(c.shape) and broadcastable(w.shape, c.shape)
               and np.broadcast_shapes(w.shape, c.shape) == c.shape)
    if v is None:
        return
    f, n = d.fresh("f"), d.rng.randint(0, 3)
    zero = "0.0" if c.is_float else "0"
    step = d.rng.choice((f"mnp.where({v.name} > 0, {zero}, {v.name})",
                         f"mnp.where({v.name} > 0, {v.name}, {zero})", f"{v.name} * 2"))
    kind = d.rng.choice(("fori", "while", "scan"))
    name = d.fresh()
    if kind == "fori":
        lines = [f"def {f}_body(i, c):", f"    return c + {step}",
                 f"{name} = lax.fori_loop(0, {n}, {f}_body, {c.name})"]
    elif kind == "while":
        lines = [f"def {f}_body(s):", f"    return s[0] + 1, s[1] + {step}",
                 f"_, {name} = lax.while_loop(lambda s: s[0] < {n}, {f}_body, (0, {c.name}))"]
    else:
        lines = [f"def {f}_body(c, _):", f"    return c + {step}, None",
                 f"{name}, _ = lax.scan({f}_body, {c.name}, None, length={n})"]
    d.run(lines, [name], True, "loop-closed-over-size-1" if 1 in v.shape else "loop-closed-over")


def _fori_index(d: _Draw) -> None:
    """fori_loop's index typed by its bounds: Python ints give a weak int, traced bounds their
    own dtype (int32 bounds: an int32 index), under jit and under disable_jit."""
    anchor = d.pick(lambda v: not v.scalar and np.size(v.ref) > 0)
    if anchor is None:
        return
    dtype = d.rng.choice(("int32", "int64", "int8", "uint8"))
    n = d.rng.randint(0, 3)
    upper = f"(mnp.sum({anchor.name} != {anchor.name}) * 0 + {n}).astype(mnp.{dtype})"
    lower = f"mnp.{dtype}(0) + {upper} * 0"
    if not dtype.startswith("u") and d.rng.random() < 0.5:
        lower = "0"  # a weak int: JAX (and minijit) reject it beside an unsigned upper bound
    f, name = d.fresh("f"), d.fresh()
    # `c * 0 + i`, not `i`: under disable_jit JAX's index is a Python int, and a bare one
    # would flow on into the rest of the program as a weak value where jit has an int32
    lines = [f"def {f}_body(i, c):", "    return c * 0 + i",
             f"{name} = lax.fori_loop({lower}, {upper}, {f}_body, "
             f"mnp.{dtype}(7) + {upper} * 0)"]
    d.run(lines, [name], True, "fori-typed-index")


def _weak_carry(d: _Draw) -> None:
    """A carry that starts as a Python scalar (weakly typed) and comes back strong: of the
    dtype the other carry gives it (JAX converts the initial value to it), or of its own
    dtype (int64, float64: JAX traces the body once, with the weak carry)."""
    s = d.pick(lambda v: v.exact and v.dtype.kind in "iuf" and np.size(v.ref) > 0
               and not v.scalar)
    if s is None:
        return
    own = d.rng.random() < 0.5
    k = d.rng.choice((0, 1, 2, 0.5) if s.is_float and not own else (
        (0.0, 2.0, 0.5) if s.is_float else (0, 1, 2)))
    scalar = f"mnp.max({s.name})"
    # At least one step: JAX gives the carry the body's dtype even if no step runs, where the
    # NumPy reference would keep the Python scalar. With the carry's own dtype, one step only:
    # JAX's single trace keeps `c[0] + c[1]` in c[1]'s dtype, where NumPy's second step would
    # add a strong int64.
    kind, n = d.rng.choice(("fori", "while", "scan")), 1 if own else d.rng.randint(1, 3)
    f, a, b = d.fresh("f"), d.fresh(), d.fresh()
    dtype = ("mnp.float64" if isinstance(k, float) else "mnp.int64") if own else "c[1].dtype"
    new = f"(c[0] + c[1]).astype({dtype}), c[0] + c[1]"
    if kind == "fori":
        lines = [f"def {f}_body(i, c):", f"    return ({new})",
                 f"{a}, {b} = lax.fori_loop(0, {n}, {f}_body, ({k!r}, {scalar}))"]
    elif kind == "while":
        lines = [f"def {f}_body(c):", f"    return ({new}, c[2] + 1)",
                 f"{a}, {b}, _ = lax.while_loop(lambda c: c[2] < {n}, {f}_body, "
                 f"({k!r}, {scalar}, 0))"]
    else:
        lines = [f"def {f}_body(c, _):", f"    return ({new}), None",
                 f"({a}, {b}), _ = lax.scan({f}_body, ({k!r}, {scalar}), None, length={n})"]
    d.run(lines, [a, b], True, "weak-carry")


_STEPS = ((_unary, 5), (_binary, 9), (_view, 6), (_reduction, 4), (_matmul, 1), (_astype, 2),
          (_concatenate, 1), (_cond, 2), (_while, 2), (_fori, 1), (_scan, 2),
          (_reduce_compose, 3), (_dynamic_slice, 2), (_loop_closure, 1), (_fori_index, 1),
          (_weak_carry, 1))


def generate(seed: int, index: int) -> FuzzProgram:
    """Program `index` of `seed` (each program has its own stream: draw any one alone)."""
    rng = random.Random(f"minijit-fuzz:{seed}:{index}")
    prog = FuzzProgram(seed, index, [], [], [], {})
    d = _Draw(rng, prog)
    _draw_inputs(d)
    steps, weights = zip(*_STEPS)
    for _ in range(rng.randint(2, 9)):
        rng.choices(steps, weights)[0](d)
        if prog.expect_error:
            break
    _choose_outputs(d)
    return prog


def _choose_outputs(d: _Draw) -> None:
    rng, prog = d.rng, d.program
    defined = [v for v in d.values if v.name.startswith("v")]
    outs = [defined[-1].name] if defined else []
    for _ in range(rng.choice((0, 1, 1, 2, 3))):
        outs.append(rng.choice(d.values).name)  # inputs too: passed straight through
    if defined and rng.random() < 0.2 and not prog.expect_error:
        y = rng.choice(defined)  # a result and a view of it, both returned
        if d.run([f"{(name := d.fresh())} = {rng.choice(_views(y.shape)).format(y.name)}"],
                 [name], y.exact, "result-and-its-view") is True:
            outs += [y.name, name]
    prog.outputs = outs or [prog.inputs[0].name]


# --------------------------------------------------------------------------- running programs


@dataclass(frozen=True)
class Failure:
    kind: str  # "aliasing", "numeric", "type", "crash" or "error"
    backend: str
    message: str
    key: str = ""  # what makes two failures "the same", with kind and backend

    def signature(self) -> str:
        return f"{self.kind} [{self.backend}] {self.key}"


def _key(text: str) -> str:
    """A message without its numbers and names, to tell failures apart."""
    return re.sub(r"0x[0-9a-f]+|\d+(\.\d+)?(e-?\d+)?|\b[va]\d+\b", "#", text)[:100]


_TOLERANCE = {np.dtype("float32"): 1e-5, np.dtype("float64"): 1e-10}


def compare(got, want, inexact: bool) -> str | None:
    """Why `got` (minijit) is not `want` (NumPy), or None if they agree."""
    got, want = np.asarray(got), np.asarray(want)
    # a big-endian argument passed through (by NumPy, or eagerly under disable_jit)
    got, want = (a.astype(a.dtype.newbyteorder("=")) for a in (got, want))
    if got.shape != want.shape or got.dtype != want.dtype:
        return (f"type: {got.dtype}{list(got.shape)}, NumPy gives "
                f"{want.dtype}{list(want.shape)}")
    if want.dtype.kind != "f":
        same = np.array_equal(got, want)
    elif inexact:
        same = np.allclose(got, want, rtol=_TOLERANCE[want.dtype], atol=0, equal_nan=True)
    else:  # bit for bit, any NaN equal to any NaN (a NaN's sign and payload are unspecified)
        nan = np.isnan(want)
        same = np.array_equal(nan, np.isnan(got)) and (
            got[~nan].tobytes() == want[~nan].tobytes())
    if same:
        return None
    return f"numeric: {want.dtype}: {got.tolist()!r}, NumPy gives {want.tolist()!r}"


def _reference(ref_fn, args):
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return ref_fn(*[np.array(a) if isinstance(a, np.ndarray) else a for a in args])


# Eagerly, as in JAX, a value passed straight through is the argument itself: only these
# violations count under disable_jit.
_EAGER_ALIASING = ("input-modified", "output-overwritten", "nondeterministic")


def run_program(prog: FuzzProgram, backends=BACKENDS) -> list[Failure]:
    """Every way `prog` disagrees with NumPy or breaks the aliasing rules (see module doc)."""
    fn, ref_fn = prog.functions()
    args, other = prog.make_args(), prog.make_args(other=True)
    big_endian = any(i.layout == "bigendian" for i in prog.inputs)
    expected_error = None
    wants = []
    for a in (args, other):
        try:
            wants.append(_reference(ref_fn, a))
        except Exception as e:  # noqa: BLE001
            expected_error = error_family(e)
            break
    failures = []
    for backend in backends:
        jf = compiled(fn, backend)
        try:
            with contextlib.redirect_stdout(io.StringIO()), np.errstate(all="ignore"):
                gots = [jf(*a) for a in (args, other)]
        except Exception as e:  # noqa: BLE001 - every exception is a finding or expected
            got_family = error_family(e)
            if big_endian and isinstance(e, TypeError) and ">" in str(e):
                continue  # documented: minijit rejects non-native byte order
            if expected_error is not None and got_family == expected_error:
                continue
            if backend == "disable_jit" and "zero-length scan" in str(e):
                continue  # as JAX 0.10.2: eagerly, no step gives the ys no type
            if expected_error == "TypeError" and got_family == "ValueError" and (
                    "broadcast" in str(e)):
                continue  # two faults (dtype and shapes): NumPy names the dtype, JAX the shapes
            if expected_error == "OverflowError" and "negative integer powers" in str(e):
                continue  # `uint ** -2`: NumPy cannot cast -2 to the uint; minijit's error says
                # what is wrong with the program (JAX: a TypeError with the same words)
            kind = "error" if expected_error is not None else "crash"
            wanted = f" (NumPy raises {expected_error})" if expected_error else ""
            message = f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
            failures.append(Failure(kind, backend, message + wanted, _key(message)))
            continue
        if expected_error is not None:
            failures.append(Failure("error", backend, f"ran, where NumPy raises "
                                    f"{expected_error}", expected_error))
            continue
        for which, got, want in zip(("args", "other args"), gots, wants):
            got, want = list(got), list(want)
            for k, (g, w, inexact) in enumerate(zip(got, want, prog.inexact_outputs())):
                if backend == "disable_jit" and isinstance(g, int | float) and not isinstance(
                        w, int | float):  # a Python scalar, weakly typed (a loop's index)
                    g = np.asarray(g, np.asarray(w).dtype)
                why = compare(g, w, inexact)
                if why:
                    kind, _, detail = why.partition(": ")
                    failures.append(Failure(kind, backend, f"output {k} ({prog.outputs[k]}) "
                                            f"on {which}: {detail}", detail.split(":")[0]))
        try:
            with contextlib.redirect_stdout(io.StringIO()), np.errstate(all="ignore"):
                violations = check_aliasing(jf, prog.make_args(), prog.make_args(other=True),
                                            distinct_outputs=backend != "disable_jit")
        except Exception as e:  # noqa: BLE001 - it ran twice above: a third call failed
            failures.append(Failure("crash", backend, f"a third call raised {e!r}", "recall"))
            continue
        failures += [Failure("aliasing", backend, str(v), v.kind) for v in violations
                     if backend != "disable_jit" or v.kind in _EAGER_ALIASING]
    return failures


# --------------------------------------------------------------------------- shrinking


def shrink(prog: FuzzProgram, failure: Failure, backends=BACKENDS,
           budget: int = 100) -> FuzzProgram:
    """A smaller program with a failure of the same kind on the same backend: drops
    statements, outputs, argument aliasing and layouts while the failure remains."""
    def still_fails(candidate: FuzzProgram) -> bool:
        nonlocal budget
        budget -= 1
        try:
            found = run_program(candidate, [failure.backend])
        except Exception:  # noqa: BLE001 - e.g. a NameError in the NumPy run: not smaller
            return False
        return any(f.signature() == failure.signature() for f in found)

    def candidates(p: FuzzProgram):
        if p.expect_error and p.outputs != [p.inputs[0].name]:
            yield replace(p, outputs=[p.inputs[0].name])  # it raises before returning
        if len(p.outputs) > 1:
            for k in range(len(p.outputs)):
                yield replace(p, outputs=p.outputs[:k] + p.outputs[k + 1:])
        for k in reversed(range(len(p.body) - (1 if p.expect_error else 0))):
            yield replace(p, body=p.body[:k] + p.body[k + 1:])
        for k, inp in enumerate(p.inputs):
            used = "\n".join([*(ln for st in p.body for ln in st.lines), *p.outputs])
            if len(p.inputs) > 1 and not re.search(rf"\b{inp.name}\b", used) and not any(
                    i.alias_of == inp.name for i in p.inputs):
                yield replace(p, inputs=p.inputs[:k] + p.inputs[k + 1:])
            if inp.alias_of is not None:
                plain = replace(inp, alias_of=None, alias_expr="{}")
                yield replace(p, inputs=p.inputs[:k] + [plain] + p.inputs[k + 1:])
            if inp.layout not in ("c", "bigendian"):
                plain = replace(inp, layout="c")
                yield replace(p, inputs=p.inputs[:k] + [plain] + p.inputs[k + 1:])

    progress = True
    while progress and budget > 0:
        progress = False
        for c in candidates(prog):
            if budget <= 0:
                break
            if _well_formed(c) and still_fails(c):
                prog, progress = c, True
                break
    return prog


def _well_formed(p: FuzzProgram) -> bool:
    """Every name is defined before it is used (after dropping statements, it may not be)."""
    defined = {i.name for i in p.inputs}
    for stmt in p.body:
        if not set(re.findall(r"\b[av]\d+\b", "\n".join(stmt.lines))) - set(stmt.defines) <= (
                defined):
            return False
        defined |= set(stmt.defines)
    return set(p.outputs) <= defined


# --------------------------------------------------------------------------- command line


def campaign(seed: int, n: int, backends, start: int = 0, do_shrink: bool = True,
             show: bool = False, out=None) -> int:
    """Run programs `start .. start+n-1` of `seed`; print failures and a summary; return the
    number of failing programs."""
    out = out or sys.stdout
    t0 = time.perf_counter()
    kinds: Counter = Counter()
    signatures: dict[str, tuple[FuzzProgram, Failure]] = {}
    failing = expected_errors = 0
    for index in range(start, start + n):
        prog = generate(seed, index)
        expected_errors += prog.expect_error
        if show:
            print(prog.reproducer(backends), file=out)
        try:
            failures = run_program(prog, backends)
        except Exception as e:  # noqa: BLE001 - a bug in the reference run: report it too
            failures = [Failure("fuzzer", "numpy", f"{type(e).__name__}: {e}",
                                _key(f"{type(e).__name__}: {e}"))]
        if show:
            print("ok" if not failures else "\n".join(map(str, failures)), file=out)
        if failures:
            failing += 1
            new = [f for f in failures if f.signature() not in signatures]
            for f in failures:
                kinds[f.kind] += 1
            print(f"\nFAIL seed={seed} index={index}: "
                  + "; ".join(f"{f.kind} [{f.backend}] {f.message[:200]}" for f in failures[:4]),
                  file=out)
            if new:
                small = shrink(prog, new[0], backends) if do_shrink else prog
                for f in new:
                    signatures[f.signature()] = (small, f)
                print(f"--- reproducer (seed {seed}, index {index}"
                      f"{', shrunk' if small is not prog else ''}):\n{small.reproducer()}---",
                      file=out)
        done = index - start + 1
        if done % 50 == 0 or done == n:
            print(f"[seed {seed}] {done}/{n} programs, {failing} failing, "
                  f"{time.perf_counter() - t0:.0f} s", file=out, flush=True)
    print(f"\nSummary: seed {seed}, programs {start}..{start + n - 1} ({n} run, "
          f"{expected_errors} expected to raise), backends {', '.join(backends)}: "
          f"{failing} failing programs, {len(signatures)} distinct failures", file=out)
    for kind, count in sorted(kinds.items()):
        print(f"  {kind}: {count}", file=out)
    for sig, (p, _) in signatures.items():
        print(f"  - {sig}   (seed {p.seed} index {p.index})", file=out)
    return failing


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("-n", type=int, default=100, help="number of programs")
    parser.add_argument("--index", type=int, default=None, help="run only this program")
    parser.add_argument("--backend", choices=("numba", "interpreter", "disable_jit", "all"),
                        default="all")
    parser.add_argument("--show", action="store_true", help="print every program and result")
    parser.add_argument("--no-shrink", action="store_true")
    args = parser.parse_args(argv)
    backends = BACKENDS if args.backend == "all" else (args.backend,)
    # Thousands of programs should not fill the user's kernel cache: use a private one.
    if "MINIJIT_CACHE_DIR" not in os.environ:
        os.environ["MINIJIT_CACHE_DIR"] = tempfile.mkdtemp(prefix="minijit-fuzz-")
    start, n = (args.index, 1) if args.index is not None else (0, args.n)
    failing = campaign(args.seed, n, backends, start, not args.no_shrink, args.show)
    return 1 if failing else 0


if __name__ == "__main__":
    sys.exit(main())
