"""Predictions stay predictions: an exercise that asks for a prediction made before running
checks its form in public (what `check()` runs, and what the release stores) and its value
in hidden cases only, so a failed `check()` never prints the answer."""

from __future__ import annotations

import pytest

from minijit.grading.checking import expected_value, run_public_cases
from minijit.grading.registry import default_exercises

# exercise id -> the name that holds the prediction
PREDICTIONS = {
    "ex02_print_count": "PREDICTED_PRINTS",
    "ex10_cache_entries": "PREDICTED_ENTRIES",
    "ex10_pays_off": "VERDICTS",
}


def _answer(ex_id):
    name = PREDICTIONS[ex_id]
    return default_exercises()[ex_id].reference()[name]


def _wrong_of_the_right_form(ex_id):
    right = _answer(ex_id)
    if isinstance(right, int):
        return right + 7
    if isinstance(right, dict):
        return {k: not v for k, v in right.items()}
    return ["new" if a != "new" else 0 for a in right]


@pytest.mark.parametrize("ex_id", sorted(PREDICTIONS))
def test_no_public_case_holds_the_answer(ex_id):
    exercise = default_exercises()[ex_id]
    right = _answer(ex_id)
    for key, case, public in exercise.cases():
        if public:
            assert expected_value(exercise, key, case) != right, (key, case.name)
    hidden = [expected_value(exercise, key, case) for key, case, public in exercise.cases()
              if not public]
    assert right in hidden  # the value is graded, in a hidden case


@pytest.mark.parametrize("ex_id", sorted(PREDICTIONS))
def test_a_wrong_prediction_of_the_right_form_is_not_revealed(ex_id):
    exercise = default_exercises()[ex_id]
    ns = dict(exercise.reference())
    right = ns[PREDICTIONS[ex_id]]
    ns[PREDICTIONS[ex_id]] = _wrong_of_the_right_form(ex_id)
    report = run_public_cases(exercise, ns)
    assert report.all_passed, str(report)
    assert repr(right) not in str(report)
