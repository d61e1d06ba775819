"""Drive a real JupyterLab in headless Chromium: the server, the browser, and one open notebook.

`LabServer` starts JupyterLab from this interpreter's environment on a free loopback port, with
its own temporary config, data, runtime, settings and workspace folders, serving a temporary
copy of the course (so no output, checkpoint or workspace is written into the repository).

`LabNotebook` opens one notebook the way a learner does (its `/lab/.../tree/<path>` URL), waits
for the kernel, runs every cell, and reads back what the page shows through JupyterLab's own
models (`window.jupyterapp`, see lab.js): error outputs, also those inside widgets, widgets
that failed to render, images, and controls to move.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote

import nbformat

REPO = Path(__file__).resolve().parents[2]

CHROMIUM = Path(os.environ.get("MINIJIT_CHROMIUM", "/usr/bin/chromium"))
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
]

# Every wait in this suite scales with MINIJIT_BROWSER_TIMEOUT_SCALE (default 1): a loaded
# 2-core machine is slow, and a wait-for-condition returns as soon as the condition holds.
SCALE = float(os.environ.get("MINIJIT_BROWSER_TIMEOUT_SCALE", "1") or 1)


def seconds(s: float) -> float:
    return s * SCALE


def ms(s: float) -> float:
    return s * SCALE * 1000


SERVER_START_S = 120
OPEN_S = 120  # page load, notebook model, kernel start
RUN_ALL_S = 600  # one chapter's cells, all of them
SETTLE_S = 60  # widgets and images rendering after the last cell finished
QUIET_MS = 750  # no DOM change for this long means "rendered"
INTERACT_S = 120  # a moved slider's callback finishing
INTERACT_MIN_S = 3  # ... and no output change this long after the move: the control is inert
SCREENSHOT_MAX_PX = 40000  # taller notebooks are cut off at the bottom of the screenshot

LAB_SETTINGS = {
    # Every cell in the DOM, so that every output can be checked and screenshotted.
    "@jupyterlab/notebook-extension/tracker": {"windowingMode": "none", "scrollPastEnd": False},
    # No news, no update check: nothing outside loopback is reachable, and no toast on top.
    "@jupyterlab/apputils-extension/notification": {"fetchNews": "false", "checkForUpdates": False},
    "@jupyterlab/extensionmanager-extension/plugin": {"enabled": False},
    # The temporary copy is thrown away: no saving while the tests run.
    "@jupyterlab/docmanager-extension/plugin": {"autosave": False},
}


def write_lab_settings(settings: Path) -> None:
    """`LAB_SETTINGS` as JupyterLab's user settings in `settings` (its user_settings_dir)."""
    for plugin, values in LAB_SETTINGS.items():
        f = settings / f"{plugin}.jupyterlab-settings"
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_text(json.dumps(values))


def chromium_available() -> bool:
    return CHROMIUM.is_file() and os.access(CHROMIUM, os.X_OK)


def chromium_missing_reason() -> str:
    return (
        f"browser tests skipped: Chromium not found at {CHROMIUM} "
        "(install it with `apt-get install -y --no-install-recommends chromium`, "
        "or point MINIJIT_CHROMIUM at a Chromium binary)"
    )


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def ensure_kernelspec(path: Path) -> None:
    """Give a notebook without kernel metadata the course kernel, so no dialog asks for one."""
    try:
        nb = nbformat.read(path, as_version=4)
    except Exception:  # noqa: BLE001 - unreadable: JupyterLab shows that, and the test fails
        return
    if "kernelspec" not in nb.metadata:
        nb.metadata["kernelspec"] = {
            "name": "python3",
            "display_name": "Python 3 (ipykernel)",
            "language": "python",
        }
        nbformat.write(nb, path)


class LabServer:
    """A JupyterLab server on 127.0.0.1, isolated in `base` (a temporary directory)."""

    def __init__(self, base: Path, sources: list[Path] | None = None):
        self.base = base
        self.root = base / "root"
        self.log_path = base / "jupyterlab.log"
        self.proc: subprocess.Popen | None = None
        self.port = 0
        self.root.mkdir(parents=True, exist_ok=True)
        for src in sources or []:
            if src.is_dir():
                shutil.copytree(
                    src,
                    self.root / src.name,
                    ignore=shutil.ignore_patterns(".ipynb_checkpoints", "__pycache__"),
                )
                for nb in (self.root / src.name).rglob("*.ipynb"):
                    ensure_kernelspec(nb)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def add_notebook(self, nb: nbformat.NotebookNode | Path, rel_path: str) -> str:
        """Put a notebook (a node, or a file to copy) under the served root; return its path."""
        dest = self.root / rel_path
        dest.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(nb, Path):
            shutil.copyfile(nb, dest)
        else:
            nbformat.write(nb, dest)
        ensure_kernelspec(dest)
        return rel_path

    def add_kernelspec(self, name: str, env: dict[str, str]) -> str:
        """A kernel like the course's, with extra environment variables; returns its name."""
        spec = {
            "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
            "display_name": f"Python 3 ({name})",
            "language": "python",
            "env": env,
        }
        d = self.base / "data" / "kernels" / name
        d.mkdir(parents=True, exist_ok=True)
        (d / "kernel.json").write_text(json.dumps(spec))
        return name

    def _env(self) -> dict[str, str]:
        env = dict(os.environ)
        for var in ("JUPYTER_PATH", "JUPYTER_CONFIG_PATH", "JUPYTERLAB_DIR", "JUPYTER_TOKEN"):
            env.pop(var, None)
        dirs = {
            "JUPYTER_CONFIG_DIR": self.base / "config",
            "JUPYTER_DATA_DIR": self.base / "data",
            "JUPYTER_RUNTIME_DIR": self.base / "runtime",
            "IPYTHONDIR": self.base / "ipython",
            "MPLCONFIGDIR": self.base / "matplotlib",
        }
        for name, d in dirs.items():
            d.mkdir(parents=True, exist_ok=True)
            env[name] = str(d)
        env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
        env["PYTHONUNBUFFERED"] = "1"
        env.pop("MPLBACKEND", None)  # the kernel's default is the inline backend
        return env

    def _write_config(self) -> None:
        config = self.base / "config"
        config.mkdir(parents=True, exist_ok=True)
        server_config = {
            # Language server and terminals are not part of the course: don't start them.
            "ServerApp": {
                "jpserver_extensions": {"jupyter_lsp": False, "jupyter_server_terminals": False}
            }
        }
        (config / "jupyter_server_config.json").write_text(json.dumps(server_config))
        write_lab_settings(self.base / "user-settings")

    def start(self) -> LabServer:
        self._write_config()
        last_error = ""
        for _attempt in range(3):  # a free port can be taken between choosing it and binding it
            self.port = free_port()
            cmd = [
                sys.executable,
                "-m",
                "jupyterlab",
                "--no-browser",
                "--ServerApp.ip=127.0.0.1",
                f"--ServerApp.port={self.port}",
                "--ServerApp.port_retries=0",
                f"--ServerApp.root_dir={self.root}",
                "--IdentityProvider.token=",
                "--PasswordIdentityProvider.hashed_password=",
                "--LabApp.expose_app_in_browser=True",
                "--LabApp.news_url=None",
                "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
                f"--LabApp.user_settings_dir={self.base / 'user-settings'}",
                f"--LabApp.workspaces_dir={self.base / 'workspaces'}",
                "--LabApp.extension_manager=readonly",
            ]
            if hasattr(os, "geteuid") and os.geteuid() == 0:
                cmd.append("--allow-root")  # CI and these machines run as root
            log = open(self.log_path, "ab")  # noqa: SIM115 - closed in stop()
            self._log = log
            self.proc = subprocess.Popen(
                cmd,
                cwd=self.root,
                env=self._env(),
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
            deadline = time.monotonic() + seconds(SERVER_START_S)
            while time.monotonic() < deadline:
                if self.proc.poll() is not None:
                    last_error = f"JupyterLab exited with {self.proc.returncode}"
                    if "already in use" not in self.log_tail(10):
                        raise RuntimeError(f"{last_error}; log:\n{self.log_tail()}")
                    break
                try:
                    with urllib.request.urlopen(f"{self.url}/api/status", timeout=5) as r:
                        if r.status == 200:
                            return self
                except (urllib.error.URLError, OSError) as e:
                    last_error = str(e)
                time.sleep(0.25)
            else:
                self.stop()
                raise RuntimeError(
                    f"JupyterLab did not answer /api/status in {seconds(SERVER_START_S):.0f} s "
                    f"({last_error}); log:\n{self.log_tail()}"
                )
            self.stop()
        raise RuntimeError(f"JupyterLab did not start ({last_error}); log:\n{self.log_tail()}")

    def log_tail(self, n: int = 60) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-n:])
        except OSError:
            return "(no log)"

    def api(self, method: str, path: str) -> object:
        req = urllib.request.Request(f"{self.url}{path}", method=method)
        with urllib.request.urlopen(req, timeout=30) as r:
            body = r.read()
        return json.loads(body) if body else None

    def shutdown_kernels(self) -> None:
        """End every kernel session, so one notebook's kernel never competes with the next."""
        try:
            for s in self.api("GET", "/api/sessions") or []:
                self.api("DELETE", f"/api/sessions/{s['id']}")
        except (urllib.error.URLError, OSError):
            pass

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            try:
                self.shutdown_kernels()
            finally:
                os.killpg(self.proc.pid, signal.SIGTERM)
                try:
                    self.proc.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    os.killpg(self.proc.pid, signal.SIGKILL)
                    self.proc.wait(timeout=20)
        if getattr(self, "_log", None):
            self._log.close()
            self._log = None


def launch_browser(playwright):
    return playwright.chromium.launch(
        executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, headless=True
    )


@dataclass
class Report:
    """What one notebook showed after running all its cells."""

    cells: list[dict]
    controls: list[dict]
    problems: list[str] = field(default_factory=list)

    @property
    def widget_views(self) -> int:
        return sum(c["widgetViews"] for c in self.cells)

    @property
    def images(self) -> list[dict]:
        return [img for c in self.cells for img in c["images"]]


class LabNotebook:
    """One notebook open in a JupyterLab page."""

    JS = (Path(__file__).with_name("lab.js")).read_text()

    def __init__(self, page, server: LabServer, path: str):
        self.page = page
        self.server = server
        self.path = path
        self.console: list[str] = []
        page.on("console", self._on_console)
        page.on("pageerror", lambda e: self.console.append(f"pageerror: {e}"))

    def _on_console(self, msg) -> None:
        if msg.type in ("error", "warning"):
            self.console.append(f"{msg.type}: {msg.text}"[:500])

    # ----------------------------------------------------------------- opening and running

    def open(self) -> LabNotebook:
        page = self.page
        page.add_init_script(script=self.JS)
        workspace = "t" + uuid.uuid4().hex[:10]  # a fresh workspace: nothing restored from before
        page.goto(
            f"{self.server.url}/lab/workspaces/{workspace}/tree/{quote(self.path)}",
            wait_until="domcontentloaded",
            timeout=ms(OPEN_S),
        )
        return self.wait_open()

    def wait_open(self, timeout_s: float = OPEN_S) -> LabNotebook:
        """Wait until the notebook is open in the page (opened however: URL, file browser, a
        link) and its kernel idle. The page needs `JS` (`page.add_init_script`) and a server
        started with `expose_app_in_browser`."""
        deadline = time.monotonic() + seconds(timeout_s)
        self.page.wait_for_function(
            "p => window.__minijit && window.__minijit.ready(p)",
            arg=self.path,
            timeout=ms(timeout_s),
        )
        self.wait_kernel_idle(max(1.0, deadline - time.monotonic()))
        return self

    def kernel_status(self) -> str:
        return self.page.evaluate("p => window.__minijit.kernelStatus(p)", self.path)

    def wait_kernel_idle(self, timeout_s: float = OPEN_S) -> None:
        deadline = time.monotonic() + seconds(timeout_s)
        status = ""
        while time.monotonic() < deadline:
            status = self.kernel_status()
            if status == "idle":
                return
            if status == "no-kernel":
                self.page.evaluate("() => window.__minijit.acceptKernelDialog()")
            self.page.wait_for_timeout(200)
        raise TimeoutError(f"{self.path}: kernel not idle after {timeout_s:.0f} s (last: {status})")

    def run_command(self, command: str, timeout_s: float = RUN_ALL_S) -> None:
        """Run a notebook command (it resolves when its cells finished), then let it render."""
        self.page.evaluate(
            "([p, c, t]) => window.__minijit.runCommand(p, c, t)",
            [self.path, command, ms(timeout_s)],
        )
        self.wait_settled()

    def run_all(self, timeout_s: float = RUN_ALL_S) -> None:
        # The command, not the Run menu: the menu item races the kernel status.
        self.run_command("notebook:run-all-cells", timeout_s)

    def activate_cell(self, index: int) -> None:
        self.page.evaluate("([p, i]) => window.__minijit.activateCell(p, i)", [self.path, index])

    def cell(self, index: int) -> dict:
        return self.page.evaluate("([p, i]) => window.__minijit.cell(p, i)", [self.path, index])

    def run_with_shift_enter(self, index: int) -> dict:
        """Select cell `index` by clicking its prompt, press Shift-Enter, wait for the result."""
        page = self.page
        before = self.cell(index)["executionCount"]
        self.activate_cell(index)
        page.locator(f'[data-minijit-cell="{index}"] .jp-InputPrompt').first.click()
        page.keyboard.press("Shift+Enter")
        page.wait_for_function(
            "([p, i, b]) => { const c = window.__minijit.cell(p, i);"
            " return c.executionCount !== null && c.executionCount !== b"
            " && window.__minijit.kernelStatus(p) === 'idle'; }",
            arg=[self.path, index, before],
            timeout=ms(RUN_ALL_S),
            polling=100,
        )
        self.wait_settled()
        return self.cell(index)

    def feedback(self, index: int) -> dict:
        """The rendered feedback of a check(...) cell: text, table rows, error outputs."""
        return self.page.evaluate("([p, i]) => window.__minijit.feedback(p, i)", [self.path, index])

    def wait_settled(self, timeout_s: float = SETTLE_S) -> None:
        """Wait until the kernel is idle, images are loaded and the DOM stopped changing."""
        self.page.evaluate("p => window.__minijit.startMutationWatch(p)", self.path)
        self.page.wait_for_function(
            "([p, q]) => window.__minijit.quietFor(p, q)",
            arg=[self.path, QUIET_MS],
            timeout=ms(timeout_s),
            polling=100,
        )

    # ----------------------------------------------------------------- reading what is shown

    def report(self) -> Report:
        cells = self.page.evaluate("p => window.__minijit.report(p)", self.path)
        controls = self.page.evaluate("p => window.__minijit.controls(p)", self.path)
        return Report(cells=cells, controls=controls, problems=find_problems(cells, controls))

    def snapshot(self) -> str:
        return self.page.evaluate("p => window.__minijit.snapshot(p)", self.path)

    # ----------------------------------------------------------------- moving widgets

    def _actions(self, kind: str, target) -> list[tuple[str, object]]:
        """What a learner does with a control, as (label, action) pairs, gentlest first."""
        if kind == "widget-slider":

            def key(name):
                def press():
                    target.focus(timeout=ms(10))
                    target.press(name, timeout=ms(10))

                return press

            return [("ArrowRight", key("ArrowRight")), ("End", key("End"))]
        if kind == "widget-dropdown":
            values = target.evaluate("s => Array.from(s.options).map(o => o.value)")
            current = target.input_value(timeout=ms(10))
            others = [v for v in values if v != current]
            picks = others[:1] + others[-1:] if len(others) > 1 else others
            return [
                (f"select {v!r}", lambda v=v: target.select_option(v, timeout=ms(10)))
                for v in picks
            ]
        return [("click", lambda: target.click(timeout=ms(10)))]

    def try_control(self, index: int, control: dict, timeout_s: float = INTERACT_S) -> str | None:
        """Move control `index` (controls() order) like a learner: press keys on a slider's
        handle, pick another option of a dropdown, click a button. Return what changed an
        output or plot, or None when nothing a learner sees changed."""
        page = self.page
        before = self.snapshot()
        if not page.evaluate("([p, n]) => window.__minijit.markControl(p, n)", [self.path, index]):
            return None
        target = page.locator("[data-minijit-target]")
        for label, act in self._actions(control["kind"], target):
            self.page.evaluate("p => window.__minijit.startMutationWatch(p)", self.path)
            since = page.evaluate("() => window.__minijit.now()")
            act()
            page.wait_for_function(
                "([p, b, s, m, q]) => window.__minijit.changedOrDone(p, b, s, m, q)",
                arg=[self.path, before, since, ms(INTERACT_MIN_S), QUIET_MS],
                timeout=ms(timeout_s),
                polling=200,
            )
            if self.snapshot() != before:
                self.wait_settled()
                return f"{control['kind']} in cell {control['cell']} ({label})"
        return None

    def exercise_controls(self, max_tries: int = 6) -> str | None:
        """Move controls until one visibly changes an output; say which one (None: none did)."""
        controls = self.page.evaluate("p => window.__minijit.controls(p)", self.path)
        candidates = [
            (i, c)
            for i, c in enumerate(controls)
            if c["kind"] in MOVABLE and c["visible"] and not c["disabled"]
        ]
        # Sliders first (interact's), then dropdowns (interact's too), then buttons
        # (interact_manual's "Run Interact", on_click callbacks, which may do more work).
        candidates.sort(key=lambda ic: MOVABLE.index(ic[1]["kind"]))
        for i, c in candidates[:max_tries]:
            changed = self.try_control(i, c)
            if changed:
                return changed
        return None

    # ----------------------------------------------------------------- pictures and cleanup

    def screenshot(self, name: str, directory: Path) -> Path:
        """A PNG of the whole notebook: the viewport grows to the notebook's height first."""
        directory.mkdir(parents=True, exist_ok=True)
        out = directory / f"{name}.png"
        page = self.page
        size = page.viewport_size or {"width": 1280, "height": 900}
        try:
            s = page.evaluate("p => window.__minijit.scrollerSize(p)", self.path)
            chrome = size["height"] - s["clientHeight"]  # menus, toolbar, status bar
            full = int(min(max(size["height"], chrome + s["scrollHeight"]), SCREENSHOT_MAX_PX))
            page.set_viewport_size({"width": size["width"], "height": full})
            page.wait_for_function(
                "([p, h]) => { const s = window.__minijit.scrollerSize(p);"
                " return s.clientHeight >= Math.min(s.scrollHeight, h); }",
                arg=[self.path, full - chrome],
                timeout=ms(30),
            )
            page.screenshot(path=str(out), full_page=True, timeout=ms(120))
        finally:
            page.set_viewport_size(size)
        return out


def find_problems(cells: list[dict], controls: list[dict]) -> list[str]:
    """Everything a learner would see as broken, one line each (an empty list: all good)."""
    problems: list[str] = []
    for c in cells:
        where = f"cell {c['index']} ({c['source']!r})"
        exempt = "raises-exception" in c["tags"]
        if not exempt:
            for e in c["errors"]:
                last = e["traceback"].strip().splitlines()[-1:] or [""]
                problems.append(
                    f"{where}: error in {e['where']}: {e['ename']}: {e['evalue']} | {last[0]}"
                )
        for f in c["widgetFailures"]:
            problems.append(f"{where}: widget failed to render: {f}")
        for fig in c["figuresAsText"]:
            problems.append(
                f"{where}: a matplotlib figure shows as text {fig!r}, not as an image "
                "(a non-inline backend, e.g. MPLBACKEND=Agg in the kernel's environment?)"
            )
        for img in c["images"]:
            if not img["complete"] or img["naturalWidth"] <= 0:
                problems.append(f"{where}: an output image did not render ({img})")
    for ctl in controls:
        if not ctl["visible"] and not ctl["hidden"]:
            problems.append(
                f"cell {ctl['cell']}: control {ctl['kind']} {ctl['text']!r} is in the page "
                "but has no size (not rendered)"
            )
    return problems


@dataclass
class Checked:
    """The outcome of `check_notebook`: problems (empty when all is well) and timings."""

    path: str
    problems: list[str]
    report: Report
    interaction: str | None
    screenshot: Path | None
    timings: dict[str, float]
    console: list[str]

    def summary(self) -> str:
        t = ", ".join(f"{k} {v:.1f} s" for k, v in self.timings.items())
        r = self.report
        shot = f"; screenshot {self.screenshot}" if self.screenshot else ""
        return (
            f"{self.path}: {len(r.cells)} cells, {r.widget_views} widget views, "
            f"{len(r.controls)} controls, {len(r.images)} images; "
            f"interaction: {self.interaction or 'none'}; {t}{shot}"
        )

    def failure_message(self) -> str:
        lines = [f"{self.path} is broken in JupyterLab:"]
        lines += [f"  - {p}" for p in self.problems]
        if self.screenshot:
            lines.append(f"  screenshot: {self.screenshot}")
        widget_console = [c for c in self.console if "widget" in c.lower()]
        if widget_console:
            lines.append("  browser console (widgets):")
            lines += [f"    {c}" for c in widget_console[:5]]
        return "\n".join(lines)


def check_notebook(
    page,
    server: LabServer,
    path: str,
    screenshot_name: str | None = None,
    screenshot_dir: Path | None = None,
) -> Checked:
    """Open `path` in JupyterLab, run all cells, move a control, and list what is broken.

    Broken means: an error output (in a cell or inside a widget, e.g. an `interact` callback)
    in a cell not tagged `raises-exception`; a widget that did not render; an output image that
    did not load; a control with no size; an exception thrown by the page's JavaScript; or, in
    a notebook with sliders or buttons, none of them changing any output when moved or
    pressed.
    """
    timings: dict[str, float] = {}
    start = time.monotonic()
    nb = LabNotebook(page, server, path).open()
    timings["open"] = time.monotonic() - start
    t = time.monotonic()
    nb.run_all()
    timings["run"] = time.monotonic() - t
    first = nb.report()
    problems = list(first.problems)
    not_run = [
        c["index"]
        for c in first.cells
        if c["type"] == "code" and not c["empty"] and c["executionCount"] is None
    ]
    if not_run and not problems:
        problems.append(f"cells {not_run} did not run (run-all stopped early?)")
    interaction = None
    t = time.monotonic()
    movable = [c for c in first.controls if c["kind"] in MOVABLE and c["visible"]]
    if movable:
        interaction = nb.exercise_controls()
        if interaction is None:
            problems.append(
                f"none of the sliders, dropdowns or buttons tried ({len(movable)} found) "
                "changed any output or plot when moved, changed or pressed"
            )
    timings["interact"] = time.monotonic() - t
    final = nb.report()
    for p in final.problems:  # errors raised by the callbacks of the controls just moved
        if p not in problems:
            problems.append(p)
    # an exception thrown by the page's JavaScript (a widget's view, a JavaScript output)
    problems += [f"JavaScript error in the page: {line.removeprefix('pageerror: ')}"
                 for line in nb.console if line.startswith("pageerror:")]
    shot = None
    if screenshot_name and screenshot_dir is not None:
        t = time.monotonic()
        shot = nb.screenshot(screenshot_name, screenshot_dir)
        timings["screenshot"] = time.monotonic() - t
    timings["total"] = time.monotonic() - start
    return Checked(path, problems, final, interaction, shot, timings, nb.console)


# The controls moved to see an output change, in the order they are tried.
MOVABLE = ("widget-slider", "widget-dropdown", "widget-button", "widget-toggle-button")


# ----------------------------------------------------------------- exercise notebooks

HEADER_RE = re.compile(r"^\s*#\s*EXERCISE\s+(ex\d\d_[a-z0-9_]+)\b")
CHECK_RE = re.compile(r"""^check\(\s*(["'])(?P<id>[A-Za-z0-9_]+)\1\s*\)\s*;?$""")
MARKERS = ("### BEGIN SOLUTION", "### END SOLUTION")


@dataclass
class Exercise:
    notebook: Path
    exercise_id: str
    exercise_cell: int
    check_cell: int
    answer: str | None  # the learner's answer, from the solution notebook (None: none found)


def _answer(solutions: Path, name: str, exercise_id: str) -> str | None:
    path = solutions / name
    if not path.is_file():
        return None
    for cell in nbformat.read(path, as_version=4).cells:
        m = HEADER_RE.match(cell.source.lstrip("\n").split("\n", 1)[0])
        if cell.cell_type == "code" and m and m.group(1) == exercise_id:
            return "\n".join(
                line for line in cell.source.split("\n") if line.strip() not in MARKERS
            )
    return None


def find_exercise(exercises: Path, solutions: Path, pattern: str = "*.ipynb") -> Exercise | None:
    """The first exercise (in file order, among the notebooks `pattern` matches) whose next
    code cell is its check(...) call."""
    for path in sorted(exercises.glob(pattern)):
        cells = nbformat.read(path, as_version=4).cells
        code = [i for i, c in enumerate(cells) if c.cell_type == "code"]
        for before, after in zip(code, code[1:]):
            m = CHECK_RE.match(cells[after].source.strip())
            header = HEADER_RE.match(cells[before].source.lstrip("\n").split("\n", 1)[0])
            if m and header and header.group(1) == m["id"]:
                answer = _answer(solutions, path.name, m["id"])
                return Exercise(path, m["id"], before, after, answer)
    return None
