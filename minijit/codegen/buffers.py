"""Memory a call reuses from the calls before it.

A compiled call allocates its outputs (in `NumbaExecutable`) and its intermediates (inside
the generated code), and frees the intermediates when it returns. Fresh memory costs page
faults: the kernel's first write to each 4 KiB page traps to the kernel, which zeroes it.
For a large call that is a large share of its time, in two ways:

- **glibc gives freed heap memory back too eagerly.** Its malloc returns the top of the heap
  to the system once more than twice its mmap threshold is free there. A call that
  allocates and frees a few megabytes (attention's 512x512 scores: two 2 MiB intermediates)
  grows and shrinks the heap every time, and faults it all in again: 1.5 ms of a 4.5 ms
  call. `keep_freed_heap` sets the threshold the heap trims at to `TRIM_BYTES` and serves
  blocks up to `POOL_FROM_BYTES` from the heap (the largest mmap threshold glibc allows, which
  its own dynamic threshold reaches anyway), once, at the first compile.
- **Blocks above that are always new mappings**, unmapped on free. An 80 MB output faults
  20,000 pages on every call, more than the computation takes on many cores. So outputs of
  `POOL_FROM_BYTES` or more come from `empty`: a freed output's memory goes back to a small
  pool instead, and the next output of the same byte size takes it.

Invariants:
- memory is handed out again only when nothing can see it: a pooled output is an array whose
  base is a `_Lease`; the lease returns its memory to the pool from `__del__`, which Python
  runs only once every array and view of that memory is gone;
- the pool holds at most `POOL_KEEP_BYTES` in all, `POOL_KEEP_EACH` blocks of one size, and
  no block larger than half of `POOL_KEEP_BYTES`: memory beyond that is freed as NumPy would
  free it, so deleting one huge result still gives its memory back;
- a freed block that would overfill the pool makes room by freeing the blocks given back
  longest ago: the pool holds the sizes used last. Kept first-come instead, a program's
  early outputs (a GELU's 80 MB ones) filled it for good, and every later size missed it
  (on a 13-core machine a softmax's 32 MB output then faulted in on each call: 13 ms a call,
  against 1.8 ms with the pool, benchmarks/README.md);
- `config.update("reuse_memory", False)` stops both: outputs come from `np.empty` and the
  pool is emptied; set before the first compile, the heap's settings are never touched;
- thread-safe: the pool's lock is reentrant, since a lease can die, and its `__del__` run,
  in the middle of any Python code, the pool's own included.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import sys
import threading
from collections import OrderedDict

import numpy as np

from minijit.config import config

POOL_FROM_BYTES = 32 * 2**20  # glibc's largest mmap threshold on 64-bit: above it, new mappings
TRIM_BYTES = 128 * 2**20  # free memory the heap's top may keep before it is returned
POOL_KEEP_BYTES = 256 * 2**20
POOL_KEEP_EACH = 2  # a loop that keeps its last result needs two of a size: last and next

M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3  # glibc's malloc.h

_lock = threading.RLock()
_free: dict[int, list[np.ndarray]] = {}  # byte size -> raw uint8 blocks no array uses
_given_back: OrderedDict[int, np.ndarray] = OrderedDict()  # id -> each pooled block, oldest first
_state = {"pooled_bytes": 0, "heap_set": False, "hits": 0, "misses": 0}


def keep_freed_heap() -> bool:
    """Once per process, on glibc: keep freed heap memory for the next call (above). True
    where the settings were applied now or before."""
    if _state["heap_set"]:
        return True
    if not config.reuse_memory or not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        mallopt = libc.mallopt
    except (OSError, AttributeError):  # not glibc (musl has no mallopt)
        return False
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    # mallopt returns 1 on success; setting either value turns glibc's dynamic threshold off,
    # so both are set
    ok = mallopt(M_MMAP_THRESHOLD, POOL_FROM_BYTES) == 1 and mallopt(M_TRIM_THRESHOLD,
                                                                    TRIM_BYTES) == 1
    _state["heap_set"] = ok
    return ok


class _Lease:
    """The owner of a pooled output's memory, seen by NumPy through `__array_interface__`:
    the arrays made from it keep it alive, and it gives `_raw` back when they are gone."""

    __slots__ = ("_raw", "__array_interface__")

    def __init__(self, raw: np.ndarray, shape: tuple, dtype: np.dtype):
        self._raw = raw
        self.__array_interface__ = {"data": (raw.ctypes.data, False), "shape": shape,
                                    "typestr": dtype.str, "version": 3}

    def __del__(self):
        try:
            _give_back(self._raw)
        except Exception:  # noqa: BLE001 - at interpreter exit the module may be half gone
            pass


def nbytes(shape: tuple, dtype) -> int:
    """The bytes of an array of this shape and dtype."""
    return int(np.prod(shape, dtype=np.int64)) * np.dtype(dtype).itemsize


def allocator(shape: tuple, dtype):
    """What allocates an output buffer of this type: `np.empty`, or for one large enough that
    fresh memory costs more than the pool's bookkeeping, `empty`."""
    return empty if nbytes(shape, dtype) >= POOL_FROM_BYTES else np.empty


def empty(shape: tuple, dtype) -> np.ndarray:
    """`np.empty(shape, dtype)`, from a freed output's memory when the pool has one of this
    byte size. Used for outputs of `POOL_FROM_BYTES` or more; smaller ones gain nothing."""
    dtype = np.dtype(dtype)
    size = nbytes(shape, dtype)
    if not config.reuse_memory:
        drain()
        return np.empty(shape, dtype)
    with _lock:
        blocks = _free.get(size)
        raw = blocks.pop() if blocks else None
        if raw is not None:
            del _given_back[id(raw)]
            _state["pooled_bytes"] -= size
            _state["hits"] += 1
        else:
            _state["misses"] += 1
    if raw is None:
        raw = np.empty(size, np.uint8)
    return np.asarray(_Lease(raw, tuple(shape), dtype))


def _give_back(raw: np.ndarray) -> None:
    size = raw.nbytes
    with _lock:
        blocks = _free.setdefault(size, [])
        if (not config.reuse_memory or len(blocks) >= POOL_KEEP_EACH
                or size > POOL_KEEP_BYTES // 2):
            return  # freed as NumPy frees it
        while _state["pooled_bytes"] + size > POOL_KEEP_BYTES:  # the oldest blocks make room
            _, old = _given_back.popitem(last=False)
            same = _free[old.nbytes]
            same.pop(next(i for i, b in enumerate(same) if b is old))
            _state["pooled_bytes"] -= old.nbytes
        blocks.append(raw)
        _given_back[id(raw)] = raw
        _state["pooled_bytes"] += size


def drain() -> None:
    """Free every pooled block (the arrays in use keep theirs until they are gone)."""
    with _lock:
        _free.clear()
        _given_back.clear()
        _state["pooled_bytes"] = 0


def stats() -> dict:
    """Pooled bytes, and how many pooled allocations found a block (hits) or did not."""
    with _lock:
        return {"pooled_bytes": _state["pooled_bytes"], "hits": _state["hits"],
                "misses": _state["misses"], "heap_set": _state["heap_set"]}
