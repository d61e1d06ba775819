"""Command line: ``python -m minijit.grading {generate,grade,list} ...``.

    python -m minijit.grading generate            # solutions/ -> exercises/
    python -m minijit.grading generate --check    # exit 1 and a diff when they drifted
    python -m minijit.grading grade submissions/ --out gradebook.csv --feedback-dir feedback/
    python -m minijit.grading list                # exercises, points and case counts

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
    from .gradebook import GradingSetupError, grade
    from .registry import RegistryError, load_hidden_cases
    from .runner import Limits

    try:
        exercises = _exercises(args)
        hidden = load_hidden_cases(args.hidden_cases, exercises) if args.hidden_cases else None
        limits = Limits(cell_timeout=args.cell_timeout, timeout=args.timeout)
        rows = grade(args.submissions, exercises=exercises, out=args.out,
                     feedback_dir=args.feedback_dir, hidden_cases=hidden,
                     assignment=args.assignment, jobs=args.jobs, limits=limits,
                     progress=not args.no_progress)
    except (GradingSetupError, RegistryError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    statuses: dict[str, int] = {}
    for r in rows:
        statuses[r.status] = statuses.get(r.status, 0) + 1
    summary = ", ".join(f"{n} {s}" for s, n in sorted(statuses.items()))
    print(f"graded {len(rows)} notebooks ({summary}) -> {args.out}")
    return 0


def _list(args: argparse.Namespace) -> int:
    for ex in _exercises(args).values():
        print(f"{ex.id:28} {ex.points:>4g} pts  {len(ex.public)} public, {len(ex.hidden)} "
              f"hidden  chapters/{ex.chapter}.ipynb \u00a7 {ex.section}")
    return 0


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
                    help="seconds per submission, all included (default: %(default)s)")
    gr.add_argument("--assignment", nargs="+", metavar="NAME",
                    help="grade only these exercise ids or chapters (default: the exercises "
                         "the submissions mention)")
    gr.add_argument("--exercises", action="append", metavar="MODULE",
                    help="exercise module or .py file to use instead of the course's "
                         "(repeatable)")
    gr.add_argument("--no-progress", action="store_true", help="no progress bar")
    gr.set_defaults(func=_grade)

    ls = sub.add_parser("list", help="list the exercises")
    ls.add_argument("--exercises", action="append", metavar="MODULE")
    ls.set_defaults(func=_list)

    args = parser.parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
