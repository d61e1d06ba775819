"""Command line: ``python -m minijit.grading {generate,grade,list,release} ...``.

    python -m minijit.grading generate            # solutions/ -> exercises/
    python -m minijit.grading generate --check    # exit 1 and a diff when they drifted
    python -m minijit.grading grade submissions/ --out gradebook.csv --feedback-dir feedback/
    python -m minijit.grading list                # exercises, points, case counts, and
                                                  # which exercise writes which build piece
    python -m minijit.grading release OUT_DIR     # what learners get, without references

Heavy imports (nbformat, nbclient, the exercises and through them the minijit core) happen
inside the subcommand that needs them, so ``--help`` and ``generate`` stay independent of
the core.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path


def _generate(args: argparse.Namespace) -> int:
    from .notebook import AuthoringError, generate

    try:
        drift = generate(Path(args.solutions), Path(args.exercises), check=args.check)
    except AuthoringError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if args.check:
        if not drift:
            print(f"{args.exercises} is in sync with {args.solutions}")
            return 0
        print(f"{args.exercises} has drifted from {args.solutions}; run "
              "`python -m minijit.grading generate` and commit the result:", file=sys.stderr)
        for d in drift:
            print(f"  {d.kind}: {d.name}", file=sys.stderr)
            if d.diff:
                print("    " + d.diff.replace("\n", "\n    "), file=sys.stderr)
        return 1
    for d in drift:
        print(f"{d.kind}: {d.name}")
    print(f"wrote {args.exercises} from {args.solutions}")
    return 0


def _exercises(args: argparse.Namespace):
    from .registry import COURSE_MODULES, env_modules, load_exercises

    modules = list(args.exercises or (COURSE_MODULES + env_modules()))
    return load_exercises(modules)


def _grade(args: argparse.Namespace) -> int:
    from .batch import grade
    from .gradebook import read_gradebook
    from .registry import RegistryError, load_hidden_cases
    from .runner import Limits
    from .sandbox import GiB, Sandbox
    from .scoring import GradingSetupError

    try:
        exercises = _exercises(args)
        hidden = load_hidden_cases(args.hidden_cases, exercises) if args.hidden_cases else None
        limits = Limits(cell_timeout=args.cell_timeout, timeout=args.timeout)
        rows = grade(args.submissions, exercises=exercises, out=args.out,
                     feedback_dir=args.feedback_dir, hidden_cases=hidden,
                     assignment=args.assignment, jobs=args.jobs, limits=limits,
                     progress=not args.no_progress, resume=args.resume,
                     sandbox=not args.no_sandbox and (
                         Sandbox(memory=int(args.memory * GiB)) if args.memory else Sandbox()))
    except (GradingSetupError, RegistryError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt as exc:  # Ctrl-C, or SIGTERM (GradingInterrupted)
        print(f"interrupted: {args.out} holds every row finished so far, the others are "
              "not_graded; run the same command with --resume to grade only those",
              file=sys.stderr)
        return 128 + getattr(exc, "signum", 2)
    statuses: dict[str, int] = {}
    for r in rows:
        statuses[r.status] = statuses.get(r.status, 0) + 1
    summary = ", ".join(f"{n} {s}" for s, n in sorted(statuses.items()))
    found = read_gradebook(args.out)
    kept = len(found[1]) - len(rows) if found and args.resume else 0
    also = f", {kept} kept from the earlier run" if kept > 0 else ""
    print(f"graded {len(rows)} notebooks{f' ({summary})' if summary else ''}{also} -> "
          f"{args.out}")
    return 0


def _list(args: argparse.Namespace) -> int:
    from .build_pieces import BUILD_PIECES

    exercises = _exercises(args)
    for ex in exercises.values():
        builds = f"  [builds {BUILD_PIECES[ex.id][0]}]" if ex.id in BUILD_PIECES else ""
        print(f"{ex.id:28} {ex.points:>4g} pts  {len(ex.public)} public, {len(ex.hidden)} "
              f"hidden  chapters/{ex.chapter}.ipynb \u00a7 {ex.section}{builds}")
    built = {ex_id: p for ex_id, p in BUILD_PIECES.items() if ex_id in exercises}
    if built:
        print("\nBuild pieces: the exercise's cell defines the function; once it passes "
              "check(), build.use (or use_mine) makes minijit run it as that piece.")
        print(f"  {'piece':20} {'exercise':28} function")
        for ex_id, (piece, function) in built.items():
            print(f"  {piece:20} {ex_id:28} {function}")
    return 0


def _release(args: argparse.Namespace) -> int:
    from .release import ReleaseError, write_release

    try:
        warnings = write_release(args.out_dir, force=args.force)
    except ReleaseError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    for w in warnings:
        print(f"warning: {w}", file=sys.stderr)
    print(f"wrote the student release to {args.out_dir}; learners run `python3 course.py lab` "
          "there")
    return 0


RELEASE_HELP = """\
Write what learners get into OUT_DIR, from the instructor's copy this minijit was imported
from: chapters/, exercises/ (generated afresh from solutions/), README.md (without the
instructor's guide), course.py, pyproject.toml, environment.yml, and minijit/ with
minijit/grading/exercises/ rewritten: each exercise's probes, hints and public cases, each
public case with its expected value stored as a literal, computed now from the reference
solution. check() in a learner's notebook compares with those stored values. Left out:
solutions/, tests/, benchmarks/, the reference solutions, the hidden cases, __pycache__.
Grade with the full course (`grade`), which adds the hidden cases.
"""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m minijit.grading",
                                     description="Autograding for the minijit course.")
    sub = parser.add_subparsers(dest="command", required=True)

    gen = sub.add_parser("generate", help="regenerate exercises/ from solutions/")
    gen.add_argument("--solutions", default="solutions", help="default: %(default)s")
    gen.add_argument("--exercises", default="exercises", help="default: %(default)s")
    gen.add_argument("--check", action="store_true",
                     help="write nothing; exit 1 and show a diff if exercises/ drifted")
    gen.set_defaults(func=_generate)

    gr = sub.add_parser("grade", help="grade submitted notebooks into a gradebook CSV")
    gr.add_argument("submissions", nargs="+", help="notebooks, or folders of notebooks")
    gr.add_argument("--out", default="gradebook.csv", help="CSV path (default: %(default)s)")
    gr.add_argument("--feedback-dir", default="feedback",
                    help="one markdown file per student (default: %(default)s)")
    gr.add_argument("--hidden-cases", metavar="DIR",
                    help="folder of *.py files defining HIDDEN_CASES (private to you)")
    gr.add_argument("--jobs", type=int, default=os.cpu_count(),
                    help="kernels in parallel (default: the number of cores, %(default)s)")
    gr.add_argument("--cell-timeout", type=float, default=30.0,
                    help="seconds per cell and per exercise's tests (default: %(default)s)")
    gr.add_argument("--timeout", type=float, default=300.0,
                    help="seconds per submission, all included; a worker still busy 20 s "
                         "later is killed (default: %(default)s)")
    gr.add_argument("--assignment", nargs="+", metavar="NAME",
                    help="grade only these exercise ids or chapters (default: the exercises "
                         "whose EXERCISE headers and check cells the submissions hold, which "
                         "must be of one chapter)")
    gr.add_argument("--exercises", action="append", metavar="MODULE",
                    help="exercise module or .py file to use instead of the course's "
                         "(repeatable)")
    gr.add_argument("--resume", action="store_true",
                    help="keep the rows already in --out (matched on the student column) "
                         "and grade only the other submissions")
    gr.add_argument("--no-progress", action="store_true", help="no progress bar")
    gr.add_argument("--memory", type=float, metavar="GIB",
                    help="address space each kernel's sandbox may use, in GiB (default: 4, "
                         "more on machines with over 64 cores)")
    gr.add_argument("--no-sandbox", action="store_true",
                    help="run the kernels as you, outside bubblewrap: a notebook can then "
                         "read your files and environment, harm other kernels and the "
                         "machine (default: each kernel in its own sandbox)")
    gr.set_defaults(func=_grade)

    ls = sub.add_parser("list", help="list the exercises")
    ls.add_argument("--exercises", action="append", metavar="MODULE")
    ls.set_defaults(func=_list)

    rel = sub.add_parser("release", help="write the student release (no reference solutions)",
                         description=RELEASE_HELP,
                         formatter_class=argparse.RawDescriptionHelpFormatter)
    rel.add_argument("out_dir", metavar="OUT_DIR", help="the folder to write (empty or new)")
    rel.add_argument("--force", action="store_true",
                     help="replace the contents of a non-empty OUT_DIR")
    rel.set_defaults(func=_release)

    args = parser.parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
