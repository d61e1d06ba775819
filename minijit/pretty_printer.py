"""A small pretty-printer: documents that lay themselves out in a given width (chapter 03).

The jaxpr printer builds a document from five pieces, as JAX's `pretty_printer` does:

- `text(s)`: literal text;
- `brk(s=" ")`: a line break that prints as `s` when its group is laid out flat;
- `concat(docs)` (or `a + b`): one after the other;
- `nest(n, doc)`: lines broken inside `doc` are indented `n` more columns;
- `group(doc)`: lay `doc` out flat (every `brk` as its text) if it fits in the columns left
  on the current line, else break every `brk` directly inside it (inner groups decide again).

So a short sub-jaxpr prints on one line and a long one on many, with one rule. The fitting
test looks only at the group itself, not at the text that follows it (Lindig's "strict"
variant, which JAX uses), so the layout of a group never depends on what comes after it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

WIDTH = 80


class Doc:
    def __add__(self, other: Doc) -> Doc:
        return concat([self, other])

    def format(self, width: int = WIDTH) -> str:
        return _format(self, width)

    def __str__(self) -> str:
        return self.format()


@dataclass(frozen=True)
class _Text(Doc):
    text: str


@dataclass(frozen=True)
class _Brk(Doc):
    text: str


@dataclass(frozen=True)
class _Concat(Doc):
    children: tuple[Doc, ...]


@dataclass(frozen=True)
class _Nest(Doc):
    n: int
    child: Doc


@dataclass(frozen=True)
class _Group(Doc):
    child: Doc


def text(s: str) -> Doc:
    return _Text(s)


def brk(s: str = " ") -> Doc:
    return _Brk(s)


def concat(docs: Sequence[Doc]) -> Doc:
    return _Concat(tuple(docs))


def nest(n: int, doc: Doc) -> Doc:
    return _Nest(n, doc)


def group(doc: Doc) -> Doc:
    return _Group(doc)


def join(sep: Doc, docs: Sequence[Doc]) -> Doc:
    parts: list[Doc] = []
    for k, d in enumerate(docs):
        parts += [sep, d] if k else [d]
    return concat(parts)


def _fits(doc: Doc, width: int) -> bool:
    """Does `doc`, laid out flat, take at most `width` columns?"""
    todo = [doc]
    while todo and width >= 0:
        d = todo.pop()
        if isinstance(d, (_Text, _Brk)):
            width -= len(d.text)
        elif isinstance(d, _Concat):
            todo.extend(reversed(d.children))
        else:  # a nest or a group: flat, its text is its child's
            todo.append(d.child)
    return width >= 0


def _format(doc: Doc, width: int) -> str:
    out: list[str] = []
    column = 0
    todo = [(0, False, doc)]  # (indent, flat?, doc), next to print last
    while todo:
        indent, flat, d = todo.pop()
        if isinstance(d, _Text):
            out.append(d.text)
            column += len(d.text)
        elif isinstance(d, _Brk):
            if flat:
                out.append(d.text)
                column += len(d.text)
            else:
                out.append("\n" + " " * indent)
                column = indent
        elif isinstance(d, _Concat):
            todo.extend((indent, flat, c) for c in reversed(d.children))
        elif isinstance(d, _Nest):
            todo.append((indent + d.n, flat, d.child))
        else:
            todo.append((indent, flat or _fits(d.child, width - column), d.child))
    return "".join(out)
