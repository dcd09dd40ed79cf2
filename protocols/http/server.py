"""The HTTP(S) listener: uvicorn serving the app on ``http.port`` (and ``https.port``).

It starts before the engines load, so that ``/healthz`` answers 503 meanwhile. A
request head must arrive within ``http.header_timeout_s`` and each server holds at
most ``http.max_connections`` connections (see :mod:`protocols.patches.uvicorn`). On
stop, every server stops accepting and requests in flight get the grace period
(uvicorn's ``timeout_graceful_shutdown``), then the rest are cancelled.
"""

from __future__ import annotations

import asyncio
import logging
import math
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import uvicorn

from daemon import __version__
from daemon.config import Config
from daemon.ops.inflight import InFlight
from protocols.listener import Announcement, Drained, Listener, ListenerKind, Wiring
from protocols.patches.requestline import repair_request_line
from protocols.patches.uvicorn import DaemonServer

__all__ = ["HttpListener", "repair_request_line"]

_LOGGER = logging.getLogger(__name__)

HTTP_TYPE = "_http._tcp.local."
BIND_POLL_S = 0.05
FORCE_WAIT_S = 5.0
"""After the grace period: how long cancelled requests get to unwind."""
OWN_PROTOCOLS = ("willow", "openai")
"""Counted here; a WebRTC offer is the WebRTC listener's to count."""


class HttpListener:
    """uvicorn on the HTTP port, and on the HTTPS port when ``https.enabled``."""

    name = "http"
    early = True

    def __init__(
        self,
        app: Any,
        config: Config,
        inflight: InFlight,
        on_failure: Callable[[], None] | None = None,
    ) -> None:
        self.app = app
        self.config = config
        self.inflight = inflight
        self.on_failure = on_failure
        """Called when a server ends without being asked to (the daemon then stops)."""
        self._servers: list[DaemonServer] = []
        self._tasks: list[asyncio.Task[None]] = []
        self._stopping = False

    def _uvicorn_config(self, port: int, cert: Path | None = None, key: Path | None = None) -> Any:
        return uvicorn.Config(
            self.app,
            host=self.config.http.host,
            port=port,
            log_config=None,
            access_log=False,
            lifespan="off",
            ws="websockets-sansio",
            ssl_certfile=str(cert) if cert else None,
            ssl_keyfile=str(key) if key else None,
            timeout_graceful_shutdown=math.ceil(self.config.limits.shutdown_grace_s),
        )

    def _server(self, config: Any) -> DaemonServer:
        http = self.config.http
        return DaemonServer(config, http.header_timeout_s, http.max_connections)

    async def start(self) -> None:
        """Bind HTTP (and HTTPS); returns once every server is bound."""
        http = self.config.http
        self._servers = [self._server(self._uvicorn_config(http.port))]
        if self.config.https.enabled:
            from daemon.ops.tls import certificate_files, fingerprint

            cert, key = await asyncio.to_thread(certificate_files, self.config)
            self._servers.append(
                self._server(self._uvicorn_config(self.config.https.port, cert, key))
            )
            _LOGGER.info(
                "HTTPS on https://%s:%d (certificate %s, SHA-256 %s)",
                http.host,
                self.config.https.port,
                cert,
                fingerprint(cert),
            )
        for server in self._servers:
            task = asyncio.create_task(server.serve(), name=f"http-{server.config.port}")
            task.add_done_callback(self._ended)
            self._tasks.append(task)
        while not all(s.started or s.should_exit for s in self._servers):
            for server, task in zip(self._servers, self._tasks, strict=True):
                if task.done() and not server.started:
                    raise OSError(f"HTTP on port {server.config.port} did not start")
            await asyncio.sleep(BIND_POLL_S)
        _LOGGER.info("Hearth %s listening on http://%s:%d", __version__, http.host, http.port)

    def _ended(self, task: asyncio.Task[None]) -> None:
        if task.cancelled():
            return
        exc = task.exception()
        if isinstance(exc, Exception):  # uvicorn logs its own start-up failures (SystemExit)
            _LOGGER.error("HTTP server %s failed: %s", task.get_name(), exc, exc_info=exc)
        if not self._stopping:
            _LOGGER.error("HTTP server %s stopped by itself; stopping Hearth", task.get_name())
            if self.on_failure is not None:
                self.on_failure()

    async def stop(self, grace_s: float) -> None:
        """Stop accepting; requests in flight get up to ``grace_s``, then are cancelled."""
        self._stopping = True
        for server in self._servers:
            server.stop()
        running = [t for t in self._tasks if not t.done()]
        if not running:
            return
        _, pending = await asyncio.wait(running, timeout=grace_s + 1)
        if pending:  # uvicorn's own grace timer should have ended them: insist
            for server in self._servers:
                server.stop(force=True)
            _, pending = await asyncio.wait(pending, timeout=FORCE_WAIT_S)
            for task in pending:
                task.cancel()

    def reconfigure(self, config: Config, swapped: bool) -> Drained:
        """Routes read the live config per request; the connection limits apply at once."""
        self.config = config
        for server in self._servers:
            server.set_limits(config.http.header_timeout_s, config.http.max_connections)
        if not swapped:
            return lambda: True
        # Requests that began before this generation run on the previous engines; a
        # session (a Realtime WebSocket) only while its utterance or response lasts.
        self.inflight.generation += 1
        inflight = self.inflight
        held = inflight.holding(inflight.generation)
        return lambda: not inflight.still_holding(held)

    def busy(self) -> bool:
        """Whether an HTTP request, or a session's utterance or response, is in flight."""
        return self.inflight.busy()

    def active_sessions(self) -> dict[str, int]:
        """Requests in flight per protocol (willow, openai)."""
        counts = dict.fromkeys(OWN_PROTOCOLS, 0) | self.inflight.active()
        counts.pop("webrtc", None)
        return counts

    def announcements(self) -> list[Announcement]:
        """The HTTP API (``_http._tcp``)."""
        return [Announcement(HTTP_TYPE, self.config.http.port, {"path": "/"})]

    def describe(self) -> str:
        """For the status line."""
        return f"HTTP port {self.config.http.port}"


def _make(wiring: Wiring, made: Mapping[str, Listener]) -> Listener:
    """HTTP and HTTPS, with the WebRTC signaling routes of the manager made before."""
    from protocols.http.app import create_app
    from protocols.webrtc.manager import RtcManager

    rtc = made["webrtc"]
    assert isinstance(rtc, RtcManager)
    app = create_app(wiring.service, rtc)
    return HttpListener(app, wiring.config, wiring.inflight, on_failure=wiring.on_failure)


KIND = ListenerKind(
    "http",
    _make,
    restart=("http.host", "http.port", "https", "metrics"),
    live=(
        "http.cors_origins",  # read per request
        "http.allowed_hosts",  # read per request
        "http.header_timeout_s",  # set on the running servers by reconfigure
        "http.body_idle_timeout_s",  # read per request
        "http.max_connections",  # set on the running servers by reconfigure
    ),
)
