"""The sandbox each submission's kernel runs in: a bubblewrap command line.

One sandbox per kernel, started by the grader (:mod:`minijit.grading.kernel`) and killed with
it. What a notebook inside can see and do:

- its own PID, IPC, UTS, network and (where possible) cgroup namespaces: ``/proc`` lists
  only the sandbox's processes (``/proc/1`` is bubblewrap's reaper, whose environment is
  ``PATH`` alone), no other kernel or grader process can be named, let alone signalled,
  and the only network is a loopback device of its own;
- an unprivileged uid and ``no_new_privs``. A grader that is not root gets a user
  namespace (mapping its uid to :data:`INNER_UID`, no further user namespaces allowed).
  A root grader instead gives the kernel a real uid of its own (:func:`sandbox_uid`),
  unique among the sandboxes running: mapped to root, the kernel would be exempt from
  ``RLIMIT_NPROC`` (a fork bomb unbounded), and an unprivileged bubblewrap could not reach
  a Python installed under ``/root``;
- read-only: ``/usr`` (with ``/bin``, ``/lib*`` as on the host), the few files of ``/etc``
  the dynamic loader needs, the Python installation (``sys.base_prefix``), the virtual
  environment (``sys.prefix``) and the ``minijit`` package the grader imported, and nothing
  else of the grader's: an editable install binds only the package folder, never the
  repository around it (``solutions/``, ``tests/``), nor the hidden cases, the gradebook,
  the grader's home, ``IPYTHONDIR`` or environment; and the package's
  ``grading/exercises/`` (reference solutions, the course's hidden cases) shows empty;
- writable, and gone with the sandbox: a size-limited ``/tmp``, ``/dev/shm`` and home
  (``IPYTHONDIR`` is an empty folder in it, so an IPython startup file written by one
  notebook never runs for another), and the kernel's private socket folder;
- the kernel channel: ZeroMQ over ``ipc`` sockets in that socket folder (mode 0700, owned
  by the sandbox's uid), with the connection file (and its HMAC key) inside it; each
  sandbox sees only its own;
- limits set in the sandbox before the kernel starts: address space, processes (threads
  included), file size, no core dumps; and the size of each writable folder.

:func:`unavailable` tries a tiny sandbox and says why grading cannot be sandboxed here.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from minijit.threads import usable_cpus

GiB, MiB = 1 << 30, 1 << 20
HOME = "/home/learner"
# Inside the sandbox, the uid the kernel runs as (bubblewrap maps it to the real one).
INNER_UID = 1000
# Real uids for sandboxes started by root: far above any distribution's or container
# runtime's ranges; one per (worker process, kernel start), see sandbox_uid().
UID_BASE = 2_000_000_000
# Variables the kernel may inherit from the grader: thread counts only, never secrets.
PASSED_ON = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
             "NUMBA_NUM_THREADS", "MINIJIT_THREADS")

INSTALL_HINT = ("Install bubblewrap (`sudo apt-get install bubblewrap` on Debian or Ubuntu; "
                "`python3 course.py test` does it when run as root), or grade with "
                "--no-sandbox (the Python API: grade(..., sandbox=False)). Without the "
                "sandbox each kernel runs as you: a notebook can read your files (the "
                "hidden cases, solutions/), your environment and other processes' command "
                "lines, signal or inject code into its classmates' kernels, leave IPython "
                "startup files for later submissions, use the network, and exhaust memory, "
                "processes or disk.")


def default_memory() -> int:
    """4 GiB, more with many cores: the thread pools a kernel starts (OpenBLAS, Numba) take
    about 22 MiB of address space per thread and start one per usable CPU (2.1 GiB in all
    with 64 threads, 0.7 GiB with 2): :func:`thread_counts` tells them that number."""
    return max(4 * GiB, 1 * GiB + 48 * MiB * usable_cpus())


def default_processes() -> int:
    """256, more with many cores: threads count, and each pool starts one per usable CPU."""
    return max(256, 3 * usable_cpus() + 64)


def thread_counts() -> dict[str, str]:
    """The kernel's thread-pool sizes: the grader's own settings (:data:`PASSED_ON`), else
    the usable CPUs. Left alone, Numba and OpenBLAS count the host's cores, which in a
    container can be many more than its quota (and than the limits above allow for).

    minijit's own kernels run on one thread unless the grader says otherwise
    (`MINIJIT_THREADS`): submissions are graded side by side, one per usable CPU, and a
    threaded kernel also takes about three times as long to compile."""
    counts = {k: os.environ.get(k, str(usable_cpus())) for k in PASSED_ON}
    counts["MINIJIT_THREADS"] = os.environ.get("MINIJIT_THREADS", "1")
    return counts


@dataclass(frozen=True)
class Sandbox:
    """Resource limits of one kernel's sandbox (bytes, processes)."""

    memory: int = field(default_factory=default_memory)  # RLIMIT_AS of each process in it
    # RLIMIT_NPROC: the processes and threads of the sandbox's uid together
    processes: int = field(default_factory=default_processes)
    file_size: int = 64 * MiB  # RLIMIT_FSIZE: the largest file it may write
    # each of /tmp, /dev/shm and the home folder (tmpfs: they use the grader's memory)
    tmp_size: int = 512 * MiB
    # Where the kernels' socket folders are made: grade() makes one folder per batch and
    # removes it at the end, with whatever a killed worker process left in it.
    sockets_in: str = "/tmp"


def bwrap() -> str | None:
    return shutil.which("bwrap") or next(
        (p for p in ("/usr/bin/bwrap", "/bin/bwrap") if os.access(p, os.X_OK)), None)


def sandbox_uid(start: int = 0) -> int | None:
    """The real uid bubblewrap runs as, or None to run it as the grader (not root).

    Unique among running sandboxes: each grader worker process runs one kernel at a time,
    and ``start`` (counting the worker's kernel starts) keeps a new sandbox apart from the
    previous one's last dying processes.
    """
    if os.geteuid() != 0:
        return None
    return UID_BASE + os.getpid() * 8 + start % 8


def package_root() -> Path:
    """The folder holding the ``minijit`` package the grader runs (put on the kernel's
    ``PYTHONPATH``): for an editable install, the repository, of which only ``minijit/``
    is bound into the sandbox."""
    return Path(__file__).resolve().parents[2]


def _python_trees() -> list[Path]:
    """Read-only trees the kernel's Python needs, outermost first, without duplicates."""
    found = sorted({Path(p).resolve() for p in (
        sys.base_prefix, sys.base_exec_prefix, sys.prefix, sys.exec_prefix,
        os.path.dirname(os.path.realpath(sys.executable)), package_root() / "minijit")},
        key=lambda p: len(p.parts))
    trees: list[Path] = [Path("/usr")]  # bound already
    for p in found:
        if not any(p == t or t in p.parents for t in trees):
            trees.append(p)
    return trees[1:]


class Command:
    """The bubblewrap command line of one kernel: ``argv`` runs ``inner`` (the kernel's
    command, ``{connection_file}`` already in it) in the sandbox; ``popen_kwargs`` are how
    bubblewrap itself must be started.

    Two ways, one result: when the grader is root, bubblewrap runs privileged (it can read
    a Python installed under ``/root``), keeps only ``CAP_SETUID``/``CAP_SETGID``, and the
    kernel drops to ``uid`` (its own real uid, so RLIMIT_NPROC applies) before it starts;
    otherwise bubblewrap is unprivileged and the user namespace maps the grader's uid to
    :data:`INNER_UID`.
    """

    def __init__(self, inner: list[str], sockets: str, limits: Sandbox,
                 uid: int | None) -> None:
        python = sys.executable
        env = {"PATH": f"{Path(python).parent}:/usr/local/bin:/usr/bin:/bin",
               "HOME": HOME, "USER": "learner", "LOGNAME": "learner", "LANG": "C.UTF-8",
               "TMPDIR": "/tmp", "IPYTHONDIR": f"{HOME}/.ipython",
               "MPLBACKEND": "Agg", "MPLCONFIGDIR": "/tmp/matplotlib",
               "NUMBA_CACHE_DIR": "/tmp/numba", "PYTHONDONTWRITEBYTECODE": "1",
               "PYTHONPATH": str(package_root()), "MINIJIT_GRADING": "1",
               "PYDEVD_DISABLE_FILE_VALIDATION": "1"}
        env.update(thread_counts())
        a = [bwrap() or "bwrap", "--unshare-pid", "--unshare-ipc", "--unshare-uts",
             "--unshare-net", "--unshare-cgroup-try", "--hostname", "sandbox",
             "--die-with-parent", "--new-session", "--clearenv"]
        if uid is None:
            a += ["--unshare-user", "--disable-userns", "--uid", str(INNER_UID),
                  "--gid", str(INNER_UID)]
        else:
            a += ["--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID"]
        for k, v in env.items():
            a += ["--setenv", k, v]
        a += ["--ro-bind", "/usr", "/usr"]
        for top in ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"):
            if os.path.islink(top):
                a += ["--symlink", os.readlink(top), top]
            elif os.path.isdir(top):
                a += ["--ro-bind", top, top]
        for name in ("ld.so.cache", "ld.so.conf", "ld.so.conf.d", "localtime",
                     "alternatives", "fonts"):
            a += ["--ro-bind-try", f"/etc/{name}", f"/etc/{name}"]
        # One uid lives in the sandbox: world-writable folders are its alone.
        a += ["--proc", "/proc", "--dev", "/dev",
              # multiprocessing's semaphores (Numba's parallel backend takes one)
              "--size", str(limits.tmp_size), "--perms", "1777", "--tmpfs", "/dev/shm",
              "--size", str(limits.tmp_size), "--perms", "1777", "--tmpfs", "/tmp",
              "--size", str(limits.tmp_size), "--perms", "0777", "--tmpfs", HOME,
              "--perms", "0777", "--dir", f"{HOME}/.ipython",
              "--perms", "0777", "--dir", f"{HOME}/work"]
        trees = _python_trees()
        # bubblewrap would create the folders above a mount point with mode 0700 (as
        # root): the kernel's uid must be able to walk through them.
        made = {Path("/"), Path("/tmp"), Path("/usr"), Path(HOME)}
        for tree in [*trees, Path(sockets)]:
            for up in reversed(tree.parents):
                if up not in made:
                    made.add(up)
                    a += ["--perms", "0755", "--dir", str(up)]
        for tree in trees:
            a += ["--ro-bind", str(tree), str(tree)]
        # The course's exercise modules hold the reference solutions and the hidden cases;
        # a kernel never needs them (probes arrive as source, check() returns at once).
        references = package_root() / "minijit" / "grading" / "exercises"
        if references.is_dir():
            a += ["--size", "4096", "--perms", "0555", "--tmpfs", str(references)]
        a += ["--bind", sockets, sockets, "--chdir", f"{HOME}/work", "--", python, "-c",
              _START, "-" if uid is None else str(uid), str(limits.memory),
              str(limits.processes), str(limits.file_size), "0", *inner]
        self.argv = a

    @staticmethod
    def popen_kwargs() -> dict:
        """Keyword arguments for ``subprocess.Popen`` (jupyter_client passes them on):
        bubblewrap's own environment shows in the sandbox's ``/proc/1/environ``."""
        return {"env": {"PATH": "/usr/bin:/bin"}, "cwd": "/"}


# Runs first in the sandbox, then becomes the kernel (same pid, so signals reach it).
_START = """\
import os, resource, sys
uid = sys.argv[1]
for name, value in zip(("AS", "NPROC", "FSIZE", "CORE"), sys.argv[2:6]):
    limit = getattr(resource, "RLIMIT_" + name)
    resource.setrlimit(limit, (int(value), int(value)))
if uid != "-":
    os.setgroups([])
    os.setgid(int(uid))
    os.setuid(int(uid))
os.execv(sys.executable, [sys.executable, *sys.argv[6:]])
"""


def socket_folder(uid: int | None, parent: str = "/tmp") -> str:
    """A new private folder for one kernel's connection file and sockets: mode 0700, owned
    by the sandbox's uid. Short, since a socket path is limited to 107 bytes."""
    folder = tempfile.mkdtemp(prefix="mj-", dir=parent)
    if uid is not None:
        os.chown(folder, uid, uid)
    return folder


def unavailable(limits: Sandbox | None = None) -> str | None:
    """None when a sandbox starts here (a tiny one is run), else why not, in words."""
    if bwrap() is None:
        return "bubblewrap (bwrap) is not installed."
    uid = sandbox_uid()
    folder = socket_folder(uid)
    cmd = Command(["-c", "import minijit.grading"], folder, limits or Sandbox(), uid)
    try:
        done = subprocess.run(cmd.argv, stdin=subprocess.DEVNULL, capture_output=True,
                              text=True, timeout=60, **cmd.popen_kwargs())
    except (OSError, subprocess.SubprocessError) as exc:
        return f"bubblewrap could not be started: {exc}"
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    if done.returncode != 0:
        why = (done.stderr.strip().splitlines() or ["no message"])[-1]
        return f"bubblewrap cannot create a sandbox here: {why}"
    return None
