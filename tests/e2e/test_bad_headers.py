"""A file whose header names no usable rate or channel count, on every path that takes
audio: a 400 (or the protocol's error) that names the problem, and the daemon serves on.

One real ``hearth serve``; each bad header goes to each door (Willow streamed and
uploaded, speech to speech, OpenAI transcriptions, speaker enrollment, a voice's
enrollment take, WIS's speaker recording, and Wyoming's ``audio-start``).
"""

from __future__ import annotations

import asyncio
import struct
from collections.abc import Callable, Iterator

import httpx
import numpy as np
import pytest
from wyoming.asr import Transcribe
from wyoming.audio import AudioChunk, AudioStart, AudioStop
from wyoming.client import AsyncTcpClient

from tests.daemon import Daemon
from tests.helpers import PCM_HEADERS

pytestmark = pytest.mark.e2e

WAV_HEADERS = {"x-audio-codec": "wav", "user-agent": "Willow/0.1"}


def wav(rate: int = 16000, channels: int = 1, bits: int = 16) -> bytes:
    data = np.zeros(8000, dtype="<i2").tobytes()
    block = (channels * bits // 8) & 0xFFFF
    fmt = struct.pack("<HHIIHH", 1, channels, rate, (rate * block) & 0xFFFFFFFF, block, bits)
    return (
        b"RIFF" + struct.pack("<I", 36 + len(data)) + b"WAVE"
        + b"fmt " + struct.pack("<I", 16) + fmt
        + b"data" + struct.pack("<I", len(data)) + data
    )  # fmt: skip


BAD = {
    "0 Hz": (wav(rate=0), "sample rate 0 Hz"),
    "absurd rate": (wav(rate=4_000_000_000), "sample rate 4000000000 Hz"),
    "0 channels": (wav(channels=0), "channel count 0"),
    "absurd channels": (wav(channels=60000), "channel count 60000"),
}

Send = Callable[[Daemon, bytes], httpx.Response]


PATHS: dict[str, Send] = {
    "willow streamed": lambda d, b: httpx.post(
        f"{d.url}/api/willow", content=b, headers=WAV_HEADERS, timeout=60
    ),
    "willow upload": lambda d, b: httpx.post(
        f"{d.url}/api/asr", files={"audio_file": ("a.wav", b, "audio/wav")}, timeout=60
    ),
    "speech to speech": lambda d, b: httpx.post(
        f"{d.url}/api/sts", content=b, headers=WAV_HEADERS, timeout=60
    ),
    "openai transcriptions": lambda d, b: httpx.post(
        f"{d.url}/v1/audio/transcriptions",
        files={"file": ("a.wav", b, "audio/wav")},
        data={"model": "whisper-1"},
        timeout=60,
    ),
    "speaker enrollment": lambda d, b: httpx.post(
        f"{d.url}/api/speakers/ada",
        files=[("files", (f"{i}.wav", b, "audio/wav")) for i in range(3)],
        timeout=60,
    ),
    "voice enrollment take": lambda d, b: httpx.put(
        f"{d.url}/api/voices/kitchen/enrollment/takes/0", content=b, timeout=60
    ),
    "wis speaker recording": lambda d, b: httpx.post(
        f"{d.url}/api/speaker?speaker=ada", content=b, timeout=60
    ),
}


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    work = tmp_path_factory.mktemp("bad-headers")
    extra = "speakers:\n  enabled: true\nwake:\n  enabled: false\n"
    yield from Daemon(work, extra).serve()


@pytest.mark.parametrize("path", list(PATHS))
@pytest.mark.parametrize("header", list(BAD))
def test_a_bad_header_is_a_400_that_names_it(daemon, path, header):
    body, problem = BAD[header]
    answer = PATHS[path](daemon, body)
    assert answer.status_code == 400, (answer.status_code, answer.text)
    assert problem in answer.text, answer.text


@pytest.mark.parametrize(
    ("name", "value", "problem"),
    [
        ("x-audio-sample-rate", "0", "sample rate"),
        ("x-audio-sample-rate", "99999999", "sample rate"),
        ("x-audio-channel", "0", "channel"),
        ("x-audio-bits", "0", "x-audio-bits"),
    ],
)
def test_willow_pcm_headers_out_of_range_are_a_400(daemon, name, value, problem):
    headers = {**PCM_HEADERS, name: value}
    answer = httpx.post(
        f"{daemon.url}/api/willow", content=b"\0" * 3200, headers=headers, timeout=60
    )
    assert answer.status_code == 400, (answer.status_code, answer.text)
    assert problem in answer.text.lower(), answer.text


@pytest.mark.parametrize(("rate", "width", "channels"), [(0, 2, 1), (16000, 0, 1), (16000, 2, 0)])
async def test_wyoming_audio_start_out_of_range_is_an_error_event(daemon, rate, width, channels):
    async with AsyncTcpClient("127.0.0.1", daemon.wyoming_port) as client:
        await client.write_event(Transcribe(language="en").event())
        await client.write_event(AudioStart(rate=rate, width=width, channels=channels).event())
        await client.write_event(
            AudioChunk(rate=rate, width=width, channels=channels, audio=b"\0" * 640).event()
        )
        await client.write_event(AudioStop().event())
        event = await asyncio.wait_for(client.read_event(), 60)
    assert event is not None and event.type == "error", event
    assert event.data["code"] == "invalid-audio", event.data


def test_the_daemon_serves_on_after_every_bad_header(daemon):
    assert httpx.get(f"{daemon.url}/api/ping", timeout=10).status_code == 200
    ok = httpx.post(
        f"{daemon.url}/api/asr", files={"audio_file": ("a.wav", wav(), "audio/wav")}, timeout=60
    )
    assert ok.status_code == 200, ok.text


@pytest.mark.parametrize("rate", [0, 4_000_000_000, 8000])
async def test_a_realtime_audio_format_out_of_range_is_an_error_event(daemon, rate):
    import openai

    client = openai.AsyncOpenAI(base_url=f"{daemon.url}/v1", api_key="unused", max_retries=0)
    async with client.realtime.connect(model="gpt-realtime") as conn:
        seen = []
        while not seen or seen[-1].type != "session.created":
            seen.append(await asyncio.wait_for(conn.recv(), 60))
        audio = {"input": {"format": {"type": "audio/pcm", "rate": rate}}}
        await conn.session.update(session={"type": "realtime", "audio": audio})
        event = await asyncio.wait_for(conn.recv(), 60)
    assert event.type == "error", event
    assert f"not {rate}" in event.error.message, event.error
