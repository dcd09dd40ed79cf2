"""Cross-site protection for a daemon that may have no key: Origin and Host checks.

With no ``auth.api_key`` any web page a household member opens could drive Hearth
from their browser. Two checks keep browsers to Hearth's own pages and the
configured dashboards:

- **Origin**: a state-changing request (any method but GET, HEAD and OPTIONS) or a
  WebSocket upgrade whose ``Origin`` is present and is neither Hearth's own origin
  nor an ``http.cors_origins`` entry gets 403 ``origin-forbidden``. Requests without
  ``Origin`` (Willow devices, Home Assistant, curl) are unaffected.
- **Host** (DNS rebinding: a foreign name that resolves to this machine makes a
  foreign page same-origin with Hearth): a browser request whose ``Host`` is not a
  name of this machine gets 421 ``unknown-host``. The machine's names are
  ``localhost``, its host name, ``<hostname>.local``, its FQDN and
  ``http.allowed_hosts`` (``*`` turns the check off); any IP address is accepted,
  since a page that reaches Hearth by address has Hearth's own origin. Only
  browsers are checked (they alone carry a page's script); other clients keep
  working with whatever name a router's DNS gives the machine.
"""

from __future__ import annotations

import asyncio
import ipaddress
import json
import logging
import socket
from urllib.parse import urlsplit

from starlette.datastructures import Headers
from starlette.types import ASGIApp, Receive, Scope, Send

from daemon.errors import status_of
from protocols.http.common import ServiceView
from protocols.http.cors import origin_allowed
from protocols.http.errors import HttpError, error_body, error_response
from protocols.peers import RefusalLog, peer_allowed, refusal

_LOGGER = logging.getLogger(__name__)

SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
"""Methods that change nothing: served to any origin (CORS decides who may read)."""
NAMES_TIMEOUT_S = 5.0
"""Longest wait for the machine's FQDN (a DNS lookup) on the first request."""
DEFAULT_PORTS = {"http": 80, "https": 443, "ws": 80, "wss": 443}


def host_name(host: str) -> str:
    """The name or address in a ``Host`` header: no port, no brackets, lower-case."""
    host = host.strip().lower()
    if host.startswith("["):
        return host[1:].partition("]")[0]
    if host.count(":") == 1:
        host = host.partition(":")[0]
    return host.rstrip(".")


def is_address(name: str) -> bool:
    """Whether ``name`` is an IP address literal."""
    try:
        ipaddress.ip_address(name.partition("%")[0])
    except ValueError:
        return False
    return True


def machine_names() -> frozenset[str]:
    """This machine's own names (blocking: the FQDN may need a DNS lookup)."""
    short = socket.gethostname().lower().rstrip(".")
    names = {"localhost", short, short.split(".")[0], f"{short.split('.')[0]}.local"}
    try:
        names.add(socket.getfqdn().lower().rstrip("."))
    except OSError:
        pass
    return frozenset(name for name in names if name)


def host_allowed(name: str, own: frozenset[str], allowed: list[str]) -> bool:
    """Whether a ``Host`` name (see :func:`host_name`) is this machine's."""
    listed = {host_name(entry) for entry in allowed}
    if "*" in listed or name in listed or name in own or is_address(name):
        return True
    return name.endswith(".localhost")  # RFC 6761: always loopback


def same_origin(origin: str, scheme: str, host: str) -> bool:
    """Whether ``origin`` is the origin the request was sent to (``scheme``, ``Host``)."""
    parts = urlsplit(origin.strip().lower())
    scheme = {"ws": "http", "wss": "https"}.get(scheme, scheme)
    if parts.scheme != scheme or not parts.hostname:
        return False
    try:
        port = parts.port or DEFAULT_PORTS.get(parts.scheme)
        target = urlsplit(f"{scheme}://{host.strip().lower()}")
        target_port = target.port or DEFAULT_PORTS.get(scheme)
    except ValueError:
        return False
    return (parts.hostname, port) == (target.hostname, target_port)


def from_browser(headers: Headers) -> bool:
    """Whether a request comes from a web browser (which sets these; scripts cannot)."""
    if "origin" in headers or "sec-fetch-site" in headers or "sec-fetch-mode" in headers:
        return True
    return headers.get("user-agent", "").startswith("Mozilla/")


class OriginGuard:
    """ASGI middleware: refuse cross-site state changes and foreign ``Host`` names.

    Installed outermost; the configuration is read per request, so a reload applies.
    """

    def __init__(self, app: ASGIApp, service: ServiceView) -> None:
        self.app = app
        self.service = service
        self._names: frozenset[str] | None = None
        self._names_lock = asyncio.Lock()
        self._refused = RefusalLog("HTTP")

    async def own_names(self) -> frozenset[str]:
        """The machine's names, looked up once off the event loop."""
        if self._names is not None:
            return self._names
        async with self._names_lock:
            if self._names is None:
                try:
                    async with asyncio.timeout(NAMES_TIMEOUT_S):
                        self._names = await asyncio.to_thread(machine_names)
                except TimeoutError:
                    short = socket.gethostname().lower().split(".")[0]
                    _LOGGER.warning("Looking up this machine's FQDN timed out; using %s", short)
                    self._names = frozenset({"localhost", short, f"{short}.local"})
        return self._names

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Pass the request on, or refuse it (403 or 421) before any route runs."""
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        refusal = await self._refusal(scope, headers)
        if refusal is None:
            await self.app(scope, receive, send)
            return
        _LOGGER.info("%s %s refused: %s", scope.get("method", "WS"), scope["path"], refusal)
        if scope["type"] == "http":
            await error_response(scope["path"], refusal)(scope, receive, send)
        else:
            await _refuse_websocket(scope, send, refusal)

    async def _refusal(self, scope: Scope, headers: Headers) -> HttpError | None:
        peer = (scope.get("client") or (None,))[0]
        local = (scope.get("server") or (None,))[0]
        if not peer_allowed(self.service.config.network, peer, local):
            self._refused.note(peer)
            return HttpError("forbidden", refusal(peer))
        config = self.service.config.http
        host = headers.get("host", "")
        if host and from_browser(headers):
            name = host_name(host)
            if not host_allowed(name, await self.own_names(), config.allowed_hosts):
                return HttpError(
                    "unknown-host",
                    f"Host {name!r} is not a name of this machine (a protection against DNS "
                    "rebinding); reach Hearth by its address or host name, or add the name to "
                    "http.allowed_hosts",
                )
        origin = headers.get("origin")
        changes = scope["type"] == "websocket" or scope.get("method", "GET") not in SAFE_METHODS
        if origin is None or not changes:
            return None
        if origin_allowed(origin, config.cors_origins):
            return None
        if host and same_origin(origin, scope.get("scheme", "http"), host):
            return None
        return HttpError(
            "origin-forbidden",
            f"requests from origin {origin} are refused: it is not Hearth's own origin "
            "and not listed in http.cors_origins",
        )


async def _refuse_websocket(scope: Scope, send: Send, refusal: HttpError) -> None:
    """Refuse an upgrade with the error's status and body when the server can, else 403."""
    if "websocket.http.response" in scope.get("extensions", {}):
        data = json.dumps(error_body(scope["path"], refusal.code, refusal.message)).encode()
        await send(
            {
                "type": "websocket.http.response.start",
                "status": status_of(refusal.code),
                "headers": [(b"content-type", b"application/json")],
            }
        )
        await send({"type": "websocket.http.response.body", "body": data})
        return
    await send({"type": "websocket.close", "code": 1008, "reason": refusal.code})
