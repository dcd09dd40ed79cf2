"""Silent Wyoming connections: closed when idle, and never able to lock Home Assistant out."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from wyoming.client import AsyncTcpClient
from wyoming.info import Describe, Info
from wyoming.ping import Ping, Pong

from protocols.wyoming import handler
from protocols.wyoming.server import WyomingServer
from tests.fakes import FakeEngines, fake_config, fake_engines

TIMEOUT_S = 10
CAP = 4
IDLE_S = 1.0


@contextlib.asynccontextmanager
async def serving(tmp_path: Path, idle_timeout_s: float) -> AsyncIterator[WyomingServer]:
    """A Wyoming server over fake engines, with CAP connections at most."""
    fakes: FakeEngines = fake_engines(fake_config(tmp_path))
    server = WyomingServer(
        "tcp://127.0.0.1:0", fakes.services, CAP, 1 << 20, 2.0, idle_timeout_s=idle_timeout_s
    )
    async with asyncio.timeout(TIMEOUT_S):
        await server.start()
    try:
        yield server
    finally:
        async with asyncio.timeout(TIMEOUT_S):
            await server.stop(grace_s=1.0)
        fakes.close()


@pytest.fixture
async def server(tmp_path: Path) -> AsyncIterator[WyomingServer]:
    async with serving(tmp_path, IDLE_S) as server:
        yield server


async def silent(server: WyomingServer) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """A connection that sends nothing, once the server counts it."""
    before = server.connections
    pair = await asyncio.open_connection("127.0.0.1", server.port)
    while server.connections <= before:
        await asyncio.sleep(0.01)
    return pair


async def describe(server: WyomingServer) -> Info | None:
    """What Home Assistant does first: describe, then read the answer."""
    async with AsyncTcpClient("127.0.0.1", server.port) as client:
        await client.write_event(Describe().event())
        event = await client.read_event()
    assert event is not None
    return Info.from_event(event) if Info.is_type(event.type) else None


async def test_a_full_cap_of_silent_connections_still_lets_home_assistant_in(
    server: WyomingServer,
) -> None:
    async with asyncio.timeout(TIMEOUT_S):
        held = [await silent(server) for _ in range(CAP)]
        info = await describe(server)
        assert info is not None and info.asr, "the describe was refused"
        # The oldest silent connection made room: it reads EOF.
        assert await held[0][0].read() == b""
        for _, writer in held:
            writer.close()


async def test_silent_connections_are_closed_after_the_idle_timeout(
    server: WyomingServer,
) -> None:
    async with asyncio.timeout(TIMEOUT_S):
        reader, writer = await silent(server)
        async with AsyncTcpClient("127.0.0.1", server.port) as pinging:
            for _ in range(16):  # alive across several idle timeouts while it pings
                await pinging.write_event(Ping(text="hi").event())
                pong = await pinging.read_event()
                assert pong is not None and Pong.is_type(pong.type)
                await asyncio.sleep(IDLE_S / 4)
            assert await reader.read() == b""  # the silent one is gone
        writer.close()


async def test_a_connection_ending_after_an_error_makes_room_before_a_silent_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """After an error the server drops what the client still sends for a while; such a
    connection serves nobody, so it gives up its slot before one that is only quiet
    (a satellite between wake words), however recently its bytes came."""
    monkeypatch.setattr(handler, "LINGER_S", 60.0)
    async with serving(tmp_path, 300.0) as server, asyncio.timeout(TIMEOUT_S):
        held = [await silent(server) for _ in range(CAP - 1)]
        reader, writer = await silent(server)
        writer.write(b"this is not json\n")
        # The error, then EOF: the server's side is closed and it lingers.
        assert b"invalid-event" in await reader.read()
        assert server.connections == CAP

        info = await describe(server)
        assert info is not None and info.asr, "the describe was refused"
        # The oldest silent connection is still served.
        oldest_reader, oldest_writer = held[0]
        oldest_writer.write(b'{"type": "ping"}\n')
        assert b'"pong"' in await oldest_reader.readline()
        for _, w in [*held, (reader, writer)]:
            w.close()
