"""The daemon's ways in as one group: started in order, announced on mDNS, told of a
reload, stopped together.

The service makes the listeners (HTTP/HTTPS, Wyoming, WebRTC) and hands them here;
this group knows them only through :class:`Door`, the part of
``protocols.listener.Listener`` it drives, and holds the mDNS presence that
announces what they serve.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Protocol

from daemon.config import MdnsConfig
from daemon.ops.presence import MdnsPresence

_LOGGER = logging.getLogger(__name__)


class Announced(Protocol):
    """A service to advertise (``protocols.listener.Announcement``)."""

    type: str
    port: int
    properties: Mapping[str, str]


class Door(Protocol):
    """What the group drives of one listener."""

    @property
    def name(self) -> str:
        """Short name for logs."""
        ...

    @property
    def early(self) -> bool:
        """Whether it starts before the engines load."""
        ...

    async def start(self) -> None:
        """Bind and serve."""
        ...

    async def stop(self, grace_s: float) -> None:
        """Stop accepting; requests in flight get up to ``grace_s``."""
        ...

    def reconfigure(self, config: Any, swapped: bool) -> Callable[[], bool]:
        """Apply a reloaded config; a check that the earlier requests have ended."""
        ...

    def active_sessions(self) -> dict[str, int]:
        """Open sessions per protocol name."""
        ...

    def announcements(self) -> Iterable[Announced]:
        """Services to advertise over mDNS."""
        ...

    def describe(self) -> str:
        """Where it listens ("" to leave it out)."""
        ...


class Doors:
    """Every listener, in start-up order, and the mDNS presence announcing them."""

    def __init__(self, stopping: Callable[[], bool]) -> None:
        """``stopping``: whether the daemon is stopping (nothing starts then)."""
        self.listeners: list[Any] = []
        """Every way in, in start-up order (:class:`Door` each)."""
        self.mdns = MdnsPresence()
        self._stopping = stopping

    async def start(self, early: bool) -> None:
        """Start the early listeners (before loading) or the others, in list order."""
        for listener in self.listeners:
            if listener.early == early and not self._stopping():
                await listener.start()

    def announce(self, config: MdnsConfig) -> None:
        """Advertise what the listeners announce (when ``config.enabled``)."""
        if self._stopping():
            return
        announced = (a for listener in self.listeners for a in listener.announcements())
        self.mdns.start(config, ((a.type, a.port, a.properties) for a in announced))

    async def announce_again(self, config: MdnsConfig) -> None:
        """The mDNS settings changed: unregister, then advertise with ``config``."""
        await self.mdns.stop()
        self.announce(config)

    def sessions(self) -> dict[str, int]:
        """Open sessions per protocol name, for metrics."""
        sessions: dict[str, int] = {}
        for listener in self.listeners:
            sessions |= listener.active_sessions()
        return sessions

    def where(self) -> list[str]:
        """Where each listener listens, for the status line."""
        return [text for listener in self.listeners if (text := listener.describe())]

    def reconfigure(self, config: Any, swapped: bool) -> list[Callable[[], bool]]:
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
