"""minijit.grading.properties: the solutions' pieces pass, subtly wrong pieces fail with a
shrunk program in the message, and the checks are deterministic."""

from __future__ import annotations

import numpy as np
import pytest
from solution_cells import solution_namespace
from stand_in import stand_in

import minijit as mj
import minijit.codegen.kernels  # noqa: F401 - registers loop_nest
from minijit import build
from minijit.grading import properties
from minijit.grading.build_pieces import BUILD_PIECES
from minijit.grading.properties import property_case
from minijit.grading.registry import default_exercises


@pytest.mark.parametrize("exercise_id", list(BUILD_PIECES))
def test_the_solutions_pieces_pass(exercise_id):
    piece, function = BUILD_PIECES[exercise_id]
    ns = solution_namespace(build.PIECES[piece].chapter + ".ipynb", exercise_id)
    assert properties.check_piece(piece, ns[function]) is None


def test_every_build_exercise_has_the_property_case_last_of_its_hidden_cases():
    exercises = default_exercises()
    for exercise_id in BUILD_PIECES:
        assert exercises[exercise_id].hidden[-1] == property_case(exercise_id)


def _eval_reading_each_variable_once(jaxpr, consts, *args):
    """An interpreter that reads an equation's operands through a dict of them: `x * x`
    loses its second operand."""
    from minijit.core import impl_rules

    env = {}

    def read(atom):
        return np.asarray(atom.val, atom.aval.dtype) if isinstance(atom, mj.Lit) else env[atom]

    for var, value in zip((*jaxpr.constvars, *jaxpr.invars), (*consts, *args)):
        env[var] = np.asarray(value, var.aval.dtype)
    for eqn in jaxpr.eqns:
        operands = {id(a): read(a) for a in eqn.invars}
        if len(operands) == 1 and len(eqn.invars) == 2:  # the same variable twice
            operands = {0: next(iter(operands.values())), 1: np.ones_like(read(eqn.invars[0]))}
        outs = impl_rules[eqn.primitive](*operands.values(), **eqn.params)
        for var, value in zip(eqn.outvars, outs):
            env[var] = np.asarray(value, var.aval.dtype)
    return [read(a) for a in jaxpr.outvars]


def test_an_eval_jaxpr_that_mishandles_a_repeated_variable_fails_on_a_shrunk_program():
    message = properties.check_piece("eval_jaxpr", _eval_reading_each_variable_once)
    assert message is not None and "shrunk from" in message
    source = message.split("\n\n")[1]
    assert "def f(x, y, z):" in source
    body = source.splitlines()[1:-1]
    assert len(body) <= 2, source  # the line that multiplies a value by itself, and one more
    assert "yours: " in message and "minijit's own: " in message


def _printer_naming_past_z_as_aa(jaxpr):
    """minijit's printer, except that the 27th name is `aa` (JAX's is `ba`)."""
    text = stand_in("pp_jaxpr")(jaxpr)
    return text.replace("ba:", "aa:").replace(" ba ", " aa ").replace(" ba\n", " aa\n")


def test_a_pp_jaxpr_that_misnames_after_26_variables_fails_and_shows_the_program():
    message = properties.check_piece("pp_jaxpr", _printer_naming_past_z_as_aa)
    assert message is not None
    assert "aa:" in message and "ba:" in message  # yours beside minijit's own


def _dce_keeping_the_head_of_a_dead_chain(jaxpr):
    """Drops only the equations nothing reads: a dead chain keeps its first equation."""
    read = {id(a) for e in jaxpr.eqns for a in e.invars} | {id(a) for a in jaxpr.outvars}
    kept = tuple(e for e in jaxpr.eqns if any(id(v) in read for v in e.outvars))
    return mj.Jaxpr(jaxpr.constvars, jaxpr.invars, kept, jaxpr.outvars)


def test_a_dce_that_keeps_a_dead_equation_fails_on_a_shrunk_program():
    message = properties.check_piece("dce", _dce_keeping_the_head_of_a_dead_chain,
                                      selftest=False)  # its selftest finds it too
    assert message is not None and "shrunk from" in message, message
    lines = message.split("\n\n")[1].splitlines()[1:-1]
    assert len(lines) == 1, message  # one line whose equations make a dead chain


def _key_without_weak_types(static_values, leaf_avals, treedef):
    return (treedef, tuple((s, d) for s, d, _ in leaf_avals), tuple(
        (v, type(v)) for _, v in static_values))


def test_a_cache_key_without_weak_types_names_two_calls():
    message = properties.check_piece("cache_key", _key_without_weak_types, selftest=False)
    assert message is not None and message.count("\n  f(") == 2, message


def test_the_checks_are_deterministic():
    assert properties.random_program(5) == properties.random_program(5)
    assert properties.random_program(5) != properties.random_program(6)
    first = properties.check_piece("cache_key", _key_without_weak_types, selftest=False)
    assert properties.check_piece("cache_key", _key_without_weak_types, selftest=False) == first
    program = properties.random_program(3)
    assert properties.shrink(program, lambda p: len(p.lines) > 2) == properties.shrink(
        program, lambda p: len(p.lines) > 2)


def test_no_switch_outlives_a_check():
    with build.use("pp_jaxpr", stand_in("pp_jaxpr"), verify=False):
        before = build.using()
        assert properties.check_piece("cache_key", _key_without_weak_types) is not None
        assert build.using() == before
