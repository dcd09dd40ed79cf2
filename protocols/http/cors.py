"""CORS for the Home Assistant dashboard card, and only for the routes it uses.

The allowed origins (``http.cors_origins``) are read per request, so a reloaded
configuration applies at once. Origins are compared case-insensitively (browsers
send them lower-case) and the request's own ``Origin`` is echoed back: never
``*``, never credentials. Other routes and origins get no CORS headers, so
browsers keep them same-origin.
"""

from __future__ import annotations

import logging

from starlette.datastructures import Headers, MutableHeaders
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from protocols.http.common import ServiceView
from protocols.http.errors import HttpError, error_response

_LOGGER = logging.getLogger(__name__)

CARD_ROUTES: frozenset[tuple[str, str]] = frozenset(
    {
        ("GET", "/web/hearth-client.js"),  # ES modules the card imports
        ("GET", "/web/hearth-voice-card.js"),
        ("POST", "/api/rtc/asr"),  # WebRTC signaling
        ("GET", "/api/voices"),  # the editor's voice picker
        ("GET", "/api/ping"),  # reachability check
        ("POST", "/v1/realtime/calls"),  # a page's OpenAI Realtime call over WebRTC
    }
)
"""(method, path) pairs open to the origins in ``http.cors_origins``; HEAD counts as GET."""

ALLOW_HEADERS = "Content-Type, X-API-Key, Authorization"
"""Request headers the card may send."""

EXPOSE_HEADERS = "Location"
"""Response headers the page may read: a Realtime call's ``Location`` names the call."""

MAX_AGE_S = 600
"""How long a browser may cache a preflight answer (seconds)."""


def card_methods(path: str) -> list[str]:
    """The methods open to other origins on ``path`` (empty: not a card route)."""
    methods = {method for method, route in CARD_ROUTES if route == path}
    if "GET" in methods:
        methods.add("HEAD")
    return sorted(methods)


def is_card_route(method: str, path: str) -> bool:
    """True when ``method path`` is one the card calls."""
    return ("GET" if method == "HEAD" else method, path) in CARD_ROUTES


def origin_allowed(origin: str, allowed: list[str]) -> bool:
    """True when ``origin`` is one of the configured origins."""
    return origin.lower() in {entry.lower() for entry in allowed}


def _add_vary_origin(headers: MutableHeaders) -> None:
    vary = [v.strip() for value in headers.getlist("vary") for v in value.split(",")]
    if "origin" not in {v.lower() for v in vary}:
        headers.add_vary_header("Origin")


class CardCors:
    """ASGI middleware: CORS headers and preflight answers for the card's routes.

    Installed outermost, so that error responses (401, 413, 404) carry the
    headers too and the card can read their status.
    """

    def __init__(self, app: ASGIApp, service: ServiceView) -> None:
        self.app = app
        self.service = service

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Answer preflights; add the headers to allowed card requests."""
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        origin = headers.get("origin")
        if origin is None:
            await self.app(scope, receive, send)
            return
        method, path = scope["method"], scope["path"]
        allowed = origin_allowed(origin, self.service.config.http.cors_origins)
        requested = headers.get("access-control-request-method")
        if method == "OPTIONS" and requested is not None:
            response = self._preflight(origin, allowed, requested.strip().upper(), path, headers)
            await response(scope, receive, send)
            return
        if not (allowed and is_card_route(method, path)):
            await self.app(scope, receive, send)
            return

        started = False

        async def send_with_cors(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
                out = MutableHeaders(scope=message)
                out["Access-Control-Allow-Origin"] = origin
                out["Access-Control-Expose-Headers"] = EXPOSE_HEADERS
                _add_vary_origin(out)
            await send(message)

        try:
            await self.app(scope, receive, send_with_cors)
        except Exception:
            if started:
                raise
            # The outermost error handler would answer without our headers, and the
            # card would see a network failure instead of the 500.
            _LOGGER.exception("%s %s failed", method, path)
            error = HttpError("internal-error", "internal error")
            await error_response(path, error)(scope, receive, send_with_cors)

    def _preflight(
        self, origin: str, allowed: bool, requested: str, path: str, headers: Headers
    ) -> Response:
        if not allowed:
            refused = f"origin {origin} is not in http.cors_origins"
        elif not is_card_route(requested, path):
            refused = f"{requested} {path} is not open to other origins"
        else:
            out = {
                "Access-Control-Allow-Origin": origin,
                "Access-Control-Allow-Methods": ", ".join(card_methods(path)),
                "Access-Control-Allow-Headers": ALLOW_HEADERS,
                "Access-Control-Max-Age": str(MAX_AGE_S),
                "Vary": "Origin",
            }
            # Chrome's private network access: a public page calling a LAN address.
            if headers.get("access-control-request-private-network", "").lower() == "true":
                out["Access-Control-Allow-Private-Network"] = "true"
            return Response(status_code=204, headers=out)
        return error_response(path, HttpError("cors-forbidden", refused))
