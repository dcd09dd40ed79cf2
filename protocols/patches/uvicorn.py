"""Subclasses that override uvicorn internals (no uvicorn class is modified in place).

- **Lenient request lines** (``HttpToolsProtocol.data_received``, with
  ``on_message_begin``/``on_message_complete`` to know where a request line starts):
  Willow devices append the text to speak to their TTS URL without encoding it
  (``GET /api/tts?text=Turn on the light. HTTP/1.1``), which httptools refuses with
  400. The request line is repaired (:func:`protocols.http.requestline.repair_request_line`)
  before httptools parses it, as nginx in front of WIS tolerated it.
- **No signal handling** (``Server.capture_signals``): uvicorn installs its own
  SIGTERM/SIGINT handlers and re-raises the signal after shutting down, which ends
  the process with the signal's status. The service owns those signals (a stop on
  purpose exits 0, and every listener drains, not only HTTP).
"""

from __future__ import annotations

import contextlib
import logging
import socket
from collections.abc import Iterator

import uvicorn
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from protocols.http.requestline import MAX_TARGET, repair_request_line, too_long_response
from protocols.patches import Patch, usable

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
PATCHES = (DATA_RECEIVED, MESSAGE_BEGIN, MESSAGE_COMPLETE, STARTUP, CAPTURE_SIGNALS)
LENIENT_PATCHES = (DATA_RECEIVED, MESSAGE_BEGIN, MESSAGE_COMPLETE, STARTUP)


class LenientHttpToolsProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol, with each request line repaired before parsing."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
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
        if self._at_request_line:
            scan_from = max(0, len(self._held) - 1)  # only new bytes (and a split CRLF)
            self._held += data
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
        self.transport.write(too_long_response())
        self.transport.close()


class DaemonServer(uvicorn.Server):
    """A uvicorn server that leaves signals to the service and repairs request lines."""

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        """Start listening, with request lines repaired (see LenientHttpToolsProtocol)."""
        # "auto" resolves to HttpToolsProtocol itself when httptools is installed.
        lenient = all(usable(patch) for patch in LENIENT_PATCHES)
        if lenient and getattr(self.config, "http_protocol_class", None) is HttpToolsProtocol:
            self.config.http_protocol_class = LenientHttpToolsProtocol
        await super().startup(sockets)

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
