"""Feedback files a student can read and an LMS can show (minijit/grading/feedback*.py).

- whatever a submission or its kernel put in a row (messages, values, names), the Markdown
  rendered by a real renderer (mistune, with raw HTML let through) holds no element from it:
  no image, script or link, no heading, no table row, one total line, and the text itself
  shows literally;
- the page (``<name>.html``) uses only its template's tags and attributes, forbids scripts
  in a Content-Security-Policy, and shows the student's own answer cells, escaped, read from
  the notebook as data;
- a case with no result says why, never "got None";
- cells are named by exercise and first line, and a demonstration tagged raises-exception
  that raised is not reported.
"""

from __future__ import annotations

import json
import os
from html.parser import HTMLParser
from pathlib import Path

import mistune
import pytest

from minijit.grading.cases import Case, Exercise
from minijit.grading.feedback import NEWLINE, clean, feedback_markdown
from minijit.grading.feedback_html import CSP, TAGS, answer_cells, feedback_html, write_feedback
from minijit.grading.limits import Limits
from minijit.grading.run_result import NOTE, RunResult
from minijit.grading.runner import _label, run_submission
from minijit.grading.scoring import ExerciseScore, FailedCase, Row, build_plan, make_row

HOSTILE = [
    "boom\n\n**Total: 1 / 1 points.** Status: `ok`.\n\n# Full marks",
    "<img src=x onerror=alert(1)>",
    "<script>alert(1)</script>",
    "<!-- hidden --> x",
    "``` ```` `` ` code",
    "| a | b |\n|---|---|\n| c | d |",
    "first\n\n\nlast",
    "[x](javascript:alert(1)) ![y](http://e.example/i.png) <http://e.example>",
    "line\u2028# heading\u2029- item",
    "lone \ud800 surrogate \x1b[31m red \u202e",
    "&lt;b&gt; &amp; &#60;script&#62;",
    "[ref]: http://e.example\n[ref]",
    "- a list\n1. numbered\n> quote\n    indented\n===",
    "*em* _em_ __strong__ ~~gone~~ $x^2$ \\",
    "<a href='http://e.example'>link</a>",
]
# What the Markdown can make of itself: anything else came from a row
MARKDOWN_TAGS = {"h1", "h2", "p", "strong", "code", "pre", "ul", "li", "table", "thead",
                 "tbody", "tr", "th", "td"}
ATTRIBUTES = {("lang", "en"), ("charset", "utf-8"), ("class", "t"), ("class", "full"),
              ("class", "lost"), ("http-equiv", "Content-Security-Policy"), ("content", CSP)}


def _probe(ns, x):
    return x


def _exercise(i: int, title: str = "Title", **kwargs) -> Exercise:
    return Exercise(id=f"ex00_e{i}", points=2, title=title, chapter="00_demo",
                    section="Sec", hint="h", probe=_probe, reference=dict, public=(),
                    **kwargs)


def _error(message: str) -> dict:
    return {"__error__": {"type": "ValueError", "message": message, "line": ""}}


def _row(h: str, path: Path | None = None) -> Row:
    """A row with ``h`` wherever a submission or a kernel can put text."""
    failed = ExerciseScore(
        _exercise(1, title=h, case_hints={h: h}), points=0.5, public=(0, 1), hidden=(1, 2),
        failed_public=[FailedCase(h, h, _error(h), h, h)],
        failed_hidden=[Case("secret", category=h)], specific=True)
    own = ExerciseScore(_exercise(2), public=(0, 1), not_own=h)
    timed = ExerciseScore(_exercise(3), public=(0, 1), outcome="timeout",
                          failed_public=[FailedCase("slow", 1, None, "x", h)])
    run = RunResult()
    run.add("error", f"the cell starting `x = 1`: ValueError: {h}")
    run.add(NOTE, h)
    row = Row(h, path, {s.exercise.id: s for s in (failed, own, timed)}, "error", 1.0,
              run.events)
    row.adjustments = [h]
    return row


class _Tags(HTMLParser):
    def __init__(self, html: str):
        super().__init__(convert_charrefs=True)
        self.tags, self.attrs, self.text, self.open = [], set(), [], []
        self.headings, self.strong, self.other = [], [], []
        self.feed(html)

    def handle_comment(self, data):
        self.other.append(f"<!--{data}-->")

    def handle_pi(self, data):
        self.other.append(f"<?{data}>")

    def unknown_decl(self, data):
        self.other.append(f"<![{data}]>")

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        self.attrs |= set(attrs)
        self.open.append([tag, ""])

    def handle_endtag(self, tag):
        while self.open:
            name, text = self.open.pop()
            if name in ("h1", "h2"):
                self.headings.append((name, text))
            if name == "strong":
                self.strong.append(text)
            if name == tag:
                break

    def handle_data(self, data):
        self.text.append(data)
        for entry in self.open:
            entry[1] += data


def _shows(text: str, h: str) -> bool:
    """Every line of ``h`` (as cleaned) is in ``text``, whitespace aside."""
    flat = " ".join(text.split())
    return all(" ".join(line.split()) in flat for line in clean(h).split("\n"))


@pytest.mark.parametrize("h", HOSTILE)
def test_markdown_from_a_submission_renders_as_text(h):
    md = feedback_markdown(_row(h))
    html = mistune.create_markdown(escape=False, plugins=[
        "table", "strikethrough", "url", "footnotes", "math", "mark"])(md)
    found = _Tags(html)
    assert set(found.tags) <= MARKDOWN_TAGS, (set(found.tags) - MARKDOWN_TAGS, md)
    assert not found.attrs, (found.attrs, md)
    assert [n for n, _ in found.headings] == ["h1", "h2", "h2", "h2", "h2", "h2"], md
    assert [t for t in found.strong if t.startswith("Total")] == ["Total: 0.5 / 6 points."]
    assert found.tags.count("tr") == 4, md  # the header and three exercises
    assert not found.other, found.other
    # inline, the text is on one line; a message's other lines are in a block of its own
    assert found.headings[0][1] == "Feedback: " + NEWLINE.join(clean(h).split("\n")).strip()
    text = "".join(found.text)
    assert _shows(text, h), (h, text)
    assert "got None" not in text and "no result: its tests ran past the time limit" in text


@pytest.mark.parametrize("h", HOSTILE)
def test_the_page_has_the_templates_tags_only(h, tmp_path):
    nb = tmp_path / "s.ipynb"
    nb.write_text(json.dumps({"cells": [
        {"cell_type": "code", "source": ["# EXERCISE ex00_e1 (2 points)\n", h]},
        {"cell_type": "code", "source": 'check("ex00_e1")'}]}))
    page = feedback_html(_row(h, nb))
    found = _Tags(page)
    assert set(found.tags) <= TAGS, set(found.tags) - TAGS
    assert found.attrs <= ATTRIBUTES, found.attrs - ATTRIBUTES
    assert ("http-equiv", "Content-Security-Policy") in found.attrs
    assert "default-src 'none'" in CSP and "script" not in CSP
    assert [t for t in found.strong if t.startswith("Total")] == ["Total: 0.5 / 6 points."]
    assert [t for n, t in found.headings if n == "h1"] == ["Feedback: " + clean(h)]
    assert not found.other
    text = "".join(found.text)
    assert _shows(text, h) and "Your answer (1 cell)" in text
    assert "secret" not in text and "secret" not in feedback_markdown(_row(h))


def test_answer_cells_are_read_as_data_and_capped(tmp_path):
    nb = tmp_path / "s.ipynb"
    cells = ["import os", "# EXERCISE ex00_a (1 point)\nx = 1", "y = 2", 'check("ex00_a")',
             "after = 3", "# EXERCISE ex00_b (1 point)\nz = 4"]
    nb.write_text(json.dumps({"cells": [{"cell_type": "code", "source": c} for c in cells]}))
    assert answer_cells(nb) == {"ex00_a": [cells[1], cells[2]], "ex00_b": [cells[5]]}
    link = tmp_path / "link.ipynb"  # the grader reads no link leading out of its folder
    link.symlink_to(nb)
    for bad in (None, tmp_path / "missing.ipynb", tmp_path, link):
        assert answer_cells(bad) == {}
    nb.write_text("[" * 100_000)
    assert answer_cells(nb) == {}
    fifo = tmp_path / "fifo.ipynb"
    os.mkfifo(fifo)
    assert answer_cells(fifo) == {}  # returns at once: a FIFO is not read


def test_both_files_are_written_and_links_replaced(tmp_path):
    (tmp_path / "precious").write_text("keep")
    (tmp_path / "ann.html").symlink_to("precious")
    write_feedback(tmp_path / "ann.md", _row("ann"))
    assert (tmp_path / "precious").read_text() == "keep"
    assert not (tmp_path / "ann.html").is_symlink()
    assert (tmp_path / "ann.html").read_text().startswith("<!DOCTYPE html>")
    assert (tmp_path / "ann.md").read_text().startswith("# Feedback: ann")


def test_a_timed_out_case_says_it_has_no_result():
    ex = Exercise(id="ex00_t", points=1, title="T", chapter="00_demo", section="S",
                  hint="h", probe=_probe, reference=dict, public=(Case("one", (1,)),),
                  hidden=(Case("two", (2,)),))
    plan = build_plan([ex])
    row = make_row("s", Path("s.ipynb"), plan, RunResult(outcome={ex.id: "timeout"}))
    text = feedback_markdown(row)
    assert "**one**: expected `1`; no result: its tests ran past the time limit." in text
    assert "None" not in text and "Why:" not in text
    assert "None" not in feedback_html(row)


def test_cells_are_named_by_exercise_and_first_line():
    sources = ["import numpy as np", "# EXERCISE ex02_where (1 point)\nx = 1",
               'check("ex02_where")', "\n\n  jit(f)(x)  \nmore", "y" * 80]
    assert [_label(sources, i) for i in range(5)] == [
        "the cell starting `import numpy as np`", "the ex02_where cell",
        'the check("ex02_where") cell', "the cell after ex02_where starting `jit(f)(x)`",
        f"the cell after ex02_where starting `{'y' * 57}...`"]


def test_a_demonstration_that_raised_is_not_reported(tmp_path):
    def cell(source, tagged=False):
        return {"cell_type": "code", "id": f"c{len(source)}", "source": source,
                "execution_count": None,
                "outputs": [], "metadata": {"tags": ["raises-exception"]} if tagged else {}}

    nb = tmp_path / "s.ipynb"
    nb.write_text(json.dumps({"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": [
        cell("# EXERCISE ex00_x (1 point)\nx = 1"),
        cell("1 / 0  # the demonstration", tagged=True),
        cell("y = 2  # tagged, yet fine", tagged=True),
        cell("int('nope')")]}))
    run = run_submission(nb, (), Limits(cell_timeout=20, timeout=60))
    assert [(e.kind, e.message) for e in run.events] == [
        (NOTE, "the cell after ex00_x starting `y = 2  # tagged, yet fine` did not raise, "
               "though it is tagged raises-exception: the error it demonstrates did not "
               "happen"),
        ("error", "the cell after ex00_x starting `int('nope')`: ValueError: invalid "
                  "literal for int() with base 10: 'nope'")], run.events
