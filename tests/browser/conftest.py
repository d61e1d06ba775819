"""Fixtures for the browser tests: one JupyterLab server and one Chromium per test process.

Under pytest-xdist every worker is its own process, so every worker gets its own server (on
its own free loopback port, in its own temporary directories) and its own browser; nothing is
shared between workers. Each test gets a fresh browser context (no cookies, no storage) and a
fresh JupyterLab workspace, and its kernels are shut down when it ends.

Chromium comes from the system (Debian's `chromium` package at /usr/bin/chromium; Playwright's
own browser download cannot work here). Without it every browser test is skipped with the
reason, never failed.

Screenshots go to pytest's temporary folder of the test process (`<basetemp>/screenshots`,
kept for the last three runs), or to `$MINIJIT_SCREENSHOTS` when it is set: never into the
checkout unless asked.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from . import lab

CHAPTERS = lab.REPO / "chapters"
EXERCISES = lab.REPO / "exercises"


@pytest.fixture(scope="session")
def lab_server(tmp_path_factory):
    """A JupyterLab server serving a temporary copy of chapters/ and exercises/."""
    if not lab.chromium_available():
        pytest.skip(lab.chromium_missing_reason())
    base = tmp_path_factory.mktemp("jupyterlab")
    server = lab.LabServer(base, sources=[CHAPTERS, EXERCISES])
    server.start()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def screenshot_dir(tmp_path_factory) -> Path:
    """Where this test process writes screenshots."""
    if os.environ.get("MINIJIT_SCREENSHOTS"):
        return Path(os.environ["MINIJIT_SCREENSHOTS"]).resolve()
    return tmp_path_factory.getbasetemp() / "screenshots"


@pytest.fixture(scope="module")
def browser():
    """One headless Chromium per test module. Not per test process: while Playwright's sync
    API is open, its event loop counts as running in this thread, so any later test in the
    same xdist worker that calls `asyncio.run` (the grader's runner does) would fail."""
    if not lab.chromium_available():
        pytest.skip(lab.chromium_missing_reason())
    sync_api = pytest.importorskip(
        "playwright.sync_api", reason="browser tests skipped: the playwright package is missing"
    )
    sync_playwright = sync_api.sync_playwright

    with sync_playwright() as playwright:
        chromium = lab.launch_browser(playwright)
        yield chromium
        chromium.close()


@pytest.fixture
def page(browser, lab_server):
    """A page in a fresh browser context; its notebook kernels are shut down afterwards."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    context.set_default_timeout(lab.ms(30))
    pg = context.new_page()
    yield pg
    context.close()
    lab_server.shutdown_kernels()


def pytest_terminal_summary(terminalreporter):
    """One line per notebook checked in the browser: what was found and how long it took."""
    lines = []
    for reports in terminalreporter.stats.values():
        for report in reports:
            if getattr(report, "when", None) != "call":
                continue
            for name, value in getattr(report, "user_properties", []):
                if name == "browser_summary":
                    lines.append(value)
    if lines:
        terminalreporter.write_sep("-", "browser: notebooks in JupyterLab")
        for line in sorted(lines):
            terminalreporter.write_line(line)
