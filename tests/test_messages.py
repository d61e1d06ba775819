"""What minijit tells a learner, in the course's language (minijit/grading/messages.py).

(a) the language comes from the config, then $MINIJIT_LANG, then a kernel's folder; (b) a
text is found exactly, as a template, or line by line, and what has no entry stays English;
(c) the Chinese catalogue translates every text a learner can read, keeping its placeholders,
and holds no entry nothing uses; (d) check()'s table, the grader's feedback and the tracer
errors speak Chinese in the Chinese course and are unchanged in English; (e) the Chinese
chapters' plots find a Chinese font; (f) a chapter of chapters/zh reads exercises/zh.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

import minijit as mj
import minijit.numpy as mnp
from minijit.config import config
from minijit.course import translate as translate_tool
from minijit.grading import messages
from minijit.grading.comparing import compare

CJK = re.compile(r"[\u4e00-\u9fff]")


@pytest.fixture
def zh():
    config.update("language", "zh")
    yield
    config.update("language", None)


@pytest.fixture
def catalogue(tmp_path, monkeypatch):
    """A small zh catalogue of the test's own, instead of the course's."""
    def write(text: str) -> None:
        (tmp_path / "zh.md").write_text(text, encoding="utf-8")
        messages.catalogue.cache_clear()
        messages._templates.cache_clear()

    monkeypatch.setattr(messages, "LOCALE_DIR", tmp_path)
    yield write
    messages.catalogue.cache_clear()
    messages._templates.cache_clear()


# ---------------------------------------------------------------------- (a) the language


def test_language_from_config_then_environment_then_folder(tmp_path, monkeypatch):
    monkeypatch.delenv("MINIJIT_LANG", raising=False)
    for folder in ("chapters/zh", "exercises/zh", "chapters", "zh", "exercises/zh/sub"):
        (tmp_path / folder).mkdir(parents=True, exist_ok=True)
    expect = {"chapters/zh": "zh", "exercises/zh": "zh", "chapters": "en", "zh": "en",
              "exercises/zh/sub": "en"}
    for folder, lang in expect.items():
        monkeypatch.chdir(tmp_path / folder)
        assert messages.language() == lang, folder
    monkeypatch.chdir(tmp_path / "chapters")
    monkeypatch.setenv("MINIJIT_LANG", "zh")
    assert messages.language() == "zh"
    monkeypatch.setenv("MINIJIT_LANG", "fr")  # not a language of the course: English
    assert messages.language() == "en"
    try:
        config.update("language", "zh")
        monkeypatch.setenv("MINIJIT_LANG", "en")
        assert messages.language() == "zh"
    finally:
        config.update("language", None)


# ---------------------------------------------------------------------- (b) lookups


def test_exact_template_and_line_by_line(catalogue):
    catalogue("<!-- a note -->\n"
              "en: a loop body\nzh: 循环体\n"
              "en: Reread {section}.\nzh: 请重读{section}。\n"
              "en: expected {n} items, got {m}\nzh: 应有 {n} 项，得到 {m} 项\n"
              "en: in {what}\nzh: 在{what}中\n"
              "en: untranslated yet\nzh: TODO\n"
              "en: two\n    lines\nzh: 两\n    行\n")
    assert messages.tr("Reread {section}.", "zh", section="§1") == "请重读§1。"
    assert messages.tr("Reread {section}.", "en", section="§1") == "Reread §1."
    assert messages.translate("expected 3 items, got 4", "zh") == "应有 3 项，得到 4 项"
    assert messages.translate("in a loop body", "zh") == "在循环体中"  # the field too
    assert messages.translate("a loop body\nnot known\nexpected 1 items, got 2", "zh") == \
        "循环体\nnot known\n应有 1 项，得到 2 项"
    assert messages.translate("untranslated yet", "zh") == "untranslated yet"
    assert messages.translate("two\nlines", "zh") == "两\n行"
    assert messages.translate("a loop body", "en") == "a loop body"
    # braces in a value are never read as fields
    assert messages.tr("Reread {section}.", "zh", section="{x}") == "请重读{x}。"


def test_a_malformed_catalogue_names_its_line(catalogue):
    catalogue("en: hello\nzh: 你好\nthis line is neither\n")
    with pytest.raises(ValueError, match=r"zh.md, line 3: expected 'en: <English text>'"):
        messages.catalogue("zh")


# ---------------------------------------------------------------------- (c) the catalogue


def _fields(text: str) -> list[str]:
    return sorted(re.findall(r"\{(\w+)\}", text))


def test_every_text_a_learner_reads_has_a_translation():
    table = messages.catalogue("zh")
    wanted = translate_tool.wanted_texts()
    missing = [f"{where}: {en!r}" for en, where in wanted.items() if en not in table]
    assert not missing, (f"{len(missing)} texts have no Chinese (run `python -m "
                         "minijit.course.translate messages` and translate the TODOs):\n"
                         + "\n".join(missing[:20]))
    bad = [en for en, other in table.items() if _fields(en) != _fields(other)]
    assert not bad, f"translations that change the {{fields}}: {bad[:10]}"
    untranslated = [en for en, other in table.items() if other == en and CJK.search(en) is None
                    and re.search(r"[a-z]{4,} [a-z]{4,}", re.sub(r"`[^`]*`", "", en))]
    assert not untranslated, f"entries left in English: {untranslated[:10]}"


def _scenario_messages() -> list[str]:
    """Messages a learner meets that are made at run time: why a case failed, and the
    tracer errors (with their fixes) of the common pitfalls."""
    arr = {"__array__": {"shape": [2], "dtype": "float64", "data": [1.0, 2.0]}}
    arr3 = {"__array__": {"shape": [3], "dtype": "float64", "data": [1.0, 2.0, 3.0]}}
    arr_i = {"__array__": {"shape": [2], "dtype": "int64", "data": [1, 2]}}
    err = {"__error__": {"type": "TypeError", "message": "bad", "line": ""}}
    bare = {"__error__": {"type": "TypeError", "message": "", "line": ""}}
    probe = {"__error__": {"type": "KeyError", "message": "k", "line": "",
                           "origin": "probe"}}
    undefined = {"__error__": {"type": "NameError", "line": "", "message": (
        "name 'f' is not defined: run the exercise cell (and the cells above it)")}}
    pairs = [(err, 1), (err, probe), (1, undefined), (1, err), (1, bare), (arr, 1), ([arr], [1]),
             (arr, arr3), ([arr], [arr3]), (arr, arr_i), ([arr], [arr_i]), (1, 2),
             ([1], [2]), ([1], 2), ([[1]], [2]), ([1], [1, 2]), ([[1]], [[1, 2]])]
    found = [compare(e, g, 1e-7, 0) for e, g in pairs]

    def errors_of(*calls):
        out = []
        for call in calls:
            try:
                call()
            except Exception as e:  # noqa: BLE001 - each call raises one of the pitfalls
                out.append(str(e))
        return out

    kept = []

    def leak(x):
        kept.append(x)
        return x

    mj.jit(leak)(mnp.ones(2))
    found += errors_of(
        lambda: mj.jit(lambda x, n: x if x.sum() > n else -x)(mnp.ones(2), 1),
        lambda: mj.jit(lambda x: x if x.sum() > 0 else -x)(mnp.ones(2)),
        lambda: mj.jit(lambda x: [0, 1][x.sum().astype(mnp.int64)])(mnp.ones(2)),
        lambda: mj.jit(lambda x: int(x.sum()))(mnp.ones(2)),
        lambda: mj.jit(lambda x: float(x.sum()))(mnp.ones(2)),
        lambda: mj.jit(lambda x: x.sum().item())(mnp.ones(2)),
        lambda: mj.jit(lambda x: complex(x.sum()))(mnp.ones(2)),
        lambda: mj.jit(lambda x: np.sin(x))(mnp.ones(2)),
        lambda: mj.jit(lambda x: {x: 1})(mnp.ones(2)),
        lambda: mj.jit(lambda x: mnp.zeros(int(mnp.ones(2).sum())) + x)(mnp.ones(2)),
        lambda: kept[0] + 1,
        lambda: mj.jit(lambda x: f"{x.sum():.2f}")(mnp.ones(2)),
        lambda: mj.jit(lambda x, n, m: x if x.sum() > n + m else -x)(mnp.ones(2), 1, 2),
    )
    from minijit.errors import _HIDDEN_NOTE

    events = [  # the runner's words for what happened when a notebook ran
        "the ex02_where cell: not attempted", "the cell after ex02_bind starting `def f(x):`: "
        "not attempted", "the cell starting `import os` did not raise, though it is tagged "
        "raises-exception: the error it demonstrates did not happen",
        "the ex02_where cell ran past 30 s and was interrupted; later cells still ran",
        "the ex02_where cell ignored the interrupt; the kernel was restarted without it",
        "the ex02_where cell called exit(); the kernel was restarted and the notebook "
        "replayed without that cell", "the kernel died in the ex02_where cell; it was "
        "restarted and the notebook replayed without that cell",
        'the check("ex02_where") cell was edited or deleted',
        "the submission ran past its 300 s limit"]
    from minijit.course.mine import YOURS, own

    why = ["off while grading", "no course folder", "not written yet",
           "build.use refused it: no reason", "its cell defines no eval_jaxpr",
           "eval_jaxpr is a int, not a function", "no exercises/03_the_ir.ipynb",
           "cannot read 03_the_ir.ipynb (JSONDecodeError)",
           "no cell '# EXERCISE ex03_eval_jaxpr' in 03_the_ir.ipynb",
           "syntax error in the cell of ex03_eval_jaxpr, line 3: invalid syntax",
           "the notebook's first cell raised ImportError: no module",
           "the cell of ex03_eval_jaxpr called exit()",
           "fails its small example: 1 != 2",
           "fails public case 'program add_literal'; check('ex03_eval_jaxpr') shows why",
           "fails public case 'sum' and 2 more; check('ex03_eval_jaxpr') shows why"]
    statuses = [YOURS] + [own(w) for w in why]  # use_mine()'s table (minijit/course/mine.py)
    return [m for m in found if m] + [_HIDDEN_NOTE] + events + statuses


def test_every_other_entry_is_a_message_made_at_run_time():
    """Entries that are not a literal or an exercise's text are templates of a message the
    scenarios above make (a reason, an error line): none is dead."""
    wanted = translate_tool.wanted_texts()
    lines = set()
    for message in _scenario_messages():
        lines.add(message)
        lines.update(message.split("\n"))
    used = set()
    for line in lines:
        used.update(messages.entries_matching(line, "zh"))
    dead = [en for en in messages.catalogue("zh") if en not in wanted and en not in used]
    assert not dead, f"entries no message uses: {dead}"


# ---------------------------------------------------------------------- (d) where it shows


def test_tracer_errors_carry_a_chinese_note(zh):
    messages_made = [m for m in _scenario_messages() if "traced" in m or "tracer" in m]
    assert len(messages_made) >= 8
    for message in messages_made:
        said = messages.translate(message, "zh")
        for en, other in zip(message.split("\n"), said.split("\n")):
            assert other != en and CJK.search(other), (message, en)
    with pytest.raises(TypeError) as info:
        mj.jit(lambda x, n: x if x.sum() > n else -x)(mnp.ones(2), 1)
    note = info.value.__notes__[0]
    assert "不能" in note or "追踪" in note, note
    assert str(info.value).startswith("Attempted boolean conversion")  # still English
    config.update("language", None)
    with pytest.raises(TypeError) as info:
        mj.jit(lambda x, n: x if x.sum() > n else -x)(mnp.ones(2), 1)
    assert not any(CJK.search(n) for n in getattr(info.value, "__notes__", ()))


def test_check_table_in_chinese_and_in_english(zh):
    from minijit.grading.checking import reset_attempts, run_public_cases
    from minijit.grading.registry import default_exercises

    ex = default_exercises()["ex01_break_even"]
    wrong = {"calls_to_break_even": lambda compile_s, eager_s, jitted_s: 7}
    reset_attempts()
    report = run_public_cases(ex, wrong, count=True)
    text, page = str(report), report._repr_html_()
    assert "chapters/zh/01_why_jit.ipynb" in text and "公开" in text and "提示" in page, text
    untouched = run_public_cases(ex, {}, count=True)
    assert "chapters/zh/01_why_jit.ipynb" in str(untouched) and CJK.search(str(untouched))
    config.update("language", None)
    reset_attempts()
    english = run_public_cases(ex, wrong, count=True)
    assert "Reread chapters/01_why_jit.ipynb" in str(english)
    assert not CJK.search(str(english)) and not CJK.search(english._repr_html_())
    reset_attempts()


def test_feedback_in_chinese(zh, tmp_path):
    from minijit.grading.cases import Case
    from minijit.grading.feedback import feedback_markdown
    from minijit.grading.feedback_html import feedback_html
    from minijit.grading.registry import default_exercises
    from minijit.grading.scoring import ExerciseScore, FailedCase, Row

    ex = default_exercises()["ex01_break_even"]
    case = ex.public[0]
    sc = ExerciseScore(ex, outcome="ran")
    sc.points, sc.public, sc.hidden, sc.specific = 0.0, (0, 1), (1, 2), True
    sc.failed_public.append(FailedCase(case.name, 3, 7, compare(3, 7, 1e-7, 0),
                                       ex.hint_for(case, 7)))
    sc.failed_hidden.append(Case("jitted not faster"))
    row = Row("alice", tmp_path / "a.ipynb", {ex.id: sc}, "ok", 1.0, [])
    md, page = feedback_markdown(row), feedback_html(row)
    for text in (md, page):
        assert "反馈" in text and "提示" in text and "chapters/zh/01_why_jit.ipynb" in text, text
        assert "Hint" not in text and "expected" not in text, text
    assert '<html lang="zh">' in page


# ---------------------------------------------------------------------- (e), (f)


def test_the_chinese_course_finds_a_chinese_font(zh):
    pytest.importorskip("matplotlib")
    from minijit.course.fonts import cjk_family, use_cjk_font

    if cjk_family() is None:
        pytest.skip("no Chinese font on this machine (course.py test installs fonts-noto-cjk)")
    import matplotlib
    import matplotlib.pyplot as plt

    saved = list(matplotlib.rcParams["font.family"])
    try:
        family = use_cjk_font()
        assert matplotlib.rcParams["font.family"][-1] == family
        fig, ax = plt.subplots()
        ax.set_title("编译时间（毫秒）")
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("error")  # "Glyph ... missing from font(s)" is a warning
            fig.canvas.draw()
        plt.close(fig)
    finally:
        matplotlib.rcParams["font.family"] = saved


def test_use_mine_table_in_chinese_lines_up(zh):
    from minijit.course.mine import WRITTEN_BY, YOURS, _width, own, table

    statuses = {name: own("not written yet") for name in list(WRITTEN_BY)[:3]}
    statuses[list(WRITTEN_BY)[3]] = YOURS
    text = table(statuses, "exercises/zh")
    assert "还没有写" in text and "你的" in text and "部件" in text, text
    rows = text.split("\n")[1:]
    starts = {_width(r[: r.index("minijit")]) if "minijit" in r else None for r in rows[1:]}
    assert len(starts - {None}) == 1, text  # the status column starts at one width


def test_a_chinese_chapter_reads_the_chinese_exercises(tmp_path, monkeypatch):
    from minijit.course import mine

    monkeypatch.delenv("MINIJIT_LANG", raising=False)
    for folder in ("chapters/zh", "exercises/zh"):
        (tmp_path / folder).mkdir(parents=True)
    monkeypatch.chdir(tmp_path / "chapters" / "zh")
    assert mine.exercises_folder() == (tmp_path / "exercises" / "zh").resolve()
    monkeypatch.chdir(tmp_path / "chapters")
    assert mine.exercises_folder() == (tmp_path / "exercises").resolve()
