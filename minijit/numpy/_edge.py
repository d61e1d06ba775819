"""The API's edge: what every public `mnp` function is wrapped in, once.

Each module of `minijit.numpy` ends with `api_edge(globals())`, which wraps the public
functions that module defines (not the ones it imports from another module: those were wrapped
where they are defined), so that:
- an array argument that is a list or a tuple raises JAX's TypeError (`_requires_arraylike`);
- an error raised inside shows the learner's frames only (`errors.api_boundaries`).
The wrapped function replaces the plain one in the module's namespace, so a later call from
inside the module, or from a module that imports it, goes through the edge too, as one from
the learner does. Aliases (`divide = true_divide`) stay one object.
"""

from __future__ import annotations

import functools
import inspect

from minijit.errors import api_boundaries

# Parameters that take one array, and the one that takes a sequence of them.
_ARRAY_PARAMETERS = {"x", "y", "a", "b", "v", "ary", "condition", "fill_value", "min", "max",
                     "a_min", "a_max", "constant_values"}
_CONVERTERS = {"asarray", "array", "shape", "ndim", "size", "result_type", "broadcast_shapes"}
# Where JAX takes a tuple as a parameter's value: one fill value per axis.
_TUPLES_ALLOWED = {"fill_value": {"nonzero", "flatnonzero", "argwhere", "where"}}


def _requires_arraylike(fn):
    """`fn`, raising JAX's TypeError when an array argument is a list or a tuple (JAX's
    `check_arraylike`). Implicit conversion hides bugs (`x + [1, 2]` as a shape mistake) and
    costs a copy on every call; `mnp.asarray` is the one place that converts."""
    params = list(inspect.signature(fn).parameters)
    checked = [n for n in params if n in _ARRAY_PARAMETERS
               and fn.__name__ not in _TUPLES_ALLOWED.get(n, ())]
    sequence = "arrays" in params
    if fn.__name__ in _CONVERTERS or not (checked or sequence):
        return fn
    positions = {params.index(n): k for k, n in enumerate(checked)}

    def reject(arg, position):
        raise TypeError(
            f"{fn.__name__} requires ndarray or scalar arguments, got {type(arg)} at position "
            f"{position}. (Convert it explicitly: mnp.asarray(...).)")

    @functools.wraps(fn)
    def with_arraylike_arguments(*args, **kwargs):
        for i, arg in enumerate(args):
            if type(arg) in (list, tuple) and i in positions:
                reject(arg, positions[i])
        for name, arg in kwargs.items():
            if type(arg) in (list, tuple) and name in checked:
                reject(arg, checked.index(name))
        if sequence:
            arrays = args[0] if args else kwargs.get("arrays", ())
            for k, arg in enumerate(arrays if isinstance(arrays, (list, tuple)) else ()):
                if type(arg) in (list, tuple):
                    reject(arg, k)
        return fn(*args, **kwargs)

    return with_arraylike_arguments


def api_edge(namespace: dict) -> None:
    """Wrap each public function the module `namespace` (its `globals()`) defines, in place:
    `_requires_arraylike`, then `api_boundary` outermost; and list them, aliases included, as
    the module's `__all__`, which is what `minijit/numpy/__init__.py` re-exports (so a new
    function is public once it is defined). Call it last in the module."""
    checked: dict[int, object] = {}  # aliases (`divide = true_divide`) stay one object
    public = []
    for name, value in list(namespace.items()):
        if (not name.startswith("_") and inspect.isfunction(value)
                and value.__module__ == namespace["__name__"]):
            namespace[name] = checked.setdefault(id(value), _requires_arraylike(value))
            public.append(name)
    namespace["__all__"] = sorted(public)
    # Every public function becomes an API boundary, so an error raised inside one shows the
    # learner's frames only (errors.api_boundary).
    api_boundaries(namespace)
