"""The Realtime API's WebRTC transport over fake engines, a fake channel and a fake track.

The microphone is a track of 48 kHz stereo frames (as aiortc's Opus decoder gives
them); events go out on a fake ``oai-events`` channel; the reply track is a real
:class:`ReplyTrack` that nothing pulls, which records what it was handed.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import av
import numpy as np
import pytest
from aiortc import RTCSessionDescription
from aiortc.mediastreams import MediaStreamError
from fastapi.testclient import TestClient

from daemon.audio.pcm import resample_pcm
from daemon.errors import HearthError
from protocols.http.app import create_app
from protocols.realtime.calls import MAX_INBOX, ChannelSocket, RealtimeCall, check_session, mono
from protocols.webrtc.tracks import ReplyTrack
from tests.fakes import (
    KITCHEN,
    FakeLlm,
    FakeService,
    fake_config,
    fake_engines,
    silence,
    tone,
    utterance,
)
from tests.unit.protocols.realtime.conftest import OPENAI_ASR, OPENAI_VOICES, TIMEOUT_S, kinds

MIC_RATE = 48000
LONG_REPLY = [
    "The kitchen lights are on now. ",
    "I also closed the blinds in the living room. ",
    "Tomorrow will be sunny with a light breeze. ",
    "Your next meeting starts at ten in the morning. ",
    "Remember to water the plants on the balcony. ",
    "Dinner reservations are confirmed for seven. ",
]
"""Over a second of the fake TTS's speech, no phrase repeated: still playing when cut."""


class FakeChannel:
    """The client's data channel, as the server's end sees it."""

    def __init__(self, label: str = "oai-events", state: str = "open") -> None:
        self.label = label
        self.readyState = state
        self.handlers: dict[str, list[Callable[..., None]]] = {}
        self.received: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        self.sent: list[dict[str, Any]] = []

    def on(self, name: str, handler: Callable[..., None]) -> None:
        self.handlers.setdefault(name, []).append(handler)

    def emit(self, name: str, *args: Any) -> None:
        for handler in self.handlers.get(name, []):
            handler(*args)

    def open(self) -> None:
        self.readyState = "open"
        self.emit("open")

    def send(self, text: str) -> None:
        message = json.loads(text)
        self.sent.append(message)
        self.received.put_nowait(message)

    def client_event(self, kind: str, **fields: Any) -> None:
        self.emit("message", json.dumps({"type": kind, **fields}))

    async def until(self, kind: str, **fields: Any) -> list[dict[str, Any]]:
        got = []
        async with asyncio.timeout(TIMEOUT_S):
            while True:
                message = await self.received.get()
                got.append(message)
                if message["type"] == "error":
                    raise AssertionError(message)
                if message["type"] == kind and all(message.get(k) == v for k, v in fields.items()):
                    return got


class FakeMic:
    """The client's microphone: 48 kHz stereo frames of what it is told to say."""

    kind = "audio"

    def __init__(self) -> None:
        self.frames: asyncio.Queue[av.AudioFrame | None] = asyncio.Queue()
        self.pts = 0

    def say(self, samples: np.ndarray, rate: int) -> None:
        pcm = resample_pcm(samples.astype("<i2").tobytes(), rate, MIC_RATE)
        stereo = np.repeat(np.frombuffer(pcm, dtype="<i2"), 2)
        step = 960 * 2
        for offset in range(0, len(stereo) - step + 1, step):
            frame = av.AudioFrame(format="s16", layout="stereo", samples=960)
            frame.planes[0].update(stereo[offset : offset + step].tobytes())
            frame.sample_rate = MIC_RATE
            frame.pts = self.pts
            self.pts += 960
            self.frames.put_nowait(frame)

    async def recv(self) -> av.AudioFrame:
        frame = await self.frames.get()
        if frame is None:
            raise MediaStreamError
        return frame


class FakePc:
    """The peer connection: no transceivers, and a record of being closed."""

    def __init__(self) -> None:
        self.closed = False

    def getTransceivers(self) -> list[Any]:
        return []

    async def close(self) -> None:
        self.closed = True


class RecordingTrack(ReplyTrack):
    """A reply track that keeps what it was handed and counts the cuts."""

    def __init__(self) -> None:
        super().__init__()
        self.pcm = bytearray()
        self.clears = 0

    def play(self, pcm: bytes, rate: int) -> None:
        self.pcm += resample_pcm(pcm, rate, MIC_RATE)
        super().play(pcm, rate)

    def clear(self) -> None:
        self.clears += 1
        super().clear()


async def open_call(tmp_path: Path, llm: FakeLlm | None = None, **options: Any) -> Any:
    fakes = fake_engines(fake_config(tmp_path), llm=llm)
    pc = FakePc()
    call = RealtimeCall(
        "call1",
        pc,  # type: ignore[arg-type]
        fakes.services,
        model="gpt-realtime",
        voice_aliases=OPENAI_VOICES,
        asr_aliases=OPENAI_ASR,
        **options,
    )
    track = RecordingTrack()
    call.reply_track = call.session.track = track
    channel, mic = FakeChannel(), FakeMic()
    call.attach_channel(channel)
    call.attach_track(mic)  # type: ignore[arg-type]
    return call, channel, mic, fakes, pc, track


@pytest.fixture
async def opened(tmp_path: Path) -> Any:
    parts = await open_call(tmp_path)
    yield parts
    call, _, _, fakes, _, _ = parts
    await call.close()
    fakes.close()


async def test_microphone_audio_is_heard_and_the_reply_plays_on_the_track(opened: Any):
    call, channel, mic, fakes, _, track = opened
    created = (await channel.until("session.created"))[-1]
    assert created["session"]["audio"]["input"]["turn_detection"]["type"] == "server_vad"
    mic.say(utterance(220.0, rate=16000), 16000)
    got = await channel.until("output_audio_buffer.stopped")
    completed = next(m for m in got if m["type"].endswith("transcription.completed"))
    assert completed["transcript"] == KITCHEN
    order = kinds(got)
    assert "response.output_audio.delta" not in order  # the audio went to the track
    started = next(m for m in got if m["type"] == "output_audio_buffer.started")
    done = next(m for m in got if m["type"] == "response.done")
    assert done["response"]["status"] == "completed"
    assert started["response_id"] == done["response"]["id"] == got[-1]["response_id"]
    assert order.index("output_audio_buffer.started") < order.index("response.done")
    assert len(track.pcm) > 0.1 * MIC_RATE * 2  # over 100 ms of the fake TTS's speech
    assert done["response"]["output"][0]["content"][0]["transcript"] == fakes.llm.reply


async def test_barge_in_clears_the_track_once(tmp_path: Path):
    call, channel, mic, fakes, _, track = await open_call(tmp_path, llm=FakeLlm(LONG_REPLY))
    try:
        await channel.until("session.created")
        mic.say(utterance(220.0, rate=16000), 16000)
        started = (await channel.until("output_audio_buffer.started"))[-1]
        await asyncio.sleep(0.6)
        assert call.session.playback.playing and call.busy
        mic.say(np.concatenate([tone(0.4, 440.0, 16000), silence(0.5, 16000)]), 16000)
        got = await channel.until("output_audio_buffer.cleared")
        done = next(m for m in got if m["type"] == "response.done")
        assert done["response"]["id"] == got[-1]["response_id"] == started["response_id"]
        assert done["response"]["status"] == "cancelled"
        assert track.clears >= 1
        await asyncio.sleep(0.3)
        cleared = [m for m in channel.sent if m["type"] == "output_audio_buffer.cleared"]
        assert len(cleared) == 1
        assert "output_audio_buffer.stopped" not in kinds(channel.sent)
    finally:
        await call.close()
        fakes.close()


async def test_output_audio_buffer_clear_cuts_the_reply(tmp_path: Path):
    call, channel, mic, fakes, _, track = await open_call(tmp_path, llm=FakeLlm(LONG_REPLY))
    try:
        await channel.until("session.created")
        mic.say(utterance(220.0, rate=16000), 16000)
        started = (await channel.until("output_audio_buffer.started"))[-1]
        channel.client_event("output_audio_buffer.clear")
        got = await channel.until("output_audio_buffer.cleared")
        assert got[-1]["response_id"] == started["response_id"]
        assert not track.playing
        await asyncio.sleep(0.3)
        cleared = [m for m in channel.sent if m["type"] == "output_audio_buffer.cleared"]
        assert len(cleared) == 1
    finally:
        await call.close()
        fakes.close()


async def test_the_offers_session_is_applied_first(tmp_path: Path):
    session = {"type": "realtime", "instructions": "Be brief."}
    call, channel, _, fakes, _, _ = await open_call(tmp_path, session=session)
    try:
        await channel.until("session.created")
        updated = (await channel.until("session.updated"))[-1]
        assert updated["session"]["instructions"] == "Be brief."
    finally:
        await call.close()
        fakes.close()


async def test_the_call_ends_with_its_channel_and_closes_once(opened: Any):
    call, channel, mic, _, pc, _ = opened
    await channel.until("session.created")
    channel.readyState = "closed"
    channel.emit("close")
    async with asyncio.timeout(TIMEOUT_S):
        while not pc.closed:
            await asyncio.sleep(0.01)
    await call.close()
    await call.close()
    mic.frames.put_nowait(None)


async def test_the_socket_waits_for_its_channel_and_ignores_others():
    socket = ChannelSocket()
    assert not socket.attach(FakeChannel("chat"))
    channel = FakeChannel(state="connecting")
    assert socket.attach(channel)
    assert not socket.attach(FakeChannel())
    sending = asyncio.ensure_future(socket.send('{"type": "x"}'))
    await asyncio.sleep(0.05)
    assert not sending.done()
    channel.open()
    async with asyncio.timeout(TIMEOUT_S):
        await sending
    assert channel.sent == [{"type": "x"}]
    channel.emit("message", "hello")
    assert await socket.receive() == "hello"
    channel.emit("close")
    assert await socket.receive() is None
    with pytest.raises(ConnectionError):
        await socket.send("{}")


async def test_a_flooding_client_is_hung_up_on():
    touched: list[int] = []
    socket = ChannelSocket(lambda: touched.append(1))
    channel = FakeChannel()
    socket.attach(channel)
    for _ in range(MAX_INBOX + 1):
        channel.emit("message", "{}")
    assert socket.ended and len(touched) == MAX_INBOX + 1
    for _ in range(MAX_INBOX):
        assert await socket.receive() == "{}"
    assert await socket.receive() is None


def test_stereo_is_downmixed():
    stereo = np.array([100, 300, -100, -300], dtype="<i2").tobytes()
    assert np.frombuffer(mono(stereo, 2), dtype="<i2").tolist() == [200, -200]
    assert mono(b"\x01\x00", 1) == b"\x01\x00"


def test_the_offers_session_is_checked():
    assert check_session(None) is None
    assert check_session({"instructions": "Hi"}) == {"instructions": "Hi"}
    with pytest.raises(HearthError):
        check_session(["not", "an", "object"])
    with pytest.raises(HearthError):
        check_session({"audio": {"input": {"turn_detection": {"type": "bogus"}}}})


# --------------------------------------------------------------------------- the route

KEY = "s3cret"
AUTH = {"Authorization": f"Bearer {KEY}"}


class FakeManager:
    """The WebRTC manager: records each offer, answers with a fixed SDP."""

    def __init__(self) -> None:
        self.offers: list[tuple[str, str, Any]] = []

    async def answer(self, sdp: str, kind: str, make: Any) -> tuple[str, Any]:
        self.offers.append((sdp, kind, make))
        return "abc123", RTCSessionDescription(sdp="v=0\r\nanswer\r\n", type="answer")


@pytest.fixture
def http(tmp_path: Path) -> Any:
    fakes = fake_engines(fake_config(tmp_path, f"auth:\n  api_key: {KEY}\n"))
    manager = FakeManager()
    app = create_app(FakeService(fakes.engines.config, fakes.engines), rtc=manager)  # type: ignore[arg-type]
    yield TestClient(app), manager
    fakes.close()


def test_an_sdp_offer_gets_an_sdp_answer_and_the_calls_place(http: Any):
    client, manager = http
    headers = AUTH | {"Content-Type": "application/sdp"}
    resp = client.post("/v1/realtime/calls?model=gpt-realtime", content="v=0\r\n", headers=headers)
    assert resp.status_code == 201, resp.text
    assert resp.headers["content-type"].startswith("application/sdp")
    assert resp.headers["location"] == "/v1/realtime/calls/abc123"
    assert resp.text == "v=0\r\nanswer\r\n"
    [(sdp, kind, make)] = manager.offers
    assert (sdp, kind) == ("v=0\r\n", "offer")
    assert make.func is RealtimeCall and make.keywords["model"] == "gpt-realtime"
    assert make.keywords["session"] is None


def test_a_form_offer_carries_the_session(http: Any):
    client, manager = http
    session = {"type": "realtime", "model": "gpt-realtime", "instructions": "Be brief."}
    form = {"sdp": "v=0\r\n", "session": json.dumps(session)}
    resp = client.post(
        "/v1/realtime/calls", files={k: (None, v) for k, v in form.items()}, headers=AUTH
    )
    assert resp.status_code == 201, resp.text
    make = manager.offers[0][2]
    assert make.keywords["session"] == session and make.keywords["model"] == "gpt-realtime"


@pytest.mark.parametrize(
    ("headers", "body", "status"),
    [
        ({"Content-Type": "application/sdp"}, {"content": "v=0"}, 401),
        (AUTH | {"Content-Type": "application/json"}, {"content": "{}"}, 400),
        (AUTH, {"files": {"session": (None, "{}")}}, 400),
        (AUTH, {"files": {"sdp": (None, "v=0"), "session": (None, "{")}}, 400),
        (AUTH, {"files": {"sdp": (None, "v=0"), "session": (None, '{"voice": 3}')}}, 400),
    ],
)
def test_unusable_offers_are_refused(http: Any, headers: dict[str, str], body: Any, status: int):
    client, manager = http
    resp = client.post("/v1/realtime/calls", headers=headers, **body)
    assert resp.status_code == status, resp.text
    assert not manager.offers


async def test_output_audio_buffer_clear_cuts_a_reply_still_playing_out(tmp_path: Path):
    call, channel, mic, fakes, _, track = await open_call(tmp_path, llm=FakeLlm(LONG_REPLY))
    try:
        await channel.until("session.created")
        mic.say(utterance(220.0, rate=16000), 16000)
        started = (await channel.until("output_audio_buffer.started"))[-1]
        async with asyncio.timeout(TIMEOUT_S):
            while call.session.book.draining is None:  # all written; the audio plays on
                await asyncio.sleep(0.01)
        channel.client_event("output_audio_buffer.clear")
        got = await channel.until("output_audio_buffer.cleared")
        done = next(m for m in got if m["type"] == "response.done")
        assert done["response"]["id"] == started["response_id"]
        assert done["response"]["status_details"]["reason"] == "client_cancelled"
        assert not track.playing and not call.session.playback.playing
    finally:
        await call.close()
        fakes.close()


async def test_output_audio_buffer_clear_without_a_reply_is_quiet(opened: Any):
    call, channel, *_ = opened
    await channel.until("session.created")
    channel.client_event("output_audio_buffer.clear")
    channel.client_event("session.update", session={})
    got = await channel.until("session.updated")
    assert kinds(got) == ["session.updated"]
