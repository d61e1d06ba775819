"""`python3 course.py lab` as a learner starts it, not a copy of what it runs.

The test starts course.py itself (`lab --no-browser` on a fresh port, stdin a terminal as in a
shell), reads the URL it prints, and in Chromium: that URL opens chapters/00_welcome.ipynb;
the file browser reaches exercises/ from the root and opens exercises/02_tracing.ipynb, whose
first check(...) cell shows its feedback table; a chapter's `../exercises/...` link opens the
exercise notebook. Every chapter's exercise link points at a file the server has. Then Ctrl-C
twice, as the printed instructions say, and JupyterLab, its kernels and everything course.py
started are gone. A second test stops it with SIGTERM to course.py alone (`kill PID`).

The checkout is left as it was: JupyterLab's per-user folders (config, runtime files, settings,
workspaces) and the notebooks' checkpoints go to a temporary folder, autosave is off and
nothing is saved, and the test compares chapters/ and exercises/ before and after, ignored
files included. It runs only where `course.py lab` would not install anything first (the
`.venv/` that course.py set up is up to date); otherwise it is skipped, saying so.
"""

from __future__ import annotations

import json
import os
import posixpath
import re
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path
from urllib.parse import parse_qs, quote, urlsplit

import nbformat
import pytest
from test_setup_files import import_course, system_python  # course.py, and a bare python3

from . import lab

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("browser")]

COURSE = lab.REPO / "course.py"
FIRST = "chapters/00_welcome.ipynb"
EXERCISE = "02_tracing.ipynb"
LINKING_CHAPTER = "03_the_ir.ipynb"
URL_RE = re.compile(r"https?://\S+/lab/tree/chapters/00_welcome\.ipynb(?:\?\S*)?")
EXERCISE_LINK_RE = re.compile(r"\]\((\.\./exercises/[^)\s]+)\)")
WATCHED = ("chapters", "exercises")  # nothing may appear or change in these
NUL = bytes(1)




def live_processes() -> dict[int, tuple[int, bytes]]:
    """{pid: (process group, command line)} of every process that is not a zombie."""
    found = {}
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            stat = (d / "stat").read_text()
            cmdline = (d / "cmdline").read_bytes()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()  # after "(comm)": state, ppid, pgrp, ...
        if fields[0] != "Z":
            found[int(d.name)] = (int(fields[2]), cmdline)
    return found


def snapshot(root: Path) -> dict[str, bytes]:
    """Every file under the watched folders, ignored ones included, with its contents."""
    files = {}
    for name in WATCHED:
        for path in sorted((root / name).rglob("*")):
            if path.is_file():
                files[str(path.relative_to(root))] = path.read_bytes()
            elif path.is_dir() and not any(path.iterdir()):
                files[str(path.relative_to(root)) + "/"] = b""
    return files


class CourseLab:
    """`python3 course.py lab --no-browser` in a session of its own, its output collected."""

    def __init__(self, base: Path):
        self.base = base
        self.proc: subprocess.Popen | None = None
        self.lines: list[str] = []
        self.url = ""
        self.port = 0
        self._url_seen = threading.Event()
        self._terminal: int | None = None

    # -------------------------------------------------------------------- starting

    def env(self) -> dict[str, str]:
        env = dict(os.environ)
        for var in ("JUPYTER_PATH", "JUPYTER_CONFIG_PATH", "JUPYTERLAB_DIR", "JUPYTER_TOKEN"):
            env.pop(var, None)
        env.pop("MPLBACKEND", None)  # the kernels' default: the inline backend
        dirs = {
            "JUPYTER_CONFIG_DIR": "config",
            "JUPYTER_DATA_DIR": "data",
            "JUPYTER_RUNTIME_DIR": "runtime",
            "JUPYTERLAB_SETTINGS_DIR": "user-settings",
            "JUPYTERLAB_WORKSPACES_DIR": "workspaces",
            "IPYTHONDIR": "ipython",
            "MPLCONFIGDIR": "matplotlib",
        }
        for var, name in dirs.items():
            (self.base / name).mkdir(parents=True, exist_ok=True)
            env[var] = str(self.base / name)
        env["PYTHONUNBUFFERED"] = "1"
        return env

    def write_config(self) -> None:
        # Checkpoints in a folder of the test's own, not in .ipynb_checkpoints/ next to the
        # notebooks (an absolute checkpoint_dir is used as it is).
        server_config = {"FileCheckpoints": {"checkpoint_dir": str(self.base / "checkpoints")}}
        config = self.base / "config"
        config.mkdir(parents=True, exist_ok=True)
        (config / "jupyter_server_config.json").write_text(json.dumps(server_config))
        lab.write_lab_settings(self.base / "user-settings")  # autosave off, no news

    def start(self) -> CourseLab:
        self.write_config()
        for _attempt in range(3):  # a free port can be taken between choosing it and binding it
            self.port = lab.free_port()
            self._start_once()
            deadline = time.monotonic() + lab.seconds(lab.SERVER_START_S)
            while time.monotonic() < deadline and self.proc.poll() is None:
                if self._url_seen.wait(0.2):
                    return self
            if self.proc.poll() is None:
                self.stop_forcefully()
                raise AssertionError(
                    f"course.py lab printed no URL in {lab.seconds(lab.SERVER_START_S):.0f} s:\n"
                    + self.output()
                )
            if "already in use" not in self.output():
                break
        raise AssertionError(f"course.py lab exited with {self.proc.returncode}:\n{self.output()}")

    def _start_once(self) -> None:
        import pty  # POSIX only; the fixture skips elsewhere

        self.lines.clear()
        self._url_seen.clear()
        # stdin is a terminal, as in a shell: Jupyter then handles Ctrl-C as a learner sees it
        # (the first asks to confirm, the second stops it).
        self._terminal, stdin = pty.openpty()
        cmd = [
            system_python(),
            str(COURSE),
            "lab",
            "--no-browser",
            f"--ServerApp.port={self.port}",
            "--ServerApp.port_retries=0",
            "--LabApp.expose_app_in_browser=True",  # lab.js reads JupyterLab's models
        ]
        self.proc = subprocess.Popen(
            cmd,
            cwd=lab.REPO,
            env=self.env(),
            stdin=stdin,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            errors="replace",
            start_new_session=True,
        )
        os.close(stdin)
        threading.Thread(target=self._read, args=(self.proc,), daemon=True).start()

    def _read(self, proc: subprocess.Popen) -> None:
        for line in proc.stdout:
            self.lines.append(line.rstrip("\n"))
            match = URL_RE.search(line)
            if match and line.startswith("[course]"):
                self.url = match.group(0)
                self._url_seen.set()

    def output(self) -> str:
        return "\n".join(self.lines[-80:])

    # -------------------------------------------------------------------- the running server

    @property
    def token(self) -> str:
        return parse_qs(urlsplit(self.url).query).get("token", [""])[0]

    def api(self, method: str, path: str):
        base = self.url.split("/lab/tree/", 1)[0]
        request = urllib.request.Request(base + path, method=method)
        request.add_header("Authorization", f"token {self.token}")
        with urllib.request.urlopen(request, timeout=30) as response:
            body = response.read()
        return json.loads(body) if body else None

    def exists(self, path: str) -> bool:
        try:
            self.api("GET", f"/api/contents/{quote(path)}?content=0")
            return True
        except urllib.error.HTTPError as e:
            if e.code == 404:
                return False
            raise

    def server_pids(self) -> list[int]:
        """The Jupyter servers' pids, from their runtime files (this test's runtime folder)."""
        pids = []
        for info in (self.base / "runtime").glob("jpserver-*.json"):
            try:
                pids.append(json.loads(info.read_text())["pid"])
            except (OSError, ValueError, KeyError):
                pass
        return pids

    def kernel_pids(self) -> dict[str, list[int]]:
        """{kernel id: pids of processes running it} (a kernel's command line names its
        connection file, kernel-<id>.json)."""
        ids = [k["id"] for k in self.api("GET", "/api/kernels")]
        processes = live_processes()
        return {
            kid: [pid for pid, (_g, cmd) in processes.items() if f"kernel-{kid}".encode() in cmd]
            for kid in ids
        }

    def leftovers(self, pids: list[int]) -> list[str]:
        """What still runs of `pids`, and of course.py's process group."""
        processes = live_processes()
        alive = {pid for pid in pids if pid in processes}
        alive |= {pid for pid, (group, _c) in processes.items() if group == self.proc.pid}
        return [f"{pid}: {processes[pid][1].replace(NUL, b' ')[:200]!r}" for pid in alive]

    def wait_gone(self, pids: list[int], timeout_s: float = 30) -> list[str]:
        deadline = time.monotonic() + lab.seconds(timeout_s)
        while self.leftovers(pids) and time.monotonic() < deadline:
            time.sleep(0.2)
        return self.leftovers(pids)

    # -------------------------------------------------------------------- stopping

    def wait_for_line(self, text: str, timeout_s: float = 30) -> None:
        deadline = time.monotonic() + lab.seconds(timeout_s)
        while not any(text in line for line in self.lines):
            if time.monotonic() > deadline or self.proc.poll() is not None:
                raise AssertionError(f"no {text!r} in the output:\n{self.output()}")
            time.sleep(0.1)

    def press_ctrl_c(self) -> None:
        """What Ctrl-C in the terminal does: SIGINT to the foreground process group."""
        os.killpg(self.proc.pid, signal.SIGINT)

    def stop_forcefully(self) -> None:
        """Clean up after a failed test: whatever of the session is left gets SIGKILL."""
        if self.proc is None:
            return
        pids = self.server_pids()
        try:
            pids += [p for ps in self.kernel_pids().values() for p in ps]
        except (OSError, urllib.error.URLError, ValueError):
            pass
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                pass
        for pid in [*pids, *(p for p, (g, _c) in live_processes().items() if g == self.proc.pid)]:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        if self.proc.poll() is None:
            self.proc.wait(timeout=20)
        if self._terminal is not None:
            os.close(self._terminal)
            self._terminal = None


@pytest.fixture
def course_lab(tmp_path):
    if not sys.platform.startswith("linux"):
        pytest.skip("needs Linux (/proc, a pseudo-terminal)")
    course = import_course()
    if not (course.venv_works() and course.up_to_date(course.COURSE_EXTRAS)):
        pytest.skip(
            "`course.py lab` would install packages first: the .venv/ it uses is missing or "
            "not up to date (run `python3 course.py setup`)"
        )
    running = CourseLab(tmp_path)
    yield running
    running.stop_forcefully()


def open_in_file_browser(page, *names: str) -> None:
    """Go to the root in the file browser, then double-click each name in turn."""
    page.locator(".jp-FileBrowser .jp-BreadCrumbs-home").first.click()
    for name in names:
        text = page.locator(".jp-DirListing-itemText", has_text=re.compile(f"^{re.escape(name)}$"))
        item = page.locator(".jp-FileBrowser .jp-DirListing-item", has=text)
        item.first.dblclick(timeout=lab.ms(30))


def current_path(page) -> str:
    return page.evaluate("() => window.jupyterapp.shell.currentWidget?.context?.path ?? ''")


def exercise_links() -> dict[str, list[str]]:
    """{chapter: the exercise paths its markdown links to, relative to the root}."""
    links = {}
    for chapter in sorted((lab.REPO / "chapters").glob("*.ipynb")):
        cells = nbformat.read(chapter, as_version=4).cells
        text = "\n".join(c.source for c in cells if c.cell_type == "markdown")
        found = [posixpath.normpath(f"chapters/{m}") for m in EXERCISE_LINK_RE.findall(text)]
        if found:
            links[f"chapters/{chapter.name}"] = found
    return links


@pytest.mark.browser
@pytest.mark.timeout(lab.seconds(900))
def test_course_lab_opens_the_course(course_lab, browser, screenshot_dir, record_property):
    before = snapshot(lab.REPO)
    started = time.monotonic()
    course_lab.start()
    out = course_lab.output()
    assert "Dependencies are up to date" in out and "pip install" not in out, out
    url = urlsplit(course_lab.url)
    assert url.port == course_lab.port and url.path == "/lab/tree/" + FIRST, course_lab.url
    assert course_lab.token, f"no token in the printed URL {course_lab.url}"

    # The root is the repository: exercises/ is reachable, and so is every exercise link.
    exercises = sorted(p.name for p in (lab.REPO / "exercises").glob("*.ipynb"))
    listed = {c["name"] for c in course_lab.api("GET", "/api/contents/exercises")["content"]}
    assert set(exercises) <= listed, f"exercises/ as served lists {sorted(listed)}"
    links = exercise_links()
    assert links, "no chapter links to its exercise notebook (`](../exercises/...)`)"
    broken = [f"{c}: {t}" for c, ts in links.items() for t in ts if not course_lab.exists(t)]
    assert not broken, f"exercise links that lead nowhere: {broken}"

    context = browser.new_context(viewport={"width": 1280, "height": 900})
    context.set_default_timeout(lab.ms(30))
    try:
        page = context.new_page()
        page.add_init_script(script=lab.LabNotebook.JS)

        # 1. The printed URL opens 00_welcome.
        page.goto(course_lab.url, wait_until="domcontentloaded", timeout=lab.ms(lab.OPEN_S))
        lab.LabNotebook(page, None, FIRST).wait_open()
        assert current_path(page) == FIRST

        # 2. From the file browser's root: exercises/, then the exercise notebook; its first
        #    check(...) cell shows the feedback table.
        open_in_file_browser(page, "exercises", EXERCISE)
        nb = lab.LabNotebook(page, None, f"exercises/{EXERCISE}").wait_open()
        ex = lab.find_exercise(lab.REPO / "exercises", lab.REPO / "solutions", EXERCISE)
        assert ex is not None, f"exercises/{EXERCISE} has no exercise with a check(...) cell"
        nb.activate_cell(ex.exercise_cell)
        nb.run_command("notebook:run-all-above")
        nb.run_with_shift_enter(ex.exercise_cell)  # the stub raises NotImplementedError
        nb.run_with_shift_enter(ex.check_cell)
        feedback = nb.feedback(ex.check_cell)
        assert not feedback["errors"], f"check() raised: {feedback['errors']}"
        assert feedback["table"] and feedback["rows"], f"no table:\n{feedback['text']}"

        # 3. A chapter's link to its exercises opens them.
        chapter_path = f"chapters/{LINKING_CHAPTER}"
        (target,) = set(links[chapter_path])
        open_in_file_browser(page, "chapters", LINKING_CHAPTER)
        lab.LabNotebook(page, None, chapter_path).wait_open()
        panel = page.evaluate("() => window.jupyterapp.shell.currentWidget.id")
        link = page.locator(f'[id="{panel}"] .jp-RenderedMarkdown a', has_text=target).last
        link.scroll_into_view_if_needed()
        link.click()
        lab.LabNotebook(page, None, target).wait_open()
        assert current_path(page) == target
        shot = screenshot_dir / "course-lab.png"
        shot.parent.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(shot))
    finally:
        context.close()

    # 4. Ctrl-C twice, as course.py says: JupyterLab, its kernels, course.py itself all end.
    kernels = course_lab.kernel_pids()
    pids = course_lab.server_pids() + [p for ps in kernels.values() for p in ps]
    assert len(kernels) >= 3 and all(kernels.values()), f"kernels and their pids: {kernels}"
    course_lab.press_ctrl_c()
    course_lab.wait_for_line("interrupted")  # Jupyter asks to confirm; the second one stops it
    course_lab.press_ctrl_c()
    course_lab.proc.wait(timeout=lab.seconds(60))
    left = course_lab.wait_gone(pids)
    assert not left, "still running after Ctrl-C:\n" + "\n".join(left)

    after = snapshot(lab.REPO)
    changed = sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k))
    assert not changed, f"the Lab session changed files in the checkout: {changed}"
    record_property(
        "browser_summary",
        f"course.py lab: {course_lab.url.split('?')[0]} opened, {len(kernels)} kernels, "
        f"stopped with Ctrl-C; {time.monotonic() - started:.1f} s; screenshot {shot}",
    )


@pytest.mark.timeout(lab.seconds(300))
def test_sigterm_to_course_py_stops_jupyterlab_and_its_kernels(course_lab):
    course_lab.start()
    kernel = course_lab.api("POST", "/api/kernels")["id"]
    deadline = time.monotonic() + lab.seconds(60)
    while not course_lab.kernel_pids().get(kernel) and time.monotonic() < deadline:
        time.sleep(0.2)
    pids = course_lab.server_pids() + course_lab.kernel_pids()[kernel]
    assert len(pids) >= 2, f"server and kernel pids: {pids}\n{course_lab.output()}"
    os.kill(course_lab.proc.pid, signal.SIGTERM)  # `kill PID` of course.py alone
    course_lab.proc.wait(timeout=lab.seconds(60))
    left = course_lab.wait_gone(pids)
    assert not left, "still running after SIGTERM to course.py:\n" + "\n".join(left)
