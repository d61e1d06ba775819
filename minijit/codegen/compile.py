"""From generated source to a compiled Numba function, with two caches (chapter 09).

- In memory: compiled functions keyed by a hash of their code (the source without its
  comments) and argument types, so two jitted functions that generate the same code share
  one compile, and so do two shapes of one program (sizes are read from the arguments).
- On disk: the source is written to `<cache dir>/m_<hash>.py` and compiled with Numba's
  `cache=True`, so Numba stores the machine code beside it (`__pycache__/*.nbi` is its index,
  `*.nbc` the code) and a new process (a restarted notebook kernel) loads it instead of
  compiling again. The hash covers the source and the versions of Python, NumPy, Numba and
  minijit, so an upgrade never loads stale code.

The cache folder is `$MINIJIT_CACHE_DIR`, else `$XDG_CACHE_HOME/minijit`, else
`~/.cache/minijit`; `config.update("disk_cache", False)` (or `MINIJIT_DISK_CACHE=0`) turns
the disk cache off. Programs that call back into Python (`debug.print`) are never cached on
disk, since their callbacks live only in this process.

Invariants:
- the disk cache is an optimization only. Anything wrong with it (a damaged file, a folder
  that is read-only, full, or not a folder) is reported once per folder with a
  `DiskCacheWarning`, and the program is compiled in memory instead (a damaged source file is
  just rewritten): the call still works. Numba's damaged files are removed, so the next
  process caches the program afresh; a folder that cannot be written is not tried again
  in this process;
- a genuine compile error (Numba rejects the generated code) is still a `CodegenError`: a
  failure on the disk path is retried once in memory, and only if that fails too is it the
  code's fault;
- a failed compile leaves nothing behind: its source file and Numba's files for it are
  removed, and no entry is stored. Every file is written to a temporary name and renamed into
  place, so another process or thread never reads half a file;
- one program compiles at a time (`_lock`), so threads that need the same program at once
  compile it once. Numba holds a global compiler lock anyway, so this costs no parallelism.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import re
import sys
import tempfile
import warnings
from pathlib import Path

import numba
import numpy as np

from minijit.codegen import vector_width
from minijit.codegen.lower import CodegenError, Source
from minijit.codegen.vecmath import deferred
from minijit.config import config
from minijit.errors import in_package
from minijit.llvm.engine import COMPILE_LOCK
from minijit.version import __version__

_memory: dict[str, object] = {}
stats = {"compiled": 0, "disk_hits": 0, "memory_hits": 0}  # where each program came from
# Guards the two dicts above and the disk cache folder; the LLVM backend's compiles take it
# too (LLVM's global context is shared, see `llvm/engine.py`).
_lock = COMPILE_LOCK
_unusable: set[Path] = set()  # folders that failed with an OSError: not tried again
_warned: set[Path] = set()  # folders already reported with a DiskCacheWarning

# Generated code calls `vecmath`'s functions: Numba must find them compiled (`deferred`).
deferred.compile_all()


def _path_even_without_a_cwd(get_path):
    """Numba writes a source location relative to the working directory (os.path.relpath)
    while it compiles; with that directory deleted (a notebook that removed its own folder),
    every compile failed. The location is then written as it is."""
    def _get_path(self):
        try:
            return get_path(self)
        except OSError:
            return self.filename

    return _get_path


if hasattr(numba.core.ir.Loc, "_get_path"):
    numba.core.ir.Loc._get_path = _path_even_without_a_cwd(numba.core.ir.Loc._get_path)


class DiskCacheWarning(UserWarning):
    """The disk cache could not be used or was damaged; compiling went on without it."""


def cache_dir() -> Path:
    if os.environ.get("MINIJIT_CACHE_DIR"):
        return Path(os.environ["MINIJIT_CACHE_DIR"])
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "minijit"


def disk_cache_enabled() -> bool:
    return bool(config.disk_cache) and os.environ.get("MINIJIT_DISK_CACHE", "1") != "0"


def code_of(text: str) -> str:
    """The source without its comment lines: what Numba compiles.

    The comments name each block's IR equation, shapes included; the code reads sizes from
    its arguments (`Lowering.shape_generic`), so programs that differ only in sizes differ
    only in comments, and are keyed as one program."""
    return "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("#"))


def _library_hash() -> str:
    """A hash of the modules generated code calls into (`vecmath`, `layout`, `folds`, `alloc`,
    `blas`): Numba's disk cache keeps their machine code inside the caller's, so a change to
    them must miss."""
    h = hashlib.sha256()
    here = Path(__file__).parent
    for path in sorted([*here.glob("vecmath/*.py"), here / "layout.py", here / "folds.py",
                        here / "alloc.py", here / "blas.py"]):
        h.update(path.read_bytes())
    return h.hexdigest()


_LIBRARY = _library_hash()


def source_hash(source: Source, signature: str) -> str:
    h = hashlib.sha256()
    for part in (code_of(source.text), signature, sys.version, np.__version__,
                 numba.__version__, __version__, _LIBRARY, str(vector_width.preferred())):
        h.update(part.encode())
    return h.hexdigest()[:24]


def numba_type(aval, readonly: bool = False):
    """The Numba type of one argument: a C-contiguous array (read-only if `readonly`), or a
    scalar for rank 0."""
    scalar = numba.from_dtype(aval.dtype)
    if not aval.shape:
        return scalar
    return numba.types.Array(scalar, aval.ndim, "C", readonly=readonly)


def compile_source(source: Source, arg_avals, fun_name: str, readonly=()):
    """The compiled `entry` function of `source` for arguments of these avals, those marked
    in `readonly` typed as read-only arrays.

    The entry compiles for exactly this signature and never again (`disable_compile`): an
    argument of another type is converted to it, or refused. So a writable array passes for a
    read-only one at no cost, where Numba compiled the whole program a second time for the
    first read-only array it met (`np.broadcast_to`'s result, a memory map); generated code
    never writes an argument that was not donated, and Numba now checks that too. The caller
    passes C-contiguous, aligned arrays of the exact dtype (`NumbaExecutable`)."""
    flags = tuple(readonly) + (False,) * (len(arg_avals) - len(readonly))
    sig = tuple(numba_type(a, r) for a, r in zip(arg_avals, flags))
    # Callbacks are Python objects of this process: the same text with other callbacks is
    # another program.
    key = source_hash(source, repr(sig) + repr(sorted(
        (n, id(f)) for n, f in source.callbacks.items())))
    with _lock:
        entry = _memory.get(key)
        if entry is not None:
            stats["memory_hits"] += 1
            return entry
        entry = _compile(source, sig, key, fun_name)
        entry.disable_compile()
        _memory[key] = entry  # only a compiled function is ever stored
        return entry


def _compile(source: Source, sig, key: str, fun_name: str):
    """Compile through the disk cache when it is on and usable, else (or if it fails) in memory.

    If the disk path fails and compiling in memory works, the disk cache was at fault: warn.
    If compiling in memory fails too, the generated code is at fault: that is the CodegenError.
    """
    folder, name = cache_dir(), f"minijit_generated_{key}"
    disk_error = None
    if disk_cache_enabled() and not source.callbacks and folder not in _unusable:
        path = folder / f"m_{key}.py"
        try:
            entry, repaired = _compile_on_disk(source.text, sig, path, name)
        except Exception as e:
            disk_error = e
        else:
            loaded = sum(entry.stats.cache_hits.values())  # Numba's count of disk-cache loads
            stats["disk_hits" if loaded else "compiled"] += 1
            if repaired:
                _warn_once(folder, f"minijit's disk cache in {folder} had a damaged source "
                                   f"file, {path.name}; it has been rewritten. If this keeps "
                                   f"happening, delete {folder}")
            return entry
    try:
        entry = _compile_in_memory(source, sig, name)
    except Exception as e:
        raise _explain(e, source, fun_name) from None
    stats["compiled"] += 1
    if disk_error is not None:
        _disk_cache_failed(folder, disk_error)
    return entry


def _compile_on_disk(text: str, sig, path: Path, name: str):
    """Compile the module at `path` with Numba's disk cache; (entry, whether the source file
    had to be repaired)."""
    entry = None
    try:
        repaired = _write_once(path, text)
        entry = _import_file(path, name).entry
        with vector_width.numba_functions():
            entry.compile(sig)
    except BaseException:
        _forget(path, entry)  # whatever failed, the next process starts this program afresh
        raise
    return entry, repaired


def _compile_in_memory(source: Source, sig, name: str):
    # callbacks are globals of the module, in place before its code runs
    module = _exec_module(source.text.replace("cache=True", "cache=False"), name,
                          source.callbacks)
    with vector_width.numba_functions():
        module.entry.compile(sig)
    return module.entry


def _write_once(path: Path, text: str) -> bool:
    """Make `path` hold `text`; True if it held other code before (a damaged file).

    A file that already holds `text`'s code is left alone, even if its comments are another
    shape's (see `code_of`): older Numba versions key their index on its timestamp, so
    rewriting it would throw their cache away. Raises OSError if the folder cannot be
    written.
    """
    data = text.encode()
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        old = path.read_bytes()
    except FileNotFoundError:
        old = None
    except OSError:  # unreadable, or a folder by that name: try to replace it
        old = b""
    if old == data or old and code_of(old.decode(errors="replace")) == code_of(text):
        return False
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name, suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)  # atomic: a concurrent reader never sees half a file
    except BaseException:
        _discard(Path(tmp))
        raise
    return old is not None


def _import_file(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # Numba's cache locator looks the module up by name
    spec.loader.exec_module(module)
    return module


def _exec_module(text: str, name: str, namespace: dict):
    import types

    module = types.ModuleType(name)
    module.__dict__.update(namespace)
    sys.modules[name] = module  # objmode blocks look their globals up through sys.modules
    exec(compile(text, f"<minijit generated {name}>", "exec"), module.__dict__)
    return module


def _forget(path: Path, dispatcher) -> None:
    """Remove the source at `path` and Numba's index and code for it (best effort)."""
    # Numba names its files after the module (`m_<hash>.entry-<line>.py311.nbi`) and keeps
    # them in `__pycache__` beside it, unless NUMBA_CACHE_DIR says otherwise.
    numba_cache = getattr(getattr(dispatcher, "_cache", None), "cache_path", None)
    folder = Path(numba_cache) if numba_cache else path.parent / "__pycache__"
    try:
        files = list(folder.glob(f"{path.stem}.*"))
    except OSError:
        files = []
    for f in (path, *files):
        _discard(f)


def _discard(path: Path) -> None:
    try:
        path.unlink()
    except OSError:
        pass


def _disk_cache_failed(folder: Path, error: Exception) -> None:
    """Compiling in memory worked where the disk path failed with `error`: report it."""
    reason = f"{type(error).__name__}: {str(error)[:200]}"
    if isinstance(error, OSError):
        # Read-only, full, or not a folder: every program would fail the same way, and
        # trying costs a compile each time, so this process stops using the folder.
        _unusable.add(folder)
        _warn_once(folder, f"minijit's disk cache folder {folder} cannot be written "
                           f"({reason}), so this program was compiled in memory (it works, but "
                           "is not kept for the next process) and this process stops using "
                           f"that folder. To fix it, make {folder} a writable folder or set "
                           "MINIJIT_CACHE_DIR to one")
    else:
        _warn_once(folder, f"minijit's disk cache in {folder} has a damaged file ({reason}), "
                           "so this program was compiled in memory (it works). Its files were "
                           "removed, so the next process compiles and caches it afresh; if "
                           f"this keeps happening, delete {folder}")


def _warn_once(folder: Path, message: str) -> None:
    """Warn about `folder`, unless this process already has; names how to turn caching off."""
    if folder in _warned:
        return
    _warned.add(folder)
    warnings.warn(f"{message}. To turn the disk cache off, set MINIJIT_DISK_CACHE=0 or call "
                  "minijit.config.update('disk_cache', False).",
                  DiskCacheWarning, stacklevel=_user_stacklevel())


def _user_stacklevel() -> int:
    """The `stacklevel` that points a warning at the first caller outside minijit."""
    frame, level = sys._getframe(2), 2  # 1 would be _warn_once itself
    while frame is not None and in_package(frame.f_code.co_filename):
        frame, level = frame.f_back, level + 1
    return level


def _explain(error: Exception, source: Source, fun_name: str) -> CodegenError:
    """A minijit error naming the equation whose generated code Numba rejected."""
    message = str(error)
    eqn = _failing_equation(message, source)
    detail = [ln.strip() for ln in message.splitlines()
              if ln.strip() and not ln.startswith(("Failed in", "During:", "File ", "<"))]
    where = f" in the code for `{eqn}`" if eqn else ""
    return CodegenError(
        f"Numba could not compile the code generated for `{fun_name}`{where}: "
        f"{' '.join(detail[:2]) or type(error).__name__}\n"
        f"Run it with the interpreter backend instead: jit({fun_name}, backend='interpreter'),"
        " and see the generated source with f.lower(*args).as_text()."
    )


def _failing_equation(message: str, source: Source) -> str | None:
    """The IR equation of the generated line Numba complained about, if we can tell."""
    lines = [int(n) for n in re.findall(r"line (\d+)", message)]
    for n in reversed(lines):
        if n in source.line_eqns:
            return _described(source.line_eqns[n])
    # No line number: look for the names Numba quotes ('undefined_name') in the source.
    text = source.text.splitlines()
    for name in re.findall(r"'([A-Za-z_][A-Za-z0-9_]*)'", message):
        hits = [k + 1 for k, line in enumerate(text)
                if re.search(rf"\b{re.escape(name)}\b", line) and not line.strip().startswith("#")]
        if len(hits) == 1 and hits[0] in source.line_eqns:
            return _described(source.line_eqns[hits[0]])
    return None


def _described(eqn) -> str:
    return eqn() if callable(eqn) else eqn  # see Source.line_eqns
