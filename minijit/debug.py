"""`minijit.debug`: printing and host callbacks that run on every call (chapter 06).

Python's `print` inside a jitted function runs while tracing, once per cache miss, and shows
tracers. `debug.print` instead stages an *effectful* equation, `debug_callback`, that runs each
time the compiled function runs and sees the real values. Passes never remove or merge an
effectful equation, even though it has no outputs.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from minijit.array import wrap
from minijit.config import config
from minijit.core import Primitive, abstract_eval_rules, bind, get_aval, impl_rules
from minijit.errors import api_boundary
from minijit.tree_util import PyTreeDef, tree_flatten, tree_unflatten

debug_callback_p = Primitive("debug_callback", multiple_results=True, effectful=True)


class HostCallback:
    """A Python function called with the values of an equation's operands.

    Its repr is stable (no memory address) so that printed Jaxprs are deterministic.
    """

    def __init__(self, fn: Callable, in_tree: PyTreeDef, label: str, dtypes=None):
        self.fn, self.in_tree, self.label = fn, in_tree, label
        # The operands' dtypes: compiled code may hand scalars over as Python ints/floats.
        self.dtypes = dtypes or (None,) * in_tree.num_leaves

    def __call__(self, *leaves):
        values = [wrap(np.asarray(x, d)) for x, d in zip(leaves, self.dtypes)]
        args, kwargs = tree_unflatten(self.in_tree, values)
        self.fn(*args, **kwargs)

    def __repr__(self) -> str:
        return self.label


abstract_eval_rules[debug_callback_p] = lambda *avals, callback: []


def _debug_callback_impl(*args, callback):
    callback(*args)
    return []


impl_rules[debug_callback_p] = _debug_callback_impl


@api_boundary
def callback(fn: Callable, *args, **kwargs) -> None:
    """Call `fn(*args, **kwargs)` with concrete values every time the program runs."""
    leaves, in_tree = tree_flatten((args, kwargs))
    label = f"callback({getattr(fn, '__name__', 'fn')})"
    dtypes = tuple(get_aval(x).dtype for x in leaves)
    bind(debug_callback_p, *leaves, callback=HostCallback(fn, in_tree, label, dtypes))


@api_boundary
def print(fmt: str, *args, **kwargs) -> None:  # noqa: A001 - mirrors jax.debug.print
    """`debug.print("x = {x}", x=x)`: formats with `str.format` on every call."""
    def emit(*a, **k):
        import builtins

        builtins.print(fmt.format(*a, **k))

    leaves, in_tree = tree_flatten((args, kwargs))
    dtypes = tuple(get_aval(x).dtype for x in leaves)
    bind(debug_callback_p, *leaves,
         callback=HostCallback(emit, in_tree, f"print({fmt!r})", dtypes))


def checking_leaks():
    """`with checking_leaks():` every trace that ends (in this thread) checks that none of
    its tracers escaped (into a global, a list, an attribute) and raises UnexpectedTracerError
    if so."""
    return config.override("check_tracer_leaks", True)
