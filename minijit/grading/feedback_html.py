"""The feedback as one self-contained page, ``<name>.html``, and the writer of both files.

The page shows what ``<name>.md`` shows (:mod:`minijit.grading.feedback` decides what that
is, and what is never shown), and also the student's own answer: the code cells of each
exercise, read from the submitted notebook as JSON data in the grader's process (never run,
never through a link).
Invariants:

- *No markup from a submission:* every string not spelled here goes through
  :func:`html.escape` (after :func:`~minijit.grading.feedback.clean`), into element text
  only. Every tag and attribute of the page is this module's (the tags are :data:`TAGS`);
  no attribute holds data.
- *Self-contained and inert:* inline CSS, no script, no external resource, and a
  Content-Security-Policy that forbids anything but the inline style, so a page an LMS or a
  browser shows runs nothing even if it were altered.
- *Capped:* a notebook over :data:`MAX_NOTEBOOK_BYTES` (or not a regular file) shows no
  answer; each exercise shows at most :data:`MAX_CELLS` cells of :data:`MAX_CELL_CHARS`.
"""

from __future__ import annotations

import json
import os
import stat
from html import escape
from pathlib import Path

from .cases import describe
from .feedback import (
    ADJUSTED,
    HEADINGS,
    RAN,
    adjustments,
    clean,
    feedback_markdown,
    hidden_summary,
    no_result,
    num,
    outcome_words,
    shown_events,
    total_words,
)
from .files import replace_file
from .messages import language, tr, translate
from .notebook import check_call, exercise_header
from .scoring import ExerciseScore, Row
from .submissions import code_sources

MAX_NOTEBOOK_BYTES = 8 * 2**20
MAX_CELLS = 6
MAX_CELL_CHARS = 8000
TAGS = frozenset({"html", "head", "meta", "title", "style", "body", "h1", "h2", "p", "strong",
                  "code", "pre", "span", "ul", "li", "table", "thead", "tbody", "tr", "th",
                  "td", "section", "details", "summary"})
CSP = "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'"
STYLE = """
body { font-family: system-ui, sans-serif; max-width: 60rem; margin: 2rem auto;
       padding: 0 1rem; line-height: 1.45; color: #1b1b1b; }
.t, pre { white-space: pre-wrap; overflow-wrap: anywhere; }
pre { background: #f4f4f4; padding: .6rem; border-radius: 4px; font-size: .9em; }
table { border-collapse: collapse; } th, td { border: 1px solid #ccc; padding: .2rem .6rem; }
.full { color: #17692b; } .lost { color: #a4161a; }
"""


def _t(text: object, limit: int = 2000) -> str:
    """Literal text, on as many lines as it has (``.t`` keeps its line breaks)."""
    return f'<span class="t">{escape(clean(text, limit))}</span>'


def _code(text: object) -> str:
    return f"<code>{escape(clean(text, 200))}</code>"


def feedback_html(row: Row) -> str:
    """The feedback page of ``row`` (see the module docstring)."""
    name = escape(clean(row.student, 200))
    body = [f"<h1>{tr('Feedback: {name}', name=name)}</h1>",
            "<p>" + tr("<strong>Total: {total}.</strong> Status: {status}.",
                       total=escape(total_words(row)), status=_code(row.status)) + "</p>"]
    for title, texts in ((RAN, shown_events(row)), (ADJUSTED, adjustments(row))):
        if texts:
            body += [f"<h2>{tr(title)}</h2>", "<ul>", *(f"<li>{_t(t)}</li>" for t in texts),
                     "</ul>"]
    body += ["<table><thead><tr>" + "".join(f"<th>{tr(h)}</th>" for h in HEADINGS)
             + "</tr></thead><tbody>"]
    for sc in row.scores.values():
        body.append(f"<tr><td>{_t(sc.exercise.id, 200)}</td><td>{num(sc.points)} / "
                    f"{num(sc.exercise.points)}</td><td>{sc.public[0]}/{sc.public[1]}</td>"
                    f"<td>{sc.hidden[0]}/{sc.hidden[1]}</td></tr>")
    body.append("</tbody></table>")
    answers = answer_cells(row.path)
    for sc in row.scores.values():
        body += _exercise(sc, answers.get(sc.exercise.id, []))
    return "\n".join([
        "<!DOCTYPE html>", f'<html lang="{language()}">', "<head>", '<meta charset="utf-8">',
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}">',
        f"<title>{tr('Feedback: {name}', name=name)}</title>", f"<style>{STYLE}</style>",
        "</head>", "<body>",
        *body, "</body>", "</html>", ""])


def _exercise(sc: ExerciseScore, cells: list[str]) -> list[str]:
    ex = sc.exercise
    full = sc.points == ex.points
    out = ["<section>", f'<h2 class="{"full" if full else "lost"}">{_t(ex.id, 200)}: '
                        f"{_t(translate(ex.title), 200)}</h2>"]
    if full:
        out.append(f"<p>{tr('Every case passed.')}</p>")
    elif sc.outcome != "ran":
        why = escape(outcome_words(sc.outcome))
        out.append(f"<p>{tr('Not graded further: {why}.', why=why)}</p>")
    if sc.not_own:
        out.append(f"<p>{tr('Every case failed:') + ' '}{_t(translate(sc.not_own))}.</p>")
    elif sc.failed_public:
        out.append("<ul>")
        for fc in sc.failed_public:
            head = tr("<strong>{name}</strong>: expected {expected}",
                      name=_t(translate(fc.name), 200), expected=_code(describe(fc.expected)))
            missing = no_result(sc, fc)
            if missing:
                out.append("<li>" + tr("{head}; no result: {why}.", head=head,
                                       why=_t(translate(missing))) + "<ul>")
            else:
                out.append("<li>" + tr("{head}, got {got}.", head=head,
                                       got=_code(describe(fc.got))) + "<ul>"
                           f"<li>{tr('Why:') + ' '}{_t(translate(fc.reason))}</li>")
            out.append(f"<li>{tr('Hint:') + ' '}{_t(fc.hint)}</li></ul></li>")
        out.append("</ul>")
    summary = None if sc.not_own else hidden_summary(sc)
    if summary:
        out.append(f"<p>{_t(summary[0])}</p>")
        if summary[1]:
            out += ["<ul>", *("<li>" + tr("Hint for {category}:", category=_t(c, 200)) + " "
                              + f"{_t(h)}</li>" for c, h in summary[1]), "</ul>"]
    if cells:
        answer = (tr("Your answer ({n} cells)", n=len(cells)) if len(cells) > 1
                  else tr("Your answer (1 cell)"))
        out += [f"<details><summary>{answer}</summary>",
                *(f"<pre><code>{escape(clean(c, MAX_CELL_CHARS))}</code></pre>" for c in cells),
                "</details>"]
    return out + ["</section>"]


def answer_cells(path: str | os.PathLike | None) -> dict[str, list[str]]:
    """Each exercise's code cells in the notebook at ``path``: its ``# EXERCISE`` cell and
    the code cells after it, up to its ``check(...)`` cell or the next exercise, at most
    :data:`MAX_CELLS`. Read as JSON data, never run; ``{}`` when the file is not a regular
    file of at most :data:`MAX_NOTEBOOK_BYTES` holding a notebook, or is a link: ``path`` is
    the submission's path as given (a row's), and a link there may point at a file the
    grader refused to read (outside the submissions folder: the course's solutions, say)."""
    try:
        # O_NOFOLLOW: see above; O_NONBLOCK: a FIFO standing there must not block the grader
        flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0)
        fd = os.open(os.fspath(path), flags)
        with os.fdopen(fd, "rb") as f:
            info = os.fstat(f.fileno())
            if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_NOTEBOOK_BYTES:
                return {}
            sources = code_sources(json.loads(f.read(MAX_NOTEBOOK_BYTES + 1)))
    except Exception:  # noqa: BLE001 - whatever the file is, the page shows no answer
        return {}
    found: dict[str, list[str]] = {}
    current = None  # the exercise whose cells come now
    for source in filter(str.strip, sources):
        header = exercise_header(source)
        if header:
            current = header[0]
        elif check_call(source):
            current = None
        if current is not None and len(found.setdefault(current, [])) < MAX_CELLS:
            found[current].append(source)
    return found


def write_feedback(path: str | os.PathLike, row: Row) -> None:
    """``path`` (``<name>.md``) and the page next to it (``<name>.html``), each written
    through a temporary file (a symlink standing there is replaced, not followed)."""
    md = Path(path)
    for target, text in ((md, feedback_markdown(row)),
                         (md.with_suffix(".html"), feedback_html(row))):
        replace_file(target, text.encode("utf-8", "backslashreplace"))
