"""Wyoming clients that hold a connection by being slow: one that trickles a header line
and one that stops reading while Hearth speaks are both dropped within a deadline."""

from __future__ import annotations

import asyncio
import json
import socket
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from wyoming.tts import Synthesize

from protocols.wyoming import handler
from protocols.wyoming.framing import FrameError, read_event
from protocols.wyoming.server import WyomingServer
from tests.fakes import FakeEngines, fake_config, fake_engines

TIMEOUT_S = 10.0
BODY_TIMEOUT_S = 0.3
WRITE_TIMEOUT_S = 0.3


def reader_with(data: bytes) -> asyncio.StreamReader:
    """A reader that has received ``data`` and nothing more (the peer is still there)."""
    reader = asyncio.StreamReader(limit=1 << 20)
    reader.feed_data(data)
    return reader


async def test_a_header_line_that_does_not_end_is_refused_after_the_deadline() -> None:
    async with asyncio.timeout(TIMEOUT_S):
        reader = reader_with(b'{"type": "pi')
        started = asyncio.get_running_loop().time()
        with pytest.raises(FrameError) as caught:
            await read_event(reader, 1 << 16, BODY_TIMEOUT_S)
        assert caught.value.fatal
        assert "did not end" in caught.value.message
        assert asyncio.get_running_loop().time() - started < BODY_TIMEOUT_S * 5


async def test_a_trickled_header_line_is_refused_even_while_bytes_arrive() -> None:
    async with asyncio.timeout(TIMEOUT_S):
        reader = reader_with(b"{")

        async def trickle() -> None:
            for byte in b'"type": "ping", "data": {}'[:50]:  # slower than the deadline
                await asyncio.sleep(BODY_TIMEOUT_S / 10)
                reader.feed_data(bytes([byte]))

        feeding = asyncio.create_task(trickle())
        try:
            with pytest.raises(FrameError, match="did not end"):
                await read_event(reader, 1 << 16, BODY_TIMEOUT_S)
        finally:
            feeding.cancel()


async def test_waiting_for_an_event_to_begin_has_no_deadline_here() -> None:
    async with asyncio.timeout(TIMEOUT_S):
        reader = reader_with(b"")
        reading = asyncio.create_task(read_event(reader, 1 << 16, BODY_TIMEOUT_S))
        await asyncio.sleep(BODY_TIMEOUT_S * 3)  # the server's idle timeout covers this
        assert not reading.done()
        reader.feed_data(b'{"type": "ping", "data": {"text": "hi"}}\n')
        event = await reading
        assert event is not None and event.type == "ping"


async def test_a_whole_header_line_and_the_end_of_the_stream_still_read() -> None:
    async with asyncio.timeout(TIMEOUT_S):
        reader = reader_with(b'{"type": "ping"}\n')
        reader.feed_eof()
        event = await read_event(reader, 1 << 16, BODY_TIMEOUT_S)
        assert event is not None and event.type == "ping"
        assert await read_event(reader, 1 << 16, BODY_TIMEOUT_S) is None


@pytest.fixture
async def server(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[WyomingServer]:
    monkeypatch.setattr(handler, "WRITE_TIMEOUT_S", WRITE_TIMEOUT_S)
    fakes: FakeEngines = fake_engines(fake_config(tmp_path))
    server = WyomingServer("tcp://127.0.0.1:0", fakes.services, 4, 1 << 20, 2.0)
    async with asyncio.timeout(TIMEOUT_S):
        await server.start()
    yield server
    async with asyncio.timeout(TIMEOUT_S):
        await server.stop(grace_s=1.0)
    fakes.close()


async def test_a_client_that_stops_reading_during_tts_is_dropped(server: WyomingServer) -> None:
    # A small receive window, so the server's buffers fill after little audio.
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.setblocking(False)
    loop = asyncio.get_running_loop()
    async with asyncio.timeout(TIMEOUT_S):
        await loop.sock_connect(sock, ("127.0.0.1", server.port))
        _, writer = await asyncio.open_connection(sock=sock)
        while server.connections == 0:
            await asyncio.sleep(0.01)
        # Far more audio than any socket buffer holds; the client never reads a byte.
        event = Synthesize(text="The kitchen lights are on now. " * 9).event()
        line = json.dumps({"type": event.type, "data": event.data}).encode() + b"\n"
        writer.write(line * 400)
        started = loop.time()
        while server.connections > 0:
            await asyncio.sleep(0.05)
        # Dropped long before limits.request_timeout_s (120 s).
        assert loop.time() - started < TIMEOUT_S / 2
        writer.close()
