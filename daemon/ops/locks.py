"""Exclusive locks over files on disk, held against other threads and processes.

Writers of the voice store, enrollments and training jobs may be the daemon (in
several worker threads) and the CLI at the same time. A lock is a ``flock`` on
a lock file plus a thread lock per file; it is reentrant within a thread.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import threading
from collections.abc import Iterator
from pathlib import Path

_GUARD = threading.Lock()
_THREAD_LOCKS: dict[str, threading.RLock] = {}
_DEPTH = threading.local()


@contextlib.contextmanager
def exclusive(lock_file: Path) -> Iterator[None]:
    """Hold ``lock_file`` exclusively (its folder is created when missing)."""
    key = os.path.abspath(lock_file)
    with _GUARD:
        thread_lock = _THREAD_LOCKS.setdefault(key, threading.RLock())
    with thread_lock:
        depths: dict[str, int] = _DEPTH.__dict__.setdefault("depths", {})
        if depths.get(key):  # already held by this thread: nothing more to take
            depths[key] += 1
            try:
                yield
            finally:
                depths[key] -= 1
            return
        lock_file.parent.mkdir(parents=True, exist_ok=True)
        with open(lock_file, "a+b") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            depths[key] = 1
            try:
                yield
            finally:
                depths[key] = 0
                fcntl.flock(handle, fcntl.LOCK_UN)
