"""From generated source to a compiled Numba function, with two caches (chapter 08).

- In memory: compiled functions keyed by a hash of their source and argument types, so two
  jitted functions that generate the same code share one compile.
- On disk: the source is written to `<cache dir>/<hash>.py` and compiled with Numba's
  `cache=True`, so Numba stores the machine code beside it and a new process (a restarted
  notebook kernel) loads it instead of compiling again. The hash covers the source and the
  versions of Python, NumPy, Numba and minijit, so an upgrade never loads stale code.

The cache folder is `$MINIJIT_CACHE_DIR`, else `$XDG_CACHE_HOME/minijit`, else
`~/.cache/minijit`; `config.update("disk_cache", False)` (or `MINIJIT_DISK_CACHE=0`) turns
the disk cache off. Programs that call back into Python (`debug.print`) are never cached on
disk, since their callbacks live only in this process. A failed compile leaves nothing behind:
the source file is removed and no entry is stored.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import re
import sys
import tempfile
from pathlib import Path

import numba
import numpy as np

from minijit.codegen.lower import CodegenError, Source
from minijit.config import config

_memory: dict[str, object] = {}
stats = {"compiled": 0, "disk_hits": 0, "memory_hits": 0}  # where each program came from


def cache_dir() -> Path:
    if os.environ.get("MINIJIT_CACHE_DIR"):
        return Path(os.environ["MINIJIT_CACHE_DIR"])
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "minijit"


def disk_cache_enabled() -> bool:
    return bool(config.disk_cache) and os.environ.get("MINIJIT_DISK_CACHE", "1") != "0"


def source_hash(source: Source, signature: str) -> str:
    from minijit import __version__

    h = hashlib.sha256()
    for part in (source.text, signature, sys.version, np.__version__, numba.__version__,
                 __version__):
        h.update(part.encode())
    return h.hexdigest()[:24]


def numba_type(aval):
    """The Numba type of one argument: a C-contiguous array, or a scalar for rank 0."""
    scalar = numba.from_dtype(aval.dtype)
    return numba.types.Array(scalar, aval.ndim, "C") if aval.shape else scalar


def compile_source(source: Source, arg_avals, fun_name: str):
    """The compiled `entry` function of `source` for arguments of these avals."""
    sig = tuple(numba_type(a) for a in arg_avals)
    # Callbacks are Python objects of this process: the same text with other callbacks is
    # another program.
    key = source_hash(source, repr(sig) + repr(sorted(
        (n, id(f)) for n, f in source.callbacks.items())))
    if key in _memory:
        stats["memory_hits"] += 1
        return _memory[key]
    use_disk = disk_cache_enabled() and not source.callbacks
    text = source.text if use_disk else source.text.replace("cache=True", "cache=False")
    path = None
    try:
        if use_disk:
            path = _write_once(cache_dir() / f"m_{key}.py", text)
            module = _import_file(path, f"minijit_generated_{key}")
        else:  # callbacks are globals of the module, in place before its code runs
            module = _exec_module(text, f"minijit_generated_{key}", source.callbacks)
        entry = module.entry
        entry.compile(sig)
    except Exception as e:
        if path is not None:
            _discard(path)
        raise _explain(e, source, fun_name) from None
    loaded = sum(entry.stats.cache_hits.values())  # Numba's own count of disk-cache loads
    stats["disk_hits" if loaded else "compiled"] += 1
    _memory[key] = entry
    return entry


def _write_once(path: Path, text: str) -> Path:
    """Write `text` unless the file already holds it (its timestamp is Numba's cache key)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.exists() and path.read_text() == text:
        return path
    fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
    with os.fdopen(fd, "w") as f:
        f.write(text)
    os.replace(tmp, path)  # atomic: a concurrent reader never sees half a file
    return path


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


def _discard(path: Path) -> None:
    try:
        path.unlink()
    except OSError:
        pass


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
            return source.line_eqns[n]
    # No line number: look for the names Numba quotes ('undefined_name') in the source.
    text = source.text.splitlines()
    for name in re.findall(r"'([A-Za-z_][A-Za-z0-9_]*)'", message):
        hits = [k + 1 for k, line in enumerate(text)
                if re.search(rf"\b{re.escape(name)}\b", line) and not line.strip().startswith("#")]
        if len(hits) == 1 and hits[0] in source.line_eqns:
            return source.line_eqns[hits[0]]
    return None
