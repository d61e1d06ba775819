"""Writing the grader's outputs so that a crash or a planted link never corrupts one.

Every output file (the CSV, each feedback file) is written to a temporary file in its
folder, fsync'd, and moved into place with :func:`os.replace`: a symlink standing at the
path is replaced by a regular file, its target never written (``feedback/mallory.md ->
gradebook.csv`` cannot overwrite the gradebook).
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _fsync_folder(folder: Path) -> None:
    with contextlib.suppress(OSError, AttributeError):
        fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def replace_file(path: str | os.PathLike, data: bytes, keep_open: bool = False) -> int | None:
    """Make ``path`` a regular file holding ``data``, atomically: written to a temporary
    file in the same folder, fsync'd, then moved over ``path`` with :func:`os.replace`. A
    symlink at ``path`` is replaced, never followed. ``keep_open``: return a descriptor of
    the new file (positioned at its end), for appending to it."""
    path = Path(path)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name[:40]}.", suffix=".tmp")
    try:
        with contextlib.suppress(OSError, AttributeError):
            os.fchmod(fd, 0o666 & ~_umask())  # as open() would have made it
        write_all(fd, data)
        os.fsync(fd)
        os.replace(tmp, path)
    except BaseException:
        os.close(fd)
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    _fsync_folder(path.parent)
    if keep_open:
        return fd
    os.close(fd)
    return None
