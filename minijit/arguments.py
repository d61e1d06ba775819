"""How a call's arguments split into static values and traced leaves (chapter 04).

`jit` and `make_jaxpr` see `f(*args, **kwargs)`. Static arguments (named by position or by
name; each implies the other through `f`'s signature) are hashed into the cache key as values,
together with their types (`1`, `1.0` and `True` are equal in Python but not as settings).
Every other argument is a pytree whose leaves are traced; only their abstract values (shape,
dtype, weak type) and the tree's structure go into the key.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from minijit import build, dtypes, errors
from minijit.array import Array
from minijit.core import ShapedArray, ShapeDtypeStruct
from minijit.tracing import Tracer
from minijit.tree_util import PyTreeDef, keystr, tree_flatten_with_path, tree_unflatten


def _as_tuple(x) -> tuple:
    if x is None:
        return ()
    if isinstance(x, (int, str)):
        return (x,)
    return tuple(x)


def _resolve_argnums(option: str, given, params: list, fun_name: str) -> set[int]:
    """The positions `static_argnums` / `donate_argnums` name, negative ones counted from the
    end; a ValueError at `jit(...)` time (as in JAX) for one that `fun` cannot take."""
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    has_varargs = any(p.kind == p.VAR_POSITIONAL for p in params)
    resolved = set()
    for n in _as_tuple(given):
        if not isinstance(n, int):
            raise TypeError(f"{option} must be ints, got {n!r}")
        k = n + len(positional) if n < 0 else n
        # Without a signature (a builtin) only n >= 0 can be taken on trust; with *args any
        # n >= 0 may be passed, but a negative n must still name a parameter.
        if k < 0 or (params and k >= len(positional) and not (has_varargs and n >= 0)):
            raise ValueError(
                f"{option}={n} but `{fun_name}` has only {len(positional)} positional "
                f"parameters (positions count from 0, or from -1 at the end)"
            )
        resolved.add(k)
    return resolved


@dataclass(frozen=True)
class ArgSpec:
    """What `jit(f, static_argnums=..., ...)` was told, resolved against `f`'s signature."""

    fun_name: str
    param_names: tuple[str, ...]  # positional parameter names, in order (None for *args)
    static_argnums: frozenset[int]
    static_argnames: frozenset[str]
    donate_argnums: frozenset[int]

    @staticmethod
    def make(fun: Callable, static_argnums=None, static_argnames=None,
             donate_argnums=None) -> ArgSpec:
        fun_name = getattr(fun, "__name__", "fun")
        names = set(_as_tuple(static_argnames))
        try:
            params = list(inspect.signature(fun).parameters.values())
        except (TypeError, ValueError):
            params = []
        positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY,
                                                      p.POSITIONAL_OR_KEYWORD)]
        nums = _resolve_argnums("static_argnums", static_argnums, params, fun_name)
        for n in nums:
            if n < len(positional) and positional[n].kind == positional[n].POSITIONAL_OR_KEYWORD:
                names.add(positional[n].name)
        for name in list(names):
            idx = next((i for i, p in enumerate(positional) if p.name == name), None)
            if idx is not None:
                nums.add(idx)
            elif params and not any(p.name == name for p in params) and not any(
                p.kind == p.VAR_KEYWORD for p in params
            ):
                raise ValueError(
                    f"static_argnames={name!r} but `{fun_name}` has no parameter "
                    f"named {name!r}"
                )
        donate = _resolve_argnums("donate_argnums", donate_argnums, params, fun_name)
        if donate & nums:
            raise ValueError("an argument cannot be both static and donated")
        return ArgSpec(
            fun_name,
            tuple(p.name for p in positional),
            frozenset(nums), frozenset(names), frozenset(donate),
        )

    def positional_name(self, i: int) -> str:
        return self.param_names[i] if i < len(self.param_names) else f"args[{i}]"


@dataclass
class SplitArgs:
    """One call's arguments, split. `key` is hashable and equal for calls that may share a
    compiled function."""

    leaves: list[Any]  # the dynamic leaves, as passed
    leaf_names: list[str]  # `x`, `params['w']`, `args[2]`
    leaf_avals: list[tuple]  # (shape, dtype, weak_type) per leaf: cheap to hash
    in_tree: PyTreeDef  # structure of (dynamic positional args, dynamic kwargs)
    # (("arg", i, value, type) | ("kwarg", name, value, type), ...): the type too, as in JAX,
    # since 1 == 1.0 == True (and they hash alike) but trace to different programs
    static_key: tuple
    static_names: list[str]  # name of each static entry, for explanations
    donated: list[bool]  # per leaf
    positions: list  # where each top-level dynamic arg goes: ("arg", i) or ("kwarg", name)
    statics: dict  # position -> static value
    # the key `jit` looked this call up by (what the `cache_key` piece returned); set by jit
    lookup_key: Any = None

    @property
    def static_values(self) -> tuple:
        """`((where, value), ...)` in the order of `static_key`, what the `cache_key` piece is
        given: `where` is the position (an int) or the keyword's name (a str)."""
        return tuple((where, value) for _, where, value, _ in self.static_key)

    @property
    def key(self) -> tuple:
        """minijit's own cache key for this call: what `cache_key` (the build track's
        reference) returns for it, built from what `split_args` already made."""
        return (self.in_tree, tuple(self.leaf_avals), self.static_key)

    def shaped_arrays(self) -> list[ShapedArray]:
        return [ShapedArray(*a) for a in self.leaf_avals]

    def rebuild(self, leaves: Sequence) -> tuple[tuple, dict]:
        """(args, kwargs) for calling the user's function, with `leaves` in place."""
        dyn_args, dyn_kwargs = tree_unflatten(self.in_tree, leaves)
        values = dict(self.statics)
        values.update(zip([p for p in self.positions if p[0] == "arg"], dyn_args))
        values.update({("kwarg", k): v for k, v in dyn_kwargs.items()})
        n_pos = max([p[1] for p in values if p[0] == "arg"], default=-1) + 1
        args = tuple(values[("arg", i)] for i in range(n_pos))
        kwargs = {p[1]: v for p, v in values.items() if p[0] == "kwarg"}
        return args, kwargs


_INT_MIN, _INT_MAX = int(np.iinfo(dtypes.int_).min), int(np.iinfo(dtypes.int_).max)


def leaf_aval(x, name: str, fun_name: str, tracers_ok: bool = False,
              abstract_ok: bool = False) -> tuple:
    """`(shape, dtype, weak_type)` of one dynamic leaf, or a TypeError naming the argument.

    A live tracer is a leaf only with `tracers_ok`: a jitted function called while another
    is traced (jit.py) takes the caller's tracers; everything else takes concrete values.
    A `ShapeDtypeStruct` is one only with `abstract_ok`: tracing needs no data, running does."""
    if isinstance(x, ShapeDtypeStruct):
        if not abstract_ok:  # JAX raises a TypeError here too
            raise TypeError(
                f"argument `{name}` of `{fun_name}` is {x!r}: a shape and dtype with no data. "
                f"It can be traced (jit(f).trace, .lower, make_jaxpr, eval_shape) but not "
                f"run; pass an array of that shape and dtype, e.g. "
                f"np.zeros({x.shape}, np.{x.dtype.name})")
        if x.dtype not in dtypes.SHORT_NAMES:
            raise TypeError(
                f"argument `{name}` of `{fun_name}` is {x!r}, of a dtype minijit does not "
                f"support; use one of {', '.join(d.name for d in dtypes.SUPPORTED)}")
        return (x.shape, x.dtype, x.weak_type)
    if isinstance(x, np.ma.MaskedArray):  # an ndarray, but tracing it would drop its mask
        raise TypeError(
            f"argument `{name}` of `{fun_name}` is a masked array (np.ma.MaskedArray); minijit "
            f"arrays have no mask (neither do JAX's), so it would be silently dropped. Pass "
            f"`{name}.filled(value)` to choose what the masked entries hold, or "
            f"`np.asarray({name})` to use the data underneath"
        )
    if isinstance(x, np.ndarray):
        if not x.dtype.isnative:
            # JAX refuses these too. The fast path in jit.py keys on the dtype itself (which
            # includes the byte order), so a warm call cannot slip one past this check.
            native = x.dtype.newbyteorder("=")
            raise TypeError(
                f"argument `{name}` of `{fun_name}` has dtype {x.dtype.str}: {native.name} "
                f"stored in the other byte order (endianness) than this machine's. minijit, "
                f"like JAX, takes arrays in native byte order only; convert it with "
                f"{name}.astype(np.{native.name})"
            )
        if x.dtype not in dtypes.SHORT_NAMES:
            raise TypeError(
                f"argument `{name}` of `{fun_name}` has dtype {x.dtype}, which minijit does not "
                f"support; convert it, e.g. x.astype(np.float64)"
            )
        return (x.shape, x.dtype, x.weak_type if isinstance(x, Array) else False)
    # before the Python scalars: np.float64 subclasses float, but is strongly typed
    if isinstance(x, np.generic) and x.dtype in dtypes.SHORT_NAMES:
        return ((), x.dtype, False)
    if isinstance(x, bool):
        return ((), dtypes.bool_, False)
    if isinstance(x, int):
        if not _INT_MIN <= x <= _INT_MAX:  # as JAX: an OverflowError naming the argument
            raise OverflowError(
                f"argument `{name}` of `{fun_name}` is the Python int {x}, which does not fit "
                f"in int64, the type minijit gives Python ints (as JAX does with "
                f"jax_enable_x64). Pass float({name}) if an approximate value will do"
            )
        return ((), dtypes.int_, True)
    if isinstance(x, float):
        return ((), dtypes.float_, True)
    if isinstance(x, Tracer):
        if not x._trace.alive:  # as JAX: UnexpectedTracerError, saying where it came from
            raise errors.UnexpectedTracerError(
                f"Encountered an unexpected tracer: argument `{name}` of `{fun_name}` is a "
                f"tracer {x.aval.str_short()} left over from an earlier trace of "
                f"`{x._trace.fun_name}`" + (f" ({x.source})" if x.source else "") + ". It "
                "escaped that trace (stored in a global, a list or an attribute), and a tracer "
                "has no value once its trace has ended. Return the value from the jitted "
                "function instead of storing it, and pass that; `with minijit.checking_leaks():` "
                "shows where it leaked."
            )
        if tracers_ok:
            return (x.shape, x.dtype, x.weak_type)
        raise TypeError(
            f"argument `{name}` of `{fun_name}` is a tracer of the function being traced; "
            f"make_jaxpr, .trace/.lower and compiled functions take concrete arrays. Call the "
            f"jitted function itself inside a traced function: the call becomes one `jit` "
            f"equation of the caller's program"
        )
    raise TypeError(
        f"argument `{name}` of `{fun_name}` is a {type(x).__name__}, not an array, so it "
        f"cannot be traced. If it is a setting known before the call, mark it static: "
        f"jit({fun_name}, static_argnames=('{name.split('[')[0]}',))"
    )


def split_args(spec: ArgSpec, args: tuple, kwargs: dict, tracers_ok: bool = False,
               abstract_ok: bool = False) -> SplitArgs:
    dyn_args, dyn_kwargs, positions = [], {}, []
    static_key, static_names, statics = [], [], {}
    for i, a in enumerate(args):
        name = spec.positional_name(i)
        if i in spec.static_argnums:
            static_key.append(("arg", i, _hashable(a, name, spec.fun_name), type(a)))
            static_names.append(name)
            statics[("arg", i)] = a
        else:
            dyn_args.append(a)
            positions.append(("arg", i))
    for k in sorted(kwargs):
        if k in spec.static_argnames:
            static_key.append(("kwarg", k, _hashable(kwargs[k], k, spec.fun_name),
                               type(kwargs[k])))
            static_names.append(k)
            statics[("kwarg", k)] = kwargs[k]
        else:
            dyn_kwargs[k] = kwargs[k]
    leaves, avals, names, donated = [], [], [], []
    pos_names = [spec.positional_name(p[1]) for p in positions]
    with_path, tree_args = tree_flatten_with_path(tuple(dyn_args))
    for path, leaf in with_path:
        # the path's first key is the argument's position: write the parameter's name
        i = path[0].idx
        names.append(pos_names[i] + keystr(path[1:]))
        donated.append(positions[i][1] in spec.donate_argnums)
        leaves.append(leaf)
    kw_with_path, tree_kwargs = tree_flatten_with_path(dyn_kwargs)
    for path, leaf in kw_with_path:
        names.append(path[0].key + keystr(path[1:]))
        donated.append(False)
        leaves.append(leaf)
    for leaf, name in zip(leaves, names):
        avals.append(leaf_aval(leaf, name, spec.fun_name, tracers_ok, abstract_ok))
    in_tree = PyTreeDef("tuple", None, (tree_args, tree_kwargs))
    return SplitArgs(leaves, names, avals, in_tree, tuple(static_key), static_names, donated,
                     positions, statics)


def _hashable(value, name: str, fun_name: str):
    try:
        hash(value)
    except TypeError as e:
        hint = " (pass a tuple instead of a list)" if isinstance(value, list) else ""
        raise ValueError(
            f"Non-hashable static arguments are not supported: static argument `{name}` of "
            f"`{fun_name}` is a {type(value).__name__}{hint}. The error was: {e}. Static "
            "values are part of the cache key, so they must be hashable; arrays should be "
            "passed as dynamic (non-static) arguments."
        ) from None
    return value


# --------------------------------------------------------------------------- the cache key


def cache_key(static_values: tuple, leaf_avals: list, treedef: PyTreeDef):
    """The key `jit` looks a call up by (the build track's piece `cache_key`, chapter 04).

    `static_values` is `((where, value), ...)` for the static arguments (`where` is the
    position, an int, or the keyword's name, a str), `leaf_avals` a list of
    `(shape, dtype, weak_type)`, one per dynamic leaf, `treedef` the structure of the dynamic
    arguments. Two calls may share a compiled program exactly when their keys are equal, so
    everything that changes the traced program is in it: each static value with its type
    (`1`, `1.0` and `True` are equal, and hash alike, but trace differently), every leaf's
    shape, dtype and weak type, and the structure. A key must be hashable: tuples, not lists.
    With minijit's own piece, `jit` uses `SplitArgs.key`, this same tuple as `split_args`
    builds it (hence the "arg"/"kwarg" tag), rather than building it a second time.
    """
    build.guard("cache_key")  # fails when a learner's piece hands its work to this one
    return (treedef, tuple(leaf_avals),
            tuple(("arg" if isinstance(where, int) else "kwarg", where, value, type(value))
                  for where, value in static_values))


def _check_cache_key(key, static_values, leaf_avals, treedef) -> str | None:
    try:
        hash(key)
    except TypeError as e:
        return (f"returned a {type(key).__name__} that is not hashable ({e}); a cache key is a "
                f"dict key, so build it of tuples, never lists or dicts")
    return None


def _selftest_cache_key(fn) -> str | None:
    """Keys for a few calls of `f(x, n, *, mode)` (n and mode static): two calls must get
    equal keys exactly when minijit's own keys are equal."""
    def f(x, n, *, mode):
        return x

    spec = ArgSpec.make(f, static_argnums=1, static_argnames="mode")
    z = np.zeros(3)
    calls = {
        "x=float64[3], n=2": ((z, 2), {"mode": "a"}),
        "x=float64[3] again": ((np.ones(3), 2), {"mode": "a"}),
        "x=float32[3]": ((z.astype(np.float32), 2), {"mode": "a"}),
        "x=float64[4]": ((np.zeros(4), 2), {"mode": "a"}),
        "x=1.0 (a weak Python float)": ((1.0, 2), {"mode": "a"}),
        "x=np.float64(1.0) (strong)": ((np.float64(1.0), 2), {"mode": "a"}),
        "n=3": ((z, 3), {"mode": "a"}),
        "n=True": ((z, True), {"mode": "a"}),
        "n=1": ((z, 1), {"mode": "a"}),
        "mode='b'": ((z, 2), {"mode": "b"}),
        "x=(a, b)": (((z, z), 2), {"mode": "a"}),
        "x=[a, b]": (([z, z], 2), {"mode": "a"}),
        "x={'p': a, 'q': b}": (({"p": z, "q": z[:2]}, 2), {"mode": "a"}),
        "x={'q': b, 'p': a}": (({"q": z[:2], "p": z}, 2), {"mode": "a"}),
        "x={'p': b, 'q': a}": (({"p": z[:2], "q": z}, 2), {"mode": "a"}),
    }
    keys = {}
    for name, (args, kwargs) in calls.items():
        s = split_args(spec, args, kwargs)
        mine = fn(s.static_values, list(s.leaf_avals), s.in_tree)
        problem = _check_cache_key(mine, s.static_values, s.leaf_avals, s.in_tree)
        if problem:
            return problem
        keys[name] = (mine, cache_key(s.static_values, s.leaf_avals, s.in_tree))
    names = list(keys)
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            same_mine, same_own = keys[a][0] == keys[b][0], keys[a][1] == keys[b][1]
            if same_mine != same_own:
                return (f"gives the calls with {a} and with {b} "
                        + ("the same key, but they trace different programs" if same_mine
                           else "different keys, but they share one program"))
    return None


build.register(
    "cache_key", cache_key, chapter="04_jit_and_the_cache",
    signature="cache_key(static_values, leaf_avals, treedef) -> a hashable key",
    check=_check_cache_key, selftest=_selftest_cache_key)
