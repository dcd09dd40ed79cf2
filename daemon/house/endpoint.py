"""Where Home Assistant's websocket API is, and the token to open it with.

Three cases, in this order:

- ``homeassistant.names`` false: nowhere; nothing connects.
- ``homeassistant.url`` set: that Home Assistant, with ``homeassistant.token``.
  ``http://HOST:8123`` becomes ``ws://HOST:8123/api/websocket`` (``https``: ``wss``); a
  ``ws(s)://`` URL is used as it is.
- Inside the Home Assistant add-on (``SUPERVISOR_TOKEN`` set, the options file there):
  the Supervisor's proxy, ``ws://supervisor/core/websocket``, with the add-on's own
  token. The add-on's ``config.yaml`` says ``homeassistant_api: true``; the Supervisor
  then authenticates the add-on itself, and its connection to Home Assistant is an
  administrator's.

Otherwise nowhere, and nothing connects.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from urllib.parse import urlsplit, urlunsplit

from daemon.config import HomeAssistantConfig
from daemon.ops.supervisor import addon_context

WEBSOCKET_PATH = "/api/websocket"
"""Home Assistant's websocket, below its base URL."""
SUPERVISOR_PATH = "/core/websocket"
"""The Supervisor's proxy of it (the Supervisor answers on port 80)."""


@dataclass(frozen=True)
class Endpoint:
    """One Home Assistant websocket to read names from."""

    url: str
    """``ws://`` or ``wss://``; no secret in it."""
    token: str = field(repr=False)
    via_supervisor: bool = False


def websocket_url(url: str) -> str:
    """The websocket URL of a Home Assistant base URL (see the module's docstring)."""
    parts = urlsplit(url)
    scheme = {"http": "ws", "https": "wss"}.get(parts.scheme.lower(), parts.scheme.lower())
    path = parts.path.rstrip("/")
    if parts.scheme.lower() in ("http", "https"):
        if path.endswith("/api"):
            path += "/websocket"
        elif not path.endswith("/websocket"):
            path += WEBSOCKET_PATH
    return urlunsplit((scheme, parts.netloc, path or "/", "", ""))


def endpoint_of(
    config: HomeAssistantConfig, environ: Mapping[str, str] | None = None
) -> Endpoint | None:
    """Where to read the household's names (None: nowhere, nothing connects)."""
    if not config.names:
        return None
    if config.url:
        return Endpoint(websocket_url(config.url), config.token)
    context = addon_context(environ)
    if context is None:
        return None
    return Endpoint(websocket_url(context.url.rstrip("/") + SUPERVISOR_PATH), context.token, True)


def describe(endpoint: Endpoint | None) -> str:
    """The endpoint as ``hearth check`` and the log show it (never the token)."""
    if endpoint is None:
        return "off"
    return f"{endpoint.url}{' (through the Supervisor)' if endpoint.via_supervisor else ''}"
