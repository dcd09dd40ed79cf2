"""uvicorn's server with SIGTERM/SIGINT owned by the daemon, and lenient request lines."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import socket
from collections.abc import Callable, Iterator

import uvicorn
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

_LOGGER = logging.getLogger(__name__)
STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)
MAX_TARGET = 65000
"""Longest request target served: uvicorn's URL parser keeps offsets in 16 bits."""
URI_TOO_LONG = (
    b'{"error":"the URL is longer than 65000 bytes; send long text in a POST body",'
    b'"code":"uri-too-long"}'
)
_HEX = b"0123456789abcdefABCDEF"
_UNSAFE = frozenset(b' "#<>\\^`{|}') | frozenset(range(0x20)) | frozenset(range(0x7F, 0x100))


def repair_request_line(line: bytes) -> bytes:
    """Percent-encode what is not allowed in a request target, as nginx tolerates it.

    Willow devices append the text to speak to their TTS URL without encoding it, so
    ``GET /api/tts?text=Turn on the light. HTTP/1.1`` must parse. The target is
    everything between the method and the last ``HTTP/x.y``; spaces, ``#``, quotes,
    control and non-ASCII bytes in it are encoded, and a ``%`` that starts no escape
    becomes ``%25``. A valid request line comes back unchanged.
    """
    parts = line.split(b" ")
    if len(parts) < 3 or not parts[-1].startswith(b"HTTP/"):
        return line
    target = b" ".join(parts[1:-1])
    out = bytearray()
    for i, byte in enumerate(target):
        if byte == 0x25 and not (
            i + 2 < len(target) and target[i + 1] in _HEX and target[i + 2] in _HEX
        ):
            out += b"%25"
        elif byte in _UNSAFE:
            out += b"%%%02X" % byte
        else:
            out.append(byte)
    return parts[0] + b" " + bytes(out) + b" " + parts[-1]


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
        self.transport.write(
            b"HTTP/1.1 414 URI Too Long\r\ncontent-type: application/json\r\n"
            b"content-length: %d\r\nconnection: close\r\n\r\n%s" % (len(URI_TOO_LONG), URI_TOO_LONG)
        )
        self.transport.close()


class DaemonServer(uvicorn.Server):
    """A uvicorn server that stops on SIGTERM/SIGINT without re-raising them.

    uvicorn re-raises a caught signal after shutting down, which ends the process
    with the signal's status; a service stopped on purpose must exit 0. A second
    signal forces the exit. With several listeners (HTTP and HTTPS) the first owns
    the signals and stops its ``followers`` with itself; ``on_stop`` is told of the
    first request so that the other listeners can start draining at the same time.
    """

    def __init__(
        self,
        config: uvicorn.Config,
        own_signals: bool = True,
        on_stop: Callable[[], None] | None = None,
    ) -> None:
        super().__init__(config)
        self.own_signals = own_signals
        self.on_stop = on_stop
        self.followers: list[DaemonServer] = []

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        """Start listening, with request lines repaired (see LenientHttpToolsProtocol)."""
        # "auto" resolves to HttpToolsProtocol itself when httptools is installed.
        if self.config.http_protocol_class is HttpToolsProtocol:
            self.config.http_protocol_class = LenientHttpToolsProtocol
        await super().startup(sockets)

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        """Install loop signal handlers for the life of ``serve()``."""
        if not self.own_signals:
            yield
            return
        loop = asyncio.get_running_loop()
        for sig in STOP_SIGNALS:
            loop.add_signal_handler(sig, self.request_stop, sig)
        # The handlers stay until the loop closes: a second signal while the other
        # listeners drain must not kill the process with the signal's status.
        yield

    def request_stop(self, sig: int = signal.SIGTERM) -> None:
        """Begin a graceful shutdown (a second request forces it)."""
        _LOGGER.info("Stopping on %s", signal.Signals(sig).name)
        if not self.should_exit and self.on_stop is not None:
            self.on_stop()
        self.stop(force=self.should_exit)

    def stop(self, force: bool = False) -> None:
        """Stop this listener and its followers (``force``: without waiting)."""
        for server in (self, *self.followers):
            if force:
                server.force_exit = True
            server.should_exit = True
