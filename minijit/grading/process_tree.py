"""Process trees: every process below a pid, found through ``/proc`` (or ``ps``), and
killed so that none escapes by forking meanwhile (:func:`kill_tree`).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess

_KILL = getattr(signal, "SIGKILL", signal.SIGTERM)
_STOP = getattr(signal, "SIGSTOP", None)


def _children() -> dict[int, list[int]]:
    """Parent pid -> child pids, for every process this user can see."""
    kids: dict[int, list[int]] = {}
    if os.path.isdir("/proc"):
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                with open(f"/proc/{entry}/stat", "rb") as f:
                    stat = f.read()
            except OSError:  # it ended meanwhile
                continue
            # The command name is in parentheses and may hold spaces and parentheses.
            fields = stat.rsplit(b")", 1)[-1].split()
            if len(fields) >= 2 and fields[1].isdigit():
                kids.setdefault(int(fields[1]), []).append(int(entry))
        return kids
    try:
        listing = subprocess.run(["ps", "-A", "-o", "pid=", "-o", "ppid="], check=False,
                                 capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return kids
    for line in listing.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[0].isdigit() and parts[1].isdigit():
            kids.setdefault(int(parts[1]), []).append(int(parts[0]))
    return kids


def descendants(pid: int) -> list[int]:
    """Every process below ``pid`` (children, their children, ...), as seen right now."""
    kids = _children()
    found: list[int] = []
    todo = [pid]
    while todo:
        for child in kids.get(todo.pop(), []):
            if child != pid and child not in found:
                found.append(child)
                todo.append(child)
    return found


def _signal(pid: int, sig: int) -> None:
    with contextlib.suppress(OSError):
        os.kill(pid, sig)


def kill_tree(pid: int, *, include_root: bool = True) -> list[int]:
    """SIGKILL every process below ``pid`` (and ``pid`` itself unless told not to).

    Each process found is stopped (SIGSTOP) before the tree is read again, until no new
    one appears: a stopped process cannot fork, so nothing escapes by forking while the
    tree is being walked. Returns the pids that were signalled.
    """
    stopped: list[int] = []
    for _ in range(20):
        found = [p for p in ([pid] if include_root else []) + descendants(pid)
                 if p not in stopped]
        if not found:
            break
        for p in found:
            if _STOP is not None:
                _signal(p, _STOP)
            stopped.append(p)
    for p in stopped:
        _signal(p, _KILL)
    return stopped
