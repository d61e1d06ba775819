"""A learner's traceback shows their own frames only (errors.api_boundary).

Each entry of CASES is a bad input to one public entry point: `jit(...)` itself, calling a
jitted function (the cached fast path too), `make_jaxpr`, the AOT stages, `mnp`, `lax`,
`x.at[...]`, `debug` and `disable_jit`. Every one is run three ways and its traceback checked
for frames from inside the minijit package: in this process (the exception's `__traceback__`),
in a plain `python` subprocess (the text `traceback` prints, which is what `sys.excepthook`
shows), and in an IPython shell (the text IPython prints, as in Jupyter).
"""

from __future__ import annotations

import importlib
import inspect
import json
import os
import subprocess
import sys
import threading
import traceback

import numpy as np
import pytest

import minijit as mj
from minijit import errors

PACKAGE_DIR = os.path.dirname(os.path.abspath(mj.__file__))

# The learner's code that every case may use. Cases run on the interpreter unless they say
# backend="numba".
PRELUDE = '''\
import functools

import numpy as np

import minijit as mj
import minijit.numpy as mnp
from minijit import lax

mj.config.update("default_backend", "interpreter")
x = np.ones(3)


def f(x, n):
    return x * n


good_example = mj.jit(f, static_argnums=1)


def branchy(x):
    if x.sum() > 0:
        return x
    return -x


leaked = []


def leak(x):
    leaked.append(x)
    return x


mj.jit(leak)(x)


def shout(v):
    raise RuntimeError("a callback failed")


def picky(v):
    if v[0] > 1:
        raise ValueError("too big")


def twice(a):
    return a * 2
'''

# (name, code that raises, the exception's class name)
CASES = [
    # jit(...) itself: options are checked when the function is wrapped
    ("jit_not_callable", "mj.jit(3)", "TypeError"),
    ("jit_static_argnums_out_of_range", "mj.jit(f, static_argnums=5)", "ValueError"),
    ("jit_static_argnums_negative", "mj.jit(f, static_argnums=-3)", "ValueError"),
    ("jit_static_argnums_not_int", "mj.jit(f, static_argnums='n')", "TypeError"),
    ("jit_static_argnames_unknown", "mj.jit(f, static_argnames='m')", "ValueError"),
    ("jit_donate_argnums_out_of_range", "mj.jit(f, donate_argnums=5)", "ValueError"),
    ("jit_donate_argnums_negative", "mj.jit(f, donate_argnums=-3)", "ValueError"),
    ("jit_donate_argnums_not_int", "mj.jit(f, donate_argnums=1.5)", "TypeError"),
    ("jit_static_and_donated", "mj.jit(f, static_argnums=0, donate_argnums=0)", "ValueError"),
    ("jit_unknown_backend", "mj.jit(f, backend='tpu')", "ValueError"),
    ("jit_decorator_form", "@mj.jit(static_argnums=3)\ndef g(a):\n    return a", "ValueError"),
    ("jit_partial_form", "functools.partial(mj.jit, static_argnums=3)(f)", "ValueError"),
    # calling a jitted function: the arguments
    ("static_unhashable", "good_example(x, [1, 2])", "ValueError"),
    ("static_unhashable_by_keyword", "mj.jit(f, static_argnames='n')(x, n={})", "ValueError"),
    ("string_argument", "mj.jit(f)(x, 'two')", "TypeError"),
    ("object_argument", "mj.jit(f)(x, object())", "TypeError"),
    ("string_array_argument", "mj.jit(f)(np.array(['a']), 2)", "TypeError"),
    ("big_endian_argument", "mj.jit(f)(x.astype('>f8'), 2)", "TypeError"),
    ("huge_int_argument", "mj.jit(f)(x, 2**70)", "OverflowError"),
    ("masked_array_argument", "mj.jit(f)(np.ma.masked_array(x), 2)", "TypeError"),
    ("too_many_arguments", "mj.jit(f)(x, 1, 2)", "TypeError"),
    ("missing_argument", "mj.jit(f)(x)", "TypeError"),
    ("unknown_keyword", "mj.jit(f)(x, 1, m=2)", "TypeError"),
    ("leaked_tracer_argument", "mj.jit(f)(leaked[0], 2)", "UnexpectedTracerError"),
    # calling a jitted function: errors while tracing
    ("bool_conversion", "mj.jit(branchy)(x)", "TracerBoolConversionError"),
    ("bool_conversion_numba", "mj.jit(branchy, backend='numba')(x)",
     "TracerBoolConversionError"),
    ("integer_conversion", "mj.jit(lambda a, n: a * len(range(n)))(x, 3)",
     "TracerIntegerConversionError"),
    ("float_conversion", "mj.jit(lambda a: float(a[0]))(x)", "ConcretizationTypeError"),
    ("numpy_function_on_tracer", "mj.jit(lambda a: np.sin(a))(x)",
     "TracerArrayConversionError"),
    ("leaked_tracer_in_closure", "mj.jit(lambda a: a + leaked[0])(x)", "UnexpectedTracerError"),
    ("setitem_inside_jit", "def g(a):\n    a[0] = 1.0\n    return a\nmj.jit(g)(x)", "TypeError"),
    ("broadcast_error_inside_jit", "mj.jit(lambda a: a + mnp.ones(4))(x)", "TypeError"),
    ("returns_a_string", "mj.jit(lambda a: 'done')(x)", "TypeError"),
    ("learner_error_inside_jit", "mj.jit(lambda a: {}['missing'])(x)", "KeyError"),
    ("unsupported_index_inside_jit", "mj.jit(lambda a: a[np.array([0, 1])])(x)", "IndexError"),
    ("list_index_inside_jit", "mj.jit(lambda a: a[[0, 1]])(x)", "TypeError"),
    ("float_index_inside_jit", "mj.jit(lambda a: a[1.5])(x)", "TypeError"),
    ("nested_jit_error", "inner = mj.jit(branchy)\nmj.jit(lambda a: inner(a) * 2)(x)",
     "TracerBoolConversionError"),
    # calling a jitted function: errors while running, on the cached fast path too
    # (the interpreter wraps a failing equation in an EvalError naming it; Numba does not)
    ("callback_raises", "mj.jit(lambda a: (mj.debug.callback(shout, a), a)[1])(x)",
     "EvalError"),
    ("callback_raises_on_the_fast_path",
     "g = mj.jit(lambda a: (mj.debug.callback(picky, a), a)[1])\ng(x)\ng(x * 5)", "EvalError"),
    ("callback_raises_on_the_numba_fast_path",
     "g = mj.jit(lambda a: (mj.debug.callback(picky, a), a)[1], backend='numba')\n"
     "g(x)\ng(x * 5)", "ValueError"),
    ("big_endian_after_a_warm_call_numba",
     "g = mj.jit(twice, backend='numba')\ng(x)\ng(x.astype('>f8'))", "TypeError"),
    ("big_endian_after_a_warm_call",
     "g = mj.jit(twice)\ng(x)\ng(x.astype('>f8'))", "TypeError"),
    # a format that does not fit its arguments fails while tracing, as in JAX
    ("debug_print_bad_format", "mj.jit(lambda a: (mj.debug.print('{y}', x=a), a)[1])(x)",
     "KeyError"),
    ("debug_print_bad_format_numba",
     "mj.jit(lambda a: (mj.debug.print('{y}', x=a), a)[1], backend='numba')(x)", "KeyError"),
    # disable_jit: the function runs eagerly
    ("disable_jit_mnp_error",
     "with mj.disable_jit():\n    mj.jit(lambda a: mnp.reshape(a, (4,)))(x)", "TypeError"),
    ("disable_jit_at_error",
     "with mj.disable_jit():\n    mj.jit(lambda a: a.at[1, 2].set(0.0))(x)", "IndexError"),
    ("disable_jit_learner_error",
     "with mj.disable_jit():\n    mj.jit(lambda a: {}['missing'])(x)", "KeyError"),
    # make_jaxpr
    ("make_jaxpr_bad_static_argnums", "mj.make_jaxpr(f, static_argnums=9)", "ValueError"),
    ("make_jaxpr_string_argument", "mj.make_jaxpr(f)(x, 'two')", "TypeError"),
    ("make_jaxpr_bool_conversion", "mj.make_jaxpr(branchy)(x)", "TracerBoolConversionError"),
    ("make_jaxpr_unhashable_static", "mj.make_jaxpr(f, static_argnums=1)(x, [1])",
     "ValueError"),
    # the AOT stages
    ("trace_string_argument", "mj.jit(f).trace(x, 'two')", "TypeError"),
    ("lower_bool_conversion", "mj.jit(branchy).lower(x)", "TracerBoolConversionError"),
    ("compiled_wrong_shape", "c = mj.jit(f).lower(x, 2).compile()\nc(np.ones(4), 2)",
     "TypeError"),
    ("compiled_string_argument", "c = mj.jit(f).lower(x, 2).compile()\nc(x, 'two')",
     "TypeError"),
    ("compiled_numba_wrong_dtype",
     "c = mj.jit(f, backend='numba').lower(x, 2).compile()\nc(np.ones(3, np.int64), 2)",
     "TypeError"),
    # minijit.numpy, eagerly
    ("mnp_broadcast_error", "mnp.add(np.ones(3), np.ones(4))", "TypeError"),
    ("mnp_reshape_error", "mnp.reshape(np.ones(6), (4,))", "TypeError"),
    ("mnp_sum_bad_axis", "mnp.sum(x, axis=3)", "AxisError"),
    ("mnp_asarray_string", "mnp.asarray('abc')", "TypeError"),
    ("mnp_concatenate_ranks", "mnp.concatenate([np.ones(3), np.ones((2, 2))])", "TypeError"),
    ("mnp_matmul_shapes", "mnp.matmul(np.ones((2, 3)), np.ones((2, 3)))", "TypeError"),
    ("mnp_huge_int", "mnp.add(2**70, 1)", "OverflowError"),
    ("at_too_many_indices", "mnp.asarray(x).at[1, 2].set(0.0)", "IndexError"),
    ("at_get_too_many_indices", "mnp.asarray(x).at[1, 2].get()", "IndexError"),
    ("leaked_tracer_used_eagerly", "leaked[0] + 1", "UnexpectedTracerError"),
    # minijit.lax, eagerly
    ("lax_add_dtypes", "lax.add(np.ones(3), np.ones(3, np.int64))", "TypeError"),
    ("lax_add_shapes", "lax.add(np.ones(3), np.ones(4))", "TypeError"),
    ("lax_cond_branch_types", "lax.cond(True, lambda a: a, lambda a: a[:2], x)", "TypeError"),
    ("lax_cond_branch_raises", "lax.cond(True, lambda a: {}['missing'], lambda a: a, x)",
     "KeyError"),
    ("lax_while_loop_carry", "lax.while_loop(lambda c: c[0] < 3, lambda c: c[:2], x)",
     "TypeError"),
    ("lax_fori_loop_not_callable", "lax.fori_loop(0, 3, 5, x)", "TypeError"),
    ("lax_dynamic_slice_too_big", "lax.dynamic_slice(x, [0], [5])", "TypeError"),
    # debug, eagerly
    ("debug_print_eagerly", "mj.debug.print('{y}', x=x)", "KeyError"),
    ("debug_callback_eagerly", "mj.debug.callback(shout, x)", "RuntimeError"),
    # last: after any donation every call takes the slow path (jit._donated_any)
    ("donated_array_reused",
     "g = mj.jit(twice, donate_argnums=0)\ny = np.ones(3)\ng(y)\ng(y)", "RuntimeError"),
]

IDS = [c[0] for c in CASES]


def _run_case(code: str, namespace: dict) -> BaseException:
    try:
        exec(compile(code, "<case>", "exec"), namespace)
    except Exception as e:  # noqa: BLE001 - each case raises something
        return e
    raise AssertionError(f"did not raise:\n{code}")


@pytest.fixture(scope="module")
def prelude():
    namespace: dict = {}
    exec(compile(PRELUDE, "<prelude>", "exec"), namespace)
    return namespace


def _internal_frames(tb) -> list[str]:
    return [f"{s.filename}:{s.lineno} ({s.name})" for s in traceback.extract_tb(tb)
            if os.path.abspath(s.filename).startswith(PACKAGE_DIR + os.sep)]


@pytest.fixture
def fast_path(monkeypatch):
    """A donation earlier in the session turns jit's fast path off for good; the cases that
    raise on it need it on."""
    monkeypatch.setattr(importlib.import_module("minijit.jit"), "_donated_any", [False])


@pytest.mark.parametrize("name, code, cls", CASES, ids=IDS)
def test_in_process_traceback_has_no_minijit_frames(prelude, fast_path, name, code, cls):
    e = _run_case(code, dict(prelude))
    assert type(e).__name__ == cls, f"{name}: {type(e).__name__}: {e}"
    chain, seen = [], e
    while seen is not None:  # chained exceptions are printed too
        chain.append(seen)
        seen = seen.__cause__ or (None if seen.__suppress_context__ else seen.__context__)
    for link in chain:
        assert not _internal_frames(link.__traceback__), (name, _internal_frames(
            link.__traceback__))
    assert "Numba" not in str(e) and "nopython" not in str(e), str(e)


# --------------------------------------------------------------------------- subprocesses

_PLAIN_RUNNER = '''
import json, sys, traceback
cases = json.load(open(sys.argv[1]))
prelude = open(sys.argv[2]).read()
namespace = {}
exec(compile(prelude, sys.argv[2], "exec"), namespace)
out = {}
for name, path in cases:
    try:
        exec(compile(open(path).read(), path, "exec"), dict(namespace))
    except Exception as e:
        out[name] = [type(e).__name__, "".join(traceback.format_exception(e))]
    else:
        out[name] = ["<no error>", ""]
print(json.dumps(out))
'''

_IPYTHON_RUNNER = '''
import contextlib, io, json, sys
from IPython.core.interactiveshell import InteractiveShell
shell = InteractiveShell.instance(colors="nocolor")
cases = json.load(open(sys.argv[1]))
shell.run_cell(open(sys.argv[2]).read())
out = {}
for name, path in cases:
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf), contextlib.redirect_stderr(buf):
        result = shell.run_cell(open(path).read())
    err = result.error_in_exec
    out[name] = [type(err).__name__ if err else "<no error>", buf.getvalue()]
sys.__stdout__.write(json.dumps(out))
'''


def _run_all(tmp_path, runner: str, argv0: list[str]) -> dict:
    paths = []
    for name, code, _ in CASES:
        p = tmp_path / f"case_{name}.py"
        p.write_text(code + "\n")
        paths.append([name, str(p)])
    (tmp_path / "cases.json").write_text(json.dumps(paths))
    (tmp_path / "prelude.py").write_text(PRELUDE)
    (tmp_path / "runner.py").write_text(runner)
    env = dict(os.environ, PYTHONPATH=os.path.dirname(PACKAGE_DIR))
    proc = subprocess.run([*argv0, str(tmp_path / "runner.py"), str(tmp_path / "cases.json"),
                           str(tmp_path / "prelude.py")], capture_output=True, text=True,
                          env=env, cwd=tmp_path, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _check_printed(results: dict, shell: str) -> None:
    bad = []
    for name, _, cls in CASES:
        got, text = results[name]
        if got != cls:
            bad.append(f"{name}: expected {cls}, got {got}\n{text}")
        elif PACKAGE_DIR + os.sep in text:
            bad.append(f"{name} shows minijit's frames under {shell}:\n{text}")
        elif "Traceback" not in text and shell == "python":
            bad.append(f"{name}: no traceback printed:\n{text}")
    assert not bad, "\n\n".join(bad)


def test_plain_python_tracebacks_show_only_the_learners_frames(tmp_path):
    _check_printed(_run_all(tmp_path, _PLAIN_RUNNER, [sys.executable]), "python")


def test_ipython_tracebacks_show_only_the_learners_frames(tmp_path):
    pytest.importorskip("IPython")
    _check_printed(_run_all(tmp_path, _IPYTHON_RUNNER, [sys.executable]), "IPython")


_ISSUE_EXAMPLE = '''\
import numpy as np
import minijit as mj


def f(x, n):
    return x * n


good_example = mj.jit(f, static_argnums=1)
good_example(np.ones(3), [1, 2])
'''


def _uncaught(tmp_path, argv: list[str]) -> str:
    script = tmp_path / "example.py"
    script.write_text(_ISSUE_EXAMPLE)
    env = dict(os.environ, PYTHONPATH=os.path.dirname(PACKAGE_DIR))
    proc = subprocess.run([*argv, str(script)], capture_output=True, text=True, env=env,
                          cwd=tmp_path, timeout=300)
    return proc.stdout + proc.stderr


def test_uncaught_error_in_a_script_shows_the_learners_line_only(tmp_path):
    """The issue's example, printed by Python's own sys.excepthook."""
    text = _uncaught(tmp_path, [sys.executable])
    assert "good_example(np.ones(3), [1, 2])" in text
    assert "ValueError: Non-hashable static arguments" in text
    assert PACKAGE_DIR not in text, text
    assert "traceback_filtering" in text  # the note says how to see everything


def test_uncaught_error_in_ipython_shows_the_learners_line_only(tmp_path):
    pytest.importorskip("IPython")
    text = _uncaught(tmp_path, [sys.executable, "-m", "IPython", "--colors=nocolor",
                                "--no-banner", "--quick"])
    assert "good_example(np.ones(3), [1, 2])" in text, text
    assert "Non-hashable static arguments" in text
    assert PACKAGE_DIR not in text, text


# --------------------------------------------------------------------------- the mechanism


@pytest.mark.parametrize("backend", ["interpreter", "numba"])
def test_an_error_on_the_fast_path_is_filtered(prelude, fast_path, monkeypatch, backend):
    namespace = dict(prelude)
    exec(f"g = mj.jit(lambda a: (mj.debug.callback(picky, a), a)[1], backend={backend!r})\n"
         "g(x)", namespace)
    g = namespace["g"]
    assert g._cache.fast

    def no_slow_path(*args):
        raise AssertionError("took the slow path")

    monkeypatch.setattr(type(g), "_call", no_slow_path)
    e = _run_case("g(x * 5)", namespace)
    assert "too big" in str(e) and not _internal_frames(e.__traceback__)


def test_filtering_off_shows_minijit_frames(prelude):
    with mj.config.override("traceback_filtering", False):
        e = _run_case("good_example(x, [1, 2])", dict(prelude))
    assert _internal_frames(e.__traceback__), "the full traceback is there for debugging"
    assert errors._HIDDEN_NOTE not in getattr(e, "__notes__", [])


def test_filtered_traceback_keeps_the_learners_frames_in_order(prelude):
    e = _run_case("mj.jit(branchy)(x)", dict(prelude))
    names = [s.name for s in traceback.extract_tb(e.__traceback__)]
    # this file's exec, the case's call, then the `if` in branchy: nothing in between
    assert names == ["_run_case", "<module>", "branchy"], names
    assert sum(n == errors._HIDDEN_NOTE for n in getattr(e, "__notes__", [])) == 1


def test_a_boundary_around_learner_code_keeps_all_of_it():
    @errors.api_boundary
    def plain():
        raise KeyError("k")

    with pytest.raises(KeyError) as info:
        plain()
    names = [s.name for s in traceback.extract_tb(info.value.__traceback__)]
    assert names[-1:] == ["plain"] and not _internal_frames(info.value.__traceback__)


def test_a_boundary_in_another_thread_does_not_stop_filtering_here(prelude):
    """Boundaries are found on this thread's stack, not counted in a global."""
    entered, release = threading.Event(), threading.Event()

    def wait(a):
        entered.set()
        release.wait(10)
        return a

    worker = threading.Thread(target=lambda: mj.jit(
        lambda a: mj.debug.callback(wait, a))(np.ones(1)))
    worker.start()
    try:
        assert entered.wait(10)
        e = _run_case("good_example(x, [1, 2])", dict(prelude))
    finally:
        release.set()
        worker.join(10)
    assert not _internal_frames(e.__traceback__)


def test_public_functions_keep_their_names_and_identity():
    import minijit.numpy as mnp
    from minijit import lax

    assert mnp.divide is mnp.true_divide and mnp.amax is mnp.max
    assert mnp.sum.__name__ == "sum" and lax.cond.__name__ == "cond"
    assert list(inspect.signature(mnp.sum).parameters)[:2] == ["x", "axis"]
    assert "api_boundaries" not in lax.__all__
