"""What is being fetched, and how far along: for the log and ``/healthz``.

One :class:`Downloads` per daemon; a fetch reports its bytes as they arrive and is
logged at most every few seconds (and at each tenth of the file), so a long download
shows in the log without flooding it.
"""

from __future__ import annotations

import enum
import logging
import threading
import time
from dataclasses import dataclass, field

_LOGGER = logging.getLogger(__name__)
LOG_EVERY_S = 5.0
"""Least time between two progress lines of one download (s)."""


class FetchState(enum.Enum):
    """Where one download stands."""

    FETCHING = "fetching"
    DONE = "done"
    FAILED = "failed"


@dataclass
class Download:
    """One model or voice being fetched."""

    name: str
    """What was asked for (``small.en``, ``en_US-lessac-medium``)."""
    kind: str
    """``asr`` or ``voice``."""
    source: str
    """Where from (the repository)."""
    target: str
    """Where to (a folder in the data volume)."""
    total_bytes: int = 0
    done_bytes: int = 0
    state: FetchState = FetchState.FETCHING
    error: str = ""
    started: float = field(default_factory=time.monotonic)
    finished: float = 0.0
    _logged_at: float = 0.0
    _logged_tenth: int = -1

    def describe(self) -> dict[str, object]:
        """As plain data (``/healthz``)."""
        end = self.finished or time.monotonic()
        percent = 100.0 * self.done_bytes / self.total_bytes if self.total_bytes else 0.0
        described: dict[str, object] = {
            "name": self.name,
            "kind": self.kind,
            "source": self.source,
            "target": self.target,
            "state": self.state.value,
            "done_bytes": self.done_bytes,
            "total_bytes": self.total_bytes,
            "percent": round(percent, 1),
            "elapsed_s": round(end - self.started, 1),
        }
        if self.error:
            described["error"] = self.error
        return described


class Downloads:
    """Every download this daemon started (thread-safe: fetches run in threads)."""

    def __init__(self) -> None:
        self._items: dict[tuple[str, str], Download] = {}
        self._lock = threading.Lock()

    def begin(self, name: str, kind: str, source: str, target: str, total: int) -> Download:
        """Record a download starting (a failed one of the same name starts over)."""
        item = Download(name, kind, source, target, total_bytes=total)
        with self._lock:
            self._items[(kind, name)] = item
        _LOGGER.info(
            "Fetching %s %s from %s into %s (%.1f MB)", kind, name, source, target, total / 1e6
        )
        return item

    def advance(self, item: Download, done: int) -> None:
        """``item`` has ``done`` bytes on disk; log it now and then."""
        item.done_bytes = done
        now = time.monotonic()
        tenth = 10 * done // item.total_bytes if item.total_bytes else 0
        if (
            tenth != item._logged_tenth
            and now - item._logged_at >= 0.2
            or (now - item._logged_at >= LOG_EVERY_S)
        ):
            item._logged_at, item._logged_tenth = now, tenth
            _LOGGER.info(
                "Fetching %s %s: %.1f of %.1f MB (%d%%)",
                item.kind,
                item.name,
                done / 1e6,
                item.total_bytes / 1e6,
                100 * done // max(item.total_bytes, 1),
            )

    def finish(self, item: Download) -> None:
        """``item`` is whole, checked and in place."""
        item.done_bytes, item.state, item.finished = (
            item.total_bytes,
            FetchState.DONE,
            time.monotonic(),
        )
        _LOGGER.info(
            "Fetched %s %s (%.1f MB in %.1f s) into %s",
            item.kind,
            item.name,
            item.total_bytes / 1e6,
            item.finished - item.started,
            item.target,
        )

    def fail(self, item: Download, error: str) -> None:
        """``item`` could not be fetched (the reason is logged by the caller)."""
        item.state, item.error, item.finished = FetchState.FAILED, error, time.monotonic()

    def failed(self, name: str, kind: str, source: str, target: str, error: str) -> None:
        """Record a download that could not even start (offline, unknown name)."""
        item = self.begin_quietly(name, kind, source, target)
        self.fail(item, error)

    def begin_quietly(self, name: str, kind: str, source: str, target: str) -> Download:
        """Record a download of unknown size, without a log line."""
        item = Download(name, kind, source, target)
        with self._lock:
            self._items[(kind, name)] = item
        return item

    def describe(self) -> list[dict[str, object]]:
        """Every download as plain data, oldest first."""
        with self._lock:
            items = list(self._items.values())
        return [item.describe() for item in items]
