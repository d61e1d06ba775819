"""Command line: ``python -m minijit.grading {generate,grade,list,release,stats,export} ...``.

    python -m minijit.grading generate            # solutions/ -> exercises/
    python -m minijit.grading generate --check    # exit 1 and a diff when they drifted
    python -m minijit.grading grade submissions/ --out gradebook.csv --feedback-dir feedback/
    python -m minijit.grading list                # exercises, points, case counts, and
                                                  # which exercise writes which build piece
    python -m minijit.grading release OUT_DIR     # what learners get, without references
    python -m minijit.grading merge shard1.csv shard2.csv --out gradebook.csv  # --shard's
    python -m minijit.grading stats gradebook.csv --out-dir stats/   # class statistics
    python -m minijit.grading export gradebook.csv --roster roster.csv --format canvas \\
        --out canvas.csv                          # what an LMS imports

Heavy imports (nbformat, nbclient, the exercises and through them the minijit core) happen
inside the subcommand that needs them, so ``--help`` and ``generate`` stay independent of
the core.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from minijit.threads import usable_cpus


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
    from .adjust import late_policy
    from .batch import grade
    from .gradebook import read_gradebook
    from .registry import RegistryError, load_hidden_cases
    from .runner import Limits
    from .sandbox import GiB, Sandbox
    from .scoring import GradingSetupError
    from .shards import parse_shard

    if args.lang:  # the feedback's and the gradebook hints' language; scores never change
        os.environ["MINIJIT_LANG"] = args.lang
    try:
        exercises = _exercises(args)
        hidden = load_hidden_cases(args.hidden_cases, exercises) if args.hidden_cases else None
        limits = Limits(cell_timeout=args.cell_timeout, timeout=args.timeout)
        late_options = (args.deadline, args.submission_times, args.late_penalty)
        if any(o is not None for o in late_options) and None in late_options:
            raise GradingSetupError("a late policy needs all three of --deadline, "
                                    "--submission-times and --late-penalty")
        late = late_policy(args.deadline, args.submission_times, args.late_penalty,
                           args.late_cap) if args.deadline is not None else None
        rows = grade(args.submissions, exercises=exercises, out=args.out,
                     feedback_dir=args.feedback_dir, hidden_cases=hidden,
                     assignment=args.assignment, jobs=args.jobs, limits=limits,
                     progress=not args.no_progress, resume=args.resume,
                     regrade=args.regrade, overrides=args.overrides, late=late,
                     shard=parse_shard(args.shard) if args.shard else None,
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
    kept = len(found[1]) - len(rows) if found else 0
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


def _stats(args: argparse.Namespace) -> int:
    from .registry import RegistryError, load_hidden_cases
    from .stats import ReportError, class_stats, format_text, read_book, write_outputs

    try:
        book = read_book(args.gradebook)
        exercises = _exercises(args)
        hidden = load_hidden_cases(args.hidden_cases, exercises) if args.hidden_cases else None
        stats = class_stats(book, exercises, hidden)
        written = write_outputs(stats, args.out_dir) if args.out_dir else []
    except (ReportError, RegistryError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(format_text(stats), end="")
    if written:
        print(f"wrote {len(written)} files to {args.out_dir}: stats.md, cases.csv and "
              f"{len(written) - 2} histograms")
    return 0


def _export(args: argparse.Namespace) -> int:
    from .export import build_export, read_roster, write_export
    from .stats import ReportError, read_book

    inputs = {Path(args.gradebook).resolve(), Path(args.roster).resolve()}
    if Path(args.out).resolve() in inputs:
        print(f"error: --out {args.out} is an input; write the export to another file",
              file=sys.stderr)
        return 2
    try:
        book = read_book(args.gradebook)
        export = build_export(book, read_roster(args.roster), args.format,
                              args.assignment_name or Path(args.gradebook).stem,
                              points_possible=args.points_possible,
                              zero_missing=args.zero_missing)
        write_export(export, args.out)
    except (ReportError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    for w in export.warnings():
        print(f"warning: {w}", file=sys.stderr)
    rows = len(export.records) - 1 - (args.points_possible and args.format == "canvas")
    print(f"wrote {rows} students' grades for {args.format} to {args.out}"
          + ("" if export.complete else " (incomplete: see the warnings)"))
    return 0 if export.complete else 1


def _merge(args: argparse.Namespace) -> int:
    from .scoring import GradingSetupError
    from .shards import merge_gradebooks

    try:
        n, backup = merge_gradebooks(args.gradebooks, args.out)
    except (GradingSetupError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if backup is not None:
        print(f"note: the gradebook {args.out} was there before: saved as {backup}",
              file=sys.stderr)
    print(f"merged {len(args.gradebooks)} gradebooks, {n} students -> {args.out}")
    return 0


def _release(args: argparse.Namespace) -> int:
    from .release import ReleaseError, write_release

    try:
        warnings = write_release(args.out_dir, force=args.force, lang=args.lang)
    except ReleaseError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    for w in warnings:
        print(f"warning: {w}", file=sys.stderr)
    lab = "python3 course.py lab" + (" --lang zh" if args.lang == "zh" else "")
    print(f"wrote the student release to {args.out_dir}; learners run `{lab}` there")
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
    gr.add_argument("--out", default="gradebook.csv",
                    help="CSV path; the rows of students not graded in this run are kept, "
                         "and a file there is backed up first as OUT.~N~ (default: "
                         "%(default)s)")
    gr.add_argument("--feedback-dir", default="feedback",
                    help="one markdown file and one HTML page per student (default: %(default)s)")
    gr.add_argument("--hidden-cases", metavar="DIR",
                    help="folder of *.py files defining HIDDEN_CASES (private to you)")
    gr.add_argument("--jobs", type=int, default=usable_cpus(),
                    help="kernels in parallel (default: the CPUs this process may use, "
                         "its cgroup's quota included: %(default)s)")
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
    again = gr.add_mutually_exclusive_group()
    again.add_argument("--resume", action="store_true",
                       help="grade only the submissions whose row in --out is missing, "
                            "not_graded, of another notebook (its sha256 changed) or of other "
                            "overrides or late penalty; keep the other rows")
    again.add_argument("--regrade", nargs="+", metavar="NAME",
                       help="grade only these students (names as in the student column, "
                            "among the SUBMISSIONS given); keep every other row of --out")
    gr.add_argument("--shard", metavar="K/N",
                    help="grade only shard K of N (1 <= K <= N, chosen by a hash of the "
                         "student name), into its own --out; then `merge` the shards")
    gr.add_argument("--overrides", metavar="CSV",
                    help="points set by hand: columns student,exercise,points,comment; "
                         "applied to every row on every run (give it every time)")
    gr.add_argument("--deadline", metavar="TIME",
                    help="the deadline, ISO 8601 (2026-03-01T23:59:00+01:00), for the late "
                         "penalty")
    gr.add_argument("--submission-times", metavar="CSV",
                    help="columns student,submitted (ISO 8601); also Canvas's submitted_at "
                         "and Moodle's grading worksheet")
    gr.add_argument("--late-penalty", type=float, metavar="FRACTION",
                    help="taken off per day late (a day begun counts), as a fraction of "
                         "max_total: 0.1 is 10%% a day")
    gr.add_argument("--late-cap", type=float, default=1.0, metavar="FRACTION",
                    help="the most the late penalty takes, as a fraction of max_total "
                         "(default: %(default)s, everything)")
    gr.add_argument("--no-progress", action="store_true", help="no progress bar")
    gr.add_argument("--lang", choices=("en", "zh"),
                    help="the language of the feedback and of the gradebook's hints (the "
                         "release's language; default: English)")
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

    st = sub.add_parser("stats", help="class statistics of a gradebook: exercises, cases",
                        description="Per exercise: rows graded, mean, median, zeros, full "
                        "marks; per case: pass rates, public and hidden apart, by name; the "
                        "hidden cases the class fails most. not_graded rows are left out.")
    st.add_argument("gradebook", help="the gradebook CSV")
    st.add_argument("--out-dir", metavar="DIR",
                    help="also write stats.md, cases.csv and one histogram PNG per exercise "
                         "and for the total")
    st.add_argument("--hidden-cases", metavar="DIR",
                    help="the private hidden-cases folder the book was graded with (names "
                         "its cases)")
    st.add_argument("--exercises", action="append", metavar="MODULE",
                    help="exercise module or .py file the book was graded with "
                         "(repeatable; default: the course's)")
    st.set_defaults(func=_stats)

    ex = sub.add_parser("export", help="write a gradebook as an LMS imports it (roster)",
                        description="Write the grades of a gradebook for Canvas, Moodle, "
                        "Gradescope or a spreadsheet, matching students through a roster CSV "
                        "(columns student,id,name and optionally email,section,login). "
                        "Students missing on either side are listed on stderr. Exit status: "
                        "0, 1 when some grade of the gradebook is not in the file, 2 for an "
                        "error (nothing written).")
    ex.add_argument("gradebook", help="the gradebook CSV")
    ex.add_argument("--roster", required=True, metavar="CSV",
                    help="columns student,id,name[,email,section,login]")
    ex.add_argument("--format", required=True, choices=("canvas", "moodle", "gradescope",
                                                        "csv"))
    ex.add_argument("--out", required=True, metavar="FILE", help="the CSV to write")
    ex.add_argument("--assignment-name", metavar="NAME",
                    help="the grade column's title (Canvas: 'Title (id)' updates that "
                         "assignment; default: the gradebook's file name without .csv)")
    ex.add_argument("--points-possible", action="store_true",
                    help="canvas only: add the Points Possible row (max_total)")
    ex.add_argument("--zero-missing", action="store_true",
                    help="give 0 to roster students without a submission (default: no row)")
    ex.set_defaults(func=_export)

    mg = sub.add_parser("merge", help="combine gradebooks graded with --shard into one",
                        description="Write the rows of GRADEBOOKS (same exercise columns) "
                        "into --out, sorted by student; a student in two of them is an "
                        "error unless the rows are equal. A file at --out is backed up "
                        "first (--out.~N~).")
    mg.add_argument("gradebooks", nargs="+", metavar="GRADEBOOK", help="the shards' CSVs")
    mg.add_argument("--out", required=True, help="the gradebook to write")
    mg.set_defaults(func=_merge)

    rel = sub.add_parser("release", help="write the student release (no reference solutions)",
                         description=RELEASE_HELP,
                         formatter_class=argparse.RawDescriptionHelpFormatter)
    rel.add_argument("out_dir", metavar="OUT_DIR", help="the folder to write (empty or new)")
    rel.add_argument("--force", action="store_true",
                     help="replace the contents of a non-empty OUT_DIR")
    rel.add_argument("--lang", choices=("en", "zh", "all"), default="en",
                     help="the course's language: English, Chinese (chapters/zh/, "
                          "exercises/zh/), or both (default: %(default)s)")
    rel.set_defaults(func=_release)

    args = parser.parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
