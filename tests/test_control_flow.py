"""Structured control flow (chapter 05): `cond`, `switch`, `while_loop`, `fori_loop`, `scan`.

A catalogue of control-flow programs, each with a plain NumPy/Python reference, runs every way
minijit can run it: eagerly, through `eval_jaxpr` on its `make_jaxpr` output, and through `jit`
on every backend in `minijit.backends.DISTINCT_BACKENDS`. All must agree. Then the type
errors (branch and carry mismatches name both types and the offending leaf), the printer's
nested layout, `typecheck_jaxpr` recursing into sub-jaxprs, and Python control flow: unrolled
on static values, refused with the fix on traced ones.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import numpy as np
import pytest

import minijit as mj
import minijit.numpy as mnp
from minijit import backends, errors, lax
from minijit.array import wrap
from minijit.ir import Eqn, Jaxpr, JaxprTypeError, subjaxprs
from minijit.passes import run_passes
from minijit.tree_util import tree_flatten, tree_leaves, tree_map

BACKENDS = backends.DISTINCT_BACKENDS


# --------------------------------------------------------------------------- the catalogue


@dataclasses.dataclass(frozen=True)
class Program:
    """`fn` is the minijit program, `reference` the same computation in NumPy and Python.

    `args(rng)` makes the arguments; `stages` are primitives the Jaxpr must contain (so a
    program cannot silently turn into straight-line code).
    """

    name: str
    fn: Callable
    reference: Callable
    args: Callable[[np.random.Generator], tuple]
    stages: tuple[str, ...]
    static_argnums: tuple[int, ...] = ()


def _newton_sqrt(x):
    return lax.fori_loop(0, 8, lambda i, y: 0.5 * (y + x / y), x)


def _newton_sqrt_ref(x):
    y = x
    for _ in range(8):
        y = 0.5 * (y + x / y)
    return y


def _masked_sum(x):
    def body(i, acc):
        return acc + mnp.where(x[i] > 0, x[i], 0.0)

    return lax.fori_loop(0, x.shape[0], body, 0.0)


def _masked_sum_ref(x):
    acc = 0.0
    for v in x:
        acc += v if v > 0 else 0.0
    return np.float64(acc)


def _masked_relu(x):
    def body(i, y):
        return y.at[i].set(mnp.where(y[i] < 0, 0.0, y[i]))

    return lax.fori_loop(0, x.shape[0], body, x)


def _cond_in_fori(x):
    def body(i, v):
        return lax.cond(i % 3 == 0, lambda v: v * 2.0, lambda v: v - 1.0, v)

    return lax.fori_loop(0, 7, body, x)


def _cond_in_fori_ref(x):
    v = x
    for i in range(7):
        v = v * 2.0 if i % 3 == 0 else v - 1.0
    return v


_BRANCHES = (lambda x: x + 1.0, lambda x: x * x, mnp.sin)
_NP_BRANCHES = (lambda x: x + 1.0, lambda x: x * x, np.sin)


def _switch(i, x):
    return lax.switch(i, _BRANCHES, x)


def _switch_ref(i, x):
    return _NP_BRANCHES[min(max(int(i), 0), len(_NP_BRANCHES) - 1)](x)


def _switch_program(index) -> Program:
    return Program(
        f"switch_index_{index}", _switch, _switch_ref,
        lambda rng: (np.int64(index), rng.standard_normal(4)), ("cond", "clamp"),
    )


def _while_tuple(x):
    def cond_fun(c):
        _, v = c
        return mnp.sum(v) < 100.0

    def body_fun(c):
        i, v = c
        return i + 1, v * 1.5

    return lax.while_loop(cond_fun, body_fun, (0, x))


def _while_tuple_ref(x):
    i, v = 0, x
    while np.sum(v) < 100.0:
        i, v = i + 1, v * 1.5
    return np.int64(i), v


def _traced_bounds(lo, hi, x):
    return lax.fori_loop(lo, hi, lambda i, acc: acc + i * x, mnp.zeros_like(x))


def _traced_bounds_ref(lo, hi, x):
    acc = np.zeros_like(x)
    for i in range(int(lo), int(hi)):
        acc = acc + i * x
    return acc


def _cumsum(xs):
    return lax.scan(lambda c, x: (c + x, c + x), 0.0, xs)


def _cumsum_ref(xs):
    c = np.cumsum(xs)
    return c[-1], c


_W = np.linspace(-1.0, 1.0, 4)


def _captures_array(p, x):
    return lax.cond(p > 0, lambda x: x * _W, lambda x: x + _W, x)


def _captures_array_ref(p, x):
    return x * _W if p > 0 else x + _W


def _captures_tracer(p, x):
    y = mnp.sin(x) * 2.0
    return lax.cond(p, lambda: y + x, lambda: y - 1.0)


def _captures_tracer_ref(p, x):
    y = np.sin(x) * 2.0
    return y + x if p else y - 1.0


def _nested_cond_in_while(x):
    def inner(v):
        return lax.cond(mnp.sum(v) > 10.0, lambda v: v - 3.0, lambda v: v + 1.0, v)

    def body(c):
        i, v = c
        return i + 1, lax.cond(i % 2 == 0, lambda v: v * 2.0, inner, v)

    return lax.while_loop(lambda c: c[0] < 6, body, (0, x))


def _nested_cond_in_while_ref(x):
    i, v = 0, x
    while i < 6:
        if i % 2 == 0:
            v = v * 2.0
        else:
            v = v - 3.0 if np.sum(v) > 10.0 else v + 1.0
        i += 1
    return np.int64(i), v


def _while_captures_tracer(limit, x):
    return lax.while_loop(lambda v: mnp.sum(v) < limit, lambda v: v * 2.0, x)


def _while_captures_tracer_ref(limit, x):
    v = x
    while np.sum(v) < limit:
        v = v * 2.0
    return v


def _fori_dict_carry(x):
    def body(i, c):
        return {"sum": c["sum"] + x[i], "max": mnp.maximum(c["max"], x[i])}

    return lax.fori_loop(0, x.shape[0], body, {"sum": 0.0, "max": x[0]})


def _fori_dict_carry_ref(x):
    c = {"sum": 0.0, "max": x[0]}
    for v in x:
        c = {"sum": c["sum"] + v, "max": max(c["max"], v)}
    return {"sum": np.float64(c["sum"]), "max": np.float64(c["max"])}


def _static_n_scan(xs, n):
    return lax.scan(lambda c, x: (c * n + x, c), 0.0, xs)


def _static_n_scan_ref(xs, n):
    c, ys = 0.0, []
    for x in xs:
        ys.append(c)
        c = c * n + x
    return np.float64(c), np.array(ys)


def _positive(n):
    return lambda rng: (rng.uniform(0.5, 4.0, n),)


def _normal(n):
    return lambda rng: (rng.standard_normal(n),)


PROGRAMS = [
    # A fori_loop with static bounds is a `scan`, with a traced bound a `while`, as in JAX.
    Program("newton_sqrt_fori", _newton_sqrt, _newton_sqrt_ref, _positive(5), ("scan",)),
    Program("masked_sum_fori", _masked_sum, _masked_sum_ref, _normal(6),
            ("scan", "select_n")),
    Program("masked_relu_fori", _masked_relu, lambda x: np.maximum(x, 0.0), _normal(6),
            ("scan", "dynamic_update_slice")),
    Program("cond_inside_fori", _cond_in_fori, _cond_in_fori_ref, _normal(3),
            ("scan", "cond")),
    *[_switch_program(i) for i in (-2, 0, 1, 2, 7)],
    Program("switch_python_int_index", lambda x: _switch(1, x), lambda x: x * x, _normal(3),
            ("cond",)),
    Program("while_tuple_carry", _while_tuple, _while_tuple_ref, _positive(3), ("while",)),
    Program("fori_traced_bounds", _traced_bounds, _traced_bounds_ref,
            lambda rng: (np.int64(rng.integers(0, 3)), np.int64(rng.integers(3, 7)),
                         rng.standard_normal(3)), ("while",)),
    Program("scan_cumsum", _cumsum, _cumsum_ref, _normal(5), ("scan",)),
    Program("scan_static_factor", _static_n_scan, _static_n_scan_ref,
            lambda rng: (rng.standard_normal(4), 3), ("scan",), static_argnums=(1,)),
    Program("cond_captures_array_true", _captures_array, _captures_array_ref,
            lambda rng: (1.5, rng.standard_normal(4)), ("cond",)),
    Program("cond_captures_array_false", _captures_array, _captures_array_ref,
            lambda rng: (-0.5, rng.standard_normal(4)), ("cond",)),
    Program("cond_captures_tracer_true", _captures_tracer, _captures_tracer_ref,
            lambda rng: (np.bool_(True), rng.standard_normal(3)), ("cond",)),
    Program("cond_captures_tracer_false", _captures_tracer, _captures_tracer_ref,
            lambda rng: (np.bool_(False), rng.standard_normal(3)), ("cond",)),
    Program("nested_cond_in_while", _nested_cond_in_while, _nested_cond_in_while_ref,
            _positive(2), ("while", "cond")),
    Program("while_captures_tracer", _while_captures_tracer, _while_captures_tracer_ref,
            lambda rng: (np.float64(rng.uniform(20, 50)), rng.uniform(0.5, 1.0, 3)), ("while",)),
    Program("fori_dict_carry", _fori_dict_carry, _fori_dict_carry_ref, _normal(5),
            ("scan",)),
]
ids = [p.name for p in PROGRAMS]


def _reference(prog: Program, args) -> tuple[list[np.ndarray], object]:
    leaves, tree = tree_flatten(prog.reference(*args))
    return [np.asarray(leaf) for leaf in leaves], tree


def _dynamic_leaves(prog: Program, args) -> list:
    return tree_leaves(tuple(a for i, a in enumerate(args) if i not in prog.static_argnums))


def _check(got: list, want: list, how: str) -> None:
    assert len(got) == len(want), f"{how}: {len(got)} outputs, the reference has {len(want)}"
    for k, (g, w) in enumerate(zip(got, want)):
        where = f"output {k} ({how})"
        g = np.asarray(g)
        assert g.shape == w.shape, f"{where}: shape {g.shape}, reference {w.shape}"
        assert g.dtype == w.dtype, f"{where}: dtype {g.dtype}, reference {w.dtype}"
        np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-12, err_msg=where)


def _primitive_names(jaxpr: Jaxpr) -> set[str]:
    names = set()
    for eqn in jaxpr.eqns:
        names.add(eqn.primitive.name)
        for sub in subjaxprs(eqn):
            names |= _primitive_names(sub)
    return names


def test_catalogue_size_and_names():
    assert len(PROGRAMS) >= 15
    assert len(set(ids)) == len(ids)


@pytest.mark.parametrize("prog", PROGRAMS, ids=ids)
def test_eager(prog: Program):
    """Outside any trace the control-flow functions run right away on NumPy values."""
    args = prog.args(np.random.default_rng(0))
    want, want_tree = _reference(prog, args)
    # Eager arrays are `mj.Array`s (as mnp and jit return), so a traced loop index can index
    # them inside a body; a plain np.ndarray cannot be indexed by a tracer (nor in JAX).
    args = tree_map(lambda a: wrap(a) if isinstance(a, np.ndarray) else a, args)
    got, got_tree = tree_flatten(prog.fn(*args))
    assert got_tree == want_tree
    _check(got, want, "eager")


@pytest.mark.parametrize("prog", PROGRAMS, ids=ids)
def test_eval_jaxpr(prog: Program):
    args = prog.args(np.random.default_rng(0))
    want, _ = _reference(prog, args)
    closed = mj.make_jaxpr(prog.fn, static_argnums=prog.static_argnums)(*args)
    mj.typecheck_jaxpr(closed.jaxpr)
    missing = set(prog.stages) - _primitive_names(closed.jaxpr)
    assert not missing, f"{prog.name}: the Jaxpr has no {missing}:\n{closed}"
    got = mj.eval_jaxpr(closed.jaxpr, closed.consts, *_dynamic_leaves(prog, args))
    _check(got, want, "eval_jaxpr")


@pytest.mark.parametrize("prog", [p for p in PROGRAMS if "fori" in p.name],
                         ids=[p.name for p in PROGRAMS if "fori" in p.name])
def test_the_pipeline_makes_every_fori_loop_a_counted_loop(prog: Program):
    """`counted_loops` turns the `scan` or `while` that fori_loop stages back into one
    `fori_loop` equation, so the code generator writes a plain `for`."""
    args = prog.args(np.random.default_rng(0))
    closed = mj.make_jaxpr(prog.fn, static_argnums=prog.static_argnums)(*args)
    assert "fori_loop" not in _primitive_names(closed.jaxpr)
    optimized = run_passes(closed)
    names = _primitive_names(optimized.jaxpr)
    assert "fori_loop" in names and not names & {"scan", "while"}, str(optimized)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("prog", PROGRAMS, ids=ids)
def test_jit(prog: Program, backend: str):
    # jit keeps one cache per function and options, so other tests (and build switches, which
    # empty every cache) may have traced prog.fn before: count the traces this test makes.
    jf = mj.jit(prog.fn, static_argnums=prog.static_argnums, backend=backend)
    before = jf.trace_count
    for seed in (0, 1, 2):  # fresh values of the same types: one trace, every answer right
        args = prog.args(np.random.default_rng(seed))
        want, want_tree = _reference(prog, args)
        got, got_tree = tree_flatten(jf(*args))
        assert got_tree == want_tree
        _check(got, want, f"jit[{backend}] seed {seed}")
        assert all(isinstance(g, mj.Array) for g in got)
        if seed == 0:
            first = jf.trace_count
            assert first - before <= 1
    assert jf.trace_count == first


def test_newton_converges_to_sqrt():
    x = np.array([0.5, 2.0, 9.0, 100.0])
    np.testing.assert_allclose(mj.jit(_newton_sqrt)(x), np.sqrt(x), rtol=1e-12)


def test_only_the_chosen_branch_runs():
    calls = []

    def spy(name):
        def branch(x):
            mj.debug.callback(lambda: calls.append(name))
            return x
        return branch

    f = mj.jit(lambda i, x: lax.switch(i, [spy("a"), spy("b"), spy("c")], x))
    for i in (0, 2, 1, 9, -4):
        f(i, np.ones(2))
    assert calls == ["a", "c", "b", "c", "a"]
    assert f.trace_count == 1


# --------------------------------------------------------------------------- type errors


def _raises(fn, *args, match: str | None = None, cls=TypeError):
    with pytest.raises(cls) as info:
        fn(*args)
    return str(info.value)


@pytest.mark.parametrize("run", [lambda f, *a: f(*a), lambda f, *a: mj.jit(f)(*a)],
                         ids=["eager", "jit"])
def test_cond_branches_must_agree_dtype(run):
    def f(p, x):
        return lax.cond(p, lambda x: (x, x), lambda x: (x, mnp.sum(x).astype(mnp.int64)), x)

    msg = _raises(run, f, True, np.ones(2))
    assert "output[1]" in msg
    assert "f64[2]" in msg and "i64[]" in msg
    assert "true_fun" in msg and "false_fun" in msg


def test_cond_branches_must_agree_shape_and_structure():
    msg = _raises(mj.jit(lambda p, x: lax.cond(p, lambda x: x, lambda x: x[:2], x)),
                  True, np.ones(3))
    assert "f64[3]" in msg and "f64[2]" in msg
    msg = _raises(mj.jit(lambda p, x: lax.cond(p, lambda x: x, lambda x: (x, x), x)),
                  True, np.ones(3))
    assert "same structure" in msg


def test_switch_branches_must_agree():
    branches = [lambda x: x, lambda x: x, lambda x: x.astype(mnp.float32)]
    msg = _raises(mj.jit(lambda i, x: lax.switch(i, branches, x)), 1, np.ones(3))
    assert "branches[0]" in msg and "branches[2]" in msg
    assert "f64[3]" in msg and "f32[3]" in msg


def test_fori_loop_carry_dtype_change_names_the_leaf():
    def f(x):
        return lax.fori_loop(0, 3, lambda i, c: (c[0], c[1] + 0.5), (x, np.int32(0)))

    msg = _raises(mj.jit(f), np.ones(2))
    assert "carry[1]" in msg
    assert "i32[]" in msg and "f64[]" in msg
    assert "fori_loop" in msg and ".astype" in msg

    def fixed(x):
        return lax.fori_loop(0, 3, lambda i, c: (c[0], c[1] + 0.5), (x, np.float64(0)))

    np.testing.assert_allclose(mj.jit(fixed)(np.ones(2))[1], 1.5)


def test_single_array_carry_mismatch():
    msg = _raises(mj.jit(lambda x: lax.fori_loop(0, 3, lambda i, a: a / 2, x)), np.arange(3))
    assert "the carry is i64[3] and the body returns f64[3]" in msg


def test_while_loop_carry_shape_change_names_the_leaf():
    def f(x):
        return lax.while_loop(lambda c: c[1] < 3, lambda c: (mnp.concatenate([c[0], c[0]]),
                                                             c[1] + 1), (x, 0))

    msg = _raises(mj.jit(f), np.ones(2))
    assert "carry[0]" in msg and "f64[2]" in msg and "f64[4]" in msg
    assert ".at[i].set" in msg  # the fix for a growing array: preallocate


def test_scan_carry_mismatch_names_the_leaf():
    msg = _raises(mj.jit(lambda xs: lax.scan(lambda c, x: (c + x, x), np.int32(0), xs)),
                  np.ones(3))
    assert "i32[]" in msg and "f64[]" in msg and "carry" in msg


def test_weak_python_scalar_carry_is_promoted_not_refused():
    out = mj.jit(lambda: lax.fori_loop(0, 4, lambda i, c: c + 0.5, 0))()
    assert out.dtype == np.float64 and float(out) == 2.0


def test_cond_predicate_must_be_scalar():
    msg = _raises(mj.jit(lambda p, x: lax.cond(p, lambda x: x, lambda x: -x, x)),
                  np.array([True, False]), np.ones(2))
    assert "scalar" in msg and "bool[2]" in msg and "where" in msg


@pytest.mark.parametrize("cond_fun, got", [(lambda c: c, "i64[]"),
                                           (lambda c: c < np.ones(2), "bool[2]")],
                         ids=["int", "bool-array"])
def test_while_cond_fun_must_return_a_bool_scalar(cond_fun, got):
    msg = _raises(mj.jit(lambda: lax.while_loop(cond_fun, lambda c: c + 1, 0)))
    assert "boolean scalar" in msg and got in msg


def test_loop_bounds_and_switch_index_must_be_integers():
    msg = _raises(mj.jit(lambda n: lax.fori_loop(0, n, lambda i, c: c, 0.0)), 2.0)
    assert "integer" in msg and "f64[]" in msg
    msg = _raises(mj.jit(lambda i: lax.switch(i, [lambda: 0.0, lambda: 1.0])), 1.0)
    assert "integer" in msg


# --------------------------------------------------------------------------- printing


# Both texts are what JAX 0.10.2 (with jax_enable_x64) prints for the same programs: a short
# branch fits on one line, and fori_loop with static bounds is a scan that counts.
COND_GOLDEN = """\
{ lambda ; a:f64[] b:f64[3]. let
    c:bool[] = gt a 0.0:f64[]
    d:i32[] = convert_element_type[new_dtype=int32 weak_type=False] c
    e:f64[3] = cond[
      branches=(
        { lambda ; f:f64[3]. let g:f64[3] = add f 1.0:f64[] in (g,) }
        { lambda ; h:f64[3]. let
            i:f64[3] = sin h
            j:f64[3] = mul i 2.0:f64[]
          in (j,) }
      )
    ] d b
  in (e,) }"""

FORI_GOLDEN = """\
{ lambda ; a:f64[]. let
    _:i64[] b:f64[] = scan[
      jaxpr={ lambda ; c:f64[] d:i64[] e:f64[]. let
          f:i64[] = add d 1:i64[]
          g:f64[] = div c e
          h:f64[] = add e g
          i:f64[] = mul 0.5:f64[] h
        in (f, i) }
      length=5
      num_carry=2
      num_consts=1
      reverse=False
      unroll=1
    ] a 0:i64[] a
  in (b,) }"""


def test_printer_shows_cond_branches_nested():
    def f(p, x):
        return lax.cond(p > 0, lambda x: mnp.sin(x) * 2.0, lambda x: x + 1.0, x)

    assert str(mj.make_jaxpr(f)(1.0, np.ones(3))) == COND_GOLDEN


def test_printer_shows_fori_body_nested():
    def newton(x):
        return lax.fori_loop(0, 5, lambda i, y: 0.5 * (y + x / y), x)

    assert str(mj.make_jaxpr(newton)(np.float64(2.0))) == FORI_GOLDEN


# --------------------------------------------------------------------------- typechecking


def _replace_eqn(jaxpr: Jaxpr, k: int, **changes) -> Jaxpr:
    eqns = list(jaxpr.eqns)
    eqns[k] = dataclasses.replace(eqns[k], **changes)
    return dataclasses.replace(jaxpr, eqns=tuple(eqns))


def _cond_jaxpr() -> Jaxpr:
    return mj.make_jaxpr(
        lambda p, x: lax.cond(p > 0, lambda x: mnp.sin(x) * 2.0, lambda x: x + 1.0, x)
    )(1.0, np.ones(3)).jaxpr


def test_typecheck_recurses_into_cond_branches():
    jaxpr = _cond_jaxpr()
    mj.typecheck_jaxpr(jaxpr)
    cond_eqn: Eqn = jaxpr.eqns[2]
    false_branch, true_branch = cond_eqn.params["branches"]
    # Swap the two equations of the true branch: `mul` now reads `sin`'s output before it is
    # defined. The branch's inputs and outputs keep their types, so only recursion can tell.
    broken = dataclasses.replace(true_branch, eqns=true_branch.eqns[::-1])
    bad = _replace_eqn(jaxpr, 2, params={"branches": (false_branch, broken)})
    with pytest.raises(JaxprTypeError, match="used before definition"):
        mj.typecheck_jaxpr(bad)


def test_typecheck_recurses_into_loop_bodies():
    jaxpr = mj.make_jaxpr(_newton_sqrt)(np.float64(2.0)).jaxpr
    mj.typecheck_jaxpr(jaxpr)
    (loop,) = jaxpr.eqns
    body = loop.params["jaxpr"]
    # Retype an intermediate (`div`'s output) as f32: inconsistent inside the body only.
    div = body.eqns[1]  # after the counter's `add`
    assert div.primitive.name == "div"
    wrong = type(div.outvars[0])(div.outvars[0].aval.update(dtype=np.dtype(np.float32)))
    broken = _replace_eqn(body, 1, outvars=(wrong,))
    bad = _replace_eqn(jaxpr, 0, params={**loop.params, "jaxpr": broken})
    with pytest.raises(JaxprTypeError, match="div"):
        mj.typecheck_jaxpr(bad)


def test_typecheck_catches_a_body_that_changes_the_carry_type():
    jaxpr = mj.make_jaxpr(_newton_sqrt)(np.float64(2.0)).jaxpr
    (loop,) = jaxpr.eqns
    # A self-consistent body whose output is f32 while the carry is f64.
    f32_body = mj.make_jaxpr(lambda x, i, y: (i + 1, (x / y).astype(np.float32)))(
        np.float64(1.0), np.int64(0), np.float64(1.0)).jaxpr
    bad = _replace_eqn(jaxpr, 0, params={**loop.params, "jaxpr": f32_body})
    with pytest.raises(JaxprTypeError, match="scan"):
        mj.typecheck_jaxpr(bad)


def test_typecheck_catches_branches_that_disagree():
    jaxpr = _cond_jaxpr()
    cond_eqn = jaxpr.eqns[2]
    false_branch, _ = cond_eqn.params["branches"]
    other = mj.make_jaxpr(lambda x: x[:2])(np.ones(3)).jaxpr
    bad = _replace_eqn(jaxpr, 2, params={"branches": (false_branch, other)})
    with pytest.raises(JaxprTypeError, match="cond"):
        mj.typecheck_jaxpr(bad)


# --------------------------------------------------------------------------- Python control flow


def _sum_first(x, n):
    total = 0.0
    for i in range(n):
        total = total + x[i] * i
    return total


@pytest.mark.parametrize("how", ["static_argnums", "shape"])
def test_python_loop_on_static_value_unrolls(how):
    counts = []
    for n in range(1, 7):
        if how == "static_argnums":
            closed = mj.make_jaxpr(_sum_first, static_argnums=1)(np.ones(8), n)
        else:
            closed = mj.make_jaxpr(lambda x: _sum_first(x, x.shape[0]))(np.ones(n))
        assert "fori_loop" not in str(closed)
        counts.append(len(closed.eqns))
    steps = np.diff(counts)
    assert (steps > 0).all(), counts
    assert len(set(steps[1:])) == 1, f"not linear in n: {counts}"
    jf = mj.jit(_sum_first, static_argnums=1)
    np.testing.assert_allclose(jf(np.arange(8.0), 4), sum(i * i for i in range(4)))
    jf(np.arange(8.0), 5)
    assert jf.trace_count == 2  # a new static value is a new program


def test_python_if_on_traced_value_raises_with_the_fix():
    def relu_sum(x):
        s = mnp.sum(x)
        if s > 0:
            return s
        return 0.0 * s

    with pytest.raises(errors.TracerBoolConversionError) as info:
        mj.jit(relu_sum)(np.ones(3))
    msg = str(info.value)
    assert "lax.cond" in msg and "mnp.where" in msg
    assert "`x`" in msg and "if s > 0" in msg
    assert isinstance(info.value, errors.ConcretizationTypeError)

    def fixed(x):
        s = mnp.sum(x)
        return lax.cond(s > 0, lambda s: s, lambda s: 0.0 * s, s)

    assert float(mj.jit(fixed)(np.ones(3))) == 3.0
    assert float(mj.jit(fixed)(-np.ones(3))) == 0.0


def test_python_range_on_traced_value_raises_with_the_fix():
    def f(x, n):
        for _ in range(n):
            x = x * 2.0
        return x

    with pytest.raises(errors.TracerIntegerConversionError) as info:
        mj.jit(f)(np.ones(2), 3)
    msg = str(info.value)
    assert "fori_loop" in msg and "static_argnames=('n',)" in msg
    assert not isinstance(info.value, errors.ConcretizationTypeError)

    def fixed(x, n):
        return lax.fori_loop(0, n, lambda i, x: x * 2.0, x)

    jf = mj.jit(fixed)
    np.testing.assert_array_equal(jf(np.ones(2), 3), [8.0, 8.0])
    np.testing.assert_array_equal(jf(np.ones(2), 5), [32.0, 32.0])
    assert jf.trace_count == 1  # n is traced: one program for every trip count


def test_cond_traces_true_fun_first_and_joins_its_consts_first_as_jax_does():
    """JAX 0.10.2 traces `true_fun` before `false_fun`, and its closed-over values come first
    among the cond's operands; the printed jaxpr is JAX's, character for character."""
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)

    def program(lax_module, seen):
        def f(p, a, b):
            return lax_module.cond(p, lambda x: seen.append("true") or x + a,
                                   lambda x: seen.append("false") or x * b, 1.0)
        return f

    theirs, ours = [], []
    want = str(jax.make_jaxpr(program(jax.lax, theirs))(True, 2.0, 3.0))
    got = str(mj.make_jaxpr(program(lax, ours))(True, 2.0, 3.0))
    assert theirs == ours == ["true", "false"]
    assert got == want


def test_under_disable_jit_cond_and_switch_call_the_chosen_branch_alone_as_jax_does():
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)

    def runs(lax_module, disable_jit):
        seen = []
        with disable_jit():
            out = (lax_module.cond(True, lambda: seen.append("true") or 1.0,
                                   lambda: seen.append("false") or 1),  # types differ
                   lax_module.cond(np.bool_(False), lambda x: x, lambda x: x * 2, 3),
                   lax_module.switch(5, [lambda: 0, lambda: 1.5]))
        return out, seen

    assert runs(lax, mj.disable_jit) == runs(jax.lax, jax.disable_jit) == ((1.0, 6, 1.5),
                                                                           ["true"])
    with mj.disable_jit():  # a traced predicate still stages both branches
        jaxpr = mj.make_jaxpr(lambda p: lax.cond(p, lambda: 1.0, lambda: 2.0))(True)
    assert jaxpr.eqns[-1].primitive.name == "cond"
