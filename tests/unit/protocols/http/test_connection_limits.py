"""uvicorn as Hearth runs it: half-sent request heads time out, connections are capped,
request lines ending in a bare LF are refused at once."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest
import uvicorn

from protocols.patches.uvicorn import DaemonServer
from tests.helpers import eventually

TIMEOUT_S = 10
HEADER_TIMEOUT_S = 1.0
PATIENT_HEADER_S = 8.0
"""The head deadline of tests where it must not end a connection: far above any stall of
the shared test loop."""
CAP = 12


async def app(scope: Any, receive: Any, send: Any) -> None:
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": b"ok"})


@pytest.fixture
async def server(request: pytest.FixtureRequest) -> AsyncIterator[DaemonServer]:
    """The server, with a head deadline of HEADER_TIMEOUT_S (or the test's parameter)."""
    config = uvicorn.Config(
        app, host="127.0.0.1", port=0, lifespan="off", log_config=None, access_log=False
    )
    server = DaemonServer(config, getattr(request, "param", HEADER_TIMEOUT_S), CAP)
    task = asyncio.create_task(server.serve())
    async with asyncio.timeout(TIMEOUT_S):
        while not server.started:
            await asyncio.sleep(0.01)
    yield server
    server.stop(force=True)
    await asyncio.wait_for(task, TIMEOUT_S)


@pytest.fixture
def port(server: DaemonServer) -> int:
    return server.servers[0].sockets[0].getsockname()[1]


patient = pytest.mark.parametrize("server", [PATIENT_HEADER_S], indirect=True)
"""Give the test the long head deadline."""


async def request(port: int, data: bytes) -> bytes:
    """Send ``data`` on a new connection; everything the server answers until it closes."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(data)
    try:
        return await reader.read(65536)
    finally:
        writer.close()


async def test_half_sent_heads_are_closed_after_the_deadline(port: int) -> None:
    async with asyncio.timeout(TIMEOUT_S):
        half = [await asyncio.open_connection("127.0.0.1", port) for _ in range(CAP - 2)]
        for _, writer in half:
            writer.write(b"GET /api/pi")
        # Meanwhile a whole request is answered at once.
        answer = await request(port, b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        assert answer.startswith(b"HTTP/1.1 200")
        for reader, writer in half:
            reply = await reader.read()  # then EOF: the server closed it
            assert reply.startswith(b"HTTP/1.1 408"), reply
            assert b'"header-timeout"' in reply
            writer.close()


async def test_a_keep_alive_connection_gets_a_deadline_for_its_next_head(port: int) -> None:
    async with asyncio.timeout(TIMEOUT_S):
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\nGET / HTTP/1.1\r\nHo")
        reply = await reader.read()
        assert reply.startswith(b"HTTP/1.1 200") and b"HTTP/1.1 408" in reply
        writer.close()


@patient
async def test_connections_over_the_cap_are_refused_at_once(
    server: DaemonServer, port: int
) -> None:
    async with asyncio.timeout(TIMEOUT_S):
        held = [await asyncio.open_connection("127.0.0.1", port) for _ in range(CAP)]
        assert await eventually(lambda: len(server.server_state.connections) == CAP)
        reply = await request(port, b"")
        assert reply.startswith(b"HTTP/1.1 503") and b"max_connections" in reply
        for _, writer in held:
            writer.close()


@patient
async def test_a_request_in_bare_lf_lines_is_refused_at_once(port: int) -> None:
    # Well before the head's deadline: it waited for it before.
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(b"GET /health HTTP/1.1\nHost: x\n\n")
    async with asyncio.timeout(PATIENT_HEADER_S / 2):
        reply = await reader.read()  # to EOF: the server closed the connection
    writer.close()
    assert reply.startswith(b"HTTP/1.1 400 "), reply
    assert b'"invalid-request"' in reply


async def test_a_refusal_reaches_a_client_that_is_still_sending(port: int) -> None:
    # A request line too long to serve (414), found while the client still sends the
    # rest of it: closing at once would make the kernel reset the connection, and the
    # client, still writing, would lose the answer. The server drops what follows.
    async with asyncio.timeout(TIMEOUT_S):
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(b"GET /api/tts?text=" + b"a" * 70_000)
        await writer.drain()
        status = await reader.readuntil(b"\r\n")  # refused mid-line
        assert status.startswith(b"HTTP/1.1 414 "), status
        for _ in range(20):  # the client has not noticed yet, and sends on
            writer.write(b"a" * 32_768)
            await writer.drain()
            await asyncio.sleep(0.005)
        rest = await reader.read()  # the rest of the answer, then EOF (no reset)
        writer.close()
    assert b'"uri-too-long"' in rest
