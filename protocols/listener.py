"""What the service needs from each way in (HTTP/HTTPS, Wyoming, WebRTC).

The service holds a list of listeners and drives them through this interface only:
it starts them in order, reconfigures them on reload, drains them on stop, and reads
their session counts for metrics. Nothing else of a protocol is the service's
business.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from daemon.config import Config

if TYPE_CHECKING:
    from daemon.runtime.facade import Hearth

Drained = Callable[[], bool]
"""True once the requests that were running when it was made have all ended."""


@dataclass(frozen=True)
class Announcement:
    """A service to advertise over mDNS (DNS-SD type, port, TXT properties)."""

    type: str
    port: int
    properties: dict[str, str] = field(default_factory=dict)


class Listener(Protocol):
    """One protocol's way in: bind, serve, follow reloads, drain."""

    @property
    def name(self) -> str:
        """Short name for logs ("http", "wyoming", "webrtc")."""
        ...

    @property
    def early(self) -> bool:
        """Whether it starts before the engines load (HTTP: /healthz answers 503 meanwhile)."""
        ...

    async def start(self) -> None:
        """Bind and serve; returns once bound (raises OSError when the address is taken)."""
        ...

    async def stop(self, grace_s: float) -> None:
        """Stop accepting; requests in flight get up to ``grace_s``; idempotent."""
        ...

    def reconfigure(self, config: Config, hearth: Hearth | None) -> Drained:
        """Apply a reloaded config (``hearth``: the new engines, when swapped in).

        Returns a check that turns true once the requests running at the call have
        ended: the previous engines are closed only then.
        """
        ...

    def busy(self) -> bool:
        """Whether any request is in flight now."""
        ...

    def active_sessions(self) -> dict[str, int]:
        """Open sessions (connections, requests) per protocol name, for metrics."""
        ...

    def announcements(self) -> list[Announcement]:
        """Services to advertise over mDNS once started (none by default)."""
        ...

    def describe(self) -> str:
        """Where it listens, for the systemd status line ("" to leave it out)."""
        ...
