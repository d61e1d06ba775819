"""How many CPUs the grader may use: the one place it counts them.

The ``--jobs`` default, the sandbox's limits and the thread pools a kernel is told to start
all use :func:`usable_cpus`, so that a container given two CPUs of a 64-core host grades
with two, not 64 (``os.cpu_count()`` counts the host's).
"""

from __future__ import annotations

import os
from pathlib import Path

# cgroup v2's CPU quota of this container: "max 100000" (none) or "200000 100000" (2 CPUs).
CGROUP_CPU_MAX = Path("/sys/fs/cgroup/cpu.max")


def usable_cpus() -> int:
    """CPUs this process may use: its affinity mask, capped by a cgroup v2 quota (rounded
    up: a quota of 1.5 CPUs is 2). At least 1."""
    if hasattr(os, "sched_getaffinity"):
        cpus = len(os.sched_getaffinity(0))
    else:
        cpus = os.cpu_count() or 1
    try:
        quota, period = CGROUP_CPU_MAX.read_text().split()
        if quota != "max":
            cpus = min(cpus, -(-int(quota) // int(period)))
    except (OSError, ValueError):
        pass  # no cgroup v2 quota to respect
    return max(1, cpus)
