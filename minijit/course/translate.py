"""Translated editions of the course, kept in step with the English notebooks by construction.

    python -m minijit.course.translate status [--lang zh]      # per notebook: ok/stale/missing
    python -m minijit.course.translate build [--lang zh]       # write chapters/zh/*.ipynb, ...
    python -m minijit.course.translate stub chapters/03_the_ir.ipynb [--lang zh]
    python -m minijit.course.translate messages [--lang zh]    # the message catalogue's TODOs

One translation file per English notebook, ``translations/<lang>/<folder>/<stem>.md``, holds
one block per cell, in notebook order, each opened by a header naming the cell and the English
text it translates (the first 12 hex digits of the sha256 of the cell's source):

    <!-- cell 02-tracing-00 en:3f1a2b4c5d6e -->
    # 02 · 追踪：……                            (a markdown cell: its whole translation)

    <!-- cell 02-tracing-20 en:9a8b7c6d5e4f -->
    en: # a Python side effect                    (a code cell: comments and string literals,
    zh: # Python 的副作用                          each English token and its translation)

Invariants:

- A translated code cell is the English cell with exactly the listed COMMENT and STRING tokens
  replaced (found with `tokenize`, every occurrence), so its code is the English code; the
  `# EXERCISE` headers and solution markers the grader reads are never replaced.
- A block is *stale* when its hash is not the English cell's now (or it carries
  ``<!-- stale -->``), *missing* when there is none (or it carries ``<!-- todo -->``).
  `build` writes a notebook only when every cell is ok; a notebook without a translation file
  is skipped (status lists it as missing), so editions grow one notebook at a time.
- Outputs are never stored; cell ids, tags and the kernel are the English notebook's.
  Exercises are `make_exercise` of the translated solution, exactly as the English ones are
  made from theirs, so the grader scores both alike.
"""

from __future__ import annotations

import argparse
import copy
import hashlib
import io
import re
import sys
import tokenize
from dataclasses import dataclass
from pathlib import Path

from minijit.grading import messages
from minijit.grading.fast_nbformat import nbformat
from minijit.grading.notebook import BEGIN, END, HEADER_RE, dumps, make_exercise

ROOT = Path(__file__).resolve().parents[2]
FOLDERS = ("chapters", "solutions")  # exercises are generated from solutions
HEADER = re.compile(r"^<!-- cell (?P<id>\S+) en:(?P<hash>[0-9a-f]{12}) -->$", re.M)
TODO, STALE = "<!-- todo -->", "<!-- stale -->"
_FSTRING_START = getattr(tokenize, "FSTRING_START", None)  # Python 3.12 splits f-strings
_FSTRING_END = getattr(tokenize, "FSTRING_END", None)


class TranslationError(ValueError):
    """A translation file that cannot be applied; the message names the file, cell and fix."""


def en_hash(source: str) -> str:
    return hashlib.sha256(source.encode("utf-8")).hexdigest()[:12]


@dataclass
class Block:
    cell_id: str
    hash: str
    body: str  # markers removed
    marker: str = ""  # TODO, STALE or ""


def parse(text: str, where: str = "translation") -> dict[str, Block]:
    """The blocks of a translation file, by cell id (text before the first header is notes)."""
    heads = list(HEADER.finditer(text))
    blocks: dict[str, Block] = {}
    for head, nxt in zip(heads, heads[1:] + [None]):
        body = text[head.end(): nxt.start() if nxt else len(text)]
        marker = next((m for m in (TODO, STALE) if m in body), "")
        body = body.replace(TODO, "").replace(STALE, "").strip("\n")
        if head["id"] in blocks:
            raise TranslationError(f"{where}: cell {head['id']} has two blocks; keep one")
        blocks[head["id"]] = Block(head["id"], head["hash"], body, marker)
    return blocks


def parse_pairs(body: str, where: str) -> list[tuple[str, str]]:
    """A code cell's ``en:``/``zh:`` lines (the message catalogue's format,
    :func:`minijit.grading.messages.parse_pairs`)."""
    try:
        return messages.parse_pairs(body, where)
    except ValueError as exc:
        raise TranslationError(str(exc)) from None


def text_units(source: str) -> list[tuple[int, int, str]]:
    """(start, end, text) of each COMMENT and STRING token (an f-string whole) in ``source``."""
    lines = source.splitlines(keepends=True)
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line))

    def offset(pos: tuple[int, int]) -> int:
        return starts[pos[0] - 1] + pos[1]

    units, depth, begin = [], 0, None
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type == _FSTRING_START:
            depth, begin = depth + 1, begin if depth else tok.start
        elif tok.type == _FSTRING_END:
            depth -= 1
            if not depth:
                units.append((offset(begin), offset(tok.end)))
        elif tok.type in (tokenize.COMMENT, tokenize.STRING) and not depth:
            units.append((offset(tok.start), offset(tok.end)))
    return [(a, b, source[a:b]) for a, b in units]


def placeholders(token: str) -> list[str]:
    """The replacement fields of a string token, sorted: ``{x:.2f}``, ``{}``, ``%s``, ``%(n)d``
    (in an f-string, ``{...}`` holds code, so a translation must keep each one exactly)."""
    fields = re.findall(r"\{[^{}]*\}", token.replace("{{", "").replace("}}", ""))
    percent = re.findall(r"%(?:\(\w+\))?[-+ #0]*\d*(?:\.\d+)?[sdifrxXeEgGc]", token)
    return sorted(fields + percent)


def protected(token: str) -> bool:
    """The comments the grader reads: exercise headers and solution markers."""
    return bool(HEADER_RE.match(token)) or token.strip() in (BEGIN, END)


def translate_code(source: str, pairs: list[tuple[str, str]], where: str) -> str:
    """``source`` with every token listed in ``pairs`` replaced by its translation."""
    table = dict(pairs)
    units = text_units(source)
    found = {text for _, _, text in units}
    for en in table:
        if en not in found:
            raise TranslationError(f"{where}: {en!r} is not a comment or string of the English "
                                   "cell (copy the token exactly, quotes and '#' included)")
        if protected(en):
            raise TranslationError(f"{where}: {en!r} is read by the grader; leave it out")
        if not en.startswith("#") and placeholders(en) != placeholders(table[en]):
            raise TranslationError(f"{where}: the translation of {en!r} must keep its "
                                   f"placeholders {placeholders(en)} exactly")
    out = source
    for a, b, text in reversed(units):
        if text in table:
            out = out[:a] + table[text] + out[b:]
    return out


def translation_path(notebook: Path, lang: str) -> Path:
    notebook = Path(notebook).resolve()
    return ROOT / "translations" / lang / notebook.parent.name / (notebook.stem + ".md")


def cell_states(notebook: Path, lang: str) -> list[tuple[str, str]]:
    """(cell id, "ok" | "stale" | "missing") per cell; then ("<id>", "extra") per orphan block."""
    nb = nbformat.read(str(notebook), as_version=4)
    path = translation_path(notebook, lang)
    blocks = parse(path.read_text(encoding="utf-8"), str(path)) if path.exists() else {}
    states = []
    for cell in nb.cells:
        block = blocks.pop(cell.id, None)
        if block is None or block.marker == TODO or (  # a markdown cell needs its text
                cell.cell_type != "code" and cell.source.strip() and not block.body.strip()):
            states.append((cell.id, "missing"))
        elif block.marker == STALE or block.hash != en_hash(cell.source):
            states.append((cell.id, "stale"))
        else:
            states.append((cell.id, "ok"))
    return states + [(cell_id, "extra") for cell_id in blocks]


def translate_notebook(notebook: Path, lang: str):
    """The translated notebook; raises TranslationError unless every cell is ok."""
    bad = [f"{cid} ({state})" for cid, state in cell_states(notebook, lang) if state != "ok"]
    path = translation_path(notebook, lang)
    if bad:
        shown = ", ".join(bad[:6]) + (f" and {len(bad) - 6} more" if len(bad) > 6 else "")
        raise TranslationError(
            f"{path.relative_to(ROOT)}: {len(bad)} cell(s) not translated or not current: "
            f"{shown}. Run `python -m minijit.course.translate stub "
            f"{notebook.parent.name}/{notebook.name}` and translate the blocks it marks.")
    blocks = parse(path.read_text(encoding="utf-8"), str(path))
    nb = copy.deepcopy(nbformat.read(str(notebook), as_version=4))
    for cell in nb.cells:
        block, where = blocks[cell.id], f"{path.relative_to(ROOT)}, cell {cell.id}"
        if cell.cell_type == "code":
            cell.source = translate_code(cell.source, parse_pairs(block.body, where), where)
            cell.outputs, cell.execution_count = [], None
        else:
            cell.source = block.body
    return nb


def english_notebooks() -> list[Path]:
    return [p for folder in FOLDERS for p in sorted((ROOT / folder).glob("*.ipynb"))]


def render(lang: str) -> tuple[dict[Path, str], list[str]]:
    """Path -> text of every translated notebook that ``build`` writes, exercises included,
    and the problems of the translation files that could not be applied."""
    out: dict[Path, str] = {}
    problems: list[str] = []
    for notebook in english_notebooks():
        if not translation_path(notebook, lang).exists():
            continue
        try:
            nb = translate_notebook(notebook, lang)
        except TranslationError as exc:
            problems.append(str(exc))
            continue
        out[notebook.parent / lang / notebook.name] = dumps(nb)
        if notebook.parent.name == "solutions":
            exercise = make_exercise(nb, notebook.stem)
            out[ROOT / "exercises" / lang / notebook.name] = dumps(exercise)
    return out, problems


def stub(notebook: Path, lang: str) -> Path:
    """Write or extend the translation file: a todo block per new cell, existing translations
    kept, changed ones marked stale (with the new hash, so removing the marker accepts them)."""
    nb = nbformat.read(str(notebook), as_version=4)
    path = translation_path(notebook, lang)
    text = path.read_text(encoding="utf-8") if path.exists() else ""
    old = parse(text, str(path))
    first = HEADER.search(text)
    notes = text[: first.start()] if first else (
        f"<!-- {lang} translation of {Path(notebook).parent.name}/{Path(notebook).name}: one "
        "block per cell; see minijit/course/translate.py -->\n\n")
    parts = [notes.rstrip("\n") + "\n"]
    for cell in nb.cells:
        block, new_hash = old.pop(cell.id, None), en_hash(cell.source)
        marker = TODO if block is None else STALE if block.hash != new_hash else block.marker
        body = "" if block is None else block.body
        if block is None and cell.cell_type == "code":
            tokens = dict.fromkeys(t for _, _, t in text_units(cell.source)
                                   if "\n" not in t and not protected(t))
            body = "\n".join(f"en: {t}\nzh: " for t in tokens)
        parts.append(f"<!-- cell {cell.id} en:{new_hash} -->\n"
                     + (marker + "\n" if marker else "") + (body + "\n" if body else ""))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(parts), encoding="utf-8")
    return path


def wanted_texts() -> dict[str, str]:
    """Every English text a learner can read that must have a translation, with where it
    comes from: the literal first argument of each ``tr(...)`` call in minijit's source, and
    each exercise's title, section, hints, public case names and categories."""
    import ast

    from minijit.grading.cases import as_hint, category_of
    from minijit.grading.checking import COLUMNS, LABELS
    from minijit.grading.feedback import ADJUSTED, HEADINGS, NO_RESULT, RAN
    from minijit.grading.registry import default_exercises
    from minijit.grading.scoring import OUTCOME_WORDS

    found: dict[str, str] = {}
    root = ROOT / "minijit"
    for path in sorted(root.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call):
                continue
            name = getattr(node.func, "id", None) or getattr(node.func, "attr", None)
            if (name in ("tr", "_t", "t") and node.args
                    and isinstance(node.args[0], ast.Constant)
                    and isinstance(node.args[0].value, str)):
                found.setdefault(node.args[0].value, str(path.relative_to(root.parent)))
    # texts passed to tr() by name: the tables' headings, the outcomes' words
    for word in (*LABELS, *COLUMNS, *HEADINGS, RAN, ADJUSTED, NO_RESULT,
                 *OUTCOME_WORDS.values()):
        found.setdefault(word, "feedback, scoring.OUTCOME_WORDS")
    for ex in default_exercises().values():
        hints = [as_hint(ex.hint), *map(as_hint, ex.error_hints.values()),
                 *map(as_hint, ex.case_hints.values()),
                 *(as_hint(c.hint) for c in ex.public + ex.hidden)]
        texts = [ex.title, ex.section, *(c.name for c in ex.public),
                 *(category_of(c) for c in ex.public + ex.hidden)]
        texts += [t for h in hints if h is not None for t in (h.pitfall, h.code) if t]
        for text in texts:
            found.setdefault(text, ex.id)
    return found


def stub_messages(lang: str) -> tuple[Path, int]:
    """Add a ``TODO`` entry to the message catalogue for each text a learner can read that
    has none (:func:`wanted_texts`); returns the file and how many."""
    path = messages.LOCALE_DIR / f"{lang}.md"
    text = path.read_text(encoding="utf-8") if path.exists() else (
        f"<!-- minijit's messages in {lang}: see minijit/grading/messages.py -->\n")
    have = dict(messages.parse_pairs(text, str(path)))
    new = [(en, where) for en, where in wanted_texts().items() if en not in have]
    lines, last = [], None
    for en, where in new:
        if where != last:
            lines.append(f"\n<!-- {where} -->")
            last = where
        lines.append(f"en: {en}\n{lang}: {messages.TODO}")
    path.write_text(text.rstrip("\n") + "\n" + "\n".join(lines) + "\n", encoding="utf-8")
    messages.catalogue.cache_clear()
    return path, len(new)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m minijit.course.translate")
    parser.add_argument("command", choices=("status", "build", "stub", "messages"))
    parser.add_argument("notebook", nargs="?", help="for stub: the English notebook")
    parser.add_argument("--lang", default="zh")
    args = parser.parse_args(argv)
    if args.command == "messages":
        path, added = stub_messages(args.lang)
        print(f"{path.relative_to(ROOT)}: {added} new entries marked {messages.TODO}")
        return 0
    if args.command == "stub":
        if not args.notebook or not Path(args.notebook).is_file():
            parser.error("stub needs an English notebook, e.g. chapters/03_the_ir.ipynb")
        print(f"wrote {stub(Path(args.notebook), args.lang)}")
        return 0
    if args.command == "status":
        incomplete = 0
        for notebook in english_notebooks():
            name = f"{notebook.parent.name}/{notebook.name}"
            if not translation_path(notebook, args.lang).exists():
                print(f"{name:45} missing (no translation file)")
                continue
            states = cell_states(notebook, args.lang)
            counts = {s: [c for c, st in states if st == s]
                      for s in ("ok", "stale", "missing", "extra")}
            incomplete += any(counts[s] for s in ("stale", "missing", "extra"))
            print(f"{name:45} " + ", ".join(f"{len(v)} {k}" for k, v in counts.items() if v))
            for state in ("stale", "missing", "extra"):
                if counts[state]:
                    print(f"    {state}: {' '.join(counts[state])}")
        return 1 if incomplete else 0
    wanted, problems = render(args.lang)
    for path, text in wanted.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        print(f"wrote {path.relative_to(ROOT)}")
    for problem in problems:
        print(f"not built: {problem}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
