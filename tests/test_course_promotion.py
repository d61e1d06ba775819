"""minijit.course.promotion: chapter 03's promotion explorer prints minijit's dtype next to
NumPy's (or the error NumPy raises) and minijit's jaxpr."""

from __future__ import annotations

import pytest

from minijit.course.promotion import (
    ARRAY_DTYPES,
    OPERATORS,
    PYTHON_SCALARS,
    promotion_explorer,
    show_promotion,
)


@pytest.mark.parametrize("left, op, right, first_line", [
    ("int32", "+", "float32", "int32 array + float32  ->  minijit: float32   NumPy: float64"),
    ("int32", "+", "Python float 0.5",
     "int32 array + Python float 0.5  ->  minijit: float64   NumPy: float64"),
    ("uint64", "*", "int64", "uint64 array * int64  ->  minijit: float64   NumPy: float64"),
])
def test_show_promotion_prints_both_dtypes_then_the_jaxpr(capsys, left, op, right, first_line):
    show_promotion(left, op, right)
    out = capsys.readouterr().out.splitlines()
    assert out[0] == first_line
    assert out[1] == "" and out[2].startswith("{ lambda ")


def test_numpys_refusal_is_shown_as_its_error(capsys):
    show_promotion("int8", "+", "Python int 300")
    first = capsys.readouterr().out.splitlines()[0]
    assert first.startswith("int8 array + Python int 300  ->  minijit: int8   NumPy: "
                            "OverflowError: ")


def test_a_python_scalar_is_a_literal_not_an_argument(capsys):
    show_promotion("float32", "*", "Python float 0.5")
    out = capsys.readouterr().out
    assert "{ lambda ; a:f32[3]. let b:f32[3] = mul a 0.5:f32[] in (b,) }" in out


def test_the_explorer_offers_every_choice_and_starts_where_asked():
    pytest.importorskip("ipywidgets")
    widget = promotion_explorer(left="uint8", op="/", right="Python int 2")
    left, op, right = (c for c in widget.children if hasattr(c, "options"))
    assert list(left.options) == list(ARRAY_DTYPES) and left.value == "uint8"
    assert list(op.options) == list(OPERATORS) and op.value == "/"
    assert list(right.options) == [*ARRAY_DTYPES, *PYTHON_SCALARS]
    assert right.value == "Python int 2"
