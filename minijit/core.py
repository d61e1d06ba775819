"""The core vocabulary: abstract values, primitives, `bind` and the rule tables (chapters 02-03).

A *primitive* is an operation minijit knows natively (`add`, `reduce_sum`, `dot_general`).
Every interpretation of a program is a table from primitive to rule:

- `abstract_eval_rules[p](*avals, **params) -> avals`: shape and dtype inference;
- `impl_rules[p](*arrays, **params) -> arrays`: run it on NumPy (in `interpret.py`);
- later tables: `numba_rules` (code generation), rules for the optimizer's passes.

`bind(p, *args, **params)` is the single entry point for applying a primitive: it hands the
primitive to the innermost trace of this thread. A staging trace (`tracing.JaxprTrace`) records
an equation; the `EvalTrace` at the bottom of every stack runs the primitive's impl rule now.
So eager code and traced code go through the same primitives, the same abstract-eval checks
and the same error messages (autodidax's EvalTrace). `new_trace(trace)` pushes a trace for
the length of a block; `jvp.JVPTrace` shows why the traces form a stack (chapter 02).

`bind` is a piece of the build track (`minijit.build`, chapter 02's exercise): with a learner's
switched in, every primitive goes through it.
"""

from __future__ import annotations

import contextlib
import functools
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from minijit import build, dtypes
from minijit.array import Array, wrap
from minijit.config import config
from minijit.errors import user_line

# --------------------------------------------------------------------------- abstract values


@dataclass(frozen=True)
class ShapedArray:
    """An abstract value ("aval"): everything the compiler may know about an array.

    Invariants: `shape` is a tuple of non-negative ints, `dtype` a supported `np.dtype`.
    `weak_type` marks values that came from Python scalars (they adopt their partner's dtype).
    """

    shape: tuple[int, ...]
    dtype: np.dtype
    weak_type: bool = False

    def __post_init__(self):
        object.__setattr__(self, "shape", tuple(int(d) for d in self.shape))
        object.__setattr__(self, "dtype", dtypes.canonicalize(self.dtype))

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))

    def update(self, shape=None, dtype=None, weak_type=None) -> ShapedArray:
        return ShapedArray(
            self.shape if shape is None else shape,
            self.dtype if dtype is None else dtype,
            self.weak_type if weak_type is None else weak_type,
        )

    def strip_weak_type(self) -> ShapedArray:
        return self.update(weak_type=False) if self.weak_type else self

    def str_short(self) -> str:
        """`f64[3,4]`, the form the printer uses."""
        return f"{dtypes.short_name(self.dtype)}[{','.join(map(str, self.shape))}]"

    def __str__(self) -> str:
        return self.str_short()

    def __repr__(self) -> str:
        weak = ", weak_type=True" if self.weak_type else ""
        return f"ShapedArray({self.dtype.name}[{','.join(map(str, self.shape))}]{weak})"


class ShapeDtypeStruct:
    """A shape and a dtype with no data, as `jax.ShapeDtypeStruct`: what `jit(f).trace`,
    `.lower`, `make_jaxpr` and `eval_shape` take in place of an array, and what `eval_shape`
    returns. It is a pytree leaf; a jitted call, which needs values, refuses it."""

    __slots__ = ("shape", "dtype", "weak_type")

    def __init__(self, shape, dtype, *, weak_type: bool = False):
        if dtype is None:
            raise ValueError("ShapeDtypeStruct: dtype must be specified.")
        self.shape = tuple(int(d) for d in shape)
        self.dtype = np.dtype(dtype)
        self.weak_type = bool(weak_type)

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))

    def update(self, *, shape=None, dtype=None, weak_type=None) -> ShapeDtypeStruct:
        return ShapeDtypeStruct(self.shape if shape is None else shape,
                                self.dtype if dtype is None else dtype,
                                weak_type=self.weak_type if weak_type is None else weak_type)

    def __eq__(self, other) -> bool:
        return isinstance(other, ShapeDtypeStruct) and (
            (self.shape, self.dtype, self.weak_type)
            == (other.shape, other.dtype, other.weak_type))

    def __hash__(self) -> int:
        return hash((self.shape, self.dtype, self.weak_type))

    def __repr__(self) -> str:  # JAX's
        weak = ", weak_type=True" if self.weak_type else ""
        return f"ShapeDtypeStruct(shape={self.shape}, dtype={self.dtype.name}{weak})"


def get_aval(x: Any) -> ShapedArray:
    """The abstract value of a concrete value (array, NumPy scalar or Python scalar).

    An eager `Array` keeps the weak type of the value it holds (`mnp.add(1, 2)` is weak, as
    the same sum is inside a trace); any other NumPy array is strongly typed."""
    if isinstance(x, np.ndarray):
        return _shaped(x.shape, x.dtype, x.weak_type if isinstance(x, Array) else False)
    if isinstance(x, np.generic):
        return _shaped((), x.dtype, False)
    if isinstance(x, (bool, int, float)):
        # bool is not weak (it has no wider partner to adopt), as in JAX.
        return _shaped((), dtypes.python_scalar_dtype(x), not isinstance(x, bool))
    aval = getattr(x, "aval", None)
    if isinstance(aval, ShapedArray):
        return aval
    raise TypeError(f"{type(x).__name__} is not an array type minijit understands")


@functools.lru_cache(maxsize=4096)
def _shaped(shape: tuple, dtype: np.dtype, weak_type: bool) -> ShapedArray:
    """One shared ShapedArray per type: avals are immutable, and eager code asks for the
    aval of the same few types on every operation."""
    return ShapedArray(shape, dtype, weak_type)


# --------------------------------------------------------------------------- primitives


class Primitive:
    """A named operation. Identity matters: rule tables are keyed by the object."""

    def __init__(self, name: str, *, multiple_results: bool = False, effectful: bool = False):
        self.name = name
        self.multiple_results = multiple_results
        self.effectful = effectful  # effectful equations are never removed or merged

    def bind(self, *args, **params):
        return bind(self, *args, **params)

    def __repr__(self) -> str:
        return self.name


AbstractEvalRule = Callable[..., list[ShapedArray]]

abstract_eval_rules: dict[Primitive, AbstractEvalRule] = {}


class ImplRules(dict):
    """The impl rules, by primitive: a dict whose lookups, while a learner's `eval_jaxpr` runs
    (the build track, chapter 03), hand out each rule checked. What that `eval_jaxpr` binds
    must be what the equation reads: NumPy arrays (np.ndarray or a NumPy scalar), of the
    dtype and shape of the equation's inputs. Otherwise a TypeError names the equation and
    the operand, where a bare error from inside the rule would name neither. The check is
    `interpret.py`'s (`check_operands`), which knows how to print an equation."""

    check_operands: Callable | None = None

    def __getitem__(self, prim: Primitive):
        rule = dict.__getitem__(self, prim)
        args = build.running("eval_jaxpr")
        if args is None or self.check_operands is None:
            return rule
        return functools.partial(self.check_operands, prim, rule, args[0])


impl_rules: ImplRules = ImplRules()

# Named groups that passes and code generation ask about, instead of comparing names.
UNARY: set[Primitive] = set()
BINARY: set[Primitive] = set()
ELEMENTWISE: set[Primitive] = set()  # unary, binary, select_n, convert_element_type
COMMUTATIVE: set[Primitive] = set()
COMPARISONS: set[Primitive] = set()
REDUCTIONS: set[Primitive] = set()


def abstract_eval(prim: Primitive, avals, params) -> list[ShapedArray]:
    return abstract_eval_rules[prim](*avals, **params)


# --------------------------------------------------------------------------- tracers and traces


class Tracer:
    """The base class of values that stand for arrays inside a trace (`tracing.JaxprTracer`).

    It knows its abstract value but not its data. Operators and methods (`x + y`, `x[i]`,
    `x.sum()`) are attached in `array_methods.py`, to this class and to `Array` alike.
    """

    __array_priority__ = 1000  # so `np_array + tracer` calls tracer.__radd__
    __slots__ = ()

    aval: ShapedArray

    # What is known of the array: its abstract value (a subclass may say it faster).
    @property
    def shape(self) -> tuple[int, ...]:
        return self.aval.shape

    @property
    def dtype(self) -> np.dtype:
        return self.aval.dtype

    @property
    def ndim(self) -> int:
        return self.aval.ndim

    @property
    def size(self) -> int:
        return self.aval.size

    @property
    def weak_type(self) -> bool:
        return self.aval.weak_type

    def raise_leaked(self):
        """Raise the error for a tracer used after its trace ended."""
        raise NotImplementedError


class EvalTrace:
    """The bottom of every trace stack: apply each primitive now, with its impl rule.

    Invariant: results are `Array`s whose shape, dtype and weak type are exactly what the
    abstract-eval rule says, so an eager value is indistinguishable (but for having data) from
    the tracer the same code makes under `jit`.
    """

    def process_primitive(self, prim: Primitive, args, params) -> list:
        for a in args:
            if isinstance(a, Tracer):
                a.raise_leaked()  # a tracer outside any trace has escaped it
        # Shape and dtype checks first, so eager and traced code fail with the same message.
        out_avals = checked_abstract_eval(prim, [get_aval(a) for a in args], params)
        vals = [np.asarray(a) for a in args]
        with np.errstate(all="ignore"):  # like JAX: 1/0 is inf without a warning
            outs = impl_rules[prim](*vals, **params)
        if config.debug_nans:
            _check_nans(prim, outs)
        return [wrap(np.asarray(o, dtype=aval.dtype), weak_type=aval.weak_type)
                for o, aval in zip(outs, out_avals)]

    def __repr__(self) -> str:
        return "EvalTrace"


def has_nan(values) -> bool:
    """Whether any of the float arrays among `values` holds a NaN (`config.debug_nans`)."""
    return any(v.dtype.kind == "f" and np.isnan(v).any() for v in map(np.asarray, values))


def _check_nans(prim: Primitive, outs) -> None:
    """`config.debug_nans`: JAX's FloatingPointError for a NaN that `prim` just made."""
    if has_nan(outs):
        where = user_line()
        raise FloatingPointError(f"invalid value (nan) encountered in {prim.name}"
                                 + (f"\n  at {where}" if where else ""))


def checked_abstract_eval(prim: Primitive, avals, params) -> list[ShapedArray]:
    """`abstract_eval`, with a TypeError pointing at the user's line (every trace uses it)."""
    try:
        return abstract_eval(prim, avals, params)
    except TypeError as e:
        where = user_line()
        raise TypeError(f"{e}" + (f"\n  at {where}" if where else "")) from None


# --------------------------------------------------------------------------- the trace stack


class TraceState(threading.local):
    """The traces active in *this* thread, innermost last (JAX's `TracingContext`).

    The bottom entry is always `eval_trace`; above it are staging traces (tracing.JaxprTrace),
    anything with `process_primitive`. Each thread has its own stack, so a thread tracing a
    function never captures the operations of another thread that runs eagerly or traces too.
    """

    def __init__(self):
        self.stack: list[Any] = [eval_trace]


eval_trace = EvalTrace()

# threading.local rather than a contextvars.ContextVar: tracing is synchronous (a traced
# function never awaits), so a thread is the right scope; it is what JAX uses, and reading
# an attribute of it is cheap enough for the cached-call fast path in jit.py.
trace_state = TraceState()


def current_trace():
    """The innermost trace of this thread (`eval_trace` when nothing is being traced)."""
    return trace_state.stack[-1]


def is_tracing() -> bool:
    """Whether this thread is inside a staging trace (so `bind` records, not computes)."""
    return len(trace_state.stack) > 1


@contextlib.contextmanager
def new_trace(trace):
    """`trace` is the innermost trace of this thread inside the block (pushed on the stack);
    after it, even when the block raises, the stack is exactly as it was before."""
    stack = trace_state.stack
    depth = len(stack)
    stack.append(trace)
    try:
        yield trace
    finally:
        del stack[depth:]


# True while `bind` is minijit's own and on no trial: `bind` then goes straight to the trace,
# as every eager operation does, without asking `build` (the build track's listener keeps it).
_own_bind = [True]


def bind(prim: Primitive, *args, **params):
    """Apply `prim` to `args` in the innermost trace: stage it, or (at the bottom) run it.

    Returns one value, or a list of values when `prim.multiple_results`. This is the build
    track's piece `bind` (`reference_bind`), or a learner's once switched in (chapter 02).
    """
    if _own_bind[0]:
        outs = trace_state.stack[-1].process_primitive(prim, args, params)
        return outs if prim.multiple_results else outs[0]
    if build.running("bind") is not None and _handed_over(sys._getframe(1)):
        build.guard("bind")  # a learner's bind called this one: it hands its work over
    return build.call("bind", prim, *args, **params)


def reference_bind(prim: Primitive, *args, **params):
    """minijit's own `bind`, the piece: the innermost trace of this thread processes `prim`
    (a list of outputs); one output comes back alone, several as that list."""
    build.guard("bind")  # fails when a learner's bind hands its work to this one
    outs = trace_state.stack[-1].process_primitive(prim, args, params)
    return outs if prim.multiple_results else outs[0]


def _handed_over(frame) -> bool:
    """Whether `bind`'s caller (`frame`, or the caller of `Primitive.bind`) is the learner's
    `bind` itself, or `build` running minijit's `bind` as the learner's: a primitive that the
    learner's bind passes to a trace comes back through a `process_primitive` instead."""
    if frame.f_code is Primitive.bind.__code__:
        frame = frame.f_back
    return frame.f_code in build.PIECE_RUNNERS or (
        frame.f_back is not None and frame.f_back.f_code in build.PIECE_RUNNERS)


def _bind_switched() -> None:
    _own_bind[0] = build.is_reference("bind")


def _check_bound(result, prim, /, *args, **params) -> str | None:
    """What is wrong with the result of a learner's `bind`, if anything: its form."""
    if prim.multiple_results and not isinstance(result, (list, tuple)):
        return (f"returned a {type(result).__name__} for {prim.name}, a primitive with several "
                "outputs: bind returns the list that process_primitive gave")
    if not prim.multiple_results and isinstance(result, (list, tuple)):
        return (f"returned a {type(result).__name__} for {prim.name}, a primitive with one "
                "output: bind returns that output itself (the list's only element), and the "
                "list only when prim.multiple_results")
    return None


class _Recorder:
    """A trace for bind's small example: it records what it is handed and names its outputs."""

    def __init__(self, name: str):
        self.name, self.handed = name, []

    def process_primitive(self, prim, args, params):
        self.handed.append((prim, args, params))
        return [f"{self.name}:{prim.name}:{k}" for k in range(2 if prim.multiple_results else 1)]


def _selftest_bind(candidate) -> str | None:
    """Bind with a candidate: at the bottom of the stack (it computes), then with two traces
    above it (the innermost processes; one output alone, two as a list; args and params as
    given)."""
    sin = Primitive("sin_for_bind")
    pair = Primitive("pair_for_bind", multiple_results=True)
    abstract_eval_rules[sin] = lambda x: [x]
    impl_rules[sin] = lambda x: [np.sin(x)]
    saved, trace_state.stack = trace_state.stack, [eval_trace]
    _own_bind[0] = False  # minijit's bind, called by the candidate, is then seen (guard)
    try:
        x = np.array([0.0, 1.0])
        got = build.trial(candidate, sin, x)
        problem = _check_bound(got, sin, x)
        if problem:
            return problem
        if not isinstance(got, np.ndarray) or not np.array_equal(got, np.sin(x)):
            return (f"returned {got!r} for sin of {x!r} with no trace above the EvalTrace, "
                    f"where it computes {np.sin(x)!r}")
        outer, inner = _Recorder("outer"), _Recorder("inner")
        with new_trace(outer), new_trace(inner):
            one = build.trial(candidate, sin, "x")
            two = build.trial(candidate, pair, "x", "y", axis=1)
        if outer.handed:
            return ("handed a primitive to a trace below the innermost one: bind hands it to "
                    "the innermost trace, the last one on trace_state.stack")
        if [(p, tuple(a), k) for p, a, k in inner.handed] != [
                (sin, ("x",), {}), (pair, ("x", "y"), {"axis": 1})]:
            return (f"handed the innermost trace {inner.handed!r}; it gets (prim, args, params) "
                    "as bind was given them: args a tuple, params a dict")
        problem = _check_bound(one, sin, "x") or _check_bound(two, pair, "x", "y", axis=1)
        if problem:
            return problem
        if one != "inner:sin_for_bind:0" or list(two) != ["inner:pair_for_bind:0",
                                                          "inner:pair_for_bind:1"]:
            return (f"returned {one!r} and {two!r}, not what the innermost trace's "
                    "process_primitive gave")
        return None
    finally:
        _bind_switched()
        trace_state.stack = saved
        del abstract_eval_rules[sin], impl_rules[sin]


build.register("bind", reference_bind, chapter="02_tracing",
               signature="bind(prim, *args, **params) -> one output, or a list of outputs",
               check=_check_bound, selftest=_selftest_bind)
build.on_switch(_bind_switched)
