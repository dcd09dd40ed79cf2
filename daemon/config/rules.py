"""Validation rules attached to config fields, and the checks of string values.

A field's rules (``min``, ``max``, ``choices``, ``check``) live in its metadata;
``daemon.config.convert`` applies them. Each ``*_ok`` check returns None when the
value is good, else the problem ("must be ..."); the converter adds what it got.
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import urlsplit

DEVICE_HELP = "auto, cpu, cuda or cuda:N"
COMPUTE_TYPES = (
    "auto",
    "int8",
    "int8_float16",
    "int8_float32",
    "int8_bfloat16",
    "int16",
    "float16",
    "bfloat16",
    "float32",
)


def rules(**checks: Any) -> dict[str, Any]:
    """Field metadata holding validation rules (min, max, choices, check).

    On a list, the rules apply to each item.
    """
    return {"rules": checks}


def device_ok(value: str) -> str | None:
    """A device name: auto, cpu, cuda or cuda:N."""
    if value in ("auto", "cpu", "cuda"):
        return None
    if value.startswith("cuda:") and value[5:].isdigit():
        return None
    return f"must be {DEVICE_HELP}"


MODULE_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*")
"""A Python module's dotted name (no path, no arguments)."""


def module_ok(value: str) -> str | None:
    """An engine backend: a built-in name or a Python module's dotted name."""
    if MODULE_RE.fullmatch(value):
        return None
    return "must be a built-in engine's name or a Python module's dotted name"


def uri_ok(value: str) -> str | None:
    """A listener URI: tcp://HOST:PORT or unix://PATH."""
    if value.startswith("unix://") and len(value) > len("unix://"):
        return None
    if value.startswith("tcp://"):
        host, sep, port = value[len("tcp://") :].rpartition(":")
        if sep and host and port.isdigit() and 1 <= int(port) <= 65535:
            return None
    return "must be tcp://HOST:PORT or unix://PATH"


def origin_ok(value: str) -> str | None:
    """A browser origin as it arrives in the Origin header (scheme://host[:port])."""
    like = "must be an origin like https://homeassistant.local:8123"
    if "*" in value:
        return f"{like} (no '*': list each origin)"
    parts = urlsplit(value)
    if parts.scheme.lower() not in ("http", "https"):
        return f"{like} (scheme http or https)"
    if parts.path or "?" in value or "#" in value:
        return f"{like} (no path, query, fragment or trailing '/')"
    if not parts.hostname or "@" in parts.netloc or any(c.isspace() for c in value):
        return f"{like} (scheme://host[:port])"
    try:
        port = parts.port
    except ValueError:
        port = 0
    if port == 0 or parts.netloc.endswith(":"):
        return f"{like} (port between 1 and 65535)"
    default = 443 if parts.scheme.lower() == "https" else 80
    if port == default:
        # Browsers leave the default port out of Origin, so this entry would never match.
        return f"{like} (leave out the default port {default})"
    return None


def base_url_ok(value: str) -> str | None:
    """The base URL of an OpenAI-compatible server ("" : none)."""
    if not value:
        return None
    parts = urlsplit(value)
    if parts.scheme.lower() not in ("http", "https") or not parts.hostname:
        return "must be a URL like http://gpu-server.lan:8000/v1"
    if "?" in value or "#" in value or "@" in parts.netloc:
        return "must be a URL like http://gpu-server.lan:8000/v1 (no query, fragment or user)"
    return None


def ha_url_ok(value: str) -> str | None:
    """Home Assistant's address: http(s)://HOST[:PORT][/PATH] or ws(s):// ("" : none)."""
    if not value:
        return None
    like = "must be a URL like http://homeassistant.local:8123"
    parts = urlsplit(value)
    if parts.scheme.lower() not in ("http", "https", "ws", "wss") or not parts.hostname:
        return f"{like} (scheme http, https, ws or wss)"
    if "?" in value or "#" in value or "@" in parts.netloc:
        return f"{like} (no query, fragment or user: the token goes in homeassistant.token)"
    try:
        parts.port  # noqa: B018 - a bad port raises
    except ValueError:
        return f"{like} (port between 1 and 65535)"
    return None


def network_ok(value: str) -> str | None:
    """A network in CIDR notation (172.30.32.0/23, fd00::/8) or one address."""
    import ipaddress

    try:
        ipaddress.ip_network(value, strict=False)
    except ValueError:
        return "must be a network like 172.30.32.0/23 or an address like 192.168.1.20"
    return None


def host_name_ok(value: str) -> str | None:
    """A host name or address a request may name in Host, or '*'."""
    if value == "*":
        return None
    like = "must be a host name or address like hearth.lan or 192.168.1.10, or '*'"
    if not value or len(value) > 253 or any(c in value for c in "/@?#* \t"):
        return like
    if value.count(":") == 1 and not value.startswith("["):
        return f"{like} (no port)"
    return None


def remote_voice_ok(value: str) -> str | None:
    """A voice name a remote speech server offers (and its name here)."""
    if (
        not value
        or len(value) > 128
        or value.startswith(".")
        or any(c.isspace() or c in "/\\?#%" for c in value)
    ):
        return "must be a voice name (1-128 characters, no spaces, '/', '?', '#' or '%')"
    return None
