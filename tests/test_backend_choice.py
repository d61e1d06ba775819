"""`backend="auto"`, `jit`'s default: which programs go to LLVM and which to Numba, and why
(`minijit/backend_choice.py`).

The two backends it chooses between are each held to `eval_jaxpr` and NumPy on the whole
catalogue (test_catalogue.py and the other differential tests run `DISTINCT_BACKENDS`); here
each rule of the choice is tested on the smallest program that shows it, at its boundary, and
the choice for every catalogue program is pinned, so that no program moves quietly.
"""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
from catalogue import PROGRAMS
from test_llvm import COMPILED_BY_LLVM

import minijit as mj
import minijit.numpy as mnp
from minijit import build, lax
from minijit.backend_choice import LONG_RUNNING_AT, numba_reason
from minijit.codegen import NumbaExecutable
from minijit.interpret import eval_jaxpr
from minijit.llvm import LLVMExecutable

# Catalogue programs LLVM compiles that still go to Numba: a window in a loop.
WINDOWS_IN_LOOPS = {"carries_in_place"}


def _executable(jf, *args):
    jf(*args)
    (entry,) = jf.cache_entries()
    return entry.executable


def _auto(fn, *args, **options):
    """The executable `jit`'s default gives `fn` on `args`, after checking its values
    against `eval_jaxpr` of the same optimized program."""
    jf = mj.jit(fn, backend="auto", **options)
    lowered = jf.lower(*args)
    want = eval_jaxpr(lowered.jaxpr.jaxpr, lowered.jaxpr.consts, *args)
    got = jf(*[np.array(a) for a in args])  # copies: a donated argument is consumed
    for g, w in zip(got if isinstance(got, tuple | list) else [got], want):
        np.testing.assert_allclose(np.asarray(g), w, rtol=1e-12)
    (entry,) = jf.cache_entries()
    return entry.executable


def test_the_library_default_backend_is_auto():
    out = subprocess.run([sys.executable, "-c", "import minijit; print(minijit.config."
                          "default_backend, minijit.jit(lambda x: x).backend.name)"],
                         capture_output=True, text=True, check=True).stdout.split()
    assert out == ["auto", "auto"]


def test_long_running_is_where_the_numba_backend_threads():
    from minijit.codegen.lower import Lowering

    assert LONG_RUNNING_AT == Lowering.PARALLEL_AT


@pytest.mark.parametrize("prog", PROGRAMS, ids=[p.name for p in PROGRAMS])
def test_the_choice_for_each_catalogue_program(prog):
    """Every catalogue program LLVM compiles stays there (none is large, none donates), but
    those with a window in a loop."""
    args = prog.make_args()
    jf = mj.jit(prog.minijit_fn(), static_argnums=prog.static_argnums, backend="auto")
    lowered = jf.lower(*args)
    reason = numba_reason(lowered.jaxpr, tuple(lowered.traced.split.donated), jf.parallel)
    if prog.name in WINDOWS_IN_LOOPS:
        assert reason is not None and " in a loop, which the LLVM backend copies" in reason
        assert prog.name in COMPILED_BY_LLVM
    elif prog.name in COMPILED_BY_LLVM:
        assert reason is None, reason


@pytest.mark.parametrize("name", ["softmax", "while_loop", "matmul_2d", "at_traced[2]",
                                  "carries_in_place"])
def test_catalogue_programs_run_where_they_were_sent(name):
    (prog,) = [p for p in PROGRAMS if p.name == name]
    args = prog.make_args()
    # named: the tests' default backend is the interpreter (the library's, "auto": above)
    jf = mj.jit(prog.minijit_fn(), static_argnums=prog.static_argnums, backend="auto")
    executable = _executable(jf, *args)
    on_llvm = name in COMPILED_BY_LLVM and name not in WINDOWS_IN_LOOPS
    assert isinstance(executable, LLVMExecutable) == on_llvm, executable.llvm_declined
    assert (executable.llvm_declined is None) == on_llvm
    assert jf.lower(*args).as_text() == executable.as_text()


def test_a_small_program_compiles_on_llvm():
    executable = _auto(lambda x: x * 2.0 + 1.0, np.linspace(0, 1, 8))
    assert isinstance(executable, LLVMExecutable)
    assert executable.llvm_declined is None
    assert "define i8* @\"entry\"" in executable.as_text()


@pytest.mark.parametrize("n", [LONG_RUNNING_AT - 1, LONG_RUNNING_AT])
def test_a_large_argument_goes_to_numba(n):
    executable = _auto(lambda x: x * 2.0 + 1.0, np.linspace(0, 1, n))
    if n < LONG_RUNNING_AT:
        assert isinstance(executable, LLVMExecutable)
    else:
        assert isinstance(executable, NumbaExecutable)
        assert executable.llvm_declined.startswith("f64[65536] has 65,536 elements")


def test_a_large_value_inside_goes_to_numba():
    """Small arguments and results, a large value in between: named with its equation."""
    def f(x):
        return mnp.sum(mnp.broadcast_to(x[0], (256, 256)) * 2.0)

    executable = _auto(f, np.ones(3))
    assert isinstance(executable, NumbaExecutable)
    assert "f64[256,256] has 65,536 elements" in executable.llvm_declined
    assert " in `" in executable.llvm_declined


def test_a_large_captured_constant_goes_to_numba():
    table = np.arange(float(LONG_RUNNING_AT))
    executable = _auto(lambda i: mnp.asarray(table)[i] * 2.0, np.array(5))
    assert isinstance(executable, NumbaExecutable)
    assert "65,536 elements" in executable.llvm_declined


def test_vector_math_goes_to_numba_only_where_llvm_lacks_it():
    """exp, log, tanh, ... are on both backends (`llvm/vecmath.py`); sin, cos and erf of
    vector math ("all") only on Numba's. (A function's compiles are kept across `jit`
    objects, so each setting compiles a function of its own.)"""
    x = np.linspace(-2, 2, 100)

    def gelu(v):
        return 0.5 * v * (1.0 + mnp.tanh(0.8 * v))

    assert isinstance(_auto(gelu, x), LLVMExecutable)
    assert isinstance(_auto(mnp.exp, np.arange(4)), LLVMExecutable)  # exp of int64 -> f64
    assert isinstance(_auto(mnp.sin, x), LLVMExecutable)  # libm's sin on both by default
    with mj.config.override("vector_math", "all"):
        executable = _auto(lambda v: mnp.sin(v), x)
        assert isinstance(_auto(lambda v: gelu(v), x), LLVMExecutable)
    assert isinstance(executable, NumbaExecutable)
    assert "vectorized sin (codegen/vecmath), which the LLVM backend does not have" in \
        executable.llvm_declined
    with mj.config.override("vector_math", False):  # the C library's on both
        assert isinstance(_auto(lambda v: mnp.sin(v) + 1.0, x), LLVMExecutable)


def test_a_window_in_a_loop_goes_to_numba():
    u = np.zeros(8)

    def fill(u):
        return lax.fori_loop(0, 8, lambda i, v: v.at[i].set(i * 1.0), u)

    executable = _auto(fill, u)
    assert isinstance(executable, NumbaExecutable)
    assert executable.llvm_declined.startswith("a dynamic_update_slice in a loop")

    def smooth(u):  # a while loop over slices and a concatenation, as Jacobi's
        def step(s):
            k, v = s
            return k + 1, mnp.concatenate([v[:1], 0.5 * (v[:-2] + v[2:]), v[-1:]])
        return lax.while_loop(lambda s: s[0] < 3, step, (0, u))[1]

    executable = _auto(smooth, np.linspace(0, 1, 8))
    assert isinstance(executable, NumbaExecutable)
    assert executable.llvm_declined.startswith("a slice in a loop")


def test_windows_outside_loops_and_one_element_reads_stay_on_llvm():
    x = np.linspace(0, 1, 8)
    assert isinstance(_auto(lambda u: u.at[2].set(5.0), x), LLVMExecutable)
    assert isinstance(_auto(lambda u: mnp.concatenate([u[:3], u[5:]]) * 2.0, x), LLVMExecutable)

    def read_each(u):  # u[i] in a loop copies one element: no cost
        return lax.fori_loop(0, 8, lambda i, s: s + u[i], 0.0)

    assert isinstance(_auto(read_each, x), LLVMExecutable)

    def sliced_in_cond(u):  # a cond is no loop: its branch runs once
        return lax.cond(u[0] > 0, lambda v: v[1:] * 2.0, lambda v: v[:-1], u)

    assert isinstance(_auto(sliced_in_cond, x), LLVMExecutable)


def test_threads_and_donation_go_to_numba():
    x = np.linspace(0, 1, 8)
    executable = _auto(lambda v: v + 1.0, x, parallel=True)
    assert isinstance(executable, NumbaExecutable)
    assert "parallel=True" in executable.llvm_declined
    assert isinstance(_auto(lambda v: v + 1.0, x, parallel=False), LLVMExecutable)
    executable = _auto(lambda v: v + 1.0, x, donate_argnums=0)
    assert isinstance(executable, NumbaExecutable)
    assert "donated" in executable.llvm_declined


def test_what_llvm_declines_goes_to_numba_with_llvms_reason():
    a = np.ones((3, 3))
    executable = _auto(lambda p, q: p @ q, a, a)
    assert isinstance(executable, NumbaExecutable)
    assert "the primitive dot_general, in `" in executable.llvm_declined


def test_the_choice_is_made_per_shape():
    jf = mj.jit(lambda x: x * 2.0, backend="auto")
    jf(np.ones(8))
    jf(np.ones(LONG_RUNNING_AT))
    kinds = sorted(type(e.executable).__name__ for e in jf.cache_entries())
    assert kinds == ["LLVMExecutable", "NumbaExecutable"]


@pytest.mark.usefixtures("minijits_own_pieces")
def test_a_learners_loop_nest_in_use_sends_everything_to_numba():
    """The learner's `loop_nest` (chapter 09) runs only where the Numba backend writes loops:
    while it is switched in, `jit`'s default runs their code."""
    closed = mj.make_jaxpr(lambda v: v * 3.0)(np.ones(8))
    assert numba_reason(closed) is None
    build.use("loop_nest", lambda shape, operands: ([], []), verify=False)  # never called
    assert "your loop_nest" in numba_reason(closed)
    build.reset("loop_nest")
    assert numba_reason(closed) is None


def test_as_text_shows_what_the_choice_runs():
    x = np.linspace(0, 1, 8)
    assert "define i8* @\"entry\"" in mj.jit(mnp.sin, backend="auto").lower(x).as_text()
    text = mj.jit(lambda v: v @ v, backend="auto").lower(x).as_text()  # LLVM has no dot
    assert text.startswith("# minijit: generated code") and "define" not in text


def test_a_fault_of_the_llvm_backend_falls_back_to_numba_by_default(monkeypatch):
    """A program the LLVM backend should compile but fails on (a bug) still runs under the
    default, on Numba, with the error kept in `llvm_declined`; `backend="llvm"` raises it."""
    import minijit.llvm

    def broken(*args, **kwargs):
        raise RuntimeError("LLVM IR parsing error")

    monkeypatch.setattr(minijit.llvm, "LLVMExecutable", broken)
    monkeypatch.setattr("minijit.llvm.emit.emit_program", broken)
    x = np.linspace(0, 1, 8)
    executable = _auto(lambda v: v * 5.0, x)
    assert isinstance(executable, NumbaExecutable)
    assert "the LLVM backend failed on this program (RuntimeError: LLVM IR parsing error)" \
        in executable.llvm_declined
    assert mj.jit(lambda v: v * 5.0, backend="auto").lower(x).as_text().startswith("# minijit")
    with pytest.raises(RuntimeError, match="LLVM IR parsing error"):
        mj.jit(lambda v: v * 6.0, backend="llvm")(x)


def test_very_many_results_go_to_numba():
    """Numba rolls repeated results into one loop; the LLVM backend's compile grows faster."""
    from minijit.backend_choice import MANY_RESULTS

    def results(k):
        return lambda v: [v * (1.0 + j / k) + j for j in range(k)]

    x = np.linspace(0, 1, 4)
    for k, on_llvm in ((MANY_RESULTS, True), (MANY_RESULTS + 1, False)):
        closed = mj.make_jaxpr(results(k))(x)
        reason = numba_reason(closed)
        assert (reason is None) == on_llvm, reason
    assert numba_reason(mj.make_jaxpr(results(MANY_RESULTS + 1))(x)).startswith("513 results")
