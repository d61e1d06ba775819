"""The Chinese edition stays in step with the English notebooks (minijit/course/translate.py).

(a) every committed translated notebook is what `build` writes now; (b) a cell whose English
changed after its translation is stale, and fails; (c) an English cell without a translation
block fails; (d) translated code is the English code, only comments and strings differ, and
every placeholder survives; (e) the translations use the glossary's terms (docs/glossary.zh.md).
Nothing here executes a notebook.
"""

from __future__ import annotations

import io
import re
import shutil
import tokenize
from pathlib import Path

import pytest

from minijit.course import translate
from minijit.grading.fast_nbformat import nbformat

REPO = Path(__file__).resolve().parent.parent
LANG = "zh"
GLOSSARY = REPO / "docs" / "glossary.zh.md"


@pytest.fixture(scope="module")
def rendered():
    wanted, problems = translate.render(LANG)
    return wanted, problems


def test_every_translation_file_applies(rendered):
    assert rendered[1] == [], "\n".join(rendered[1])


def test_built_notebooks_are_current(rendered):
    wanted, _ = rendered
    assert wanted, "no translated notebook at all"
    for path, text in wanted.items():
        assert path.exists(), f"{path.relative_to(REPO)} missing: run " \
            "`python -m minijit.course.translate build`"
        assert path.read_text(encoding="utf-8") == text, (
            f"{path.relative_to(REPO)} differs from its English notebook and translation: run "
            "`python -m minijit.course.translate build` and commit the result")
    present = {p for folder in ("chapters", "solutions", "exercises")
               for p in (REPO / folder / LANG).glob("*.ipynb")}
    extra = sorted(present - set(wanted))
    assert not extra, f"built from no translation file (delete them): {extra}"


def test_built_notebooks_are_clean(rendered):
    from notebook_runner import check_clean

    for path in rendered[0]:
        assert check_clean(path) == [], path


def test_exercises_grade_like_the_english(rendered):
    """The grader finds exercises by their headers and check() cells: the same as in English."""
    from minijit.grading.notebook import check_call, exercise_headers

    def graded_parts(path):
        nb = nbformat.read(str(path), as_version=4)
        return (exercise_headers(nb), [check_call(c.source) for c in nb.cells
                                       if c.cell_type == "code"])

    exercises = [p for p in rendered[0] if p.parent.parent.name == "exercises"]
    for path in exercises:
        assert graded_parts(path) == graded_parts(_english_of(path)), path


def test_built_notebooks_keep_ids_tags_and_kernel(rendered):
    for path in rendered[0]:
        english = nbformat.read(str(path.parent.parent / path.name), as_version=4)
        if path.parent.parent.name == "exercises":
            continue
        zh = nbformat.read(str(path), as_version=4)
        assert zh.metadata == english.metadata
        assert [(c.id, c.cell_type, c.metadata) for c in zh.cells] == \
            [(c.id, c.cell_type, c.metadata) for c in english.cells]
        assert all(not c.get("outputs") and c.get("execution_count") is None
                   for c in zh.cells if c.cell_type == "code")


# (b), (c): on a copy of chapter 00 and its translation


@pytest.fixture
def copy_root(tmp_path, monkeypatch):
    (tmp_path / "chapters").mkdir()
    shutil.copy(REPO / "chapters" / "00_welcome.ipynb", tmp_path / "chapters")
    (tmp_path / "translations" / LANG / "chapters").mkdir(parents=True)
    shutil.copy(REPO / "translations" / LANG / "chapters" / "00_welcome.md",
                tmp_path / "translations" / LANG / "chapters")
    monkeypatch.setattr(translate, "ROOT", tmp_path)
    return tmp_path


def _edit_english(root: Path, cell_id: str, extra: str) -> Path:
    path = root / "chapters" / "00_welcome.ipynb"
    nb = nbformat.read(str(path), as_version=4)
    next(c for c in nb.cells if c.id == cell_id).source += extra
    nbformat.write(nb, str(path))
    return path


def test_changed_english_cell_is_stale_and_fails(copy_root, capsys):
    notebook = _edit_english(copy_root, "00-welcome-05", " And a new sentence.")
    assert ("00-welcome-05", "stale") in translate.cell_states(notebook, LANG)
    wanted, problems = translate.render(LANG)
    assert wanted == {} and "00-welcome-05 (stale)" in problems[0]
    assert translate.main(["status"]) == 1
    assert "stale: 00-welcome-05" in capsys.readouterr().out
    # stub keeps the old translation, takes the new hash and marks the block stale ...
    md = translate.stub(notebook, LANG)
    assert ("00-welcome-05", "stale") in translate.cell_states(notebook, LANG)
    assert "初尝滋味" in md.read_text(encoding="utf-8")
    # ... and once the translator has updated it and removed the marker, it is ok
    md.write_text(md.read_text(encoding="utf-8").replace(translate.STALE + "\n", ""), "utf-8")
    assert {s for _, s in translate.cell_states(notebook, LANG)} == {"ok"}


def test_cell_without_translation_is_missing_and_fails(copy_root):
    md = copy_root / "translations" / LANG / "chapters" / "00_welcome.md"
    text = md.read_text(encoding="utf-8")
    start = text.index("<!-- cell 00-welcome-17 ")
    md.write_text(text[:start] + text[text.index("<!-- cell 00-welcome-18 "):], "utf-8")
    notebook = copy_root / "chapters" / "00_welcome.ipynb"
    assert ("00-welcome-17", "missing") in translate.cell_states(notebook, LANG)
    assert "00-welcome-17 (missing)" in translate.render(LANG)[1][0]
    translate.stub(notebook, LANG)  # a todo block, still missing until translated
    assert ("00-welcome-17", "missing") in translate.cell_states(notebook, LANG)
    md.write_text(md.read_text(encoding="utf-8").replace(translate.TODO + "\n", ""), "utf-8")
    # without the marker, an empty block of a markdown cell is still no translation
    assert ("00-welcome-17", "missing") in translate.cell_states(notebook, LANG)
    assert "<!-- cell 00-welcome-17 " in md.read_text(encoding="utf-8")


def test_new_english_cell_gets_a_todo_block(copy_root):
    path = copy_root / "chapters" / "00_welcome.ipynb"
    nb = nbformat.read(str(path), as_version=4)
    cell = nbformat.v4.new_code_cell('print("hello")  # say hello', id="00-welcome-new")
    nb.cells.append(cell)
    nbformat.write(nb, str(path))
    md = translate.stub(path, LANG)
    assert 'en: "hello"\nzh: \nen: # say hello\nzh: ' in md.read_text(encoding="utf-8")
    assert ("00-welcome-new", "missing") in translate.cell_states(path, LANG)


# (d): code is the English code


def _code_tokens(source: str) -> list[tuple[int, str]]:
    text_types = {tokenize.COMMENT, tokenize.STRING}
    text_types |= {getattr(tokenize, n) for n in ("FSTRING_START", "FSTRING_MIDDLE",
                                                  "FSTRING_END") if hasattr(tokenize, n)}
    return [(t.type, t.string) for t in tokenize.generate_tokens(io.StringIO(source).readline)
            if t.type not in text_types]


def _english_of(path: Path) -> Path:
    return path.parent.parent / path.name


def test_code_cells_keep_every_english_token(rendered):
    for path in rendered[0]:
        english = nbformat.read(str(_english_of(path)), as_version=4)
        zh = nbformat.read(str(path), as_version=4)
        for en_cell, zh_cell in zip(english.cells, zh.cells):
            if en_cell.cell_type == "code":
                assert _code_tokens(zh_cell.source) == _code_tokens(en_cell.source), \
                    f"{path.name}, cell {en_cell.id}: code differs from the English"


def test_every_notebook_has_its_chinese_twin(rendered):
    """Every chapter, solution and exercise notebook is in the Chinese edition."""
    for folder in ("chapters", "solutions", "exercises"):
        english = sorted(p.name for p in (REPO / folder).glob("*.ipynb"))
        chinese = sorted(p.name for p in (REPO / folder / LANG).glob("*.ipynb"))
        assert chinese == english, f"{folder}/{LANG} lacks {sorted(set(english) - set(chinese))}"


def test_translated_code_cells_compile(rendered):
    """A translated string is still a string literal: each code cell compiles (IPython's
    magics and shell lines aside), so a Chinese cell cannot fail where the English runs."""
    for path, text in rendered[0].items():
        nb = nbformat.reads(text, as_version=4)
        for cell in nb.cells:
            if cell.cell_type == "code":
                source = "\n".join(line for line in cell.source.splitlines()
                                   if not line.lstrip().startswith(("%", "!")))
                compile(source, f"{path.name}:{cell.id}", "exec")


def _pairs():
    for notebook in translate.english_notebooks():
        md = translate.translation_path(notebook, LANG)
        if md.exists():
            for cell_id, block in translate.parse(md.read_text(encoding="utf-8")).items():
                if not block.marker and block.body.startswith("en: "):
                    yield f"{md.name}, cell {cell_id}", translate.parse_pairs(block.body, md.name)


def test_translated_strings_keep_their_placeholders():
    for where, pairs in _pairs():
        for en, zh in pairs:
            if en.startswith("#"):
                assert zh.startswith("#"), f"{where}: a comment must stay one: {zh!r}"
            else:
                assert translate.placeholders(zh) == translate.placeholders(en), f"{where}: {en!r}"
                assert re.match(r"^[A-Za-z]*", zh)[0] == re.match(r"^[A-Za-z]*", en)[0], \
                    f"{where}: keep the string prefix (f, r, b) of {en!r}"


def test_placeholders_and_protected_tokens_are_enforced():
    src = 'print(f"{n:>2} items")  # EXERCISE ex02_x (2 points)\n'
    with pytest.raises(translate.TranslationError, match="placeholders"):
        translate.translate_code(src, [('f"{n:>2} items"', 'f"{n} 项"')], "t")
    with pytest.raises(translate.TranslationError, match="not a comment or string"):
        translate.translate_code(src, [('"items"', '"项"')], "t")
    with pytest.raises(translate.TranslationError, match="grader"):
        translate.translate_code(src, [("# EXERCISE ex02_x (2 points)", "# 练习")], "t")
    assert translate.translate_code(src, [('f"{n:>2} items"', 'f"{n:>2} 项"')], "t") == \
        'print(f"{n:>2} 项")  # EXERCISE ex02_x (2 points)\n'
    assert translate.placeholders('"%s and %(n)d, {}, {x:.2f}"') == \
        ["%(n)d", "%s", "{x:.2f}", "{}"]


# (e): the glossary


def _glossary() -> list[tuple[list[str], list[str]]]:
    text = GLOSSARY.read_text(encoding="utf-8")
    table = text.split("## Terms (checked)", 1)[1].split("\n## ", 1)[0]
    rows = [r.strip().strip("|").split("|") for r in table.splitlines() if r.startswith("| ")]
    return [([w.strip() for w in en.split(" / ")], [w.strip() for w in zh.split(" / ")])
            for en, zh, _ in rows[1:]]


def _mentions(english: str, forms: list[str]) -> str | None:
    prose = re.sub(r"`[^`]*`", " ", english)  # code spans hold code names, not terms
    if re.match(r"[rRbB]?[fF][rR]?['\"]", english):  # an f-string's {fields} hold code too
        prose = re.sub(r"\{[^{}]*\}", " ", prose)
    for form in forms:
        if re.search(rf"(?<![\w.]){re.escape(form)}(?![\w(])", prose, re.I):
            return form
    return None


def test_glossary_skips_the_code_of_fstring_fields():
    assert _mentions('f"bytes: {traffic(traced)}"', ["traced"]) is None
    assert _mentions('f"the traced program: {x}"', ["traced"]) == "traced"
    assert _mentions('"the {traced} program"', ["traced"]) == "traced"  # a plain string's text


def test_glossary_terms_are_used():
    entries = _glossary()
    assert len(entries) >= 20
    units = []
    for path in translate.render(LANG)[0]:
        if path.parent.parent.name == "exercises":
            continue
        english = nbformat.read(str(_english_of(path)), as_version=4)
        zh = nbformat.read(str(path), as_version=4)
        units += [(f"{path.name}, cell {e.id}", e.source, z.source)
                  for e, z in zip(english.cells, zh.cells) if e.cell_type == "markdown"]
    units += [(where, en, zh) for where, pairs in _pairs() for en, zh in pairs]
    misses = []
    for where, en, zh in units:
        for en_forms, zh_forms in entries:
            form = _mentions(en, en_forms)
            if form and not any(z.lower() in zh.lower() for z in zh_forms):
                misses.append(f"{where}: '{form}' is {' / '.join(zh_forms)}")
    assert not misses, "translations not using the glossary's term:\n" + "\n".join(misses)
