"""The daemon's ways in as one group: started in order, told of a reload, stopped
together, and what they announce on mDNS.

The service makes the listeners (HTTP/HTTPS, Wyoming, WebRTC) and hands them here;
this group drives them through :class:`~protocols.listener.Listener` only.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterator, Mapping

from daemon.config import Config
from protocols.listener import Drained, Listener

_LOGGER = logging.getLogger(__name__)


class Doors:
    """Every listener, in start-up order."""

    def __init__(self, stopping: Callable[[], bool]) -> None:
        """``stopping``: whether the daemon is stopping (nothing starts then)."""
        self.listeners: list[Listener] = []
        """Every way in, in start-up order."""
        self._stopping = stopping

    async def start(self, early: bool) -> None:
        """Start the early listeners (before loading) or the others, in list order."""
        for listener in self.listeners:
            if listener.early == early and not self._stopping():
                await listener.start()

    def announced(self) -> Iterator[tuple[str, int, Mapping[str, str]]]:
        """What the listeners advertise over mDNS: (type, port, properties) each."""
        for listener in self.listeners:
            for a in listener.announcements():
                yield a.type, a.port, a.properties

    def sessions(self) -> dict[str, int]:
        """Open sessions per protocol name, for metrics."""
        sessions: dict[str, int] = {}
        for listener in self.listeners:
            sessions |= listener.active_sessions()
        return sessions

    def where(self) -> list[str]:
        """Where each listener listens, for the status line."""
        return [text for listener in self.listeners if (text := listener.describe())]

    def reconfigure(self, config: Config, swapped: bool) -> list[Drained]:
        """Tell every listener of a reload; a check per listener that its requests
        running on the previous engines have ended."""
        return [listener.reconfigure(config, swapped) for listener in self.listeners]

    async def stop(self, grace_s: float) -> None:
        """Stop every listener at once; one that fails to stop does not hold up the rest."""
        results = await asyncio.gather(
            *(listener.stop(grace_s) for listener in self.listeners), return_exceptions=True
        )
        for listener, result in zip(self.listeners, results, strict=True):
            if isinstance(result, Exception):
                _LOGGER.error("Stopping %s failed: %s", listener.name, result, exc_info=result)
