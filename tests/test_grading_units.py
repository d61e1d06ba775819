"""Unit tests of the grading framework's pieces: no kernels, no minijit core."""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import numpy as np
import pytest

from minijit.grading import check
from minijit.grading.cases import Exercise, compare, describe, probe_source, raises
from minijit.grading.channel import (
    ChannelError,
    ProbeCall,
    expression,
    new_key,
    new_mac_key,
    parse_reply,
    setup_expression,
    user_expression_key,
)
from minijit.grading.checking import run_public_cases
from minijit.grading.notebook import (
    AuthoringError,
    check_call,
    exercise_header,
    generate,
    make_exercise,
    strip_solutions,
    validate_solution,
)
from minijit.grading.plain_data import NotGradable, encode, to_data
from minijit.grading.probing import run_probe
from minijit.grading.registry import RegistryError, load_exercises, load_hidden_cases

REPO = Path(__file__).resolve().parent.parent
FIXTURES = Path(__file__).parent / "grading_fixtures"
DEMO = str(FIXTURES / "demo_exercises.py")


# ---------------------------------------------------------------------------- probing


def test_to_data_plain_and_arrays():
    assert to_data([1, 2.5, "a", None, True, (3,)]) == [1, 2.5, "a", None, True, [3]]
    assert to_data(np.arange(3, dtype=np.int32)) == {
        "__array__": {"shape": [3], "dtype": "int32", "data": [0, 1, 2]}}
    assert to_data(np.float64(2.0)) == {
        "__array__": {"shape": [], "dtype": "float64", "data": 2.0}}


class _AlwaysEqual:
    def __eq__(self, other):
        return True


class _LyingArray(np.ndarray):
    def tolist(self):
        return [1, 2, 3]


@pytest.mark.parametrize("bad", [_AlwaysEqual(), np.array([_AlwaysEqual()]), {1: 2},
                                 np.zeros(2, dtype=complex), object])
def test_to_data_refuses_what_it_cannot_grade(bad):
    with pytest.raises(NotGradable):
        to_data(bad)


def test_to_data_ignores_subclass_overrides():
    liar = np.zeros(3).view(_LyingArray)
    assert to_data(liar)["__array__"]["data"] == [0.0, 0.0, 0.0]


def test_encode_matches_json():
    value = {"a": [1, -2.5, 1e300, True, None, "q\"\\\n\u00e9\U0001F600"], "b": {}}
    assert json.loads(encode(value)) == value
    nan = json.loads(encode([float("nan"), float("inf")]))
    assert math.isnan(nan[0]) and nan[1] == math.inf
    assert encode("\ud800").isascii()  # a lone surrogate cannot break the message


def test_run_probe_turns_exceptions_into_data():
    def probe(ns):
        raise SystemExit(3)

    assert run_probe(probe, {}, ())["__error__"]["type"] == "SystemExit"


# ---------------------------------------------------------------------------- comparing


@pytest.mark.parametrize("expected, got, ok", [
    (1, 1, True), (1, 1.0, False), (56, 56.0000028, False), (1.0, 1, True),
    (1.0, 1.0 + 1e-12, True), (1, 2, False),
    (True, 1, False), (1, True, False), ("a", "a", True), ([1, 2], [1, 2, 3], False),
    (float("nan"), float("nan"), True), ({"a": 1}, {"a": 1}, True), ({"a": 1}, {"b": 1}, False),
])
def test_compare_values(expected, got, ok):
    assert (compare(expected, got) is None) == ok


def test_compare_arrays_by_shape_dtype_and_values():
    a = to_data(np.array([1.0, 2.0]))
    assert compare(a, to_data(np.array([1.0, 2.0]))) is None
    assert "dtype" in compare(a, to_data(np.array([1, 2])))
    assert "shape" in compare(a, to_data(np.array([[1.0, 2.0]])))
    assert "[1]" in compare(a, to_data(np.array([1.0, 3.0])))
    assert "raised ValueError" in compare(a, {"__error__": {"type": "ValueError",
                                                          "message": "m"}})


def test_compare_expected_error():
    assert compare(raises("TypeError"), {"__error__": {"type": "TypeError"}}) is None
    assert "expected it to raise" in compare(raises("TypeError"), 3)


def test_describe_is_short():
    assert describe(to_data(np.ones(3))) == "f64[3] [1.0, 1.0, 1.0]"
    assert len(describe(list(range(1000)))) <= 120


# ---------------------------------------------------------------------------- channel


def _fake_kernel_eval(expr: str, ns: dict) -> dict:
    """What IPython does with a user expression (eval + text/plain repr)."""
    try:
        value = eval(expr, ns, ns)
    except Exception as exc:  # noqa: BLE001
        return {"status": "error", "ename": type(exc).__name__, "evalue": str(exc)}
    return {"status": "ok", "data": {"text/plain": repr(value)}, "metadata": {}}


def _probe_double(ns, x):
    return ns["double"](np.asarray(x))


def test_channel_round_trip():
    source, name = probe_source(_probe_double)
    calls = [ProbeCall("k/0", source, name, ([1, 2],)), ProbeCall("k/1", source, name, ("x",))]
    ns = {"double": lambda x: x * 2}
    nonce, key, mac = "abc", new_key(), new_mac_key()
    setup = _fake_kernel_eval(setup_expression(key, nonce, mac), ns)
    assert setup["status"] == "ok", setup
    reply = {"status": "ok", "user_expressions": {
        user_expression_key(nonce): _fake_kernel_eval(expression(calls, nonce, key), ns)}}
    results, env = parse_reply(reply, nonce, mac)
    assert results["k/0"] == to_data(np.array([2, 4]))
    assert "TypeError" in results["k/1"]["__error__"]["type"]
    assert env["replaced"] == [] and env["forgery"] == []
    assert set(ns) == {"double", "__builtins__"}  # nothing leaked into the namespace


def test_channel_rejects_forged_answers():
    key = user_expression_key("n1")
    body = json.dumps({"nonce": "n1", "results": {}, "env": {}})
    forged = {"status": "ok", "data": {"text/plain": repr("0" * 64 + body)}}
    with pytest.raises(ChannelError, match="signed"):
        parse_reply({"status": "ok", "user_expressions": {key: forged}}, "n1", "k")
    import hashlib
    import hmac

    other = json.dumps({"nonce": "other", "results": {}, "env": {}})
    mac = hmac.new(b"k", other.encode(), hashlib.sha256).hexdigest()
    replayed = {"status": "ok", "data": {"text/plain": repr(mac + other)}}
    with pytest.raises(ChannelError, match="nonce"):
        parse_reply({"status": "ok", "user_expressions": {key: replayed}}, "n1", "k")
    with pytest.raises(ChannelError):
        parse_reply({"status": "ok", "user_expressions": {}}, "n1", "k")
    bad = {"status": "ok", "data": {"text/plain": "'not json'"}}
    with pytest.raises(ChannelError):
        parse_reply({"status": "ok", "user_expressions": {key: bad}}, "n1", "k")


def test_probe_source_rules():
    with pytest.raises(TypeError):
        probe_source(lambda ns: 1)


# ---------------------------------------------------------------------------- notebooks


def test_strip_solutions_keeps_indentation():
    src = "# EXERCISE ex01_x (1 point)\ndef f():\n    ### BEGIN SOLUTION\n    return 1\n" \
          "    ### END SOLUTION\n"
    out = strip_solutions(src, "ex01_x")
    assert out == ("# EXERCISE ex01_x (1 point)\ndef f():\n    # YOUR CODE HERE\n"
                   '    raise NotImplementedError("ex01_x: replace this line with your '
                   'solution")\n')


@pytest.mark.parametrize("src", [
    "### BEGIN SOLUTION\nx = 1\n",
    "### END SOLUTION\n",
    "### BEGIN SOLUTION\n### BEGIN SOLUTION\n### END SOLUTION",
])
def test_strip_solutions_authoring_errors(src):
    with pytest.raises(AuthoringError):
        strip_solutions(src, "ex01_x")


def test_headers_and_check_cells():
    assert exercise_header("# EXERCISE ex04_static_args (2 points)\nx") == (
        "ex04_static_args", 2.0)
    assert exercise_header("# EXERCISE ex01_a (1 point)") == ("ex01_a", 1.0)
    assert exercise_header("x = 1") is None
    assert check_call('check("ex01_a")') == "ex01_a"
    assert check_call("check('ex01_a')\n") == "ex01_a"
    assert check_call('check("ex01_a"); print(1)') is None


def test_make_exercise_clears_outputs_and_locks_check_cells():
    nb = nbformat.read(FIXTURES / "solutions" / "00_demo.ipynb", as_version=4)
    nb.cells[3].outputs = [nbformat.v4.new_output("stream", text="hi")]
    nb.cells[3].execution_count = 7
    nb.cells[3].metadata["execution"] = {"x": 1}
    ex = make_exercise(nb, "00_demo")
    assert ex.cells[3].outputs == [] and ex.cells[3].execution_count is None
    assert "execution" not in ex.cells[3].metadata
    assert [c.id for c in ex.cells] == [c.id for c in nb.cells]
    assert ex.cells[4].metadata == {"editable": False, "deletable": False}
    assert "BEGIN SOLUTION" not in nbformat.writes(ex)


def test_validate_solution_wants_check_cells():
    nb = nbformat.read(FIXTURES / "solutions" / "00_demo.ipynb", as_version=4)
    del nb.cells[4]
    with pytest.raises(AuthoringError, match='check\\("ex00_add"\\)'):
        validate_solution(nb, "x")


def test_generate_is_deterministic_and_detects_drift(tmp_path):
    out = tmp_path / "exercises"
    generate(FIXTURES / "solutions", out)
    first = (out / "00_demo.ipynb").read_bytes()
    assert generate(FIXTURES / "solutions", out, check=True) == []
    generate(FIXTURES / "solutions", out)
    assert (out / "00_demo.ipynb").read_bytes() == first
    (out / "00_demo.ipynb").write_text(first.decode().replace("YOUR CODE", "MY CODE"))
    (out / "stale.ipynb").write_text("{}")
    drift = generate(FIXTURES / "solutions", out, check=True)
    assert [(d.name, d.kind) for d in drift] == [("00_demo.ipynb", "changed"),
                                                 ("stale.ipynb", "extra")]
    assert "MY CODE" in drift[0].diff


def test_fixture_exercises_are_in_sync():
    assert generate(FIXTURES / "solutions", FIXTURES / "exercises", check=True) == []


# ---------------------------------------------------------------------------- registry


def test_hidden_cases_folder(tmp_path):
    exercises = load_exercises([DEMO])
    (tmp_path / "extra.py").write_text(
        "from minijit.grading import Case\n"
        "def probe_twice(ns, x):\n    return ns['add'](x, x)\n"
        "HIDDEN_CASES = {'ex00_add': [Case('big', ([1e9], [1e9])),\n"
        "                             Case('twice', (2.0,), probe=probe_twice)]}\n")
    (tmp_path / "_ignored.py").write_text("raise RuntimeError")
    extra = load_hidden_cases(tmp_path, exercises)
    assert [c.name for c in extra["ex00_add"]] == ["big", "twice"]
    assert probe_source(extra["ex00_add"][1].probe)[1] == "probe_twice"
    (tmp_path / "typo.py").write_text("HIDDEN_CASES = {'ex00_ad': []}\n")
    with pytest.raises(RegistryError, match="unknown exercise id 'ex00_ad'"):
        load_hidden_cases(tmp_path, exercises)


def test_duplicate_ids_are_refused():
    with pytest.raises(RegistryError, match="defined twice"):
        load_exercises([DEMO, DEMO + "/../demo_exercises.py"])


# ---------------------------------------------------------------------------- check()


def _demo(ex_id: str) -> Exercise:
    return load_exercises([DEMO])[ex_id]


def test_check_report_pass_and_fail():
    ex = _demo("ex00_add")
    good = run_public_cases(ex, {"add": lambda a, b: a + b})
    assert good.all_passed and "2/2 public cases pass" in str(good)
    bad = run_public_cases(ex, {"add": lambda a, b: a - b})
    assert bad.passed == 0
    text, html = str(bad), bad._repr_html_()
    assert "expected: f64[3] [11.0, 22.0, 33.0]" in text
    assert "Reread chapters/00_demo.ipynb" in text and "Adding" in text
    assert "<table>" in html and "\u2718 fail" in html and "Hint:" in html
    assert "2-d broadcast" not in text + html  # hidden cases are not run here


def test_check_error_hint_names_the_pitfall():
    report = run_public_cases(_demo("ex00_mean"), {"mean": lambda xs: xs.sum()})
    assert not report.all_passed and "The mean is the sum divided" in str(report)
    report = run_public_cases(_demo("ex00_mean"), {"mean": lambda xs: 1 // 0})
    assert "Divide by the number of elements" in str(report)


def _tiered() -> Exercise:
    from dataclasses import replace

    from minijit.grading.cases import Hint

    return replace(_demo("ex00_add"), id="ex00_tiered",
                   hint=Hint("Add, do not subtract.", code="return a + b"),
                   error_hints={"ZeroDivisionError": "Nothing to divide here."})


def test_check_hint_tiers():
    """Untouched: the section only; first failed check: the pitfall; second, or hint=True:
    the code as well. An untouched stub does not count as a failed check."""
    from minijit.grading.checking import reset_attempts

    ex = _tiered()

    def stub(a, b):
        raise NotImplementedError("ex00_tiered: replace this line with your solution")

    reset_attempts()
    try:
        for ns in ({}, {"add": stub}, {"add": stub}):
            report = run_public_cases(ex, ns, count=True)
            text, html = str(report), report._repr_html_()
            assert report.tier == "section" and not report.attempted
            assert "Not attempted yet" in text and "\u201cAdding\u201d" in text
            assert "Add, do not" not in text + html and "a + b" not in text + html
        wrong = {"add": lambda a, b: a - b}
        first = run_public_cases(ex, wrong, count=True)
        text, html = str(first), first._repr_html_()
        assert first.tier == "pitfall" and "hint:     Add, do not subtract." in text
        assert "a + b" not in text + html and 'check("ex00_tiered", hint=True)' in text
        assert text.index("hint:") < text.index("Reread chapters/00_demo.ipynb")
        second = run_public_cases(ex, wrong, count=True)
        text, html = str(second), second._repr_html_()
        assert second.tier == "code" and "code:     return a + b" in text
        assert "<b>Code hint:</b> return a + b" in html and "hint=True" not in text
        assert text.index("hint:") < text.index("code:")
        reset_attempts("ex00_tiered")
        asked = run_public_cases(ex, {"add": stub}, hint=True)
        assert asked.tier == "code" and "return a + b" in str(asked)
        raised = run_public_cases(ex, {"add": lambda a, b: 1 // 0}, count=True)
        assert "Nothing to divide here." in str(raised) and "return a + b" not in str(raised)
        assert run_public_cases(ex, {"add": lambda a, b: a + b}, count=True).tier is None
    finally:
        reset_attempts()


def test_plain_string_hints_are_the_pitfall_tier():
    from minijit.grading.cases import as_hint

    ex = _demo("ex00_add")
    case = ex.public[0]
    assert as_hint(ex.hint).pitfall == ex.hint and as_hint(ex.hint).code is None
    tiers = ex.hint_tiers(case, None)
    assert list(tiers) == ["section", "pitfall"]
    reread = "Reread chapters/00_demo.ipynb, section \u201cAdding\u201d."
    assert ex.hint_for(case) == f"{ex.hint} {reread}"
    assert ex.hint_for(case, tier="section") == reread
    assert "return a + b" in _tiered().hint_for(case, tier="code")


def test_feedback_shows_the_section_or_the_pitfall_never_code():
    from pathlib import Path

    from minijit.grading.feedback import feedback_markdown
    from minijit.grading.runner import RunResult
    from minijit.grading.scoring import build_plan, make_row

    ex = _tiered()
    plan = build_plan([ex])
    stub = {"__error__": {"type": "NotImplementedError", "line": "",
                          "message": "ex00_tiered: replace this line with your solution"}}
    wrong = {"__array__": {"shape": [], "dtype": "float64", "data": -1.0}}
    for got, shows, hides in ((stub, "Hint: Reread", "Add, do not"),
                              (wrong, "Hint: Add, do not subtract. Reread", "a + b")):
        run = RunResult(results={key: got for key in plan.cases}, outcome={ex.id: "ran"})
        text = feedback_markdown(make_row("s", Path("s.ipynb"), plan, run))
        assert shows in text and hides not in text, text


def test_check_uses_callers_globals(monkeypatch):
    monkeypatch.setenv("MINIJIT_GRADING_EXERCISES", DEMO)
    from minijit.grading import registry

    registry._cached.cache_clear()
    monkeypatch.setattr(registry, "COURSE_MODULES", ())
    ns = {"check": check, "ANSWER": 3}
    exec("report = check('ex00_answer')", ns)
    assert ns["report"].all_passed
    with pytest.raises(KeyError, match="unknown exercise"):
        check("ex99_nope")
    monkeypatch.setenv("MINIJIT_GRADING", "1")
    assert "skipped" in repr(check("ex00_answer"))
    registry._cached.cache_clear()


# ---------------------------------------------------------------------------- importability


def test_grading_imports_without_the_core(tmp_path):
    """With an empty minijit package (the core missing), the grading package still imports
    and its CLI generates and checks exercises."""
    pkg = tmp_path / "minijit"
    shutil.copytree(REPO / "minijit" / "grading", pkg / "grading",
                    ignore=shutil.ignore_patterns("__pycache__"))
    (pkg / "__init__.py").write_text("")
    env = dict(os.environ, PYTHONPATH=str(tmp_path))
    code = ("import sys, minijit.grading\n"
            "bad = [m for m in sys.modules if m.startswith('minijit.')\n"
            "       and not m.startswith('minijit.grading')]\n"
            "assert not bad, bad\n"
            "assert minijit.__file__.startswith(sys.argv[1]), minijit.__file__\n")
    subprocess.run([sys.executable, "-c", code, str(tmp_path)], env=env, cwd=tmp_path,
                   check=True)
    run = subprocess.run(
        [sys.executable, "-m", "minijit.grading", "generate", "--check",
         "--solutions", str(FIXTURES / "solutions"), "--exercises", str(FIXTURES / "exercises")],
        env=env, cwd=tmp_path, capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    assert "in sync" in run.stdout


# ---------------------------------------------------------------------------- batch inputs


def test_submissions_students_and_exercises(tmp_path):
    from minijit.grading.scoring import GradingSetupError
    from minijit.grading.submissions import find_submissions, select_exercises, student_names

    for folder in ["a", "b", "b/.ipynb_checkpoints"]:
        (tmp_path / folder).mkdir()
    # A check cell counts; markdown naming another exercise does not.
    nbformat.write(nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_markdown_cell("see ex00_add"),
        nbformat.v4.new_code_cell('check("ex00_mean")')]), tmp_path / "a" / "alice.ipynb")
    (tmp_path / "b" / "alice.ipynb").write_text("{}")
    (tmp_path / "b" / "bob.ipynb").write_text("{}")
    (tmp_path / "b" / ".ipynb_checkpoints" / "bob-checkpoint.ipynb").write_text("{}")
    (tmp_path / "b" / "notes.txt").write_text("")
    paths = find_submissions([tmp_path / "a", tmp_path / "b", tmp_path / "b" / "bob.ipynb"])
    assert [p.name for p in paths] == ["alice.ipynb", "alice.ipynb", "bob.ipynb"]
    assert student_names(paths) == ["a/alice", "b/alice", "b/bob"]
    with pytest.raises(GradingSetupError):
        find_submissions([tmp_path / "missing"])
    exercises = load_exercises([DEMO])
    assert [e.id for e in select_exercises(paths, exercises)] == ["ex00_mean"]
    assert [e.id for e in select_exercises(paths[1:], exercises)] == list(exercises)
    assert len(select_exercises(paths, exercises, ["00_demo"])) == 3
    with pytest.raises(GradingSetupError):
        select_exercises(paths, exercises, ["ex99_nope"])


def test_csv_cells_cannot_be_formulas():
    from minijit.grading.gradebook import _cell

    assert _cell("=HYPERLINK(1)") == "'=HYPERLINK(1)" and _cell("alice") == "alice"
