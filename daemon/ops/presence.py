"""The daemon's presence on mDNS: started in the background, restarted, stopped.

Probing the LAN for name conflicts takes seconds, so the advertisement starts in a
task of its own and never holds up readiness. ``zeroconf`` is imported only when
mDNS is enabled.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

from daemon.config import MdnsConfig

if TYPE_CHECKING:
    from daemon.ops.mdns import Advertiser


class MdnsPresence:
    """At most one advertisement at a time (see the module docstring)."""

    def __init__(self) -> None:
        self.advertiser: Advertiser | None = None
        self._starting: asyncio.Task[None] | None = None

    def start(
        self, config: MdnsConfig, services: Iterable[tuple[str, int, Mapping[str, str]]]
    ) -> None:
        """Advertise ``services`` (type, port, properties) when ``config.enabled``."""
        if not config.enabled:
            return
        from daemon.ops.mdns import Advertised, Advertiser

        advertised = [Advertised(kind, port, dict(props)) for kind, port, props in services]
        self.advertiser = Advertiser(config, advertised)
        self._starting = asyncio.create_task(self.advertiser.start(), name="mdns-start")

    async def stop(self) -> None:
        """Unregister; safe to call more than once."""
        advertiser, self.advertiser = self.advertiser, None
        starting, self._starting = self._starting, None
        if starting is not None:
            starting.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await starting
        if advertiser is not None:
            await advertiser.close()
