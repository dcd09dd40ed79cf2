"""The process's memory: what it holds, and what the C allocator keeps of it.

Most of Hearth's memory is native: the models' weights, the engines' buffers, and the
audio and text every request allocates and frees across a score of threads (the worker
pools, asyncio's executor, the native libraries' own). glibc's allocator gives each
contending thread an arena of its own (up to eight per core) and returns freed memory to
the system only from the top of a heap, so a long-running process with varied request
sizes holds more and more free memory in holes: its resident set only grows.

This module reads the process's resident set and glibc's heap (``mallinfo2``), limits
the arenas (``mallopt(M_ARENA_MAX)``, before the worker threads start) and gives the free
memory back (``malloc_trim``). Everything degrades to nothing on a C library that is
not glibc.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import ctypes.util
import functools
import logging
import os
from dataclasses import dataclass

_LOGGER = logging.getLogger(__name__)

M_ARENA_MAX = -8
"""mallopt's parameter number for the arena limit (glibc's malloc.h)."""


class _MallInfo2(ctypes.Structure):
    _fields_ = [
        (name, ctypes.c_size_t)
        for name in (
            "arena", "ordblks", "smblks", "hblks", "hblkhd",
            "usmblks", "fsmblks", "uordblks", "fordblks", "keepcost",
        )
    ]  # fmt: skip


@dataclass(frozen=True)
class NativeHeap:
    """glibc's heap, in bytes (``mallinfo2``)."""

    in_use: int
    """Allocated and not freed (``uordblks`` plus mmapped chunks)."""
    free: int
    """Freed but kept by the allocator (``fordblks``): what a trim may give back."""
    mapped: int
    """Large chunks in their own mappings (``hblkhd``), returned on free."""


@functools.cache
def _libc() -> ctypes.CDLL | None:
    name = ctypes.util.find_library("c")
    if name is None:
        return None
    try:
        libc = ctypes.CDLL(name)
        libc.mallinfo2.restype = _MallInfo2
        libc.malloc_trim.argtypes = [ctypes.c_size_t]
        libc.mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    except (OSError, AttributeError):
        return None  # not glibc, or older than 2.33
    return libc


def native_heap() -> NativeHeap | None:
    """The heap glibc manages now (None: not glibc)."""
    libc = _libc()
    if libc is None:
        return None
    info = libc.mallinfo2()
    return NativeHeap(
        in_use=int(info.uordblks) + int(info.hblkhd),
        free=int(info.fordblks),
        mapped=int(info.hblkhd),
    )


def resident_bytes() -> int:
    """The process's resident set (bytes), from /proc; 0 where there is none."""
    try:
        with open("/proc/self/statm", encoding="ascii") as statm:
            pages = int(statm.read().split()[1])
    except (OSError, ValueError, IndexError):
        return 0
    return pages * os.sysconf("SC_PAGE_SIZE")


def limit_arenas(arenas: int) -> bool:
    """Let glibc make at most ``arenas`` heaps (0: glibc's own limit); True when set.

    Takes effect for threads that have no arena yet: call it before the worker pools
    start. ``MALLOC_ARENA_MAX`` in the environment, where set, wins (the operator's say).
    """
    libc = _libc()
    if libc is None or arenas <= 0 or os.environ.get("MALLOC_ARENA_MAX"):
        return False
    return bool(libc.mallopt(M_ARENA_MAX, arenas))


def trim() -> int:
    """Give the allocator's free memory back to the system; bytes of resident set freed
    (about: the resident set before and after). Call it from a worker thread: on a large
    heap it takes milliseconds."""
    libc = _libc()
    if libc is None:
        return 0
    before = resident_bytes()
    libc.malloc_trim(0)
    return max(0, before - resident_bytes())


ARENAS = 2
"""glibc arenas the daemon allows (glibc's own default is 8 per core): its threads
mostly wait on models, so they rarely contend for the allocator, and fewer arenas hold
fewer holes (bench/RESULTS.md, "Soak")."""
TRIM_EVERY_S = 60.0
"""How often the allocator's free memory is given back to the system."""


class Trimmer:
    """Gives the allocator's free memory back every :data:`TRIM_EVERY_S`, in a worker
    thread; ``stop`` is safe to call more than once."""

    def __init__(self, every_s: float = TRIM_EVERY_S) -> None:
        self.every_s = every_s
        self.freed = 0
        """Bytes of resident set given back so far (about)."""
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        """Start trimming (on the running loop); nothing where glibc is not the allocator."""
        if self._task is None and _libc() is not None:
            self._task = asyncio.create_task(self._run(), name="memory-trim")

    async def _run(self) -> None:
        while True:
            await asyncio.sleep(self.every_s)
            freed = await asyncio.to_thread(trim)
            self.freed += freed
            if freed >= 1 << 20:
                _LOGGER.debug("Gave %.0f MB of free heap back to the system", freed / 1e6)

    async def stop(self) -> None:
        """Stop trimming."""
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
