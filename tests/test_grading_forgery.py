"""Forging grades from inside the kernel, and instructors' mistakes caught at setup.

One batch of small notebooks built from the demo solution (numpy-only exercises in
``tests/grading_fixtures``), graded together with the solution itself and with private
hidden cases whose arguments an instructor could plausibly write (NumPy scalars, ``inf``).
Each forgery has a *wrong* ``add`` (``a - b``: honestly 0 for ``ex00_add``) and the rest of
the solution, plus a trick that forged full marks before. Each must get its honest score
with the right status, and the solution must be unharmed. Then: the setup errors an
instructor can make, the ``pass`` body of ex03's rule, the hidden cases that must never show
in feedback, and ``check()``'s own guarantees (a time limit, expected values as data).
The batch is graded with ``sandbox=False``: these guards live in the kernel and must hold
without the sandbox too.
"""

from __future__ import annotations

import csv
import re
import signal
import time
from pathlib import Path

import nbformat
import numpy as np
import pytest

from minijit.grading.batch import grade
from minijit.grading.cases import Case
from minijit.grading.checking import run_public_cases
from minijit.grading.registry import RegistryError, load_exercises, load_hidden_cases
from minijit.grading.runner import Limits
from minijit.grading.scoring import GradingSetupError, build_plan

FIXTURES = Path(__file__).parent / "grading_fixtures"
DEMO = str(FIXTURES / "demo_exercises.py")
SOLUTION = FIXTURES / "solutions" / "00_demo.ipynb"
ADD_CELL = "# EXERCISE ex00_add (1 point)\n"
WRONG_ADD = ADD_CELL + "def add(a, b):\n    return a - b\n"
FULL = {"ex00_add": 1.0, "ex00_mean": 2.0, "ex00_answer": 1.0}
HONEST = {**FULL, "ex00_add": 0}  # what every forgery below deserves
VOID = dict.fromkeys(FULL, 0)
# `timeout` only guards a hung kernel: every notebook here finishes in seconds, but a loaded
# machine compiling cold (a fresh CI run) can take far longer than that
LIMITS = Limits(cell_timeout=5, timeout=120, settle_timeout=2)

# Hidden arguments no feedback may show, as the leak below writes what it sees (digits joined
# by "_"): the demo's hidden case of ex00_add, and its NumPy-scalar private case.
HIDDEN_DIGITS = ("1_2_3_4_10_20", "2_5_3")


def _notebook(add_cell: str = WRONG_ADD, extra: str | None = None,
              replace: tuple[str, str] | None = None):
    nb = nbformat.read(SOLUTION, as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "code" and cell.source.startswith(ADD_CELL):
            cell.source = add_cell
        if replace and cell.cell_type == "code" and replace[0] in cell.source:
            cell.source = cell.source.replace(*replace)
    if extra:
        nb.cells.append(nbformat.v4.new_code_cell(extra))
    return nb


# A global __import__ that hands the grader's old bootstrap a builtins whose exec rewrites
# the answer (it switches in a correct add) before running the grader's prelude.
GLOBAL_IMPORT = """
import builtins as _real
class _Fake:
    def __getattr__(self, name):
        return getattr(_real, name)
    def exec(self, *args, **kwargs):
        globals()["add"] = lambda a, b: a + b
        return _real.exec(*args, **kwargs)
_fake = _Fake()
def __import__(name, *args, **kwargs):
    return _fake if name == "builtins" else _real.__import__(name, *args, **kwargs)
"""

# builtins.exec wrapped: when it runs the grader's code, add becomes correct.
WRAPPED_EXEC = """
import builtins
_exec = builtins.exec
def _forging_exec(source, *args, **kwargs):
    if "minijit" in str(getattr(source, "co_filename", source))[:2000]:
        globals()["add"] = lambda a, b: a + b
    return _exec(source, *args, **kwargs)
builtins.exec = _forging_exec
"""

# A trace hook that loads the reference when the grader's code starts running.
TRACE_HOOK = """
import sys
def _hook(frame, event, arg):
    if event == "call" and frame.f_code.co_name in ("user_expressions", "serve",
                                                      "run_calls", "_minijit_boot"):
        import minijit.grading.exercises.ch01_why_jit
        globals()["add"] = lambda a, b: a + b
    return None
sys.settrace(_hook)
"""

PROFILE_HOOK = TRACE_HOOK.replace("sys.settrace(_hook)", "sys.setprofile(_hook)").replace(
    "import minijit.grading.exercises.ch01_why_jit\n", "")

THREAD_HOOK = "import threading\nthreading.settrace(lambda *a: None)\n"

# A __del__ that, once the grader has the result, rewrites every array result it can find
# to the right answer.
DEL_HOOK = ADD_CELL + """import gc
import numpy as np
class _Rewriter:
    def __init__(self, right):
        self.right, self.me = right, self  # a cycle: collected later, by the gc
    def __del__(self):
        for o in gc.get_objects():
            if type(o) is dict and type(o.get("__array__")) is dict:
                o["__array__"]["data"] = self.right
def add(a, b):
    _Rewriter(np.asarray(a + b).tolist())
    return a - b
"""

# Looks for the grader's calls (key, source, name, args) everywhere it can reach (the stack
# above it, gc) and puts their keys and arguments where feedback shows them: the message of
# its error, and the names of functions it plants in minijit.grading (reported as
# "replaced"). Before hidden cases are sent, only public ones exist in the kernel; after,
# nothing the kernel says is shown.
STACK_LEAK = ADD_CELL + """import gc, re, sys
import minijit.grading.cases as _cases
def _digits(text):
    return "_".join(re.findall(r"\\d+(?:\\.\\d+)?", text)).replace(".", "_")
def _calls(value, found, depth=0):
    if depth > 6:
        return
    if (type(value) in (tuple, list) and len(value) == 4 and type(value[0]) is str
            and "ex00" in value[0]):
        found.append(value[0] + " " + _digits(repr(value[3])))
    elif type(value) in (tuple, list):
        for v in value[:50]:
            _calls(v, found, depth + 1)
    elif type(value) is dict:
        for v in list(value.values())[:200]:
            _calls(v, found, depth + 1)
def add(a, b):
    found = []
    frame = sys._getframe(1)
    while frame is not None:
        _calls(dict(frame.f_locals), found)
        frame = frame.f_back
    for o in gc.get_objects():
        if type(o) is tuple:
            _calls(o, found)
    setattr(_cases, "leak_" + _digits(repr(found))[:150], add)
    raise ValueError("LEAK " + " | ".join(sorted(set(found)))[:1500])
"""

# name -> (notebook, status, points, words the detail must show)
FORGERIES = {
    "solution": (nbformat.read(SOLUTION, as_version=4), "ok", FULL, ""),
    "wrong": (_notebook(), "ok", HONEST, ""),
    "global_import": (_notebook(extra=GLOBAL_IMPORT), "tampered", HONEST,
                      "a global named __import__"),
    "global_builtins": (_notebook(extra="import builtins\n__builtins__ = dict(vars(builtins))\n"),
                        "tampered", HONEST, "a global named __builtins__"),
    "wrapped_exec": (_notebook(extra=WRAPPED_EXEC), "tampered", HONEST,
                     "builtins.exec replaced"),
    "trace_hook": (_notebook(extra=TRACE_HOOK), "tampered", VOID, "sys.settrace hook"),
    "profile_hook": (_notebook(extra=PROFILE_HOOK), "tampered", VOID, "sys.setprofile hook"),
    "thread_hook": (_notebook(extra=THREAD_HOOK), "tampered", VOID, "threading.settrace"),
    "imports_reference": (_notebook(extra="import minijit.grading.exercises.ch01_why_jit\n"),
                          "tampered", VOID, "reference solutions"),
    "del_hook": (_notebook(DEL_HOOK), "ok", HONEST, ""),
    "int_as_float": (_notebook(ADD_CELL + "def add(a, b):\n    return a + b\n",
                               replace=("ANSWER = 3", "ANSWER = 3.0000001")),
                     "ok", {**FULL, "ex00_answer": 0}, ""),
    "stack_leak": (_notebook(STACK_LEAK), "tampered", HONEST, "cases.leak_"),
}

PRIVATE_CASES = """
import numpy as np
from minijit.grading import Case
HIDDEN_CASES = {
    "ex00_add": [Case("numpy scalars", (np.float64(2.5), np.int64(3))),
                 Case("infinities", ([float("inf"), 1.0], [1.0, float("-inf")]))],
    "ex00_mean": [Case("a NumPy float32 list", ([np.float32(0.5), np.float32(1.5)],))],
}
"""


def test_forgery_batch(tmp_path):
    """One batch: every forgery next to the solution; all collected before failing."""
    folder = tmp_path / "submissions"
    folder.mkdir()
    for name, (nb, *_rest) in FORGERIES.items():
        nbformat.write(nb, folder / f"{name}.ipynb")
    private = tmp_path / "private"
    private.mkdir()
    (private / "cases.py").write_text(PRIVATE_CASES)
    exercises = load_exercises([DEMO])
    hidden = load_hidden_cases(private, exercises)
    out = tmp_path / "out"
    start = time.monotonic()
    # Without the sandbox: these are the guards inside the kernel, which must hold on their
    # own (the sandbox stops some of these tricks earlier, e.g. it hides the references).
    rows = {r.student: r for r in grade([folder], exercises=exercises, hidden_cases=hidden,
                                        out=out / "gradebook.csv",
                                        feedback_dir=out / "feedback", jobs=2,
                                        limits=LIMITS, progress=False, sandbox=False)}
    elapsed = time.monotonic() - start
    problems = []
    assert set(rows) == set(FORGERIES)
    with open(out / "gradebook.csv", newline="") as f:
        table = {r["student"]: r for r in csv.DictReader(f)}
    assert set(table) == set(FORGERIES)
    for name, (_nb, status, points, words) in FORGERIES.items():
        row = rows[name]
        got = {i: s.points for i, s in row.scores.items()}
        if (row.status, got) != (status, points):
            problems.append(f"{name}: got {row.status} {got}, wanted {status} {points}; "
                            f"detail: {row.detail}")
        if words not in row.detail:
            problems.append(f"{name}: {words!r} not in {row.detail!r}")
        if float(table[name]["total"]) != sum(points.values()):
            problems.append(f"{name}: CSV total {table[name]['total']}")
    if rows["solution"].detail or rows["wrong"].detail:
        problems.append(f"honest notebooks: {rows['solution'].detail} / {rows['wrong'].detail}")
    # the private cases count: 3 hidden cases of ex00_add (one from the module), all passed
    assert rows["solution"].scores["ex00_add"].hidden == (3, 3)
    assert rows["solution"].scores["ex00_mean"].hidden == (3, 3)
    # nothing of the hidden cases reaches what the student sees
    text = (out / "feedback" / "stack_leak.md").read_text() + table["stack_leak"]["detail"]
    for secret in HIDDEN_DIGITS:
        if re.search(rf"(?<![\d_]){secret}", text):
            problems.append(f"stack_leak: hidden argument {secret!r} in its feedback")
    # the public cases' errors are shown, and hold only public data
    assert "LEAK ex00_add/public/0" in text and "/hidden/" not in text
    assert "/private/" not in text
    assert "during the hidden tests" in rows["stack_leak"].detail
    assert not problems, "\n".join(problems)
    print(f"{len(rows)} submissions in {elapsed:.1f} s")


# ---------------------------------------------------------------------------- setup errors


def test_numpy_scalars_are_plain_and_arrays_refused(tmp_path):
    exercises = load_exercises([DEMO])
    (tmp_path / "ok.py").write_text(PRIVATE_CASES)
    plan = build_plan(list(exercises.values()), load_hidden_cases(tmp_path, exercises))
    call = next(c for ex in plan.probes for c in ex.hidden if c.key == "ex00_add/private/0")
    assert call.args == (2.5, 3) and type(call.args[1]) is int
    assert plan.expected["ex00_add/private/1"]["__array__"]["data"] == [np.inf, -np.inf]
    (tmp_path / "array.py").write_text(
        "import numpy as np\nfrom minijit.grading import Case\n"
        "HIDDEN_CASES = {'ex00_add': [Case('arr', (np.arange(3), [1, 2, 3]))]}\n")
    with pytest.raises(RegistryError, match=r"array\.py: ex00_add case 'arr': argument 1 "
                                            r"is a NumPy array.*tolist"):
        load_hidden_cases(tmp_path, exercises)


def test_non_literal_arguments_are_refused():
    ex = load_exercises([DEMO])["ex00_add"]
    with pytest.raises(GradingSetupError, match="argument 1 is not literal data"):
        build_plan([ex], {"ex00_add": (Case("obj", (object(), 1)),)})


def test_syntax_error_in_hidden_cases_is_one_line(tmp_path):
    (tmp_path / "broken.py").write_text("from minijit.grading import Case\n"
                                        "HIDDEN_CASES = {'ex00_add': [Case('x', (1, 2)]}\n")
    with pytest.raises(RegistryError) as info:
        load_hidden_cases(tmp_path, load_exercises([DEMO]))
    message = str(info.value)
    assert "\n" not in message
    assert f"{tmp_path / 'broken.py'}:2: SyntaxError" in message


def test_probe_calling_a_helper_fails_setup(tmp_path):
    (tmp_path / "helper.py").write_text(
        "from minijit.grading import Case\n"
        "def _twice(x):\n    return [2 * v for v in x]\n"
        "def probe_twice(ns, x):\n    return get(ns, 'add')(_twice(x), x)\n"
        "HIDDEN_CASES = {'ex00_add': [Case('twice', ([1.0],), probe=probe_twice)]}\n")
    exercises = load_exercises([DEMO])
    hidden = load_hidden_cases(tmp_path, exercises)
    with pytest.raises(GradingSetupError) as info:
        build_plan([exercises["ex00_add"]], hidden)
    message = str(info.value)
    assert "\n" not in message
    assert "probe_twice" in message and "_twice" in message and "not shipped" in message


def test_command_line_reports_setup_errors_in_one_line(tmp_path, capsys):
    from minijit.grading.__main__ import main

    (tmp_path / "broken.py").write_text("HIDDEN_CASES = {\n")
    assert main(["grade", str(FIXTURES / "solutions"), "--exercises", DEMO,
                 "--hidden-cases", str(tmp_path), "--out", str(tmp_path / "g.csv")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: ") and "broken.py:1: SyntaxError" in err
    assert len(err.splitlines()) == 1


# ---------------------------------------------------------------------------- ex03's rule


def test_pass_body_for_the_broadcast_rule_scores_zero():
    """The probe's own TypeError (the rule returned None) must not count as the learner's
    code raising the TypeError the clash cases expect."""
    from minijit.grading.channel import run_locally
    from minijit.grading.registry import COURSE_MODULES
    from minijit.grading.runner import RunResult
    from minijit.grading.scoring import make_row

    exercises = load_exercises([m for m in COURSE_MODULES if m.endswith("ch03_the_ir")])
    ex = exercises["ex03_broadcast_rule"]
    plan = build_plan([ex])
    ns: dict = {}
    exec("def broadcast_binary_rule(x, y):\n    pass\n", ns)
    calls = [c for p in plan.probes for c in p.calls + p.hidden]
    run = RunResult(results=run_locally(calls, ns), outcome={ex.id: "ran"})
    row = make_row("pass", Path("pass.ipynb"), plan, run)
    assert row.scores[ex.id].points == 0, row.scores[ex.id]
    reasons = [f.reason for f in row.scores[ex.id].failed_public]
    assert any("the test itself failed" in r for r in reasons), reasons


# ---------------------------------------------------------------------------- check()


def _demo(ex_id: str):
    return load_exercises([DEMO])[ex_id]


def test_check_stops_an_endless_loop():
    ns: dict = {}
    exec("def add(a, b):\n    while True:\n        pass\n", ns)
    previous = signal.getsignal(signal.SIGALRM)
    outer = signal.getitimer(signal.ITIMER_REAL)  # pytest-timeout's, when it runs the suite
    start = time.monotonic()
    report = run_public_cases(_demo("ex00_add"), ns, time_limit=0.5)
    assert time.monotonic() - start < 5
    assert report.passed == 0 and len(report.rows) == 2
    assert all("took longer than 0.5 s" in r.reason for r in report.rows), str(report)
    assert "took longer than 0.5 s" in str(report)
    assert signal.getsignal(signal.SIGALRM) is previous
    after = signal.getitimer(signal.ITIMER_REAL)
    if outer == (0.0, 0.0):
        assert after == (0.0, 0.0)  # no timer of check()'s left behind
    else:
        assert 0.0 < after[0] <= outer[0]  # the outer timer is put back, still running
    # a loop that catches Exception is stopped too; a fast answer is not
    exec("def add(a, b):\n    while True:\n        try:\n            pass\n"
         "        except Exception:\n            pass\n", ns)
    assert run_public_cases(_demo("ex00_add"), ns, time_limit=0.3).passed == 0
    assert run_public_cases(_demo("ex00_add"), {"add": lambda a, b: a + b},
                            time_limit=0.3).all_passed


def test_check_expected_values_are_data(monkeypatch):
    """check() gets its expected values from a separate interpreter: a notebook that
    patches the reference in its own process changes nothing."""
    from minijit.grading import check, checking, registry

    monkeypatch.setenv("MINIJIT_GRADING_EXERCISES", DEMO)
    monkeypatch.setattr(registry, "COURSE_MODULES", ())
    registry._cached.cache_clear()
    checking._expected_cache.clear()
    ex = registry.default_exercises()["ex00_add"]  # the demo module's own object
    reference = ex.reference
    try:
        # what a notebook could do: make the reference agree with a wrong answer
        object.__setattr__(ex, "reference", lambda: {"add": lambda a, b: a - b})
        report = check("ex00_add", namespace={"add": lambda a, b: a - b})
        assert report.passed == 0, str(report)
        assert check("ex00_add", namespace={"add": lambda a, b: a + b}).all_passed
    finally:
        object.__setattr__(ex, "reference", reference)
        registry._cached.cache_clear()
        checking._expected_cache.clear()


def test_check_time_limit_in_a_kernel(tmp_path):
    """In a real kernel, where IPython runs cells (the main thread), an endless loop in the
    learner's answer ends with a clear message, and the notebook goes on."""
    import asyncio

    from minijit.grading.kernel import Kernel

    cell = ("import os\n"
            "os.environ.pop('MINIJIT_GRADING', None)  # the grader's kernel skips check()\n"
            f"os.environ['MINIJIT_GRADING_EXERCISES'] = {DEMO!r}\n"
            "from minijit.grading import check\n"
            "def add(a, b):\n    while True:\n        pass\n"
            "report = check('ex00_add', time_limit=1)\n"
            "assert report.passed == 0 and 'took longer than 1 s' in str(report), report\n")

    async def run() -> tuple[str, str]:
        kernel = Kernel(Limits(startup_timeout=60), str(tmp_path), 1)
        try:
            await kernel.start(time.monotonic() + 60)
            return await kernel.run_cell(0, cell, 60)
        finally:
            await kernel.stop()

    assert asyncio.run(run()) == ("ok", "")


# ---------------------------------------------------------------------------- the pieces


def test_probe_failures_are_marked_and_never_match_raises():
    from minijit.grading.cases import compare, raises
    from minijit.grading.probing import ProbeFailure, run_probe

    def probe_checks(ns):
        out = ns["rule"]()
        if out is None:
            raise ProbeFailure("the rule must return a list")
        return out

    def probe_indexes(ns):
        return ns["rule"]()[0]  # TypeError raised here, by the probe, on None

    learner: dict = {}  # the learner's code lives in their notebook, not in the probe's file
    exec(compile("def rule():\n    raise TypeError('shapes clash')\n", "<cell>", "exec"),
         learner)

    for probe in (probe_checks, probe_indexes):
        got = run_probe(probe, {"rule": lambda: None}, ())
        assert got["__error__"]["origin"] == "probe"
        assert "the test itself failed" in compare(raises("ProbeFailure"), got) + compare(
            raises("TypeError"), got)
    got = run_probe(probe_indexes, learner, ())
    assert "origin" not in got["__error__"] and compare(raises("TypeError"), got) is None


def test_results_cannot_pose_as_errors_or_arrays():
    from minijit.grading.plain_data import NotGradable, to_data

    for forged in ({"__error__": {"type": "TypeError"}}, {"__array__": {"data": [1]}}):
        with pytest.raises(NotGradable, match="reserved"):
            to_data(forged)
    assert to_data({"__error__": 1, "other": 2}) == {"__error__": 1, "other": 2}


def test_ints_compare_exactly():
    from minijit.grading.cases import compare

    assert compare(56, 56.0000028) is not None and compare(56, 56.0) is not None
    assert compare(56, 56) is None and compare(56.0, 56) is None
    assert compare(1.0, 1.0 + 1e-12) is None and compare(True, 1) is not None


def test_literals_need_no_names():
    import math

    from minijit.grading.channel import literal

    value = [None, True, 3, -0.5, float("inf"), float("-inf"), float("nan"), "q'\"", b"x",
             (1,), (), {"k": [1, 2]}]
    text = literal(value)
    assert "inf" not in text and "nan" not in text
    back = eval(text, {"__builtins__": {}})  # no name may be needed to evaluate it
    assert back[:6] == value[:6] and math.isnan(back[6]) and back[7:] == value[7:]
    with pytest.raises(TypeError):
        literal([np.float64(1.0)])


def test_reports_after_hidden_cases_use_fixed_phrases():
    """What the kernel reports once hidden cases were sent is shown in fixed phrases only,
    whatever names or words the notebook put in it."""
    from minijit.grading.runner import _env_changes

    seen: set = set()
    base = {"transformers": [0, 0, 0], "replaced": [], "forgery": [], "references": []}
    public = dict(base, replaced=["minijit.grading.cases.x"])
    assert _env_changes(base, public, False, seen) == [
        "the notebook replaced minijit.grading.cases.x"]
    assert _env_changes(base, public, True, seen) == []  # said already, by name
    leaky = dict(base, replaced=["minijit.grading.cases.leak_1_2"],
                 forgery=["hidden 1 2", "a sys.settrace hook"],
                 references=["minijit.grading.exercises.leak_1_2"])
    text = " ".join(_env_changes(base, leaky, True, seen))
    assert "1_2" not in text and "1 2" not in text
    assert "sys.settrace hook" in text and "during the hidden tests" in text
