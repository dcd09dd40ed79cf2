"""The Wyoming listener: TCP or a Unix socket, with a cap on connections.

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
from collections.abc import Callable
from pathlib import Path

from wyoming.error import Error
from wyoming.event import async_write_event

from daemon.config import Config
from daemon.runtime.engines import Engines
from protocols.listener import Announcement, Drained
from protocols.wyoming.framing import MAX_HEADER_BYTES
from protocols.wyoming.handler import Observer, WyomingConnection

_LOGGER = logging.getLogger(__name__)

WYOMING_TYPE = "_wyoming._tcp.local."


class WyomingServer:
    """Accepts connections on ``uri`` and serves each with a WyomingConnection."""

    name = "wyoming"
    early = False

    def __init__(
        self,
        uri: str,
        engines: Callable[[], Engines],
        max_connections: int,
        max_event_bytes: int,
        body_timeout_s: float,
        observer: Observer | None = None,
    ) -> None:
        self.uri = uri
        self.observer = observer
        self._engines = engines
        self.max_connections = max_connections
        self.max_event_bytes = max_event_bytes
        self.body_timeout_s = body_timeout_s
        self._server: asyncio.AbstractServer | None = None
        self._tasks: dict[asyncio.Task[None], WyomingConnection] = {}
        self.port = 0
        """The bound TCP port (0 for a Unix socket)."""

    @classmethod
    def from_config(
        cls, config: Config, engines: Callable[[], Engines], observer: Observer | None = None
    ) -> WyomingServer:
        """The listener ``config`` describes (``wyoming.*``, ``limits.request_timeout_s``)."""
        return cls(
            config.wyoming.uri,
            engines,
            max_connections=config.wyoming.max_connections,
            max_event_bytes=config.wyoming.max_event_bytes,
            body_timeout_s=config.limits.request_timeout_s,
            observer=observer,
        )

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

    def reconfigure(self, config: Config, engines: Engines | None) -> Drained:
        """Apply the live limits; the check covers the requests running now."""
        self.max_connections = config.wyoming.max_connections
        self.max_event_bytes = config.wyoming.max_event_bytes
        self.body_timeout_s = config.limits.request_timeout_s
        if engines is None:
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
        if self.uri.startswith("unix://"):
            path = Path(self.uri[len("unix://") :])
            with contextlib.suppress(FileNotFoundError):
                if stat.S_ISSOCK(path.stat().st_mode):
                    path.unlink()  # a stale socket from an earlier run
            self._server = await asyncio.start_unix_server(
                self._accept, path=str(path), limit=MAX_HEADER_BYTES + 1
            )
            os.chmod(path, 0o660)
        else:
            host, _, port = self.uri[len("tcp://") :].rpartition(":")
            host = host.strip("[]")
            self._server = await asyncio.start_server(
                self._accept, host=host, port=int(port), limit=MAX_HEADER_BYTES + 1
            )
            self.port = self._server.sockets[0].getsockname()[1]
        _LOGGER.info("Wyoming listening on %s", self.uri)

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if len(self._tasks) >= self.max_connections:
            _LOGGER.warning("Wyoming connection refused: %d already open", len(self._tasks))
            with contextlib.suppress(Exception):
                limit = self.max_connections
                busy = Error(
                    text=f"too many connections (wyoming.max_connections is {limit})", code="busy"
                )
                await asyncio.wait_for(async_write_event(busy.event(), writer), 5)
            writer.close()
            return
        connection = WyomingConnection(
            reader, writer, self._engines, self.max_event_bytes, self.body_timeout_s, self.observer
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
