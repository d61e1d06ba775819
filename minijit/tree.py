"""`minijit.tree`: the short names for pytree functions, as `jax.tree` (chapter 04).

`mj.tree.map(f, tree)` is `tree_util.tree_map(f, tree)`, and so on: JAX's docs and tutorials
now write the short form. Everything here is defined in `tree_util.py`.
"""

from __future__ import annotations

import builtins
import functools
from collections.abc import Callable
from typing import Any

from minijit.tree_util import (
    KeyPath,
    PyTreeDef,
    tree_flatten,
    tree_flatten_with_path,
    tree_leaves,
    tree_leaves_with_path,
    tree_map,
    tree_map_with_path,
    tree_structure,
    tree_unflatten,
)

_NO_INITIALIZER = object()


def _no_is_leaf(is_leaf) -> None:
    if is_leaf is not None:
        raise NotImplementedError(
            "is_leaf= is not supported by minijit's pytrees; flatten to the leaves you want "
            "first, or register a class as a node (tree_util.register_pytree_node)")


def map(f: Callable, tree: Any, *rest: Any, is_leaf=None) -> Any:  # noqa: A001 - JAX's name
    """`f` applied to each leaf (and the matching leaves of `rest`), in `tree`'s structure."""
    _no_is_leaf(is_leaf)
    return tree_map(f, tree, *rest)


def leaves(tree: Any, is_leaf=None) -> list:
    _no_is_leaf(is_leaf)
    return tree_leaves(tree)


def structure(tree: Any, is_leaf=None) -> PyTreeDef:
    _no_is_leaf(is_leaf)
    return tree_structure(tree)


def flatten(tree: Any, is_leaf=None) -> tuple[list, PyTreeDef]:
    _no_is_leaf(is_leaf)
    return tree_flatten(tree)


def unflatten(treedef: PyTreeDef, leaves: Any) -> Any:
    return tree_unflatten(treedef, leaves)


def flatten_with_path(tree: Any, is_leaf=None) -> tuple[list[tuple[KeyPath, Any]], PyTreeDef]:
    """(key path, leaf) pairs and the treedef; `tree_util.keystr(path)` writes a path."""
    _no_is_leaf(is_leaf)
    return tree_flatten_with_path(tree)


def leaves_with_path(tree: Any, is_leaf=None) -> list[tuple[KeyPath, Any]]:
    _no_is_leaf(is_leaf)
    return tree_leaves_with_path(tree)


def map_with_path(f: Callable, tree: Any, *rest: Any, is_leaf=None) -> Any:
    """`f(path, leaf, *matching leaves of rest)` for each leaf, in `tree`'s structure."""
    _no_is_leaf(is_leaf)
    return tree_map_with_path(f, tree, *rest)


def reduce(function: Callable, tree: Any, initializer: Any = _NO_INITIALIZER,
           is_leaf=None) -> Any:
    """`functools.reduce(function, leaves(tree)[, initializer])`."""
    _no_is_leaf(is_leaf)
    if initializer is _NO_INITIALIZER:
        return functools.reduce(function, tree_leaves(tree))
    return functools.reduce(function, tree_leaves(tree), initializer)


def all(tree: Any, is_leaf=None) -> bool:  # noqa: A001 - JAX's name
    """Whether every leaf is truthy."""
    _no_is_leaf(is_leaf)
    return builtins.all(tree_leaves(tree))
