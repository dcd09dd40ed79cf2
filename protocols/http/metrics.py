"""``GET /metrics`` and the middleware that counts HTTP requests and ids them.

Every API request gets an id (the client's ``X-Request-Id`` when it sends a
sane one), logged with each line the request causes and returned in the
response's ``X-Request-Id`` header. /metrics needs the API key like every
route but /api/ping and /healthz (Prometheus sends it with
``authorization: {credentials: KEY}``); metrics reveal which models run and
how busy the house is, which a LAN guest need not see.
"""

from __future__ import annotations

import re
import uuid
from typing import Any

from fastapi import Depends, FastAPI
from fastapi.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from daemon.ops.inflight import InFlight
from daemon.ops.logs import request_id
from daemon.ops.metrics import CONTENT_TYPE, Metrics, outcome_of_status
from protocols.http.auth import require_api_key

UNCOUNTED = frozenset({"/api/ping"})
"""Probes: counting them would drown the requests that matter."""
TICKET = "hearth.inflight_ticket"
"""The ASGI scope key of a WebSocket session's in-flight ticket."""
_SANE_ID = re.compile(r"[A-Za-z0-9._-]{1,64}")


def protocol_of(path: str) -> str | None:
    """The protocol a request path belongs to; None for health, docs and pages."""
    if path.startswith("/v1/"):
        return "openai"
    if path.startswith("/api/rtc"):
        return "webrtc"
    if path.startswith("/api/") and path not in UNCOUNTED:
        return "willow"
    return None


def install(app: FastAPI, service: Any, expose: bool = True) -> None:
    """Track and count requests; serve /metrics when ``expose``.

    The tracking is installed even with metrics off: reloads wait for the
    requests in flight before retiring the engines they use.
    """
    metrics: Metrics | None = getattr(service, "metrics", None)
    inflight: InFlight | None = getattr(service, "inflight", None)
    if metrics is None or inflight is None:
        return
    app.add_middleware(RequestMetrics, metrics=metrics, inflight=inflight)
    if not expose:
        return

    @app.get(
        "/metrics",
        tags=["health"],
        dependencies=[Depends(require_api_key)],
        response_class=PrometheusResponse,
    )
    async def prometheus() -> PrometheusResponse:
        """Prometheus metrics (text exposition format)."""
        return PrometheusResponse(metrics.render())


class PrometheusResponse(Response):
    """The text exposition format, under the media type prometheus_client names.

    As the route's ``response_class`` it is also what the OpenAPI schema lists for
    the 200 answer (FastAPI would otherwise document ``application/json``).
    """

    media_type = CONTENT_TYPE


class RequestMetrics:
    """ASGI middleware: request id, in-flight tracking, and a count per outcome."""

    def __init__(self, app: ASGIApp, metrics: Metrics, inflight: InFlight) -> None:
        self.app = app
        self.metrics = metrics
        self.inflight = inflight

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Wrap one HTTP request or WebSocket session."""
        protocol = protocol_of(scope.get("path", ""))
        if scope["type"] not in ("http", "websocket") or protocol is None:
            await self.app(scope, receive, send)
            return
        rid = _client_id(scope) or uuid.uuid4().hex[:12]
        token = request_id.set(rid)
        ticket = self.inflight.begin(protocol)
        if scope["type"] == "websocket":
            scope[TICKET] = ticket  # the session says when it holds engines (inflight.py)
        status = 0

        async def send_with_id(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
                headers = [*message.get("headers", []), (b"x-request-id", rid.encode())]
                message = {**message, "headers": headers}
            await send(message)

        try:
            await self.app(scope, receive, send_with_id)
        except BaseException:
            status = status or 500
            raise
        finally:
            self.inflight.end(ticket)
            if scope["type"] == "websocket":
                status = status if status >= 400 else 200
            self.metrics.request(protocol, outcome_of_status(status or 500))
            request_id.reset(token)


def _client_id(scope: Scope) -> str:
    for name, value in scope.get("headers", ()):
        if name == b"x-request-id":
            text = value.decode("latin-1")
            return text if _SANE_ID.fullmatch(text) else ""
    return ""
