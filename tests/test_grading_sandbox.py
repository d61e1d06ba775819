"""What the grader's sandbox stops: one notebook per attack, graded in one batch through
the command line next to honest ones.

Each attack tries something a kernel must not manage (read the grader's files,
environment or command line, reach the network, signal other processes, run code in a
classmate's kernel through its connection file, leave an IPython
startup file for later kernels, write into the Python environment, exhaust memory,
processes or disk, outlive its submission) in the ``ex00_add`` cell, and the other
exercises are the solution's, so they must keep full marks. A probing attack collects what
it managed in ``leaks`` and its ``add`` raises ``RuntimeError("LEAKS [...]")``: the
feedback file then shows exactly what got through, and ``LEAKS []`` when nothing did.

Skipped, with the reason, only where no sandbox can start (bubblewrap missing, or no
namespaces); ``python3 course.py test`` installs bubblewrap when it runs as root.
"""

from __future__ import annotations

import csv
import os
import site
import socket
import subprocess
import sys
import time
from pathlib import Path

import nbformat
import pytest

from minijit.grading.sandbox import package_root, unavailable

FIXTURES = Path(__file__).parent / "grading_fixtures"
SOLUTION = FIXTURES / "solutions" / "00_demo.ipynb"
ADD_CELL = "# EXERCISE ex00_add (1 point)\n"
FULL = {"ex00_add": 1.0, "ex00_mean": 2.0, "ex00_answer": 1.0}
NO_ADD = {**FULL, "ex00_add": 0.0}
SECRET = "minijit-grader-secret-4f1d"  # in the grader's environment only
MARKER = "minijit-detached-child-9c2e"  # in the command line of the surviving child

PROBLEM = unavailable()
sandboxed = pytest.mark.skipif(PROBLEM is not None, reason=f"no sandbox here: {PROBLEM}")


def _notebook(add_cell: str):
    nb = nbformat.read(SOLUTION, as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "code" and cell.source.startswith(ADD_CELL):
            cell.source = ADD_CELL + add_cell
    return nb


def _probe(code: str):
    """An attack that reports, through add's error message, what it managed."""
    return _notebook("leaks = []\n" + code + "\ndef add(a, b):\n"
                     "    raise RuntimeError('LEAKS ' + repr(leaks))\n")


def _attacks(paths: dict[str, str]) -> dict[str, tuple]:
    """name -> (notebook, status, points); ``paths`` are the grader's, as the test made
    them, written into the attacks as a student who knows the machine would."""
    p = {k: repr(v) for k, v in paths.items()}
    return {
        "solution": (_notebook(_solution_add()), "ok", FULL),
        # Listed first: later kernels would start with its startup file. (The grader's
        # IPYTHONDIR is under /tmp, which in a sandbox is the sandbox's own: the test looks
        # for the file on the grader's side.)
        "a_startup_file": (_probe(
            "import os\n"
            "payload = ('import os\\nif os.environ.get(\"MINIJIT_GRADING\") == \"1\":\\n'\n"
            "           '    get_ipython().input_transformers_cleanup.append(\\n'\n"
            "           '        lambda lines: lines + [\"\\\\nANSWER = 0\\\\n\"])\\n')\n"
            f"for d in [os.environ.get('IPYTHONDIR', ''), os.path.expanduser('~/.ipython'),\n"
            f"          {p['grader_ipython']}]:\n"
            "    folder = os.path.join(d, 'profile_default', 'startup')\n"
            "    try:\n"
            "        os.makedirs(folder, exist_ok=True)\n"
            "        with open(os.path.join(folder, '00-zero.py'), 'w') as f:\n"
            "            f.write(payload)\n"
            "    except OSError:\n"
            "        pass\n"), "ok", NO_ADD),
        "read_files": (_probe(
            "import os\n"
            f"for d in [{p['solutions']}, {p['tests']}, {p['private']}, {p['out']},\n"
            f"          {p['exercises']}, {p['readme']}, {p['grader_ipython']},\n"
            f"          {p['references']}, '/etc/shadow', '/etc/hostname', '/root/.bashrc',\n"
            "          '/var/log']:\n"
            "    try:\n"
            "        found = os.listdir(d) if os.path.isdir(d) else open(d).read(10)\n"
            "        if found:\n"
            "            leaks.append(d)\n"
            "    except OSError:\n"
            "        pass\n"
            "try:\n"
            "    from minijit.grading.exercises import ch04_jit_and_the_cache\n"
            "    leaks.append('the reference solutions')\n"
            "except ImportError:\n"
            "    pass\n"), "ok", NO_ADD),
        "read_proc_and_env": (_probe(
            "import os\n"
            f"secrets = [{p['secret']}, {p['private']}, {p['out']}]\n"
            "def look(where, text):\n"
            "    for s in secrets:\n"
            "        if s in text:\n"
            "            leaks.append(f'{where}: {s}')\n"
            "look('environ', repr(dict(os.environ)))\n"
            "others = []\n"
            "for pid in os.listdir('/proc'):\n"
            "    if not pid.isdigit():\n"
            "        continue\n"
            "    if int(pid) not in (1, os.getpid()):\n"
            "        others.append(pid)\n"
            "    for name in ('cmdline', 'environ'):\n"
            "        try:\n"
            "            with open(f'/proc/{pid}/{name}', 'rb') as f:\n"
            "                look(f'/proc/{pid}/{name}', f.read().decode(errors='replace'))\n"
            "        except OSError:\n"
            "            pass\n"
            "    for name in ('cwd', 'root', 'exe'):\n"
            "        try:\n"
            "            look(f'/proc/{pid}/{name}', os.readlink(f'/proc/{pid}/{name}'))\n"
            "        except OSError:\n"
            "            pass\n"
            "try:\n"
            "    look('ppid cmdline', open(f'/proc/{os.getppid()}/cmdline').read())\n"
            "except OSError:\n"
            "    pass\n"
            "if others:\n"
            "    leaks.append(f'other processes: {others}')\n"), "ok", NO_ADD),
        "network": (_probe(
            "import socket\n"
            f"for host, port in [('127.0.0.1', {p['port']}), ('1.1.1.1', 53),\n"
            "                   ('8.8.8.8', 53), ('example.com', 80)]:\n"
            "    try:\n"
            "        socket.create_connection((host, port), timeout=1).close()\n"
            "        leaks.append(f'{host}:{port}')\n"
            "    except OSError:\n"
            "        pass\n"), "ok", NO_ADD),
        # Stops (and signals nothing) if it sees too many processes to be in a sandbox.
        "kill_everyone": (_probe(
            "import os, signal\n"
            "pids = [int(p) for p in os.listdir('/proc') if p.isdigit()]\n"
            "if len(pids) > 20:\n"
            "    leaks.append(f'{len(pids)} processes visible')\n"
            "    pids = []\n"
            "for pid in [os.getppid(), 1] + pids if pids else []:\n"
            "    if pid == os.getpid():\n"
            "        continue\n"
            "    for sig in (signal.SIGSTOP, signal.SIGKILL):\n"
            "        try:\n"
            "            os.kill(pid, sig)\n"
            "        except OSError:\n"
            "            pass\n"
            "    if os.path.exists(f'/proc/{pid}') and pid != 1:\n"
            "        leaks.append(pid)\n"), "ok", NO_ADD),
        "write_python": (_probe(
            "import os, sys, site\n"
            f"for d in [sys.prefix, sys.base_prefix, *site.getsitepackages(), {p['package']},\n"
            f"          {p['package']} + '/grading']:\n"
            "    try:\n"
            "        with open(os.path.join(d, '_sandbox_probe_written.txt'), 'w') as f:\n"
            "            f.write('x')\n"
            "        leaks.append(d)\n"
            "    except OSError:\n"
            "        pass\n"), "ok", NO_ADD),
        # Bounded by the address-space limit: the cell fails, the kernel lives on. (At
        # most 4 GiB even without a limit, not to harm the machine running the tests.) The
        # limit counts address space, so the arrays are left untouched: touching them tests
        # nothing more, and a virtual machine can take seconds to first touch a gigabyte.
        "memory_bomb": (_notebook(
            "import numpy as np\nkeep = []\nfor _ in range(16):\n"
            "    keep.append(np.empty(32 * 2**20))  # 256 MiB of address space\n"
            "raise SystemError('4 GiB allocated')\n"), "error", NO_ADD),
        # Bounded by the process limit; the children sleep until the sandbox is killed.
        # (At most 2000 of them even without a limit.)
        "fork_bomb": (_probe(
            "import os, time\nn = 0\nwhile n < 2000:\n"
            "    try:\n        pid = os.fork()\n    except OSError:\n        break\n"
            "    if pid == 0:\n        time.sleep(300)\n        os._exit(0)\n"
            "    n += 1\n"
            "if n >= 2000:\n    leaks.append(n)\n"), "ok", NO_ADD),
        "big_file": (_probe(
            "import os\nchunk = b'x' * 2**24\n"
            "for path in ['/tmp/big', os.path.expanduser('~/big'), 'big']:\n"
            "    written = 0\n"
            "    try:\n"
            "        with open(path, 'wb') as f:\n"
            "            while written < 2**30:\n"
            "                f.write(chunk)\n"
            "                written += len(chunk)\n"
            "    except OSError:\n"
            "        pass\n"
            "    if os.path.getsize(path) > 64 * 2**20:\n"
            "        leaks.append((path, os.path.getsize(path)))\n"
            "    os.remove(path)\n"), "ok", NO_ADD),
        # A child in a session of its own, trying for a minute to reach the grader's files.
        "detached_child": (_probe(
            "import subprocess, sys\n"
            "code = ('import sys, time\\n'\n"
            "        'for _ in range(600):\\n'\n"
            "        '    for path in sys.argv[2:]:\\n'\n"
            "        '        try:\\n'\n"
            "        '            open(path, \"a\").write(\"written by a survivor\\\\n\")\\n'\n"
            "        '        except OSError:\\n'\n"
            "        '            pass\\n'\n"
            "        '    time.sleep(0.1)\\n')\n"
            f"subprocess.Popen([sys.executable, '-c', code, {p['marker']}, {p['watch']},\n"
            f"                  {p['csv']}], start_new_session=True,\n"
            "                 stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,\n"
            "                 stderr=subprocess.DEVNULL)\n"), "ok", NO_ADD),
        # Another kernel's connection file holds the key to run code in it: a classmate's
        # ANSWER set to 0 would score the victims 0 with status ok.
        "inject_siblings": (_probe(
            "import glob, os\n"
            "from ipykernel import get_connection_file\n"
            "from jupyter_client import BlockingKernelClient\n"
            "from jupyter_core.paths import jupyter_runtime_dir\n"
            "own = os.path.realpath(get_connection_file())\n"
            "places = [jupyter_runtime_dir(), '/tmp', '/run/user', os.path.expanduser('~'),\n"
            "          '/tmp/minijit-sockets-*']\n"
            "for place in places:\n"
            "    for path in glob.glob(os.path.join(place, '**', 'kernel*.json'),\n"
            "                          recursive=True):\n"
            "        if os.path.realpath(path) == own:\n"
            "            continue\n"
            "        leaks.append(path)\n"
            "        try:\n"
            "            client = BlockingKernelClient(connection_file=path)\n"
            "            client.load_connection_file()\n"
            "            client.start_channels()\n"
            "            client.execute('ANSWER = 0')\n"
            "            client.stop_channels()\n"
            "        except Exception:\n"
            "            pass\n"), "ok", NO_ADD),
        "victim_1": (_notebook(_solution_add()), "ok", FULL),
        "victim_2": (_notebook(_solution_add()), "ok", FULL),
    }


def _solution_add() -> str:
    nb = nbformat.read(SOLUTION, as_version=4)
    cell = next(c for c in nb.cells if c.cell_type == "code" and c.source.startswith(ADD_CELL))
    return cell.source[len(ADD_CELL):]


def _survivors() -> list[str]:
    found = []
    for pid in os.listdir("/proc"):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if MARKER.encode() in f.read():
                    found.append(pid)
        except OSError:
            continue
    return found


@sandboxed
def test_sandbox_batch(tmp_path):
    """One batch through the command line (so the hidden-cases folder is in the grader's
    arguments, and SECRET in its environment); every check is collected before failing."""
    folder, private, out = tmp_path / "submissions", tmp_path / "private", tmp_path / "out"
    folder.mkdir()
    private.mkdir()
    out.mkdir()
    (private / "more_cases.py").write_text(
        "from minijit.grading import Case\n"
        "HIDDEN_CASES = {'ex00_mean': [Case('secret-case-name', ([2, 4],))]}\n")
    listener = socket.create_server(("127.0.0.1", 0))
    repo = package_root()
    paths = {"solutions": str(repo / "solutions"), "tests": str(repo / "tests"),
             "private": str(private), "out": str(out), "exercises": str(FIXTURES),
             "grader_ipython": str(tmp_path / "grader_ipython"), "secret": SECRET,
             "port": listener.getsockname()[1], "package": str(repo / "minijit"),
             "watch": str(tmp_path / "watched.txt"), "csv": str(out / "gradebook.csv"),
             "marker": MARKER, "readme": str(repo / "README.md"),
             "references": str(repo / "minijit" / "grading" / "exercises")}
    attacks = _attacks(paths)
    for name, (nb, _, _) in attacks.items():
        nbformat.write(nb, folder / f"{name}.ipynb")
    # The grader's home and IPYTHONDIR are the test's, so that even a broken sandbox
    # leaves no startup file for the machine's other kernels.
    env = dict(os.environ, MINIJIT_TEST_SECRET=SECRET, HOME=str(tmp_path / "grader_home"),
               IPYTHONDIR=paths["grader_ipython"])
    written = [Path(d, "_sandbox_probe_written.txt") for d in (
        sys.prefix, sys.base_prefix, *site.getsitepackages(), repo / "minijit",
        repo / "minijit" / "grading")]
    try:
        start = time.monotonic()
        run = subprocess.run(
            [sys.executable, "-m", "minijit.grading", "grade", str(folder),
             "--out", str(out / "gradebook.csv"), "--feedback-dir", str(out / "feedback"),
             "--hidden-cases", str(private), "--jobs", "2", "--cell-timeout", "10",
             "--timeout", "60", "--memory", f"{1.5 + 0.025 * (os.cpu_count() or 1):.2f}",
             "--no-progress",
             "--exercises", str(FIXTURES / "demo_exercises.py")],
            capture_output=True, text=True, timeout=600, env=env, cwd=tmp_path)
        seconds = time.monotonic() - start
        assert run.returncode == 0, run.stderr
        graded = (out / "gradebook.csv").read_bytes()
        time.sleep(1.5)  # long enough for a surviving child to write again
        survivors = _survivors()
    finally:
        listener.close()
        for path in written:  # only there if the Python environment was writable
            path.unlink(missing_ok=True)

    problems = []
    if survivors:
        problems.append(f"processes outlived the grader: {survivors}")
    if (out / "gradebook.csv").read_bytes() != graded:
        problems.append("the gradebook changed after the grader ended")
    if (tmp_path / "watched.txt").exists():
        problems.append("a sandboxed process wrote to the grader's folder")
    if (tmp_path / "grader_ipython").exists():
        problems.append("a sandboxed process wrote to the grader's IPYTHONDIR")
    if (tmp_path / "grader_home" / ".ipython").exists():
        problems.append("a sandboxed process wrote to the grader's home")
    with open(out / "gradebook.csv", newline="") as f:
        rows = {r["student"]: r for r in csv.DictReader(f)}
    if set(rows) != set(attacks):
        problems.append(f"rows {sorted(rows)} for {sorted(attacks)}")
    for name, (_, status, points) in attacks.items():
        row = rows.get(name)
        if row is None:
            continue
        got = {i: float(row[i]) for i in points}
        if (row["status"], got) != (status, points):
            problems.append(f"{name}: got {row['status']} {got}, wanted {status} {points}; "
                            f"detail: {row['detail']}")
        text = (out / "feedback" / f"{name}.md").read_text()
        if "LEAKS" in text and "LEAKS []" not in text:
            problems.append(f"{name}: {text[text.index('LEAKS'):].splitlines()[0]}")
        if "secret-case-name" in text:
            problems.append(f"{name}: a private case's name is in the feedback")
    if "MemoryError" not in rows["memory_bomb"]["detail"]:
        problems.append(f"memory_bomb: {rows['memory_bomb']['detail']}")
    assert not problems, "\n".join(problems)
    # Every probing attack reported through its feedback (nothing swallowed the message).
    for name, (nb, _, _) in attacks.items():
        if "LEAKS" in "".join(c.source for c in nb.cells):
            assert "LEAKS []" in (out / "feedback" / f"{name}.md").read_text(), name
    print(f"sandboxed batch of {len(attacks)}: {seconds:.1f} s")


def test_refuses_without_a_sandbox(monkeypatch):
    """Where no sandbox starts, grade() stops before any kernel, saying how to get one
    and what --no-sandbox gives up; sandbox=False grades as before."""
    from minijit.grading import batch, sandbox
    from minijit.grading.registry import load_exercises

    monkeypatch.setattr(sandbox, "bwrap", lambda: None)
    exercises = load_exercises([str(FIXTURES / "demo_exercises.py")])
    with pytest.raises(batch.GradingSetupError) as err:
        batch.grade([SOLUTION], exercises=exercises, progress=False)
    message = str(err.value)
    assert "apt-get install bubblewrap" in message and "--no-sandbox" in message
    assert "read your files" in message
