"""A failed hidden case is named by its category, and the pitfall hint follows the failure.

- `category_of` gives every case a few words that state no input: its own `category`, its
  program's, or the heading its name starts with; never a whole name, which may hold the
  inputs (the feedback of tests/test_grading_demo.py must not show "2-d broadcast");
- the feedback counts failed hidden cases by category, adds the exercise's hint for a
  category (`case_hints`) when some other case passed, and shows no hidden input;
- check()'s pitfall for a failed row is the hint for that case's name or category when some
  other case passed, else the exercise's general hint; the release keeps the keyed hints a
  public case selects and no other;
- the course's keyed hints point at real sections, never quote a solution, and every key is
  the name or category of one of the exercise's cases.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from test_grading_course import EXERCISES, _headings, _solution_lines

from minijit.grading.cases import (
    CODE,
    OTHER_CATEGORY,
    PITFALL,
    Case,
    Exercise,
    Hint,
    as_hint,
    category_of,
)
from minijit.grading.checking import run_public_cases
from minijit.grading.feedback import feedback_markdown
from minijit.grading.probing import get
from minijit.grading.released_module import render_module
from minijit.grading.runner import RunResult
from minijit.grading.scoring import build_plan, make_row

REPO = Path(__file__).resolve().parent.parent


def probe_twice(ns, x):
    return get(ns, "twice")(x)


LOOPS = Hint("A loop body runs again: what it returns must not depend on earlier runs.",
             code="Start from the carry each time.")
EXERCISE = Exercise(
    id="ex00_twice", points=3, title="Twice", chapter="00_demo", section="1. Twice",
    hint=Hint("Multiply by two.", code="return 2 * x"), probe=probe_twice,
    reference=lambda: {"twice": lambda x: 2 * x},
    public=(Case("positive: 3", (3,)), Case("zero", (0,), category="a loop body"),
            Case("negative: -4", (-4,))),
    hidden=(Case("loops: 7", (7,), category="a loop body"), Case("negative: -1", (-1,)),
            Case("secret inputs 5 and 6", (5,))),
    case_hints={"a loop body": LOOPS, "positive: 3": "Positive numbers double too.",
                "unused": "only hidden cases' categories"},
)


def _feedback(twice) -> str:
    plan = build_plan([EXERCISE])
    calls = [c for p in plan.probes for c in p.calls + p.hidden]
    run = RunResult(results={c.key: probe_twice({"twice": twice}, *c.args) for c in calls},
                    outcome={EXERCISE.id: "ran"})
    return feedback_markdown(make_row("s", Path("s.ipynb"), plan, run))


def test_a_category_states_no_input():
    assert category_of(Case("x: 1", category="a loop body")) == "a loop body"
    assert category_of(Case("program fori_loop (seed 1)")) == "a loop body"
    assert category_of(Case("program scale_shift")) == "a captured constant"
    assert category_of(Case("elapsed: near the largest int32")) == "elapsed"
    assert category_of(Case("float32 (unsigned: also exact): x")) == "float32"
    assert category_of(Case("rank 3: (2, 3, 4) minus (2, 1, 4)")) == "rank 3"
    assert category_of(Case("a 2-d input's rows: [[1, 2]]")) == "a 2-d input's rows"
    for name in ("2-d broadcast", "secret-case-name", "lengths 1 to 40: padded",
                 "x * 2.0 twice: two literals", "equal totals at 2 calls: compile 2 s",
                 "t = 0: shifted", "mode 'sum': two"):
        assert category_of(Case(name)) == OTHER_CATEGORY, name


@pytest.mark.parametrize("ex_id", sorted(EXERCISES))
def test_no_course_case_is_named_by_its_whole_name(ex_id):
    """A derived category is never a hidden case's name (an author's own may be)."""
    for case in EXERCISES[ex_id].hidden:
        if case.category is None:
            assert category_of(case) != case.name, (ex_id, case.name)


def test_feedback_names_failed_hidden_cases_by_category():
    text = _feedback(lambda x: 2 * x if x not in (7, 5) else 0)
    assert "2 of 3 hidden cases failed: a loop body (1), other inputs (1)" in text, text
    assert f"Hint for a loop body: {LOOPS.pitfall}" in text
    assert LOOPS.code not in text  # the code tier is for the notebook only
    for secret in ("loops", "secret", "7", "5 and 6"):
        assert secret not in text, secret
    # every case failed: no one category's hint, the count still comes by category
    text = _feedback(lambda x: None)
    assert "3 of 3 hidden cases failed: a loop body (1), negative (1), other inputs (1)" in text
    assert "Hint for" not in text and LOOPS.pitfall not in text


def test_the_pitfall_follows_the_failed_case():
    def rows(twice, **kwargs):
        report = run_public_cases(EXERCISE, {"twice": twice}, **kwargs)
        return {r.name: r.hints for r in report.rows if not r.passed}

    # one case fails: its name's hint, or its category's (with that hint's code tier)
    assert rows(lambda x: 2 * x if x != 3 else 0)["positive: 3"][PITFALL] == (
        "Positive numbers double too.")
    zero = rows(lambda x: 2 * x if x != 0 else 1, hint=True)["zero"]
    assert (zero[PITFALL], zero[CODE]) == (LOOPS.pitfall, LOOPS.code)
    # a case without a keyed hint gets the general one
    assert rows(lambda x: 2 * x if x > -4 else 0)["negative: -4"][PITFALL] == "Multiply by two."
    # every case fails: what went wrong is no one case's, the general hint for all
    assert {h[PITFALL] for h in rows(lambda x: 2 * x + 1).values()} == {"Multiply by two."}


def test_the_release_keeps_the_keyed_hints_of_public_cases_only():
    source = render_module([EXERCISE])
    assert "category='a loop body'" in source
    assert "'a loop body': Hint(" in source and "'positive: 3':" in source
    assert "unused" not in source and "loops: 7" not in source


def _keyed_texts(ex) -> list[str]:
    return [t for h in ex.case_hints.values() for t in (as_hint(h).pitfall, as_hint(h).code)
            if t]


@pytest.mark.parametrize("ex_id", sorted(EXERCISES))
def test_course_keyed_hints_fit_their_exercise(ex_id):
    import re

    ex = EXERCISES[ex_id]
    cases = ex.public + ex.hidden
    keys = {c.name for c in cases} | {category_of(c) for c in cases}
    assert set(ex.case_hints) <= keys, set(ex.case_hints) - keys
    numbers = {h.split(".", 1)[0] for h in _headings(ex.chapter) if re.match(r"\d+\. ", h)}
    for text in _keyed_texts(ex):
        if not re.search(r"[Cc]hapter \d\d", text):
            for n in re.findall(r"[Ss]ection (\d+)", text):
                assert n in numbers, f"{ex_id}: a keyed hint names section {n}: {text}"


@pytest.mark.parametrize("path", sorted((REPO / "solutions").glob("*.ipynb")),
                         ids=lambda p: p.stem)
def test_course_keyed_pitfalls_do_not_quote_the_solution(path):
    for ex_id, lines in _solution_lines(path).items():
        pitfalls = ["".join(as_hint(h).pitfall.split())
                    for h in EXERCISES[ex_id].case_hints.values()]
        for line in lines:
            if len(line) >= 16 and not line.startswith("#"):
                assert not any(line in text for text in pitfalls), (ex_id, line)
