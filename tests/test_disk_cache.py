"""The disk cache is an optimization only: damage to it, or a folder that cannot be written,
is one DiskCacheWarning and a compile in memory, never a failed call (chapter 09).

Damaged files are made the way they are met in practice: a first process fills a cache
folder, its files are truncated, overwritten with garbage or emptied, and a second, fresh
process (a subprocess, so nothing is left in memory) must still return correct values. Folder
problems are simulated in this process with monkeypatch, since the tests may run as root, for
whom `chmod` does not stop writes (see each test for how).
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
import warnings
from pathlib import Path

import numpy as np
import pytest

import minijit as mj
import minijit.numpy as mnp
from minijit import primitives as P
from minijit.codegen import CodegenError
from minijit.codegen import compile as cc
from minijit.codegen.compile import DiskCacheWarning

# Two programs, each checked against NumPy; `g` has the same generated code as `f` (a hit in
# memory). Prints what happened as JSON: correct values, DiskCacheWarnings, where code came from.
CHILD = textwrap.dedent("""
    import json, warnings
    import numpy as np
    import minijit as mj, minijit.numpy as mnp
    from minijit.codegen import compile as cc

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")  # so that "once" is minijit's doing, not Python's
        f = mj.jit(lambda x: mnp.sin(x) * 2.0 + 0.25, backend="numba")
        g = mj.jit(lambda y: mnp.sin(y) * 2.0 + 0.25, backend="numba")
        h = mj.jit(lambda x: mnp.cos(x) - 0.5, backend="numba")
        x = np.linspace(0.0, 1.0, 7)
        ok = [bool(np.allclose(f(x), np.sin(x) * 2.0 + 0.25)),
              bool(np.allclose(g(x + 1), np.sin(x + 1) * 2.0 + 0.25)),
              bool(np.allclose(h(x), np.cos(x) - 0.5))]
    print(json.dumps({
        "ok": ok, "stats": cc.stats,
        "warnings": [str(w.message) for w in caught if w.category is cc.DiskCacheWarning],
    }))
""")


def run_child(cache: Path) -> dict:
    env = {**os.environ, "MINIJIT_CACHE_DIR": str(cache)}
    env.pop("MINIJIT_DISK_CACHE", None)
    done = subprocess.run([sys.executable, "-c", CHILD], env=env, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.splitlines()[-1])


@pytest.fixture(scope="module")
def filled(tmp_path_factory) -> Path:
    """A cache folder that a first process filled (copy it before damaging it)."""
    cache = tmp_path_factory.mktemp("filled") / "cache"
    first = run_child(cache)
    assert first["ok"] == [True] * 3 and first["warnings"] == []
    assert first["stats"]["compiled"] == 2  # f (and g with it) and h
    return cache


def copy_of(filled: Path, tmp_path: Path) -> Path:
    cache = tmp_path / "cache"
    shutil.copytree(filled, cache)  # copy2 keeps timestamps, which older Numbas key on
    return cache


def files_of_kind(cache: Path, kind: str) -> list[Path]:
    where = cache if kind == "py" else cache / "__pycache__"
    found = sorted(where.glob(f"m_*.{kind}"))
    assert len(found) == 2, found  # one per program
    return found


def damage(path: Path, how: str) -> bytes:
    data = path.read_bytes()
    bad = {"truncated": data[: len(data) // 2],
           "garbage": b"\xff\xfenot what minijit or Numba wrote\x00" * 8,
           "empty": b""}[how]
    path.write_bytes(bad)
    return bad


def assert_one_warning(report: dict, cache: Path) -> None:
    assert report["ok"] == [True] * 3
    assert len(report["warnings"]) == 1, report["warnings"]
    message = report["warnings"][0]
    assert str(cache) in message
    assert "MINIJIT_DISK_CACHE=0" in message and "config.update('disk_cache', False)" in message


# --------------------------------------------------------------------------- damaged files


def test_an_undamaged_copy_loads_from_disk(filled, tmp_path):
    report = run_child(copy_of(filled, tmp_path))
    assert report["ok"] == [True] * 3 and report["warnings"] == []
    assert report["stats"]["disk_hits"] == 2 and report["stats"]["compiled"] == 0


@pytest.mark.parametrize("how", ["truncated", "garbage", "empty"])
@pytest.mark.parametrize("kind", ["nbi", "nbc", "py"])
def test_a_damaged_file_is_one_warning_and_a_compile_in_memory(filled, tmp_path, kind, how):
    """`.nbi` is Numba's index, `.nbc` its machine code, `.py` our generated source; both
    programs' files are damaged, and still only one warning names the folder."""
    cache = copy_of(filled, tmp_path)
    damaged = {path: damage(path, how) for path in files_of_kind(cache, kind)}
    report = run_child(cache)
    assert_one_warning(report, cache)
    # Nothing damaged is left for the next process: removed, or (the source) rewritten.
    for path, bad in damaged.items():
        assert not path.exists() or path.read_bytes() != bad


@pytest.mark.parametrize("kind", ["nbi", "nbc"])
def test_the_next_process_caches_again_quietly(filled, tmp_path, kind):
    cache = copy_of(filled, tmp_path)
    for path in files_of_kind(cache, kind):
        damage(path, "truncated")
    assert len(run_child(cache)["warnings"]) == 1
    third = run_child(cache)  # compiles afresh and writes the cache again, without warning
    assert third["ok"] == [True] * 3 and third["warnings"] == []
    fourth = run_child(cache)
    assert fourth["warnings"] == [] and fourth["stats"]["disk_hits"] == 2


def test_processes_compiling_the_same_program_at_once_share_the_cache(tmp_path):
    """Every file is written to a temporary name and renamed into place, so processes that
    write the same program at once never read each other's half-written files."""
    cache = tmp_path / "cache"
    env = {**os.environ, "MINIJIT_CACHE_DIR": str(cache)}
    procs = [subprocess.Popen([sys.executable, "-c", CHILD], env=env, text=True,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE)
             for _ in range(3)]
    for p in procs:
        out, err = p.communicate(timeout=300)
        assert p.returncode == 0, err[-3000:]
        report = json.loads(out.splitlines()[-1])
        assert report["ok"] == [True] * 3 and report["warnings"] == []
    later = run_child(cache)
    assert later["warnings"] == [] and later["stats"]["disk_hits"] == 2
    assert not list(cache.rglob("*.tmp*"))  # no temporary file left behind


# --------------------------------------------------------------------------- folder problems
# In this process: each test compiles programs no other test compiles (the constants differ),
# so the in-memory cache cannot answer for the disk.


@pytest.fixture
def cache_at(monkeypatch):
    def point(path: Path) -> Path:
        monkeypatch.setenv("MINIJIT_CACHE_DIR", str(path))
        monkeypatch.delenv("MINIJIT_DISK_CACHE", raising=False)
        return path

    return point


def compile_two(c: float) -> list[warnings.WarningMessage]:
    """Compile and check two new programs; the DiskCacheWarnings they raised."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        x = np.linspace(0.0, 2.0, 5)
        f = mj.jit(lambda x: x * c + 1.0, backend="numba")
        g = mj.jit(lambda x: mnp.exp(x) - c, backend="numba")
        np.testing.assert_allclose(f(x), x * c + 1.0)
        np.testing.assert_allclose(g(x), np.exp(x) - c)
    return [w for w in caught if issubclass(w.category, DiskCacheWarning)]


def assert_warned_once(caught, cache: Path) -> None:
    assert len(caught) == 1, [str(w.message) for w in caught]
    message = str(caught[0].message)
    assert str(cache) in message and "cannot be written" in message
    assert "MINIJIT_DISK_CACHE=0" in message and "config.update('disk_cache', False)" in message
    assert caught[0].filename == __file__  # it points at the call, not at minijit


def test_a_cache_path_that_is_a_file(tmp_path, cache_at):
    cache = cache_at(tmp_path / "cache")
    cache.write_text("not a folder")
    assert_warned_once(compile_two(1.125), cache)
    assert cache.read_text() == "not a folder"  # left as it was


def test_a_cache_path_under_a_file(tmp_path, cache_at):
    (tmp_path / "file").write_text("")
    cache = cache_at(tmp_path / "file" / "cache")  # mkdir fails: Not a directory
    assert_warned_once(compile_two(1.25), cache)


def deny(code: int):
    def fail(*args, **kwargs):
        raise OSError(code, os.strerror(code))

    return fail


@pytest.mark.parametrize("code", [pytest.param(errno.EACCES, id="read-only-EACCES"),
                                  pytest.param(errno.EROFS, id="read-only-EROFS"),
                                  pytest.param(errno.ENOSPC, id="full-ENOSPC")])
def test_a_folder_that_cannot_be_written(tmp_path, cache_at, monkeypatch, code):
    """Read-only (EACCES, EROFS) or full (ENOSPC). Simulated where the source file is created:
    minijit writes it to a temporary file (`tempfile.mkstemp`) that it renames into place."""
    cache = cache_at(tmp_path / "cache")
    cache.mkdir()
    monkeypatch.setattr(tempfile, "mkstemp", deny(code))
    assert_warned_once(compile_two(1.5 + code), cache)
    assert list(cache.iterdir()) == []


def test_a_disk_that_fills_while_numba_saves(tmp_path, cache_at, monkeypatch):
    """The source is written, then the disk is full when Numba stores the machine code:
    Numba's writes (index and code, each to a temporary file first) fail with ENOSPC."""
    from numba.core.caching import IndexDataCacheFile

    cache = cache_at(tmp_path / "cache")
    monkeypatch.setattr(IndexDataCacheFile, "_open_for_write", deny(errno.ENOSPC))
    assert_warned_once(compile_two(1.75), cache)
    leftovers = [p for p in cache.rglob("*") if p.is_file()]
    assert leftovers == []  # the failed program's source is removed too


def test_the_disk_cache_is_not_tried_again_after_the_folder_failed(tmp_path, cache_at,
                                                                     monkeypatch):
    cache = cache_at(tmp_path / "cache")
    cache.write_text("")
    tries = []
    on_disk = cc._compile_on_disk
    monkeypatch.setattr(cc, "_compile_on_disk", lambda *a: tries.append(a) or on_disk(*a))
    assert len(compile_two(2.25)) == 1
    assert len(tries) == 1  # the second program already skipped the folder
    assert compile_two(2.5) == []  # no second warning
    assert len(tries) == 1


# --------------------------------------------------------------------------- real errors


def test_a_genuine_compile_error_is_still_a_codegen_error(tmp_path, cache_at, monkeypatch):
    """Numba rejects the generated code: retried in memory, it fails again, so it is the
    code's fault, not the cache's. No warning, and nothing is left in the cache."""
    from minijit.codegen.rules import Statements, numba_rules

    def broken(lo, eqn, args, outs):
        lo.line(f"{outs[0]} = undefined_name({args[0]})")

    cache = cache_at(tmp_path / "cache")
    monkeypatch.setitem(numba_rules, P.rev_p, Statements(broken))
    f = mj.jit(lambda x: x[::-1] * 2.75, backend="numba")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with pytest.raises(CodegenError, match="rev"):
            f(np.ones(3))
    assert not [w for w in caught if issubclass(w.category, DiskCacheWarning)]
    assert f._cache_size() == 0
    assert [p for p in cache.rglob("*") if p.is_file()] == []
    monkeypatch.undo()  # the rule is back; the cache folder still works
    cache_at(cache)
    assert compile_two(3.25) == []
    assert list(cache.glob("m_*.py"))
