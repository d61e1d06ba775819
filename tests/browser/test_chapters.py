"""Chapters in a real JupyterLab: opened from its URL, all cells run, a widget moved.

What only a browser sees: an exception in an `interact` callback lands in the widget's
Output (not in the cell outputs nbclient reads), a widget or an image can fail to render,
a control can be in the page with no size, and the page's JavaScript can throw. Whether
each chapter runs top to bottom without an unexpected error is tests/test_notebooks.py's job
(nbclient, every chapter), and the course's drawings and widgets are tested in-process
(tests/test_course*.py); running every chapter here too would repeat those runs (about 20 s
of a worker per chapter).

So the browser runs the fewest chapters that together show every kind of output and every
kind of control the course has (`BROWSER_CHAPTERS`; `test_the_chosen_chapters_cover_every
_kind` checks the choice against all chapters, so a new widget or output in another chapter
fails here until a chapter showing it is added). A screenshot of each goes to
<screenshots>/<chapter>.png (see README.md: pytest's temporary folder, or
$MINIJIT_SCREENSHOTS).
"""

from __future__ import annotations

import re

import pytest

from . import lab

CHAPTER_FILES = sorted(lab.REPO.joinpath("chapters").glob("*.ipynb"))

# The chapters run here, and what each shows (kinds: see `_kinds`).
BROWSER_CHAPTERS = (
    # (01_why_jit, `interact` with a FloatLogSlider redrawing a plot and images, runs in its
    # Chinese twin, whose code is the same: ZH_CHAPTERS below)
    # `interactive` (the cell's value, not displayed by `interact`) with Dropdowns
    # (promotion_explorer); errors in cells tagged raises-exception, stderr
    "03_the_ir",
    # `interact` with an IntSlider and the course's only SelectionSlider redrawing a plot
    # (bucket_explorer); expected errors, stderr, images
    "04_jit_and_the_cache",
    # pass_stepper: Dropdown, Text, Textarea, IntSlider, Play, Button, an HTML view (and so
    # chapter 08's; chapter 10's record_stepper has a subset of these controls)
    "07_cleanup_passes",
)

# Where a chapter's controls come from: a course helper it calls builds them.
_HELPERS = {
    "bucket_explorer": {"interact", "IntSlider", "SelectionSlider"},
    "newton_explorer": {"interact", "IntSlider"},
    "run_counts_slider": {"interactive", "IntSlider"},
    "promotion_explorer": {"interactive", "Dropdown"},
    "pass_stepper": {"Dropdown", "Text", "Textarea", "IntSlider", "Play", "Button", "HTML"},
    "record_stepper": {"HTML", "Button", "IntSlider", "Play"},
}
_WIDGETS = ("interactive", "interact", "FloatLogSlider", "IntSlider", "FloatSlider",
            "SelectionSlider", "Dropdown", "Textarea", "Text", "Play", "Button", "Checkbox",
            "ToggleButtons", "RadioButtons", "Output")


def _kinds(path) -> set[str]:
    """What a chapter shows, read from its source: the widgets and controls it builds
    (directly or through a course helper), plots, HTML displays, expected errors."""
    import nbformat

    kinds: set[str] = set()
    for cell in nbformat.read(path, as_version=4).cells:
        if cell.cell_type != "code":
            continue
        src = cell.source
        if "raises-exception" in cell.metadata.get("tags", []):
            kinds.add("expected error")
        for helper, widgets in _HELPERS.items():
            if re.search(rf"\b{helper}\(", src):
                kinds |= widgets
        kinds |= {w for w in _WIDGETS if re.search(rf"\bwidgets\.{w}\b|\b{w}\(", src)
                  and ("widgets" in src or "ipywidgets" in src)}
        if re.search(r"\bplt\.|plot_profile\(|draw_\w+\(", src):
            kinds.add("plot")
        if re.search(r"\bHTML\(", src):
            kinds.add("HTML")
    return kinds


def test_the_chosen_chapters_cover_every_kind():
    """Every kind of output or control some chapter shows is shown by a chapter run here."""
    by_name = {p.stem: p for p in CHAPTER_FILES}
    if not by_name:
        pytest.skip("chapters/ has no notebooks yet")
    missing = [c for c in BROWSER_CHAPTERS if c not in by_name]
    assert not missing, f"BROWSER_CHAPTERS names chapters that do not exist: {missing}"
    zh = lab.REPO / "chapters" / "zh"
    covered = set().union(*(_kinds(by_name[c]) for c in BROWSER_CHAPTERS),
                          *(_kinds(zh / f"{c}.ipynb") for c in ZH_CHAPTERS))
    for path in CHAPTER_FILES:
        extra = _kinds(path) - covered
        assert not extra, (
            f"{path.name} shows {sorted(extra)}, which no chapter in BROWSER_CHAPTERS shows: "
            "add it (or one showing those) to BROWSER_CHAPTERS in tests/browser/test_chapters.py")


def _params():
    chosen = [p for p in CHAPTER_FILES if p.stem in BROWSER_CHAPTERS]
    if not chosen:
        return [
            pytest.param(
                None,
                id="no-chapters",
                marks=pytest.mark.skip(reason="chapters/ has no notebooks yet: nothing to run"),
            )
        ]
    return [pytest.param(p, id=p.stem) for p in chosen]


@pytest.mark.browser
@pytest.mark.slow
@pytest.mark.xdist_group("browser")
@pytest.mark.timeout(lab.seconds(lab.RUN_ALL_S + 300))
@pytest.mark.parametrize("chapter", _params())
def test_chapter_runs_in_jupyterlab(chapter, page, lab_server, screenshot_dir, record_property):
    rel = f"chapters/{chapter.name}"
    checked = lab.check_notebook(
        page, lab_server, rel, screenshot_name=chapter.stem, screenshot_dir=screenshot_dir
    )
    record_property("browser_summary", checked.summary())
    assert not checked.problems, checked.failure_message()


# Two chapters of the Chinese course: the welcome (prose) and chapter 01 (plots, a slider;
# the English 01 is not run here: its code is this one's, and nbclient runs it).
ZH_CHAPTERS = ("00_welcome", "01_why_jit")
CJK = re.compile(r"[\u4e00-\u9fff]")
# Two different Chinese characters drawn in the notebook's own font: a font without them
# draws the same empty box for both (and for an unassigned code point), so equal pixels
# mean tofu.
_GLYPHS_DRAWN = r"""() => {
  const el = document.querySelector('.jp-RenderedMarkdown p') || document.body;
  const canvas = document.createElement('canvas');
  canvas.width = canvas.height = 48;
  const g = canvas.getContext('2d');
  g.font = '32px ' + getComputedStyle(el).fontFamily;
  const draw = ch => {
    g.clearRect(0, 0, 48, 48);
    g.fillText(ch, 4, 36);
    return Array.from(g.getImageData(0, 0, 48, 48).data).join(',');
  };
  const a = draw('\u8ffd'), b = draw('\u8e2a'), none = draw('\u{10fffd}');
  return {family: getComputedStyle(el).fontFamily, distinct: a !== b && a !== none};
}"""


@pytest.mark.browser
@pytest.mark.slow
@pytest.mark.xdist_group("browser")
@pytest.mark.timeout(lab.seconds(lab.RUN_ALL_S + 300))
@pytest.mark.parametrize("chapter", ZH_CHAPTERS)
def test_chinese_chapter_renders_in_jupyterlab(chapter, page, lab_server, screenshot_dir,
                                               record_property):
    """A chapter of chapters/zh runs as the English one does, its Chinese text is drawn with
    real glyphs, and its plots have no missing glyph (the kernel, started in chapters/zh,
    speaks Chinese and gives matplotlib a CJK font: minijit/course/fonts.py)."""
    if not (lab.REPO / "chapters" / "zh" / f"{chapter}.ipynb").exists():
        pytest.fail(f"chapters/zh/{chapter}.ipynb is missing: run `python -m "
                    "minijit.course.translate build`")
    checked = lab.check_notebook(page, lab_server, f"chapters/zh/{chapter}.ipynb",
                                 screenshot_name=f"zh_{chapter}", screenshot_dir=screenshot_dir)
    record_property("browser_summary", checked.summary())
    assert not checked.problems, checked.failure_message()
    shown = page.evaluate("() => document.querySelector('.jp-NotebookPanel:not(.lm-mod-hidden)"
                          " .jp-Notebook').innerText")
    assert len(CJK.findall(shown)) > 200, shown[:500]
    assert "missing from font" not in shown  # matplotlib's warning for a glyph it lacks
    glyphs = page.evaluate(_GLYPHS_DRAWN)
    assert glyphs["distinct"], f"Chinese characters render as boxes in {glyphs['family']}"
