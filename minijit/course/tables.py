"""A table of values as HTML, for a notebook to display (chapter 10's table of programs).

    display(HTML(html_table(["program", "per call\\nNumPy"], [["GELU", "66.1 ms"]])))

Every cell is text: escaped, so that `<` or `&` in a value shows as itself, with each newline
of a heading turned into a line break, so that narrow columns can have two-line headings.
"""

from __future__ import annotations

import html
from collections.abc import Iterable, Sequence


def html_table(head: Sequence[object], rows: Iterable[Sequence[object]]) -> str:
    """`<table>` with one heading row `head` and a row per entry of `rows`, each cell
    `str()`-ed and escaped; a row must have as many cells as `head`."""
    lines = ["<table>", _row("th", head)]
    for row in rows:
        if len(row) != len(head):
            raise ValueError(f"a row of {len(row)} cells under {len(head)} headings: {row!r}")
        lines.append(_row("td", row))
    lines.append("</table>")
    return "\n".join(lines)


def _row(tag: str, cells: Sequence[object]) -> str:
    return "<tr>" + "".join(f"<{tag}>{_text(c)}</{tag}>" for c in cells) + "</tr>"


def _text(cell: object) -> str:
    return "<br>".join(html.escape(line) for line in str(cell).split("\n"))
