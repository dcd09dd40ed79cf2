"""The Wyoming listener: TCP or a Unix socket, with a cap on connections.

A connection that sends nothing for ``wyoming.idle_timeout_s`` between requests is
closed (a satellite's long connection streams audio or pings; Home Assistant opens
one per request). When a connection arrives at ``wyoming.max_connections``, the
connection idle the longest between requests makes room for it (one still ending
after an error goes first), so silent connections cannot lock Home Assistant out;
only when every connection is in a request is the new one refused with ``busy``.

It starts once the engines are warm. A reload applies the connection limits at once;
a stop lets each request in flight finish within the grace period, and closes idle
connections right away.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import stat
import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import SupportsIndex

from wyoming.error import Error
from wyoming.event import async_write_event

from daemon.config import Config, NetworkConfig
from daemon.runtime.api import Services
from protocols.listener import Announcement, Drained, Listener, ListenerKind, Wiring
from protocols.peers import RefusalLog, peer_allowed, refusal
from protocols.wyoming.framing import MAX_HEADER_BYTES
from protocols.wyoming.handler import Observer, WyomingConnection

_LOGGER = logging.getLogger(__name__)

WYOMING_TYPE = "_wyoming._tcp.local."
IDLE_CHECK_S = 5.0
"""Longest time between checks for idle connections (shorter for short timeouts)."""


class _TimedReader(asyncio.StreamReader):
    """A stream reader that notes when bytes last arrived (the idle clock)."""

    def __init__(self, limit: int, loop: asyncio.AbstractEventLoop) -> None:
        super().__init__(limit=limit, loop=loop)
        self.last_data = time.monotonic()

    def feed_data(self, data: Iterable[SupportsIndex]) -> None:
        """Bytes arrived from the peer."""
        self.last_data = time.monotonic()
        super().feed_data(data)


def idle_for(connection: WyomingConnection, now: float) -> float:
    """Seconds since ``connection`` last received bytes."""
    return now - getattr(connection.reader, "last_data", now)


class WyomingServer:
    """Accepts connections on ``uri`` and serves each with a WyomingConnection."""

    name = "wyoming"
    early = False

    def __init__(
        self,
        uri: str,
        services: Services,
        max_connections: int,
        max_event_bytes: int,
        body_timeout_s: float,
        observer: Observer | None = None,
        idle_timeout_s: float = 300.0,
    ) -> None:
        self.uri = uri
        self.observer = observer
        self._services = services
        self.max_connections = max_connections
        self.max_event_bytes = max_event_bytes
        self.body_timeout_s = body_timeout_s
        self.idle_timeout_s = idle_timeout_s
        self.network = NetworkConfig()
        """Which peers are answered (``network.*``, applied on reload)."""
        self._refused = RefusalLog("Wyoming")
        self._server: asyncio.AbstractServer | None = None
        self._idle_check: asyncio.Task[None] | None = None
        self._tasks: dict[asyncio.Task[None], WyomingConnection] = {}
        self.port = 0
        """The bound TCP port (0 for a Unix socket)."""

    @classmethod
    def from_config(
        cls, config: Config, services: Services, observer: Observer | None = None
    ) -> WyomingServer:
        """The listener ``config`` describes (``wyoming.*``, ``limits.request_timeout_s``)."""
        server = cls(
            config.wyoming.uri,
            services,
            max_connections=config.wyoming.max_connections,
            max_event_bytes=config.wyoming.max_event_bytes,
            body_timeout_s=config.limits.request_timeout_s,
            observer=observer,
            idle_timeout_s=config.wyoming.idle_timeout_s,
        )
        server.network = config.network
        return server

    @property
    def connections(self) -> int:
        """Connections open now."""
        return len(self._tasks)

    def busy_connections(self) -> list[WyomingConnection]:
        """Connections in the middle of a request now."""
        return [connection for connection in self._tasks.values() if connection.busy]

    def busy(self) -> bool:
        """Whether a connection is in the middle of a request."""
        return any(connection.busy for connection in self._tasks.values())

    def active_sessions(self) -> dict[str, int]:
        """Open connections."""
        return {"wyoming": self.connections}

    def reconfigure(self, config: Config, swapped: bool) -> Drained:
        """Apply the live limits; the check covers the requests running now."""
        self.max_connections = config.wyoming.max_connections
        self.max_event_bytes = config.wyoming.max_event_bytes
        self.body_timeout_s = config.limits.request_timeout_s
        self.idle_timeout_s = config.wyoming.idle_timeout_s
        self.network = config.network
        if not swapped:
            return lambda: True
        # A connection reads the engines per request: only the running ones hold old ones.
        running = self.busy_connections()
        return lambda: not any(connection.busy for connection in running)

    def announcements(self) -> list[Announcement]:
        """``_wyoming._tcp`` on the bound TCP port (nothing for a Unix socket)."""
        return [Announcement(WYOMING_TYPE, self.port)] if self.port else []

    def describe(self) -> str:
        """For the status line."""
        return f"Wyoming {self.uri}"

    async def start(self) -> None:
        """Bind the listener (raises OSError when the address is taken)."""
        loop = asyncio.get_running_loop()

        def protocol() -> asyncio.StreamReaderProtocol:
            # What asyncio.start_server builds, with a reader that keeps the idle clock.
            reader = _TimedReader(MAX_HEADER_BYTES + 1, loop)
            return asyncio.StreamReaderProtocol(reader, self._accept, loop=loop)

        if self.uri.startswith("unix://"):
            path = Path(self.uri[len("unix://") :])
            with contextlib.suppress(FileNotFoundError):
                if stat.S_ISSOCK(path.stat().st_mode):
                    path.unlink()  # a stale socket from an earlier run
            self._server = await loop.create_unix_server(protocol, path=str(path))
            os.chmod(path, 0o660)
        else:
            host, _, port = self.uri[len("tcp://") :].rpartition(":")
            host = host.strip("[]")
            self._server = await loop.create_server(protocol, host=host or None, port=int(port))
            self.port = self._server.sockets[0].getsockname()[1]
        self._idle_check = asyncio.create_task(self._close_idle(), name="wyoming-idle")
        _LOGGER.info("Wyoming listening on %s", self.uri)

    def _idle_connections(self) -> list[tuple[float, asyncio.Task[None]]]:
        """(seconds idle, task) of every connection between requests, longest idle first."""
        now = time.monotonic()
        idle = [
            (idle_for(connection, now), task)
            for task, connection in self._tasks.items()
            if not connection.busy and not task.done() and not task.cancelling()
        ]
        return sorted(idle, key=lambda pair: pair[0], reverse=True)

    async def _close_idle(self) -> None:
        """Close connections that sent nothing for ``idle_timeout_s`` between requests."""
        while True:
            await asyncio.sleep(min(IDLE_CHECK_S, self.idle_timeout_s / 2))
            for seconds, task in self._idle_connections():
                if seconds < self.idle_timeout_s:
                    break
                _LOGGER.info(
                    "Wyoming connection %s sent nothing for %.0f s (wyoming.idle_timeout_s); "
                    "closing",
                    self._tasks[task].id,
                    seconds,
                )
                task.cancel()

    def _make_room(self) -> bool:
        """At the cap: close the connection idle the longest; False when all are busy.

        One ending after an error (it only drops what its client still sends) goes
        first: it serves nobody, however recently its bytes came.
        """
        idle = self._idle_connections()
        if not idle:
            return False
        seconds, task = next(((s, t) for s, t in idle if self._tasks[t].closing), idle[0])
        _LOGGER.info(
            "Wyoming connection %s closed to make room (idle %.1f s, %d open)",
            self._tasks[task].id,
            seconds,
            len(self._tasks),
        )
        # Its slot is free once its task ends; the new connection need not wait for that.
        task.cancel()
        return True

    async def _refuse(self, writer: asyncio.StreamWriter, error: Error) -> None:
        with contextlib.suppress(Exception):
            await asyncio.wait_for(async_write_event(error.event(), writer), 5)
        writer.close()

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        peer, local = writer.get_extra_info("peername"), writer.get_extra_info("sockname")
        host = peer[0] if isinstance(peer, tuple) else None
        if not peer_allowed(self.network, host, local[0] if isinstance(local, tuple) else None):
            self._refused.note(host)
            await self._refuse(writer, Error(text=refusal(host), code="forbidden"))
            return
        open_now = sum(1 for task in self._tasks if not task.cancelling())
        if open_now >= self.max_connections and not self._make_room():
            _LOGGER.warning("Wyoming connection refused: %d already open", len(self._tasks))
            limit = self.max_connections
            text = f"too many connections (wyoming.max_connections is {limit})"
            await self._refuse(writer, Error(text=text, code="busy"))
            return
        connection = WyomingConnection(
            reader, writer, self._services, self.max_event_bytes, self.body_timeout_s, self.observer
        )
        task = asyncio.current_task()
        assert task is not None
        self._tasks[task] = connection
        try:
            await connection.run()
        except asyncio.CancelledError:
            pass  # shutdown; this task is the connection's own, nobody awaits it
        except Exception:  # noqa: BLE001 - one broken connection must not hurt the others
            _LOGGER.exception("Wyoming connection %s failed", connection.id)
        finally:
            self._tasks.pop(task, None)

    async def stop(self, grace_s: float = 5.0) -> None:
        """Stop accepting; let open requests end within ``grace_s``, then cancel."""
        if self._server is None:
            return
        self._server.close()
        if self._idle_check is not None:
            self._idle_check.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._idle_check
            self._idle_check = None
        deadline = asyncio.get_running_loop().time() + grace_s
        while self._tasks:
            for task, connection in list(self._tasks.items()):
                if not connection.busy:
                    task.cancel()  # idle between requests, or its request is done
            if asyncio.get_running_loop().time() >= deadline:
                break
            await asyncio.wait(set(self._tasks), timeout=0.05)
        for task in list(self._tasks):
            task.cancel()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self._server.wait_closed(), 2)
        self._server = None


def _make(wiring: Wiring, made: Mapping[str, Listener]) -> Listener:
    return WyomingServer.from_config(
        wiring.config, wiring.services, observer=lambda code: wiring.observe("wyoming", code)
    )


KIND = ListenerKind(
    "wyoming",
    _make,
    restart=("wyoming.uri",),
    live=(
        "wyoming.max_connections",  # set by reconfigure
        "wyoming.max_event_bytes",  # set by reconfigure
        "wyoming.idle_timeout_s",  # set by reconfigure
        "wyoming.end_of_turn",  # read per request
    ),
)
