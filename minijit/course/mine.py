"""The learner's own pieces of minijit, switched in at the top of every chapter from 03 on.

A build-track switch (`minijit.build.use`) lasts for the kernel it was made in, and each
chapter is a notebook of its own. So chapters 03 to 10 start with

    from minijit.course import use_mine
    use_mine()

which reads the learner's exercise notebooks as last saved, takes from each the function an
exercise of the build track asks for, and switches it in, so the rest of the chapter runs on
the learner's code. For each piece in `WRITTEN_BY` that minijit has registered:

1. the notebook is the piece's chapter (`build.PIECES[name].chapter`) in the `exercises/`
   folder of the course: the nearest folder at or above the current directory (chapters run
   in `chapters/`) that holds both `exercises/` and `chapters/`, never the home folder itself
   or anything above it; in the Chinese course (`chapters/zh/`), its `exercises/zh/`;
2. its first code cell (the imports, by the exercise notebooks' layout) and the exercise's
   own cell (`# EXERCISE <id>` on its first line) run in a fresh namespace, not `__main__`,
   with their output captured; whatever they set in `minijit.config` or switched with
   `build.use` is put back, so the import cell's side effects (the interpreter as default
   backend, until chapter 09) never reach the chapter;
3. the function named in `WRITTEN_BY` must exist and pass the piece's selftest (the small
   example `build.use` runs) and the exercise's public cases, those `check()` runs: they take
   well under a second for all the pieces together (their expected values are computed once
   per process, or stored, in the course's release), and a piece that fails one of them would
   fail, or print wrong results, in the middle of a chapter;
4. then `build.use(name, fn)` switches it in.

Invariants:

- *The chapter always runs.* No exception from a learner's notebook, nor from this module,
  escapes `use_mine`: a piece that is missing, untouched (its stub raises
  `NotImplementedError`), broken or wrong leaves minijit's own, and the table says why in one
  line. A piece that fails now but was switched in by an earlier call goes back to minijit's
  own, so the table is true.
- *Off while grading.* Under the batch grader (`MINIJIT_GRADING=1`) nothing is read and
  nothing switched: a submission is graded on its own cells, never on the files next to it.
- *One table entry per piece.* Adding a piece to the build track is one line in `WRITTEN_BY`
  (its exercise, the function that exercise defines, and where it runs); a piece minijit has
  not registered (yet) is skipped.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import unicodedata
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from minijit import build
from minijit.config import _DEFAULTS, config
from minijit.grading.checking import GRADING_ENV
from minijit.grading.messages import language, tr, translate
from minijit.grading.notebook import exercise_header

YOURS = "yours"


@dataclass(frozen=True)
class Written:
    """Which exercise writes a piece: its id, the function its cell defines, and where the
    piece runs: the stage of `draw_pipeline`'s figure (None: outside that figure), in words."""

    exercise: str
    function: str
    stage: str | None
    where: str


WRITTEN_BY: dict[str, Written] = {
    "process_primitive": Written("ex02_process_primitive", "process_primitive", "trace",
                                 "tracing: every primitive applied to a tracer"),
    "bind": Written("ex02_bind", "bind", "trace",
                    "every primitive applied, eagerly or traced: the innermost trace gets it"),
    "eval_jaxpr": Written("ex03_eval_jaxpr", "eval_jaxpr", None,
                          "the interpreter backend and eager control flow"),
    "pp_jaxpr": Written("ex03_pp_jaxpr", "pp_jaxpr", "jaxpr", "printing every jaxpr"),
    "cache_key": Written("ex04_cache_key", "cache_key", None,
                         "the cache lookup of every jit call, before tracing"),
    "jit_call": Written("ex04_jit_call", "jit_call", None,
                        "every jit call: the lookup, and trace, compile, store on a miss"),
    "while_impl": Written("ex05_while_impl", "my_while_impl", None,
                          "eager while loops and while equations in the interpreter"),
    "closure_convert": Written("ex05_closure_convert", "closure_convert", "trace",
                               "staging the bodies of cond, while_loop, fori_loop and scan"),
    "stage_cond": Written("ex05_stage_cond", "stage_cond", "trace",
                          "staging every cond and switch"),
    "fold": Written("ex07_fold", "my_fold", "fold_constants",
                    "the fold_constants pass: literals through add, sub, mul, neg, exp"),
    "sub_self": Written("ex07_rule", "sub_self", "simplify",
                        "the simplify pass: its rule x - x -> 0 for integers"),
    "cse": Written("ex07_cse", "my_cse", "cse", "the cse pass"),
    "dce": Written("ex07_dce", "dce_jaxpr", "dce", "the dce pass"),
    "may_fuse": Written("ex08_may_fuse", "may_fuse", "fuse_elementwise",
                        "fuse_elementwise and fuse_siblings: which equations may fuse"),
    "fusion_groups": Written("ex08_fusion_groups", "fusion_groups", "fuse_elementwise",
                             "the fuse_elementwise pass: which equations form a kernel"),
    "loop_nest": Written("ex09_loop_nest", "loop_nest", "codegen",
                         "the loops of every kernel the Numba backend writes"),
}


class NotYours(Exception):
    """Why a piece stays minijit's own (the message is the table's one line)."""


def own(why: str) -> str:
    """The status of a piece that stays minijit's own."""
    return f"minijit's own ({why})"


def pieces() -> list[str]:
    """The pieces that `use_mine` looks for: those of `WRITTEN_BY` that minijit registered."""
    import minijit.codegen.kernels  # noqa: F401 - registers loop_nest (chapter 09's piece)

    return [name for name in WRITTEN_BY if name in build.PIECES]


def course_root(start: Path | None = None) -> Path | None:
    """The nearest folder at or above `start` (default: the current directory) holding both
    `exercises/` and `chapters/`; never the home folder or a folder above it."""
    here = Path.cwd() if start is None else Path(start)
    here = here.resolve()
    try:
        home = Path.home().resolve()
    except (KeyError, RuntimeError):  # no home folder known: nothing to stay out of
        home = None
    for folder in (here, *here.parents):
        if home is not None and (folder == home or folder in home.parents):
            return None
        if (folder / "exercises").is_dir() and (folder / "chapters").is_dir():
            return folder
    return None


def use_mine(exercises: str | os.PathLike | None = None) -> dict[str, str]:
    """Switch in the learner's pieces from the exercise notebooks in `exercises` (default:
    the course's `exercises/` folder, found from the current directory), print a table of
    what minijit runs, and return piece -> `"yours"` or `"minijit's own (why)"`.

    See the module docstring: never raises, does nothing while grading."""
    try:
        names = pieces()
        if os.environ.get(GRADING_ENV) == "1":
            print(tr("use_mine(): off while grading; minijit runs its own pieces."))
            return {name: own("off while grading") for name in names}
        folder = Path(exercises).resolve() if exercises is not None else exercises_folder()
        if folder is None:
            print(tr("use_mine(): no course folder (one with exercises/ and chapters/) at or "
                     "above this one; minijit runs its own pieces."))
            return {name: own("no course folder") for name in names}
        statuses = {name: _switch_in(name, folder) for name in names}
        print(table(statuses, tr("your exercise notebooks in {folder}, as last saved",
                                 folder=_shown(folder))))
        return statuses
    except Exception as e:  # noqa: BLE001 - a chapter must run whatever happens here
        print(tr("use_mine(): failed ({error}); minijit runs its own pieces where it has not "
                 "switched yours in.", error=f"{type(e).__name__}: {_one_line(e)}"))
        return {}


def table(statuses: dict[str, str], where: str) -> str:
    """The text `use_mine` prints: one line per piece, with the exercise that writes it (in
    the course's language: the statuses are translated here, never in what `use_mine`
    returns; columns are padded by display width, a Chinese character taking two)."""
    rows = [(tr("piece"), tr("chapter / exercise"), tr("minijit runs"))]
    for name, status in statuses.items():
        rows.append((name, f"{build.PIECES[name].chapter} / {WRITTEN_BY[name].exercise}",
                     translate(status)))
    widths = [max(_width(row[k]) for row in rows) for k in range(2)]
    lines = [tr("minijit's build-track pieces, from {where}:", where=where)]
    lines += [f"  {_pad(a, widths[0])}  {_pad(b, widths[1])}  {c}" for a, b, c in rows]
    return "\n".join(lines)


def _width(text: str) -> int:
    """Columns `text` takes in a terminal or a notebook's output: two for a wide character."""
    return sum(2 if unicodedata.east_asian_width(ch) in "WF" else 1 for ch in text)


def _pad(text: str, width: int) -> str:
    return text + " " * (width - _width(text))


@contextlib.contextmanager
def minijits_own() -> Iterator[None]:
    """minijit's own pieces inside the block, the same pieces as before after it (even on an
    error). Nothing is switched when no piece is the learner's: a switch empties every jit
    cache."""
    saved = build.using()
    if not saved:
        yield
        return
    build.reset(*saved)
    try:
        yield
    finally:
        for name, fn in saved.items():
            build.use(name, fn, verify=False)  # verified when it was first switched in


# --------------------------------------------------------------------------- one piece


def exercises_folder() -> Path | None:
    """The course's exercise notebooks: ``exercises/``, or ``exercises/zh/`` in the Chinese
    course (a chapter of ``chapters/zh/`` reads the learner's Chinese exercises)."""
    root = course_root()
    if root is None:
        return None
    translated = root / "exercises" / language()
    return translated if language() != "en" and translated.is_dir() else root / "exercises"


def _shown(folder: Path) -> str:
    """`folder` relative to the current directory where that is shorter (`../exercises`)."""
    try:
        relative = os.path.relpath(folder)
    except ValueError:  # another drive, on Windows
        return str(folder)
    return relative if len(relative) < len(str(folder)) else str(folder)


def _switch_in(name: str, folder: Path) -> str:
    """Switch in the learner's `name` from the notebook in `folder`: its status."""
    try:
        return _use(name, _learners_function(name, folder), folder)
    except Exception as e:  # noqa: BLE001 - anything a learner's notebook does is reported
        why = why_not_yours(e)
    if not build.is_reference(name):  # switched in by an earlier call, broken now
        build.reset(name)
    return own(why)


def _use(name: str, fn, folder: Path) -> str:
    """`build.use(name, fn)`, which runs the selftest once more; its message, if it refuses,
    is captured (the table gives the reason)."""
    said = io.StringIO()
    origin = (f"from {_shown(folder / (build.PIECES[name].chapter + '.ipynb'))}, exercise "
              f"{WRITTEN_BY[name].exercise}, switched in by use_mine()")
    with contextlib.redirect_stderr(said):
        build.use(name, fn, origin=origin)
    if build.using().get(name) is not fn:
        raise NotYours(f"build.use refused it: {_one_line(said.getvalue()) or 'no reason'}")
    return YOURS


def _learners_function(name: str, folder: Path):
    """The learner's function for piece `name`, checked by its selftest and public cases."""
    written = WRITTEN_BY[name]
    path = folder / f"{build.PIECES[name].chapter}.ipynb"
    setup, cell = _cells(path, written.exercise)
    ns = _run_cells(path, setup, cell, written.exercise)
    fn = ns.get(written.function)
    if fn is None:
        raise NotYours(f"its cell defines no {written.function}")
    if not callable(fn):
        raise NotYours(f"{written.function} is a {type(fn).__name__}, not a function")
    _selftest(name, fn)
    _public_cases(written.exercise, ns)
    return fn


def _cells(path: Path, exercise_id: str) -> tuple[str, str]:
    """The notebook's first code cell (its imports) and the cell of `exercise_id`."""
    if not path.is_file():
        raise NotYours(f"no {path.parent.name}/{path.name}")
    try:
        nb = json.loads(path.read_text(encoding="utf-8"))
        code = [_source(c) for c in nb["cells"] if c.get("cell_type") == "code"]
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise NotYours(f"cannot read {path.name} ({type(e).__name__})") from None
    found = [s for s in code if (exercise_header(s) or ("",))[0] == exercise_id]
    if not code or not found:
        raise NotYours(f"no cell '# EXERCISE {exercise_id}' in {path.name}")
    return code[0], found[0]


def _source(cell) -> str:
    source = cell.get("source", "")
    return "".join(source) if isinstance(source, list) else source


# IPython's `%magic` and `!shell` lines are not Python; they set up the notebook (or time a
# cell: `%%time`), they never define the piece, so they become `pass` at their indentation.
_MAGIC = re.compile(r"^(\s*)([%!].*)$")


def _python(source: str) -> str:
    return "\n".join(_MAGIC.sub(r"\1pass  # \2", line) for line in source.split("\n"))


def _run_cells(path: Path, setup: str, cell: str, exercise_id: str) -> dict:
    """Run the import cell, then the exercise's, in a fresh namespace: their output is
    captured, and minijit's config, its build pieces and the current directory are put back
    as they were."""
    ns: dict = {"__name__": f"minijit_course_mine_{exercise_id}", "__file__": str(path)}
    cwd = os.getcwd()
    saved_config = {option: getattr(config, option) for option in _DEFAULTS}
    saved_pieces = build.using()
    out = io.StringIO()
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
            for what, source in (("the notebook's first cell", setup),
                                 (f"the cell of {exercise_id}", cell)):
                try:
                    code = compile(_python(source), f"{path} ({what})", "exec")
                except SyntaxError as e:
                    raise NotYours(f"syntax error in {what}, line {e.lineno}: {e.msg}") \
                        from None
                try:
                    exec(code, ns)
                except Exception as e:  # noqa: BLE001 - reported in the table
                    if isinstance(e, NotImplementedError):
                        raise NotYours("not written yet") from None
                    raise NotYours(f"{what} raised {type(e).__name__}: {_one_line(e)}") \
                        from None
                except SystemExit:
                    raise NotYours(f"{what} called exit()") from None
    finally:
        if os.getcwd() != cwd:
            os.chdir(cwd)
        for option, value in saved_config.items():
            if getattr(config, option) != value:
                config.update(option, value)
        now = build.using()
        for n in build.PIECES:
            if now.get(n) is not saved_pieces.get(n):  # the cells switched it: switch back
                if n in saved_pieces:
                    build.use(n, saved_pieces[n], verify=False)
                else:
                    build.reset(n)
    return ns


def _selftest(name: str, fn) -> None:
    """The piece's own small example (what `build.use` runs), with a stub told apart."""
    test = build.PIECES[name].selftest
    if test is None:
        return
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            problem = test(fn)
    except NotImplementedError:
        raise NotYours("not written yet") from None
    except Exception as e:  # noqa: BLE001 - reported in the table
        problem = f"raised {type(e).__name__}: {_one_line(e)}"
    if problem:
        raise NotYours(f"fails its small example: {_one_line(problem)}")


def _public_cases(exercise_id: str, ns: dict) -> None:
    """The exercise's public cases, as `check()` runs them (none: an exercise not graded)."""
    from minijit.grading.checking import run_public_cases
    from minijit.grading.registry import default_exercises

    exercise = default_exercises().get(exercise_id)
    if exercise is None:
        return
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        report = run_public_cases(exercise, ns)
    if not report.attempted:
        raise NotYours("not written yet")
    failed = [row.name for row in report.rows if not row.passed]
    if failed:
        more = f" and {len(failed) - 1} more" if len(failed) > 1 else ""
        raise NotYours(f"fails public case {failed[0]!r}{more}; check({exercise_id!r}) "
                       "shows why")


def why_not_yours(e: Exception) -> str:
    """Why reading the learner's function failed, in one line: a `NotYours` says it in its
    own words; any other error is named by its class."""
    return str(e) if isinstance(e, NotYours) else f"{type(e).__name__}: {_one_line(e)}"


def _one_line(e: object, limit: int = 100) -> str:
    """The first line of a message, shortened: the table gives one line per piece."""
    text = str(e).strip().split("\n", 1)[0]
    return text if len(text) <= limit else text[: limit - 3] + "..."
