"""Pytrees: flatten/unflatten round trips, dict key order, None, namedtuples, treedefs, key
paths, and registered classes (as jit arguments and results, in control flow and debug.print)."""

from __future__ import annotations

import collections
import dataclasses

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import minijit as mj
import minijit.numpy as mnp
from minijit import backends, lax
from minijit.tree_util import (
    LEAF,
    DictKey,
    FlattenedIndexKey,
    GetAttrKey,
    PyTreeDef,
    SequenceKey,
    keystr,
    register_dataclass,
    register_pytree_node,
    register_pytree_node_class,
    register_pytree_with_keys,
    tree_flatten,
    tree_flatten_with_names,
    tree_flatten_with_path,
    tree_leaves,
    tree_leaves_with_path,
    tree_map,
    tree_map_with_path,
    tree_structure,
    tree_unflatten,
    treedef_paths,
)

BACKENDS = backends.DISTINCT_BACKENDS

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
    with_path, treedef = tree_flatten_with_names(tree, "t")
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
    with_path, _ = tree_flatten_with_names({"p": Point(1, [2])}, "arg")
    assert [p for p, _ in with_path] == ["arg['p'].x", "arg['p'].y[0]"]
    keys, _ = tree_flatten_with_path({"p": Point(1, [2])})
    assert [p for p, _ in keys] == [(DictKey("p"), GetAttrKey("x")),
                                    (DictKey("p"), GetAttrKey("y"), SequenceKey(0))]


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


def test_treedef_str():  # JAX 0.10.2's strings, checked there
    assert str(tree_structure(1)) == "PyTreeDef(*)"
    assert str(tree_structure(None)) == "PyTreeDef(None)"
    assert str(tree_structure((1,))) == "PyTreeDef((*,))"
    assert str(tree_structure((1, 2))) == "PyTreeDef((*, *))"
    assert str(tree_structure([1, None])) == "PyTreeDef([*, None])"
    assert str(tree_structure({"b": 1, "a": (2,)})) == "PyTreeDef({'a': (*,), 'b': *})"
    assert (str(tree_structure(Point(1, [2])))
            == "PyTreeDef(CustomNode(namedtuple[Point], [*, [*]]))")
    assert str(tree_structure(())) == "PyTreeDef(())"
    assert repr(tree_structure([1])) == "PyTreeDef([*])"


def test_num_leaves():
    assert tree_structure(((1, 2), {"a": [3, None, 4]})).num_leaves == 4
    assert PyTreeDef("tuple", None, ()).num_leaves == 0


def test_wrong_number_of_leaves_raises():
    treedef = tree_structure((1, 2))
    with pytest.raises(ValueError, match="Too few leaves for PyTreeDef; expected 2, got 1"):
        tree_unflatten(treedef, [1])
    with pytest.raises(ValueError, match="Too many leaves for PyTreeDef; expected 2"):
        tree_unflatten(treedef, [1, 2, 3])


def test_empty_containers_have_no_leaves_but_keep_their_type():
    for empty in [(), [], {}]:
        flat, treedef = tree_flatten(empty)
        assert flat == []
        out = tree_unflatten(treedef, [])
        assert type(out) is type(empty) and out == empty
    assert tree_structure(()) != tree_structure([])
    assert tree_structure([]) != tree_structure({})


# --------------------------------------------------------------------------- key paths
# Expected strings are JAX 0.10.2's (checked there).


def test_key_entries_print_as_jax():
    keys = [SequenceKey(0), DictKey("a"), DictKey(1), GetAttrKey("x"), FlattenedIndexKey(2)]
    assert [repr(k) for k in keys] == [
        "SequenceKey(idx=0)", "DictKey(key='a')", "DictKey(key=1)", "GetAttrKey(name='x')",
        "FlattenedIndexKey(key=2)"]
    assert [str(k) for k in keys] == ["[0]", "['a']", "[1]", ".x", "[<flat index 2>]"]
    assert SequenceKey(0) == SequenceKey(0) and hash(DictKey("a")) == hash(DictKey("a"))
    assert SequenceKey(0) != FlattenedIndexKey(0)


def test_flatten_with_path_and_keystr():
    tree = {"w": [1, (2, 3)], "b": Point(4, None), "c": 5}
    with_path, treedef = tree_flatten_with_path(tree)
    assert [leaf for _, leaf in with_path] == [4, 5, 1, 2, 3]
    assert with_path[0][0] == (DictKey("b"), GetAttrKey("x"))
    assert [keystr(p) for p, _ in with_path] == [
        "['b'].x", "['c']", "['w'][0]", "['w'][1][0]", "['w'][1][1]"]
    assert [keystr(p, simple=True, separator="/") for p, _ in with_path] == [
        "b/x", "c", "w/0", "w/1/0", "w/1/1"]
    assert keystr((DictKey("a"), SequenceKey(0)), separator="/") == "['a']/[0]"
    assert keystr(()) == ""
    assert treedef == tree_structure(tree)
    assert tree_leaves_with_path([1, {"a": 2}]) == [
        ((SequenceKey(0),), 1), ((SequenceKey(1), DictKey("a")), 2)]


def test_map_with_path():
    out = tree_map_with_path(lambda p, x: (keystr(p), x), {"a": 1, "b": [2]})
    assert out == {"a": ("['a']", 1), "b": [("['b'][0]", 2)]}
    assert tree_map_with_path(lambda p, x, y: x + y, [1, 2], [10, 20]) == [11, 22]
    assert mj.tree.map_with_path(lambda p, x: p, [1]) == [(SequenceKey(0),)]
    assert mj.tree.leaves_with_path([1]) == [((SequenceKey(0),), 1)]
    assert mj.tree.flatten_with_path([1])[0] == [((SequenceKey(0),), 1)]


# --------------------------------------------------------------------------- custom nodes


class Vec:
    """Registered with register_pytree_node: its children have FlattenedIndexKeys."""

    def __init__(self, a, b):
        self.a, self.b = a, b


register_pytree_node(Vec, lambda v: ((v.a, v.b), "aux"), lambda aux, ch: Vec(*ch))


@register_pytree_node_class
class Scaled:
    """A class decorated as a node: `scale` is aux data, not a leaf."""

    def __init__(self, value, scale):
        self.value, self.scale = value, scale

    def tree_flatten(self):
        return (self.value,), self.scale

    @classmethod
    def tree_unflatten(cls, scale, children):
        return cls(children[0], scale)


@register_dataclass
@dataclasses.dataclass
class Params:
    w: object
    b: object
    op: str = dataclasses.field(default="add", metadata=dict(static=True))


class Keyed:
    def __init__(self, x, y):
        self.x, self.y = x, y


register_pytree_with_keys(
    Keyed, lambda k: (((GetAttrKey("x"), k.x), (GetAttrKey("y"), k.y)), None),
    lambda aux, ch: Keyed(*ch))


class Meta:
    """Unhashable aux data (a list): JAX compares it with `==` and does not hash it."""

    def __init__(self, x, meta):
        self.x, self.meta = x, meta


register_pytree_node(Meta, lambda m: ((m.x,), m.meta), lambda meta, ch: Meta(ch[0], meta))


def test_custom_node_flattens_with_jax_keys_and_str():
    with_path, treedef = tree_flatten_with_path([Vec(1, 2)])
    assert with_path == [((SequenceKey(0), FlattenedIndexKey(0)), 1),
                         ((SequenceKey(0), FlattenedIndexKey(1)), 2)]
    assert str(treedef) == "PyTreeDef([CustomNode(Vec[aux], [*, *])])"
    assert (str(tree_structure(Scaled(1, ("t", 2))))
            == "PyTreeDef(CustomNode(Scaled[('t', 2)], [*]))")
    assert str(tree_structure(Params(1, 2))) == "PyTreeDef(CustomNode(Params[('add',)], [*, *]))"
    assert tree_flatten_with_path(Params(1, 2))[0] == [((GetAttrKey("w"),), 1),
                                                       ((GetAttrKey("b"),), 2)]
    assert tree_flatten_with_path(Keyed(1, 2))[0] == [((GetAttrKey("x"),), 1),
                                                      ((GetAttrKey("y"),), 2)]
    assert str(tree_structure(Keyed(1, 2))) == "PyTreeDef(CustomNode(Keyed[None], [*, *]))"


def test_custom_node_round_trips_and_maps():
    v = tree_map(lambda x: x * 10, Vec(1, Vec(2, 3)))
    assert (v.a, v.b.a, v.b.b) == (10, 20, 30)
    s = tree_unflatten(tree_structure(Scaled(0, 3.0)), [5])
    assert (s.value, s.scale) == (5, 3.0)
    assert tree_map(lambda x: -x, Params(1, 2, "mul")) == Params(-1, -2, "mul")


def test_treedef_compares_aux_by_value_without_hashing_it():
    a, b = tree_structure(Meta(1, [1, 2])), tree_structure(Meta(1, [1, 2]))
    assert a == b and hash(a) == hash(b)
    assert a != tree_structure(Meta(1, [1, 3]))
    assert tree_structure(Scaled(1, 2.0)) != tree_structure(Scaled(1, 3.0))


def test_registration_errors_are_jax_s():
    with pytest.raises(ValueError, match="Duplicate custom PyTreeDef type registration for "
                                         "<class 'test_tree_util.Vec'>"):
        register_pytree_node(Vec, lambda v: ((), None), lambda aux, ch: Vec(0, 0))
    with pytest.raises(ValueError, match="Duplicate custom PyTreeDef type registration"):
        register_pytree_node(tuple, lambda v: (v, None), lambda aux, ch: tuple(ch))
    with pytest.raises(TypeError, match="must both be specified"):
        register_dataclass(Point, data_fields=["x"])
    with pytest.raises(TypeError, match="required when nodetype is not a dataclass"):
        register_dataclass(Vec)

    @dataclasses.dataclass
    class Two:
        a: int
        b: int

    with pytest.raises(ValueError, match="Missing fields: {'b'}"):
        register_dataclass(Two, data_fields=["a"], meta_fields=[])


def test_bad_flatten_function_is_named():
    class Bad:
        pass

    register_pytree_node(Bad, lambda b: 3, lambda aux, ch: Bad())
    with pytest.raises(ValueError, match=r"should return a \(children, aux_data\) tuple, got 3"):
        tree_leaves(Bad())


# --------------------------------------------------------------------------- under jit


@pytest.mark.parametrize("backend", BACKENDS)
def test_custom_nodes_as_jit_arguments_and_results(backend):
    @mj.jit(backend=backend)
    def f(p, s):
        return Params(p.b * s.scale, p.w + s.value, p.op), Vec(p.w, s.value)

    out, v = f(Params(np.ones(2), np.arange(2.0)), Scaled(np.float64(3.0), 2.0))
    assert isinstance(out, Params) and out.op == "add"
    np.testing.assert_array_equal(out.w, [0.0, 2.0])
    np.testing.assert_array_equal(out.b, [4.0, 4.0])
    assert isinstance(v, Vec) and float(v.b) == 3.0
    f(Params(np.ones(2), np.arange(2.0)), Scaled(np.float64(4.0), 2.0))
    assert f.trace_count == 1  # same structure and aux data: a hit
    f(Params(np.ones(2), np.arange(2.0)), Scaled(np.float64(4.0), 5.0))
    assert f.trace_count == 2  # new aux data: a new structure, so a retrace


@pytest.mark.parametrize("backend", BACKENDS)
def test_unhashable_aux_data_works_under_jit(backend):
    traces = []

    @mj.jit(backend=backend)
    def f(m):
        traces.append(1)
        return m.x * len(m.meta)

    np.testing.assert_array_equal(f(Meta(np.ones(2), [1, 2])), [2.0, 2.0])
    f(Meta(np.ones(2), [1, 2]))
    np.testing.assert_array_equal(f(Meta(np.ones(2), [1, 2, 3])), [3.0, 3.0])
    assert len(traces) == 2  # as in JAX: equal aux hits, a different one retraces


@pytest.mark.parametrize("backend", BACKENDS)
def test_custom_nodes_in_control_flow_carries(backend):
    @mj.jit(backend=backend)
    def f(x):
        c = lax.cond(x > 0, lambda v: Vec(v.b, v.a), lambda v: v, Vec(x, 2 * x))
        w = lax.while_loop(lambda v: v.a < 5.0, lambda v: Vec(v.a + 1.0, v.b * 2.0),
                           Vec(x, x))
        s, ys = lax.scan(lambda c, t: (Params(c.w + t, c.b, c.op), c.w), Params(x, x),
                         mnp.arange(3.0))
        return c, w, s, ys

    for run in (f, f.fun):  # compiled, and eagerly
        c, w, s, ys = run(np.float64(1.0))
        assert (float(c.a), float(c.b)) == (2.0, 1.0)
        assert (float(w.a), float(w.b)) == (5.0, 16.0)
        assert isinstance(s, Params) and float(s.w) == 4.0
        np.testing.assert_array_equal(ys, [1.0, 1.0, 2.0])


@pytest.mark.parametrize("backend", BACKENDS)
def test_custom_nodes_in_debug_print(capsys, backend):
    def f(x):
        mj.debug.print("{v}", v=Vec(x, 2.0))

    mj.jit(f, backend=backend)(np.ones(2))
    f(np.ones(2))
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 2 and all(line.startswith("<test_tree_util.Vec object") for line in lines)


class Strict:
    """A class whose constructor refuses anything but arrays: control flow must name its
    leaves without rebuilding it around placeholders."""

    def __init__(self, x):
        if not hasattr(x, "shape"):
            raise TypeError("x must be an array")
        self.x = x


register_pytree_node(Strict, lambda s: ((s.x,), None), lambda aux, ch: Strict(*ch))


def test_treedef_paths_name_leaves_without_the_tree():
    assert treedef_paths(tree_structure({"p": Params(1, 2), "v": [Vec(3, 4)]})) == [
        (DictKey("p"), GetAttrKey("w")), (DictKey("p"), GetAttrKey("b")),
        (DictKey("v"), SequenceKey(0), FlattenedIndexKey(0)),
        (DictKey("v"), SequenceKey(0), FlattenedIndexKey(1))]
    assert treedef_paths(tree_structure((Strict(np.ones(1)), Point(1, 2)))) == [
        (SequenceKey(0), FlattenedIndexKey(0)), (SequenceKey(1), GetAttrKey("x")),
        (SequenceKey(1), GetAttrKey("y"))]


@pytest.mark.parametrize("backend", BACKENDS)
def test_control_flow_carries_a_class_that_refuses_placeholders(backend):
    @mj.jit(backend=backend)
    def f(x):
        c = lax.cond(x[0] > 0, lambda s: Strict(s.x + 1), lambda s: s, Strict(x))
        w = lax.while_loop(lambda s: s.x[0] < 3, lambda s: Strict(s.x + 1), Strict(x))
        s, _ = lax.scan(lambda c, t: (Strict(c.x + t), t), Strict(x), mnp.arange(3.0))
        return c.x, w.x, s.x

    assert [float(o[0]) for o in f(np.ones(2))] == [2.0, 3.0, 4.0]
