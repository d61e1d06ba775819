"""Every chapter in a real JupyterLab: opened from its URL, all cells run, widgets moved.

Learners meet the course in JupyterLab, and two things only a browser sees: an exception in
an `interact` callback lands in the widget's Output (not in the cell outputs nbclient reads),
and a widget can fail to render. A screenshot of each chapter goes to
<screenshots>/<chapter>.png (see README.md: pytest's temporary folder, or $MINIJIT_SCREENSHOTS).
"""

from __future__ import annotations

import pytest

from . import lab

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.xdist_group("browser")]

CHAPTER_FILES = sorted(lab.REPO.joinpath("chapters").glob("*.ipynb"))


def _params():
    if not CHAPTER_FILES:
        return [
            pytest.param(
                None,
                id="no-chapters",
                marks=pytest.mark.skip(reason="chapters/ has no notebooks yet: nothing to run"),
            )
        ]
    return [pytest.param(p, id=p.stem) for p in CHAPTER_FILES]


@pytest.mark.timeout(lab.seconds(lab.RUN_ALL_S + 300))
@pytest.mark.parametrize("chapter", _params())
def test_chapter_runs_in_jupyterlab(chapter, page, lab_server, screenshot_dir, record_property):
    rel = f"chapters/{chapter.name}"
    checked = lab.check_notebook(
        page, lab_server, rel, screenshot_name=chapter.stem, screenshot_dir=screenshot_dir
    )
    record_property("browser_summary", checked.summary())
    assert not checked.problems, checked.failure_message()
