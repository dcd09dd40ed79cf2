"""Subclasses that override uvicorn internals (no uvicorn class is modified in place).

- **Lenient request lines** (``HttpToolsProtocol.data_received``, with
  ``on_message_begin``/``on_message_complete`` to know where a request line starts):
  Willow devices append the text to speak to their TTS URL without encoding it
  (``GET /api/tts?text=Turn on the light. HTTP/1.1``), which httptools refuses with
  400. The request line is repaired (:func:`protocols.patches.requestline.repair_request_line`)
  before httptools parses it, as nginx in front of WIS tolerated it. A request line
  ending in a bare LF is refused with 400 at once (httptools refuses one itself; the
  line is held here until its CRLF, which would never come).
- **A deadline on request heads, and a cap on connections**
  (``HttpToolsProtocol.connection_made``/``data_received``/``on_message_begin``/
  ``on_headers_complete``/``on_message_complete``/``connection_lost``): uvicorn
  bounds only the wait between requests (``timeout_keep_alive``); a client that sends
  half a request line is held forever, and every such connection stays open. A
  request head not complete within ``http.header_timeout_s`` of its first byte (or of
  the connection) gets 408 and the connection is closed; a connection beyond
  ``http.max_connections`` gets 503 at once.
  (uvicorn's ``limit_concurrency`` answers 503 only once a complete head arrives.)
- **A lingering close after this layer's own refusals** (414, 400, 408, 503): the
  client may still be sending, and closing with its bytes unread makes the kernel
  answer with a TCP reset, which can destroy the response before the client reads it.
  The connection half-closes instead (the client reads the response, then EOF), drops
  what still arrives for at most :data:`LINGER_S` or :data:`LINGER_BYTES`, and closes.
- **No signal handling** (``Server.capture_signals``): uvicorn installs its own
  SIGTERM/SIGINT handlers and re-raises the signal after shutting down, which ends
  the process with the signal's status. The service owns those signals (a stop on
  purpose exits 0, and every listener drains, not only HTTP).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import re
import socket
from collections.abc import Iterator

import uvicorn
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from protocols.patches import Patch, usable
from protocols.patches.requestline import MAX_TARGET, repair_request_line, too_long_response

_LOGGER = logging.getLogger(__name__)

VERSIONS = ("0.34", "0.55")
_LENIENT = "request lines with spaces (Willow TTS URLs) are refused with 400"
DATA_RECEIVED = Patch(
    "uvicorn",
    "uvicorn.protocols.http.httptools_impl:HttpToolsProtocol.data_received",
    ("self", "data"),
    False,
    VERSIONS,
    _LENIENT,
)
MESSAGE_BEGIN = Patch(
    "uvicorn",
    "uvicorn.protocols.http.httptools_impl:HttpToolsProtocol.on_message_begin",
    ("self",),
    False,
    VERSIONS,
    _LENIENT,
)
MESSAGE_COMPLETE = Patch(
    "uvicorn",
    "uvicorn.protocols.http.httptools_impl:HttpToolsProtocol.on_message_complete",
    ("self",),
    False,
    VERSIONS,
    _LENIENT,
)
STARTUP = Patch(
    "uvicorn",
    "uvicorn.server:Server.startup",
    ("self", "sockets"),
    True,
    VERSIONS,
    _LENIENT,
)
CAPTURE_SIGNALS = Patch(
    "uvicorn",
    "uvicorn.server:Server.capture_signals",
    ("self",),
    False,
    VERSIONS,
    "uvicorn may handle SIGTERM itself: HTTP stops alone and the exit status is the signal's",
)
_GUARD = "half-sent request heads hold their connections forever, and connections are not capped"
CONNECTION_MADE = Patch(
    "uvicorn",
    "uvicorn.protocols.http.httptools_impl:HttpToolsProtocol.connection_made",
    ("self", "transport"),
    False,
    VERSIONS,
    _GUARD,
)
CONNECTION_LOST = Patch(
    "uvicorn",
    "uvicorn.protocols.http.httptools_impl:HttpToolsProtocol.connection_lost",
    ("self", "exc"),
    False,
    VERSIONS,
    _GUARD,
)
HEADERS_COMPLETE = Patch(
    "uvicorn",
    "uvicorn.protocols.http.httptools_impl:HttpToolsProtocol.on_headers_complete",
    ("self",),
    False,
    VERSIONS,
    _GUARD,
)
PATCHES = (
    DATA_RECEIVED,
    MESSAGE_BEGIN,
    MESSAGE_COMPLETE,
    STARTUP,
    CAPTURE_SIGNALS,
    CONNECTION_MADE,
    CONNECTION_LOST,
    HEADERS_COMPLETE,
)
LENIENT_PATCHES = (DATA_RECEIVED, MESSAGE_BEGIN, MESSAGE_COMPLETE, STARTUP)
GUARD_PATCHES = (
    CONNECTION_MADE,
    CONNECTION_LOST,
    HEADERS_COMPLETE,
    MESSAGE_BEGIN,
    MESSAGE_COMPLETE,
    DATA_RECEIVED,
    STARTUP,
)


def raw_error(status: int, reason: str, code: str, message: str, retry: bool = False) -> bytes:
    """A complete JSON error response that closes the connection, as the app would answer."""
    # The app's error body for a route outside /v1/ (protocols.http.errors.error_body;
    # a test holds the two equal): this layer answers before any route is known.
    body = json.dumps({"error": message, "code": code, "detail": message}).encode()
    retry_after = b"retry-after: 1\r\n" if retry else b""
    return (
        b"HTTP/1.1 %d %s\r\ncontent-type: application/json\r\ncontent-length: %d\r\n"
        b"%sconnection: close\r\n\r\n%s" % (status, reason.encode(), len(body), retry_after, body)
    )


LINGER_S = 2.0
"""After a refusal, how long what the client still sends is read and dropped (s)."""
LINGER_BYTES = 4 * 1024 * 1024
"""After a refusal, at most this much of what the client still sends is dropped."""


class GuardedHttpToolsProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol with a deadline on each request head and a connection cap.

    The limits are class attributes: :class:`DaemonServer` makes a subclass per server
    with the configured values (0 turns a limit off).
    """

    header_timeout_s: float = 0.0
    """Seconds from a connection, or from a request's first byte, to its complete head."""
    max_connections: int = 0
    """Most connections open at once on this server."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self._awaiting_head = True
        self._head_deadline: asyncio.TimerHandle | None = None
        self._linger: asyncio.TimerHandle | None = None
        self._droppable = 0
        """Bytes still dropped after a refusal, before the connection is closed."""

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        """Refuse the connection over the cap; otherwise start the head's deadline."""
        super().connection_made(transport)
        if self.max_connections and len(self.connections) > self.max_connections:
            _LOGGER.warning("HTTP connection refused: %d already open", len(self.connections) - 1)
            message = f"too many connections (http.max_connections is {self.max_connections})"
            self.refuse(raw_error(503, "Service Unavailable", "busy", message, retry=True))
            return
        self._arm_head_deadline()

    def data_received(self, data: bytes) -> None:
        """The first bytes of a request (after a keep-alive wait) start its deadline."""
        if self.dropped(data):
            return
        self._start_head_clock()
        super().data_received(data)

    def refuse(self, response: bytes) -> None:
        """Answer ``response`` (which says ``connection: close``), then close lingering:
        see the module."""
        self._cancel_head_deadline()
        self._droppable = LINGER_BYTES
        self.transport.write(response)
        if self.transport.can_write_eof():
            self.transport.write_eof()
        self._linger = self.loop.call_later(LINGER_S, self.transport.close)

    def dropped(self, data: bytes) -> bool:
        """Whether ``data`` came after a refusal (it is dropped, up to the limit)."""
        if self._linger is None:
            return False
        self._droppable -= len(data)
        if self._droppable < 0:
            self.transport.close()
        return True

    def _start_head_clock(self) -> None:
        if self._awaiting_head and self._head_deadline is None:
            self._arm_head_deadline()

    def on_message_begin(self) -> None:
        """A request starts (also one pipelined behind the previous): time its head."""
        self._start_head_clock()
        super().on_message_begin()

    def on_headers_complete(self) -> None:
        """The head is in: the route's own deadlines apply from here."""
        self._awaiting_head = False
        self._cancel_head_deadline()
        super().on_headers_complete()

    def on_message_complete(self) -> None:
        """The next bytes start a new request head."""
        super().on_message_complete()
        self._awaiting_head = True

    def connection_lost(self, exc: Exception | None) -> None:
        """Nothing more to time."""
        self._cancel_head_deadline()
        if self._linger is not None:
            self._linger.cancel()
        super().connection_lost(exc)

    def _arm_head_deadline(self) -> None:
        if self.header_timeout_s > 0:
            self._head_deadline = self.loop.call_later(self.header_timeout_s, self._head_late)

    def _cancel_head_deadline(self) -> None:
        if self._head_deadline is not None:
            self._head_deadline.cancel()
            self._head_deadline = None

    def _head_late(self) -> None:
        """The head did not arrive in time: answer 408 and close."""
        self._head_deadline = None
        if not self._awaiting_head or self.transport.is_closing():
            return
        if self.cycle is not None and not self.cycle.response_complete:
            # A pipelined head behind a response still being sent: wait for that response.
            self._arm_head_deadline()
            return
        message = f"the request head took longer than {self.header_timeout_s:g} s"
        self.refuse(raw_error(408, "Request Timeout", "header-timeout", message))


class LenientHttpToolsProtocol(GuardedHttpToolsProtocol):
    """uvicorn's httptools protocol, with each request line repaired before parsing."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)
        self._at_request_line = True
        self._held = bytearray()

    def on_message_begin(self) -> None:
        """The parser started a request: its line has been repaired already."""
        self._at_request_line = False
        super().on_message_begin()

    def on_message_complete(self) -> None:
        """The next bytes on this connection start a new request line."""
        super().on_message_complete()
        self._at_request_line = True

    def data_received(self, data: bytes) -> None:
        """Hold bytes until the request line is complete, repair it, then parse.

        A request pipelined into the same read as the previous one is parsed as is.
        """
        if self.dropped(data):
            return
        self._start_head_clock()  # also while the line is held here
        if self._at_request_line:
            scan_from = max(0, len(self._held) - 1)  # only new bytes (and a split CRLF)
            self._held += data
            # Refused, not answered: see _ends_in_bare_lf for why.
            if _ends_in_bare_lf(self._held, scan_from):
                self._held = bytearray()
                self._refuse_bare_lf()
                return
            end = self._held.find(b"\r\n", scan_from)
            if end < 0:
                if len(self._held) > MAX_TARGET:  # the line could only be refused
                    self._held = bytearray()
                    self._refuse_long_uri()
                return
            held, self._held = bytes(self._held), bytearray()
            line = repair_request_line(held[:end])
            if len(line) > MAX_TARGET:
                self._refuse_long_uri()
                return
            data = line + held[end:]
        super().data_received(data)

    def _refuse_long_uri(self) -> None:
        """Answer 414 with a JSON body, as the app would, and close."""
        self.refuse(too_long_response())

    def _refuse_bare_lf(self) -> None:
        """Answer 400 with a JSON body, as the app would, and close."""
        message = "HTTP lines must end in CRLF, not a bare LF"
        self.refuse(raw_error(400, "Bad Request", "invalid-request", message))


_BARE_LF_LINE = re.compile(rb" HTTP/\d\.\d\n")


def _ends_in_bare_lf(held: bytes | bytearray, scan_from: int) -> bool:
    """Whether the request line held so far is complete but ends in a bare LF.

    RFC 9112 (2.2) lets a server take a bare LF as a line end, but answering would mean
    rewriting every line before httptools sees it: llhttp refuses a bare LF on every
    line (this one, headers, chunk sizes) with 400. And a proxy in front of Hearth may
    split lines differently than Hearth would: accepting bare LFs is how request
    smuggling starts, and no real client sends them. Waiting for a CRLF that never
    comes held the connection until ``http.header_timeout_s``; the line is refused at
    once instead, as httptools would refuse it. A bare LF that ends no request line (a
    newline inside a Willow TTS text, sent unencoded) is left for
    :func:`repair_request_line` to encode.
    """
    # Back far enough for " HTTP/1.1" split across reads; the CRLF search starts later.
    start = max(0, scan_from - len(b" HTTP/1.1"))
    match = _BARE_LF_LINE.search(held, start)
    return match is not None and b"\r\n" not in held[: match.start()]


class DaemonServer(uvicorn.Server):
    """A uvicorn server that leaves signals to the service, repairs request lines,
    times request heads and caps connections."""

    def __init__(
        self, config: uvicorn.Config, header_timeout_s: float = 0.0, max_connections: int = 0
    ) -> None:
        super().__init__(config)
        self.header_timeout_s = header_timeout_s
        self.max_connections = max_connections

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        """Start listening with the protocol subclasses above, where they fit."""
        # "auto" resolves to HttpToolsProtocol itself when httptools is installed.
        if getattr(self.config, "http_protocol_class", None) is HttpToolsProtocol:
            lenient = all(usable(patch) for patch in LENIENT_PATCHES)
            guarded = all(usable(patch) for patch in GUARD_PATCHES)
            base = LenientHttpToolsProtocol if lenient else GuardedHttpToolsProtocol
            limits = {
                "header_timeout_s": self.header_timeout_s if guarded else 0.0,
                "max_connections": self.max_connections if guarded else 0,
            }
            self.config.http_protocol_class = type(base.__name__, (base,), limits)
        await super().startup(sockets)

    def set_limits(self, header_timeout_s: float, max_connections: int) -> None:
        """Apply new limits to the connections made from now on (a reload)."""
        self.header_timeout_s = header_timeout_s
        self.max_connections = max_connections
        protocol = getattr(self.config, "http_protocol_class", None)
        guarded = all(usable(patch) for patch in GUARD_PATCHES)
        if (
            guarded
            and isinstance(protocol, type)
            and issubclass(protocol, GuardedHttpToolsProtocol)
        ):
            protocol.header_timeout_s = header_timeout_s
            protocol.max_connections = max_connections

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        """Install no handlers: the service owns SIGTERM/SIGINT and stops every listener."""
        usable(CAPTURE_SIGNALS)
        yield

    def stop(self, force: bool = False) -> None:
        """Begin a graceful shutdown (``force``: without waiting for requests)."""
        if force:
            self.force_exit = True
        self.should_exit = True
