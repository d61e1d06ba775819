"""The debugger behind `debug.breakpoint()`: the user's frames, and JAX's `jdb` (chapter 06).

Under `jit`, Python's `breakpoint()` stops once, while tracing, and shows tracers.
`debug.breakpoint()`, as `jax.debug.breakpoint`, stops each time the compiled program runs, in
a debugger whose namespace holds the traced function's local variables bound to their
*values*. It is one `debug.callback`, so one effectful `debug_callback` equation: when traced
it collects the frames of the calling code (`user_frames`), makes the live tracers among their
local variables the callback's operands (`split_locals`), and keeps every other local as it
is; each run, the callback puts the concrete values in place (`with_values`) and hands the
frames to `CliDebugger`. Eagerly the locals are values already.

The debugger is JAX's command-line `jdb`, reading commands from stdin (or `stdin=`), with its
prompt `(jdb) ` and this subset of its commands:

    p expr, pp expr     print (pretty-print) an expression; a bare expression prints too
    l, list             the source around the current line
    u, up / d, down     move to the calling frame / back
    w, where, bt        the stack, most recent frame last
    c, cont, continue   leave the debugger; the program goes on
    q, quit, exit       leave the program (SystemExit, as in JAX); also at end of input
    help                the commands
"""

from __future__ import annotations

import cmd
import inspect
import pprint
import sys
import traceback
from dataclasses import dataclass, replace
from pathlib import Path
from typing import IO, Any

from minijit.core import Tracer
from minijit.tree_util import tree_flatten, tree_unflatten

_PACKAGE = str(Path(__file__).resolve().parent) + "/"  # a frame in minijit starts so


@dataclass(frozen=True)
class DebuggerFrame:
    """One frame of the user's stack: where it is, its source, and its local variables."""

    filename: str
    lineno: int
    locals: dict[str, Any]
    source: list[str]  # the lines of the frame's function (or module)
    offset: int | None  # index of `lineno` in `source`; None if the source is unknown

    @staticmethod
    def from_frameinfo(info: inspect.FrameInfo) -> DebuggerFrame:
        try:
            _, start = inspect.getsourcelines(info.frame)
            source = inspect.getsource(info.frame).split("\n")
            offset = info.lineno - max(start, 1)  # lines count from 1, a module's start is 0
            if offset >= len(source):
                source, offset = [], None
        except (OSError, TypeError):
            source, offset = [], None
        return DebuggerFrame(info.filename, info.lineno, dict(info.frame.f_locals), source,
                             offset)


class CliDebugger(cmd.Cmd):
    """JAX's `jdb`: `cmd.Cmd` with one method per command, evaluating in the frame's locals."""

    prompt = "(jdb) "

    def __init__(self, frames: list[DebuggerFrame], stdin: IO[str] | None = None,
                 stdout: IO[str] | None = None):
        super().__init__(stdin=stdin, stdout=stdout)
        self.use_rawinput = stdin is None  # input() reads sys.stdin, as `pdb` does
        self.frames, self.frame_index = frames, 0
        self.intro = "Entering jdb:"

    def evaluate(self, expr: str):
        return eval(expr, {}, dict(self.frames[self.frame_index].locals))  # noqa: S307

    def _error_message(self) -> None:
        msg = traceback.format_exception_only(*sys.exc_info()[:2])[-1].strip()
        print("***", msg, file=self.stdout)

    def default(self, line: str) -> None:
        self.do_p(line)

    def do_p(self, arg: str) -> None:
        """p expression: print the value of an expression"""
        try:
            print(repr(self.evaluate(arg)), file=self.stdout)
        except Exception:
            self._error_message()

    def do_pp(self, arg: str) -> None:
        """pp expression: pretty-print the value of an expression"""
        try:
            print(pprint.pformat(self.evaluate(arg)), file=self.stdout)
        except Exception:
            self._error_message()

    def print_context(self, num_lines: int = 2) -> None:
        frame = self.frames[self.frame_index]
        lines = [f"> {frame.filename}({frame.lineno})"]
        if frame.offset is not None:
            for i, line in enumerate(frame.source):
                if frame.offset - 1 - num_lines <= i <= frame.offset + num_lines:
                    lines.append(("->  " if i == frame.offset else "    ") + line)
        print("\n".join(lines), file=self.stdout)

    def do_list(self, arg: str) -> None:
        """l(ist): the source around the current line"""
        self.print_context(num_lines=5)

    def do_up(self, arg: str) -> None:
        """u(p): move to the calling frame"""
        if self.frame_index == len(self.frames) - 1:
            print("At topmost frame.", file=self.stdout)
        else:
            self.frame_index += 1
        self.print_context()

    def do_down(self, arg: str) -> None:
        """d(own): move back to the called frame"""
        if self.frame_index == 0:
            print("At bottommost frame.", file=self.stdout)
        else:
            self.frame_index -= 1
        self.print_context()

    def do_where(self, arg: str) -> None:
        """w(here): the stack, most recent frame last ('bt' too)"""
        lines = ["Traceback:"]
        for frame in self.frames[::-1]:
            lines.append(f'  File "{frame.filename}", line {frame.lineno}')
            lines.append("    <no source>" if frame.offset is None
                         else f"    {frame.source[frame.offset].strip()}")
        print("\n".join(lines), file=self.stdout)

    def do_continue(self, arg: str) -> bool:
        """c(ont(inue)): leave the debugger and go on with the program"""
        return True

    def do_quit(self, arg: str) -> None:
        """q(uit), exit: leave the program"""
        sys.exit(0)

    do_l, do_u, do_d = do_list, do_up, do_down
    do_w = do_bt = do_where
    do_c = do_cont = do_continue
    do_q = do_exit = do_EOF = do_quit


def user_frames(filter_frames: bool, num_frames: int | None) -> list[DebuggerFrame]:
    """The frames of the stack above the caller of this function's caller (`breakpoint`)."""
    infos = inspect.stack()[2:]
    if filter_frames:  # minijit's own frames say nothing about the user's program
        infos = [i for i in infos if not i.filename.startswith(_PACKAGE)]
    frames = [DebuggerFrame.from_frameinfo(i) for i in infos]
    return frames if num_frames is None else frames[:num_frames]


def split_locals(frames: list[DebuggerFrame]) -> tuple[list, list, list[DebuggerFrame]]:
    """(tracers, holes, frames): the live tracers among the frames' locals, in order; where
    each goes back; and the frames without them (a kept tracer would leak out of its trace)."""
    tracers, holes = [], []  # hole: (frame index, name, leaves without tracers, treedef, where)
    for fi, frame in enumerate(frames):
        for name, value in frame.locals.items():
            try:
                leaves, treedef = tree_flatten(value)
            except Exception:  # a class whose flatten function fails: keep the value whole
                continue
            where = [i for i, x in enumerate(leaves) if isinstance(x, Tracer) and x._trace.alive]
            if where:
                tracers += [leaves[i] for i in where]
                leaves = [None if i in where else x for i, x in enumerate(leaves)]
                holes.append((fi, name, leaves, treedef, where))
    emptied = [dict(f.locals) for f in frames]
    for fi, name, *_ in holes:
        emptied[fi][name] = None
    return tracers, holes, [replace(f, locals=d) for f, d in zip(frames, emptied)]


def with_values(frames: list[DebuggerFrame], holes: list, values) -> list[DebuggerFrame]:
    """The frames with the concrete `values` of one run back where `split_locals` took the
    tracers from."""
    values = iter(values)
    local_dicts = [dict(f.locals) for f in frames]
    for fi, name, leaves, treedef, where in holes:
        leaves = list(leaves)
        for i in where:
            leaves[i] = next(values)
        local_dicts[fi][name] = tree_unflatten(treedef, leaves)
    return [replace(f, locals=d) for f, d in zip(frames, local_dicts)]
