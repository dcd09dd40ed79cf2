"""What the service needs from each way in (HTTP/HTTPS, Wyoming, WebRTC).

The service holds a list of listeners and drives them through this interface only:
it starts them in order, reconfigures them on reload, drains them on stop, and reads
their session counts for metrics. Nothing else of a protocol is the service's
business.

Each way in is one :class:`ListenerKind`, declared beside its listener: how it is made
from the service's :class:`Wiring`, and which of its settings it binds with (a reload
keeps those until the next start) or applies on reload. The service lists the kinds
(``daemon.service.listener_kinds``); ``tests/unit/protocols/test_listener_kinds.py``
checks that every setting of a kind's sections is one or the other, so a new setting
cannot be taken as live when nothing applies it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from daemon.config import Config
from daemon.ops.inflight import InFlight
from daemon.runtime.api import Services

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

    def reconfigure(self, config: Config, swapped: bool) -> Drained:
        """Apply a reloaded config (``swapped``: new engines were swapped in).

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


@dataclass(frozen=True)
class Wiring:
    """What the service hands a listener to be made from."""

    config: Config
    services: Services
    """The core's services: each call reads the engines in use now (ModelUnavailable
    while loading), across reloads."""
    service: Any
    """The service itself, for the HTTP app's routes (status, reload, voices...)."""
    inflight: InFlight
    on_failure: Callable[[], None]
    """Called when a listener ends without being asked to (the daemon then stops)."""
    observe: Callable[[str, str], None]
    """Counts a request's outcome for ``/metrics``: (protocol, error code or "")."""


@dataclass(frozen=True)
class ListenerKind:
    """One way in: how it is made, and how a reload treats its settings."""

    name: str
    make: Callable[[Wiring, Mapping[str, Listener]], Listener]
    """Makes the listener from the wiring and the listeners made before it."""
    restart: tuple[str, ...]
    """Settings (dotted keys or sections) it binds with: a change waits for a restart."""
    live: tuple[str, ...] = ()
    """Settings of its sections it applies on reload (in ``reconfigure`` or per request)."""

    @property
    def sections(self) -> frozenset[str]:
        """The top-level config sections this listener owns."""
        return frozenset(key.split(".")[0] for key in self.restart + self.live)
