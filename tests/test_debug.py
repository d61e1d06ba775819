"""Side effects and debugging (chapter 06): `debug.print`, `debug.callback`, tracer leaks,
`disable_jit`, compile logs and cache-miss explanations, and the per-entry profile.

The central fact: Python code in a jitted function runs while tracing (once per cache miss),
while a staged side effect (`debug.print`, `debug.callback`) runs every time the compiled
program runs, with real values, and only where control flow actually goes.
"""

from __future__ import annotations

import logging

import matplotlib
import numpy as np
import pytest

import minijit as mj
import minijit.numpy as mnp
import minijit.profile
from minijit import backends, lax
from minijit.config import config
from minijit.errors import UnexpectedTracerError

BACKENDS = backends.DISTINCT_BACKENDS


@pytest.fixture(autouse=True)
def _restore_config():
    saved = dict(config._values)
    yield
    config._values.clear()
    config._values.update(saved)
    config._refresh()


def _lines(capsys) -> list[str]:
    return capsys.readouterr().out.splitlines()


# --------------------------------------------------------------------------- print vs debug.print


@pytest.mark.parametrize("backend", BACKENDS)
def test_python_print_runs_per_trace_debug_print_per_call(capsys, backend):
    @mj.jit(backend=backend)
    def f(x):
        print("python:", x)
        mj.debug.print("debug: {x}", x=x)
        return x * 2.0

    for _ in range(3):
        f(np.array([1.0, 2.0]))
    f(np.array([1.0, 2.0, 3.0]))  # a new shape: one more trace
    out = _lines(capsys)
    python = [line for line in out if line.startswith("python:")]
    debug = [line for line in out if line.startswith("debug:")]
    assert len(python) == 2 == f.trace_count
    assert all("Traced<" in line for line in python)  # it saw a tracer, not values
    assert debug == ["debug: [1. 2.]"] * 3 + ["debug: [1. 2. 3.]"]


def test_debug_print_positional_and_format_spec(capsys):
    @mj.jit
    def f(x, y):
        mj.debug.print("{} and {y:.2f}", x, y=y)
        return x + y

    f(np.int64(3), np.float64(0.123456))
    assert _lines(capsys) == ["3 and 0.12"]


def test_debug_print_is_staged_and_kept():
    def f(x):
        mj.debug.print("x={x}", x=x)
        return x + 1.0

    closed = mj.make_jaxpr(f)(np.ones(2))
    (eqn, _) = closed.eqns
    assert eqn.primitive.name == "debug_callback" and eqn.outvars == ()
    assert "debug_callback[callback=print('x={x}')] a" in str(closed)
    # the optimizer keeps it although nothing uses its (empty) output
    assert "debug_callback" in mj.jit(f, backend="interpreter").lower(np.ones(2)).as_text()


def test_debug_print_outside_jit_prints_at_once(capsys):
    mj.debug.print("eager {}", np.arange(3))
    assert _lines(capsys) == ["eager [0 1 2]"]


# Each form with the lines JAX 0.10.2 prints for it (jax_enable_x64), eagerly and under jit.
V = np.arange(3.0)
PRINT_FORMS = [
    (lambda x: mj.debug.print("{} {}", x, 2), np.float64(3.14159), ["3.14159 2"]),
    (lambda x: mj.debug.print("{0} {0}", x), np.float64(3.14159), ["3.14159 3.14159"]),
    (lambda x: mj.debug.print("{x:.3f}", x=x), np.float64(3.14159), ["3.142"]),
    (lambda x: mj.debug.print("{:>8.2e}|", x), np.float64(3.14159), ["3.14e+00|"]),
    (lambda v: mj.debug.print("{}", v), V, ["[0. 1. 2.]"]),
    (lambda v: mj.debug.print("{}", v), np.ones((2, 2)), ["[[1. 1.]", " [1. 1.]]"]),
    (lambda v: mj.debug.print("{!r}", v), V, ["Array([0., 1., 2.], dtype=float64)"]),
    (lambda v: mj.debug.print("{!r}", v), np.ones(2, np.int32),
     ["Array([1, 1], dtype=int32)"]),
    (lambda v: mj.debug.print("{t}", t={"a": v[:1], "b": (v[0] > 0,)}), V,
     ["{'a': Array([0.], dtype=float64), 'b': (Array(False, dtype=bool),)}"]),
    (lambda v: mj.debug.print("x = {} {{literal}}", v[1]), V, ["x = 1.0 {literal}"]),
    # no placeholder first: JAX prints the values after the text, braces and all
    (lambda v: mj.debug.print("{{}} {}", v[1]), V, ["{{}} {} 1.0"]),
    (lambda v: mj.debug.print("{{x}} = {}", v[1]), V, ["{{x}} = {} 1.0"]),
    (lambda v: mj.debug.print("{}", v[2], ordered=True), V, ["2.0"]),
    (lambda v: mj.debug.print(ordered=True)("two-call {}", v[2]), V, ["two-call 2.0"]),
    (lambda v: mj.debug.print("{} {}", "static", v[0]), V, ["static 0.0"]),
    (lambda v: mj.debug.print("values:", v, skip_format_check=True), V,
     ["values: [0. 1. 2.]"]),
]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("form", range(len(PRINT_FORMS)))
def test_debug_print_forms_print_as_jax(capsys, backend, form):
    f, arg, want = PRINT_FORMS[form]
    f(arg)
    assert _lines(capsys) == want
    mj.jit(f, backend=backend)(arg)
    assert _lines(capsys) == want


@pytest.mark.parametrize("backend", BACKENDS)
def test_debug_print_keeps_weak_types_eagerly_only(capsys, backend):
    def f(x):
        mj.debug.print("{!r}", x)

    f(1)  # as JAX: a Python int is a weak int64 eagerly, a plain one in the compiled program
    mj.jit(f, backend=backend)(1)
    assert _lines(capsys) == ["Array(1, dtype=int64, weak_type=True)", "Array(1, dtype=int64)"]


def test_debug_print_uses_numpy_print_options_of_the_call(capsys):
    f = mj.jit(lambda v: mj.debug.print("{}", v / 3), backend="interpreter")
    with np.printoptions(precision=2):
        f(V)
    f(V)  # a cache hit: the options are the ones the program was traced with
    assert _lines(capsys) == ["[0.   0.33 0.67]"] * 2


def test_debug_print_checks_arguments_when_called():
    x = np.float64(1.0)
    with pytest.raises(IndexError, match="tuple index out of range"):  # JAX's errors
        mj.jit(lambda x: mj.debug.print("{} {}", x))(x)
    with pytest.raises(KeyError, match="y"):
        mj.debug.print("{y}", x=x)
    with pytest.raises(ValueError, match="Unused positional arguments to `debug.print`"):
        mj.debug.print("{}", x, x)
    with pytest.raises(ValueError, match="Unused keyword arguments to `debug.print`: \\['x'\\]"
                                         ". You may be passing an f-string"):
        mj.debug.print("{}", 1, x=x)
    with pytest.raises(TypeError, match="first argument must be the format string"):
        mj.debug.print(x)
    with pytest.raises(TypeError, match="unexpected arguments in the two-call form"):
        mj.debug.print(None, x)


@pytest.mark.parametrize("backend", BACKENDS)
def test_debug_callback_receives_concrete_values(backend):
    seen = []

    def record(a, b, *, scale):
        seen.append((a, b, scale))

    @mj.jit(backend=backend)
    def f(x, pair):
        y = mnp.sin(x)
        mj.debug.callback(record, y, pair, scale=x.sum())
        return y

    x = np.array([0.0, 1.0])
    f(x, (np.int32(4), np.ones(3)))
    f(x + 1.0, (np.int32(5), np.zeros(3)))
    assert f.trace_count == 1 and len(seen) == 2
    for (a, (i, v), scale), shift in zip(seen, (0.0, 1.0)):
        assert isinstance(a, np.ndarray) and not isinstance(a, mj.Tracer)
        np.testing.assert_allclose(a, np.sin(x + shift))
        assert i.dtype == np.int32 and v.shape == (3,)
        np.testing.assert_allclose(scale, (x + shift).sum())
    assert int(seen[1][1][0]) == 5


@pytest.mark.parametrize("backend", BACKENDS)
def test_debug_print_in_cond_prints_only_the_branch_taken(capsys, backend):
    def true_fun(x):
        mj.debug.print("true branch {}", x)
        return x + 1.0

    def false_fun(x):
        mj.debug.print("false branch {}", x)
        return x - 1.0

    f = mj.jit(lambda x: lax.cond(x > 0, true_fun, false_fun, x), backend=backend)
    f(2.0)
    f(-3.0)
    f(5.0)
    assert _lines(capsys) == ["true branch 2.0", "false branch -3.0", "true branch 5.0"]


@pytest.mark.parametrize("backend", BACKENDS)
def test_debug_print_in_loops_prints_every_iteration(capsys, backend):
    def body(i, acc):
        mj.debug.print("i={} acc={}", i, acc)
        return acc + i

    f = mj.jit(lambda n: lax.fori_loop(0, n, body, 0), backend=backend)
    assert int(f(4)) == 6
    assert _lines(capsys) == ["i=0 acc=0", "i=1 acc=0", "i=2 acc=1", "i=3 acc=3"]
    f(2)
    assert _lines(capsys) == ["i=0 acc=0", "i=1 acc=0"]

    def wbody(v):
        mj.debug.print("v={}", v)
        return v * 2

    assert int(mj.jit(lambda v: lax.while_loop(lambda v: v < 10, wbody, v),
                      backend=backend)(3)) == 12
    assert _lines(capsys) == ["v=3", "v=6"]

    def step(c, x):
        mj.debug.print("c={} x={}", c, x)
        return c + x, c

    mj.jit(lambda xs: lax.scan(step, 0.0, xs), backend=backend)(np.array([1.0, 2.0]))
    assert _lines(capsys) == ["c=0.0 x=1.0", "c=1.0 x=2.0"]


# --------------------------------------------------------------------------- globals


def test_global_is_baked_in_at_trace_time():
    scale = {"value": 2.0}

    @mj.jit
    def f(x):
        return x * scale["value"]

    assert f(np.ones(2))[0] == 2.0
    scale["value"] = 10.0
    assert f(np.ones(2))[0] == 2.0  # cache hit: the old value is in the Jaxpr
    assert f(np.ones(3))[0] == 10.0  # a new shape retraces and reads the global again


# --------------------------------------------------------------------------- tracer leaks


def test_leaked_tracer_used_later_raises_naming_its_origin():
    leaked = []

    @mj.jit
    def keep(x):
        y = mnp.sin(x)
        leaked.append(y)
        return x

    keep(np.ones(2))  # no check: the leak goes unnoticed here
    with pytest.raises(UnexpectedTracerError) as info:
        leaked[0] + 1.0
    msg = str(info.value)
    assert "`keep`" in msg and "f64[2]" in msg
    assert "test_debug.py" in msg and "(keep)" in msg  # the line that created it
    assert "checking_leaks" in msg
    # Using it inside another trace is caught the same way.
    with pytest.raises(UnexpectedTracerError):
        mj.jit(lambda x: x + leaked[0])(np.ones(2))


def test_leaked_argument_tracer_names_the_argument():
    box = []
    mj.jit(lambda x: box.append(x) or x)(np.ones(3))
    with pytest.raises(UnexpectedTracerError, match="argument `x`"):
        mnp.sum(box[0])


def test_checking_leaks_reports_at_end_of_trace_and_caches_nothing():
    leaked = []

    def store(x):
        leaked.append(x * 2.0)
        return x + 1.0

    jf = mj.jit(store)
    with pytest.raises(UnexpectedTracerError) as info:
        with mj.checking_leaks():
            jf(np.ones(2))
    msg = str(info.value)
    assert "Leaked 1 tracer" in msg and "`store`" in msg and "list" in msg
    assert jf._cache_size() == 0  # a failed trace stores nothing
    assert not config.check_tracer_leaks  # restored after the block

    class Holder:
        pass

    holder = Holder()

    def attr(x):
        holder.value = x
        return x

    with pytest.raises(UnexpectedTracerError, match="Leaked"):
        with mj.checking_leaks():
            mj.jit(attr)(np.ones(2))


def test_checking_leaks_is_quiet_without_a_leak(capsys):
    @mj.jit
    def clean(x):
        print("tracing")  # a tracer in a local variable or a print is not a leak
        y = x * 2.0
        return lax.cond(y.sum() > 0, lambda y: y, lambda y: -y, y)

    with mj.checking_leaks():
        clean(np.ones(2))
    mj.config.update("jax_check_tracer_leaks", True)
    clean(np.ones(5))
    assert clean.trace_count == 2


# --------------------------------------------------------------------------- disable_jit


def _branchy(x):
    print("value:", x)
    if x.sum() > 0:  # Python control flow on a value: fine only without jit
        return x
    return -x


def test_disable_jit_context_manager(capsys):
    jf = mj.jit(_branchy)
    with mj.disable_jit():
        out = jf(np.array([-1.0, -2.0]))
    np.testing.assert_array_equal(out, [1.0, 2.0])
    assert _lines(capsys) == ["value: [-1. -2.]"]
    assert jf.trace_count == 0
    assert not config.disable_jit
    with pytest.raises(mj.errors.TracerBoolConversionError):
        jf(np.array([1.0]))


def test_disable_jit_is_restored_after_an_exception():
    with pytest.raises(ZeroDivisionError):
        with mj.disable_jit():
            1 / 0  # noqa: B018
    assert not config.disable_jit


@pytest.mark.parametrize("name", ["jax_disable_jit", "disable_jit"])
def test_disable_jit_through_config(name, capsys):
    jf = mj.jit(_branchy)
    mj.config.update(name, True)
    assert config.disable_jit
    np.testing.assert_array_equal(jf(np.array([3.0])), [3.0])
    assert _lines(capsys) == ["value: [3.]"]
    mj.config.update(name, False)
    with pytest.raises(mj.errors.TracerBoolConversionError):
        jf(np.array([3.0]))


def test_unknown_config_name_lists_the_options():
    with pytest.raises(AttributeError, match="disable_jit"):
        mj.config.update("jax_enable_x64", True)


# --------------------------------------------------------------------------- counting compiles


def test_log_compiles_and_explain_cache_misses(caplog):
    @mj.jit
    def f(x):
        return x + 1.0

    mj.config.update("jax_log_compiles", True)
    mj.config.update("explain_cache_misses", True)
    with caplog.at_level(logging.WARNING, logger="minijit"):
        f(np.ones(3))
        f(np.ones(3))
        f(np.ones(4))
    messages = [r.getMessage() for r in caplog.records if r.name == "minijit"]
    compiles = [m for m in messages if m.startswith("Compiling f")]
    misses = [m for m in messages if m.startswith("TRACING CACHE MISS")]
    assert len(compiles) == 2 == len(misses) == f.trace_count
    assert "(x: f64[3])" in compiles[0] and "(x: f64[4])" in compiles[1]
    assert "* at x, now f64[4] and before f64[3]" in misses[1]
    assert f.cache_misses[1] == misses[1]


def test_silent_by_default(caplog):
    with caplog.at_level(logging.DEBUG, logger="minijit"):
        mj.jit(lambda x: x * 3.0)(np.ones(2))
    assert not [r for r in caplog.records if r.name == "minijit"]


# --------------------------------------------------------------------------- the profile


def _profiled():
    @mj.jit
    def f(x):
        return mnp.sum(mnp.sin(x) * 2.0)

    with mj.config.override("profile_execution", True):
        for _ in range(3):
            f(np.ones(4))
        f(np.ones(8))
        f(np.ones(4, dtype=np.float32))
        f(np.ones(8))
    return f


def test_profile_has_one_row_per_cache_entry_with_call_counts():
    f = _profiled()
    rows = minijit.profile.profile(f)
    assert len(rows) == f._cache_size() == 3
    assert [r.signature for r in rows] == ["(x: f64[4])", "(x: f64[8])", "(x: f32[4])"]
    assert [r.calls for r in rows] == [3, 2, 1]
    for r in rows:
        assert r.trace_s > 0 and r.execute_s > 0
        assert r.first_call_s >= r.trace_s
        assert r.timed_calls == r.calls
        assert r.per_call_us == pytest.approx(1e6 * r.execute_s / r.calls)
    text = f.profile()
    assert text == minijit.profile.format_profile(f)
    lines = text.splitlines()
    assert len(lines) == 2 + 3 and "calls" in lines[0]
    assert lines[3].startswith("(x: f64[8])") and " 2 " in lines[3]


def test_profile_times_calls_only_while_profiling_is_on():
    f = mj.jit(lambda x: x * 2.0)
    x = np.ones(4)
    f(x)
    f(x)  # the fast path
    (row,) = minijit.profile.profile(f)
    assert row.calls == 2 and row.timed_calls == 0 and row.execute_s == 0.0
    assert row.per_call_us == 0.0
    assert "profile_execution" in f.profile()
    with mj.config.override("profile_execution", True):
        f(x)
        f(x)
    (row,) = minijit.profile.profile(f)
    assert row.calls == 4 and row.timed_calls == 2 and row.execute_s > 0
    assert row.per_call_us == pytest.approx(1e6 * row.execute_s / 2)
    mj.config.update("profile_execution", True)
    try:
        f(x)
    finally:
        mj.config.update("profile_execution", False)
    assert minijit.profile.profile(f)[0].timed_calls == 3


def test_profile_tells_weak_python_scalars_apart():
    f = mj.jit(lambda x, c: x * c)
    for c in (2.0, np.float64(2.0), 2, 3.0):
        f(np.ones(2), c)
    rows = minijit.profile.profile(f)
    assert [r.signature for r in rows] == [
        "(x: f64[2], c: f64[] (weak))", "(x: f64[2], c: f64[])", "(x: f64[2], c: i64[] (weak))"]
    assert [r.calls for r in rows] == [2, 1, 1]


def test_plot_profile_returns_an_axes():
    import matplotlib.pyplot as plt

    assert matplotlib.get_backend().lower() == "agg"
    f = _profiled()
    ax = minijit.profile.plot_profile(f)
    assert isinstance(ax, matplotlib.axes.Axes)
    assert [t.get_text() for t in ax.get_yticklabels()] == [
        "(x: f64[4])", "(x: f64[8])", "(x: f32[4])"]
    assert "f" in ax.get_title()
    _, given = plt.subplots()
    assert minijit.profile.plot_profile(f, ax=given) is given
    plt.close("all")


# --------------------------------------------------------------------------- debug.breakpoint
# The transcripts are JAX 0.10.2's for the same programs (jax.debug.breakpoint, x64).


def _jdb(commands: str):
    """A fake terminal: commands in, what the debugger wrote out."""
    import io

    return io.StringIO(commands), io.StringIO()


def test_breakpoint_signature_is_jax_s():
    import inspect

    assert str(inspect.signature(mj.debug.breakpoint)) == (
        "(*, backend: 'str | None' = None, filter_frames: 'bool' = True, "
        "num_frames: 'int | None' = None, ordered: 'bool' = False, token=None, **kwargs)")


@pytest.mark.parametrize("backend", BACKENDS)
def test_breakpoint_stops_every_run_with_the_locals_values(backend):
    stdin, stdout = _jdb("p y\npp {'a': y}\nx + 1\nzz\nc\n" * 2)

    def f(x):
        y = mnp.sin(x)
        mj.debug.breakpoint(stdin=stdin, stdout=stdout)
        return y * 2

    jf = mj.jit(f, backend=backend)
    np.testing.assert_allclose(jf(np.arange(3.0)), 2 * np.sin(np.arange(3.0)))
    jf(np.ones(3))
    assert jf.trace_count == 1
    assert stdout.getvalue().splitlines() == [
        "Entering jdb:",
        "(jdb) Array([0.        , 0.84147098, 0.90929743], dtype=float64)",
        "(jdb) {'a': Array([0.        , 0.84147098, 0.90929743], dtype=float64)}",
        "(jdb) Array([1., 2., 3.], dtype=float64)",
        "(jdb) *** NameError: name 'zz' is not defined",
        "(jdb) Entering jdb:",
        "(jdb) Array([0.84147098, 0.84147098, 0.84147098], dtype=float64)",
        "(jdb) {'a': Array([0.84147098, 0.84147098, 0.84147098], dtype=float64)}",
        "(jdb) Array([2., 2., 2.], dtype=float64)",
        "(jdb) *** NameError: name 'zz' is not defined",
        "(jdb) ",
    ]


def test_breakpoint_reads_sys_stdin_eagerly_and_under_jit(monkeypatch, capsys):
    import io

    monkeypatch.setattr("sys.stdin", io.StringIO("p x\nc\n" * 3))

    def g(x):
        mj.debug.breakpoint()
        return x

    mj.jit(g)(1.0)
    mj.jit(g)(2.0)
    g(mnp.add(2.5, 2.5))  # eagerly: the values are there already, weak type and all
    assert capsys.readouterr().out.splitlines() == [
        "Entering jdb:", "(jdb) Array(1., dtype=float64)",
        "(jdb) Entering jdb:", "(jdb) Array(2., dtype=float64)",
        "(jdb) Entering jdb:", "(jdb) Array(5., dtype=float64, weak_type=True)", "(jdb) "]


def test_breakpoint_list_where_up_and_down():
    stdin, stdout = _jdb("l\nw\nu\nd\nd\nc\n")

    def f(x):
        y = x * 2
        mj.debug.breakpoint(stdin=stdin, stdout=stdout, num_frames=2)
        return y

    def caller(x):
        return f(x)

    mj.jit(caller, backend="interpreter")(np.ones(1))
    out = stdout.getvalue().splitlines()
    here = "        mj.debug.breakpoint(stdin=stdin, stdout=stdout, num_frames=2)"
    assert out[1].startswith("(jdb) > ") and out[1].endswith(f"test_debug.py({_lineno(here)})")
    assert out[2:6] == ["        def f(x):", "            y = x * 2", "->  " + here,
                        "            return y"]  # the source's indentation, after 4 columns
    start = out.index("(jdb) Traceback:")
    assert out[start + 1].endswith(f"test_debug.py\", line {_lineno('        return f(x)')}")
    assert out[start + 2] == "    return f(x)" and out[start + 4] == "    " + here.strip()
    up = start + 5  # `u` shows the caller, `d` comes back, a second `d` cannot go further
    assert out[up:up + 3] == [f"(jdb) > {__file__}({_lineno('        return f(x)')})",
                              "        def caller(x):", "->          return f(x)"]
    assert out.count("(jdb) At bottommost frame.") == 1


def _lineno(line: str) -> int:
    import pathlib

    return pathlib.Path(__file__).read_text().splitlines().index(line) + 1


@pytest.mark.parametrize("backend", BACKENDS)
def test_breakpoint_in_a_loop_stops_each_iteration(backend):
    stdin, stdout = _jdb("p (i, total)\nc\n" * 3)

    def body(i, total):
        mj.debug.breakpoint(stdin=stdin, stdout=stdout)
        return total + i

    out = mj.jit(lambda n: lax.fori_loop(0, 3, body, n), backend=backend)(np.int64(10))
    assert int(out) == 13
    seen = [line for line in stdout.getvalue().splitlines() if line.startswith("(jdb) (")]
    assert seen == [f"(jdb) (Array({i}, dtype=int64), Array({t}, dtype=int64))"
                    for i, t in [(0, 10), (1, 10), (2, 11)]]


@pytest.mark.parametrize("backend", BACKENDS)
def test_breakpoint_quit_exits_and_token_passes_through(backend):
    stdin, stdout = _jdb("q\n")

    def f(x):
        mj.debug.breakpoint(stdin=stdin, stdout=stdout)
        return x

    with pytest.raises(SystemExit):  # as JAX's `q`
        mj.jit(f, backend=backend)(np.ones(2))

    def g(x):
        return mj.debug.breakpoint(token=x + 1, stdin=_jdb("c\n")[0], stdout=stdout)

    np.testing.assert_array_equal(mj.jit(g, backend=backend)(np.ones(2)), [2.0, 2.0])


def test_breakpoint_errors_and_leaks():
    with pytest.raises(ValueError, match="`ordered` and `token` are mutually exclusive"):
        mj.debug.breakpoint(ordered=True, token=np.ones(1))
    with pytest.raises(ValueError, match="backend='cli'"):
        mj.debug.breakpoint(backend="web")
    with pytest.raises(TypeError, match=r"unexpected keyword arguments \['stdn'\]"):
        mj.debug.breakpoint(stdn=None)
    stdin, stdout = _jdb("c\n")
    with mj.checking_leaks():  # the compiled program keeps no tracer of the frames
        mj.jit(lambda x: (mj.debug.breakpoint(stdin=stdin, stdout=stdout), x + 1)[1])(np.ones(2))
    assert "debug_callback[callback=breakpoint] a" in str(
        mj.make_jaxpr(lambda x: (mj.debug.breakpoint(), x)[1])(np.ones(2)))
