"""Running the grader's coroutines from any thread.

`asyncio.run` refuses to start while the calling thread already runs an event loop: in a
notebook cell (an instructor calling the grader's Python API there), or next to Playwright's
sync API. The runner then runs its coroutine in a thread of its own, which has no loop.
"""

from __future__ import annotations

import asyncio
import threading


def run_to_the_end(make_coroutine) -> None:
    """`asyncio.run(make_coroutine())`, in a new thread if this one runs an event loop; an
    exception the coroutine raised is raised here either way."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        asyncio.run(make_coroutine())
        return
    failed: list[BaseException] = []

    def target():
        try:
            asyncio.run(make_coroutine())
        except BaseException as exc:  # noqa: BLE001 - raised again in the caller's thread
            failed.append(exc)

    thread = threading.Thread(target=target, name="minijit-grading-run")
    thread.start()
    thread.join()
    if failed:
        raise failed[0]
