"""Grading one batch on many machines: shards, and merging their gradebooks.

``grade --shard K/N`` grades the submissions whose student name falls in shard K of N
(1 <= K <= N), each shard into its own ``--out``. A student's shard comes from a hash of
their name alone (:func:`in_shard`), not their position in the batch: a student added to
the batch later lands in a shard without moving anyone else. Every shard sees the whole
batch (names, feedback file names and the assignment are decided over all submissions),
so the shards' rows and feedback files are those one run would write.
:func:`merge_gradebooks` then combines the shards' CSVs into one.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Sequence
from pathlib import Path

from .gradebook import Record, read_records, write_records
from .scoring import GradingSetupError


def parse_shard(text: str) -> tuple[int, int]:
    """``"2/3"`` -> ``(2, 3)``; GradingSetupError unless 1 <= K <= N."""
    k, _, n = text.partition("/")
    try:
        shard = int(k), int(n)
    except ValueError:
        shard = (0, 0)
    if not 1 <= shard[0] <= shard[1]:
        raise GradingSetupError(f"--shard {text}: give K/N with 1 <= K <= N, e.g. 1/3 "
                                "(Slurm: $SLURM_ARRAY_TASK_ID/3 with --array=1-3)")
    return shard


def in_shard(student: str, shard: tuple[int, int]) -> bool:
    """Whether ``student`` (a printable name) is graded by shard ``(K, N)``."""
    k, n = shard
    digest = hashlib.sha256(student.encode("utf-8", "surrogatepass")).digest()
    return int.from_bytes(digest[:8], "big") % n == k - 1


def merge_gradebooks(paths: Sequence[str | os.PathLike], out: str | os.PathLike
                     ) -> tuple[int, Path | None]:
    """Write at ``out`` the rows of the gradebooks at ``paths``, which must have the same
    exercise columns; a student in two of them is an error unless both rows are equal.
    Returns the number of rows and the backup of the file ``out`` replaced (or None)."""
    ids: list[str] | None = None
    rows: dict[str, Record] = {}
    where: dict[str, str] = {}
    for path in paths:
        found = read_records(path)
        if found is None:
            raise GradingSetupError(f"{path}: no such gradebook (or an empty file)")
        book_ids, book = found
        if ids is None:
            ids, first = book_ids, path
        elif book_ids != ids:
            raise GradingSetupError(
                f"{path} grades {', '.join(book_ids)}, {first} grades {', '.join(ids)}: only "
                "gradebooks of one assignment merge")
        for student, row in book.items():
            if student in rows and rows[student] != row:
                raise GradingSetupError(
                    f"{student} has a row in {where[student]} and another in {path}, and "
                    "they differ: merge the shards of one run, or drop one of the rows")
            rows[student], where[student] = row, str(path)
    if ids is None:
        raise GradingSetupError("merge: give the gradebooks to merge")
    return len(rows), write_records(out, ids, rows)
