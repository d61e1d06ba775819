"""`minijit.course.use_mine`: the learner's pieces, read from their exercise notebooks, switched
in at the top of a chapter, and minijit's own, with the reason, for every piece that is not
ready; whatever the notebooks hold, no exception reaches the chapter.

The course trees are temporary copies: `chapters/`, and as `exercises/` either the solution
notebooks (every piece written) or the repository's untouched exercises.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

import minijit as mj
import minijit.codegen.kernels  # noqa: F401 - registers loop_nest, as use_mine does
from minijit import build
from minijit.course import mine
from minijit.course.mine import WRITTEN_BY, YOURS, minijits_own, use_mine

pytestmark = pytest.mark.usefixtures("minijits_own_pieces")

REPO = Path(__file__).resolve().parent.parent
CAPSTONE_TABLE = "9b1c0c04"  # the id of chapter 10's cell that prints its last table


def course_tree(tmp_path: Path, exercises: str = "solutions") -> Path:
    """A course folder in `tmp_path`: the repository's chapters, and as its `exercises/` the
    repository's `exercises` (untouched) or `solutions` folder."""
    root = tmp_path / "course"
    shutil.copytree(REPO / "chapters", root / "chapters")
    shutil.copytree(REPO / exercises, root / "exercises")
    return root


def edit_cell(notebook: Path, exercise_id: str, edit) -> None:
    """Replace the source of `exercise_id`'s cell in `notebook` by `edit(source)`."""
    nb = json.loads(notebook.read_text(encoding="utf-8"))
    for cell in nb["cells"]:
        source = "".join(cell["source"])
        if cell["cell_type"] == "code" and source.startswith(f"# EXERCISE {exercise_id}"):
            cell["source"] = edit(source)
            break
    else:
        raise AssertionError(f"no cell of {exercise_id} in {notebook}")
    notebook.write_text(json.dumps(nb, indent=1), encoding="utf-8")


def notebook_of(root: Path, piece: str) -> Path:
    return root / "exercises" / f"{build.PIECES[piece].chapter}.ipynb"


def run_from_chapters(root: Path, monkeypatch, capsys) -> tuple[dict, str]:
    monkeypatch.chdir(root / "chapters")
    statuses = use_mine()
    return statuses, capsys.readouterr().out


def test_the_solutions_are_every_piece(tmp_path, monkeypatch, capsys):
    root = course_tree(tmp_path)
    backend = mj.config.default_backend
    statuses, printed = run_from_chapters(root, monkeypatch, capsys)
    assert set(statuses) == set(mine.pieces()) == set(WRITTEN_BY) & set(build.PIECES)
    assert {"eval_jaxpr", "pp_jaxpr", "cache_key", "closure_convert", "dce", "fusion_groups",
            "loop_nest"} <= set(statuses)
    assert all(status == YOURS for status in statuses.values()), statuses
    using = build.using()
    assert set(using) == set(statuses)
    for name, fn in using.items():
        assert fn.__name__ == WRITTEN_BY[name].function
        assert fn.__code__.co_filename.startswith(str(notebook_of(root, name).resolve()))
    # the exercise notebooks' import cell sets the interpreter as default backend: put back
    assert mj.config.default_backend == backend
    assert "../exercises" in printed
    for name in statuses:
        assert any(line.split()[:1] == [name] and line.rstrip().endswith(YOURS)
                   for line in printed.splitlines()), printed


def test_untouched_exercises_switch_nothing(tmp_path, monkeypatch, capsys):
    root = course_tree(tmp_path, "exercises")
    statuses, printed = run_from_chapters(root, monkeypatch, capsys)
    assert build.using() == {}
    assert statuses and all(s == "minijit's own (not written yet)" for s in statuses.values())
    assert printed.count("not written yet") == len(statuses)


def test_each_broken_notebook_leaves_minijits_own_with_its_reason(tmp_path, monkeypatch,
                                                                  capsys):
    root = course_tree(tmp_path)
    edit_cell(notebook_of(root, "eval_jaxpr"), "ex03_eval_jaxpr",
              lambda s: s.replace("def eval_jaxpr(", "def eval_jaxpr(:", 1))
    edit_cell(notebook_of(root, "dce"), "ex07_dce",  # right on the small example only
              lambda s: s + "\n\n_right = dce_jaxpr\n\n\ndef dce_jaxpr(jaxpr):\n"
              "    return _right(jaxpr) if len(jaxpr.eqns) <= 4 else jaxpr\n")
    edit_cell(notebook_of(root, "fusion_groups"), "ex08_fusion_groups",
              lambda s: s.replace("def fusion_groups(", "def my_groups(", 1))
    edit_cell(notebook_of(root, "cache_key"), "ex04_cache_key",
              lambda s: s + "\n\nraise RuntimeError('half-finished')\n")
    edit_cell(notebook_of(root, "pp_jaxpr"), "ex03_pp_jaxpr",  # runs, but prints nothing
              lambda s: s + "\n\ndef pp_jaxpr(jaxpr):\n    return ''\n")
    edit_cell(notebook_of(root, "loop_nest"), "ex09_loop_nest",  # noise, and a working piece
              lambda s: s.replace("\n", "\nprint('noise from the cell')\n", 1))
    notebook_of(root, "closure_convert").unlink()
    statuses, printed = run_from_chapters(root, monkeypatch, capsys)

    expected = {
        "eval_jaxpr": "syntax error in the cell of ex03_eval_jaxpr, line 2",
        "dce": "fails public case",
        "fusion_groups": "its cell defines no fusion_groups",
        "cache_key": "the cell of ex04_cache_key raised RuntimeError: half-finished",
        "closure_convert": "no exercises/05_control_flow.ipynb",
        "pp_jaxpr": "fails its small example",
    }
    for name, why in expected.items():
        assert statuses[name].startswith("minijit's own (") and why in statuses[name], \
            (name, statuses[name])
        assert build.is_reference(name)
    assert statuses["loop_nest"] == statuses["process_primitive"] == YOURS  # left as they are
    assert set(build.using()) == {n for n, s in statuses.items() if s == YOURS}  # the others
    assert {"loop_nest", "process_primitive"} <= set(build.using())
    assert "noise from the cell" not in printed
    assert len(printed.strip().splitlines()) == 2 + len(statuses)  # a title, a header, a row


def test_a_piece_that_breaks_later_goes_back_to_minijits_own(tmp_path, monkeypatch, capsys):
    root = course_tree(tmp_path)
    run_from_chapters(root, monkeypatch, capsys)
    assert "dce" in build.using()
    edit_cell(notebook_of(root, "dce"), "ex07_dce", lambda s: s + "\n)\n")
    statuses, _ = run_from_chapters(root, monkeypatch, capsys)
    assert "syntax error" in statuses["dce"] and build.is_reference("dce")


def test_magics_and_a_change_of_folder_are_harmless(tmp_path, monkeypatch, capsys):
    root = course_tree(tmp_path)
    notebook = notebook_of(root, "eval_jaxpr")
    nb = json.loads(notebook.read_text(encoding="utf-8"))
    setup = next(c for c in nb["cells"] if c["cell_type"] == "code")
    setup["source"] = "%matplotlib inline\nimport os\nos.chdir('/')\n" + "".join(setup["source"])
    notebook.write_text(json.dumps(nb, indent=1), encoding="utf-8")
    edit_cell(notebook, "ex03_eval_jaxpr",
              lambda s: s.replace("\n", "\n!echo shell line\n", 1))
    statuses, _ = run_from_chapters(root, monkeypatch, capsys)
    assert statuses["eval_jaxpr"] == statuses["pp_jaxpr"] == YOURS
    assert Path.cwd() == (root / "chapters").resolve()


def test_a_stub_is_not_written_yet(tmp_path, monkeypatch, capsys):
    root = course_tree(tmp_path)
    stub = '    raise NotImplementedError("ex09_loop_nest: replace this line")\n'
    edit_cell(notebook_of(root, "loop_nest"), "ex09_loop_nest",
              lambda s: s.split("def loop_nest(")[0] + "def loop_nest(shape, operands):\n"
              + stub)
    statuses, _ = run_from_chapters(root, monkeypatch, capsys)
    assert statuses["loop_nest"] == "minijit's own (not written yet)"


def test_off_while_grading_reads_nothing(tmp_path, monkeypatch, capsys):
    root = course_tree(tmp_path)
    monkeypatch.setenv("MINIJIT_GRADING", "1")

    def no_reading(*_args):
        raise AssertionError("use_mine read a notebook while grading")

    monkeypatch.setattr(mine, "_cells", no_reading)
    statuses, printed = run_from_chapters(root, monkeypatch, capsys)
    assert build.using() == {}
    assert statuses and all(s == "minijit's own (off while grading)" for s in statuses.values())
    assert printed.strip() == "use_mine(): off while grading; minijit runs its own pieces."


def test_no_course_folder_and_no_exception(tmp_path, monkeypatch, capsys):
    (tmp_path / "chapters").mkdir()  # chapters/ without exercises/ is not a course
    monkeypatch.chdir(tmp_path / "chapters")
    statuses = use_mine()
    assert build.using() == {}
    assert statuses and all(s == "minijit's own (no course folder)" for s in statuses.values())
    assert mine.course_root() is None
    assert capsys.readouterr().out.count("\n") == 1


def test_the_home_folder_is_never_the_course(tmp_path, monkeypatch):
    root = course_tree(tmp_path)
    (root / "chapters" / "deeper").mkdir()
    assert mine.course_root(root / "chapters" / "deeper") == root.resolve()
    monkeypatch.setenv("HOME", str(root))
    assert mine.course_root(root / "chapters") is None
    monkeypatch.setenv("HOME", str(root / "chapters"))
    assert mine.course_root(root / "chapters") is None


def test_a_failure_inside_use_mine_is_one_line(monkeypatch, capsys, tmp_path):
    def broken(*_args):
        raise RuntimeError("boom")

    monkeypatch.setattr(mine, "_switch_in", broken)
    assert use_mine(tmp_path) == {}
    assert capsys.readouterr().out.strip().startswith("use_mine(): failed (RuntimeError: boom)")


def test_minijits_own_switches_back_to_the_learners(tmp_path, monkeypatch, capsys):
    root = course_tree(tmp_path)
    run_from_chapters(root, monkeypatch, capsys)
    theirs = build.using()
    with minijits_own():
        assert build.using() == {}
    assert build.using() == theirs
    build.reset()
    generation = build.generation()
    with minijits_own():  # nothing is theirs: nothing switched, no cache emptied
        pass
    assert build.generation() == generation


# --------------------------------------------------------------------------- chapter 10


@pytest.mark.notebook
@pytest.mark.timeout(240)
def test_chapter_10_runs_the_learners_minijit(tmp_path):
    """Chapter 10 in a course whose exercises are the solutions: its last section's table
    says every piece is the learner's, and every program is correct with them and without."""
    from notebook_runner import run_notebook

    root = course_tree(tmp_path)
    run = run_notebook(root / "chapters" / "10_putting_it_together.ipynb",
                       siblings=("exercises",))
    assert run.ok, run.report()
    (cell,) = [c for c in run.executed.cells if c.get("id") == CAPSTONE_TABLE]
    printed = "".join(o.get("text", "") for o in cell.outputs if o.output_type == "stream")
    n = len(mine.pieces())
    assert f"pieces: all {n} are yours" in printed, printed
    lines = printed.splitlines()
    for program in ("GELU", "softmax", "Mandelbrot", "Newton"):
        (row,) = [line for line in lines if line.split()[:1] == [program]]
        assert row.split().count("yes") == 2 and "NO" not in row.split(), printed



# --------------------------------------------------------------------------- the helpers


def test_the_pipeline_fills_the_stages_where_pieces_run():
    from matplotlib.colors import to_hex

    from minijit.course import draw_pipeline

    stages = [WRITTEN_BY[name].stage for name in mine.pieces() if WRITTEN_BY[name].stage]
    assert {"trace", "dce", "fuse_elementwise", "codegen"} <= set(stages)

    def faces(fig):  # the fill of each box, by the first line of its text
        ax = fig.axes[0]
        boxes = [p for p in ax.patches if type(p).__name__ == "FancyBboxPatch"]
        out = {}
        for text in ax.texts:
            x, y = text.get_position()
            for box in boxes:
                if box.get_x() <= x <= box.get_x() + box.get_width() and \
                        box.get_y() <= y <= box.get_y() + box.get_height() and \
                        box.get_facecolor()[3] > 0:
                    out[text.get_text().split("\n")[0]] = to_hex(box.get_facecolor())
        return out

    plain, marked = faces(draw_pipeline()), faces(draw_pipeline(highlight=stages))
    filled = {stage for stage, face in marked.items() if face != plain[stage]}
    assert filled == set(stages)
