"""The feedback a student reads: what is shown, and ``<name>.md``, its Markdown form.

The same feedback as a self-contained page, ``<name>.html``, is
:mod:`minijit.grading.feedback_html`, which also writes both files. A student sees their
scores, what happened when their notebook ran, the adjustments made to their total, their
failed *public* cases (expected, got, why, hint) and their failed hidden ones counted by
category (with the exercise's hint for a category, where it has one). Invariants:

- *Never shown:* a hidden or private case's name, inputs or values (only its category); the
  code tier of a hint; a cell's number (the runner names a cell by its exercise and first
  line); a chapter's demonstration cell that raised as its ``raises-exception`` tag says
  (the runner reports none: it is not something that happened to the student's work).
- *Literal text:* every string this module does not spell itself (the student's name, event
  messages, case names, values, reasons, hints, categories, titles) renders as the text it
  is, inside its line, list item or table cell. :func:`md_text` backslash-escapes what could
  make markup (``\\ ` * _ [ ] < > & | ~ $ #``, an autolink's ``://``, ``www.`` and ``@``, a
  list marker that starts an item), :func:`md_code` wraps a value in a code span whose
  backtick fence is longer than any run inside it, and a message's lines after its first go
  into a fenced block, indented into its list item, fenced the same way. So no submission
  can add a heading, a table row, a link, an image, raw HTML or a second total line.
- *Clean text first* (:func:`clean`): lone surrogates, control characters and bidirectional
  overrides become visible escapes (``\\udc80``, ``\\x1b``, ``\\u202e``); every line break
  (``\\r``, U+2028, ...) becomes ``\\n``; text is capped.
"""

from __future__ import annotations

import re

from .cases import category_of, count_categories, describe
from .messages import tr, translate
from .run_result import NOTE
from .scoring import OUTCOME_WORDS, ExerciseScore, FailedCase, Row

HEADINGS = ("exercise", "points", "public cases", "hidden cases")  # of the scores table
RAN, ADJUSTED = "What happened when your notebook ran", "Adjustments"  # section titles
# scoring's reason for a case whose result is missing from a kernel's answer
NO_RESULT = "no result came back"
LIMIT = 2000  # characters of one message, reason or hint
NEWLINE = " \u23ce "  # a line break inside one line of text (a name, a table cell, a value)

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
# Markdown's punctuation that can make markup anywhere in a line. An underscore between two
# letters or digits cannot open or close emphasis (CommonMark), so ``eval_jaxpr`` stays as
# written; an autolink needs ``://``, ``www.`` or ``@`` between word characters.
_SPECIAL = re.compile(r"[\\`*\[\]<>&|~$#]|(?<![A-Za-z0-9])_|_(?![A-Za-z0-9])"
                      r"|(?<=[\w.+-])@|(?<=[A-Za-z]):(?=//)|(?<=\bwww)\.")
# What makes a list item's first line a new block (a nested list, a rule)
_ITEM_START = re.compile(r"^(?:[-+=]|\d{1,9}[.)])")


def clean(text: object, limit: int = LIMIT) -> str:
    """``text`` as printable lines joined by ``\\n``, at most ``limit`` characters."""
    text = str(text).encode("utf-8", "backslashreplace").decode("utf-8")
    text = _CONTROL.sub(lambda m: ascii(m[0])[1:-1], "\n".join(text.splitlines()))
    return text if len(text) <= limit else text[: limit - 3] + "..."


def md_text(text: object, limit: int = LIMIT) -> str:
    """``text`` as one line of Markdown that renders as exactly that text."""
    line = NEWLINE.join(clean(text, limit).split("\n")).replace("\t", " ").strip()
    return _SPECIAL.sub(lambda m: "\\" + m[0], line)


def md_code(text: object, limit: int = 200) -> str:
    """``text`` as an inline code span (on one line) that no backtick inside can close."""
    line = NEWLINE.join(clean(text, limit).split("\n")) or " "
    fence = "`" * (1 + max(map(len, re.findall("`+", line)), default=0))
    pad = " " if line[0] in "` " or line[-1] in "` " else ""
    return f"{fence}{pad}{line}{pad}{fence}"


def md_item(indent: int, head: str, text: object = "") -> list[str]:
    """A list item: ``head`` (Markdown written here), then ``text`` as literal text, its
    first line inline and the others in a fenced block indented into the item."""
    first, _, rest = clean(text).partition("\n")
    first = md_text(first)
    if not head:
        first = _ITEM_START.sub(lambda m: m[0][:-1] + "\\" + m[0][-1], first)
    pad = " " * indent
    lines = [f"{pad}- {head}{first}".rstrip()]
    if rest:
        fence = "`" * max(3, 1 + max(map(len, re.findall("`+", rest)), default=0))
        lines += [f"{pad}  {fence}"] + [f"{pad}  {line}" if line else ""
                                          for line in rest.split("\n")] + [f"{pad}  {fence}"]
    return lines


# ------------------------------------------------------------------------------------------
# What is shown (both forms)
# ------------------------------------------------------------------------------------------


def shown_events(row: Row) -> list[str]:
    """The messages of what happened when the notebook ran: problems first, then notes."""
    return ([translate(e.message) for e in row.events if e.kind != NOTE]
            + [translate(e.message) for e in row.events if e.kind == NOTE])


def adjustments(row: Row) -> list[str]:
    """Changes to the total made after grading (late penalty, overrides), in words."""
    return [str(a) for a in getattr(row, "adjustments", None) or []]


def no_result(sc: ExerciseScore, fc: FailedCase) -> str | None:
    """Why a failed case has no result at all (its tests timed out, the kernel died, ...),
    or ``None`` when it has one: then its ``got`` is what the code gave, ``None`` included."""
    if sc.outcome != "ran":
        return OUTCOME_WORDS.get(sc.outcome, NO_RESULT)
    return NO_RESULT if fc.reason == NO_RESULT and fc.got is None else None


def hidden_summary(sc: ExerciseScore) -> tuple[str, list[tuple[str, str]]] | None:
    """``("2 of 24 hidden cases failed: a loop body (2) ...", [(category, hint), ...])`` or
    ``None``: the hints are the exercise's for the failed categories (``case_hints``), given
    only when some case passed (``sc.specific``): when all failed, none is the cause."""
    if not sc.failed_hidden or sc.outcome != "ran":
        return None
    text = tr("{failed} of {total} hidden cases failed: {categories} (their inputs are not "
              "shown; test your code beyond the public cases).", failed=len(sc.failed_hidden),
              total=sc.hidden[1], categories=count_categories(sc.failed_hidden))
    hints = []
    for category in dict.fromkeys(map(category_of, sc.failed_hidden)) if sc.specific else ():
        hint = sc.exercise.category_hint(category)
        if hint is not None:
            hints.append((translate(category), translate(hint.pitfall)))
    return text, hints


def num(x: float) -> str:
    return f"{x:g}"


def total_words(row: Row) -> str:
    """``3 / 4 points``; after an override or a late penalty, ``2.5 / 4 points (3 before the
    adjustments below)``."""
    final = getattr(row, "final_total", None)
    if final is None:
        return tr("{total} / {max} points", total=num(row.total), max=num(row.max_total))
    return tr("{total} / {max} points ({before} before the adjustments below)",
              total=num(final), max=num(row.max_total), before=num(row.total))


def outcome_words(outcome: str) -> str:
    """Why an exercise was not graded further, in words."""
    return translate(OUTCOME_WORDS.get(outcome, outcome))


# ------------------------------------------------------------------------------------------
# Markdown
# ------------------------------------------------------------------------------------------


def feedback_markdown(row: Row) -> str:
    """The feedback as Markdown (see the module docstring for what is shown and escaped).
    A build piece that is minijit's own code gets that one line."""
    lines = [tr("# Feedback: {name}", name=md_text(row.student, 200)), "",
             tr("**Total: {total}.** Status: {status}.", total=total_words(row),
                status=md_code(row.status)), ""]
    for title, texts in ((RAN, shown_events(row)), (ADJUSTED, adjustments(row))):
        if texts:
            lines += [f"## {tr(title)}", ""]
            for text in texts:
                lines += md_item(0, "", text)
            lines.append("")
    lines += ["| " + " | ".join(map(tr, HEADINGS)) + " |", "|---|---|---|---|"]
    for sc in row.scores.values():
        lines.append(f"| {md_text(sc.exercise.id, 200)} | {num(sc.points)} / "
                     f"{num(sc.exercise.points)} | {sc.public[0]}/{sc.public[1]} | "
                     f"{sc.hidden[0]}/{sc.hidden[1]} |")
    for sc in row.scores.values():
        if sc.points != sc.exercise.points:
            lines += ["", *_exercise_lines(sc)]
    return "\n".join(lines) + "\n"


def _exercise_lines(sc: ExerciseScore) -> list[str]:
    lines = [f"## {md_text(sc.exercise.id, 200)}: {md_text(translate(sc.exercise.title), 200)}",
             ""]
    if sc.outcome != "ran":
        lines.append(tr("Not graded further: {why}.", why=outcome_words(sc.outcome)))
        lines.append("")
    if sc.not_own:
        return lines + md_item(0, tr("Every case failed:") + " ", f"{translate(sc.not_own)}.")
    for fc in sc.failed_public:
        head = tr("**{name}**: expected {expected}", name=md_text(translate(fc.name), 200),
                  expected=md_code(describe(fc.expected)))
        missing = no_result(sc, fc)
        if missing:
            lines += md_item(0, tr("{head}; no result: {why}.", head=head,
                                   why=md_text(translate(missing))))
        else:
            lines += md_item(0, tr("{head}, got {got}.", head=head,
                                   got=md_code(describe(fc.got))))
            lines += md_item(2, tr("Why:") + " ", translate(fc.reason))
        lines += md_item(2, tr("Hint:") + " ", fc.hint)
    summary = hidden_summary(sc)
    if summary:  # one line: its categories are the exercise's words, not a submission's
        lines.append(f"- {md_text(summary[0])}")
        for category, hint in summary[1]:
            lines += md_item(2, tr("Hint for {category}:", category=md_text(category, 200)) + " ",
                             hint)
    return lines
