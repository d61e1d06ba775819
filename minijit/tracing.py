"""Tracers and the staging trace that turns a Python function into a Jaxpr (chapter 02).

A `Tracer` stands in for an array while a function runs: it knows its abstract value (shape
and dtype) but not its data. Every operation on it calls `bind`, which asks the innermost
`JaxprTrace` to record an equation and hand back a new tracer for the result. When the function
returns, the recorded equations are the Jaxpr.

Anything Python needs as a concrete value (`if x > 0`, `range(n)`, `float(x)`, `np.sin(x)`)
is not there; those conversions raise the errors of `minijit.errors`, with the argument the
value came from, the user's line and the fix.

Invariants:
- a tracer belongs to exactly one trace; traces nest (control flow traces sub-functions) and a
  sub-trace *captures* outer tracers and constant arrays as its own constvars;
- only a top-level Jaxpr's constvars are bound to concrete arrays; a sub-Jaxpr's constvars are
  bound to tracers of the enclosing trace (the caller turns them into operands);
- once `trace_to_jaxpr` returns, its trace is dead and its tracers must not be used.
- the trace stack is per thread (`core.trace_state`): a trace and its sub-traces live in the
  thread that started it, and a tracer used in another thread is a leaked tracer.
"""

from __future__ import annotations

import gc
import sys
import weakref
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from minijit import build, errors
from minijit.config import config
from minijit.core import (
    Primitive,
    ShapedArray,
    Tracer,
    checked_abstract_eval,
    current_trace,
    get_aval,
    trace_state,
)
from minijit.ir import Eqn, Jaxpr, Lit, Var, reference_pp_jaxpr
from minijit.tree_util import PyTreeDef, tree_flatten_with_names

# --------------------------------------------------------------------------- tracers


class JaxprTracer(Tracer):
    """A stand-in for an array while `JaxprTrace` records (operators: `array_methods.py`).

    `isinstance(x, Tracer)` (the base class, from `core`) is how the rest of minijit asks
    "is this traced?"; this subclass is the one tracer minijit has.
    """

    __slots__ = ("_trace", "atom", "source", "__weakref__")

    def __init__(self, trace: JaxprTrace, atom: Var | Lit, source: str | None = None):
        self._trace = trace
        self.atom = atom
        self.source = source

    # -- what is known: the abstract value
    @property
    def aval(self) -> ShapedArray:
        return self.atom.aval

    # shape, dtype, ndim, size, weak_type: core.Tracer's, read from this aval

    @property
    def itemsize(self) -> int:
        return self.aval.dtype.itemsize

    @property
    def nbytes(self) -> int:
        return self.aval.size * self.aval.dtype.itemsize

    def __repr__(self) -> str:
        return f"Traced<{self.aval!r}>with<JaxprTrace({self._trace.fun_name})>"

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of unsized object (a traced scalar)")
        return self.shape[0]

    def __iter__(self):
        if not self.shape:
            raise TypeError("iteration over a 0-d array")
        return (self[i] for i in range(self.shape[0]))  # shapes are static: this unrolls

    # -- what is not known: the data. Each conversion raises with the fix.
    def __bool__(self):
        raise _concretization_error(
            self, errors.TracerBoolConversionError,
            "Attempted boolean conversion of a traced array "
            "(`if`, `while`, `and`, `or`, `not` and `assert` need a concrete True or False)",
            ["choose values without branching: mnp.where(cond, x_if_true, x_if_false) "
             "(computes both sides)",
             "run one branch chosen at run time: lax.cond(pred, true_fn, false_fn, *operands)"],
        )

    def __index__(self):
        raise _concretization_error(
            self, errors.TracerIntegerConversionError,
            "Attempted to use a traced array as a Python int "
            "(`range(n)`, indexing a list or tuple, `[0] * n`)",
            ["loop a traced number of times with lax.fori_loop(0, n, body, init)",
             "pick from a list with a traced index by making it an array: "
             "mnp.asarray(values)[i]"],
        )

    def __int__(self):
        raise _concretization_error(
            self, errors.ConcretizationTypeError,
            "Attempted to convert a traced array to a Python int with int()",
            ["keep it an array: use x.astype(mnp.int64) instead of int(x)"],
        )

    def __float__(self):
        raise _concretization_error(
            self, errors.ConcretizationTypeError,
            "Attempted to convert a traced array to a Python float with float()",
            ["keep it an array: use x.astype(mnp.float64) instead of float(x)"],
        )

    def item(self, *args):
        raise _concretization_error(
            self, errors.ConcretizationTypeError,
            "Attempted to read an element of a traced array as a Python scalar with .item()",
            ["keep it an array: index it (x[i]) instead of x.item(i)"],
        )

    def __complex__(self):
        raise _concretization_error(
            self, errors.ConcretizationTypeError,
            "Attempted to convert a traced array to a Python complex with complex()", [],
        )

    def __format__(self, spec):
        if not spec:
            return repr(self)
        raise _concretization_error(
            self, errors.ConcretizationTypeError,
            f"Attempted to format a traced array with '{spec}' (formatting needs its value)",
            ["print values on every call with minijit.debug.print('x = {x}', x=x)"],
        )

    def __array__(self, dtype=None, copy=None):
        raise _concretization_error(
            self, errors.TracerArrayConversionError,
            "The numpy.ndarray conversion method __array__() was called on a traced array: "
            "NumPy functions (np.asarray, np.sin, ...) need real data, which does not exist "
            "while tracing",
            ["use minijit.numpy inside jitted functions: mnp.sin(x) instead of np.sin(x)",
             "or move the NumPy work outside the jitted function"],
            static_fix=False,
        )

    def __hash__(self):
        raise TypeError(
            "unhashable type: a traced array cannot be a dict key or set member; "
            "if it is a setting known before the call, mark it static (static_argnames=...)"
        )

    def raise_leaked(self):
        raise self.leaked_error()

    def leaked_error(self) -> errors.UnexpectedTracerError:
        return errors.UnexpectedTracerError(
            f"Encountered an unexpected tracer {self.aval.str_short()}: it was created while "
            f"tracing `{self._trace.fun_name}`"
            + (f" at {self.source}" if self.source else "")
            + ", escaped that trace (stored in a global, a list or an attribute) and is used "
            "after the trace ended. Fix: return the value from the jitted function instead of "
            "storing it; wrap the call in `with minijit.checking_leaks():` to find the leak."
        )


# --------------------------------------------------------------------------- the trace


class JaxprTrace:
    """Records equations for one function being traced (JAX's DynamicJaxprTrace)."""

    def __init__(self, fun_name: str = "fun", parent: JaxprTrace | None = None):
        self.fun_name = fun_name
        self.parent = parent
        self.alive = True
        self.eqns: list[Eqn] = []
        self.invars: list[Var] = []
        self.arg_names: dict[int, str] = {}
        # constvars and what they are bound to: arrays (top level) or outer tracers (sub-trace)
        self.constvars: list[Var] = []
        self.const_values: list[Any] = []
        self._const_ids: dict[int, tuple[Any, Var]] = {}  # id -> (value kept alive, var)
        # weak references to every tracer made, when leak checking is on
        self.made: list[weakref.ref] | None = [] if config.check_tracer_leaks else None
        self._eqns_before = 0

    def var_to_tracer(self, var: Var | Lit, source: str | None) -> JaxprTracer:
        """A new tracer of this trace standing for `var` (JAX's name; a `Lit` works too).

        `source` is where the value was made (`file.py:12 (fn)`), for the message of a
        leaked tracer. Every tracer of a trace is made here, so leak checking sees them all.
        """
        t = JaxprTracer(self, var, source)
        if self.made is not None:
            self.made.append(weakref.ref(t))
        return t

    def new_arg(self, aval: ShapedArray, name: str) -> Tracer:
        v = Var(aval)
        self.invars.append(v)
        self.arg_names[id(v)] = name
        return self.var_to_tracer(v, f"argument `{name}` of `{self.fun_name}`")

    def is_ancestor_of_self(self, trace: JaxprTrace) -> bool:
        t = self.parent
        while t is not None:
            if t is trace:
                return True
            t = t.parent
        return False

    def to_atom(self, x) -> Var | Lit:
        """The Var or Lit that stands for `x` in this trace, capturing it if needed."""
        if isinstance(x, Tracer):
            if x._trace is self:
                return x.atom
            if x._trace.alive and self.is_ancestor_of_self(x._trace):
                return self._capture(x)
            x.raise_leaked()
        if isinstance(x, (bool, int, float, np.generic)) or (
            isinstance(x, np.ndarray) and x.ndim == 0
        ):
            aval = get_aval(x if not isinstance(x, np.ndarray) else x[()])
            return Lit(x.item() if isinstance(x, (np.ndarray, np.generic)) else x, aval)
        if isinstance(x, np.ndarray):
            return self._capture(x)
        raise TypeError(
            f"{type(x).__name__} is not an array type minijit can trace "
            f"(in `{self.fun_name}`); use arrays, Python scalars or pytrees of them"
        )

    def _capture(self, x) -> Var:
        """A constvar for an outer value: an array (top level) or an outer tracer."""
        if id(x) in self._const_ids:
            return self._const_ids[id(x)][1]
        value = x if self.parent is None else self.parent.to_tracer(x)
        v = Var(get_aval(x).strip_weak_type() if isinstance(x, np.ndarray) else x.aval)
        self._const_ids[id(x)] = (x, v)
        self.constvars.append(v)
        self.const_values.append(value)
        return v

    def to_tracer(self, x) -> Tracer:
        if isinstance(x, Tracer) and x._trace is self:
            return x
        return self.var_to_tracer(self.to_atom(x), None)

    def process_primitive(self, prim, args: Sequence, params: dict) -> list[Tracer]:
        """Record `prim` applied to `args` as one equation; one tracer per output.

        `bind` calls this (JAX's `DynamicJaxprTrace.process_primitive`); it runs the build
        track's piece `process_primitive`: the function of that name below, or a learner's
        after `build.use("process_primitive", ...)` (chapter 02's exercise)."""
        self._eqns_before = len(self.eqns)  # what the piece's check counts new equations from
        return build.call("process_primitive", self, prim, args, params)

    # -- explaining where a value came from, for error messages
    def argument_names(self, atom) -> list[tuple[str, ShapedArray]]:
        """(name, aval) of the traced arguments that `atom` depends on (outer ones too)."""
        producers = {id(v): e for e in self.eqns for v in e.outvars}
        captured = dict(zip(map(id, self.constvars), self.const_values))
        names, seen, stack = [], set(), [atom]
        while stack:
            a = stack.pop()
            if isinstance(a, Lit) or id(a) in seen:
                continue
            seen.add(id(a))
            if id(a) in self.arg_names:
                names.append((self.arg_names[id(a)], a.aval))
            elif id(a) in producers:
                stack.extend(producers[id(a)].invars)
            elif isinstance(captured.get(id(a)), Tracer):
                outer = captured[id(a)]
                names += outer._trace.argument_names(outer.atom)
        return sorted(set(names), key=lambda na: na[0])


# --------------------------------------------------------------------------- recording an equation


def process_primitive(trace: JaxprTrace, prim, args: Sequence, params: dict) -> list[Tracer]:
    """minijit's own staging of one primitive: record one equation in `trace`.

    Invariants (the piece's check holds a learner's to them):
    - each argument becomes an atom with `trace.to_atom`: a tracer of this trace is its Var,
      a Python scalar a `Lit`, an array or an outer tracer a captured constvar;
    - the output types are what the primitive's abstract-eval rule says, one new `Var` for
      each (multi-output primitives, `cond` and `while`, have several; `debug.print` none);
    - exactly one `Eqn` is appended to `trace.eqns`, with a copy of `params` (the equation
      owns its params: the caller's dict stays the caller's) and the learner's line as its
      source, for error messages (`errors.user_location()`);
    - the result is one tracer of `trace` per outvar, in order, made with the same source.
    """
    build.guard("process_primitive")  # fails when a learner's piece hands its work to this one
    atoms = [trace.to_atom(a) for a in args]
    out_avals = checked_abstract_eval(prim, [a.aval for a in atoms], params)
    source = errors.user_location()
    outvars = tuple(Var(aval) for aval in out_avals)
    trace.eqns.append(Eqn(prim, tuple(atoms), outvars, dict(params), source))
    return [trace.var_to_tracer(v, source) for v in outvars]


def _same_atom(got, want) -> bool:
    """`got` is the atom `want` (a Var itself; a Lit of the same type and value)."""
    if isinstance(want, Lit):
        return (isinstance(got, Lit) and got.aval == want.aval  # repr: nan and -0.0 too
                and type(got.val) is type(want.val) and repr(got.val) == repr(want.val))
    return got is want


def _describe(atom, trace: JaxprTrace) -> str:
    """An atom in words, for the check's messages: which Var it is matters, not its type."""
    if isinstance(atom, Lit):
        return f"the literal {atom.val!r}:{atom.aval.str_short()}"
    if not isinstance(atom, Var):
        return f"a {type(atom).__name__}"
    kind = ("a constvar (a captured value)" if any(atom is v for v in trace.constvars)
            else "an invar" if any(atom is v for v in trace.invars)
            else "the outvar of an earlier equation" if any(
                atom is v for e in trace.eqns[:-1] for v in e.outvars)
            else "a Var that nothing defines")
    return f"{kind} of type {atom.aval.str_short()}"


def _check_recorded(outs, trace: JaxprTrace, prim, args: Sequence, params: dict) -> str | None:
    """What is wrong with `outs`, and the equation recorded with them, if anything."""
    if not isinstance(outs, (list, tuple)):
        return (f"returned a {type(outs).__name__}; it must return a list of tracers of the "
                "trace it was given, one per output (trace.var_to_tracer(var, source))")
    for t in outs:
        if not (isinstance(t, JaxprTracer) and t._trace is trace):
            return (f"returned {t!r} among its results; it must return tracers of the trace "
                    "it was given, one per output (trace.var_to_tracer(var, source))")
    new = len(trace.eqns) - trace._eqns_before
    if new != 1:
        return (f"recorded {'no equation' if new < 1 else f'{new} equations'} for one "
                f"{prim.name}; it must append exactly one Eqn to trace.eqns")
    eqn = trace.eqns[-1]
    if not isinstance(eqn, Eqn):
        return f"appended a {type(eqn).__name__} to trace.eqns; equations are Eqns"
    if not (isinstance(eqn.invars, tuple) and isinstance(eqn.outvars, tuple)
            and isinstance(eqn.params, dict)):
        return ("recorded an Eqn whose invars or outvars are not tuples, or whose params "
                "are not a dict")
    if eqn.primitive is not prim:
        return f"recorded a {eqn.primitive} equation for the primitive {prim.name}"
    if (set(eqn.params) != set(params)
            or any(eqn.params[k] is not params[k] for k in params)):
        return (f"recorded params {sorted(eqn.params)} where {prim.name} was bound with "
                f"params {sorted(params)}; an equation keeps the params it was bound with")
    if eqn.params is params:
        return ("recorded the params dict it was given; an equation owns its params, so "
                "record a copy (the caller's dict stays the caller's)")
    if len(eqn.invars) != len(args):
        return f"recorded {len(eqn.invars)} inputs for {len(args)} arguments"
    for k, (atom, arg) in enumerate(zip(eqn.invars, args)):
        want = trace.to_atom(arg)
        if not _same_atom(atom, want):
            return (f"recorded input {k} of {prim.name} as {_describe(atom, trace)}, where "
                    f"it is {_describe(want, trace)}: trace.to_atom(arg) is the atom of an "
                    "argument (a tracer's Var, a Lit for a Python scalar, a captured constvar "
                    "for an array or an outer tracer)")
    out_avals = checked_abstract_eval(prim, [a.aval for a in eqn.invars], eqn.params)
    if len(eqn.outvars) != len(out_avals):
        return (f"recorded {len(eqn.outvars)} outvars for {prim.name}, whose abstract eval "
                f"gives {len(out_avals)} output types: one new Var per type")
    for k, (v, aval) in enumerate(zip(eqn.outvars, out_avals)):
        if not isinstance(v, Var) or any(v is a for a in eqn.invars) or any(
                v is w for w in eqn.outvars[:k]):
            return f"recorded outvar {k} as {v!r}; each output needs a new Var of its own"
        if v.aval != aval:
            return (f"recorded outvar {k} of {prim.name} with type {v.aval.str_short()}, "
                    f"where abstract eval says {aval.str_short()}")
    if len(outs) != len(eqn.outvars):
        return (f"returned {len(outs)} tracers for a {prim.name} equation with "
                f"{len(eqn.outvars)} outvars")
    for k, (t, v) in enumerate(zip(outs, eqn.outvars)):
        if t.atom is not v:
            return (f"returned tracer {k} of {t.atom!r}, which is not outvar {k} of the "
                    "recorded equation: return one tracer per outvar, in order")
    where = errors.user_location()
    if eqn.source != where:
        return (f"recorded the source {eqn.source!r}, where the line being traced is "
                f"{where!r} (errors.user_location(), called in process_primitive itself)")
    for k, t in enumerate(outs):
        if t.source != eqn.source:
            return (f"returned tracer {k} with source {t.source!r}; give it its equation's "
                    f"source ({eqn.source!r}), which a leaked tracer's message names")
    return None


# A primitive with two outputs, for the selftest only (its rule is registered while it runs).
_pair_p = Primitive("pair", multiple_results=True)


def _selftest(candidate) -> str | None:
    """Record `b = mul a 2.0; c = add b w; d = reduce_sum c; e, f = pair d c` (w a captured
    array; pair has two outputs) with a candidate, and compare with minijit's own recording."""
    from minijit import primitives as P
    from minijit.core import abstract_eval_rules

    f64 = ShapedArray((3,), np.dtype(np.float64))
    w = np.array([1.0, 2.0, 3.0])
    # (primitive, arguments: a name or a value, params, names of the outputs)
    steps = [(P.mul_p, ["a", 2.0], {}, "b"), (P.add_p, ["b", w], {}, "c"),
             (P.reduce_sum_p, ["c"], {"axes": (0,)}, "d"), (_pair_p, ["d", "c"], {}, "ef")]

    def record(fn, run):
        trace = JaxprTrace("selftest")
        env = {"a": trace.new_arg(f64, "a")}
        for prim, names, params, out_names in steps:
            args = [env[n] if isinstance(n, str) else n for n in names]
            params = dict(params)
            trace._eqns_before = len(trace.eqns)
            outs = run(fn, trace, prim, args, params)
            problem = _check_recorded(outs, trace, prim, args, params)
            if problem:
                return None, problem
            env.update(zip(out_names, outs))
        jaxpr = Jaxpr(tuple(trace.constvars), tuple(trace.invars), tuple(trace.eqns),
                      (env["e"].atom, env["f"].atom))
        return reference_pp_jaxpr(jaxpr), None

    abstract_eval_rules[_pair_p] = lambda x, y: [x, y]
    try:
        got, problem = record(candidate, build.trial)
        if problem:
            return problem
        want, _ = record(process_primitive, lambda fn, *args: fn(*args))
    finally:
        del abstract_eval_rules[_pair_p]
    if got != want:
        return f"recorded {got}, where minijit records {want}"
    return None


build.register("process_primitive", process_primitive, chapter="02_tracing",
               signature="process_primitive(trace, prim, args, params) -> list of tracers",
               check=_check_recorded, selftest=_selftest)


def _concretization_error(tracer: Tracer, cls, what: str, fixes: list[str],
                          static_fix: bool = True) -> Exception:
    trace = tracer._trace
    if not trace.alive:  # the real problem is the leak, not the conversion
        return tracer.leaked_error()
    deps = trace.argument_names(tracer.atom)
    names = [n for n, _ in deps]
    lines = [f"{what}. The traced array has type {tracer.aval.str_short()}."]
    if names:
        listed = ", ".join(f"`{n}`" for n in names)
        lines.append(
            f"Its value depends on the traced argument{'s' if len(names) > 1 else ''} {listed} "
            f"of `{trace.fun_name}`: while tracing, only shapes and dtypes are known, not values."
        )
    else:
        lines.append(
            "It depends on no argument: it was computed inside the traced function. Compute "
            "constants with NumPy (np.) instead of minijit.numpy to keep them concrete."
        )
    where = errors.user_line()
    if where:
        lines.append(f"At {where}")
    # A leaf inside a pytree (`params['n']`) is not advised either: static would hash the
    # whole container, and dicts and lists are not hashable.
    # Python scalars are what static arguments usually are (a 0-d array is not hashable).
    roots = sorted({n for n, aval in deps
                    if aval.weak_type and not n.startswith("args") and _root_name(n) == n})
    if static_fix and roots:
        spelled = ", ".join(repr(r) for r in roots)
        trailing = "," if len(roots) == 1 else ""  # ('n',) but ('a', 'b')
        fixes = [*fixes, f"if {' and '.join(f'`{r}`' for r in roots)} "
                         f"{'is a setting' if len(roots) == 1 else 'are settings'} known before "
                         f"the call, mark {'it' if len(roots) == 1 else 'them'} static: "
                         f"jit({trace.fun_name}, static_argnames=({spelled}{trailing}))"]
    if fixes:
        lines.append("How to fix it:\n" + "\n".join(f"  - {f}" for f in fixes))
    return cls("\n".join(lines))


def _root_name(path: str) -> str:
    """`params['w']` -> `params`; `x.field` -> `x`."""
    for i, ch in enumerate(path):
        if ch in "[.":
            return path[:i]
    return path


# --------------------------------------------------------------------------- tracing a function


def trace_to_jaxpr(
    fun: Callable, in_avals: Sequence[ShapedArray], arg_names: Sequence[str],
    fun_name: str | None = None,
) -> tuple[Jaxpr, list[Any], PyTreeDef]:
    """Run `fun(*tracers)` under a new trace; returns (jaxpr, const values, output treedef).

    `fun` takes one argument per aval and returns a pytree of arrays. Nested inside another
    trace, the const values include tracers of the enclosing trace (captured variables).
    """
    name = fun_name or getattr(fun, "__name__", "fun")
    outer = current_trace()
    trace = JaxprTrace(name, parent=outer if isinstance(outer, JaxprTrace) else None)
    tracers = [trace.new_arg(aval, n) for aval, n in zip(in_avals, arg_names)]
    stack = trace_state.stack  # this thread's: other threads trace or run eagerly meanwhile
    stack.append(trace)
    try:
        out_atoms, out_tree = _output_atoms(trace, fun(*tracers), name)
    finally:
        stack.pop()
        trace.alive = False
    if trace.made is not None:
        del tracers
        _check_leaks(trace)
    jaxpr = Jaxpr(tuple(trace.constvars), tuple(trace.invars), tuple(trace.eqns),
                  tuple(out_atoms))
    return jaxpr, trace.const_values, out_tree



def _output_atoms(trace: JaxprTrace, out, name: str) -> tuple[list, PyTreeDef]:
    leaves, out_tree = tree_flatten_with_names(out, "output")
    atoms = []
    for path, leaf in leaves:
        if not isinstance(leaf, (Tracer, np.ndarray, np.generic, bool, int, float)):
            raise TypeError(
                f"`{name}` returned a {type(leaf).__name__} at {path}; a traced function "
                "must return arrays, Python scalars, or tuples/lists/dicts of them"
            )
        atoms.append(trace.to_atom(leaf))
    return atoms, out_tree


def _check_leaks(trace: JaxprTrace) -> None:
    """Raise if a tracer of the finished `trace` is still referenced from somewhere."""
    gc.collect()
    leaked = [t for t in (r() for r in trace.made) if t is not None]
    if not leaked:
        return
    frame_type = type(sys._getframe())
    holders = sorted({type(h).__name__ for t in leaked for h in gc.get_referrers(t)
                      if h is not leaked and not isinstance(h, frame_type)})
    first = leaked[0]
    raise errors.UnexpectedTracerError(
        f"Leaked {len(leaked)} tracer{'s' if len(leaked) > 1 else ''} while tracing "
        f"`{trace.fun_name}`: {first.aval.str_short()} created at {first.source or '?'}"
        + (f", still referenced by a {' / '.join(holders)}" if holders else "")
        + ". A traced value was stored outside the function (a global, a list, an attribute): "
        "return it instead, or store a concrete value computed outside jit."
    )
