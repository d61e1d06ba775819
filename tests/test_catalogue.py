"""Differential tests: every catalogue program agrees with NumPy, run every way minijit can.

Each program runs as NumPy directly (the reference), eagerly through `minijit.numpy`, through
`eval_jaxpr` on its `make_jaxpr` output, and through `jit` on every backend in
`minijit.backends.DISTINCT_BACKENDS` (a new backend joins by registering itself in `BACKENDS`).
Values must agree (exactly for ints and bools), and so must shapes and dtypes.
"""

from __future__ import annotations

import numpy as np
import pytest
from catalogue import PROGRAMS, Program

import minijit as mj
from minijit import backends
from minijit.array import wrap
from minijit.core import get_aval
from minijit.tree_util import tree_flatten, tree_leaves, tree_map

BACKENDS = backends.DISTINCT_BACKENDS

# Relative and absolute tolerance per (least precise) float dtype compared.
_TOLERANCE = {
    np.dtype("float16"): 2e-3,
    np.dtype("float32"): 2e-6,
    np.dtype("float64"): 1e-12,
}

ids = [p.name for p in PROGRAMS]


def _reference(prog: Program, args) -> tuple[list, object]:
    with np.errstate(all="ignore"):
        out = prog.numpy_fn()(*args)
    leaves, tree = tree_flatten(out)
    return [np.asarray(leaf) for leaf in leaves], tree


def _dynamic_leaves(prog: Program, args) -> list:
    return tree_leaves(tuple(a for i, a in enumerate(args) if i not in prog.static_argnums))


def _assert_unchanged(args, snapshot, how: str) -> None:
    """Running a program never writes into its arguments (buffer reuse must not leak out)."""
    for k, (a, before) in enumerate(zip(tree_leaves(args), tree_leaves(snapshot))):
        np.testing.assert_array_equal(a, before, err_msg=f"{how} modified argument leaf {k}")


def _copy(args):
    return tree_map(lambda a: np.array(a, copy=True) if isinstance(a, np.ndarray) else a, args)


def _check(prog: Program, got: list, want: list, how: str) -> None:
    assert len(got) == len(want), f"{how}: {len(got)} outputs, NumPy has {len(want)}"
    assert prog.dtypes is None or len(prog.dtypes) == len(want), "fix the catalogue's dtypes"
    expected_dtypes = prog.dtypes or [w.dtype.name for w in want]
    for k, (g, w, dt) in enumerate(zip(got, want, expected_dtypes)):
        where = f"{prog.name} output {k} ({how})"
        assert isinstance(g, np.ndarray), f"{where}: got a {type(g).__name__}, not an array"
        assert g.shape == w.shape, f"{where}: shape {g.shape}, NumPy gives {w.shape}"
        assert g.dtype == np.dtype(dt), f"{where}: dtype {g.dtype}, expected {dt}"
        if w.dtype.kind == "f" or g.dtype.kind == "f":
            floats = [d for d in (g.dtype, w.dtype) if d.kind == "f"]
            tol = max(_TOLERANCE[d] for d in floats)
            np.testing.assert_allclose(g, w, rtol=tol, atol=tol, err_msg=where)
            # The sign of an exact zero matters (1 / -0.0 is -inf): rewrites must keep it.
            zeros = (g == 0) & (w == 0)
            np.testing.assert_array_equal(np.signbit(g[zeros]), np.signbit(w[zeros]),
                                          err_msg=f"{where}: sign of zero")
        else:
            # where minijit's dtype deliberately differs (JAX's), NumPy's values in that dtype
            want_exact = w.astype(dt) if prog.dtypes is not None else w
            np.testing.assert_array_equal(g, want_exact, err_msg=where, strict=True)


def test_catalogue_is_big_and_names_are_unique():
    assert len(PROGRAMS) >= 45
    assert len({p.name for p in PROGRAMS}) == len(PROGRAMS)


@pytest.mark.parametrize("prog", PROGRAMS, ids=ids)
def test_eager(prog: Program):
    """`minijit.numpy` outside any trace computes on NumPy and returns `mj.Array`s."""
    args = prog.make_args()
    want, want_tree = _reference(prog, args)
    # Eager arrays are `mj.Array`s (as returned by jit), so `x.at[...]` works on them.
    args = tree_map(lambda a: wrap(a) if isinstance(a, np.ndarray) else a, args)
    with np.errstate(all="ignore"):
        out = prog.minijit_fn()(*args)
    got, got_tree = tree_flatten(out)
    assert got_tree == want_tree
    _check(prog, [np.asarray(g) if not isinstance(g, np.ndarray) else g for g in got], want,
           "eager")


@pytest.mark.parametrize("prog", PROGRAMS, ids=ids)
def test_eager_agrees_with_traced(prog: Program):
    """Eager evaluation is the bottom of the trace stack: the same primitives in the same
    order, so each eager output has exactly the traced output's type (weak type included) and,
    bit for bit, the value `eval_jaxpr` computes from the jaxpr."""
    args = prog.make_args()
    eager_args = tree_map(lambda a: wrap(a) if isinstance(a, np.ndarray) else a, args)
    with np.errstate(all="ignore"):
        eager = tree_leaves(prog.minijit_fn()(*eager_args))
    closed = mj.make_jaxpr(prog.minijit_fn(), static_argnums=prog.static_argnums)(*args)
    traced = mj.eval_jaxpr(closed.jaxpr, closed.consts, *_dynamic_leaves(prog, args))
    assert len(eager) == len(closed.out_avals)
    for k, (e, aval, t) in enumerate(zip(eager, closed.out_avals, traced)):
        where = f"{prog.name} output {k}"
        e_aval = get_aval(e)
        assert (e_aval.shape, e_aval.dtype, e_aval.weak_type) == (
            aval.shape, aval.dtype, aval.weak_type), f"{where}: eager {e_aval!r}, traced {aval!r}"
        np.testing.assert_array_equal(np.asarray(e), t, err_msg=where, strict=True)
        assert np.array_equal(np.signbit(np.asarray(e)), np.signbit(t)), f"{where}: signs"


@pytest.mark.parametrize("prog", PROGRAMS, ids=ids)
def test_eval_jaxpr(prog: Program):
    args = prog.make_args()
    want, _ = _reference(prog, args)
    snapshot = _copy(args)
    closed = mj.make_jaxpr(prog.minijit_fn(), static_argnums=prog.static_argnums)(*args)
    got = mj.eval_jaxpr(closed.jaxpr, closed.consts, *_dynamic_leaves(prog, args))
    _check(prog, got, want, "eval_jaxpr")
    _assert_unchanged(args, snapshot, "eval_jaxpr")
    # The Jaxpr's declared output types are what evaluation produced.
    assert [str(a.strip_weak_type()) for a in closed.out_avals] == [
        mj.ShapedArray(g.shape, g.dtype).str_short() for g in got
    ]


@pytest.mark.parametrize("prog", PROGRAMS, ids=ids)
def test_typecheck(prog: Program):
    args = prog.make_args()
    closed = mj.make_jaxpr(prog.minijit_fn(), static_argnums=prog.static_argnums)(*args)
    mj.typecheck_jaxpr(closed.jaxpr)
    assert len(closed.consts) == len(closed.jaxpr.constvars)
    assert len(closed.jaxpr.invars) == len(_dynamic_leaves(prog, args))


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("prog", PROGRAMS, ids=ids)
def test_jit(prog: Program, backend: str):
    args = prog.make_args()
    want, want_tree = _reference(prog, args)
    snapshot = _copy(args)
    jf = mj.jit(prog.minijit_fn(), static_argnums=prog.static_argnums, backend=backend)
    out = jf(*args)
    got, got_tree = tree_flatten(out)
    assert got_tree == want_tree
    _check(prog, got, want, f"jit[{backend}]")
    _assert_unchanged(args, snapshot, f"jit[{backend}]")
    assert all(isinstance(g, mj.Array) for g in got)
    # A second call with fresh values of the same types hits the cache, and agrees too.
    args2 = prog.make_args(seed=1)
    want2, _ = _reference(prog, args2)
    got2 = tree_leaves(jf(*args2))
    _check(prog, got2, want2, f"jit[{backend}], second call")
    # ... and the first call's results are still intact (not overwritten by the second).
    _check(prog, got, want, f"jit[{backend}], first results after a second call")
    assert jf.trace_count == 1
    assert jf._cache_size() == 1
