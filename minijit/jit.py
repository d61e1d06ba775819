"""`jit` and `make_jaxpr`: signature -> cache -> trace -> (passes) -> backend -> call (chapter 04).

A call to a jitted function `f` (`jit_call`, the build track's chapter 04 piece, takes these
steps, each a method of `f`):
1. `f.split(args, kwargs)`: the static values and the traced leaves (`arguments.py`);
2. `f.key(call)`: the key (tree structure, leaf shapes/dtypes/weak types, static values;
   the `cache_key` piece), and `f.lookup(key)` in the function's cache;
3. on a miss, the AOT stages: `f.trace_call(call)` traces the function to a Jaxpr (one
   trace counted), `.lower()` runs the optimizer, `.compile()` the backend; `f.store(key,
   compiled)` stores the entry (a failed trace or compile stores nothing);
4. `f.execute(entry, call)` runs the compiled program on the leaves, and
   `entry.wrap_outputs(outs)` rebuilds the output pytree.
A call of plain arrays, nothing static, whose entry minijit's own pieces made, then takes the
fast path of `JitFunction.__call__`, which skips all of this but the lookup and the run.

Called while another function is being traced, a jitted function does none of this: it is
traced into a sub-Jaxpr and becomes one `jit` equation of the caller (`jit_call.py`), which
the optimizer inlines.

The cache belongs to the Python function object (and the jit options), as in JAX: `jit(f)`
twice shares one cache, but a lambda re-created on every call never hits.
"""

from __future__ import annotations

import functools
import logging
import sys
import threading
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field
from time import perf_counter
from typing import Any

import numpy as np

from minijit import build, errors
from minijit.arguments import ArgSpec, SplitArgs, split_args
from minijit.array import Array, wrap
from minijit.backends import get_backend
from minijit.config import config
from minijit.core import ShapeDtypeStruct, has_nan, is_tracing, trace_state
from minijit.explain import aval_str, differences, explain_miss
from minijit.ir import ClosedJaxpr
from minijit.jit_call import call_jitted
from minijit.passes import run_passes
from minijit.tracing import trace_to_jaxpr
from minijit.tree_util import (
    PyTreeDef,
    tree_leaves,
    tree_map,
    tree_structure,
    tree_unflatten,
)

logger = logging.getLogger("minijit")


# --------------------------------------------------------------------------- tracing


def _trace(fun: Callable, spec: ArgSpec, split: SplitArgs) -> tuple[ClosedJaxpr, PyTreeDef]:
    def flat_fun(*leaves):
        args, kwargs = split.rebuild(leaves)
        return fun(*args, **kwargs)

    jaxpr, consts, out_tree = trace_to_jaxpr(
        flat_fun, split.shaped_arrays(), split.leaf_names, spec.fun_name
    )
    return ClosedJaxpr(jaxpr, tuple(consts)), out_tree


def _out_shapes(closed: ClosedJaxpr, out_tree: PyTreeDef) -> Any:
    """The outputs' shapes and dtypes, as ShapeDtypeStructs in the function's output tree."""
    return tree_unflatten(out_tree, [ShapeDtypeStruct(a.shape, a.dtype, weak_type=a.weak_type)
                                     for a in closed.out_avals])


@errors.api_boundary
def make_jaxpr(fun: Callable, static_argnums=None, static_argnames=None, *,
               return_shape: bool = False) -> Callable:
    """`make_jaxpr(f)(*args)` traces `f` on `args` and returns its ClosedJaxpr (printable);
    with `return_shape=True`, also the output's ShapeDtypeStructs, as JAX does."""
    spec = ArgSpec.make(fun, static_argnums, static_argnames)

    @functools.wraps(fun)
    @errors.api_boundary
    def make(*args, **kwargs) -> ClosedJaxpr | tuple[ClosedJaxpr, Any]:
        closed, out_tree = _trace(fun, spec, split_args(spec, args, kwargs, abstract_ok=True))
        return (closed, _out_shapes(closed, out_tree)) if return_shape else closed

    return make


@errors.api_boundary
def eval_shape(fun: Callable, *args, **kwargs) -> Any:
    """The shapes and dtypes `fun(*args, **kwargs)` would return, as a pytree of
    ShapeDtypeStructs. `fun` is traced, never run, so the arguments may be ShapeDtypeStructs."""
    spec = ArgSpec.make(fun)
    split = split_args(spec, args, kwargs, tracers_ok=is_tracing(), abstract_ok=True)
    return _out_shapes(*_trace(fun, spec, split))


# --------------------------------------------------------------------------- the cache


@dataclass
class CacheEntry:
    """Everything a cache hit needs, plus what the course shows about how it was made."""

    split: SplitArgs  # the call that made it (for cache-miss explanations)
    traced: ClosedJaxpr
    optimized: ClosedJaxpr
    executable: Any
    out_tree: PyTreeDef
    timings: dict[str, float] = field(default_factory=dict)  # seconds per stage
    calls: int = 0
    timed_calls: int = 0  # the calls made while `profile_execution` was on ...
    execute_s: float = 0.0  # ... and the time they spent running
    key: Any = None  # the key it was stored under

    def __post_init__(self):
        self.single = self.out_tree.kind == "leaf"  # one array out: no pytree to rebuild
        # an output computed only from weakly typed values stays weak, as in JAX, so that
        # `f(f(0))` finds the entry `f(0)` made
        self.out_weak = tuple(a.weak_type for a in self.traced.out_avals)
        self.single_strong = self.single and not self.out_weak[0]
        # read once here: the fast path calls it without looking through `executable`
        self.fast_call = getattr(self.executable, "fast_call", None)

    def wrap_outputs(self, outs):
        """The flat outputs of a run (`JitFunction.execute`) as the function's result: each a
        minijit `Array`, weakly typed where its type is, in the tree the function returned."""
        return _as_outputs(self.out_tree, outs, self.out_weak)


@dataclass
class Miss:
    """What is needed to explain one cache miss; the text is only built when asked for,
    since comparing with every earlier key costs time proportional to their number."""

    where: str | None
    split: SplitArgs
    previous: int  # how many calls of `history` came before it
    recreated_from: str | None


@dataclass
class Cache:
    entries: dict[tuple, CacheEntry] = field(default_factory=dict)
    trace_count: int = 0
    history: list[SplitArgs] = field(default_factory=list)  # every traced call, in order
    fast: dict[tuple, CacheEntry] = field(default_factory=dict)  # see JitFunction.__call__
    misses: list[Miss] = field(default_factory=list)
    # Held while compiling: threads that miss on one key at once compile it once, and the
    # counters and lists above change together. Reentrant, for a compile that calls back in.
    lock: threading.RLock = field(default_factory=threading.RLock, repr=False, compare=False)


# fun -> {jit options: Cache}; weak, so a cache dies with its function.
_caches: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _forget_compiled() -> None:
    """After a `build` switch, every entry may hold a piece's work (`minijit.build.use`): every
    jitted function forgets what it compiled, fast paths too, and compiles again on its next
    call (a compile that a switch overtakes is not kept either, see `store`)."""
    for per_fun in list(_caches.values()):
        for cache in list(per_fun.values()):
            cache.entries.clear()
            cache.fast.clear()


build.on_switch(_forget_compiled)

# Whether the call path's pieces are minijit's own; every switch updates it (`_note_pieces`),
# so a call reads it without asking `build`.
_own = {"cache_key": True, "jit_call": True}


def _note_pieces() -> None:
    for name in _own:
        _own[name] = build.is_reference(name)


build.on_switch(_note_pieces)

# code object -> "file:line" of the first function object traced with that code
_seen_code: dict[Any, str] = {}
# arrays whose buffers were donated, by id: using them again raises
_donated: weakref.WeakValueDictionary = weakref.WeakValueDictionary()
# True while a donated array may be alive: the fast path then steps aside, since it does not
# look arrays up in `_donated` (a flag keeps its check cheap); the slow path clears it once
# every donated array is gone, so one donation does not slow every later call
_donated_any = [False]
_donation_lock = threading.Lock()  # a flag cleared by one thread as another donates


def _cache_for(fun, options) -> Cache:
    try:
        per_fun = _caches.setdefault(fun, {})
    except TypeError:  # not weak-referenceable (a builtin, say): keep the cache on the wrapper
        return Cache()
    return per_fun.setdefault(options, Cache())


def _defined_at(fun) -> str:
    code = getattr(fun, "__code__", None)
    if code is None:
        return "<unknown>"
    return f"{errors.short_filename(code.co_filename)}:{code.co_firstlineno}"


def optimize(closed: ClosedJaxpr) -> ClosedJaxpr:
    """Run the optimizer's pipeline (`minijit.passes.PIPELINE`; chapters 07 and 08)."""
    return run_passes(closed)


# --------------------------------------------------------------------------- the wrapper


class JitFunction:
    """What `jit(f)` returns: call it like `f`; inspect it with `trace`, `lower`, the cache."""

    def __init__(self, fun: Callable, *, static_argnums=None, static_argnames=None,
                 donate_argnums=None, backend: str | None = None, parallel: bool | None = None):
        if not callable(fun):
            raise TypeError(f"jit expects a callable, got {type(fun).__name__}")
        # First: update_wrapper copies fun.__dict__, which for jit(jit(f)) holds the inner
        # wrapper's spec and cache; our own attributes below must win.
        functools.update_wrapper(self, fun)
        self.fun = fun
        self.spec = ArgSpec.make(fun, static_argnums, static_argnames, donate_argnums)
        self.backend = get_backend(backend)
        self.parallel = None if parallel is None else bool(parallel)
        options = (self.spec.static_argnums, self.spec.static_argnames,
                   self.spec.donate_argnums, self.backend.name, self.parallel)
        self._cache = _cache_for(fun, options)
        # The fast path handles the common call: positional NumPy arrays, nothing static.
        fast_ok = not (self.spec.static_argnums or self.spec.static_argnames
                       or self.spec.donate_argnums)
        self._fast = self._cache.fast if fast_ok else None  # key -> CacheEntry, or no fast path

    # -- calling
    @errors.boundary_code  # errors show the learner's frames only, on the fast path too
    def __call__(self, *args, **kwargs):
        __tracebackhide__ = True  # noqa: F841 - pytest and IPython skip frames marked so
        try:
            # The fast path: a cached signature of plain contiguous arrays, nothing static or
            # donated. It does as little as possible (a cached call should cost microseconds;
            # so it is its own api boundary, a `try` that costs nothing until it catches).
            # While any thread is inside `with disable_jit():`, calls take the slow path,
            # which reads this thread's own setting.
            if self._fast is not None and not kwargs and not (
                    _fast_path_flags[0] or _donated_any[0]) and len(trace_state.stack) == 1:
                entry = self._fast.get(_fast_key(args))
                if entry is not None:
                    # timers cost about a microsecond a call, so only while profiling
                    if _fast_path_flags[1] and config.profile_execution:
                        t0 = perf_counter()
                        outs = entry.fast_call(args)
                        entry.execute_s += perf_counter() - t0
                        entry.timed_calls += 1
                    else:
                        outs = entry.fast_call(args)
                    entry.calls += 1
                    if entry.single_strong:
                        return outs[0].view(Array)
                    return entry.wrap_outputs(outs)
            return self._call(args, kwargs)
        except Exception as e:
            errors.leaving_minijit(e, sys._getframe(1))
            raise

    def _call(self, args, kwargs):
        if _donated_any[0] and not _donated:
            with _donation_lock:
                if not _donated:
                    _donated_any[0] = False
        if config.disable_jit:  # this thread's override, else the process-wide value
            return self.fun(*_as_arrays(args), **_as_arrays(kwargs))
        if is_tracing():  # called while this thread traces another function
            return self._stage(args, kwargs)
        if _own["jit_call"]:
            return jit_call(self, args, kwargs)  # minijit's own, without build's dispatch
        return self._call_learners(args, kwargs)

    def _call_learners(self, args, kwargs):
        """The learner's `jit_call` (`minijit.build`) runs the call, holding this function's
        cache lock throughout: threads that miss on one key at once still compile it once
        (minijit's own takes the lock only to compile, so hits run side by side)."""
        running = build.running("jit_call")
        if running is not None and running[0] is self:
            # the learner's jit_call calls this very function: it hands its work to minijit's,
            # whose guard fails the learner's piece
            return jit_call(self, args, kwargs)
        with self._cache.lock:
            return build.call("jit_call", self, args, kwargs)

    # -- the steps of a call, in the order `jit_call` takes them (chapter 04's exercise)
    def split(self, args: tuple, kwargs: dict) -> SplitArgs:
        """The call's arguments split: static values, traced leaves and their types, the
        tree's structure (`arguments.split_args`); a TypeError names a bad argument."""
        return split_args(self.spec, args, kwargs)

    def key(self, call: SplitArgs):
        """The call's cache key, from the `cache_key` piece (chapter 04's other exercise):
        minijit's own is `call.key`, a learner's is asked through `build`."""
        if _own["cache_key"]:
            return call.key
        return build.call("cache_key", call.static_values, call.leaf_avals, call.in_tree)

    def lookup(self, key) -> CacheEntry | None:
        """The entry stored under `key`, or None: a cache miss."""
        return self._cache.entries.get(key)

    def trace_call(self, call: SplitArgs) -> Traced:
        """A miss's first stage: trace `fun` for the call's types. It counts one trace
        (`trace_count`) and records why the call missed (`cache_misses`). Then
        `.lower()` runs the optimizer and `.compile()` the backend, as the AOT stages do."""
        cache = self._cache
        generation = build.generation()  # the pieces this compile runs with, see `store`
        where = errors.user_location()
        code = getattr(self.fun, "__code__", None)
        recreated = _seen_code.get(code) if cache.trace_count == 0 else None
        t0 = perf_counter()
        closed, out_tree = _trace(self.fun, self.spec, call)
        seconds = perf_counter() - t0
        with cache.lock:
            miss = Miss(where, call, len(cache.history), recreated)
            cache.trace_count += 1
            cache.history.append(call)
            cache.misses.append(miss)
        if code is not None:
            _seen_code.setdefault(code, _defined_at(self.fun))
        if config.explain_cache_misses:
            logger.warning(self._explain(miss))
        return Traced(self, call, closed, out_tree, seconds, generation)

    def store(self, key, compiled: Compiled) -> CacheEntry:
        """The cache entry of a program compiled on a miss (`trace_call(call).lower()
        .compile()`), stored under `key`; later calls with that key find it with `lookup`.

        Nothing is stored if a piece was switched (`minijit.build`) after its trace began:
        the entry then serves this call only."""
        traced = compiled.lowered.traced
        if traced.jitted is not self or traced.generation is None:
            raise TypeError(
                f"{self.spec.fun_name}.store(key, compiled) takes a program of this function "
                "compiled on a cache miss: self.trace_call(call).lower().compile() (the AOT "
                "stages self.trace(...) neither count a trace nor record the miss)")
        timings = {"trace": traced.seconds, "optimize": compiled.lowered.seconds,
                   "compile": compiled.seconds}
        timings.update(getattr(compiled.executable, "timings", {}))  # codegen / compile
        entry = CacheEntry(traced.split, traced.jaxpr, compiled.lowered.jaxpr,
                           compiled.executable, traced.out_tree, timings, key=key)
        with self._cache.lock:
            if traced.generation == build.generation():
                self._cache.entries[key] = entry
        if config.log_compiles:
            logger.warning(
                f"Compiling {self.spec.fun_name} for {self._signature(traced.split)} "
                f"[trace {1e3 * timings['trace']:.1f} ms, optimize "
                f"{1e3 * timings['optimize']:.1f} ms, {self.backend.name} compile "
                f"{1e3 * timings['compile']:.1f} ms]")
        return entry

    def execute(self, entry: CacheEntry, call: SplitArgs) -> list:
        """Run `entry`'s program on the call's leaves: its outputs, flat, as NumPy arrays
        (`entry.wrap_outputs(outs)` makes the function's result of them). It handles
        donation, `profile_execution` and `debug_nans`.

        Under a learner's `cache_key` or `jit_call`, an entry traced for other arguments is
        refused with a PieceError instead of computing the wrong thing."""
        if not (_own["cache_key"] and _own["jit_call"]):
            self._check_hit(entry, call)
        leaves, donated = _leaves_to_run(call, entry.optimized.consts, self.spec.fun_name)
        if config.profile_execution:
            t0 = perf_counter()
            outs = entry.executable(*leaves)
            entry.execute_s += perf_counter() - t0
            entry.timed_calls += 1
        else:
            outs = entry.executable(*leaves)
        entry.calls += 1
        if any(donated):
            _mark_donated(call.leaves, donated)
        if config.debug_nans and has_nan(outs):
            if any(donated):  # their buffers now hold results: nothing to run again on
                raise FloatingPointError(
                    f"invalid value (nan) in the output of jit({self.spec.fun_name}); its "
                    "donated arguments were overwritten, so it cannot be run again to find "
                    "where: call it without donate_argnums to look")
            self._find_the_nan(*call.rebuild(call.leaves))
        return outs

    def _compile(self, call: SplitArgs) -> Compiled:
        """A miss's three stages in one: trace, lower (optimize), compile (called once per
        trace of minijit's own `jit_call`)."""
        return self.trace_call(call).lower().compile()

    def _fill_fast_path(self, args, kwargs, key, entry: CacheEntry) -> None:
        """Put a stored entry on the fast path (`__call__`), if the call is one it serves and
        minijit's own pieces made the entry and keyed the call: under a learner's `cache_key`
        or `jit_call`, every call asks the learner's piece."""
        if (self._fast is not None and not kwargs and _own["cache_key"] and _own["jit_call"]
                and self._cache.entries.get(key) is entry):
            fast_key = _fast_key(args)
            if fast_key is not None and _exactly(args, entry.optimized.jaxpr.invars):
                self._fast[fast_key] = entry

    def _check_hit(self, entry: CacheEntry, call: SplitArgs) -> None:
        if entry.split.key == call.key:
            return
        # the learner's jit_call looked the call up, or stored the entry, by another key than
        # the call's own; otherwise the key itself (cache_key) conflates the two calls
        piece = ("jit_call" if not _own["jit_call"] and entry.key != self.key(call)
                 else "cache_key")
        _wrong_hit(piece, self.spec.fun_name, call, entry.split)

    def _find_the_nan(self, args, kwargs):
        """`config.debug_nans` and a result holds a NaN: run `fun` again eagerly, where the
        first primitive to make a NaN raises FloatingPointError with the user's line (JAX
        runs "the de-optimized version" the same way). If none does, that is an error too, as
        in JAX: the NaN came in untouched, or only the compiled program made it."""
        name = self.spec.fun_name
        print(f"Invalid nan value encountered in the output of a minijit.jit function "
              f"`{name}`. Calling the de-optimized version.", file=sys.stderr)
        with config.override("disable_jit", True):
            self.fun(*_as_arrays(args), **_as_arrays(kwargs))
        raise FloatingPointError(
            f"invalid value (nan) in the output of jit({name}), but running `{name}` again "
            "without jit made none: the NaN came in with an argument or a constant and was "
            "returned untouched, or the compiled program's optimizations produced it. Remove "
            "the jit to look for it.")

    def _stage(self, args, kwargs):
        """Trace `fun` into a sub-Jaxpr and stage one `jit` equation in the caller's program.

        The arguments split as at a top-level call (static values, pytrees, keywords), but
        their leaves are the caller's tracers. Nothing is compiled and this function's cache
        is neither read nor filled: the caller's compile covers the call (and donation and
        the backend are the caller's). Each call site is traced anew; JAX keeps a cache of
        traced bodies, so there a Python `print` in the callee shows once per signature.
        """
        split = split_args(self.spec, args, kwargs, tracers_ok=True)
        closed, out_tree = _trace(self.fun, self.spec, split)
        outs = call_jitted(closed, split.leaves, self.spec.fun_name)
        return tree_unflatten(out_tree, outs)

    @staticmethod
    def _signature(split: SplitArgs) -> str:
        # a weak type (a Python scalar) is a different cache key, so it must show
        parts = [f"{n}: {aval_str(a)}{' (weak)' if a[2] else ''}"
                 for n, a in zip(split.leaf_names, split.leaf_avals)]
        parts += [f"{n}={k[2]!r}" for n, k in zip(split.static_names, split.static_key)]
        return "(" + ", ".join(parts) + ")"

    # -- seeing inside
    def _cache_size(self) -> int:
        """Number of compiled signatures (JAX has the same private method)."""
        return len(self._cache.entries)

    @property
    def trace_count(self) -> int:
        """How many times the function has been traced (one per cache miss)."""
        return self._cache.trace_count

    @property
    def cache_misses(self) -> list[str]:
        """The explanation of every cache miss so far, oldest first."""
        return [self._explain(m) for m in self._cache.misses]

    def _explain(self, miss: Miss) -> str:
        previous = self._cache.history[:miss.previous]
        return explain_miss(self.spec.fun_name, miss.where, miss.split, previous,
                            miss.recreated_from)

    def cache_entries(self) -> list[CacheEntry]:
        return list(self._cache.entries.values())

    def clear_cache(self) -> None:
        self._cache.entries.clear()
        self._cache.fast.clear()

    def profile(self) -> str:
        """Where the time went, per cache entry (see `minijit.profile`)."""
        from minijit.profile import format_profile

        return format_profile(self)

    @errors.api_boundary
    def trace(self, *args, **kwargs) -> Traced:
        """Stage 1 (AOT): trace without compiling or touching the cache. Arguments may be
        ShapeDtypeStructs, since tracing needs only shapes and dtypes."""
        split = split_args(self.spec, args, kwargs, abstract_ok=True)
        closed, out_tree = _trace(self.fun, self.spec, split)
        return Traced(self, split, closed, out_tree)

    @errors.api_boundary
    def lower(self, *args, **kwargs) -> Lowered:
        return self.trace(*args, **kwargs).lower()

    @errors.api_boundary
    def eval_shape(self, *args, **kwargs) -> Any:
        """The output's ShapeDtypeStructs for these arguments (traced, not compiled)."""
        return self.trace(*args, **kwargs).out_info

    def __repr__(self) -> str:
        return f"<minijit.jit of {self.spec.fun_name}: {self._cache_size()} cache entries>"

    def __get__(self, obj, objtype=None):  # so @jit works on methods
        return self if obj is None else functools.partial(self, obj)


@dataclass
class Traced:
    """`f.trace(x)`: the Jaxpr of `f` for these argument types."""

    jitted: JitFunction
    split: SplitArgs
    jaxpr: ClosedJaxpr
    out_tree: PyTreeDef
    seconds: float = 0.0  # how long tracing took
    # `build.generation()` when a cache miss's trace began (`JitFunction.trace_call`); None
    # for the AOT `f.trace(...)`, which is no cache miss
    generation: int | None = None

    @errors.api_boundary
    def lower(self) -> Lowered:
        t0 = perf_counter()
        optimized = optimize(self.jaxpr)  # run_passes typechecks the result
        return Lowered(self, optimized, perf_counter() - t0)

    def as_text(self) -> str:
        return str(self.jaxpr)

    @property
    def out_info(self) -> Any:
        """The output's shapes and dtypes, as ShapeDtypeStructs in its pytree (JAX's name)."""
        return _out_shapes(self.jaxpr, self.out_tree)


@dataclass
class Lowered:
    """`f.lower(x)`: the optimized program, ready for the backend."""

    traced: Traced
    jaxpr: ClosedJaxpr
    seconds: float = 0.0  # how long the optimizer took

    @errors.api_boundary
    def as_text(self) -> str:
        """What the backend will run: generated source for Numba, LLVM IR for LLVM (or the
        Numba source of a program it leaves to Numba), the Jaxpr otherwise."""
        jitted = self.traced.jitted
        text = getattr(jitted.backend, "text", None)  # a backend of one's own may have none
        if text is None:
            return str(self.jaxpr)
        return text(self.jaxpr, jitted.spec.fun_name, tuple(self.traced.split.donated),
                    jitted.parallel)

    @errors.api_boundary
    def compile(self) -> Compiled:
        jitted = self.traced.jitted
        t0 = perf_counter()
        executable = jitted.backend.compile(self.jaxpr, jitted.spec.fun_name,
                                            tuple(self.traced.split.donated), jitted.parallel)
        return Compiled(self, executable, perf_counter() - t0)


@dataclass
class Compiled:
    """`f.lower(x, n).compile()`: callable on the *dynamic* arguments, of exactly the lowered
    types; the static ones were fixed when lowering (as in JAX: `compiled(x)`, not
    `compiled(x, n)`)."""

    lowered: Lowered
    executable: Any
    seconds: float = 0.0  # how long the backend took

    def _with_statics(self, args, kwargs) -> tuple[tuple, dict]:
        """The full call: the lowered static values put back among `args` and `kwargs`."""
        lowered = self.lowered.traced.split
        statics = lowered.statics
        if not statics:
            return args, kwargs
        positional = [p for p in lowered.positions if p[0] == "arg"]  # the dynamic ones
        if len(args) > len(positional) or any(
                p[0] == "kwarg" and p[1] in kwargs for p in statics):
            names = ", ".join(lowered.static_names)
            raise TypeError(
                f"this compiled function was lowered with its static arguments ({names}) "
                "fixed; call it with the dynamic arguments only, as in JAX: compiled(x), not "
                "compiled(x, n). For other static values, lower again.")
        if len(args) < len(positional):
            return args, kwargs  # too few arguments: split_args says which are missing
        values = {**statics, **dict(zip(positional, args))}
        n_pos = 1 + max((p[1] for p in values if p[0] == "arg"), default=-1)
        full = tuple(values[("arg", i)] for i in range(n_pos))
        return full, {**{p[1]: v for p, v in statics.items() if p[0] == "kwarg"}, **kwargs}

    @errors.api_boundary
    def __call__(self, *args, **kwargs):
        traced = self.lowered.traced
        args, kwargs = self._with_statics(args, kwargs)
        split = split_args(traced.jitted.spec, args, kwargs)
        if split.key != traced.split.key:
            raise TypeError(
                "this compiled function was lowered for different argument types:\n  "
                + "\n  ".join(differences(split, traced.split))
            )
        leaves, donated = _leaves_to_run(split, self.lowered.jaxpr.consts,
                                         traced.jitted.spec.fun_name)
        outs = self.executable(*leaves)
        if any(donated):
            _mark_donated(split.leaves, donated)
        return _as_outputs(traced.out_tree, outs, [a.weak_type for a in traced.jaxpr.out_avals])

    def as_text(self) -> str:
        return self.executable.as_text()


# --------------------------------------------------------------------------- the call path


def jit_call(f: JitFunction, args: tuple, kwargs: dict):
    """minijit's own call path of the jitted function `f` at the top level: the build
    track's chapter 04 piece `jit_call` (`minijit.build`), written with `f`'s steps.

    The call's key (`split`, `key`); `lookup`; on a miss the AOT stages (`trace_call`,
    `.lower()`, `.compile()`) and `store`; then `execute` and `wrap_outputs`. Invariants:
    one trace per miss and none on a hit; an entry is stored only complete, under the key it
    is looked up by (a failed trace or compile stores nothing); threads that miss on one key
    at once compile it once; a call of plain arrays then takes `__call__`'s fast path."""
    build.guard("jit_call")  # fails when a learner's piece hands its work to this one
    call = f.split(args, kwargs)
    key = f.key(call)
    entry = f.lookup(key)
    if entry is None:
        with f._cache.lock:  # another thread may have compiled it while we waited
            entry = f.lookup(key)
            if entry is None:
                entry = f.store(key, f._compile(call))
            f._fill_fast_path(args, kwargs, key, entry)
    return entry.wrap_outputs(f.execute(entry, call))


def _check_jit_call(result, f, args, kwargs) -> str | None:
    if any(not isinstance(leaf, Array) for leaf in tree_leaves(result)):
        return ("returned NumPy arrays, not the function's result: return "
                "entry.wrap_outputs(outs), which puts the flat outputs of f.execute(entry, "
                "call) back in the function's output tree as minijit Arrays (weak types kept)")
    return None


def _described(result) -> tuple:
    """A call's result as plain data: its tree, and each leaf's kind, type and values."""
    leaves = tree_leaves(result)
    return (str(tree_structure(result)),
            [(type(x).__name__, np.asarray(x).dtype.name, np.shape(x),
              bool(getattr(x, "weak_type", False)), np.asarray(x).tolist()) for x in leaves])


def _selftest_jit_call(candidate) -> str | None:
    """Six calls of a fresh jitted function (static `n`; a dict of a tuple out, or one
    array): hits, misses on a dtype, a static value and a strong scalar. Each result, the
    trace count and the number of entries must be minijit's."""
    def fresh() -> JitFunction:
        def program(x, n, scale):
            y = x * n + scale
            return {"y": y, "pair": (y * 2.0, scale)} if n > 1 else y

        return JitFunction(program, static_argnums=1, backend="interpreter")

    x = np.arange(3.0)
    calls = [(x, 2, 1.0), (x + 1.0, 2, 3.0), (x.astype(np.float32), 2, 1.0), (x, 1, 1.0),
             (x, 1, 2.0), (x, 2, np.float64(1.0))]
    mine, own = fresh(), fresh()
    for k, args in enumerate(calls, 1):
        want = _described(build.trial(jit_call, own, args, {}))
        got = _described(candidate(mine, args, {}))
        if got != want:
            return f"returned {got} for call {k} of {calls}, where minijit returns {want}"
        if mine.trace_count != own.trace_count:
            more = mine.trace_count > own.trace_count
            return (f"traced {mine.trace_count} times in the first {k} calls, where minijit "
                    f"traces {own.trace_count}: " + (
                        "trace only on a miss, and store each entry under the key the next "
                        "call looks it up by" if more else "trace and compile on every miss"))
        if mine._cache_size() != own._cache_size():
            return (f"left {mine._cache_size()} cache entries after {k} calls, where minijit "
                    f"stores {own._cache_size()}: store one entry per miss (f.store)")
    return None


build.register("jit_call", jit_call, chapter="04_jit_and_the_cache",
               signature="jit_call(f, args, kwargs) -> the function's result",
               check=_check_jit_call, selftest=_selftest_jit_call)


@errors.api_boundary
def jit(fun: Callable | None = None, *, static_argnums=None, static_argnames=None,
        donate_argnums=None, backend: str | None = None, parallel: bool | None = None):
    """Compile `fun` for the shapes and dtypes it is called with; reuse it while they repeat.

    Works as `@jit`, `jit(f, static_argnums=...)`, `@jit(static_argnums=...)` and
    `functools.partial(jit, static_argnums=...)`. As XLA does, the outer loop of each large
    kernel (2**16 elements or more) runs on all usable cores, chosen per shape when it is
    compiled (`minijit/threads.py`; `config.update("threads", 1)` turns it off).
    `parallel=False` (minijit's own option, not JAX's) keeps this function on one thread;
    `parallel=True` threads its large kernels even where `threads` is 1.
    `backend` (minijit's own too) names what compiles the program: "auto", the default
    (`config.default_backend`), chooses the LLVM or the Numba backend per program
    (`minijit/backend_choice.py`); "llvm", "numba" and "interpreter" choose one.
    """
    options = dict(static_argnums=static_argnums, static_argnames=static_argnames,
                   donate_argnums=donate_argnums, backend=backend, parallel=parallel)
    if fun is None:
        return functools.partial(jit, **options)
    return JitFunction(fun, **options)


# --------------------------------------------------------------------------- helpers

_fast_path_flags = config._fast_path_flags  # read directly on the hot path (see Config)


def _exactly(args, invars) -> bool:
    """Whether `args` are arrays of exactly the program's input types: the fast path passes
    them to compiled code unchecked (`NumbaExecutable.fast_call`)."""
    return len(args) == len(invars) and all(
        a.dtype == v.aval.dtype and a.shape == v.aval.shape for a, v in zip(args, invars))


def _fast_key(args) -> tuple | None:
    """(shape, dtype, weak type) of each argument, one after the other in one tuple, if all
    are C-contiguous, aligned, writable arrays of rank >= 1 (`flags.carray`), else None.

    Those calls need no argument conversion at all, so the fast path can skip it. The key
    holds the dtype itself, not `dtype.num`: `>f8` and `<f8` share a number but are different
    dtypes, and a big-endian array must miss here and be refused by `leaf_aval`, not reach
    compiled code that reads its bytes as native floats. (A dtype also hashes as fast.)"""
    key = ()
    for a in args:  # one flat tuple (shape, dtype, weak, shape, ...): no tuple per argument
        kind = type(a)
        if kind is np.ndarray:
            weak = False
        elif kind is Array:
            weak = a.weak_type
        else:
            return None
        shape = a.shape
        if not shape or not a.flags.carray:
            return None
        key += (shape, a.dtype, weak)
    return key


def _wrong_hit(piece: str, fun_name: str, split: SplitArgs, made_by: SplitArgs):
    """A learner's `cache_key` gave this call the key of an entry traced for other arguments,
    or a learner's `jit_call` ran such an entry: running it could give a wrong answer, so it
    is a PieceError instead."""
    what, fix = (("gave a call of `{}` the key of a program traced for other arguments",
                  "calls that trace different programs need different keys")
                 if piece == "cache_key" else
                 ("ran, for a call of `{}`, a program traced for other arguments",
                  "look each call up by f.key(call), and store each entry under the key its "
                  "call was looked up by"))
    raise build.PieceError(piece, build._message(piece, (
        what.format(fun_name) + ", so running it could compute the wrong thing:\n    "
        + "\n    ".join(differences(split, made_by)) + f"\n  {fix}")))


def _as_arrays(tree):
    """Under disable_jit, NumPy array arguments become `Array`s (so `.at` works)."""
    return tree_map(lambda x: wrap(x) if isinstance(x, np.ndarray) and
                    not isinstance(x, Array) else x, tree)


def _check_not_donated(leaves, names, fun_name):
    for leaf, name in zip(leaves, names):
        if isinstance(leaf, np.ndarray) and _donated.get(id(leaf)) is leaf:
            raise RuntimeError(
                f"Array has been deleted: argument `{name}` of `{fun_name}` was donated to an "
                "earlier call (donate_argnums), so its buffer may have been reused. Pass the "
                "array that call returned, or a fresh one."
            )


def _as_outputs(out_tree: PyTreeDef, outs, weak) -> Any:
    """A call's result: each output an `Array`, weakly typed where its aval is, in the tree
    the function returned."""
    return tree_unflatten(out_tree, [wrap(o, w) for o, w in zip(outs, weak)])


def _leaves_to_run(split: SplitArgs, consts, fun_name: str) -> tuple[list, list[bool]]:
    """A call's leaves, checked against earlier donations and made safe to donate (the
    jitted call and a `Compiled` call share this); mark the donated ones after running."""
    if _donated:
        _check_not_donated(split.leaves, split.leaf_names, fun_name)
    if not any(split.donated):
        return split.leaves, split.donated
    return _donatable(split.leaves, split.donated, consts)


def _donatable(leaves: list, donated: list[bool], consts) -> tuple[list, list[bool]]:
    """The leaves to run with, and which of them are donated in this call.

    Compiled code may overwrite a donated array while it still reads the other inputs, so a
    donated array must be the only way to reach its memory. One that may overlap another
    argument (`f(x, x)`, two views of one array) or a captured constant, that is read-only, or
    that is a view of an array the caller may still hold (`x[::2]`: donating it must not
    change `x`), is copied for this call and counts as not donated: results are right and
    nothing the caller can see changes, whatever is passed."""
    leaves, donated = list(leaves), list(donated)
    for i, (leaf, d) in enumerate(zip(leaves, donated)):
        if not d or not isinstance(leaf, np.ndarray):
            continue
        others = [o for j, o in enumerate(leaves) if j != i and isinstance(o, np.ndarray)]
        others += [c for c in consts if isinstance(c, np.ndarray)]
        if (not leaf.flags.writeable or _views_other_memory(leaf)
                or any(np.may_share_memory(leaf, o) for o in others)):
            leaves[i], donated[i] = np.array(leaf), False
    return leaves, donated


def _views_other_memory(x: np.ndarray) -> bool:
    """Is `x` a view of memory some other array may expose? An `Array` that jit returned
    views a NumPy array that only it can reach (`wrap`), so donating it is safe."""
    if x.flags.owndata:
        return False
    base = x.base
    return not (type(x) is Array and type(base) is np.ndarray and base.flags.owndata
                and base.nbytes == x.nbytes and x.flags.c_contiguous)


def _mark_donated(leaves, donated):
    for leaf, d in zip(leaves, donated):
        if d and isinstance(leaf, np.ndarray):
            with _donation_lock:
                _donated[id(leaf)] = leaf
                _donated_any[0] = True
            leaf.flags.writeable = False
