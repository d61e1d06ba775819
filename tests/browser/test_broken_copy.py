"""The checking code in lab.py catches what a learner would see as broken.

Each test builds a small notebook with nbformat, serves it from the same JupyterLab as the
chapters, and runs it through `lab.check_notebook`, the very function the chapter tests use.
A healthy notebook must come out clean; each deliberately broken one must be reported.
"""

from __future__ import annotations

import pytest

from . import lab, notebooks

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.xdist_group("browser")]


@pytest.fixture
def shots(screenshot_dir):
    return screenshot_dir / "selftest"


def _check(page, server, shots, name: str, kernel: str | None = None) -> lab.Checked:
    nb = getattr(notebooks, name)()
    if kernel:
        nb.metadata["kernelspec"] = {"name": kernel, "display_name": kernel, "language": "python"}
    rel = server.add_notebook(nb, f"selftest/{name}.ipynb")
    return lab.check_notebook(page, server, rel, screenshot_name=name, screenshot_dir=shots)


def _problems(checked: lab.Checked) -> str:
    return "\n".join(checked.problems) or "(no problems reported)"


@pytest.mark.timeout(lab.seconds(300))
def test_healthy_notebook_passes(page, lab_server, shots, record_property):
    checked = _check(page, lab_server, shots, "healthy")
    record_property("browser_summary", checked.summary())
    assert not checked.problems, checked.failure_message()
    # The expected error (tagged raises-exception) was seen, and exempted, not missed.
    tagged = [c for c in checked.report.cells if "raises-exception" in c["tags"]]
    assert tagged and tagged[0]["errors"], "the raises-exception cell showed no error"
    assert checked.interaction and "slider" in checked.interaction
    images = checked.report.images
    assert len(images) >= 2 and all(i["png"] and i["naturalWidth"] > 0 for i in images)
    assert checked.report.widget_views == 4
    assert checked.screenshot is not None and checked.screenshot.stat().st_size > 10_000


@pytest.mark.timeout(lab.seconds(300))
def test_exception_in_interact_callback_is_reported(page, lab_server, shots):
    checked = _check(page, lab_server, shots, "interact_raises")
    # Before the slider moved, nothing was wrong: an nbclient run of this notebook passes.
    assert checked.interaction is not None, _problems(checked)
    assert any(
        "widget output" in p and "deliberately broken callback" in p for p in checked.problems
    ), _problems(checked)


@pytest.mark.timeout(lab.seconds(300))
def test_error_cell_unrendered_widget_dead_slider_and_page_error_are_each_reported(
        page, lab_server, shots):
    checked = _check(page, lab_server, shots, "four_faults")
    assert any(
        "error in cell output" in p and "RuntimeError: deliberately broken cell" in p
        for p in checked.problems
    ), _problems(checked)
    assert any("widget failed to render" in p for p in checked.problems), _problems(checked)
    assert any("changed any output" in p for p in checked.problems), _problems(checked)
    assert any("JavaScript error in the page" in p and "deliberately broken page" in p
               for p in checked.problems), _problems(checked)
    assert len(checked.problems) == 4, _problems(checked)


@pytest.mark.timeout(lab.seconds(300))
def test_figure_shown_as_text_is_reported(page, lab_server, shots):
    kernel = lab_server.add_kernelspec("agg-backend", {"MPLBACKEND": "Agg"})
    checked = _check(page, lab_server, shots, "figure_as_text", kernel=kernel)
    assert any("matplotlib figure shows as text" in p for p in checked.problems), _problems(checked)
