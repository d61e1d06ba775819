"""Pytrees: flatten/unflatten round trips, dict key order, None, namedtuples, treedefs."""

from __future__ import annotations

import collections

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from minijit.tree_util import (
    LEAF,
    PyTreeDef,
    tree_flatten,
    tree_flatten_with_path,
    tree_leaves,
    tree_map,
    tree_structure,
    tree_unflatten,
)

Point = collections.namedtuple("Point", "x y")
Pair = collections.namedtuple("Pair", "first second")

# --------------------------------------------------------------------------- strategies

leaves = st.one_of(
    st.integers(-5, 5),
    st.floats(allow_nan=False, width=32),
    st.booleans(),
    st.text(max_size=3),  # strings are leaves, not sequences
    st.builds(np.arange, st.integers(0, 3)),
)
keys = st.text(alphabet="abcdefgh", min_size=1, max_size=3)


def _containers(children):
    return st.one_of(
        st.lists(children, max_size=4).map(tuple),
        st.lists(children, max_size=4),
        st.dictionaries(keys, children, max_size=4),
        st.builds(Point, children, children),
        st.just(None),
    )


trees = st.recursive(leaves, _containers, max_leaves=12)


def _same(a, b) -> bool:
    """Structural equality that also compares types and array leaves."""
    if type(a) is not type(b):
        return False
    if isinstance(a, np.ndarray):
        return a.shape == b.shape and bool(np.all(a == b))
    if isinstance(a, dict):
        return list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, (tuple, list)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    return a == b


def _sorted_dicts(tree):
    """The tree as unflatten rebuilds it: every dict with its keys sorted."""
    if isinstance(tree, dict):
        return {k: _sorted_dicts(tree[k]) for k in sorted(tree)}
    if isinstance(tree, tuple) and hasattr(tree, "_fields"):
        return type(tree)(*map(_sorted_dicts, tree))
    if isinstance(tree, (tuple, list)):
        return type(tree)(map(_sorted_dicts, tree))
    return tree


# --------------------------------------------------------------------------- round trips


@settings(max_examples=100, deadline=None)
@given(trees)
def test_flatten_unflatten_round_trip(tree):
    flat, treedef = tree_flatten(tree)
    assert treedef.num_leaves == len(flat)
    rebuilt = tree_unflatten(treedef, flat)
    assert _same(rebuilt, _sorted_dicts(tree))
    # flattening the rebuilt tree gives the same structure and the very same leaf objects
    flat2, treedef2 = tree_flatten(rebuilt)
    assert treedef2 == treedef and hash(treedef2) == hash(treedef)
    assert all(a is b for a, b in zip(flat, flat2))


class Box:
    """A leaf type of our own: tree_map must not look inside it."""

    def __init__(self, value):
        self.value = value


@settings(max_examples=100, deadline=None)
@given(trees)
def test_paths_match_leaves_and_index_the_tree(tree):
    with_path, treedef = tree_flatten_with_path(tree, "t")
    flat, treedef2 = tree_flatten(tree)
    assert treedef == treedef2
    assert len(with_path) == len(flat)
    assert all(a is b for (_, a), b in zip(with_path, flat))
    for path, leaf in with_path:
        # `t[0]['a'].x` is a Python expression that finds the leaf again
        assert eval(path, {"t": tree}) is leaf  # noqa: S307 - paths come from our own code


@settings(max_examples=100, deadline=None)
@given(trees)
def test_tree_map_preserves_structure(tree):
    mapped = tree_map(Box, tree)
    assert tree_structure(mapped) == tree_structure(tree)
    boxes = tree_leaves(mapped)
    assert all(type(b) is Box for b in boxes)
    assert all(b.value is leaf for b, leaf in zip(boxes, tree_leaves(tree)))


def test_tree_map_with_several_trees():
    a = {"w": 1, "b": (2, 3)}
    b = {"b": (20, 30), "w": 10}
    assert tree_map(lambda x, y: x + y, a, b) == {"b": (22, 33), "w": 11}


# --------------------------------------------------------------------------- dicts and order


def test_dict_keys_are_sorted_in_leaves_and_result():
    flat, treedef = tree_flatten({"b": 1, "a": 2, "c": 3})
    assert flat == [2, 1, 3]
    assert list(tree_unflatten(treedef, flat)) == ["a", "b", "c"]


def test_dict_insertion_order_does_not_change_the_treedef():
    d1 = {"x": 1, "y": 2}
    d2 = {"y": 2, "x": 1}
    assert tree_structure(d1) == tree_structure(d2)
    assert hash(tree_structure(d1)) == hash(tree_structure(d2))
    assert tree_leaves(d1) == tree_leaves(d2) == [1, 2]


def test_different_dict_keys_differ():
    assert tree_structure({"a": 1}) != tree_structure({"b": 1})


# --------------------------------------------------------------------------- None


def test_none_is_an_empty_node_not_a_leaf():
    flat, treedef = tree_flatten(None)
    assert flat == []
    assert treedef.num_leaves == 0
    assert tree_unflatten(treedef, []) is None
    flat, treedef = tree_flatten((1, None, [None, 2]))
    assert flat == [1, 2]
    assert tree_unflatten(treedef, [10, 20]) == (10, None, [None, 20])


def test_none_and_leaf_structures_differ():
    assert tree_structure((None,)) != tree_structure((1,))
    assert tree_map(lambda x: x * 2, {"a": None, "b": 3}) == {"a": None, "b": 6}


# --------------------------------------------------------------------------- namedtuples


def test_namedtuple_round_trip_keeps_its_class():
    p = Point(1, (2, 3))
    flat, treedef = tree_flatten(p)
    assert flat == [1, 2, 3]
    out = tree_unflatten(treedef, [4, 5, 6])
    assert type(out) is Point and out == Point(4, (5, 6))


def test_namedtuple_differs_from_tuple_and_other_namedtuple():
    assert tree_structure(Point(1, 2)) != tree_structure((1, 2))
    assert tree_structure(Point(1, 2)) != tree_structure(Pair(1, 2))
    assert tree_structure(Point(1, 2)) == tree_structure(Point(3, 4))


def test_namedtuple_paths_use_field_names():
    with_path, _ = tree_flatten_with_path({"p": Point(1, [2])}, "arg")
    assert [p for p, _ in with_path] == ["arg['p'].x", "arg['p'].y[0]"]


# --------------------------------------------------------------------------- treedefs


def test_list_and_tuple_differ():
    assert tree_structure([1, 2]) != tree_structure((1, 2))
    assert type(tree_unflatten(tree_structure([1, 2]), [3, 4])) is list


def test_treedef_equality_and_hash_are_by_value():
    t1 = tree_structure({"a": (1, [2, None]), "b": Point(3, 4)})
    t2 = tree_structure({"b": Point(0, 0), "a": ("x", ["y", None])})
    assert t1 == t2
    assert hash(t1) == hash(t2)
    assert len({t1, t2}) == 1
    assert t1 != tree_structure({"a": (1, [2, 3]), "b": Point(3, 4)})


def test_leaf_treedef():
    assert tree_structure(5) == LEAF
    assert tree_structure(np.ones(3)) == LEAF  # arrays are leaves, not sequences
    assert tree_structure("abc") == LEAF
    assert tree_unflatten(LEAF, ["only"]) == "only"


def test_treedef_str():
    assert str(tree_structure(1)) == "*"
    assert str(tree_structure(None)) == "None"
    assert str(tree_structure((1,))) == "(*,)"
    assert str(tree_structure((1, 2))) == "(*, *)"
    assert str(tree_structure([1, None])) == "[*, None]"
    assert str(tree_structure({"b": 1, "a": (2,)})) == "{'a': (*,), 'b': *}"
    assert str(tree_structure(Point(1, [2]))) == "Point(*, [*])"
    assert str(tree_structure(())) == "()"


def test_num_leaves():
    assert tree_structure(((1, 2), {"a": [3, None, 4]})).num_leaves == 4
    assert PyTreeDef("tuple", None, ()).num_leaves == 0


def test_wrong_number_of_leaves_raises():
    treedef = tree_structure((1, 2))
    with pytest.raises(ValueError, match="too few"):
        tree_unflatten(treedef, [1])
    with pytest.raises(ValueError, match="too many"):
        tree_unflatten(treedef, [1, 2, 3])


def test_empty_containers_have_no_leaves_but_keep_their_type():
    for empty in [(), [], {}]:
        flat, treedef = tree_flatten(empty)
        assert flat == []
        out = tree_unflatten(treedef, [])
        assert type(out) is type(empty) and out == empty
    assert tree_structure(()) != tree_structure([])
    assert tree_structure([]) != tree_structure({})
