"""What one submission may take: its time limits and the sandbox its kernels run in.

The runner and the kernel both read :class:`Limits`; it lives here so that neither imports
the other.
"""

from __future__ import annotations

from dataclasses import dataclass

from .sandbox import Sandbox


@dataclass(frozen=True)
class Limits:
    """Time limits of one submission (seconds), and the sandbox its kernels run in."""

    cell_timeout: float = 30.0
    timeout: float = 300.0
    startup_timeout: float = 60.0
    max_kernel_starts: int = 3
    # After an interrupt, how long the kernel gets to show it is listening again.
    settle_timeout: float = 5.0
    # The sandbox each kernel runs in (minijit.grading.sandbox); None: run as the grader.
    sandbox: Sandbox | None = None
