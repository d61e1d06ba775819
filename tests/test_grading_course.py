"""The course's own exercises (chapters 01-04): in sync, consistent, and graded right.

- ``exercises/`` is exactly what ``python -m minijit.grading generate`` makes of
  ``solutions/`` (the drift check);
- every EXERCISE header matches a registered exercise with the same points, and back;
- every probe runs the same when shipped to a kernel as source (the self-containment rule)
  as when called directly: checked in-process, without kernels;
- in-notebook ``check()`` passes every public case on the solutions, and its hints come in
  tiers: an untouched stub shows the section only, the first failed check the pitfall, the
  code-level hint later (or when asked for); the pitfall never quotes the solution;
- through the real grader: solutions score full marks, untouched exercises zero, one chapter
  per test (so pytest-xdist spreads them); this is the one run of each solution notebook
  top to bottom, and its row must show no error or note at all.
"""

from __future__ import annotations

import contextlib
import io
import re
import subprocess
import sys
import warnings
from pathlib import Path

import nbformat
import pytest

from minijit.grading.batch import grade
from minijit.grading.cases import CODE, PITFALL, SECTION, Hint, as_hint, compare, probe_source
from minijit.grading.channel import ProbeCall, run_locally
from minijit.grading.checking import expected_value, reset_attempts, run_public_cases
from minijit.grading.notebook import BEGIN, END, exercise_headers
from minijit.grading.registry import COURSE_MODULES, load_exercises
from minijit.grading.runner import Limits
from minijit.grading.sandbox import unavailable

REPO = Path(__file__).resolve().parent.parent
SOLUTIONS = sorted((REPO / "solutions").glob("*.ipynb"))
EXERCISES = load_exercises(COURSE_MODULES)


def test_exercises_in_sync_with_solutions():
    run = subprocess.run([sys.executable, "-m", "minijit.grading", "generate", "--check"],
                         cwd=REPO, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stdout + run.stderr


def test_headers_match_the_registry():
    found = {}
    for path in SOLUTIONS:
        for h in exercise_headers(nbformat.read(path, as_version=4)):
            found[h.id] = (h.points, path.stem)
    assert set(found) == set(EXERCISES)
    for ex_id, (points, notebook) in found.items():
        assert EXERCISES[ex_id].points == points, ex_id
        assert EXERCISES[ex_id].chapter == notebook, ex_id


def _headings(chapter: str, folder: str = "chapters") -> list[str]:
    """The section headings (``## ...``, ``### ...``) of a chapter's markdown cells, outside
    code fences; not its title (a hint must point at a section, not at the whole chapter)."""
    nb = nbformat.read(REPO / folder / f"{chapter}.ipynb", as_version=4)
    out = []
    for cell in nb.cells:
        if cell.cell_type != "markdown":
            continue
        fenced = False
        for line in cell.source.splitlines():
            if line.lstrip().startswith("```"):
                fenced = not fenced
            elif not fenced and re.match(r"#{2,6} ", line):
                out.append(line.lstrip("#").strip())
    return out


def _hint_texts(ex) -> list[str]:
    """Every hint text of an exercise: its own tiers, its cases' and its error hints'."""
    hints = [as_hint(ex.hint)] + [as_hint(h) for h in ex.error_hints.values()]
    hints += [as_hint(c.hint) for c in ex.public + ex.hidden if c.hint]
    return [text for h in hints for text in (h.pitfall, h.code) if text]


@pytest.mark.parametrize("ex_id", sorted(EXERCISES))
def test_hints_name_a_real_section_of_the_chapter(ex_id):
    """A hint says "Reread chapters/NN.ipynb, section X": X must be one of its section
    headings. References inside hint texts count too: a quoted heading (\u201c2. ...\u201d)
    must be a heading of some chapter, and "section N" must be a numbered section of the
    exercise's chapter (unless the text names another chapter)."""
    ex = EXERCISES[ex_id]
    headings = _headings(ex.chapter)
    assert ex.section in headings, (
        f"{ex_id} points at section {ex.section!r} of {ex.chapter}, whose headings are "
        f"{headings}")
    every = {h for c in sorted((REPO / "chapters").glob("*.ipynb")) for h in _headings(c.stem)}
    numbers = {h.split(".", 1)[0] for h in headings if re.match(r"\d+\. ", h)}
    for text in _hint_texts(ex):
        for quoted in re.findall("\u201c(\\d+\\. .*?)\u201d", text):
            assert quoted in every, f"{ex_id}: hint names a section {quoted!r} that no chapter has"
        if not re.search(r"[Cc]hapter \d\d", text):
            for n in re.findall(r"[Ss]ection (\d+)", text):
                assert n in numbers, f"{ex_id}: hint names section {n} of {ex.chapter}: {text}"


def test_chinese_hints_name_a_section_of_the_chinese_chapter():
    """In the Chinese course a hint says where to reread in chapters/zh: the catalogue's
    translation of each exercise's section must be a heading of that Chinese chapter."""
    from minijit.grading.messages import translate

    wrong = []
    for ex in EXERCISES.values():
        if not (REPO / "chapters" / "zh" / f"{ex.chapter}.ipynb").exists():
            wrong.append(f"{ex.id}: chapters/zh/{ex.chapter}.ipynb is missing")
            continue
        section = translate(ex.section, "zh")
        if section not in _headings(ex.chapter, "chapters/zh"):
            wrong.append(f"{ex.id}: {section!r} is no heading of chapters/zh/{ex.chapter}")
    assert not wrong, "\n".join(wrong)


def _section_numbers(chapter: str) -> set[str]:
    return {h.split(".", 1)[0] for h in _headings(chapter) if re.match(r"\d+\. ", h)}


@pytest.mark.parametrize("path", SOLUTIONS, ids=[p.stem for p in SOLUTIONS])
def test_exercise_notebooks_name_real_sections(path):
    """The prose of an exercise notebook says "section 3" of its chapter, or "chapter 07,
    section 7": each must be a numbered section of that chapter."""
    chapters = {c.stem[:2]: c.stem for c in (REPO / "chapters").glob("*.ipynb")}
    bad = []
    for cell in nbformat.read(path, as_version=4).cells:
        if cell.cell_type != "markdown":
            continue
        text = " ".join(cell.source.split())
        for m in re.finditer(r"(?:[Cc]hapter (\d\d),? )?[Ss]ections? (\d+)", text):
            chapter = chapters.get(m[1], "?") if m[1] else path.stem
            if m[2] not in (_section_numbers(chapter) if chapter != "?" else set()):
                bad.append(f"{m[0]!r} (chapter {chapter})")
    assert not bad, f"{path.name} names sections that do not exist: {bad}"


def test_course_covers_the_pitfalls_and_builds():
    ids = set(EXERCISES)
    # one per pitfall row of the source chapter, and two that build a piece of minijit
    for needed in ["ex04_static_args", "ex02_where", "ex04_buckets", "ex03_dtype",
                   "ex02_print_count", "ex02_bind", "ex02_jvp", "ex03_broadcast_rule",
                   "ex05_cond_loop", "ex05_while_impl", "ex06_debug_print", "ex06_leak",
                   "ex06_recompiles", "ex06_donate", "ex06_disable_jit", "ex07_fold",
                   "ex07_cse", "ex07_rule", "ex08_may_fuse", "ex07_dce", "ex08_fusion_groups",
                   "ex09_softplus_rule", "ex09_loop_nest", "ex10_cache_entries", "ex10_pays_off",
                   "ex03_eval_jaxpr", "ex03_pp_jaxpr", "ex05_closure_convert", "ex04_cache_key",
                   "ex10_new_primitive", "ex02_process_primitive"]:
        assert needed in ids
    for ex in EXERCISES.values():
        assert ex.public and ex.hidden, ex.id


def _ship(ex, key, case, ns):
    """Run one case the way the grading kernel does: source text through the channel."""
    source, name = probe_source(ex.probe_for(case))
    return run_locally([ProbeCall(key, source, name, tuple(case.args))], ns)[key]


@pytest.mark.parametrize("ex_id", sorted(EXERCISES))
def test_probes_are_self_contained(ex_id):
    ex = EXERCISES[ex_id]
    for key, case, _ in ex.cases():
        ns = dict(ex.reference())
        shipped = _ship(ex, key, case, ns)
        assert compare(expected_value(ex, key, case), shipped) is None, (key, shipped)


def _solution_namespace(path: Path) -> dict:
    """Execute a solution notebook's code cells in-process (cells that fail on purpose,
    tagged raises-exception, are skipped)."""
    ns: dict = {"__name__": "__main__"}
    with contextlib.redirect_stdout(io.StringIO()):
        for cell in nbformat.read(path, as_version=4).cells:
            if cell.cell_type == "code" and "raises-exception" not in cell.metadata.get(
                    "tags", []):
                exec(compile(cell.source, str(path), "exec"), ns)
    return ns


@contextlib.contextmanager
def _global_state_restored():
    """Solution notebooks register primitives and rules (a notebook's own `badd`), set
    config and switch in pieces of their own (`minijit.build`): restore minijit's tables
    and pieces afterwards, so other tests in this worker see none."""
    import importlib

    from minijit import build, config, core
    from minijit.codegen import rules

    # the package attribute `minijit.passes.simplify` is the pass; the table is in its module
    simplify_module = importlib.import_module("minijit.passes.simplify")
    tables = [core.abstract_eval_rules, core.impl_rules, rules.numba_rules]
    groups = [core.UNARY, core.BINARY, core.ELEMENTWISE, core.COMMUTATIVE, core.COMPARISONS,
              core.REDUCTIONS]
    saved = ([dict(t) for t in tables], [set(g) for g in groups], dict(config._values),
             {k: list(v) for k, v in simplify_module.RULES.items()})
    pieces = build.using()  # a solution switches its own pieces in (build.use)
    try:
        yield
    finally:
        build.reset()
        for name, fn in pieces.items():
            build.use(name, fn, verify=False)
        for table, copy in zip(tables, saved[0]):
            table.clear()
            table.update(copy)
        for group, copy in zip(groups, saved[1]):
            group.clear()
            group.update(copy)
        config._values.clear()
        config._values.update(saved[2])
        simplify_module.RULES.clear()
        simplify_module.RULES.update(saved[3])


@pytest.mark.parametrize("path", SOLUTIONS, ids=[p.stem for p in SOLUTIONS])
def test_check_passes_on_solutions(path):
    with _global_state_restored():
        ns = _solution_namespace(path)
        for h in exercise_headers(nbformat.read(path, as_version=4)):
            report = run_public_cases(EXERCISES[h.id], ns)
            assert report.all_passed, str(report)
            assert "<table>" in report._repr_html_()


def _exercise_namespace(path: Path) -> dict:
    """Execute an exercise notebook's code cells in-process, as a learner who has not started
    would: every cell runs, the stubs' cells raise (and are passed over)."""
    ns: dict = {"__name__": "__main__"}
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        for cell in nbformat.read(path, as_version=4).cells:
            if cell.cell_type == "code":
                try:
                    exec(compile(cell.source, str(path), "exec"), ns)
                except Exception:  # noqa: BLE001 - a stub, or a cell that needs one
                    pass
    return ns


def _rendered(report) -> str:
    return str(report) + "\n" + report._repr_html_()


def _visible(text: str, rendered: str) -> bool:
    """Whether ``text`` shows in the text or HTML rendering (the HTML escapes it)."""
    import html

    return text in rendered or html.escape(text) in rendered


@pytest.mark.parametrize("path", SOLUTIONS, ids=[p.stem for p in SOLUTIONS])
def test_untouched_stubs_show_only_the_section(path):
    """check() on an untouched exercise names the section to read, and no pitfall or code
    hint, however often it is run; hint=True then shows every tier."""
    exercise_path = REPO / "exercises" / path.name
    with _global_state_restored():
        ns = _exercise_namespace(exercise_path)
        for h in exercise_headers(nbformat.read(exercise_path, as_version=4)):
            ex = EXERCISES[h.id]
            reset_attempts(ex.id)
            try:
                for _ in range(3):
                    report = run_public_cases(ex, ns, count=True)
                    assert not report.attempted and report.tier == SECTION, str(report)
                    shown = _rendered(report)
                    assert _visible(ex.section, shown), shown
                    for text in _hint_texts(ex):
                        assert not _visible(text, shown), (ex.id, text)
                asked = _rendered(run_public_cases(ex, ns, hint=True))
                code = as_hint(ex.hint).code
                if code:
                    assert _visible(code, asked), asked
            finally:
                reset_attempts(ex.id)


def _wrong_namespace(ex) -> dict:
    """A failed attempt: every name the exercise asks for, bound to something wrong."""
    return {name: (lambda *args, **kwargs: None) for name in ex.reference()}


@pytest.mark.parametrize("ex_id", sorted(EXERCISES))
def test_every_exercise_hint_is_tiered(ex_id):
    """An exercise's own hint is a Hint with both tiers: a plain string would be a pitfall
    with no code-level hint behind it (and would skip the checks below). A case's or an
    error's hint may stay a string: its code tier is then the exercise's."""
    ex = EXERCISES[ex_id]
    assert isinstance(ex.hint, Hint), f"{ex_id}'s hint is a plain string, not a Hint"
    assert ex.hint.pitfall and ex.hint.code, f"{ex_id} has no code-level tier"
    assert ex.hint.pitfall != ex.hint.code, ex_id


@pytest.mark.parametrize("ex_id", sorted(EXERCISES))
def test_hint_tiers_come_in_order(ex_id):
    """Section, then the pitfall on the first failed check, then the code-level hint on the
    second (or when asked for); never code before a failed attempt."""
    ex = EXERCISES[ex_id]
    hint = as_hint(ex.hint)
    assert isinstance(ex.hint, Hint) and hint.code, f"{ex_id} has no code-level tier"
    wrong = _wrong_namespace(ex)
    reset_attempts(ex_id)
    try:
        first = run_public_cases(ex, wrong, count=True)
        assert first.attempted and first.tier == PITFALL, str(first)
        rows = [r for r in first.rows if not r.passed]
        assert rows and all(set(r.hints) == {SECTION, PITFALL} for r in rows), str(first)
        assert "Reread" in str(first) and _visible(ex.section, _rendered(first))
        if hint.code:
            assert not _visible(hint.code, _rendered(first))
            assert "hint=True" in str(first)
        second = run_public_cases(ex, wrong, count=True)
        assert second.tier == CODE
        if hint.code:
            assert _visible(hint.code, _rendered(second)), str(second)
        reset_attempts(ex_id)
        asked = run_public_cases(ex, wrong, hint=True)
        assert asked.tier == CODE
        if hint.code:
            assert _visible(hint.code, _rendered(asked))
    finally:
        reset_attempts(ex_id)


def _solution_lines(path: Path) -> dict[str, list[str]]:
    """The lines between the solution markers, by exercise id, without whitespace."""
    out: dict[str, list[str]] = {}
    for h in exercise_headers(nbformat.read(path, as_version=4)):
        source = nbformat.read(path, as_version=4).cells[h.cell_index].source
        inside = False
        for line in source.splitlines():
            if line.strip() in (BEGIN, END):
                inside = line.strip() == BEGIN
            elif inside:
                out.setdefault(h.id, []).append("".join(line.split()))
    return out


@pytest.mark.parametrize("path", SOLUTIONS, ids=[p.stem for p in SOLUTIONS])
def test_pitfall_hints_do_not_quote_the_solution(path):
    """What shows after one failed attempt (and in the gradebook's feedback) names the
    pitfall; it never contains a line of the solution (that belongs in the code tier, which
    every exercise has)."""
    for ex_id, lines in _solution_lines(path).items():
        ex = EXERCISES[ex_id]
        assert isinstance(ex.hint, Hint), f"{ex_id}'s hint is a plain string, not a Hint"
        hints = [as_hint(ex.hint)] + [as_hint(h) for h in ex.error_hints.values()]
        hints += [as_hint(c.hint) for c in ex.public + ex.hidden if c.hint]
        pitfalls = ["".join(h.pitfall.split()) for h in hints]
        for line in lines:
            if len(line) >= 16 and not line.startswith("#"):
                for text in pitfalls:
                    assert line not in text, f"{ex_id}'s pitfall hint quotes its solution"


TARGET_S = 60  # what a solution should take to grade (a warning past it, never a failure)


@pytest.mark.slow
@pytest.mark.notebook
@pytest.mark.parametrize("path", SOLUTIONS, ids=[p.stem for p in SOLUTIONS])
def test_solution_full_marks_exercise_zero(path, tmp_path, record_property):
    """One chapter as an instructor grades it: its solution and its untouched exercise, in
    the sandbox where one starts (the real chapters must run in it).

    This is also the one run of each solution notebook top to bottom (tests/test_notebooks.py
    runs the chapters only, and checks the solutions are committed clean): the grader runs
    every code cell in order, as nbclient does there, and its row would show what that test
    failed on. An error in an untagged cell is an ``error`` event, a stub left is a "not
    attempted" note, a cell tagged raises-exception that does not raise is a note
    (tests/test_grading_feedback.py checks each is reported): a solution's row has status
    ok and no event at all (an empty detail). Its check() cells
    return at once while grading (MINIJIT_GRADING=1); test_check_passes_on_solutions runs
    them. Grading reads a copy: neither it nor the committed file changes."""
    sandboxed = unavailable() is None
    committed = path.read_bytes()
    problems = []
    subs = tmp_path / path.stem
    subs.mkdir()
    (subs / "solution.ipynb").write_bytes(committed)
    (subs / "exercise.ipynb").write_bytes((REPO / "exercises" / path.name).read_bytes())
    rows = {r.student: r for r in grade(
        [subs], exercises=EXERCISES, assignment=[path.stem], jobs=2, progress=False,
        out=subs / "gradebook.csv", feedback_dir=subs / "feedback",
        limits=Limits(cell_timeout=60, timeout=240), sandbox=sandboxed)}
    solution, exercise = rows["solution"], rows["exercise"]
    record_property("seconds", round(solution.seconds, 2))
    print(f"\n{path.stem}: solution graded in {solution.seconds:.1f} s, "
          f"exercise in {exercise.seconds:.1f} s")
    assert path.read_bytes() == committed, "grading changed the committed solution"
    assert (subs / "solution.ipynb").read_bytes() == committed, "grading changed the copy"
    assert {s.exercise.chapter for s in solution.scores.values()} == {path.stem}
    if solution.status != "ok" or solution.total != solution.max_total or solution.detail:
        problems.append(f"{path.stem} solution: {solution.status} {solution.total}/"
                        f"{solution.max_total}: {solution.detail}")
    if exercise.status != "ok" or exercise.total != 0:
        problems.append(f"{path.stem} exercise: {exercise.status} {exercise.total}: "
                        f"{exercise.detail}")
    # a cell that runs an untouched stub says so; where every such cell is a check() or
    # a build.use (which report, not raise), the notebook ran clean and the detail is empty
    if exercise.detail and "not attempted" not in exercise.detail:
        problems.append(f"{path.stem} exercise: {exercise.detail}")
    feedback = (subs / "feedback" / "exercise.md").read_text()
    if "NotImplementedError" not in feedback or "Hint: Reread" not in feedback:
        problems.append(f"{path.stem} exercise feedback:\n{feedback}")
    # the untouched exercise's feedback names the section only; a failed attempt's
    # feedback (the solution's, never failing) would add the pitfall, never the code
    for sc in exercise.scores.values():
        for text in _hint_texts(sc.exercise):
            if text in feedback:
                problems.append(f"{path.stem}: untouched feedback shows a hint: {text}")
    assert not problems, "\n".join(problems)
    if solution.seconds > TARGET_S:
        warnings.warn(f"{path.name} took {solution.seconds:.0f} s to grade; a chapter should "
                      f"run in under {TARGET_S} s", stacklevel=1)


# Chinese submissions of two chapters: 02 (its solution's strings are all translated) and
# 10 (the one whose grader reads strings of the notebook: VERDICTS' workload names)
ZH_GRADED = ("02_tracing", "10_putting_it_together")


@pytest.mark.slow
@pytest.mark.notebook
def test_chinese_submissions_score_as_the_english(tmp_path, monkeypatch):
    """The grader, told the release is Chinese (``grade --lang zh`` sets MINIJIT_LANG), gives
    the Chinese solutions full marks and the untouched Chinese exercises zero per exercise,
    exactly as test_solution_full_marks_exercise_zero has it for the English, and writes
    the feedback in Chinese, pointing at chapters/zh."""
    monkeypatch.setenv("MINIJIT_LANG", "zh")
    for stem in ZH_GRADED:  # one batch per chapter: a batch expects all its exercises
        subs = tmp_path / stem
        subs.mkdir()
        for kind in ("solution", "exercise"):
            (subs / f"{kind}.ipynb").write_bytes(
                (REPO / f"{kind}s" / "zh" / f"{stem}.ipynb").read_bytes())
        rows = {r.student: r for r in grade(
            [subs], exercises=EXERCISES, assignment=[stem], jobs=2, progress=False,
            out=subs / "gradebook.csv", feedback_dir=subs / "feedback",
            limits=Limits(cell_timeout=60, timeout=240), sandbox=unavailable() is None)}
        solved, untouched = rows["solution"], rows["exercise"]
        ids = {ex.id for ex in EXERCISES.values() if ex.chapter == stem}
        assert {k: s.points for k, s in solved.scores.items()} == \
            {i: EXERCISES[i].points for i in ids}, (solved.status, solved.detail)
        assert solved.status == "ok" and not solved.detail, solved.detail
        assert {k: s.points for k, s in untouched.scores.items()} == dict.fromkeys(ids, 0.0)
        feedback = (subs / "feedback" / "exercise.md").read_text()
        assert f"chapters/zh/{stem}.ipynb" in feedback and "请重读" in feedback, feedback


def test_chapter05_references_match_the_python_originals():
    """The staged reference solutions compute what the plain Python versions do."""
    import numpy as np

    import minijit as mj
    from minijit.grading.exercises import ch05_control_flow as ch05

    ref = ch05._reference_cond_loop()
    grow, years_until = mj.jit(ref["grow"]), mj.jit(ref["years_until"])
    for x, rate, years in [([1.0, 2.0], 1.5, 10), ([30.0, 40.0], 2.0, 3), ([5.0], 1.1, 0)]:
        x = np.asarray(x)
        np.testing.assert_allclose(grow(x, rate, years), ch05._grow_numpy(x, rate, years))
    for x, rate, target in [([1.0, 2.0], 1.5, 50.0), ([10.0], 2.0, 5.0)]:
        x = np.asarray(x)
        assert int(years_until(x, rate, target)) == ch05._years_until_numpy(x, rate, target)
