"""One grading kernel: start it, run a cell, send the grader's request, interrupt, stop.

Cells go through nbclient's ``NotebookClient.async_execute_cell`` (timeouts, dead-kernel
detection), with a client that keeps no outputs. The grader's own requests (see
:mod:`minijit.grading.channel`) go straight through the kernel client, since nbclient has no
way to send user expressions. Every method reports trouble as an outcome word instead of
raising, so that :mod:`minijit.grading.runner` can decide what to do next.

With ``limits.sandbox`` set, the kernel is started inside :mod:`minijit.grading.sandbox`
(bubblewrap's command line as the kernel command, ZeroMQ over ``ipc`` sockets in the
sandbox's private folder, interrupts as messages), and stopping it kills the sandbox.
"""

from __future__ import annotations

import asyncio
import itertools
import os
import re
import shutil
import subprocess
import sys
import time
from queue import Empty
from typing import Any

# First, before nbclient imports nbformat the slow way (see fast_nbformat).
from .fast_nbformat import nbformat

# isort: split
from jupyter_client.kernelspec import KernelSpec, KernelSpecManager
from jupyter_client.manager import AsyncKernelManager
from nbclient import NotebookClient
from nbclient.exceptions import CellTimeoutError, DeadKernelError

from .limits import Limits
from .sandbox import Command, sandbox_uid, socket_folder, thread_counts

# Counts this process's sandboxed kernel starts (see sandbox.sandbox_uid).
_STARTS = itertools.count()


def first_line(text: str, limit: int = 160) -> str:
    """The first line of an error message, shortened: enough for a gradebook cell."""
    line = text.strip().split("\n", 1)[0]
    return line if len(line) <= limit else line[: limit - 3] + "..."


def sendable(source: str) -> str:
    """``source`` as a kernel message can carry it: each lone surrogate (``"\\udcff"``, which
    JSON and Python allow in a string but UTF-8 cannot encode) written as its escape.

    jupyter_client encodes messages as UTF-8 (surrogateescape: U+DC80..U+DCFF become raw
    bytes the kernel decodes as U+FFFD, the others fail to encode at all). Inside a string
    literal, where such a character can stand in code that runs, the escape means exactly
    the same character; in a comment it changes nothing; a raw string gets the escape's text.
    """
    return _SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", source)


_SURROGATE = re.compile("[\ud800-\udfff]")


KERNEL_ARGS = ["-m", "ipykernel_launcher", "-f", "{connection_file}",
               "--HistoryManager.hist_file=:memory:",
               # Nobody reads the tracebacks, and IPython's coloured, contextual ones take a
               # second to render for a deep minijit error: keep only the last line.
               "--InteractiveShell.xmode=Minimal"]


def kernel_spec(sandboxed: Command | None = None) -> KernelSpec:
    """Always the grader's own interpreter, whatever ``python3`` kernelspec is installed.

    A user's ``python3`` kernelspec may point at another environment (without minijit, or
    with a different version); grading must not depend on it. The history goes to memory so
    that parallel kernels do not fight over IPython's sqlite file. In a sandbox, interrupts
    travel as messages: a signal would reach bubblewrap, not the kernel in its own session.
    """
    return KernelSpec(
        argv=sandboxed.argv if sandboxed else [sys.executable, *KERNEL_ARGS],
        display_name="minijit grader", language="python",
        interrupt_mode="message" if sandboxed else "signal", metadata={})


class _SandboxedManager(AsyncKernelManager):
    """Writes the connection file for the sandbox's uid: it lies in the kernel's private
    socket folder, readable by that uid only (0600, as jupyter_client writes it)."""

    owner: int | None = None

    def write_connection_file(self, **kwargs: Any) -> None:
        super().write_connection_file(**kwargs)
        if self.owner is not None:
            os.chown(self.connection_file, self.owner, self.owner)


class Kernel:
    """A kernel plus an nbclient NotebookClient that runs cells on it."""

    def __init__(self, limits: Limits, cwd: str, n_cells: int) -> None:
        self.limits, self.cwd, self.n_cells = limits, cwd, n_cells
        self.km: Any = None
        self.client: Any = None
        self.sockets: str | None = None  # the sandbox's socket folder, removed by stop()

    async def start(self, deadline: float) -> None:
        """Start the kernel, and once more if that fails (a kernel that cannot start is
        the machine's trouble, not the notebook's); raises the second failure."""
        try:
            await self._start(deadline)
        except Exception:  # noqa: BLE001 - retried once, then raised
            await self.stop()
            if deadline - time.monotonic() < 1:
                raise
            await self._start(deadline)

    async def _start(self, deadline: float) -> None:
        sandbox = self.limits.sandbox
        command = None
        kwargs: dict[str, Any] = {"cwd": self.cwd, "env": dict(
            os.environ, **thread_counts(), MINIJIT_GRADING="1",
            PYDEVD_DISABLE_FILE_VALIDATION="1")}
        manager: dict[str, Any] = {}
        if sandbox is not None:
            uid = sandbox_uid(next(_STARTS))
            self.sockets = socket_folder(uid, sandbox.sockets_in)
            command = Command(KERNEL_ARGS, self.sockets, sandbox, uid)
            kwargs = command.popen_kwargs()
            manager = {"transport": "ipc", "ip": f"{self.sockets}/k",
                       "connection_file": f"{self.sockets}/kernel.json"}
        spec = kernel_spec(command)

        class _Specs(KernelSpecManager):
            def get_kernel_spec(self, kernel_name: str) -> Any:
                return spec

        self.km = _SandboxedManager(kernel_name="python3", kernel_spec_manager=_Specs(),
                                    **manager)
        if sandbox is not None:
            self.km.owner = uid
        # The kernel's own stdout/stderr (C-level prints, warnings) must not reach the
        # grader's terminal; what the notebook prints travels over iopub and is dropped.
        await self.km.start_kernel(stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                   **kwargs)
        nb = nbformat.v4.new_notebook(
            cells=[nbformat.v4.new_code_cell("") for _ in range(self.n_cells)])
        self.client = _QuietClient(nb, km=self.km, allow_errors=True,
                                   interrupt_on_timeout=False)
        self.client.startup_timeout = max(1, int(min(self.limits.startup_timeout,
                                                     deadline - time.monotonic())))
        await self.client.async_start_new_kernel_client()

    async def run_cell(self, index: int, source: str, timeout: float) -> tuple[str, str]:
        """``(outcome, detail)``; outcome is ok / error / not_attempted / timeout / died /
        exit (the cell called ``exit()``) / broken (the kernel's messages are unreadable)."""
        cell = self.client.nb.cells[index]
        cell.source = sendable(source)
        self.client.timeout = max(1, int(timeout + 0.999))
        self.client.last_reply = None
        try:
            await self.client.async_execute_cell(cell, index, execution_count=index + 1)
        except CellTimeoutError:
            return "timeout", ""
        except DeadKernelError:
            return "died", ""
        except Exception as exc:  # noqa: BLE001 - e.g. the notebook patched json in the kernel
            return "broken", f"{type(exc).__name__}: {exc}"
        reply = (self.client.last_reply or {}).get("content", {})
        # IPython's exit() does not fail the cell: it asks the kernel to shut down once the
        # reply is sent, so the kernel would die during some *later* cell.
        for payload in reply.get("payload") or []:
            if payload.get("source") == "ask_exit" and not payload.get("keepkernel"):
                return "exit", ""
        if reply.get("status") == "error":
            ename, evalue = reply.get("ename", "?"), first_line(str(reply.get("evalue", "")))
            if ename == "NotImplementedError":
                return "not_attempted", evalue
            return "error", f"{ename}: {evalue}".rstrip(": ")
        return "ok", ""

    async def request(self, user_expressions: dict[str, str], timeout: float
                      ) -> dict[str, Any] | str:
        """Send an empty execute_request with user expressions; the reply content, or
        ``"timeout"`` / ``"died"`` / ``"broken"``."""
        kc = self.client.kc
        deadline = time.monotonic() + timeout
        try:
            msg_id = kc.execute("", silent=True, store_history=False,
                                user_expressions=user_expressions, stop_on_error=False)
            while True:
                left = deadline - time.monotonic()
                if left <= 0:
                    return "timeout"
                try:
                    msg = await kc.get_shell_msg(timeout=min(0.5, left))
                except Empty:
                    if not await self.km.is_alive():
                        return "died"
                    continue
                if msg.get("parent_header", {}).get("msg_id") == msg_id:
                    return msg["content"]
        except Exception:  # noqa: BLE001 - unreadable messages: the kernel is unusable
            return "broken"

    async def interrupt_and_settle(self) -> bool:
        """Interrupt the kernel; True when it answers a request afterwards."""
        cancel_stray_tasks()
        try:
            if not await self.km.is_alive():
                return False
            await self.km.interrupt_kernel()
        except Exception:  # noqa: BLE001 - a kernel that cannot be interrupted is stuck
            return False
        reply = await self.request({}, self.limits.settle_timeout)
        return isinstance(reply, dict)

    async def stop(self) -> None:
        cancel_stray_tasks()
        try:
            if self.client is not None and self.client.kc is not None:
                self.client.kc.stop_channels()
        except Exception:  # noqa: BLE001 - best effort: the process is killed next
            pass
        try:
            if self.km is not None and self.km.has_kernel:
                await self.km.shutdown_kernel(now=True)
        except Exception:  # noqa: BLE001
            pass
        try:
            if self.km is not None:
                await self.km.cleanup_resources()
        except Exception:  # noqa: BLE001
            pass
        # Killing bubblewrap took the whole sandbox with it (its PID namespace ends with
        # its first process, and --die-with-parent ends that one).
        if self.sockets is not None:
            shutil.rmtree(self.sockets, ignore_errors=True)
            self.sockets = None
        self.km = self.client = None


class _QuietClient(NotebookClient):
    """Keeps only the execute reply: outputs are never needed, and a notebook that prints
    forever must not fill the grader's memory."""

    last_reply: Any = None

    def output(self, outs, msg, display_id, cell_index):  # noqa: ANN001
        return None

    def handle_comm_msg(self, outs, msg, cell_index):  # noqa: ANN001
        return None

    async def _check_raise_for_error(self, cell, cell_index, exec_reply):  # noqa: ANN001
        self.last_reply = exec_reply


def cancel_stray_tasks() -> None:
    """Cancel nbclient's leftover pollers (after a timeout they keep reading iopub and
    would steal the next cell's messages). Each submission owns its event loop."""
    current = asyncio.current_task()
    for task in asyncio.all_tasks():
        if task is not current:
            task.cancel()
