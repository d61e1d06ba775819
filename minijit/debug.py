"""`minijit.debug`: printing and host callbacks that run on every call (chapter 06).

Python's `print` inside a jitted function runs while tracing, once per cache miss, and shows
tracers. `debug.print` instead stages an *effectful* equation, `debug_callback`, that runs each
time the compiled function runs and sees the real values. Passes never remove or merge an
effectful equation, even though it has no outputs. `debug.breakpoint` is one such callback
too: it stops in a debugger (`debugger.py`) each time the program runs.
"""

from __future__ import annotations

import functools
import string
import sys
from collections.abc import Callable

import numpy as np

from minijit.array import wrap
from minijit.config import config
from minijit.core import Primitive, abstract_eval_rules, bind, get_aval, impl_rules, is_tracing
from minijit.debugger import CliDebugger, split_locals, user_frames, with_values
from minijit.errors import api_boundary
from minijit.tree_util import PyTreeDef, tree_flatten, tree_unflatten

debug_callback_p = Primitive("debug_callback", multiple_results=True, effectful=True)


class HostCallback:
    """A Python function called with the values of an equation's operands.

    The operands are the pytree's dynamic leaves (arrays and Python scalars); its static
    leaves (a string, any other object) are held here and put back in place, as JAX does.
    Its repr is stable (no memory address) so that printed Jaxprs are deterministic.
    """

    def __init__(self, fn: Callable, in_tree: PyTreeDef, label: str, dtypes=None,
                 static: dict | None = None, weak=None):
        self.fn, self.in_tree, self.label = fn, in_tree, label
        self.static = static or {}  # leaf position -> static value
        n = in_tree.num_leaves - len(self.static)
        # The operands' dtypes: compiled code may hand scalars over as Python ints/floats.
        self.dtypes = dtypes or (None,) * n
        # Weak types survive only eagerly, as in JAX: a compiled program hands over plain arrays
        self.weak = weak or (False,) * n

    def __call__(self, *dynamic):
        values = iter(wrap(np.asarray(x, d), w) for x, d, w in zip(dynamic, self.dtypes,
                                                                    self.weak))
        leaves = [self.static[i] if i in self.static else next(values)
                  for i in range(self.in_tree.num_leaves)]
        args, kwargs = tree_unflatten(self.in_tree, leaves)
        self.fn(*args, **kwargs)

    def __repr__(self) -> str:
        return self.label


abstract_eval_rules[debug_callback_p] = lambda *avals, callback: []


def _debug_callback_impl(*args, callback):
    callback(*args)
    return []


impl_rules[debug_callback_p] = _debug_callback_impl


def _bind_callback(fn: Callable, args: tuple, kwargs: dict, label: str) -> None:
    """Stage `fn(*args, **kwargs)`: the leaves that are arrays (or tracers, or Python scalars)
    become operands; the others stay Python values."""
    leaves, in_tree = tree_flatten((args, kwargs))
    dynamic, static = [], {}
    for i, leaf in enumerate(leaves):
        try:
            dynamic.append((leaf, get_aval(leaf)))
        except TypeError:
            static[i] = leaf
    dtypes = tuple(aval.dtype for _, aval in dynamic)
    weak = tuple(False if is_tracing() else aval.weak_type for _, aval in dynamic)
    bind(debug_callback_p, *[leaf for leaf, _ in dynamic],
         callback=HostCallback(fn, in_tree, label, dtypes, static, weak))


@api_boundary
def callback(fn: Callable, *args, ordered: bool = False, partitioned: bool = False,
             **kwargs) -> None:
    """Call `fn(*args, **kwargs)` with concrete values every time the program runs.

    `ordered` and `partitioned` are accepted for JAX's sake: minijit runs one program on one
    device, its effects in program order, so every callback is already ordered."""
    _bind_callback(fn, args, kwargs, f"callback({getattr(fn, '__name__', 'fn')})")


class _FormatChecker(string.Formatter):
    """Formats nothing; fails, as `str.format` will, on a missing argument, and (as JAX)
    on an unused one, while the program is built rather than each time it runs."""

    def format_field(self, value, format_spec):
        return ""

    def check_unused_args(self, used_args, args, kwargs):
        unused_args = [arg for i, arg in enumerate(args) if i not in used_args]
        unused_kwargs = [k for k in kwargs if k not in used_args]
        if unused_args:
            raise ValueError(f"Unused positional arguments to `debug.print`: {unused_args}")
        if unused_kwargs:
            raise ValueError(
                f"Unused keyword arguments to `debug.print`: {unused_kwargs}. You may be "
                'passing an f-string (i.e, `f"{x}"`) into `debug.print` and instead should '
                'pass in a regular string.')


def _format_and_print(fmt: str, printoptions: dict, has_placeholders: bool, *args, **kwargs):
    with np.printoptions(**printoptions):  # NumPy's settings when debug.print was called
        if has_placeholders:
            msg = fmt.format(*args, **kwargs)
        else:  # as JAX: no placeholder first means the values follow the text
            msg = " ".join((fmt, *map(str, args)))
    sys.stdout.write(msg + "\n")


@api_boundary
def print(fmt: str | None = None, *args, ordered: bool = False,  # noqa: A001 - JAX's name
          partitioned: bool = False, skip_format_check: bool = False, **kwargs):
    """`debug.print("x = {x}", x=x)` formats with `str.format` each time the program runs.

    As in JAX: the arguments are checked against `fmt` now; `debug.print(ordered=True)` returns
    the print function (the two-call form); `ordered` and `partitioned` change nothing here
    (see `callback`). JAX asks only the first piece of `fmt` (its text up to the first field or
    `{{`) whether there are placeholders: `"x:"` and `"{{}} {}"` have none, so they print as
    the text itself followed by the values, separated by spaces.
    """
    def staged(fmt, *args, **kwargs) -> None:
        if not isinstance(fmt, str):
            raise TypeError(f"debug.print's first argument must be the format string (a "
                            f"str), got {type(fmt).__name__}; write debug.print(\"{{}}\", x)")
        if not skip_format_check:
            _FormatChecker().format(fmt, *args, **kwargs)
        first = next(iter(string.Formatter().parse(fmt)), (None, None))
        has_placeholders = first[1] is not None
        printoptions = np.get_printoptions()
        _bind_callback(functools.partial(_format_and_print, fmt, printoptions, has_placeholders),
                       args, kwargs, f"print({fmt!r})")

    if fmt is not None:
        staged(fmt, *args, **kwargs)
        return None
    if args or kwargs:
        raise TypeError(f"debug_print received unexpected arguments in the two-call form: "
                        f"{args=} {kwargs=}")
    return staged


def breakpoint(*, backend: str | None = None, filter_frames: bool = True,  # noqa: A001
               num_frames: int | None = None, ordered: bool = False, token=None, **kwargs):
    """Stop here each time the program runs, in a debugger that sees the values of the local
    variables (`jdb`; its commands are in `minijit/debugger.py`).

    As JAX's: `num_frames` keeps that many frames from here up; `token` (a pytree of arrays)
    is returned unchanged; `ordered` is accepted (see `callback`); `kwargs` (`stdin=`,
    `stdout=`) go to the debugger."""
    if token is not None and ordered:
        raise ValueError("`ordered` and `token` are mutually exclusive arguments.")
    if backend not in (None, "cli"):
        raise ValueError(f"debug.breakpoint(backend={backend!r}): minijit has one debugger, "
                         "the command-line one: backend='cli' (or None)")
    if unknown := set(kwargs) - {"stdin", "stdout"}:  # now, not when the program runs
        raise TypeError(f"debug.breakpoint got unexpected keyword arguments {sorted(unknown)}; "
                        "the debugger takes stdin= and stdout=")
    tracers, holes, frames = split_locals(user_frames(filter_frames, num_frames))

    def stop(*values):
        CliDebugger(with_values(frames, holes, values), **kwargs).cmdloop()

    _bind_callback(stop, tuple(tracers), {}, "breakpoint")
    return token


def checking_leaks():
    """`with checking_leaks():` every trace that ends (in this thread) checks that none of
    its tracers escaped (into a global, a list, an attribute) and raises UnexpectedTracerError
    if so."""
    return config.override("check_tracer_leaks", True)
