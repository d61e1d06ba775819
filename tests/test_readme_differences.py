"""README.md's table "Where minijit differs from JAX on purpose" stays true.

Each row of the table has an `id`, an example (one line of Python) and what it gives (the
value's `repr`, or the name of the exception it raises). `test_example` runs every row's
example on minijit and compares; `test_row_<id>` checks the rest of that row's claim; and
`test_every_row_has_a_test` fails when a row has no `test_row_` function or a function no row,
so the table and its tests cannot drift apart. (What JAX does, in the "JAX" column, was checked
against JAX 0.10.2; tests/test_jax_examples.py runs on JAX itself.)
"""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

import numpy as np
import pytest

import minijit as mj
import minijit.numpy as mnp

README = Path(__file__).resolve().parents[1] / "README.md"
SECTION = "## Where minijit differs from JAX on purpose"
COLUMNS = ["id", "minijit", "JAX", "why", "example", "gives"]


def table_rows() -> dict[str, dict[str, str]]:
    """The section's table as {id: {column: cell}}; a cell's surrounding backticks removed."""
    section = README.read_text().split(SECTION, 1)[1].split("\n## ", 1)[0]
    lines = [line for line in section.splitlines() if line.startswith("|")]
    header = [cell.strip() for cell in lines[0].strip("|").split("|")]
    assert header == COLUMNS, header
    assert set(lines[1].replace("|", "").strip()) <= {"-"}, "second line is the separator"
    rows = {}
    for line in lines[2:]:
        # no cell holds a `|`, so splitting on it is exact
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        assert len(cells) == len(COLUMNS), line
        row = dict(zip(COLUMNS, cells))
        for column in ("id", "example", "gives"):
            match = re.fullmatch(r"`(.+)`", row[column])
            assert match, f"the {column} cell of {line!r} is not one piece of `code`"
            row[column] = match.group(1)
        assert row["id"] not in rows, f"two rows have the id {row['id']!r}"
        rows[row["id"]] = row
    return rows


ROWS = table_rows()


def run_example(code: str):
    """Run one line of statements and return its last expression's value, or the exception
    it raised (as the exception object)."""
    module = ast.parse(code)
    *body, last = module.body
    assert isinstance(last, ast.Expr), f"{code!r} must end with an expression"
    namespace = {"mj": mj, "mnp": mnp, "np": np}
    try:
        exec(compile(ast.Module(body, type_ignores=[]), "<README>", "exec"), namespace)
        return eval(compile(ast.Expression(last.value), "<README>", "eval"), namespace)
    except Exception as e:  # the example may document an exception
        return e


@pytest.mark.parametrize("row_id", sorted(ROWS))
def test_example(row_id):
    row = ROWS[row_id]
    got = run_example(row["example"])
    if isinstance(got, Exception):
        assert type(got).__name__ == row["gives"], f"{row['example']} raised {got!r}"
    else:
        assert repr(got) == row["gives"]


def test_every_row_has_a_test():
    tests = {name[len("test_row_"):] for name in dir(sys.modules[__name__])
             if name.startswith("test_row_")}
    ids = {row_id.replace("-", "_") for row_id in ROWS}
    assert ids - tests == set(), "rows without a test_row_ function"
    assert tests - ids == set(), "test_row_ functions without a row"


# --- one function per row: the rest of each row's claim -------------------------------------


def test_row_x64():
    assert mnp.ones(3).dtype == np.float64 and mnp.arange(3).dtype == np.int64
    # JAX's lattice, not NumPy's: weak scalars take the array's dtype, float32 wins over ints
    assert (mnp.ones(2, mnp.float32) + 1.5).dtype == np.float32
    assert (mnp.ones(2, mnp.float32) + mnp.ones(2, mnp.int64)).dtype == np.float32
    assert list(mnp.ones(2, mnp.int8) + 300) == [45, 45]  # wraps, as in JAX


def test_row_cpu_only():
    for name in ("devices", "local_devices", "sharding"):
        assert not hasattr(mj, name)
    x = mj.device_put(1.0)  # without a device, device_put works, as in JAX
    assert isinstance(x, mj.Array) and x.weak_type
    with pytest.raises(ValueError):
        mj.jit(lambda x: x, backend="gpu")(1.0)


def test_row_no_transforms():
    for name in ("grad", "value_and_grad", "vjp", "vmap", "pmap", "linearize"):
        assert not hasattr(mj, name), name
    assert callable(mj.jvp)


def test_row_ndarray_subclass():
    x = mnp.arange(3.0)
    assert isinstance(x, np.ndarray)
    with pytest.raises(TypeError, match="immutable"):
        x[0] = 1.0
    with pytest.raises(TypeError, match="immutable"):
        np.add(x, 1.0, out=x)
    with pytest.raises(TypeError, match="immutable"):
        x.fill(0.0)
    assert list(x) == [0.0, 1.0, 2.0]
    view = np.asarray(x)
    assert np.shares_memory(view, x) and view.flags.writeable


def test_row_tracer_repr():
    seen = []

    @mj.jit
    def f(x):
        seen.append(repr(x))
        return x

    f(mnp.ones(3))
    assert seen == ["Traced<ShapedArray(float64[3])>with<JaxprTrace(f)>"]


def test_row_scalar_types():
    assert mnp.float32 is np.float32 and mnp.int8 is np.int8
    assert type(mnp.int16(1) + mnp.int16(1)) is np.int16  # NumPy's scalar arithmetic
    # with a minijit array on one side, minijit's (JAX's) rules and type
    out = mnp.int32(2) * mnp.arange(3, dtype=mnp.int8)
    assert isinstance(out, mj.Array) and out.dtype == np.int32


def test_row_error_text():
    with pytest.raises(mj.errors.ConcretizationTypeError) as info:
        mj.jit(lambda n: mnp.ones((n,)))(3)
    assert isinstance(info.value, TypeError)
    assert "i64[]" in str(info.value) and "static" in str(info.value)  # the type, and the fix
    compiled = mj.jit(lambda x: x).lower(mnp.ones(3)).compile()
    with pytest.raises(TypeError, match=r"at x, now f64\[4\] and before f64\[3\]"):
        compiled(mnp.ones(4))


def test_row_leak_error():
    out = []

    @mj.jit
    def leaky(x):
        out.append(x)
        return x

    with mj.checking_leaks(), pytest.raises(mj.errors.UnexpectedTracerError) as info:
        leaky(1.0)
    assert "leaky" in str(info.value)  # names the trace it escaped from
    # without the check, the leak is found when the tracer is used, with the same class
    leaky(mnp.ones(2))
    with pytest.raises(mj.errors.UnexpectedTracerError):
        out[-1] + 1


def test_row_no_sharding_params():
    iota = str(mj.make_jaxpr(lambda: mj.lax.iota(mnp.int32, 3))())
    assert "iota[dimension=0 dtype=int32 shape=(3,)]" in iota
    assert "reduce_sum[axes=(0,)]" in str(mj.make_jaxpr(mnp.sum)(mnp.ones(3)))


def test_row_as_text():
    lowered = mj.jit(lambda x: x * 2.0, backend="numba").lower(1.0)
    assert "numba" in lowered.as_text()  # the source that numba.njit compiles
    interpreted = mj.jit(lambda x: x * 2.0, backend="interpreter").lower(1.0).as_text()
    assert "mul a 2.0:f64[]" in interpreted
    assert not hasattr(lowered.compile(), "cost_analysis")


def test_row_jit_math():
    x = np.concatenate([np.linspace(-30.0, 30.0, 6001), [0.0, -0.0, np.inf, -np.inf, 1e-310]])
    got = np.asarray(mj.jit(mnp.tanh, backend="numba")(x))
    ulps = np.abs(got.view(np.int64) - np.tanh(x).view(np.int64))  # same signs throughout
    assert ulps.max() <= 4
    assert " math.tanh(" not in mj.jit(mnp.tanh, backend="numba").lower(x).as_text()
    mj.config.update("vector_math", False)
    try:
        text = mj.jit(lambda v: mnp.tanh(v), backend="numba").lower(x).as_text()
    finally:
        mj.config.update("vector_math", True)
    assert " math.tanh(" in text  # libm's tanh (written math.tanh: see scalar_rules.py)


def test_row_jit_sum():
    rng = np.random.default_rng(0)
    for n in (1, 7, 8, 100, 128):  # NumPy's bits
        x = rng.standard_normal((3, n))
        assert np.array_equal(mj.jit(lambda v: mnp.sum(v, axis=1), backend="numba")(x),
                              np.sum(x, axis=1))
    x = np.sqrt(np.arange(1000.0))
    got, want = float(mj.jit(mnp.sum, backend="numba")(x)), float(np.sum(x))
    assert got != want and abs(got - want) <= 4 * np.spacing(want)  # a few ulp (here 1)
    assert "folds.sum_f64" in mj.jit(mnp.sum, backend="numba").lower(x).as_text()


def test_row_int_array_index():
    x = mnp.arange(3.0)
    assert list(x[np.array([0, 2])]) == [0.0, 2.0]  # an eager read works
    with pytest.raises(IndexError):
        mj.jit(lambda x: x[np.array([0, 2])])(x)
    with pytest.raises(IndexError):
        x.at[mnp.array([0, 2])].set(1.0)
    assert list(x[x > 0]) == [1.0, 2.0]  # a concrete mask, outside jit
    with pytest.raises(mj.errors.NonConcreteBooleanIndexError):
        mj.jit(lambda x: x[x > 0])(x)


def test_row_dtypes():
    for dtype in (np.float16, np.complex64, np.complex128):
        with pytest.raises(TypeError):
            mnp.asarray(np.ones(2, dtype))
    with pytest.raises(TypeError):
        mnp.zeros(2, dtype=np.complex128)


def test_row_weak_bool():
    assert not mnp.isnan(2.0).weak_type and not mnp.equal(1, 2).weak_type
    traces = []

    @mj.jit
    def f(x):
        traces.append(x)
        return x

    f(mnp.asarray(2.0) > 1)
    f(mnp.asarray(True))
    assert len(traces) == 1  # JAX traces twice: weak and strong bool are two signatures


# --- the paragraph after the table ------------------------------------------------------------


def test_weak_bools_promote_as_bools():
    assert not mnp.asarray(True).weak_type
    assert (mnp.asarray(True) + mnp.ones(1, mnp.int8)).dtype == np.int8
    assert ((mnp.asarray(2.0) > 1) + mnp.ones(1, mnp.int8)).dtype == np.int8
    assert (mnp.ones(1, bool) + True).dtype == np.bool_  # a Python True is a strong bool


def test_row_scan_unroll():
    def f(x):
        return mj.lax.fori_loop(0, 8, lambda i, c: c * 2.0, x, unroll=4)

    scan = mj.make_jaxpr(f)(1.0).eqns[0]
    assert scan.primitive.name == "scan" and scan.params["unroll"] == 4
    source = mj.jit(f, backend="numba").lower(1.0).as_text()
    assert source.count("for ") == 1 and "range(0, 8)" in source  # one counted loop, rolled
    assert mj.jit(f)(1.0) == 256.0


def test_row_pad_negative():
    x = np.arange(5.0)
    jaxpr = mj.make_jaxpr(lambda v: mj.lax.pad(v, -1.0, [(-1, -2, 1)]))(x)
    assert [e.primitive.name for e in jaxpr.eqns] == ["pad", "slice"]
    assert jaxpr.eqns[0].params["padding_config"] == ((0, 0, 1),)
    # JAX 0.10.2 (x64): lax.pad(jnp.arange(5.0), -1.0, [(-1, -2, 1)])
    np.testing.assert_array_equal(mj.lax.pad(x, -1.0, [(-1, -2, 1)]), [-1, 1, -1, 2, -1, 3])


def test_row_jnp_not_jitted():
    text = str(mj.make_jaxpr(lambda x: mnp.clip(x % 2.0, 0.0, 1.0))(mnp.ones(3)))
    assert "jit[" not in text and "max" in text and "min" in text


def test_row_debug_print_eqn():
    closed = mj.make_jaxpr(lambda x: mj.debug.callback(print, x))(1.0)
    assert closed.eqns[0].primitive.name == "debug_callback"
    assert closed.eqns[0].primitive.effectful


def test_row_donate_numpy():
    f = mj.jit(lambda x: x * 2.0, donate_argnums=0)
    a = np.ones(3)
    out = f(a)
    np.testing.assert_array_equal(out, [2.0, 2.0, 2.0])
    with pytest.raises(RuntimeError, match="donated"):
        f(a)
    b = np.ones(3)
    mj.jit(lambda x: x * 2.0)(b)  # without donation the caller's array is left alone
    np.testing.assert_array_equal(b, [1.0, 1.0, 1.0])


def test_row_index_bounds():
    big = np.uint64(2**63)
    for f in (lambda x, i: x.at[i].set(1.0), mj.jit(lambda x, i: x.at[i].set(1.0))):
        np.testing.assert_array_equal(f(mnp.zeros(3), big), [0.0, 0.0, 0.0])
        np.testing.assert_array_equal(f(mnp.zeros(3), 2**32 + 1), [0.0, 0.0, 0.0])
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    zeros = jax.numpy.zeros(3)
    assert zeros.at[big].set(1.0).tolist() == [1.0, 0.0, 0.0]  # the JAX column
    assert zeros.at[2**32 + 1].set(1.0).tolist() == [0.0, 1.0, 0.0]
