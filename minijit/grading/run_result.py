"""What running one submission gives back: raw probe results and the events that explain
them (:class:`RunResult`), for each exercise what was run (:class:`ExercisePlan`).

Plain data, pickled from a grader worker to the main process; nothing here decides a score
(that is :mod:`minijit.grading.scoring`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .channel import ProbeCall

# Status words, worst first. A submission's status is the worst event it produced.
STATUS_ORDER = ("not_graded", "invalid_notebook", "grader_error", "kernel_died", "timeout",
                "tampered", "error", "ok")
NOTE = "note"  # informative events that do not change the status (e.g. "not attempted")


@dataclass(frozen=True)
class ExercisePlan:
    """What to run for one exercise: its probe calls (public ones in ``calls``, hidden and
    private ones in ``hidden``), no expected value."""

    id: str
    calls: tuple[ProbeCall, ...]
    hidden: tuple[ProbeCall, ...] = ()


@dataclass(frozen=True)
class Event:
    kind: str  # one of STATUS_ORDER (not "ok") or NOTE
    message: str


@dataclass
class RunResult:
    """Raw outcome of one submission; scoring happens in the grader's main process."""

    results: dict[str, Any] = field(default_factory=dict)
    # exercise id -> "ran", or the kind of event that stopped its probes
    outcome: dict[str, str] = field(default_factory=dict)
    events: list[Event] = field(default_factory=list)
    seconds: float = 0.0
    # The notebook imported the grader's reference solutions, or had a trace or profile hook
    # set when the grader's requests came: no exercise of it counts.
    voided: bool = False
    # Replaced minijit.grading names reported after the public cases (see _env_changes).
    replaced_seen: set = field(default_factory=set)

    def add(self, kind: str, message: str) -> None:
        if Event(kind, message) not in self.events:
            self.events.append(Event(kind, message))

    @property
    def status(self) -> str:
        kinds = {e.kind for e in self.events}
        return next((s for s in STATUS_ORDER if s in kinds), "ok")
