"""Is Hearth answering? A Wyoming ``describe`` and ``/healthz``, asked from outside.

For the container's health check (``hearth health``) and for the add-on's entrypoint,
which announces Wyoming to the Supervisor only once it answers. Plain sockets and the
standard library: a health check runs every 30 s and must stay cheap.
"""

from __future__ import annotations

import json
import socket
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from urllib.parse import urlsplit

DESCRIBE = b'{"type": "describe"}\n'
MAX_HEADER_BYTES = 1 << 20
"""An ``info`` header longer than this is not Hearth's."""


@dataclass(frozen=True)
class Probe:
    """One answer: whether it was right, and what was found or went wrong."""

    ok: bool
    detail: str


def local_host(host: str) -> str:
    """Where to reach a listener bound to ``host`` from this machine."""
    if host in ("", "0.0.0.0"):
        return "127.0.0.1"
    if host in ("::", "[::]"):
        return "::1"
    return host.strip("[]")


def wyoming_endpoint(uri: str) -> tuple[str, int] | None:
    """(host, port) to reach a ``tcp://`` Wyoming URI locally; None for other schemes."""
    parts = urlsplit(uri)
    if parts.scheme != "tcp" or parts.port is None:
        return None
    return local_host(parts.hostname or ""), parts.port


def describe(host: str, port: int, timeout_s: float = 5.0) -> Probe:
    """Send Wyoming ``describe``; ok when ``info`` comes back naming a program."""
    try:
        with socket.create_connection((host, port), timeout=timeout_s) as sock:
            sock.settimeout(timeout_s)
            sock.sendall(DESCRIBE)
            stream = sock.makefile("rb")
            header = stream.readline(MAX_HEADER_BYTES)
            if not header.endswith(b"\n"):
                raise ConnectionError("no whole event header came back")
            event = json.loads(header)
            data = event.get("data") or {}
            length = int(event.get("data_length") or 0)
            if not 0 <= length <= MAX_HEADER_BYTES:
                raise ValueError(f"event data of {length} bytes")
            if length:
                body = stream.read(length)
                if len(body) != length:
                    raise ConnectionError("closed before the event's data")
                data = {**data, **json.loads(body)}
    except (OSError, ValueError) as exc:
        return Probe(False, f"Wyoming {host}:{port}: {exc}")
    if event.get("type") != "info":
        return Probe(False, f"Wyoming {host}:{port} answered {event.get('type')!r}, not info")
    names = [
        str(program.get("name"))
        for kind in ("asr", "tts", "handle", "wake")
        for program in data.get(kind) or []
        if isinstance(program, dict)
    ]
    if not names:
        return Probe(False, f"Wyoming {host}:{port} describes no programs")
    return Probe(True, f"Wyoming {host}:{port}: {', '.join(sorted(set(names)))}")


def healthz(url: str, timeout_s: float = 5.0) -> Probe:
    """GET ``url`` (Hearth's ``/healthz``); ok on 200 (ready), not on 503 (loading)."""
    try:
        with urllib.request.urlopen(url, timeout=timeout_s) as response:  # noqa: S310
            body = response.read(65536)
            status = response.status
    except urllib.error.HTTPError as exc:
        return Probe(False, f"{url}: {exc.code} {exc.reason}")
    except (OSError, ValueError) as exc:
        return Probe(False, f"{url}: {exc}")
    try:
        state = json.loads(body).get("status", "")
    except (ValueError, AttributeError):
        state = ""
    return Probe(status == 200, f"{url}: {status} {state}".rstrip())


def wait_for_describe(host: str, port: int, timeout_s: float, every_s: float = 1.0) -> Probe:
    """Ask :func:`describe` until it answers or ``timeout_s`` passes; the last answer."""
    deadline = time.monotonic() + timeout_s
    while True:
        probe = describe(host, port)
        if probe.ok or time.monotonic() + every_s > deadline:
            return probe
        time.sleep(every_s)
