"""The build track: run minijit on pieces you wrote yourself (chapter 02 onwards).

Some exercises ask you to write a core piece of minijit against its real interface (the
staging trace's `process_primitive`, the interpreter `eval_jaxpr`, the printer `pp_jaxpr`,
...). Once yours passes its `check()`, switch it in, and minijit calls *your* function
wherever it would call its own:

    from minijit import build

    build.use("eval_jaxpr", eval_jaxpr)   # from now on, mj.eval_jaxpr, the interpreter
                                          # backend and eager lax.cond/while_loop/scan run yours
    build.using()                         # {'eval_jaxpr': <function eval_jaxpr ...>}
    build.reset("eval_jaxpr")             # back to minijit's own (build.reset() resets all)

    with build.use("pp_jaxpr", pp_jaxpr): # or only for a block: the previous piece
        print(mj.make_jaxpr(f)(x))        # comes back when it ends, even on an error

How it works: minijit's own code never calls a piece's function directly; it calls
`build.call(name, ...)`, which looks the current function up in one small table (`_current`).
Each piece is registered once, next to minijit's own implementation (`register`), with the
chapter that builds it. Invariants:

- *Named failures.* An exception raised by your piece reaches the caller as a `PieceError`
  that names the piece, where it came from (`use(..., origin=...)`: the exercise notebook
  `use_mine` read it from) and how to pick up a fix or switch back; the original is its
  `__cause__`. A piece may also declare a `check` on its result (right number of outputs, a
  `str`, ...), so a wrong result fails at once, with the piece's name, instead of somewhere
  downstream.
- *The program's errors stay the program's.* When your piece raises, `call` runs minijit's
  own piece on the same arguments (with minijit's own for every piece that run calls). If
  that raises too, the program is at fault, not your piece: minijit's own error passes
  through unchanged (class, message, the user's line), exactly as without your piece, so
  `except TypeError` still catches a shape error. Only this failure path runs a piece twice;
  side effects of the program (a `debug.print` it evaluates) may then repeat.
- *Your own work.* minijit's own piece starts with `guard(name)`: called while your piece of
  the same name runs (your piece hands its work to minijit's), it raises a `PieceError`
  saying so, and your piece fails even if it catches that. `check()` and the grader then
  fail every case of the piece, which scores 0. They fail every case too, whatever the
  cases give, when your piece *is* minijit's code (its own function, a `functools.partial`
  of it, anything defined in minijit's files; `refused_own` words it): no guard sees that,
  since minijit's own function switched in is no switch at all. Nor does a guard see a
  piece that a case calls directly, outside `call`: `handed_over` runs it on its small
  example, watched, for them.
- *No stale caches.* Every switch (`use`, `reset`, the end of a `with`) increases
  `generation()`, then calls the `on_switch` listeners. `jit`'s listener empties every cache
  (fast paths too), and `jit` keeps no entry whose compile a switch overtook (its generation
  changed meanwhile), so nothing computed with a piece outlives the piece.
  A piece's output feeds a cache key only where computing the key is the piece
  (`cache_key`), and then every cache hit is checked against the call's types. Where minijit
  needs the printed text of a program for itself (names in generated code, error messages),
  it uses its own printer.
- *Your frames are minijit's.* The frames that `call` (or a selftest, through `trial`) runs
  a piece in, its helpers and wrappers included, count as minijit's own when minijit looks
  for the learner's line (`errors.user_frame`, `PIECE_RUNNERS`): `errors.user_location()`
  called inside your `process_primitive` names the line being traced, as inside minijit's.
- *Threads.* Switching takes a lock and replaces one table entry; readers take no lock and
  see either the old or the new function, never a mix (a call already running when the
  switch happens may finish on the old one). The table is process-wide, as a learner's
  notebook expects: a switch in one thread is seen by all of them.
"""

from __future__ import annotations

import contextlib
import contextvars
import sys
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any


class PieceError(RuntimeError):
    """A piece you switched in with `build.use` failed (raised, or returned a wrong result)."""

    def __init__(self, piece: str, message: str):
        super().__init__(message)
        self.piece = piece


@dataclass(frozen=True)
class Piece:
    """One replaceable piece of minijit: its name, who builds it, and minijit's own version.

    `check(result, *args)` returns None when a result is acceptable, else what is wrong;
    `selftest(fn)` runs a candidate once on a small example and says what is wrong, if anything.
    """

    name: str
    chapter: str
    signature: str
    reference: Callable[..., Any]
    check: Callable[..., str | None] | None = None
    selftest: Callable[[Callable[..., Any]], str | None] | None = None


# The pieces, by name, as registered by the modules that implement them; and the function
# each one runs now. `_current[name] is PIECES[name].reference` unless a learner switched.
PIECES: dict[str, Piece] = {}
_current: dict[str, Callable[..., Any]] = {}
_origins: dict[str, str] = {}  # name -> where the switched-in function came from, in words


@dataclass
class _Run:
    """A learner's piece while it runs; `borrowed` once it called minijit's own piece."""

    name: str
    args: tuple = ()
    borrowed: bool = False


_running: contextvars.ContextVar[_Run | None] = contextvars.ContextVar(
    "minijit_build_running", default=None)
# True while `call` re-runs minijit's own piece after the learner's failed: every piece that
# run calls is minijit's own too, so a broken piece cannot make minijit's run fail as well.
_own_only = contextvars.ContextVar("minijit_build_own_only", default=False)
_generation = [0]
_listeners: list[Callable[[], None]] = []
_lock = threading.RLock()


def register(name: str, reference: Callable[..., Any], *, chapter: str, signature: str,
             check: Callable[..., str | None] | None = None,
             selftest: Callable[[Callable[..., Any]], str | None] | None = None) -> None:
    """Declare minijit's own implementation of a piece (once, where it is defined). Its
    first statement is `build.guard(name)` (see *Your own work*)."""
    with _lock:
        if name in PIECES:
            raise ValueError(f"build piece {name!r} is registered twice")
        PIECES[name] = Piece(name, chapter, signature, reference, check, selftest)
        _current[name] = reference


def guard(name: str) -> None:
    """The first statement of minijit's own piece `name`: raises a `PieceError` if the
    learner's piece `name` is running, which has then handed its work to minijit's."""
    run = _running.get()
    if run is not None and run.name == name:
        run.borrowed = True
        raise PieceError(name, _borrowed(name))


def running(name: str) -> tuple | None:
    """The arguments of the learner's piece `name`, if it is the innermost learner's piece
    running now (minijit's own code checks what that piece hands it); else None."""
    run = _running.get()
    return run.args if run is not None and run.name == name else None


def _borrowed(name: str) -> str:
    return (f"your {name} calls minijit's own {name}: the exercise asks you to write it "
            f"yourself, so a {name} that hands its work to minijit's fails every case and "
            "scores 0")


def refused_own(function: str, what: str) -> str:
    """What `check()` and the grader say when the learner's `function` (their piece) is
    minijit's code; `what` says whose (`minijit.grading.probing.minijits_code`)."""
    return (f"your {function} is {what}: the exercise asks you to write it yourself, so "
            "minijit's code given as yours fails every case and scores 0")


def _run_learners(name: str, fn: Callable[..., Any], args: tuple, kwargs: dict):
    """`fn(*args, **kwargs)`, the learner's piece `name`, watched: if it called minijit's own
    `name`, it fails, whatever it did with the guard's error."""
    run = _Run(name, args)
    token = _running.set(run)
    try:
        result = fn(*args, **kwargs)
    finally:
        _running.reset(token)
    if run.borrowed:
        raise PieceError(name, _borrowed(name))
    return result


def _watched(name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    """`fn` as a selftest runs it: through `_run_learners`."""
    return lambda *args, **kwargs: _run_learners(name, fn, args, kwargs)


def _piece(name: str) -> Piece:
    try:
        return PIECES[name]
    except KeyError:
        raise KeyError(f"no build piece named {name!r}; the pieces are: "
                       f"{', '.join(sorted(PIECES))}") from None


def generation() -> int:
    """How many switches there have been: anything computed by a piece carries this number."""
    return _generation[0]


def on_switch(listener: Callable[[], None]) -> None:
    """Call `listener()` after every switch (jit uses it to empty its caches)."""
    _listeners.append(listener)


def _switch(changes: dict[str, Callable[..., Any]]) -> None:
    with _lock:
        _current.update(changes)
        _generation[0] += 1
        for listener in list(_listeners):
            listener()


class _Switch:
    """What `use` returns: the switch has already happened; as a context manager it also
    switches back, at the end of the block, to whatever ran before."""

    def __init__(self, name: str, previous: Callable[..., Any]):
        self.name, self.previous = name, previous

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        _switch({self.name: self.previous})

    def __repr__(self) -> str:
        fn = _current[self.name]
        if fn is PIECES[self.name].reference:
            return f"<minijit runs its own {self.name}>"
        return (f"<minijit runs your {self.name} ({getattr(fn, '__qualname__', fn)!s}); "
                f"build.reset({self.name!r}) switches back>")


def use(name: str, fn: Callable[..., Any], *, verify: bool = True,
        origin: str | None = None) -> _Switch:
    """From now on, minijit runs `fn` as its piece `name` (see the module docstring).

    With `verify` (the default), `fn` first runs once on the piece's small example; if it
    raises or disagrees with minijit's own, nothing is switched and a message says why, so
    the cells after an unfinished exercise still run (on minijit's own piece). The grader
    switches with `verify=False`: a broken piece must run, and fail, where it is graded.
    `origin` says where `fn` was written and how a fix reaches minijit (for `use_mine`: the
    exercise notebook, and running `use_mine()` again); a failure of the piece repeats it.
    """
    piece = _piece(name)
    if not callable(fn):
        raise TypeError(f"build.use({name!r}, ...) needs a function {piece.signature}, "
                        f"got {type(fn).__name__}")
    if verify:
        problem = selftest(name, fn)
        if problem:
            print(f"minijit keeps its own {name}: yours {problem} on a small example, so it "
                  f"was not switched in. Fix it (its check() shows more) and run "
                  f"build.use({name!r}, ...) again.", file=sys.stderr)
            return _Switch(name, _current[name])
    with _lock:
        previous = _current[name]
        _switch({name: fn})
        if origin is None:
            _origins.pop(name, None)
        else:
            _origins[name] = origin
    return _Switch(name, previous)


def selftest(name: str, fn: Callable[..., Any]) -> str | None:
    """What is wrong with `fn` as piece `name` on the piece's small example (its selftest,
    which `use` runs before it switches), in words; None if nothing is."""
    piece = _piece(name)
    if piece.selftest is None or fn is piece.reference:  # minijit's own passes its own
        return None
    try:
        return piece.selftest(_watched(name, fn))
    except Exception as e:  # noqa: BLE001 - any failure of the learner's code is reported
        return f"raised {type(e).__name__}: {e}"


def handed_over(name: str, fn: Callable[..., Any]) -> str | None:
    """The guard's message if `fn`, run as piece `name` on the piece's small example, calls
    minijit's own `name` (whatever it then did with the guard's error); else None.
    `check()` and the grader ask it besides the cases, so that a case that calls the piece
    directly, outside `call`, where no guard watches, fails too."""
    piece = _piece(name)
    if piece.selftest is None or fn is piece.reference:
        return None
    runs: list[_Run] = []

    def watched(*args, **kwargs):
        runs.append(_Run(name, args))
        token = _running.set(runs[-1])
        try:
            return fn(*args, **kwargs)
        finally:
            _running.reset(token)

    try:
        piece.selftest(watched)
    except Exception:  # noqa: BLE001 - only the hand-over matters here
        pass
    return _borrowed(name) if any(run.borrowed for run in runs) else None


def reset(*names: str) -> None:
    """Switch the named pieces (all of them, without names) back to minijit's own."""
    for name in names:
        _piece(name)
    _switch({name: PIECES[name].reference for name in names or PIECES})


def using() -> dict[str, Callable[..., Any]]:
    """The pieces minijit now runs that are not its own: name -> your function."""
    return {name: fn for name, fn in _current.items() if fn is not PIECES[name].reference}


@contextlib.contextmanager
def minijits_own() -> Iterator[None]:
    """A block that runs on minijit's own pieces; at its end every piece is what it was
    before (where each came from too). `check()` and the grader run an exercise's cases in
    one, so that a piece a notebook switched in never grades another exercise (a case that
    grades a piece switches it in itself)."""
    with _lock:
        saved = dict(_current)
        if using():
            _switch({name: piece.reference for name, piece in PIECES.items()})
    try:
        yield
    finally:
        with _lock:
            if any(_current.get(name) is not fn for name, fn in saved.items()):
                _switch(saved)


def is_reference(name: str) -> bool:
    return _current[name] is PIECES[name].reference


def call(name: str, /, *args, **kwargs):
    """Run piece `name` as it is now: minijit's own, or the learner's, with named errors.
    `name` is positional only: a keyword argument of the piece may be called `name` too
    (`bind(jit_p, ..., name=...)`)."""
    fn = _current[name]
    if fn is PIECES[name].reference or _own_only.get():
        return _run_own(name, args, kwargs)
    failure = None
    try:
        result = _run_learners(name, fn, args, kwargs)
    except PieceError:
        raise  # a nested call of a piece failed: its error already says which
    except Exception as e:
        failure = e
    if failure is not None:
        # outside the `except`, so that minijit's own error does not show the piece's as
        # its context
        _raise_if_minijit_fails_too(name, args, kwargs)
        raise PieceError(name, _message(name, f"raised {type(failure).__name__}: {failure}")
                         ) from failure
    check = PIECES[name].check
    problem = check(result, *args, **kwargs) if check else None
    if problem:
        raise PieceError(name, _message(name, problem))
    return result


def trial(fn: Callable[..., Any], /, *args, **kwargs):
    """`fn(*args, **kwargs)`, run as `call` runs a piece: a selftest runs a candidate through
    this, so the candidate's frames count as minijit's (`PIECE_RUNNERS`), as they will once
    the candidate is switched in."""
    return fn(*args, **kwargs)


# The functions that run a piece's function: `call`, and `trial` for selftests. Frames outside
# minijit that one of them called are the piece's, which `errors.user_frame` counts as minijit's.
PIECE_RUNNERS = frozenset({call.__code__, trial.__code__, _run_learners.__code__})


def _run_own(name: str, args: tuple, kwargs: dict):
    """minijit's own piece `name`, run by minijit's own dispatch: no hand-over by a learner's
    piece that may be running (a switch in another thread may have put minijit's own back
    meanwhile), so its guard sees none."""
    if _running.get() is None:
        return PIECES[name].reference(*args, **kwargs)
    token = _running.set(None)
    try:
        return PIECES[name].reference(*args, **kwargs)
    finally:
        _running.reset(token)


def _raise_if_minijit_fails_too(name: str, args: tuple, kwargs: dict) -> None:
    """Run minijit's own piece where the learner's raised: its error, if it raises one too,
    is the program's, and goes on unchanged, as it would without the learner's piece."""
    error = None
    token = _own_only.set(True)
    try:
        _run_own(name, args, kwargs)
    except Exception as e:  # noqa: BLE001 - whatever minijit's own raises is the program's
        error = e
    finally:
        _own_only.reset(token)
    if error is not None:
        raise error


def _message(name: str, what: str) -> str:
    origin = _origins.get(name)
    where, fix = (("switched in with minijit.build.use",
                   f"fix it and call build.use({name!r}, ...) again") if origin is None else
                  (origin, "fix it there and run use_mine() again to pick the fix up"))
    return (f"your {name} ({where}) {what}\n"
            f"  minijit runs your {name} until you switch back: {fix}, or use minijit's own "
            f"with build.reset({name!r}).")
