"""The message catalogue: what minijit tells a learner, in the course's language.

English is the language of the code and the default. The Chinese course (``chapters/zh/``,
``exercises/zh/``) reads minijit's messages in Chinese: the hints and tables of ``check()``,
the grader's feedback, and a note under each tracer error that says the same in Chinese. Every
translation lives in one file per language, ``minijit/grading/locale/<lang>.md``, as pairs
of lines:

    en: Reread {section}.
    zh: 请重读{section}。

(a line indented four spaces continues the one above). An English text is its own key, as in
gettext, so the English code reads as English and a missing translation falls back to it.

Invariants:

- :func:`language` is ``config.update("language", ...)`` when set, else ``$MINIJIT_LANG``,
  else ``"zh"`` when the working directory is a course folder named ``zh`` (Jupyter starts a
  notebook's kernel in the notebook's folder, so the Chinese notebooks need no code of their
  own), else ``"en"``.
- :func:`tr` of a text with ``{field}`` placeholders formats the translation with the same
  fields; :func:`translate` of a text made at run time (a hint, an error message) finds an
  exact entry first, then a template whose ``{field}`` parts match any text (one word, for
  the fields of :data:`WORD_FIELDS`), the one with the most fixed text first, then line by
  line; what has no entry stays English. Neither ever raises for a missing or bad entry.
- ``tests/test_messages.py`` checks that every literal passed to :func:`tr` in minijit, every
  exercise's hint, section, title and case name, and every category has a translation, with
  the same placeholders.
"""

from __future__ import annotations

import os
import re
import sys
from functools import cache
from pathlib import Path

LOCALE_DIR = Path(__file__).resolve().parent / "locale"
LANGUAGES = ("en", "zh")
_COURSE_FOLDERS = ("chapters", "exercises", "solutions", "submissions", "release")
_FIELD = re.compile(r"\{(\w+)\}")
# A field with one of these names stands for one word (an id, a number, a type, a path)
# when a template matches a text; any other field for any text. So "the cell of {id}" does
# not take "the cell of ex03 raised ValueError: x", which "{what} raised {type}: {message}"
# then reads.
WORD_FIELDS = frozenset({"id", "type", "name", "function", "path", "n", "m", "seconds",
                         "points", "passed", "total", "unit", "spec", "chapter", "fun", "line",
                         "max", "before", "failed"})
WORD, ANY = r"\S+?", r".+?"
TODO = "TODO"  # the translation line of an entry not translated yet: the English is shown


def language() -> str:
    """The language minijit speaks to the learner now (see the module docstring)."""
    try:
        from minijit.config import config
    except ImportError:  # the grading package without minijit's core
        config = None
    chosen = getattr(config, "language", None) or os.environ.get("MINIJIT_LANG", "")
    if chosen:
        return chosen if chosen in LANGUAGES else "en"
    try:
        cwd = Path.cwd()
    except OSError:  # the working directory was deleted
        return "en"
    return "zh" if cwd.name == "zh" and cwd.parent.name in _COURSE_FOLDERS else "en"


def error_note(message: str) -> str | None:
    """What :mod:`minijit.errors` writes under an error minijit raised: the message in the
    course's language, or ``None`` in English or where nothing of it has a translation."""
    lang = language()
    if lang == "en":
        return None
    said = translate(message, lang)
    return None if said == message else said


def parse_pairs(text: str, where: str) -> list[tuple[str, str]]:
    """``en:``/``xx:`` line pairs (``xx`` any language); a line indented 4 spaces continues
    the one above; blank lines and ``<!-- ... -->`` lines are skipped."""
    pairs: list[list[str]] = []
    last = None
    for n, line in enumerate(text.split("\n"), 1):
        if line.startswith("    ") and last is not None:
            pairs[-1][last] += "\n" + line[4:]
        elif line.startswith("en: "):
            pairs.append([line[4:], ""])
            last = 0
        elif re.match(r"^[a-z]{2}: ", line) and pairs and last == 0:
            pairs[-1][1] = line[4:]
            last = 1
        elif line.strip() and not line.strip().startswith("<!--"):
            raise ValueError(f"{where}, line {n}: expected 'en: <English text>' then "
                             f"'zh: <its translation>', got {line!r}")
    for en, other in pairs:
        if not other:
            raise ValueError(f"{where}: {en!r} has no translation line under it")
    return [(en, other) for en, other in pairs]


@cache
def catalogue(lang: str) -> dict[str, str]:
    """English text -> its translation, from ``minijit/grading/locale/<lang>.md`` (empty for
    English or a language without a file)."""
    path = LOCALE_DIR / f"{lang}.md"
    if lang == "en" or not path.exists():
        return {}
    pairs = parse_pairs(path.read_text(encoding="utf-8"), str(path))
    return {en: other for en, other in pairs if other != TODO}


@cache
def _templates(lang: str) -> list[tuple[re.Pattern, str, str]]:
    """The entries with ``{field}`` placeholders, as (pattern over any text, English,
    translation), the most fixed text first."""
    found = []
    for en, other in catalogue(lang).items():
        parts = _FIELD.split(en)
        fixed = "".join(parts[::2])
        if len(parts) == 1 or not fixed.strip():
            continue  # no field, or nothing but fields: an exact entry only
        regex = "".join(re.escape(p) if i % 2 == 0
                        else f"(?P<{p}>{WORD if p in WORD_FIELDS else ANY})"
                        for i, p in enumerate(parts))
        try:
            found.append((len(fixed), re.compile(regex + r"\Z", re.S), en, other))
        except re.error:  # a field named twice: usable as an exact entry only
            continue
    # the most specific first: the one with the most fixed text
    return [t[1:] for t in sorted(found, key=lambda t: -t[0])]


def _fill(template: str, fields: dict[str, object]) -> str:
    """``template`` with each ``{name}`` of ``fields`` replaced (other braces kept)."""
    return _FIELD.sub(lambda m: str(fields[m[1]]) if m[1] in fields else m[0], template)


def tr(english: str, lang: str | None = None, **fields: object) -> str:
    """The catalogue's translation of the literal ``english``, its ``{field}`` parts filled
    from ``fields``; English (filled) where the language has no entry."""
    lang = lang or language()
    return _fill(catalogue(lang).get(english, english), fields)


def translate(text: str, lang: str | None = None) -> str:
    """``text`` made at run time, in ``lang``: the whole text's entry, or else line by line,
    each line's exact entry or the first template it matches; other lines stay as they are."""
    lang = lang or language()
    table = catalogue(lang)
    if not table or not text:
        return text
    return _translate(text, lang, table, [])


def entries_matching(text: str, lang: str) -> list[str]:
    """The English entries :func:`translate` uses for ``text`` (for the catalogue's test)."""
    used: list[str] = []
    _translate(text, lang, catalogue(lang), used)
    return used


def _translate(text: str, lang: str, table: dict[str, str], used: list[str]) -> str:
    whole = _one(text, lang, table, used)
    if whole is not None:
        return whole
    return "\n".join(_one(line, lang, table, used) or line for line in text.split("\n"))


def _one(text: str, lang: str, table: dict[str, str], used: list[str]) -> str | None:
    if text in table:
        used.append(text)
        return table[text]
    for pattern, en, other in _templates(lang):
        m = pattern.match(text)
        if m:
            used.append(en)
            # a field that is itself a text of the catalogue (a category, a fix) is
            # translated too; it is shorter than ``text``, so this ends
            return _fill(other, {k: _one(v, lang, table, used) or v
                                 for k, v in m.groupdict().items()})
    return None


# minijit's errors carry the note once this catalogue is loaded: here if they were loaded
# first, else minijit/errors.py finds this module when it loads. Neither imports the other:
# the errors sit at the bottom of the library, and importing the grading package loads
# nothing of minijit's core.
if "minijit.errors" in sys.modules:
    sys.modules["minijit.errors"].translation_note = error_note
