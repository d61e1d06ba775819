"""Pytrees: nested tuples, lists, dicts and namedtuples of arrays (chapter 04).

`jit` flattens its arguments to a list of leaves plus a `PyTreeDef` (the structure), traces
the leaves, and rebuilds the structure around the results. The treedef is part of the cache
key, so it is hashable and compares by value. Dict keys are sorted, as in JAX; `None` is an
empty node, not a leaf.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class PyTreeDef:
    kind: str  # "leaf", "none", "tuple", "list", "dict" or "namedtuple"
    aux: Any = None  # dict keys, or the namedtuple class
    children: tuple[PyTreeDef, ...] = ()

    @property
    def num_leaves(self) -> int:
        if self.kind == "leaf":
            return 1
        return sum(c.num_leaves for c in self.children)

    def __str__(self) -> str:
        if self.kind == "leaf":
            return "*"
        if self.kind == "none":
            return "None"
        inner = ", ".join(map(str, self.children))
        if self.kind == "tuple":
            return f"({inner}{',' if len(self.children) == 1 else ''})"
        if self.kind == "list":
            return f"[{inner}]"
        if self.kind == "dict":
            return "{" + ", ".join(f"{k!r}: {c}" for k, c in zip(self.aux, self.children)) + "}"
        return f"{self.aux.__name__}({inner})"


LEAF = PyTreeDef("leaf")


def _children(tree) -> tuple[str, Any, list, list[str]] | None:
    """(kind, aux, children, path suffixes) for a container node, or None for a leaf."""
    if tree is None:
        return "none", None, [], []
    if isinstance(tree, tuple) and hasattr(tree, "_fields"):
        return "namedtuple", type(tree), list(tree), [f".{f}" for f in tree._fields]
    if isinstance(tree, (tuple, list)):
        kind = "tuple" if isinstance(tree, tuple) else "list"
        return kind, None, list(tree), [f"[{i}]" for i in range(len(tree))]
    if isinstance(tree, dict):
        try:
            keys = tuple(sorted(tree))
        except TypeError:
            keys = tuple(tree)
        return "dict", keys, [tree[k] for k in keys], [f"[{k!r}]" for k in keys]
    return None


def tree_flatten_with_path(tree, prefix: str = "") -> tuple[list[tuple[str, Any]], PyTreeDef]:
    """Leaves paired with their path (`x`, `params['w']`, `args[1][0]`), and the treedef."""
    node = _children(tree)
    if node is None:
        return [(prefix, tree)], LEAF
    kind, aux, children, suffixes = node
    leaves, defs = [], []
    for child, suffix in zip(children, suffixes):
        child_leaves, child_def = tree_flatten_with_path(child, prefix + suffix)
        leaves += child_leaves
        defs.append(child_def)
    return leaves, PyTreeDef(kind, aux, tuple(defs))


def tree_flatten(tree) -> tuple[list, PyTreeDef]:
    with_path, treedef = tree_flatten_with_path(tree)
    return [leaf for _, leaf in with_path], treedef


def tree_leaves(tree) -> list:
    return tree_flatten(tree)[0]


def tree_unflatten(treedef: PyTreeDef, leaves) -> Any:
    it = iter(leaves)
    out = _build(treedef, it)
    if next(it, _SENTINEL) is not _SENTINEL:
        raise ValueError(f"too many leaves for tree structure {treedef}")
    return out


_SENTINEL = object()


def _build(treedef: PyTreeDef, it):
    if treedef.kind == "leaf":
        leaf = next(it, _SENTINEL)
        if leaf is _SENTINEL:
            raise ValueError("too few leaves for the tree structure")
        return leaf
    if treedef.kind == "none":
        return None
    children = [_build(c, it) for c in treedef.children]
    if treedef.kind == "tuple":
        return tuple(children)
    if treedef.kind == "list":
        return children
    if treedef.kind == "dict":
        return dict(zip(treedef.aux, children))
    return treedef.aux(*children)


def tree_map(f: Callable, tree, *rest) -> Any:
    leaves, treedef = tree_flatten(tree)
    others = [tree_flatten(r)[0] for r in rest]
    return tree_unflatten(treedef, [f(*xs) for xs in zip(leaves, *others)])


def tree_structure(tree) -> PyTreeDef:
    return tree_flatten(tree)[1]
