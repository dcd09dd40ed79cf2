"""A Realtime session over fake engines and an in-memory socket, driven like a client."""

from __future__ import annotations

import asyncio
import base64
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from protocols.realtime.session import RealtimeSession
from tests.fakes import FakeEngines, FakeLlm, fake_config, fake_engines

TIMEOUT_S = 10.0
RATE = 24000
OPENAI_VOICES = frozenset({"alloy", "marin"})
OPENAI_ASR = frozenset({"whisper-1"})


class FakeSocket:
    """The client's end of the WebSocket: what it sends, and what it was sent."""

    def __init__(self) -> None:
        self.inbox: asyncio.Queue[str | bytes | None] = asyncio.Queue()
        self.received: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        self.sent: list[dict[str, Any]] = []

    async def receive(self) -> str | bytes | None:
        return await self.inbox.get()

    async def send(self, text: str) -> None:
        message = json.loads(text)
        self.sent.append(message)
        self.received.put_nowait(message)


@dataclass
class Client:
    """Sends client events; reads server events in order."""

    session: RealtimeSession
    socket: FakeSocket
    fakes: FakeEngines
    seen: list[dict[str, Any]] = field(default_factory=list)

    def send(self, kind: str, **fields: Any) -> None:
        self.socket.inbox.put_nowait(json.dumps({"type": kind, **fields}))

    def send_raw(self, raw: str | bytes) -> None:
        self.socket.inbox.put_nowait(raw)

    def append(self, pcm: np.ndarray | bytes, piece: int = 4800) -> None:
        """Input audio in base64 events of ``piece`` samples (int16 at 24 kHz, or bytes)."""
        data = pcm.astype("<i2").tobytes() if isinstance(pcm, np.ndarray) else pcm
        step = piece * 2 if isinstance(pcm, np.ndarray) else piece
        for offset in range(0, len(data), step):
            chunk = base64.b64encode(data[offset : offset + step]).decode()
            self.send("input_audio_buffer.append", audio=chunk)

    async def next(self) -> dict[str, Any]:
        async with asyncio.timeout(TIMEOUT_S):
            message = await self.socket.received.get()
        self.seen.append(message)
        return message

    async def until(self, kind: str, **fields: Any) -> list[dict[str, Any]]:
        """Events up to and including the first of ``kind`` with ``fields``."""
        got = []
        while True:
            message = await self.next()
            got.append(message)
            if message["type"] == kind and all(message.get(k) == v for k, v in fields.items()):
                return got

    def unread(self) -> list[dict[str, Any]]:
        out = []
        while not self.socket.received.empty():
            out.append(self.socket.received.get_nowait())
        self.seen += out
        return out


def kinds(messages: list[dict[str, Any]]) -> list[str]:
    return [m["type"] for m in messages]


async def open_client(
    tmp_path: Path, llm: FakeLlm | None = None, beta: bool = False, fakes: Any = None
) -> tuple[Client, asyncio.Task[None]]:
    """A client of a new session; ``fakes``: the engines of an earlier one (one daemon)."""
    fakes = fakes or fake_engines(fake_config(tmp_path), llm=llm)
    socket = FakeSocket()
    session = RealtimeSession(
        socket,
        fakes.services,
        model="gpt-realtime",
        beta=beta,
        voice_aliases=OPENAI_VOICES,
        asr_aliases=OPENAI_ASR,
    )
    task = asyncio.ensure_future(session.run())
    return Client(session, socket, fakes), task


@pytest.fixture
async def client(tmp_path: Path) -> AsyncIterator[Client]:
    opened, task = await open_client(tmp_path)
    yield opened
    await close(opened, task)


async def close(client: Client, task: asyncio.Task[None]) -> None:
    client.socket.inbox.put_nowait(None)
    async with asyncio.timeout(TIMEOUT_S):
        await task
    client.fakes.close()
