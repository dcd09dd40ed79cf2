"""What every HTTP route shares: the service, the core's services once loaded, upload limits."""

from __future__ import annotations

import asyncio
from typing import Any, Protocol

from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.requests import HTTPConnection
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from daemon.config import Config
from daemon.runtime.api import Services
from protocols.http.errors import HttpError, error_response


class ServiceView(Protocol):
    """What the HTTP app needs from the running service."""

    config: Config
    services: Services
    """The core's services (valid across reloads)."""

    @property
    def loaded(self) -> bool:
        """Whether the engines are loaded (False: still loading)."""
        ...

    def health(self) -> tuple[bool, dict[str, Any]]:
        """(ready, details)."""
        ...


def service_of(conn: HTTPConnection) -> ServiceView:
    """The service this app serves."""
    service: ServiceView = conn.app.state.service
    return service


def config_of(conn: HTTPConnection) -> Config:
    """The daemon's configuration."""
    return service_of(conn).config


async def ready_services(conn: HTTPConnection) -> Services:
    """FastAPI dependency: the core's services, or 503 while the engines load.

    Pinned once per request: a reload swaps the engines for later requests, and this
    one keeps the engines it started with.
    """
    service = service_of(conn)
    if not service.loaded:
        raise HttpError("not-ready", "Hearth is still loading its engines; try again shortly")
    return service.services.pinned()


def require(loaded: bool, what: str) -> None:
    """503 ``model-unavailable`` unless the ``what`` engine is ``loaded``.

    The service would refuse on first use too; checking up front keeps a missing
    engine's 503 ahead of the request's other errors (a bad format, an unknown voice).
    """
    if not loaded:
        raise HttpError("model-unavailable", f"the {what} engine is not loaded")


def upload_limit(config: Config, method: str, path: str) -> int:
    """Largest request body for a route (bytes), from the live configuration.

    Importing a Piper voice (``POST /api/voices``) has a limit of its own
    (``voices.max_upload_mb``): voices are larger than speech uploads.
    """
    if method == "POST" and path.rstrip("/") == "/api/voices":
        return config.voices.max_upload_mb * 1_000_000
    return config.limits.max_upload_mb * 1_000_000


class BodyLimit:
    """ASGI middleware: refuse request bodies over the route's limit with 413.

    The limit is looked up per request, so a reloaded configuration applies at once.
    """

    def __init__(self, app: ASGIApp, service: ServiceView) -> None:
        self.app = app
        self.service = service

    def _too_large(self, limit: int) -> HttpError:
        return HttpError("upload-too-large", f"the request body exceeds {limit / 1_000_000:g} MB")

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Check the declared length first, then count what arrives."""
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        limit = upload_limit(self.service.config, scope.get("method", ""), scope.get("path", ""))
        for name, value in scope.get("headers", ()):
            if name == b"content-length":
                try:
                    declared = int(value)
                except ValueError:
                    declared = 0
                if declared > limit:
                    response = error_response(scope["path"], self._too_large(limit))
                    await response(scope, receive, send)
                    return
        received = 0

        async def counted() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > limit:
                    # An HTTPException, so that FastAPI's body parsing passes it on
                    # (it turns other errors into "400: error parsing the body").
                    raise StarletteHTTPException(413, self._too_large(limit).message)
            return message

        await self.app(scope, counted, send)


class BodyIdle:
    """ASGI middleware: a request body that stops arriving, or takes too long in all,
    ends with 408 ``body-timeout``.

    While a route waits for more of its body (a Willow upload, a multipart file, a
    JSON body), the client must send something within ``http.body_idle_timeout_s``,
    and the whole body must arrive within ``limits.request_timeout_s`` of the first
    wait; otherwise the route's read raises, the answer says ``connection: close`` and
    uvicorn closes the connection, freeing its ``http.max_connections`` slot. The
    second bound covers bodies that FastAPI reads before a route's own deadline starts
    (JSON, forms): one byte every few seconds would otherwise hold a slot for as long
    as the size cap allows. Only waits for the body count: a route busy decoding, or a
    response still waiting for a disconnect after the body, is not timed here.
    """

    def __init__(self, app: ASGIApp, service: ServiceView) -> None:
        self.app = app
        self.service = service

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Time each wait for the next part of the body, from the live configuration."""
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        config = self.service.config
        idle_s = config.http.body_idle_timeout_s
        total_s = config.limits.request_timeout_s
        loop = asyncio.get_running_loop()
        deadline: float | None = None
        body_done = False

        async def watched() -> Message:
            nonlocal body_done, deadline
            if body_done:  # after the body, receive() only reports a disconnect
                return await receive()
            if deadline is None:
                deadline = loop.time() + total_s
            wait_s = min(idle_s, deadline - loop.time())
            try:
                async with asyncio.timeout(max(0.0, wait_s)):
                    message = await receive()
            except TimeoutError:
                # An HTTPException, so that FastAPI's body parsing passes it on (see
                # BodyLimit); the handler maps 408 to ``body-timeout``.
                why = (
                    f"no part of the request body arrived for {idle_s:g} s"
                    if wait_s >= idle_s
                    else f"the request body did not arrive within {total_s:g} s"
                )
                raise StarletteHTTPException(408, why, headers={"connection": "close"}) from None
            if message["type"] != "http.request" or not message.get("more_body", False):
                body_done = True
            return message

        await self.app(scope, watched, send)
