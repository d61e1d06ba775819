"""Adding a primitive is a checklist; these tests hold every primitive to it.

Every primitive has an entry in every rule table, belongs to the op groups it should (and the
groups tell the truth: a COMMUTATIVE primitive commutes, an ELEMENTWISE one keeps its shape),
its impl rule agrees with its abstract-eval rule on every dtype it accepts, and at least one
catalogue program exercises it. The checks of one primitive's rules against each other are in
tests/primitive_checklist.py, where a primitive made outside minijit (the course's
ex10_new_primitive) takes them too.
"""

from __future__ import annotations

import numpy as np
import pytest
from catalogue import PROGRAMS
from primitive_checklist import (
    accepts,
    check_binary_rejects_mixed_dtypes_and_shapes,
    check_impl_matches_abstract_eval,
    sample,
)

import minijit as mj
from minijit import core, dtypes
from minijit.core import ShapedArray, abstract_eval_rules, impl_rules
from minijit.ir import Jaxpr, subjaxprs
from minijit.lax.control_flow import CONTROL_FLOW
from minijit.passes import INTRODUCED_BY_PIPELINE, REMOVED_BEFORE_CODEGEN, run_passes
from minijit.primitives import ALL_PRIMITIVES

# Every table `dict[Primitive, rule]` in core; a table added there is checked automatically.
RULE_TABLES = {
    name: table for name, table in vars(core).items()
    if name.endswith("_rules") and isinstance(table, dict)
}

# The op groups of every first-order primitive. A new primitive must be added here: this is
# the place that says, deliberately, which passes may treat it as elementwise or commutative.
UNARY = {"neg", "abs", "sign", "floor", "ceil", "exp", "log", "log1p", "expm1", "sin", "cos",
         "tan", "tanh", "logistic", "erf", "sqrt", "not", "integer_pow", "convert_element_type",
         "is_finite"}
COMPARISONS = {"eq", "ne", "lt", "le", "gt", "ge"}
BINARY = {"add", "sub", "mul", "div", "floor_divide", "remainder", "pow", "max", "min", "and",
          "or", "xor", "atan2", "rem", "shift_left", "shift_right_logical",
          "shift_right_arithmetic"} | COMPARISONS
COMMUTATIVE = {"add", "mul", "max", "min", "and", "or", "xor", "eq", "ne"}
ELEMENTWISE = UNARY | BINARY | {"select_n", "clamp"}
REDUCTIONS = {"reduce_sum", "reduce_prod", "reduce_max", "reduce_min", "argmax", "argmin"}
STRUCTURAL = {"dot_general", "reshape", "transpose", "broadcast_in_dim", "squeeze",
              "concatenate", "pad", "slice", "rev", "dynamic_slice", "dynamic_update_slice",
              "iota"}
EXPECTED_GROUPS = {
    "UNARY": UNARY, "BINARY": BINARY, "COMMUTATIVE": COMMUTATIVE, "COMPARISONS": COMPARISONS,
    "ELEMENTWISE": ELEMENTWISE, "REDUCTIONS": REDUCTIONS,
}

# Params that unary primitives need to be evaluated in isolation.
UNARY_PARAMS = {
    "integer_pow": {"y": 3},
    "convert_element_type": {"new_dtype": np.dtype("int32"), "weak_type": False},
}


def test_rule_tables_are_found():
    assert {"abstract_eval_rules", "impl_rules"} <= set(RULE_TABLES)


# Where each table is filled, for the message that says what to add (a table without an
# entry here fails test_every_table_says_where_it_is_filled).
WHERE = {
    "abstract_eval_rules": "minijit/primitives.py (next to the primitive)",
    "impl_rules": "minijit/interpret.py",
    "numba_rules": "minijit/codegen/rules.py (an Expression from codegen/scalar_rules.py, "
                   "or Statements from codegen/array_rules.py)",
}


def _every_table():
    """Every interpretation's table: core's, and code generation's `numba_rules`."""
    from minijit.codegen.rules import numba_rules

    return {**RULE_TABLES, "numba_rules": numba_rules}


def test_every_table_says_where_it_is_filled():
    assert set(_every_table()) == set(WHERE)


@pytest.mark.parametrize("table", sorted(WHERE))
def test_every_primitive_has_a_rule(table):
    rules = _every_table()[table]
    wanted = {*ALL_PRIMITIVES.values(), *CONTROL_FLOW, *INTRODUCED_BY_PIPELINE}
    # `jit` too, but not for code generation: eval_jaxpr and typecheck_jaxpr take a program
    # as traced, calls and all, while the optimizer inlines every call before codegen (see
    # test_primitives_removed_before_codegen).
    if table != "numba_rules":
        wanted |= REMOVED_BEFORE_CODEGEN
    missing = sorted(p.name for p in wanted if p not in rules)
    assert not missing, f"no {table} entry for {missing}: add one in {WHERE[table]}"


def test_every_primitive_has_a_lax_wrapper():
    """The strict, user-facing function that binds it: `lax.add` binds `add_p`."""
    import inspect

    from minijit import primitives
    from minijit.lax import ops

    source = inspect.getsource(ops)
    names = {p: n for n, p in vars(primitives).items() if n.endswith("_p")}
    missing = sorted(p.name for p in ALL_PRIMITIVES.values() if f"P.{names[p]}" not in source)
    assert not missing, f"no function in minijit/lax/ops.py binds {missing}"


def test_tables_cover_the_same_primitives():
    """A primitive registered in one table (by any module) is registered in all of them."""
    keys = {name: {p.name for p in table} for name, table in RULE_TABLES.items()}
    union = set().union(*keys.values())
    for name, names in keys.items():
        assert names == union, f"{name} lacks {sorted(union - names)}"


def test_primitive_names_are_unique_and_match():
    for name, p in ALL_PRIMITIVES.items():
        assert p.name == name
    every = [p.name for p in RULE_TABLES["abstract_eval_rules"]]
    assert len(every) == len(set(every)), "two primitives share a name"


def test_every_primitive_is_classified_here():
    """Forces a deliberate decision (in this file) about the op groups of a new primitive."""
    known = ELEMENTWISE | REDUCTIONS | STRUCTURAL
    new, gone = sorted(set(ALL_PRIMITIVES) - known), sorted(known - set(ALL_PRIMITIVES))
    assert not new, (f"{new} in no op-group list of tests/test_rules.py: add each to UNARY, "
                     "BINARY, COMMUTATIVE, COMPARISONS, REDUCTIONS or STRUCTURAL, as it is")
    assert not gone, f"tests/test_rules.py lists primitives that do not exist: {gone}"


@pytest.mark.parametrize("group", sorted(EXPECTED_GROUPS))
def test_op_groups(group):
    actual = {p.name for p in getattr(core, group)}
    assert actual == EXPECTED_GROUPS[group]
    assert all(ALL_PRIMITIVES[n] in getattr(core, group) for n in actual), "stale primitive"


def test_unary_and_binary_partition_elementwise():
    assert not UNARY & BINARY
    assert {p.name for p in core.UNARY | core.BINARY} <= {p.name for p in core.ELEMENTWISE}
    assert {p.name for p in core.COMMUTATIVE} <= {p.name for p in core.BINARY}
    assert {p.name for p in core.COMPARISONS} <= {p.name for p in core.BINARY}


# --------------------------------------------------------------------------- rules agree


@pytest.mark.parametrize("name", sorted(UNARY | BINARY))
def test_impl_matches_abstract_eval_on_every_dtype(name):
    """For every dtype the shape rule accepts, the impl gives exactly that shape and dtype."""
    check_impl_matches_abstract_eval(ALL_PRIMITIVES[name], 1 if name in UNARY else 2,
                                     UNARY_PARAMS.get(name, {}))


@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary_rules_reject_mixed_dtypes(name):
    check_binary_rejects_mixed_dtypes_and_shapes(ALL_PRIMITIVES[name])


@pytest.mark.parametrize("name", sorted(COMMUTATIVE))
def test_commutative_primitives_commute(name):
    prim = ALL_PRIMITIVES[name]
    checked = 0
    for dt in dtypes.SUPPORTED:
        x, y = sample(dt, (7,), seed=1), sample(dt, (7,), seed=2)
        if accepts(prim, [ShapedArray((7,), dt)] * 2, {}) is None:
            continue
        with np.errstate(all="ignore"):
            (xy,), (yx,) = impl_rules[prim](x, y), impl_rules[prim](y, x)
        np.testing.assert_array_equal(xy, yx, err_msg=f"{name} on {dt.name}")
        checked += 1
    assert checked


@pytest.mark.parametrize("name", sorted(COMPARISONS))
def test_comparisons_give_bool(name):
    prim = ALL_PRIMITIVES[name]
    for dt in dtypes.SUPPORTED:
        (aval,) = abstract_eval_rules[prim](ShapedArray((2,), dt), ShapedArray((2,), dt))
        assert aval.dtype == np.bool_ and aval.shape == (2,)


@pytest.mark.parametrize("name", sorted(REDUCTIONS))
@pytest.mark.parametrize("axes", [(0,), (1,), (2,)])
def test_reductions_drop_their_axes(name, axes):
    prim = ALL_PRIMITIVES[name]
    params = {"axes": axes}
    if name.startswith("arg"):
        params["index_dtype"] = np.dtype("int64")
    x = sample(np.dtype("float64"), (2, 3, 4))
    (aval,) = abstract_eval_rules[prim](ShapedArray(x.shape, x.dtype), **params)
    expected_shape = tuple(d for i, d in enumerate(x.shape) if i not in axes)
    assert aval.shape == expected_shape
    (out,) = impl_rules[prim](x, **params)
    assert (np.shape(out), np.asarray(out).dtype) == (aval.shape, aval.dtype)


@pytest.mark.parametrize("name", sorted(REDUCTIONS - {"argmax", "argmin"}))
def test_reductions_reject_bad_axes(name):
    prim = ALL_PRIMITIVES[name]
    for axes in [(2,), (0, 0), (-1,)]:
        with pytest.raises(TypeError, match="axes"):
            abstract_eval_rules[prim](ShapedArray((2, 3), np.float64), axes=axes)


# --------------------------------------------------------------------------- coverage


def _primitives_in(jaxpr: Jaxpr) -> set:
    found = set()
    for eqn in jaxpr.eqns:
        found.add(eqn.primitive)
        for sub in subjaxprs(eqn):
            found |= _primitives_in(sub)
    return found


@pytest.fixture(scope="module")
def catalogue_primitives() -> set[str]:
    """Every primitive in a catalogue program, as traced or after PIPELINE."""
    found = set()
    for prog in PROGRAMS:
        closed = mj.make_jaxpr(prog.minijit_fn(), static_argnums=prog.static_argnums)(
            *prog.make_args())
        found |= {p.name for p in _primitives_in(closed.jaxpr)}
        found |= {p.name for p in _primitives_in(run_passes(closed).jaxpr)}
    return found


def test_every_primitive_is_exercised_by_the_catalogue(catalogue_primitives):
    wanted = set(ALL_PRIMITIVES) | {
        p.name for p in CONTROL_FLOW | REMOVED_BEFORE_CODEGEN | INTRODUCED_BY_PIPELINE}
    missing = sorted(wanted - catalogue_primitives)
    assert not missing, f"no catalogue program uses {missing}; add one to tests/catalogue.py"


def test_coverage_walks_sub_jaxprs(catalogue_primitives):
    """Primitives used only inside a branch or loop body are reachable through params."""
    from minijit import lax

    closed = mj.make_jaxpr(lambda p, x: lax.cond(p, mj.numpy.sin, mj.numpy.cos, x))(
        True, np.ones(2))
    top = {e.primitive.name for e in closed.eqns}
    assert "sin" not in top and "cond" in top
    assert {"sin", "cos", "cond"} <= {p.name for p in _primitives_in(closed.jaxpr)}
    assert {"while", "cond", "scan", "fori_loop", "fused"} <= catalogue_primitives


def test_primitives_removed_before_codegen():
    """The named group of primitives that no backend needs a rule for holds its promise: after
    PIPELINE, no catalogue program has one left, at any depth."""
    assert {p.name for p in REMOVED_BEFORE_CODEGEN} == {"jit"}
    for prog in PROGRAMS:
        closed = mj.make_jaxpr(prog.minijit_fn(), static_argnums=prog.static_argnums)(
            *prog.make_args())
        left = _primitives_in(run_passes(closed).jaxpr) & REMOVED_BEFORE_CODEGEN
        assert not left, f"{prog.name}: {sorted(p.name for p in left)} left after PIPELINE"
