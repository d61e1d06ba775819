"""ex10_new_primitive (chapter 10): the solution's `logaddexp` is a full primitive, the
grading of it is right, and grading leaves minijit's tables as it found them.

- the solution notebook's primitive passes the checks minijit's own binary primitives pass
  (tests/primitive_checklist.py), is in every rule table and in BINARY and ELEMENTWISE;
- the expected values of every value case (the reference run eagerly and by both backends)
  are NumPy's `np.logaddexp`, dtypes included, and on a grid of edge values the reference is
  np.logaddexp bit for bit, signs of zero too;
- the solution's `test_logaddexp` passes on `np.logaddexp` and raises AssertionError on each
  broken implementation of the case list, each of which is wrong (and only) where it says;
- after every probe, and after the notebook's `using_logaddexp`, every rule table and op
  group holds exactly what it held before, even when the registration or the block raised;
- the solution scores every case, the untouched stub none (all "not attempted"), and a Numba
  rule with the naive formula only some.
"""

from __future__ import annotations

import nbformat
import numpy as np
import pytest
from primitive_checklist import (
    check_binary_rejects_mixed_dtypes_and_shapes,
    check_impl_matches_abstract_eval,
)
from solution_cells import SOLUTIONS

from minijit import config, core
from minijit.codegen.rules import is_kernel_member, numba_rules
from minijit.grading import primitive_probes
from minijit.grading.cases import compare, not_attempted
from minijit.grading.checking import expected_value
from minijit.grading.exercises import ch10_putting_it_together as ch10
from minijit.grading.probing import run_probe
from minijit.primitives import add_p

NOTEBOOK = "10_putting_it_together.ipynb"
EXERCISE = next(e for e in ch10.EXERCISES if e.id == "ex10_new_primitive")
CASES = EXERCISE.cases()


def _cells(path, *markers: str) -> dict:
    """The first code cell (imports), then each code cell that contains one of `markers`, run
    in that order in one namespace; whatever they set in `minijit.config` is put back."""
    cells = [c.source for c in nbformat.read(path, as_version=4).cells if c.cell_type == "code"]
    ns: dict = {"__name__": path.parent.name}
    saved = dict(config._values)
    try:
        for source in [cells[0]] + [next(s for s in cells if m in s) for m in markers]:
            exec(compile(source, str(path), "exec"), ns)
    finally:
        config._values.clear()
        config._values.update(saved)
    return ns


def _notebook(path) -> dict:
    return _cells(path, "def using_logaddexp", "# EXERCISE ex10_new_primitive")


@pytest.fixture
def solution() -> dict:
    return _notebook(SOLUTIONS / NOTEBOOK)


@pytest.fixture(autouse=True)
def tables_unchanged():
    """Every test leaves minijit's tables and op groups as it found them."""
    before = primitive_probes.snapshot()
    yield
    assert primitive_probes.snapshot() == before


def test_solution_primitive_passes_the_checklist(solution):
    prim = solution["logaddexp_p"]
    with solution["using_logaddexp"]():
        tables = {name: t for name, t in vars(core).items()
                  if name.endswith("_rules") and isinstance(t, dict)}
        missing = [name for name, t in {**tables, "numba_rules": numba_rules}.items()
                   if prim not in t]
        assert not missing, f"logaddexp has no entry in {missing}"
        assert prim in core.BINARY and prim in core.ELEMENTWISE and is_kernel_member(prim)
        assert prim not in core.UNARY | core.COMPARISONS | core.REDUCTIONS
        # float32 and float64, each with equal shapes and with a rank-0 operand either side
        assert check_impl_matches_abstract_eval(prim, 2) == 6
        check_binary_rejects_mixed_dtypes_and_shapes(prim)
    assert prim not in numba_rules and prim not in core.ELEMENTWISE


def test_the_notebook_and_the_grader_register_and_remove_everything(solution):
    """Also when the block raises, and when a registration raises half-way: the tables are
    refilled from their copies, so nothing of it is left."""
    before = primitive_probes.snapshot()
    with pytest.raises(ZeroDivisionError), solution["using_logaddexp"]():
        assert solution["logaddexp_p"] in core.impl_rules
        raise ZeroDivisionError
    assert primitive_probes.snapshot() == before

    own_add = numba_rules[add_p]

    def clumsy():  # replaces a rule of minijit's, joins groups it should not, then fails
        numba_rules[add_p] = "not a rule"
        core.COMMUTATIVE.add(solution["logaddexp_p"])
        core.REDUCTIONS.discard(next(iter(core.REDUCTIONS)))
        raise RuntimeError("half-way")

    with pytest.raises(RuntimeError), primitive_probes.registered(clumsy):
        pass
    assert primitive_probes.snapshot() == before and numba_rules[add_p] is own_add


@pytest.mark.parametrize("key", [k for k, _, _ in CASES])
def test_probes_leave_the_tables_as_they_were(key, solution):
    """Each case, run on the solution notebook's names; the autouse fixture checks the tables
    afterwards, and the result must match the expected one."""
    case = dict((k, c) for k, c, _ in CASES)[key]
    before = primitive_probes.snapshot()
    got = run_probe(EXERCISE.probe_for(case), solution, case.args)
    assert primitive_probes.snapshot() == before
    assert compare(expected_value(EXERCISE, key, case), got, case.rtol, case.atol) is None, got


def _numpy_outputs(source: str, inputs: list) -> list[np.ndarray]:
    """A value case's program with np.logaddexp for logaddexp and NumPy for mnp."""
    fun = eval(source, {"np": np, "mnp": np, "logaddexp": np.logaddexp})
    with np.errstate(all="ignore"):
        outs = fun(*[np.asarray(values, dtype=dtype) for values, dtype in inputs])
    return [np.asarray(o) for o in (outs if isinstance(outs, tuple) else (outs,))]


VALUE_CASES = [(k, c) for k, c, _ in CASES if c.probe is ch10.probe_logaddexp_values]


@pytest.mark.parametrize("key", [k for k, _ in VALUE_CASES])
def test_expected_values_are_numpys(key):
    case = dict(VALUE_CASES)[key]
    expected = expected_value(EXERCISE, key, case)
    numpy = _numpy_outputs(*case.args)
    assert set(expected) == {"eager", "interpreter", "numba"}
    for mode, outs in expected.items():
        assert len(outs) == len(numpy)
        for got, want in zip(outs, numpy):
            data = got["__array__"]
            assert (data["dtype"], tuple(data["shape"])) == (want.dtype.name, want.shape), mode
            np.testing.assert_allclose(np.asarray(data["data"], want.dtype), want,
                                       rtol=case.rtol, atol=case.atol, err_msg=mode)


def test_value_cases_reach_the_pitfalls():
    """Values where e^x overflows in their dtype, the same infinity twice, and NaN."""
    inputs = [np.asarray(v, dtype=d) for c in dict(VALUE_CASES).values() for v, d in c.args[1]]
    assert any(x.dtype == np.float64 and (x > 710).any() for x in inputs)
    assert any(x.dtype == np.float32 and (x > 89).any() for x in inputs)
    assert any(np.isnan(x).any() for x in inputs)
    x, y = (np.asarray(v, dtype=d) for v, d in ch10.NEW_PRIMITIVE_HIDDEN[1].args[1])
    assert ((x == y) & np.isinf(x)).sum() == 2  # inf twice, -inf twice


BROKEN = {
    ch10.IMPL_NAIVE: "overflow",
    ch10.IMPL_NAN_AT_EQUAL_INFINITIES: "equal infinities",
    ch10.IMPL_FLOAT64_ALWAYS: "dtype",
    ch10.IMPL_RESIZED_NOT_BROADCAST: "broadcasting",
}


def _impl(source: str):
    scope = {"np": np}
    exec(source, scope)
    return scope["impl"]


def test_every_broken_implementation_is_graded():
    graded = {c.args[0] for _, c, _ in CASES if c.probe is ch10.probe_logaddexp_test}
    assert graded == set(BROKEN) | {ch10.IMPL_REFERENCE}


@pytest.mark.parametrize("source", list(BROKEN), ids=list(BROKEN.values()))
def test_broken_implementations_are_wrong_only_where_they_say(source):
    impl, fault = _impl(source), BROKEN[source]
    with np.errstate(all="ignore"):
        ordinary = np.array([-3.0, 0.0, 1.5, 20.0]), np.array([2.0, -1.0, 1.5, 19.0])
        np.testing.assert_allclose(impl(*ordinary), np.logaddexp(*ordinary), rtol=1e-12)
        wrong = {
            "overflow": (np.array([1000.0]), np.array([1000.0])),
            "equal infinities": (np.array([-np.inf]), np.array([-np.inf])),
            "dtype": (np.ones(2, np.float32), np.ones(2, np.float32)),
            "broadcasting": (np.ones((3, 1)), np.arange(4.0)),
        }[fault]
        got, want = np.asarray(impl(*wrong)), np.logaddexp(*wrong)
    assert (got.shape, got.dtype) != (want.shape, want.dtype) or not np.allclose(
        got, want, equal_nan=True)


@pytest.mark.parametrize("source", list(BROKEN), ids=list(BROKEN.values()))
def test_the_solutions_test_rejects_each_broken_implementation(source, solution):
    with pytest.raises(AssertionError):
        solution["test_logaddexp"](_impl(source))
    with pytest.raises(AssertionError):
        ch10._reference_test_logaddexp(_impl(source))


def test_the_solutions_test_passes_on_numpy_and_on_the_primitive(solution):
    import minijit as mj

    solution["test_logaddexp"](np.logaddexp)
    with solution["using_logaddexp"]():
        solution["test_logaddexp"](solution["logaddexp"])
        solution["test_logaddexp"](mj.jit(solution["logaddexp"], backend="interpreter"))


def test_untouched_stub_attempts_nothing():
    ns = _notebook(SOLUTIONS.parent / "exercises" / NOTEBOOK)
    for key, case, _ in CASES:
        got = run_probe(EXERCISE.probe_for(case), ns, case.args)
        assert not_attempted(got), (key, got)


def test_a_naive_numba_rule_earns_only_part(solution):
    """The naive formula in the Numba rule: its overflowing values fail, the rest pass."""
    solution["logaddexp_rule"] = lambda a, eqn: f"np.log(np.exp({a[0]}) + np.exp({a[1]}))"
    passed = {key: compare(expected_value(EXERCISE, key, case),
                           run_probe(EXERCISE.probe_for(case), solution, case.args),
                           case.rtol, case.atol) is None
              for key, case, _ in CASES}
    values = {k for k, _ in VALUE_CASES}
    assert not any(passed[k] for k in values)  # each value case has an overflowing element
    assert all(passed[k] for k in set(passed) - values)


EDGES = [-np.inf, np.inf, np.nan, -0.0, 0.0, 1e-300, -1000.0, -745.0, -40.0, -1.0, 0.5, 3.0,
         88.0, 89.0, 709.0, 710.0, 1000.0, 1e308, 1.7e308, 3e38]


@pytest.mark.parametrize("backend", ["interpreter", "numba"])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_reference_is_numpys_bit_for_bit_on_the_edges(backend, dtype):
    """Every pair of infinities, NaN, signed zeros, overflow thresholds and values near the
    largest float: the reference's values (and signs of zero) are np.logaddexp's exactly."""
    import minijit as mj

    ns = ch10._reference_new_primitive()
    with np.errstate(all="ignore"):
        x, y = (a.astype(dtype) for a in np.meshgrid(EDGES, EDGES))
        want = np.logaddexp(x, y)
    with primitive_probes.registered(ns["register_logaddexp"]), primitive_probes.own_pieces():
        got = np.asarray(mj.jit(ns["logaddexp"], backend=backend)(x, y))
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)
    assert (np.signbit(got) == np.signbit(want))[~np.isnan(want)].all()
