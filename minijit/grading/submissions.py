"""What a batch grades: which files, which students, which exercises.

**One row per given path.** Every file given, and every ``*.ipynb`` under a folder given
(checkpoints skipped, links to folders not followed), is one submission, de-duplicated on
its absolute path as given: the same path given twice is one row, two links to one notebook
are two. Names come from the path as given (a link is named after itself, not its target).
A link whose target lies outside the folder it was found in (for a file given by name: its
own folder), a dangling link and anything that is not a regular file are
``invalid_notebook`` without being read. The suffix is matched in any case
(``ALICE.IPYNB`` is a submission). A folder named ``*.ipynb`` is a submission too, graded
``invalid_notebook`` and not searched: a student who uploaded a folder in place of a
notebook gets a row that says so, where skipping it would leave no trace.

Student names are shown escaped (:func:`printable`); feedback file names are portable and
injective (:func:`feedback_names`).
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from .cases import Exercise
from .notebook import check_call, exercise_header
from .scoring import GradingSetupError


@dataclass(frozen=True)
class Submission:
    """One given path. ``read`` is the file to open (the path with links resolved, checked
    to stay inside its folder), or None when the submission is not read at all, and then
    ``problem`` says why."""

    path: Path  # absolute, links not resolved: the name comes from it
    read: Path | None
    problem: str | None = None


def _is_notebook_name(name: str) -> bool:
    return name.lower().endswith(".ipynb")


def _walk(folder: Path) -> list[Path]:
    # os.walk does not descend into links to folders: a link cannot pull another folder's
    # notebooks (the instructor's solutions, say) into the batch.
    found = []
    for top, dirs, files in os.walk(folder):
        found += [Path(top) / d for d in dirs if _is_notebook_name(d)]  # each one a row
        dirs[:] = [d for d in dirs if d != ".ipynb_checkpoints" and not _is_notebook_name(d)]
        found += [Path(top) / f for f in files if _is_notebook_name(f)]
    return sorted(found)


def _vet(path: Path, folder: Path) -> Submission:
    real = Path(os.path.realpath(path))
    home = os.path.realpath(folder)
    try:
        inside = os.path.commonpath([str(real), home]) == home
    except ValueError:  # another drive
        inside = False
    if not inside:
        return Submission(path, None, "a link to a file outside the submissions folder; "
                                      "not read")
    try:
        mode = os.stat(real).st_mode
    except OSError:
        return Submission(path, None, "a link to nothing (or an unreadable file); not read")
    if stat.S_ISDIR(mode):
        return Submission(path, None, "a folder, not a notebook file; not read")
    if not stat.S_ISREG(mode):
        return Submission(path, None, "not a regular file; not read")
    return Submission(path, real)


def _find(paths: Iterable[str | os.PathLike]) -> list[Submission]:
    found: dict[Path, Path] = {}  # absolute path as given -> the folder it must stay in
    for given in paths:
        p = Path(os.path.abspath(given))
        if p.is_dir() and not _is_notebook_name(p.name):
            for q in _walk(p):
                found.setdefault(q, p)
        elif os.path.lexists(p):
            found.setdefault(p, p.parent)
        else:
            raise GradingSetupError(f"no such file or folder: {given}")
    return [_vet(p, folder) for p, folder in found.items()]


def find_submissions(paths: Iterable[str | os.PathLike]) -> list[Path]:
    """Files as given, plus every ``*.ipynb`` under given folders (checkpoints skipped),
    absolute, links not resolved, each path once (see the module docstring)."""
    return [s.path for s in _find(paths)]


def student_names(paths: Sequence[Path]) -> list[str]:
    """File stems; where two stems collide, each submission's first folder under the common
    folder when those are unique (nbgrader's ``submitted/alice/02_tracing.ipynb``: alice),
    else the paths relative to the common folder (with their suffix, should that still
    collide). Unique for unique paths."""
    names = [p.stem for p in paths]
    if len(set(names)) == len(names):
        return names
    root = Path(os.path.commonpath([str(p.parent) for p in paths]))
    parts = [p.relative_to(root).parts for p in paths]
    firsts = [q[0] for q in parts if len(q) > 1]
    if len(firsts) == len(paths) and len(set(firsts)) == len(firsts):
        return firsts
    names = [p.relative_to(root).with_suffix("").as_posix() for p in paths]
    if len(set(names)) == len(names):
        return names
    return [p.relative_to(root).as_posix() for p in paths]


def fingerprint(path: Path | None) -> str:
    """The first 16 hex digits of the SHA-256 of the file's bytes ("" for None, or a file
    that cannot be read): what ``--resume`` compares to see that a notebook changed."""
    if path is None:
        return ""
    digest = hashlib.sha256()
    try:
        with open(path, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                digest.update(block)
    except OSError:
        return ""
    return digest.hexdigest()[:16]


def printable(name: str) -> str:
    """``name`` as printable text on one line, injectively (two names never give one).

    A backslash is doubled; a byte that is not UTF-8 (kept by :func:`os.fsdecode` as a lone
    surrogate) becomes ``\\xNN``; any other character that is not printable (a newline, a
    control or format character) becomes ``\\uNNNN`` or ``\\UNNNNNNNN``.
    """
    out = []
    for ch in name:
        code = ord(ch)
        if ch == "\\":
            out.append("\\\\")
        elif 0xDC80 <= code <= 0xDCFF:
            out.append(f"\\x{code - 0xDC00:02x}")
        elif ch.isprintable():
            out.append(ch)
        elif code <= 0xFFFF:
            out.append(f"\\u{code:04x}")
        else:
            out.append(f"\\U{code:08x}")
    return "".join(out)


# Characters that cannot, or should not, appear in a file name on common systems.
_UNSAFE = set('/\\%:*?"<>|')


def _file_key(name: str) -> str:
    # Two names that one file system may store as one file: case-insensitive (macOS,
    # Windows), normalizing Unicode (macOS).
    return unicodedata.normalize("NFC", name).casefold()


FEEDBACK_SUFFIXES = (".md", ".html")  # each student's two feedback files


def feedback_names(students: Sequence[str], taken: Iterable[str] = ()) -> list[str]:
    """A feedback file name (``<name>.md``; its page is ``<name>.html``) for each student,
    injective and portable; neither file is one of ``taken``.

    ``students`` are printable names (:func:`printable`): ``/``, ``%`` and the characters
    Windows refuses become ``%XX``, and a leading ``.`` too (no hidden file, no ``..``).
    Names that a case-insensitive file system would merge (or one of ``taken``, such as the
    gradebook's own name) get ``~2``, ``~3``, ... in sorted order; long names are shortened
    and end with a hash of the full name.
    """
    def encode(name: str) -> str:
        text = "".join(f"%{ord(c):02X}" if c in _UNSAFE else c for c in name)
        if text.startswith("."):
            text = "%2E" + text[1:]
        if len(text.encode("utf-8", "surrogatepass")) > 180:
            digest = hashlib.sha256(name.encode("utf-8", "surrogatepass")).hexdigest()[:16]
            while len(text.encode("utf-8", "surrogatepass")) > 160:
                text = text[:-1]
            text = f"{text}~{digest}"
        return text or "%"

    used = {_file_key(t) for t in taken}
    chosen: dict[int, str] = {}
    for i in sorted(range(len(students)), key=lambda i: students[i]):
        base = encode(students[i])
        name, n = base, 1
        while any(_file_key(name + ext) in used for ext in FEEDBACK_SUFFIXES):
            n += 1
            name = f"{base}~{n}"
        used.update(_file_key(name + ext) for ext in FEEDBACK_SUFFIXES)
        chosen[i] = name + ".md"
    return [chosen[i] for i in range(len(students))]


_MAX_INFER_BYTES = 64 << 20  # bigger notebooks are graded, but not read for the assignment


def _code_sources(path: Path) -> list[str]:
    """The code cells' sources of a notebook (nbformat 3 to 5), [] for anything else."""
    try:
        with open(path, "rb") as f:
            data = f.read(_MAX_INFER_BYTES + 1)
        if len(data) > _MAX_INFER_BYTES:
            return []
        nb = json.loads(data.decode("utf-8", errors="replace"))
    except (OSError, ValueError, RecursionError):
        return []
    return code_sources(nb)


def code_sources(nb: object) -> list[str]:
    """The code cells' sources of a notebook read as JSON data (nbformat 3 to 5), in order;
    [] for anything else. Nothing in it is trusted: a cell or source of the wrong type is
    skipped."""
    if not isinstance(nb, dict):
        return []
    cells = nb.get("cells")
    if not isinstance(cells, list):  # nbformat 3: worksheets of cells, "input" for source
        sheets = nb.get("worksheets")
        cells = [c for ws in sheets if isinstance(ws, dict)
                 for c in (ws.get("cells") if isinstance(ws.get("cells"), list) else [])
                 ] if isinstance(sheets, list) else []
    sources = []
    for cell in cells:
        if not isinstance(cell, dict) or cell.get("cell_type") != "code":
            continue
        source = cell.get("source", cell.get("input", ""))
        if isinstance(source, list):
            source = "".join(s for s in source if isinstance(s, str))
        if isinstance(source, str):
            sources.append(source)
    return sources


def exercise_ids(path: Path) -> set[str]:
    """The exercise ids a notebook holds: its ``# EXERCISE`` headers and ``check("...")``
    cells. Markdown, outputs and comments never count (anyone can write an id there)."""
    found = set()
    for source in _code_sources(path):
        header = exercise_header(source)
        checked = check_call(source)
        found |= {header[0]} if header else set()
        found |= {checked} if checked else set()
    return found


def _some(names: Sequence[str], limit: int = 4) -> str:
    shown = ", ".join(names[:limit])
    return shown + (f" and {len(names) - limit} more" if len(names) > limit else "")


def select_exercises(paths: Sequence[Path], exercises: dict[str, Exercise],
                     assignment: Sequence[str] | None = None,
                     names: Sequence[str] | None = None) -> list[Exercise]:
    """The exercises to grade, in registry order.

    ``assignment`` names exercise ids or chapters (``04_jit_and_the_cache``). Without it:
    every exercise whose header or check cell appears in a submission (one student deleting
    a cell does not remove the column), or all of them if none does; and these must belong
    to one chapter, or :class:`GradingSetupError` asks for ``--assignment`` (names, one per
    path, label the submissions in that message).
    """
    if assignment:
        chosen = set()
        for name in assignment:
            hits = {i for i, ex in exercises.items() if name in (i, ex.chapter)}
            if not hits:
                raise GradingSetupError(f"--assignment {name}: no such exercise or chapter")
            chosen |= hits
        return [ex for i, ex in exercises.items() if i in chosen]
    names = list(names) if names is not None else [p.name for p in paths]
    holders: dict[str, list[str]] = {}  # exercise id -> the submissions that hold it
    for path, name in zip(paths, names):
        for i in exercise_ids(path):
            if i in exercises:
                holders.setdefault(i, []).append(name)
    chosen = [ex for i, ex in exercises.items() if i in holders] or list(exercises.values())
    chapters: dict[str, list[str]] = {}
    for ex in chosen:
        chapters.setdefault(ex.chapter, [])
        for name in holders.get(ex.id, []):
            if name not in chapters[ex.chapter]:
                chapters[ex.chapter].append(name)
    if len(chapters) > 1:
        if not holders:
            raise GradingSetupError(
                "no submission holds an exercise (no EXERCISE header, no check cell), so "
                "the assignment is unknown; choose it with --assignment CHAPTER")
        found = "; ".join(f"{chapter} ({_some(sorted(who)) or 'no submission'})"
                          for chapter, who in sorted(chapters.items()))
        raise GradingSetupError(
            f"the submissions hold exercises of {len(chapters)} chapters: {found}. Grade "
            "one assignment per run: choose it with --assignment CHAPTER (or exercise ids)")
    return chosen
