"""Pytrees: nested tuples, lists, dicts, namedtuples and registered classes of arrays (chapter 04).

`jit` flattens its arguments to a list of leaves plus a `PyTreeDef` (the structure), traces
the leaves, and rebuilds the structure around the results. The treedef is part of the cache
key, so it is hashable and compares by value. Dict keys are sorted, as in JAX; `None` is an
empty node, not a leaf.

Any other class becomes a node once registered (`register_pytree_node`,
`register_pytree_node_class`, `register_dataclass`): its flatten function splits an instance
into children and *aux data*, the part that is not traced (a setting, a field name). As in JAX,
the aux data is compared with `==` but not hashed, so it need not be hashable; a new aux value
is a new structure, so `jit` retraces for it.

Each leaf has a *key path*, a tuple of key entries from the root: `SequenceKey` (tuples and
lists), `DictKey`, `GetAttrKey` (namedtuples, dataclasses) and `FlattenedIndexKey` (a class
registered without keys). `keystr` writes one as `['params']['w'][0]`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass
from typing import Any

# --------------------------------------------------------------------------- key paths


@dataclass(frozen=True)
class SequenceKey:
    """The `idx`-th child of a tuple or list; prints as `[0]`."""

    idx: int

    def __str__(self) -> str:
        return f"[{self.idx!r}]"


@dataclass(frozen=True)
class DictKey:
    """The child of a dict under `key`; prints as `['w']`."""

    key: Hashable

    def __str__(self) -> str:
        return f"[{self.key!r}]"


@dataclass(frozen=True)
class GetAttrKey:
    """The attribute `name` of a namedtuple or dataclass; prints as `.name`."""

    name: str

    def __str__(self) -> str:
        return f".{self.name}"


@dataclass(frozen=True)
class FlattenedIndexKey:
    """The `key`-th child of a class registered without keys; prints as `[<flat index 0>]`."""

    key: int

    def __str__(self) -> str:
        return f"[<flat index {self.key}>]"


KeyEntry = SequenceKey | DictKey | GetAttrKey | FlattenedIndexKey
KeyPath = tuple[Any, ...]  # of KeyEntry


def keystr(keys: KeyPath, *, simple: bool = False, separator: str = "") -> str:
    """A key path as text: `['w'][0]`, or with `simple=True, separator='/'`, `w/0`."""
    return separator.join(map(_simple_str if simple else str, keys))


def _simple_str(key) -> str:
    match key:
        case SequenceKey(idx=k) | DictKey(key=k) | GetAttrKey(name=k) | FlattenedIndexKey(key=k):
            return str(k)
    return str(key)


# --------------------------------------------------------------------------- the registry


@dataclass(frozen=True)
class _NodeRules:
    flatten: Callable  # x -> (children, aux)
    flatten_with_keys: Callable  # x -> (((key, child), ...), aux)
    unflatten: Callable  # (aux, children tuple) -> x


_registry: dict[type, _NodeRules] = {}
_BUILT_IN = (tuple, list, dict, type(None))  # nodes minijit knows without registering


def register_pytree_node(nodetype: type, flatten_func: Callable, unflatten_func: Callable,
                         flatten_with_keys_func: Callable | None = None) -> None:
    """Make `nodetype` a node: `flatten_func(x) -> (children, aux)` and
    `unflatten_func(aux, children) -> x`; its children's keys are `FlattenedIndexKey`s
    unless `flatten_with_keys_func(x) -> (((key, child), ...), aux)` is given."""
    if not isinstance(nodetype, type):
        raise TypeError(f"register_pytree_node takes a class, got {nodetype!r}")
    if nodetype in _registry or nodetype in _BUILT_IN:
        raise ValueError(f"Duplicate custom PyTreeDef type registration for {nodetype}.")
    if flatten_with_keys_func is None:
        def flatten_with_keys_func(x):
            children, aux = flatten_func(x)
            return [(FlattenedIndexKey(i), c) for i, c in enumerate(children)], aux
    _registry[nodetype] = _NodeRules(flatten_func, flatten_with_keys_func, unflatten_func)


def register_pytree_with_keys(nodetype: type, flatten_with_keys: Callable,
                              unflatten_func: Callable,
                              flatten_func: Callable | None = None) -> None:
    """As `register_pytree_node`, with the keys given: `flatten_with_keys(x)` returns
    `(((key, child), ...), aux)`."""
    if flatten_func is None:
        def flatten_func(x):
            pairs, aux = flatten_with_keys(x)
            return [c for _, c in pairs], aux
    register_pytree_node(nodetype, flatten_func, unflatten_func, flatten_with_keys)


def register_pytree_node_class(cls: type) -> type:
    """Class decorator: `cls.tree_flatten(self)` and the classmethod
    `cls.tree_unflatten(aux, children)` make it a node."""
    register_pytree_node(cls, lambda x: x.tree_flatten(), cls.tree_unflatten)
    return cls


def register_dataclass(nodetype: type, data_fields=None, meta_fields=None,
                       drop_fields=()) -> type:
    """A dataclass as a node: `data_fields` are children, `meta_fields` the aux data. Without
    them, fields with `metadata=dict(static=True)` are meta and the others data."""
    if data_fields is None or meta_fields is None:
        if (data_fields is None) != (meta_fields is None):
            raise TypeError(
                "register_dataclass: data_fields and meta_fields must both be specified when "
                f"either is specified. Got {data_fields=} {meta_fields=}.")
        if not dataclasses.is_dataclass(nodetype):
            raise TypeError("register_dataclass: data_fields and meta_fields are required "
                            f"when nodetype is not a dataclass. Got {nodetype=}.")
        fields = dataclasses.fields(nodetype)
        data_fields = [f.name for f in fields if not f.metadata.get("static", False)]
        meta_fields = [f.name for f in fields if f.metadata.get("static", False)]
    data_fields, meta_fields = tuple(data_fields), tuple(meta_fields)
    if dataclasses.is_dataclass(nodetype):
        init = {f.name for f in dataclasses.fields(nodetype) if f.init} - set(drop_fields)
        given = {*data_fields, *meta_fields}
        if given != init:
            msg = ("data_fields and meta_fields must include all dataclass fields with "
                   "``init=True`` and only them.")
            if init - given:
                msg += (f" Missing fields: {init - given}. Add them to drop_fields to "
                        "suppress this error.")
            if given - init:
                msg += f" Unexpected fields: {given - init}."
            raise ValueError(msg)
    if overlap := set(data_fields) & set(meta_fields):
        raise ValueError(f"data_fields and meta_fields must not overlap. Overlapping fields: "
                         f"{overlap}.")

    def flatten_with_keys(x):
        return ([(GetAttrKey(n), getattr(x, n)) for n in data_fields],
                tuple(getattr(x, n) for n in meta_fields))

    def unflatten(meta, data):
        return nodetype(**dict(zip(meta_fields, meta)), **dict(zip(data_fields, data)))

    register_pytree_with_keys(nodetype, flatten_with_keys, unflatten)
    return nodetype


# --------------------------------------------------------------------------- the treedef


@dataclass(frozen=True)
class PyTreeDef:
    """The structure of a pytree. Equal structures hold equal aux data (compared with `==`);
    the hash leaves a custom node's aux data out, so it need not be hashable."""

    kind: str  # "leaf", "none", "tuple", "list", "dict", "namedtuple" or "custom"
    aux: Any = None  # dict keys, the namedtuple class, or a custom node's aux data
    children: tuple[PyTreeDef, ...] = ()
    node_type: type | None = None  # the registered class of a "custom" node

    def __hash__(self) -> int:
        aux = None if self.kind == "custom" else self.aux
        return hash((self.kind, aux, self.children, self.node_type))

    @property
    def num_leaves(self) -> int:
        if self.kind == "leaf":
            return 1
        return sum(c.num_leaves for c in self.children)

    def unflatten(self, leaves: Iterable) -> Any:
        return tree_unflatten(self, leaves)

    def _body(self) -> str:
        if self.kind == "leaf":
            return "*"
        if self.kind == "none":
            return "None"
        inner = ", ".join(c._body() for c in self.children)
        if self.kind == "tuple":
            return f"({inner}{',' if len(self.children) == 1 else ''})"
        if self.kind == "list":
            return f"[{inner}]"
        if self.kind == "dict":
            return "{" + ", ".join(f"{k!r}: {c._body()}"
                                   for k, c in zip(self.aux, self.children)) + "}"
        if self.kind == "namedtuple":
            return f"CustomNode(namedtuple[{self.aux.__name__}], [{inner}])"
        return f"CustomNode({self.node_type.__name__}[{self.aux}], [{inner}])"

    def __str__(self) -> str:
        return f"PyTreeDef({self._body()})"  # JAX's form

    __repr__ = __str__


LEAF = PyTreeDef("leaf")


# --------------------------------------------------------------------------- flattening


def _custom_children(rules: _NodeRules, tree, with_keys: bool) -> tuple[list, Any]:
    """A registered node's (children or (key, child) pairs, aux), checked, since they come
    from the user's flatten function."""
    out = (rules.flatten_with_keys if with_keys else rules.flatten)(tree)
    if not (isinstance(out, tuple) and len(out) == 2):
        raise ValueError("The flatten function of a custom pytree node should return a "
                         f"(children, aux_data) tuple, got {out!r} for a "
                         f"{type(tree).__name__}")
    children, aux = out
    try:
        return list(children), aux
    except TypeError:
        raise ValueError("The flatten function of a custom pytree node should return a "
                         "(children, aux_data) tuple where 'children' is iterable, got "
                         f"{out!r} for a {type(tree).__name__}") from None


def _node(tree, with_keys: bool):
    """(kind, aux, node_type, children, keys) for a node (keys None unless `with_keys`),
    or None for a leaf."""
    rules = _registry.get(type(tree))
    if rules is not None:
        children, aux = _custom_children(rules, tree, with_keys)
        if with_keys:
            return "custom", aux, type(tree), [c for _, c in children], [k for k, _ in children]
        return "custom", aux, type(tree), children, None
    if tree is None:
        return "none", None, None, [], []
    if isinstance(tree, tuple) and hasattr(tree, "_fields"):
        keys = [GetAttrKey(f) for f in tree._fields] if with_keys else None
        return "namedtuple", type(tree), None, list(tree), keys
    if isinstance(tree, (tuple, list)):
        keys = [SequenceKey(i) for i in range(len(tree))] if with_keys else None
        return "tuple" if isinstance(tree, tuple) else "list", None, None, list(tree), keys
    if isinstance(tree, dict):
        try:
            names = tuple(sorted(tree))
        except TypeError:
            names = tuple(tree)
        keys = [DictKey(k) for k in names] if with_keys else None
        return "dict", names, None, [tree[k] for k in names], keys
    return None


def _flatten(tree, leaves: list, paths: list | None, path: KeyPath) -> PyTreeDef:
    """Append `tree`'s leaves (and, if `paths` is a list, their key paths) in order."""
    node = _node(tree, paths is not None)
    if node is None:
        leaves.append(tree)
        if paths is not None:
            paths.append(path)
        return LEAF
    kind, aux, node_type, children, keys = node
    if paths is None:
        defs = tuple(_flatten(c, leaves, None, ()) for c in children)
    else:
        defs = tuple(_flatten(c, leaves, paths, (*path, k)) for c, k in zip(children, keys))
    return PyTreeDef(kind, aux, defs, node_type)


def tree_flatten(tree, is_leaf=None) -> tuple[list, PyTreeDef]:
    _no_is_leaf(is_leaf)
    leaves: list = []
    treedef = _flatten(tree, leaves, None, ())
    return leaves, treedef


def tree_flatten_with_path(tree, is_leaf=None) -> tuple[list[tuple[KeyPath, Any]], PyTreeDef]:
    """Each leaf with its key path (a tuple of key entries), and the treedef."""
    _no_is_leaf(is_leaf)
    leaves: list = []
    paths: list = []
    treedef = _flatten(tree, leaves, paths, ())
    return list(zip(paths, leaves)), treedef


def tree_leaves_with_path(tree, is_leaf=None) -> list[tuple[KeyPath, Any]]:
    return tree_flatten_with_path(tree, is_leaf)[0]


def tree_flatten_with_names(tree, prefix: str = "") -> tuple[list[tuple[str, Any]], PyTreeDef]:
    """Each leaf with its path written as minijit's messages write it (`params['w']`, with
    `prefix` in front), and the treedef."""
    with_path, treedef = tree_flatten_with_path(tree)
    return [(prefix + keystr(p), leaf) for p, leaf in with_path], treedef


def treedef_paths(treedef: PyTreeDef) -> list[KeyPath]:
    """The key paths of a treedef's leaves, without the tree. A registered class names its
    children as its flatten function does, when it can be rebuilt around placeholder leaves
    (ints); one that refuses them is named by position (`FlattenedIndexKey`)."""
    try:
        dummy = tree_unflatten(treedef, range(treedef.num_leaves))
        with_path, again = tree_flatten_with_path(dummy)
        if again == treedef:
            return [p for p, _ in with_path]
    except Exception:  # the user's unflatten (or flatten) function rejected the placeholders
        pass
    return _positional_paths(treedef, ())


def _positional_paths(treedef: PyTreeDef, path: KeyPath) -> list[KeyPath]:
    if treedef.kind == "leaf":
        return [path]
    if treedef.kind in ("tuple", "list"):
        keys = [SequenceKey(i) for i in range(len(treedef.children))]
    elif treedef.kind == "dict":
        keys = [DictKey(k) for k in treedef.aux]
    elif treedef.kind == "namedtuple":
        keys = [GetAttrKey(f) for f in treedef.aux._fields]
    else:
        keys = [FlattenedIndexKey(i) for i in range(len(treedef.children))]
    return [p for k, c in zip(keys, treedef.children) for p in _positional_paths(c, (*path, k))]


def tree_leaves(tree, is_leaf=None) -> list:
    return tree_flatten(tree, is_leaf)[0]


def tree_structure(tree, is_leaf=None) -> PyTreeDef:
    return tree_flatten(tree, is_leaf)[1]


def _no_is_leaf(is_leaf) -> None:
    if is_leaf is not None:
        raise NotImplementedError(
            "is_leaf= is not supported by minijit's pytrees; flatten to the leaves you want "
            "first, or register a class as a node (tree_util.register_pytree_node)")


# --------------------------------------------------------------------------- unflattening

def tree_unflatten(treedef: PyTreeDef, leaves) -> Any:
    leaves = list(leaves)
    if len(leaves) != treedef.num_leaves:  # JAX's messages
        if len(leaves) < treedef.num_leaves:
            raise ValueError(f"Too few leaves for PyTreeDef; expected {treedef.num_leaves}, "
                             f"got {len(leaves)}")
        raise ValueError(f"Too many leaves for PyTreeDef; expected {treedef.num_leaves}.")
    return _build(treedef, iter(leaves))


def _build(treedef: PyTreeDef, it):
    if treedef.kind == "leaf":
        return next(it)
    if treedef.kind == "none":
        return None
    children = [_build(c, it) for c in treedef.children]
    if treedef.kind == "tuple":
        return tuple(children)
    if treedef.kind == "list":
        return children
    if treedef.kind == "dict":
        return dict(zip(treedef.aux, children))
    if treedef.kind == "namedtuple":
        return treedef.aux(*children)
    return _registry[treedef.node_type].unflatten(treedef.aux, tuple(children))


# --------------------------------------------------------------------------- mapping


def tree_map(f: Callable, tree, *rest, is_leaf=None) -> Any:
    leaves, treedef = tree_flatten(tree, is_leaf)
    others = [tree_flatten(r)[0] for r in rest]
    return tree_unflatten(treedef, [f(*xs) for xs in zip(leaves, *others)])


def tree_map_with_path(f: Callable, tree, *rest, is_leaf=None) -> Any:
    """`f(path, leaf, *matching leaves of rest)` for each leaf, in `tree`'s structure."""
    with_path, treedef = tree_flatten_with_path(tree, is_leaf)
    others = [tree_flatten(r)[0] for r in rest]
    return tree_unflatten(treedef, [f(p, x, *xs) for (p, x), *xs in zip(with_path, *others)])
