"""A disk cache of synthesized audio with a size cap and LRU eviction."""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import tempfile
import threading
from collections import OrderedDict
from pathlib import Path
from typing import Any

from daemon.ops.storage import unwritable

_LOGGER = logging.getLogger(__name__)
SUFFIX = ".audio"
MAGIC = b"HTC1"
HEADER_BYTES = len(MAGIC) + 8 + 32
"""Every entry starts with MAGIC, the audio's length (8 bytes, big-endian) and its
SHA-256, so that a file cut short or changed on disk is never served as audio."""


def _seal(data: bytes) -> bytes:
    return MAGIC + len(data).to_bytes(8, "big") + hashlib.sha256(data).digest() + data


def _unseal(blob: bytes) -> bytes | None:
    """The audio in an entry, or None when the entry is damaged."""
    if len(blob) < HEADER_BYTES or not blob.startswith(MAGIC):
        return None
    length = int.from_bytes(blob[4:12], "big")
    data = blob[HEADER_BYTES:]
    if len(data) != length or hashlib.sha256(data).digest() != blob[12:HEADER_BYTES]:
        return None
    return data


def cache_key(**parts: Any) -> str:
    """A stable key from voice, settings, format and text."""
    blob = json.dumps(parts, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


class TtsCache:
    """Files named by key; recency is kept in memory and in file mtimes."""

    def __init__(self, directory: Path, max_bytes: int) -> None:
        self.directory = directory
        self.max_bytes = max_bytes
        self.hits = 0
        self.misses = 0
        self.corrupt = 0
        """Damaged entries found (and deleted) on read."""
        self._lock = threading.Lock()
        self._entries: OrderedDict[str, int] = OrderedDict()
        self._total = 0
        self._write_warned = False
        problem = unwritable(directory)
        if problem is not None:
            # Speech is still served, only not kept: a read-only state directory
            # must not stop the daemon.
            _LOGGER.warning("TTS cache: cannot write to %s; audio is served uncached", problem)
            self._write_warned = True
        if not directory.is_dir():
            return
        for stale in directory.glob("*.tmp"):  # left by a crash mid-write
            stale.unlink(missing_ok=True)
        files = sorted(directory.glob(f"*{SUFFIX}"), key=lambda p: p.stat().st_mtime)
        for path in files:
            size = max(0, path.stat().st_size - HEADER_BYTES)
            self._entries[path.stem] = size
            self._total += size
        self._evict()

    @property
    def size_bytes(self) -> int:
        """Bytes stored now."""
        return self._total

    def __len__(self) -> int:
        return len(self._entries)

    def _path(self, key: str) -> Path:
        return self.directory / f"{key}{SUFFIX}"

    def get(self, key: str) -> bytes | None:
        """The cached bytes, refreshing recency; None on a miss."""
        with self._lock:
            if key not in self._entries:
                self.misses += 1
                return None
            self._entries.move_to_end(key)
        try:
            data = _unseal(self._path(key).read_bytes())
        except OSError:
            with self._lock:
                self._total -= self._entries.pop(key, 0)
                self.misses += 1
            return None
        if data is None:
            _LOGGER.warning("TTS cache entry %s is damaged; deleted, to be synthesized again", key)
            with contextlib.suppress(OSError):  # read-only: it stays out of the index
                self._path(key).unlink(missing_ok=True)
            with self._lock:
                self._total -= self._entries.pop(key, 0)
                self.corrupt += 1
                self.misses += 1
            return None
        with contextlib.suppress(OSError):  # recency on disk only; a read-only disk still serves
            os.utime(self._path(key))
        with self._lock:
            self.hits += 1
        return data

    def put(self, key: str, data: bytes) -> None:
        """Store atomically (temporary file + rename), then evict to the cap."""
        if len(data) > self.max_bytes:
            return
        tmp = ""
        try:
            fd, tmp = tempfile.mkstemp(dir=self.directory, suffix=".tmp")
            with os.fdopen(fd, "wb") as handle:
                handle.write(_seal(data))
            os.replace(tmp, self._path(key))
        except OSError as exc:
            if not self._write_warned:  # once: a read-only disk would log every request
                _LOGGER.warning("TTS cache: cannot write to %s: %s", self.directory, exc)
                self._write_warned = True
            if tmp:
                with contextlib.suppress(OSError):
                    Path(tmp).unlink(missing_ok=True)
            return
        with self._lock:
            self._total -= self._entries.pop(key, 0)
            self._entries[key] = len(data)
            self._total += len(data)
            self._evict()

    def _evict(self) -> None:
        while self._total > self.max_bytes and self._entries:
            key, size = self._entries.popitem(last=False)
            self._total -= size
            self._path(key).unlink(missing_ok=True)
