"""Tests of the optimizer (`minijit.passes`, chapters 07 and 08).

Differential: every pass alone, and the whole PIPELINE through `run_passes`, keeps the values
of every catalogue program and of thousands of random programs (tests/random_programs.py)
equal to `eval_jaxpr` of the unoptimized program; the result typechecks, applying the pass
again changes nothing (idempotence), and `debug.print` prints the same lines. Then targeted
tests per pass, with golden IR strings or structural assertions.

Exactness: values must agree bit for bit (the sign of zero included), except where a power was
rewritten into multiplications, which may differ from `pow` in the last bit: those outputs are
compared with rtol 1e-12 (float64) / 1e-5 (float32).

Random examples per test: `MINIJIT_HYPOTHESIS_SCALE` (default 1) multiplies the counts; CI runs
are derandomized (the same programs every run) and use no example database.
"""

from __future__ import annotations

import contextlib
import io
import os

import numpy as np
import pytest
from catalogue import PROGRAMS, Program
from hypothesis import HealthCheck, given, settings
from random_programs import RandomProgram, programs

import minijit as mj
import minijit.numpy as mnp
from minijit import lax
from minijit import primitives as P
from minijit.core import ELEMENTWISE, Primitive, ShapedArray, abstract_eval_rules, impl_rules
from minijit.debug import debug_callback_p
from minijit.ir import ClosedJaxpr, Eqn, Jaxpr, Lit, Var, subjaxprs, typecheck_jaxpr
from minijit.lax.control_flow import cond_p, scan_p, while_p
from minijit.passes import (
    PIPELINE,
    PassError,
    counted_loops,
    cse,
    dce,
    fold_constants,
    fuse_elementwise,
    fused_p,
    plan_buffers,
    run_passes,
    simplify,
)
from minijit.passes.counted_loops import fori_loop_p
from minijit.passes.fold_constants import MAX_FOLDED_ELEMENTS
from minijit.passes.fuse_elementwise import may_fuse
from minijit.passes.simplify import RULES, rule_for
from minijit.tree_util import tree_leaves

PASSES = {p.__name__: p for p in PIPELINE}


def pipeline(closed: ClosedJaxpr) -> ClosedJaxpr:
    return run_passes(closed)


ALL = {**PASSES, "pipeline": pipeline}

# --------------------------------------------------------------------------- helpers


def trace(fn, *args, **kw) -> ClosedJaxpr:
    return mj.make_jaxpr(fn, **kw)(*args)


def run(closed: ClosedJaxpr, args) -> tuple[list[np.ndarray], str]:
    """Evaluate `closed` on `args`; returns the outputs and what `debug.print` printed."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        values = mj.eval_jaxpr(closed.jaxpr, closed.consts, *args)
    return [np.asarray(v) for v in values], out.getvalue()


def walk(jaxpr: Jaxpr):
    """Every equation, in sub-Jaxprs too (depth first)."""
    for e in jaxpr.eqns:
        yield e
        for sub in subjaxprs(e):
            yield from walk(sub)


def prims(jaxpr: Jaxpr) -> list[str]:
    """Primitive names of the top-level equations, in order."""
    return [e.primitive.name for e in jaxpr.eqns]


def count(jaxpr: Jaxpr, prim: Primitive) -> int:
    return sum(e.primitive is prim for e in walk(jaxpr))


def has_inexact_power(jaxpr: Jaxpr) -> bool:
    """Does the program hold a float power that `simplify` may rewrite inexactly?"""
    for e in walk(jaxpr):
        floats = e.outvars and e.outvars[0].aval.dtype.kind == "f"
        if floats and e.primitive is P.integer_pow_p and e.params["y"] not in (0, 1, 2, -1):
            return True
        if floats and e.primitive is P.pow_p:
            return True
    return False


def assert_same(got, want, inexact, where: str = "") -> None:
    """Same shapes and dtypes; floats bit-exact (sign of zero too, NaN == NaN) unless
    `inexact[k]`, then within rtol 1e-12 (f64) / 1e-5 (f32); ints and bools exact."""
    assert len(got) == len(want), f"{where}: {len(got)} outputs, expected {len(want)}"
    for k, (g, w) in enumerate(zip(got, want)):
        here = f"{where} output {k}"
        assert g.shape == w.shape and g.dtype == w.dtype, (
            f"{here}: got {g.dtype}{g.shape}, expected {w.dtype}{w.shape}")
        if w.dtype.kind != "f":
            np.testing.assert_array_equal(g, w, err_msg=here, strict=True)
        elif inexact[k]:
            tol = 1e-12 if w.dtype == np.float64 else 1e-5
            np.testing.assert_allclose(g, w, rtol=tol, atol=np.finfo(w.dtype).tiny,
                                       equal_nan=True, err_msg=here)
        else:
            same = (g == w) & (np.signbit(g) == np.signbit(w)) | (np.isnan(g) & np.isnan(w))
            assert same.all(), f"{here}: not bit-exact\n got: {g!r}\nwant: {w!r}"


def assert_no_sub_constvars(jaxpr: Jaxpr) -> None:
    """Sub-Jaxprs take captured values as operands: they never have constvars."""
    for e in walk(jaxpr):
        for sub in subjaxprs(e):
            assert not sub.constvars, f"a sub-Jaxpr of `{e.primitive.name}` has constvars"


def check_pass(p, closed: ClosedJaxpr, args, inexact, idempotent: bool = True) -> ClosedJaxpr:
    """`p` keeps values, types and printed output, typechecks, and is idempotent."""
    before = str(closed)
    want, printed = run(closed, args)
    out = p(closed)
    name = getattr(p, "__name__", "pass")
    assert isinstance(out, ClosedJaxpr)
    assert str(closed) == before, f"{name} changed its input (the IR is immutable)"
    typecheck_jaxpr(out.jaxpr)
    assert_no_sub_constvars(out.jaxpr)
    assert len(out.consts) == len(out.jaxpr.constvars)
    assert [a.strip_weak_type() for a in out.out_avals] == [
        a.strip_weak_type() for a in closed.out_avals]
    assert out.in_avals == closed.in_avals
    got, got_printed = run(out, args)
    assert_same(got, want, inexact, name)
    assert got_printed == printed, f"{name} changed what debug.print prints"
    again = p(out)
    typecheck_jaxpr(again.jaxpr)
    if idempotent:
        assert str(again) == str(out), f"{name} is not idempotent:\n{out}\nthen\n{again}"
    else:
        assert_same(run(again, args)[0], want, inexact, f"{name} twice")
    return out


def check_pipeline(closed: ClosedJaxpr, args, inexact) -> None:
    """After every pass of the pipeline (recorded), values and prints are unchanged."""
    want, printed = run(closed, args)
    record: list = []
    out = run_passes(closed, record=record)
    assert [name for name, _ in record] == [p.__name__ for p in PIPELINE]
    assert record[-1][1] is out
    for name, step in record:
        typecheck_jaxpr(step.jaxpr)
        assert_no_sub_constvars(step.jaxpr)
        got, got_printed = run(step, args)
        assert_same(got, want, inexact, f"pipeline after {name}")
        assert got_printed == printed, f"pipeline after {name}: debug.print differs"


# --------------------------------------------------------------------------- catalogue


def _catalogue_case(prog: Program):
    args = prog.make_args()
    closed = trace(prog.minijit_fn(), *args, static_argnums=prog.static_argnums)
    leaves = tree_leaves(tuple(a for i, a in enumerate(args) if i not in prog.static_argnums))
    inexact = [has_inexact_power(closed.jaxpr)] * len(closed.out_avals)
    return closed, leaves, inexact


@pytest.mark.parametrize("name", sorted(ALL))
@pytest.mark.parametrize("prog", PROGRAMS, ids=[p.name for p in PROGRAMS])
def test_catalogue_pass_preserves_semantics(prog: Program, name: str):
    closed, leaves, inexact = _catalogue_case(prog)
    check_pass(ALL[name], closed, leaves, inexact, idempotent=name != "pipeline")


@pytest.mark.parametrize("prog", PROGRAMS, ids=[p.name for p in PROGRAMS])
def test_catalogue_pipeline_each_step(prog: Program):
    closed, leaves, inexact = _catalogue_case(prog)
    check_pipeline(closed, leaves, inexact)
    plan = plan_buffers(run_passes(closed))
    assert plan.bytes_after <= plan.bytes_before


# --------------------------------------------------------------------------- random programs

SCALE = float(os.environ.get("MINIJIT_HYPOTHESIS_SCALE", "1"))


def random_settings(n: int):
    return settings(max_examples=max(1, int(n * SCALE)), deadline=None, derandomize=True,
                    database=None, print_blob=False,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                           HealthCheck.filter_too_much])


def _random_case(prog: RandomProgram):
    with np.errstate(all="ignore"):  # constants the program computes eagerly, with NumPy
        closed = trace(prog.fn, *prog.args)
    return closed, list(prog.args), prog.inexact


# One test per pass, so that each draws its own programs (the derandomized seed comes from the
# test's name); together about 2400 programs in CI.


@random_settings(350)
@given(programs())
def test_random_fold_constants(prog: RandomProgram):
    check_pass(fold_constants, *_random_case(prog))


@random_settings(350)
@given(programs())
def test_random_simplify(prog: RandomProgram):
    check_pass(simplify, *_random_case(prog))


@random_settings(350)
@given(programs())
def test_random_cse(prog: RandomProgram):
    check_pass(cse, *_random_case(prog))


@random_settings(350)
@given(programs())
def test_random_dce(prog: RandomProgram):
    check_pass(dce, *_random_case(prog))


@random_settings(350)
@given(programs())
def test_random_fuse_elementwise(prog: RandomProgram):
    check_pass(fuse_elementwise, *_random_case(prog))


@random_settings(400)
@given(programs())
def test_random_pipeline(prog: RandomProgram):
    closed, args, inexact = _random_case(prog)
    # Each pass is idempotent; the pipeline need not be (cse can make work for simplify).
    check_pass(pipeline, closed, args, inexact, idempotent=False)
    check_pipeline(closed, args, inexact)


@random_settings(300)
@given(programs())
def test_random_plan_buffers(prog: RandomProgram):
    closed, _, _ = _random_case(prog)
    for program in (closed, run_passes(closed)):
        for donated in ((), (True,) * len(program.jaxpr.invars)):
            check_plan(program.jaxpr, donated)


def _nbytes(v: Var) -> int:
    return v.aval.size * v.aval.dtype.itemsize


def _in_place(eqn: Eqn, v1: Var) -> bool:
    """May `eqn` write its result over its operand `v1`?"""
    if eqn.primitive.name == "dynamic_update_slice":
        return eqn.invars[0] is v1
    return eqn.primitive in ELEMENTWISE or (
        eqn.primitive is fused_p and eqn.params["kind"] == "elementwise")


_VIEW_NAMES = {"reshape", "squeeze", "transpose", "slice", "dynamic_slice", "rev"}


def _roots(jaxpr: Jaxpr) -> dict[int, set]:
    """Independently of the planner: which allocations each value may share memory with."""
    roots = {id(v): {id(v)} for v in (*jaxpr.constvars, *jaxpr.invars)}
    for e in jaxpr.eqns:
        ins = [roots[id(a)] if isinstance(a, Var) else set() for a in e.invars]
        handed = _handed(e, ins)
        for k, v in enumerate(e.outvars):
            if e.primitive.name in _VIEW_NAMES:
                roots[id(v)] = set().union(*ins)
            elif handed is not None:
                roots[id(v)] = handed[k] | {id(v)}
            else:
                roots[id(v)] = {id(v)}
    return roots


def _handed(e: Eqn, ins: list[set]) -> list[set] | None:
    """What control flow's results may share: a body's output traced back to its inputs
    (what each input stands for: an operand's roots, or a carry, which holds its initial
    value or what the body returned for it, repeated until nothing new is found)."""
    p, name = e.params, e.primitive.name
    if name == "cond":
        out = [set() for _ in e.outvars]
        for branch in p["branches"]:
            inner = _roots(branch)
            for k, o in enumerate(branch.outvars):
                for i, v in enumerate(branch.invars):
                    if isinstance(o, Var) and id(v) in inner[id(o)]:
                        out[k] |= ins[1 + i]
        return out
    layouts = {  # body, [what each body input is], initial carries
        "while": lambda: (p["body_jaxpr"],
                          ins[p["cond_nconsts"]:p["cond_nconsts"] + p["body_nconsts"]],
                          ins[p["cond_nconsts"] + p["body_nconsts"]:]),
        "fori_loop": lambda: (p["body_jaxpr"], ins[2:2 + p["body_nconsts"]] + [set()],
                              ins[2 + p["body_nconsts"]:]),
        "scan": lambda: (p["jaxpr"], ins[:p["num_consts"]],
                         ins[p["num_consts"]:p["num_consts"] + p["num_carry"]]),
    }
    if name not in layouts:
        return None
    body, outer, init = layouts[name]()
    held = [set(r) for r in init]
    stands_for = [("outer", r) for r in outer] + [("carry", j) for j in range(len(init))]
    if name == "scan":  # a step's x: a row (a view) of its xs operand
        stands_for += [("outer", r) for r in ins[p["num_consts"] + p["num_carry"]:]]
    inner = _roots(body)
    for _ in range(len(init) + 1):  # a carry's set grows through at most every other carry
        for j in range(len(init)):
            o = body.outvars[j]
            for v, (kind, what) in zip(body.invars, stands_for):
                if isinstance(o, Var) and id(v) in inner[id(o)]:
                    held[j] |= what if kind == "outer" else held[what]
    return held + [set() for _ in e.outvars[len(init):]]  # a scan's ys: new arrays


def check_plan(jaxpr: Jaxpr, donated=()):
    """Recompute storage and liveness independently and check the plan against them.

    Views share their operand's allocation, control flow may hand back the operands its
    sub-Jaxprs return (`_handed`). An
    allocation occupies its buffer from the equation that makes it to the last use of any
    value that may share it (a donated input from the start). Two allocations may share a
    buffer only if one is dead before the other is made, or (in place) the first is read for
    the last time, directly and by no view beside it, by the elementwise equation that makes
    the second, of the same shape (so each element is read, then written).
    """
    plan = plan_buffers(jaxpr, donated)
    roots = _roots(jaxpr)
    n = len(jaxpr.eqns)
    start, end, var_of = {}, {}, {}
    for v in jaxpr.invars:
        start[id(v)], var_of[id(v)] = -1, v
    for i, e in enumerate(jaxpr.eqns):
        for a in e.invars:
            if isinstance(a, Var):
                for r in roots[id(a)]:
                    end[r] = i
        for v in e.outvars:
            start[id(v)], var_of[id(v)] = i, v
    for a in jaxpr.outvars:
        if isinstance(a, Var):
            for r in roots[id(a)]:
                end[r] = n
    allocated = {id(v) for e in jaxpr.eqns for v in e.outvars
                 if id(v) in roots[id(v)] and v.aval.shape and v.aval.size}
    for i, e in enumerate(jaxpr.eqns):  # every array an equation allocates has a buffer
        for v in e.outvars:
            if id(v) in allocated:
                assert id(v) in plan.buffer_of, f"no buffer for an output of eqn {i}"
                assert plan.buffer_bytes[plan.buffer_of[id(v)]] in (0, _nbytes(v))
    assert set(plan.buffer_of) <= allocated, "the plan gave a buffer to an input, const or view"
    occupants: dict[int, list] = {}
    for vid, b in plan.buffer_of.items():
        v = var_of[vid]
        occupants.setdefault(b, []).append((start[vid], end.get(vid, start[vid]), v))
    for b, k in plan.reused_from_input.items():
        assert k < len(donated) and donated[k], f"buffer {b}: input {k} was not donated"
        assert plan.buffer_bytes[b] == 0
        v = jaxpr.invars[k]
        assert all(_nbytes(o[2]) == _nbytes(v) for o in occupants.get(b, []))
        occupants.setdefault(b, []).append((-1, end.get(id(v), -1), v))
    for b, occ in occupants.items():
        occ.sort(key=lambda o: (o[0], o[1]))
        for (s1, e1, v1), (s2, e2, v2) in zip(occ, occ[1:]):
            if e1 < s2:
                continue
            eqn = jaxpr.eqns[s2] if 0 <= s2 < n else None
            ok = (eqn is not None and e1 == s2 and _in_place(eqn, v1)
                  and any(a is v1 for a in eqn.invars) and v1.aval.shape == v2.aval.shape
                  and not any(isinstance(a, Var) and a is not v1 and id(v1) in roots[id(a)]
                              for a in eqn.invars))
            assert ok, (f"buffer {b} is shared by two live values: {v1.aval} live "
                        f"[{s1}, {e1}] and {v2.aval} live [{s2}, {e2}]\n{jaxpr}")
    assert plan.bytes_before == sum(_nbytes(var_of[v]) for v in allocated)
    assert plan.bytes_after == sum(plan.buffer_bytes) <= plan.bytes_before
    return plan


# --------------------------------------------------------------------------- every pass

X3 = np.array([1.5, -0.0, -2.0])
X34 = np.arange(12.0).reshape(3, 4) - 5.5
Y4 = np.array([0.5, -1.0, 2.0, -0.0])


@pytest.mark.parametrize("name", sorted(PASSES))
def test_pass_docstring_states_assumptions_guarantees_and_example(name):
    doc = PASSES[name].__doc__ or ""
    for word in ("Assumes", "Guarantees", "before:", "after:"):
        assert word in doc, f"{name}'s docstring lacks {word!r}"


def test_pipeline_is_the_documented_order():
    assert [p.__name__ for p in PIPELINE] == [
        "inline_jit", "fold_constants", "simplify", "cse", "dce", "counted_loops",
        "fuse_elementwise", "fuse_siblings"]


# --------------------------------------------------------------------------- run_passes


def _break_types(closed: ClosedJaxpr) -> ClosedJaxpr:
    """A deliberately broken pass: the first equation claims an int32 result."""
    j = closed.jaxpr
    first = j.eqns[0]
    bad = Eqn(first.primitive, first.invars, (Var(first.outvars[0].aval.update(
        dtype=np.dtype("int32"))),), first.params, first.source)
    return ClosedJaxpr(Jaxpr(j.constvars, j.invars, (bad, *j.eqns[1:]), j.outvars),
                       closed.consts)


def test_run_passes_names_the_failing_pass_and_those_before_it():
    closed = trace(lambda x: mnp.sin(x) * 2.0, X3)
    with pytest.raises(PassError) as info:
        run_passes(closed, [fold_constants, simplify, _break_types, cse])
    msg = str(info.value)
    assert "`_break_types` produced an ill-typed program" in msg
    assert "passes before it: fold_constants, simplify" in msg
    assert "cse" not in msg.split("passes before it")[1].split(")")[0]
    with pytest.raises(PassError, match=r"passes before it: none"):
        run_passes(closed, [_break_types])


def test_run_passes_rejects_a_pass_that_returns_something_else():
    closed = trace(lambda x: mnp.sin(x), X3)
    def oops(c):
        return [c]

    with pytest.raises(PassError, match="`oops` returned list"):
        run_passes(closed, [oops])

    def drop_consts(c):
        return ClosedJaxpr(c.jaxpr, ())

    with_const = trace(lambda x: x + np.arange(3.0), X3)
    with pytest.raises(PassError, match="`drop_consts` left 0 consts for 1 constvars"):
        run_passes(with_const, [drop_consts])


def test_run_passes_records_one_entry_per_pass():
    closed = trace(lambda x: mnp.sin(x * 1.0) + mnp.sin(x * 1.0), X3)
    record: list = []
    out = run_passes(closed, record=record)
    assert [name for name, _ in record] == [p.__name__ for p in PIPELINE]
    assert all(isinstance(c, ClosedJaxpr) for _, c in record)
    assert record[-1][1] is out
    assert str(dict(record)["simplify"]) != str(closed)  # simplify removed `mul x 1.0`
    record = []
    run_passes(closed, [cse, dce], record=record)
    assert [name for name, _ in record] == ["cse", "dce"]


# --------------------------------------------------------------------------- fold_constants


def test_fold_scalar_becomes_a_literal():
    closed = trace(lambda x: x + lax.mul(2.0, 3.0), X3)
    assert str(fold_constants(closed)) == (
        "{ lambda ; a:f64[3]. let b:f64[3] = add a 6.0:f64[] in (b,) }")


def test_fold_small_array_becomes_a_constvar():
    closed = trace(lambda x: x + mnp.arange(4.0) * 2, Y4)
    out = dce(fold_constants(closed))
    assert str(out) == "{ lambda a:f64[4]; b:f64[4]. let c:f64[4] = add b a in (c,) }"
    np.testing.assert_array_equal(out.consts[0], [0.0, 2.0, 4.0, 6.0])


def test_fold_uses_closed_over_constants():
    c = np.array([1.0, 2.0, 3.0])
    closed = trace(lambda x: x * (c * 2.0 + 1.0), X3)
    out = dce(fold_constants(closed))
    assert prims(out.jaxpr) == ["mul"]
    np.testing.assert_array_equal(out.consts[0], [3.0, 5.0, 7.0])


def test_fold_does_not_materialise_a_huge_constant():
    closed = trace(lambda x: x + mnp.sum(mnp.zeros((1_000_000,))), X3)
    out = fold_constants(closed)
    assert prims(out.jaxpr) == ["broadcast_in_dim", "reduce_sum", "add"]
    assert all(np.size(c) <= MAX_FOLDED_ELEMENTS for c in out.consts)


def test_fold_limit_is_on_the_number_of_elements():
    at_limit = trace(lambda x: x[0] + mnp.ones((MAX_FOLDED_ELEMENTS,)), X3)
    over = trace(lambda x: x[0] + mnp.ones((MAX_FOLDED_ELEMENTS + 1,)), X3)
    assert "broadcast_in_dim" not in prims(fold_constants(at_limit).jaxpr)
    assert "broadcast_in_dim" in prims(fold_constants(over).jaxpr)


def test_fold_keeps_effects_and_does_not_run_loops():
    def f(x):
        mj.debug.print("{}", lax.mul(2.0, 3.0))
        return lax.fori_loop(0, 3, lambda i, c: c * 2.0, 1.0) + x

    closed = trace(f, X3)
    out = fold_constants(closed)
    assert prims(out.jaxpr) == ["debug_callback", "scan", "add"]
    assert str(out.jaxpr.eqns[0].invars[0].val) == "6.0"  # its argument folds, it stays
    check_pass(fold_constants, closed, [X3], [False])
    assert run(out, [X3])[1] == "6.0\n"


def test_fold_inside_a_branch_makes_literals_never_constvars():
    def f(x):
        return lax.cond(x[0] > 0, lambda v: v + lax.mul(2.0, 3.0) + mnp.arange(3.0),
                        lambda v: v, x)

    closed = trace(f, X3)
    out = check_pass(fold_constants, closed, [X3], [False])
    (branch_false, branch_true) = out.jaxpr.eqns[-1].params["branches"]
    assert not branch_true.constvars
    assert "iota" in prims(branch_true)  # an array cannot become a literal: left alone
    assert "6.0:f64[]" in str(out) and "mul" not in prims(branch_true)


# --------------------------------------------------------------------------- simplify

# One case per rule in simplify's table: (rule, function, argument, primitive that goes away).
SIMPLIFY_CASES = [
    ("_add_zero", lambda x: x + 0, np.array([1, -2], np.int32), "add"),
    ("_add_zero", lambda x: 0 + x, np.array([True, False]), "add"),
    ("_sub_zero", lambda x: x - 0.0, X3, "sub"),
    ("_sub_self", lambda x: x - x, np.array([3, 4], np.int64), "sub"),
    ("_sub_self", lambda x: (x - x) * 2, np.int32(5), "sub"),
    ("_mul_one_or_zero", lambda x: x * 1.0, X3, "mul"),
    ("_mul_one_or_zero", lambda x: 1 * x, np.array([3, 4], np.int64), "mul"),
    ("_mul_one_or_zero", lambda x: mnp.sum(x) * 0, np.array([3, 4], np.int64), "mul"),
    ("_div_one", lambda x: x / 1.0, X3, "div"),
    ("_small_integer_pow", lambda x: x ** 2, X3, "integer_pow"),
    ("_small_integer_pow", lambda x: x ** 3, np.array([3, -4], np.int32), "integer_pow"),
    ("_small_integer_pow", lambda x: x ** -1, X3, "integer_pow"),
    ("_literal_pow", lambda x: x ** 2.0, X3, "pow"),
    ("_convert_same", lambda x: lax.convert_element_type(x, np.float64), X3,
     "convert_element_type"),
    ("_identity_shape_op", lambda x: lax.reshape(x, (3,)), X3, "reshape"),
    ("_identity_shape_op", lambda x: lax.broadcast_in_dim(x, (3,), (0,)), X3,
     "broadcast_in_dim"),
    ("_identity_shape_op", lambda x: lax.transpose(x, (0,)), X3, "transpose"),
    ("_identity_shape_op", lambda x: lax.slice(x, (0,), (3,)), X3, "slice"),
    ("_identity_shape_op", lambda x: lax.squeeze(x, ()), X3, "squeeze"),
    ("_identity_shape_op", lambda x: lax.rev(x, ()), X3, "rev"),
    ("_identity_shape_op", lambda x: lax.reduce_max(x, ()), X3, "reduce_max"),
    ("_select_known", lambda x: lax.select(True, x, -x), X3, "select_n"),
    ("_select_known", lambda x: mnp.where(x > 0, x, x), X3, "select_n"),
    ("double_application", lambda x: mnp.negative(mnp.negative(x)), X3, "neg"),
    ("double_application", lambda x: ~~x, np.array([True, False]), "not"),
    ("dot_of_transpose", lambda m: m @ m.T, X34, "transpose"),
    ("dot_of_transpose", lambda m: m.T @ m, X34, "transpose"),
    ("dot_of_transpose", lambda m: m[0] @ m.T, X34, "transpose"),
]


@pytest.mark.parametrize("rule, fn, x, gone", SIMPLIFY_CASES,
                         ids=[f"{c[0]}-{k}" for k, c in enumerate(SIMPLIFY_CASES)])
def test_simplify_rule_fires(rule, fn, x, gone):
    closed = trace(fn, x)
    before = sum(e.primitive.name == gone for e in walk(closed.jaxpr))
    out = dce(check_pass(simplify, closed, [x], [False]))
    after = sum(e.primitive.name == gone for e in walk(out.jaxpr))
    assert after < before, f"{rule} did not fire:\n{out}"


def test_every_rule_in_the_table_has_a_case():
    registered = {fn.__name__ for fns in RULES.values() for fn in fns}
    assert registered <= {case[0] for case in SIMPLIFY_CASES}


def _simplified(fn, *args) -> str:
    return str(dce(simplify(trace(fn, *args))))


def test_simplify_golden_double_negation_and_powers():
    assert _simplified(lambda x: mnp.negative(mnp.negative(x)), X3) == (
        "{ lambda ; a:f64[3]. let  in (a,) }")
    assert _simplified(lambda x: x ** 2, X3) == (
        "{ lambda ; a:f64[3]. let b:f64[3] = mul a a in (b,) }")
    assert _simplified(lambda x: x ** 3, X3) == (
        "{ lambda ; a:f64[3]. let b:f64[3] = mul a a; c:f64[3] = mul b a in (c,) }")
    assert _simplified(lambda x: x ** 4, X3) == (
        "{ lambda ; a:f64[3]. let b:f64[3] = mul a a; c:f64[3] = mul b b in (c,) }")
    assert _simplified(lambda x: x ** -1, X3) == (
        "{ lambda ; a:f64[3]. let b:f64[3] = div 1.0:f64[] a in (b,) }")
    assert _simplified(lambda x: x ** -2, X3) == (
        "{ lambda ; a:f64[3]. let b:f64[3] = mul a a; c:f64[3] = div 1.0:f64[] b in (c,) }")
    # Large powers stay `pow`-like; integer negative powers do not exist.
    assert "integer_pow[y=5]" in _simplified(lambda x: x ** 5, X3)


def test_simplify_golden_dot_of_transpose():
    # the product reads the matrix itself, contracting its other axis; dce drops the transpose
    assert _simplified(lambda a, b: a @ b.T, X34, X34) == (
        "{ lambda ; a:f64[3,4] b:f64[3,4]. let\n"
        "    c:f64[3,3] = dot_general[\n"
        "      dimension_numbers=(([1], [1]), ([], []))\n"
        "      preferred_element_type=float64\n"
        "    ] a b\n"
        "  in (c,) }")
    both = _simplified(lambda a, b: a.T @ b.T, X34, X34.T.copy())
    assert "transpose" not in both and "dimension_numbers=(([0], [1]), ([], []))" in both
    # a transpose that another value reads stays, for that value only
    shared = _simplified(lambda a, b: (a @ b.T, b.T + 1.0), X34, X34)
    assert shared.count("transpose") == 1 and "] a b" in shared
    # a transpose that no product reads stays
    assert "transpose" in _simplified(lambda a: lax.transpose(a, (1, 0)) + 1.0, X34)


def test_simplify_rewrites_what_a_rule_produced():
    # `1 ** 2 -> 1 * 1 -> 1`, then `x * 1 -> x`, in one run (or the pass is not idempotent).
    ints = np.array([3, -4], np.int32)
    closed = trace(lambda x: x * mnp.square(mnp.ones((), mnp.int32)), ints)
    out = check_pass(simplify, closed, [ints], [False])
    assert str(out) == "{ lambda ; a:i32[2]. let  in (a,) }"


def test_simplify_docstring_example():
    closed = trace(lambda a: (a * 1.0) ** 2, X3)
    assert str(dce(simplify(closed))) == (
        "{ lambda ; a:f64[3]. let b:f64[3] = mul a a in (b,) }")


def test_simplify_x_times_zero_only_for_ints():
    floats = trace(lambda x: mnp.sum(x) * 0.0, X3)
    assert prims(simplify(floats).jaxpr) == ["reduce_sum", "mul"]  # nan * 0 is nan
    nan = np.array([np.nan, 1.0, 2.0])
    check_pass(simplify, floats, [nan], [False])
    assert np.isnan(run(simplify(floats), [nan])[0][0])
    neg = trace(lambda x: x[0] * 0.0, X3)  # -1.0 * 0.0 is -0.0
    check_pass(simplify, neg, [np.array([-1.0, 0.0, 0.0])], [False])
    ints = trace(lambda x: mnp.sum(x) * 0, np.array([1, 2], np.int32))
    assert str(dce(simplify(ints))) == "{ lambda ; a:i32[2]. let  in (0:i64[],) }"


def test_simplify_x_plus_zero_kept_for_floats():
    closed = trace(lambda x: x + 0.0, X3)
    assert prims(simplify(closed).jaxpr) == ["add"]  # -0.0 + 0.0 is 0.0
    got = run(simplify(closed), [np.array([-0.0, 0.0, 1.0])])[0][0]
    assert not np.signbit(got[0])
    minus_zero = trace(lambda x: x - (-0.0), X3)  # -0.0 - -0.0 is 0.0, not x
    assert prims(simplify(minus_zero).jaxpr) == ["sub"]
    check_pass(simplify, minus_zero, [np.array([-0.0, 0.0, 1.0])], [False])
    ints = trace(lambda x: x + 0, np.array([1], np.int64))
    assert prims(simplify(ints).jaxpr) == []


def test_simplify_empty_sum_kept_for_floats():
    floats = trace(lambda x: lax.reduce_sum(x, ()), X3)  # 0.0 + -0.0 is 0.0, not x
    assert prims(simplify(floats).jaxpr) == ["reduce_sum"]
    check_pass(simplify, floats, [X3], [False])
    assert not np.signbit(run(floats, [X3])[0][0][1])
    ints = trace(lambda x: lax.reduce_sum(x, ()), np.array([1, 2], np.int32))
    assert prims(simplify(ints).jaxpr) == []


def test_simplify_inexact_power_is_close():
    x = np.array([1.1, -3.7, 1e-3, 123.456, np.nan, -0.0, np.inf])
    closed = trace(lambda v: (v ** 3, v ** 4, v ** -2, v ** 3.0), x)
    check_pass(simplify, closed, [x], [True] * 4)


def test_simplify_custom_rule_fires_then_is_removed():
    closed = trace(lambda x: mnp.maximum(x, x), X3)
    assert prims(simplify(closed).jaxpr) == ["max"]

    @rule_for(P.max_p)
    def max_of_same(eqn):
        x, y = eqn.invars
        return x if x is y else None

    try:
        assert prims(simplify(closed).jaxpr) == []
        check_pass(simplify, closed, [np.array([np.nan, -0.0, 1.0])], [False])
    finally:
        RULES[P.max_p].remove(max_of_same)
        if not RULES[P.max_p]:
            del RULES[P.max_p]
    assert prims(simplify(closed).jaxpr) == ["max"]


def test_simplify_custom_rule_may_return_equations():
    @rule_for(P.add_p)
    def x_plus_x_is_x_times_2(eqn):  # for ints: `x + x -> x * 2`
        x, y = eqn.invars
        if x is y and eqn.outvars[0].aval.dtype.kind == "i":
            return [Eqn(P.mul_p, (x, Lit(2, x.aval.update(shape=()))), eqn.outvars)]
        return None

    try:
        closed = trace(lambda x: x + x, np.array([3, 4], np.int32))
        assert prims(simplify(closed).jaxpr) == ["mul"]
        check_pass(simplify, closed, [np.array([3, 4], np.int32)], [False])
    finally:
        RULES[P.add_p].remove(x_plus_x_is_x_times_2)


def test_simplify_inside_control_flow():
    def f(x):
        y = lax.cond(x[0] > 0, lambda v: v * 1.0, lambda v: mnp.negative(-v), x)
        return lax.fori_loop(0, 2, lambda i, c: c ** 2 / 1.0, y)

    closed = trace(f, X3)
    out = check_pass(simplify, closed, [X3], [False])
    branches = out.jaxpr.eqns[-2].params["branches"]
    assert all(not dce(ClosedJaxpr(b, ())).jaxpr.eqns for b in branches)
    body = out.jaxpr.eqns[-1].params["jaxpr"]
    assert prims(body) == ["add", "mul"]  # the loop's counter, then c * c


# --------------------------------------------------------------------------- cse


def test_cse_merges_duplicates_and_commutative_operands():
    def f(x, y):
        return mnp.sin(x) + mnp.sin(x), (x + y) * (y + x), x - y, y - x

    out = check_pass(cse, trace(f, X3, X3), [X3, -X3], [False] * 4)
    assert str(out) == (
        "{ lambda ; a:f64[3] b:f64[3]. let\n"
        "    c:f64[3] = sin a\n"
        "    d:f64[3] = add c c\n"
        "    e:f64[3] = add a b\n"
        "    f:f64[3] = mul e e\n"
        "    g:f64[3] = sub a b\n"
        "    h:f64[3] = sub b a\n"
        "  in (d, f, g, h) }")


def test_cse_keeps_different_params_and_literals():
    def f(x):
        return (mnp.sum(x, axis=0), mnp.sum(x, axis=1), x * 0.0, x * -0.0, x * 2.0,
                x * np.float64(2.0))

    closed = trace(f, X34)
    out = check_pass(cse, closed, [X34], [False] * 6)
    assert prims(out.jaxpr) == ["reduce_sum", "reduce_sum", "mul", "mul", "mul"]


def test_cse_never_merges_effects():
    def f(x):
        mj.debug.print("{}", x)
        mj.debug.print("{}", x)
        return x

    closed = trace(f, X3)
    out = check_pass(cse, closed, [X3], [False])
    assert count(out.jaxpr, debug_callback_p) == 2
    assert run(out, [X3])[1].count("\n") == 2


def test_cse_inside_a_branch_but_not_across_it():
    def f(x):
        return lax.cond(x[0] > 0, lambda v: mnp.cos(v) * mnp.cos(v), lambda v: v, x), mnp.cos(x)

    out = check_pass(cse, trace(f, X3), [X3], [False, False])
    (_, branch_true) = out.jaxpr.eqns[-2].params["branches"]
    assert prims(branch_true) == ["cos", "mul"]
    assert prims(out.jaxpr)[-1] == "cos"  # the outer cos is not the branch's


# --------------------------------------------------------------------------- dce


def test_dce_docstring_example():
    closed = trace(lambda a: (mnp.sin(a), mnp.cos(a))[1], X3)
    assert str(dce(closed)) == "{ lambda ; a:f64[3]. let b:f64[3] = cos a in (b,) }"


def test_dce_keeps_effects_and_invars():
    def f(x, unused):
        mj.debug.print("{}", mnp.sin(x))
        mnp.cos(x)
        return x

    out = check_pass(dce, trace(f, X3, X3), [X3, X3], [False])
    assert prims(out.jaxpr) == ["sin", "debug_callback"]
    assert len(out.jaxpr.invars) == 2


def test_dce_removes_unused_cond_output_from_every_branch_and_unused_consts():
    table = np.arange(3.0)

    def f(x):
        a, b = lax.cond(x[0] > 0, lambda v: (mnp.sin(v), mnp.cos(v)),
                        lambda v: (v * 2.0, mnp.exp(v)), x)
        x + table  # dead, and the only use of the constant
        return a

    closed = trace(f, X3)
    assert len(closed.consts) == 1
    out = check_pass(dce, closed, [X3], [False])
    assert out.consts == () and out.jaxpr.constvars == ()
    cond = out.jaxpr.eqns[-1]
    assert cond.primitive is cond_p and len(cond.outvars) == 1
    for branch in cond.params["branches"]:
        assert len(branch.outvars) == 1
        assert not {"cos", "exp"} & set(prims(branch))


def test_dce_removes_unused_scan_ys():
    def f(xs):
        carry, ys = lax.scan(lambda c, v: (c + v, mnp.sin(v) * c), 0.0, xs)
        return carry

    out = check_pass(dce, trace(f, X3), [X3], [False])
    scan = out.jaxpr.eqns[-1]
    assert scan.primitive is scan_p and len(scan.outvars) == 1
    assert prims(scan.params["jaxpr"]) == ["add"]


def test_dce_inside_a_loop_body():
    def f(x):
        def body(i, c):
            mnp.exp(c)  # dead
            return c * 2.0
        return lax.fori_loop(0, 3, body, x)

    out = check_pass(dce, trace(f, X3), [X3], [False])
    assert prims(out.jaxpr.eqns[-1].params["jaxpr"]) == ["add", "mul"]  # the counter, the body
    assert count(out.jaxpr, scan_p) == 1


# --------------------------------------------------------------------------- counted_loops


def _newton(x, n):
    return lax.fori_loop(0, n, lambda i, y: 0.5 * (y + x / y), x)


def test_counted_loops_turns_a_counting_scan_into_fori_loop():
    closed = trace(lambda x: _newton(x, 5), X3 + 3.0)
    assert prims(closed.jaxpr) == ["scan"]
    out = check_pass(counted_loops, closed, [X3 + 3.0], [False])
    (loop,) = out.jaxpr.eqns
    assert loop.primitive is fori_loop_p and [a.val for a in loop.invars[:2]] == [0, 5]
    body = loop.params["body_jaxpr"]
    assert prims(body) == ["div", "add", "mul"]  # the counter's `add` is gone
    assert len(loop.outvars) == 1 and body.invars[1].aval.dtype == np.int64


def test_counted_loops_turns_a_counting_while_into_fori_loop():
    closed = trace(_newton, X3 + 3.0, 4)
    assert prims(closed.jaxpr) == ["while"]
    out = check_pass(counted_loops, closed, [X3 + 3.0, 4], [False])
    (loop,) = out.jaxpr.eqns
    assert loop.primitive is fori_loop_p
    assert loop.invars[1] is closed.jaxpr.invars[1]  # the traced bound
    assert loop.params["body_nconsts"] == 1  # x; the bound is not read by the body
    for n in (0, 1, 7):
        np.testing.assert_array_equal(run(out, [X3 + 3.0, n])[0][0],
                                      run(closed, [X3 + 3.0, n])[0][0])


def test_counted_loops_keeps_the_bound_a_body_reads():
    """A hand-built while whose body reads its own bound: the bound becomes a constant."""
    def f(x, n):
        return lax.while_loop(lambda c: c[0] < c[1],
                              lambda c: (c[0] + 1, c[1], c[2] + c[1].astype(x.dtype)),
                              (0, n, x))[2]

    closed = trace(f, X3, 3)
    out = check_pass(counted_loops, closed, [X3, 3], [False])
    (loop,) = out.jaxpr.eqns
    assert loop.primitive is fori_loop_p and loop.params["body_nconsts"] == 1
    np.testing.assert_array_equal(run(out, [X3, 3])[0][0], X3 + 9.0)


def test_counted_loops_turns_a_while_counting_to_a_fixed_bound_into_fori_loop():
    """`while_loop(lambda s: s[0] < 4, lambda s: (s[0] + 1, ...), (0, x))`, as written by
    hand: the bound is a literal, or a value the loop does not change (a constant of the
    condition), not a carry."""
    def to_literal(x):
        return lax.while_loop(lambda s: s[0] < 4, lambda s: (s[0] + 1, s[1] * 2.0), (0, x))[1]

    def to_constant(x, n):
        return lax.while_loop(lambda s: s[0] < n, lambda s: (s[0] + 1, s[1] * 2.0), (0, x))[1]

    out = check_pass(counted_loops, trace(to_literal, X3), [X3], [False])
    (loop,) = out.jaxpr.eqns
    assert loop.primitive is fori_loop_p and [a.val for a in loop.invars[:2]] == [0, 4]
    assert prims(loop.params["body_jaxpr"]) == ["mul"]  # the counter's `add` is gone
    closed = trace(to_constant, X3, 3)
    out = check_pass(counted_loops, closed, [X3, 3], [False])
    (loop,) = out.jaxpr.eqns
    assert loop.primitive is fori_loop_p and loop.invars[1] is closed.jaxpr.invars[1]
    for n in (-1, 0, 1, 5):  # no step when the counter starts at or above the bound
        np.testing.assert_array_equal(run(out, [X3, n])[0][0], X3 * 2.0 ** max(n, 0))


def test_counted_loops_keeps_a_while_whose_counter_is_read_or_not_compared_below():
    def reads_counter(x):
        return lax.while_loop(lambda s: s[0] < 4, lambda s: (s[0] + 1, s[1] * 2.0), (0, x))

    def at_most(x):
        return lax.while_loop(lambda s: s[0] <= 4, lambda s: (s[0] + 1, s[1] * 2.0), (0, x))[1]

    for f in (reads_counter, at_most):
        closed = trace(f, X3)
        out = check_pass(counted_loops, closed, [X3], [False] * len(closed.out_avals))
        assert count(out.jaxpr, fori_loop_p) == 0 and count(out.jaxpr, while_p) == 1, f.__name__


def test_counted_loops_leaves_other_loops_alone():
    def reads_counter(x):  # the final counter is an output: the scan must stay
        return lax.scan(lambda c, _: ((c[0] + 1, c[1] * 2.0), None), (0, x), None, length=3)[0]

    def steps_by_two(x):
        return lax.while_loop(lambda c: c[0] < 10, lambda c: (c[0] + 2, c[1] * 2.0), (0, x))[1]

    def reversed_scan(x):
        return lax.scan(lambda c, _: ((c[0] + 1, c[1] * 2.0), None), (0, x), None, length=3,
                        reverse=True)[0][1]

    for f, prim in ((reads_counter, scan_p), (steps_by_two, while_p), (reversed_scan, scan_p)):
        closed = trace(f, X3)
        out = check_pass(counted_loops, closed, [X3], [False] * len(closed.out_avals))
        assert count(out.jaxpr, fori_loop_p) == 0 and count(out.jaxpr, prim) == 1, f.__name__


def test_counted_loops_reaches_loops_inside_loops():
    def f(x):
        return lax.fori_loop(0, 3, lambda i, y: lax.fori_loop(0, 2, lambda j, z: z * 2.0, y),
                             x)

    out = check_pass(counted_loops, trace(f, X3), [X3], [False])
    assert count(out.jaxpr, fori_loop_p) == 2 and count(out.jaxpr, scan_p) == 0


# --------------------------------------------------------------------------- fuse_elementwise


def kernels(jaxpr: Jaxpr) -> list[Eqn]:
    return [e for e in walk(jaxpr) if e.primitive is fused_p]


def test_fuse_rule_is_written_down():
    doc = fuse_elementwise.__doc__
    assert "The rule for what may fuse" in doc
    for n in range(1, 6):
        assert f"\n{n}. " in doc


def test_may_fuse():
    def eqns(fn, *args):
        return trace(fn, *args).jaxpr.eqns

    assert may_fuse(eqns(mnp.sin, X3)[0])
    assert may_fuse(eqns(lambda x: mnp.broadcast_to(x, (2, 3)), X3)[0])
    assert may_fuse(eqns(lambda x: x.astype(np.float32), X3)[0])
    assert not may_fuse(eqns(lambda x: mnp.sin(x[0]), X3)[-1])  # scalar work
    assert not may_fuse(eqns(mnp.sum, X3)[0])  # reductions only join (rule 3)
    assert not may_fuse(eqns(lambda x: x.T, X34)[0])


def test_fuse_a_chain_with_a_broadcast_operand():
    closed = trace(lambda x, y: mnp.sin(x) * 2.0 + y, X34, Y4)
    out = check_pass(fuse_elementwise, closed, [X34, Y4], [False])
    assert str(out) == (
        "{ lambda ; a:f64[3,4] b:f64[4]. let\n"
        "    c:f64[3,4] = fused[\n"
        "      jaxpr={ lambda ; d:f64[3,4] e:f64[4]. let\n"
        "          f:f64[3,4] = sin d\n"
        "          g:f64[3,4] = mul f 2.0:f64[]\n"
        "          h:f64[3,4] = broadcast_in_dim[broadcast_dimensions=(1,)] e\n"
        "          i:f64[3,4] = add g h\n"
        "        in (i,) }\n"
        "      kind='elementwise'\n"
        "    ] a b\n"
        "  in (c,) }")


def test_fuse_leaves_scalar_work_and_single_equations():
    closed = trace(lambda x: (mnp.sin(x[0]) * 2.0 + 1.0, mnp.cos(x)), X3)
    out = check_pass(fuse_elementwise, closed, [X3], [False, False])
    assert kernels(out.jaxpr) == []


def test_fuse_value_used_outside_closes_the_group_and_is_exported():
    def f(x):
        a = mnp.sin(x)
        b = a * 2.0
        t = a.T  # not fusible: reads a, so the group closes
        return b + 1.0, t

    out = check_pass(fuse_elementwise, trace(f, X34), [X34], [False, False])
    (kernel,) = kernels(out.jaxpr)
    assert prims(kernel.params["jaxpr"]) == ["sin", "mul"]
    assert len(kernel.outvars) == 2  # a for the transpose, b for the add
    assert prims(out.jaxpr) == ["fused", "transpose", "add"]  # the add started a new group


def test_fuse_reduction_joins_last_and_nothing_joins_after():
    closed = trace(lambda x: mnp.sum(mnp.sin(x) * 2.0, axis=0) * 3.0, X34)
    out = check_pass(fuse_elementwise, closed, [X34], [False])
    (kernel,) = kernels(out.jaxpr)
    assert kernel.params["kind"] == "reduction"
    assert prims(kernel.params["jaxpr"]) == ["sin", "mul", "reduce_sum"]
    # Even with the group's shape (an empty reduction), the next equation starts a new group.
    closed = trace(lambda x: mnp.cos(lax.reduce_sum(mnp.sin(x) * 2.0, ())) + 1.0, X34)
    out = check_pass(fuse_elementwise, closed, [X34], [False])
    first, second = kernels(out.jaxpr)
    assert prims(first.params["jaxpr"])[-1] == "reduce_sum"
    assert first.params["kind"] == "reduction" and second.params["kind"] == "elementwise"
    assert prims(second.params["jaxpr"]) == ["cos", "add"]


def test_fuse_never_takes_an_effectful_equation():
    def f(x):
        a = mnp.sin(x) * 2.0
        mj.debug.print("{}", a)
        return mnp.cos(a) + 1.0

    out = check_pass(fuse_elementwise, trace(f, X3), [X3], [False])
    assert all(count(k.params["jaxpr"], debug_callback_p) == 0 for k in kernels(out.jaxpr))
    assert prims(out.jaxpr) == ["fused", "debug_callback", "fused"]


def test_fuse_never_takes_an_effectful_elementwise_primitive():
    noisy_p = Primitive("noisy_sin", effectful=True)
    abstract_eval_rules[noisy_p] = lambda x: [x]
    impl_rules[noisy_p] = lambda x: [np.sin(x)]
    ELEMENTWISE.add(noisy_p)
    try:
        a, b, c, d = (Var(mj.ShapedArray((3,), np.float64)) for _ in range(4))
        jaxpr = Jaxpr((), (a,), (Eqn(P.cos_p, (a,), (b,)), Eqn(noisy_p, (b,), (c,)),
                                 Eqn(P.sin_p, (c,), (d,))), (d,))
        assert not may_fuse(jaxpr.eqns[1])
        out = fuse_elementwise(ClosedJaxpr(jaxpr, ()))
        assert prims(out.jaxpr) == ["cos", "noisy_sin", "sin"]
    finally:
        ELEMENTWISE.discard(noisy_p)
        del abstract_eval_rules[noisy_p], impl_rules[noisy_p]


def test_fuse_inside_a_loop_body():
    closed = trace(lambda x: lax.fori_loop(0, 3, lambda i, c: mnp.tanh(c) * 0.5 + 1.0, x), X34)
    out = check_pass(fuse_elementwise, counted_loops(closed), [X34], [False])
    body = out.jaxpr.eqns[-1].params["body_jaxpr"]
    assert prims(body) == ["fused"]
    assert prims(body.eqns[0].params["jaxpr"]) == ["tanh", "mul", "add"]


def test_fuse_never_makes_a_cycle():
    def f(x):
        a = mnp.sin(x)
        m = a @ a  # not fusible, reads the group: any later reader of it must wait
        return mnp.cos(a) + m, a * 2.0

    x = np.arange(9.0).reshape(3, 3) / 7
    out = check_pass(fuse_elementwise, trace(f, x), [x], [False, False])
    assert prims(out.jaxpr)[:2] == ["sin", "dot_general"]


def test_fuse_is_idempotent_when_a_group_moves():
    """Emitting a group at its last member can bring two equations together (rule 6)."""
    def f(x):
        a = mnp.abs(x)
        return mnp.where(a > 0, mnp.broadcast_to(a, (2, 3)), x)

    out = check_pass(fuse_elementwise, trace(f, X3), [X3], [False])
    assert len(kernels(out.jaxpr)) == 2


# --------------------------------------------------------------------------- plan_buffers


def test_plan_reuses_dead_temporaries():
    closed = trace(lambda x: mnp.exp(mnp.sin(x).T * 2.0).T, X34)
    plan = check_plan(closed.jaxpr)
    assert plan.bytes_after < plan.bytes_before
    assert plan.reused_from_input == {}


def test_plan_reuses_a_donated_input():
    closed = trace(lambda x: mnp.sin(x) * 2.0 + 1.0, X34)
    kept = check_plan(closed.jaxpr, donated=(False,))
    assert kept.reused_from_input == {} and kept.bytes_after == X34.nbytes
    plan = check_plan(closed.jaxpr, donated=(True,))
    assert list(plan.reused_from_input.values()) == [0]
    assert plan.bytes_after == 0 < plan.bytes_before == 3 * X34.nbytes
    # Fused, the kernel writes into the donated input too.
    fused = check_plan(fuse_elementwise(closed).jaxpr, donated=(True,))
    assert fused.reused_from_input and fused.bytes_after == 0


def test_plan_report_mentions_bytes_before_and_after():
    plan = plan_buffers(trace(lambda x: mnp.sin(x) * 2.0 + 1.0, X34))
    text = plan.report()
    assert f"{plan.bytes_before:,} bytes before" in text
    assert f"{plan.bytes_after:,} after" in text


def test_plan_outputs_of_one_equation_get_different_buffers():
    def f(x):
        a, b = lax.cond(x[0] > 0, lambda v: (v * 2.0, v + 1.0), lambda v: (v, v), x)
        return b * 3.0  # a is never used

    closed = trace(f, X3)
    plan = check_plan(closed.jaxpr)
    cond = next(e for e in closed.jaxpr.eqns if e.primitive is cond_p)
    a, b = cond.outvars
    assert plan.buffer_of[id(a)] != plan.buffer_of[id(b)]


def test_plan_never_writes_in_place_over_a_broadcast_input():
    # The kernel reads y (i64[1], 8 bytes, donated, dead after it) for every element of its
    # i8[8] output (8 bytes too): writing the output into y would overwrite y[0] too early.
    def f(y, x):
        return mnp.broadcast_to(y, (8,)).astype(np.int8) + x

    y, x = np.array([3]), np.arange(8, dtype=np.int8)
    closed = fuse_elementwise(trace(f, y, x))
    assert prims(closed.jaxpr) == ["fused"]
    plan = check_plan(closed.jaxpr, donated=(True, False))
    assert plan.reused_from_input == {} or plan.buffer_of[id(closed.jaxpr.outvars[0])] not in (
        plan.reused_from_input)


def test_plan_never_hands_out_a_view_of_an_input():
    # tanh reads the last use of a reshape of x: a view of the caller's array, not ours.
    closed = trace(lambda x, w: mnp.tanh(x.reshape(2, 3)) @ w, np.arange(6.0), np.ones((3, 2)))
    plan = check_plan(closed.jaxpr)
    reshape, tanh = closed.jaxpr.eqns[:2]
    assert plan.roots[id(reshape.outvars[0])] == {id(closed.jaxpr.invars[0])}
    assert id(reshape.outvars[0]) not in plan.buffer_of
    assert id(tanh.outvars[0]) in plan.buffer_of


def test_plan_keeps_a_returned_value_alive_through_its_views():
    def f(x):
        y = mnp.exp(x)
        return y, mnp.sin(mnp.reshape(y, (3,)))

    closed = trace(f, np.ones((3, 1)))
    plan = check_plan(closed.jaxpr)
    exp, _, sin = closed.jaxpr.eqns
    assert plan.buffer_of[id(exp.outvars[0])] != plan.buffer_of[id(sin.outvars[0])]


def test_plan_never_writes_in_place_while_a_view_of_the_operand_is_read():
    # y + y.T: writing the sum into y would change y.T's later elements.
    def f(x):
        y = mnp.exp(x)
        return y + y.T

    closed = trace(f, np.ones((3, 3)))
    plan = check_plan(closed.jaxpr)
    exp, _, add = closed.jaxpr.eqns
    assert plan.buffer_of[id(exp.outvars[0])] != plan.buffer_of[id(add.outvars[0])]


def test_control_flow_results_may_be_their_operands():
    def f(p, x):
        return mnp.sin(lax.cond(p, lambda v: v, lambda v: v * 2.0, x))

    closed = trace(f, True, np.ones(3))
    plan = check_plan(closed.jaxpr)
    cond = next(e for e in closed.jaxpr.eqns if e.primitive is cond_p)
    assert id(closed.jaxpr.invars[1]) in plan.roots[id(cond.outvars[0])]
    assert plan.reused_from_input == {}


def test_jaxpr_pass_keeps_the_name_and_docstring_it_is_given():
    from minijit.passes.rewrite import jaxpr_pass

    def my_pass(jaxpr, const_values):
        """mine"""
        return jaxpr

    assert (jaxpr_pass(my_pass).__name__, jaxpr_pass(my_pass).__doc__) == ("my_pass", "mine")
    named = jaxpr_pass(lambda jaxpr, consts: jaxpr, name="noop", doc="Does nothing.")
    assert (named.__name__, named.__doc__) == ("noop", "Does nothing.")
    assert [p.__name__ for p in PIPELINE] == ["inline_jit", "fold_constants", "simplify", "cse",
                                             "dce", "counted_loops", "fuse_elementwise",
                                             "fuse_siblings"]


def test_the_pipeline_checked_once_still_names_the_pass_that_broke_it(monkeypatch):
    """minijit's own PIPELINE is typechecked at the end only; a failure there runs the passes
    again one by one, so the PassError names the culprit as before."""
    import minijit.passes as passes_module

    def breaks_types(closed):
        eqn = closed.jaxpr.eqns[0]
        bad = type(eqn)(eqn.primitive, eqn.invars, tuple(Var(ShapedArray((7,), v.aval.dtype))
                                                         for v in eqn.outvars),
                        eqn.params, eqn.source)
        jaxpr = closed.jaxpr
        return type(closed)(type(jaxpr)(jaxpr.constvars, jaxpr.invars,
                                        (bad, *jaxpr.eqns[1:]), jaxpr.outvars), closed.consts)

    breaks_types.__name__ = "breaks_types"
    monkeypatch.setattr(passes_module, "PIPELINE", (*PIPELINE[:2], breaks_types, *PIPELINE[2:]))
    closed = mj.make_jaxpr(lambda v: mnp.sin(v) * 2.0)(np.ones(3))
    with pytest.raises(PassError, match="pass `breaks_types`"):
        passes_module.run_passes(closed)
