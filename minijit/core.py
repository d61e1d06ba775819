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
and the same error messages (autodidax's EvalTrace).
"""

from __future__ import annotations

import functools
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


def bind(prim: Primitive, *args, **params):
    """Apply `prim` to `args` in the innermost trace: stage it, or (at the bottom) run it.

    Returns one value, or a list of values when `prim.multiple_results`.
    """
    outs = trace_state.stack[-1].process_primitive(prim, args, params)
    return outs if prim.multiple_results else outs[0]
