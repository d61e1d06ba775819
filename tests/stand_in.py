"""A test's stand-in for a learner's right answer: minijit's own piece, callable from inside
a learner's piece of the same name.

minijit's own pieces refuse to run for a learner's piece of their name (`build.guard`: a
learner's piece that hands its work to minijit's scores 0). Tests of the build track's
plumbing (counters, wrong results, switches) still want a piece that is right without being
the solution notebook's; `stand_in(name)` is minijit's own with the guard's record cleared.
"""

from __future__ import annotations

from minijit import build


def stand_in(name: str):
    """minijit's own piece `name`, as a right answer a test may wrap or call."""
    reference = build.PIECES[name].reference

    def piece(*args, **kwargs):
        token = build._running.set(None)  # the guard sees no learner's piece running
        try:
            return reference(*args, **kwargs)
        finally:
            build._running.reset(token)

    return piece
