"""A request body that stops arriving ends early (408 ``body-timeout``), over real uvicorn.

The app over fake engines is served by :class:`DaemonServer` on a loopback port, and
raw clients send heads and bodies byte by byte, as a stalled Willow device would.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
import uvicorn

from protocols.http.app import create_app
from protocols.patches.uvicorn import DaemonServer
from tests.fakes import KITCHEN, FakeService, fake_config, fake_engines, utterance

TIMEOUT_S = 10
IDLE_S = 0.5
CAP = 8
ANSWERED_S = 3.0
"""Bound on the wait for a 408: a few idle periods, far below ``limits.request_timeout_s``
(120 s by default), which is what a stalled body held its connection for before."""
PCM = (
    "x-audio-codec: pcm\r\nx-audio-sample-rate: 16000\r\nx-audio-bits: 16\r\nx-audio-channel: 1\r\n"
)

REQUEST_TIMEOUT_S = 120.0
"""The default ``limits.request_timeout_s``."""

PATIENT_IDLE_S = 3.0
"""The idle limit of tests where idling must never end the body: far above any stall of
the shared test loop, and above the 1 s request deadline those tests wait for."""

Serve = Callable[..., contextlib.AbstractAsyncContextManager[int]]


@pytest.fixture
def serve(tmp_path: Path) -> Serve:
    """Serve the app with ``http.body_idle_timeout_s`` (``IDLE_S`` unless given) and a
    request deadline."""

    @contextlib.asynccontextmanager
    async def serving(
        request_timeout_s: float = REQUEST_TIMEOUT_S, idle_s: float = IDLE_S
    ) -> AsyncIterator[int]:
        config = fake_config(tmp_path, f"http:\n  body_idle_timeout_s: {idle_s}\n")
        limits = dataclasses.replace(config.limits, request_timeout_s=request_timeout_s)
        config = dataclasses.replace(config, limits=limits)
        fakes = fake_engines(config)
        app = create_app(FakeService(config, fakes.engines))
        uv = uvicorn.Config(
            app, host="127.0.0.1", port=0, lifespan="off", log_config=None, access_log=False
        )
        server = DaemonServer(uv, header_timeout_s=TIMEOUT_S, max_connections=CAP)
        task = asyncio.create_task(server.serve())
        try:
            async with asyncio.timeout(TIMEOUT_S):
                while not server.started:
                    await asyncio.sleep(0.01)
            yield server.servers[0].sockets[0].getsockname()[1]
        finally:
            server.stop(force=True)
            await asyncio.wait_for(task, TIMEOUT_S)
            fakes.close()

    return serving


def willow_head(port: int) -> bytes:
    """A Willow device's chunked upload head."""
    return (
        f"POST /api/willow HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
        f"Transfer-Encoding: chunked\r\n{PCM}\r\n"
    ).encode()


def chunk(data: bytes) -> bytes:
    """``data`` as one chunk of a chunked body."""
    return b"%x\r\n%s\r\n" % (len(data), data)


def parse(reply: bytes) -> tuple[int, dict[str, str], Any]:
    """Status, headers (lower-case names) and JSON body of one response."""
    head, _, body = reply.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    headers = dict(line.lower().split(": ", 1) for line in lines[1:])
    return int(lines[0].split()[1]), headers, json.loads(body) if body else None


async def stalled(port: int, head: bytes, first: bytes) -> bytes:
    """Send a head and the start of a body, then nothing: the reply until the server closes."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        writer.write(head + first)
        async with asyncio.timeout(ANSWERED_S):
            return await reader.read()  # to EOF: the connection is closed
    finally:
        writer.close()


async def test_a_stalled_willow_upload_is_408_and_its_connection_closed(serve: Serve) -> None:
    async with serve() as port:
        reply = await stalled(port, willow_head(port), chunk(b"\x00" * 10))
    status, headers, body = parse(reply)
    assert status == 408 and headers["connection"] == "close"
    assert body["code"] == "body-timeout" and "0.5 s" in body["detail"]


async def test_stalled_uploads_give_their_connection_slots_back(serve: Serve) -> None:
    async with serve() as port:
        replies = await asyncio.gather(
            *(stalled(port, willow_head(port), chunk(b"\x00" * 10)) for _ in range(CAP))
        )
        assert all(reply.startswith(b"HTTP/1.1 408 ") for reply in replies)
        # Every slot is free again: a whole request is answered, not refused with 503.
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(b"GET /api/ping HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
        async with asyncio.timeout(TIMEOUT_S):
            answer = await reader.read()
        writer.close()
    assert answer.startswith(b"HTTP/1.1 200 "), answer


async def test_a_stalled_json_body_is_408_in_openai_form(serve: Serve) -> None:
    async with serve() as port:
        head = (
            f"POST /v1/audio/speech HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
            "Content-Type: application/json\r\nContent-Length: 100\r\n\r\n"
        ).encode()
        reply = await stalled(port, head, b'{"input": ')
    status, headers, body = parse(reply)
    assert status == 408 and headers["connection"] == "close"
    assert body["error"]["code"] == "body-timeout"


async def test_a_json_body_that_trickles_ends_at_the_request_deadline(serve: Serve) -> None:
    # FastAPI reads a JSON body before the route (and its own deadline) starts.
    async with serve(1.0, idle_s=PATIENT_IDLE_S) as port:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(
            (
                f"POST /v1/audio/speech HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
                "Content-Type: application/json\r\nContent-Length: 100000\r\n\r\n"
            ).encode()
        )

        async def trickle() -> None:
            while True:  # a byte well within the idle time: only the deadline ends it
                writer.write(b" ")
                await asyncio.sleep(0.1)

        dripping = asyncio.create_task(trickle())
        try:
            async with asyncio.timeout(TIMEOUT_S):
                reply = await reader.read()  # to EOF: the connection is closed
        finally:
            dripping.cancel()
            writer.close()
    status, headers, body = parse(reply)
    assert status == 408 and headers["connection"] == "close"
    assert body["error"]["code"] == "body-timeout"
    assert "within 1 s" in body["error"]["message"]


def multipart_head(path: str, port: int) -> bytes:
    """A multipart upload's head, its body announced longer than what is then sent."""
    return (
        f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
        "Content-Type: multipart/form-data; boundary=xx\r\nContent-Length: 500\r\n\r\n"
    ).encode()


@pytest.mark.parametrize(
    ("path", "field"),
    [("/api/sts", ""), ("/api/asr", "audio_file"), ("/api/voices", "files")],
)
async def test_every_route_that_reads_a_body_ends_a_stalled_one(
    serve: Serve, path: str, field: str
) -> None:
    async with serve() as port:
        if field:  # a multipart file, as curl -F sends it
            part = f'--xx\r\nContent-Disposition: form-data; name="{field}"; filename="a"\r\n\r\n'
            reply = await stalled(port, multipart_head(path, port), part.encode() + b"RIFF")
        else:  # a streamed body, as a Willow device sends it
            head = willow_head(port).replace(b"/api/willow", path.encode())
            reply = await stalled(port, head, chunk(b"\x00" * 10))
    status, headers, body = parse(reply)
    assert status == 408 and headers["connection"] == "close"
    assert body["code"] == "body-timeout"


async def test_a_body_that_keeps_arriving_is_not_cut_off(serve: Serve) -> None:
    pcm = utterance().astype("<i2").tobytes()
    # A piece every 0.1 s for 4 s: longer than the idle limit in all, a thirtieth of it
    # between pieces (a stall of the shared loop cannot stretch that to the limit).
    pieces = 40
    step = -(-len(pcm) // pieces)
    async with serve(idle_s=PATIENT_IDLE_S) as port:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(willow_head(port))
        for i in range(0, len(pcm), step):
            await asyncio.sleep(0.1)
            writer.write(chunk(pcm[i : i + step]))
        writer.write(b"0\r\n\r\n")
        async with asyncio.timeout(TIMEOUT_S):
            head = await reader.readuntil(b"\r\n\r\n")
            length = int(parse(head)[1]["content-length"])
            body = json.loads(await reader.readexactly(length))
        writer.close()
    assert head.startswith(b"HTTP/1.1 200 "), head
    assert body["text"] == KITCHEN


async def test_the_request_deadline_still_ends_a_trickling_body(serve: Serve) -> None:
    async with serve(1.0, idle_s=PATIENT_IDLE_S) as port:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(willow_head(port))

        async def trickle() -> None:
            while True:  # silence, never idle long: only the deadline ends it
                writer.write(chunk(b"\x00\x00"))
                await asyncio.sleep(0.1)

        dripping = asyncio.create_task(trickle())
        try:
            async with asyncio.timeout(TIMEOUT_S):
                head = await reader.readuntil(b"\r\n\r\n")
        finally:
            dripping.cancel()
            writer.close()
    assert head.startswith(b"HTTP/1.1 504 "), head
