"""The WebRTC session over fake engines, without a network.

A fake peer connection, a fake data channel that records what the session sends,
and a microphone track that yields what a browser's Opus decoder gives: 20 ms
``av.AudioFrame``s of 48 kHz s16 mono. Commands are the JSON messages the web
client sends (integrations/web/hearth-client.js).
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import av
import numpy as np
import pytest
from aiortc.mediastreams import MediaStreamError, MediaStreamTrack

from daemon.speech.conversation import SAY_BURST
from protocols.webrtc.session import RtcSession
from tests.fakes import (
    KITCHEN,
    TIME,
    FakeEngines,
    fake_config,
    fake_engines,
    silence,
    tone,
    utterance,
)

TIMEOUT_S = 10.0
MIC_RATE = 48000
FRAME = 960
"""Samples per browser audio frame: 20 ms at 48 kHz."""


class FakeChannel:
    """A data channel: the session registers its handler and sends JSON text."""

    readyState = "open"

    def __init__(self) -> None:
        self.handlers: dict[str, Callable[..., Any]] = {}
        self.sent: list[dict[str, Any]] = []
        self.inbox: asyncio.Queue[dict[str, Any]] = asyncio.Queue()

    def on(self, event: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
        def register(handler: Callable[..., Any]) -> Callable[..., Any]:
            self.handlers[event] = handler
            return handler

        return register

    def send(self, text: str) -> None:
        message = json.loads(text)
        self.sent.append(message)
        self.inbox.put_nowait(message)

    def deliver(self, message: dict[str, Any] | str | bytes) -> None:
        """A message from the browser."""
        raw = json.dumps(message) if isinstance(message, dict) else message
        self.handlers["message"](raw)


class FakePeerConnection:
    def __init__(self) -> None:
        self.closed = False

    def getTransceivers(self) -> list[Any]:  # noqa: N802 - aiortc's name
        return []

    async def close(self) -> None:
        self.closed = True


class FakeMicrophone(MediaStreamTrack):
    """Yields queued frames; knows when the session has taken (and handled) them all."""

    kind = "audio"

    def __init__(self) -> None:
        super().__init__()
        self.frames: asyncio.Queue[av.AudioFrame | None] = asyncio.Queue()
        self.waiting = asyncio.Event()
        self.pts = 0

    async def recv(self) -> av.AudioFrame:
        if self.frames.empty():
            self.waiting.set()  # the previous frame was handled: the session asks again
        frame = await self.frames.get()
        if frame is None:
            raise MediaStreamError
        return frame

    def speak(self, samples: np.ndarray) -> None:
        """Queue 48 kHz int16 samples as 20 ms s16 mono frames (the tail is padded)."""
        self.waiting.clear()
        pad = -len(samples) % FRAME
        samples = np.concatenate([samples, np.zeros(pad, np.int16)]).astype("<i2")
        for offset in range(0, len(samples), FRAME):
            frame = av.AudioFrame(format="s16", layout="mono", samples=FRAME)
            frame.planes[0].update(samples[offset : offset + FRAME].tobytes())
            frame.sample_rate = MIC_RATE
            frame.pts = self.pts
            self.pts += FRAME
            self.frames.put_nowait(frame)

    async def drained(self) -> None:
        """Wait until every queued frame went through the session."""
        async with asyncio.timeout(TIMEOUT_S):
            while True:
                await self.waiting.wait()
                if self.frames.empty():
                    return
                self.waiting.clear()


@dataclass
class Rtc:
    session: RtcSession
    channel: FakeChannel
    mic: FakeMicrophone
    pc: FakePeerConnection
    fakes: FakeEngines
    phases: list[str] = field(default_factory=list)
    """The conversation's phase messages, in order (kept apart from the others)."""

    def send(self, kind: str, obj: dict[str, Any] | None = None, **extra: Any) -> None:
        message: dict[str, Any] = {"type": kind, **extra}
        if obj is not None:
            message["obj"] = obj
        self.channel.deliver(message)

    async def next(self) -> dict[str, Any]:
        async with asyncio.timeout(TIMEOUT_S):
            while True:
                message = await self.channel.inbox.get()
                if message["type"] != "phase":
                    return message
                self.phases.append(message["obj"]["phase"])

    async def until(self, kind: str, **obj: Any) -> list[dict[str, Any]]:
        """Messages up to and including the first of ``kind`` whose obj has ``obj``."""
        seen = []
        while True:
            message = await self.next()
            seen.append(message)
            body = message.get("obj") or {}
            if message["type"] == kind and all(body.get(k) == v for k, v in obj.items()):
                return seen

    def unread(self) -> list[dict[str, Any]]:
        out = []
        while not self.channel.inbox.empty():
            message = self.channel.inbox.get_nowait()
            if message["type"] == "phase":
                self.phases.append(message["obj"]["phase"])
            else:
                out.append(message)
        return out

    async def error(self) -> dict[str, Any]:
        message = await self.next()
        assert message["type"] == "error", message
        return message


@pytest.fixture
async def rtc(tmp_path: Path) -> AsyncIterator[Rtc]:
    fakes = fake_engines(fake_config(tmp_path))
    pc, channel, mic = FakePeerConnection(), FakeChannel(), FakeMicrophone()
    session = RtcSession("rtc-test", pc, fakes.services)  # type: ignore[arg-type]
    session.attach_channel(channel)
    session.attach_track(mic)
    yield Rtc(session, channel, mic, pc, fakes)
    async with asyncio.timeout(TIMEOUT_S):
        await session.close()
    fakes.close()


def at_48k(samples_16k_seconds: float, freq: float = 220.0) -> np.ndarray:
    return tone(samples_16k_seconds, freq, MIC_RATE)


def kinds(messages: list[dict[str, Any]]) -> list[str]:
    return [m["type"] for m in messages]


async def pull_reply_audio(session: RtcSession) -> list[Any]:
    """Every reply packet queued now (the first waits for audio to arrive)."""
    packets = []
    async with asyncio.timeout(TIMEOUT_S):
        packets.append(await session.reply_track.recv())
        while session.reply_track.playing:
            packets.append(await session.reply_track.recv())
    return packets


# --------------------------------------------------------------------------- control


async def test_ping_answers_pong_with_its_text(rtc):
    rtc.send("ping", message="t=1")
    assert await rtc.next() == {"type": "pong", "message": "t=1"}


async def test_audio_is_ignored_while_nothing_listens(rtc):
    rtc.mic.speak(utterance(220.0, rate=MIC_RATE))
    await rtc.mic.drained()
    assert rtc.fakes.vad.frames == 0 and not rtc.channel.sent


# --------------------------------------------------------------------------- push-to-talk


async def test_push_to_talk_event_by_event(rtc):
    rtc.send("start")
    assert await rtc.next() == {"type": "state", "obj": {"mode": "push-to-talk"}}
    rtc.mic.speak(utterance(220.0, rate=MIC_RATE))
    await rtc.mic.drained()
    rtc.send("stop")
    messages = await rtc.until("infer")

    assert messages[0] == {"type": "vad", "obj": {"speech": True}}
    assert {"type": "vad", "obj": {"speech": False}} in messages
    assert set(kinds(messages)) <= {"vad", "partial", "infer"}
    partials = [m["obj"]["text"] for m in messages if m["type"] == "partial"]
    assert partials and all(KITCHEN.startswith(p) for p in partials)
    assert kinds(messages).index("partial") < messages.index(
        {"type": "vad", "obj": {"speech": False}}
    )

    infer = messages[-1]["obj"]
    assert infer["text"] == KITCHEN and infer["language"] == "en"
    assert 2000 <= infer["audio_ms"] <= 2200  # 2.1 s sent
    assert 1200 <= infer["speech_ms"] <= 1500  # 1.2 s of speech plus padding
    assert rtc.session.mode == "idle"
    assert not rtc.unread()


async def test_willow_client_stop_naming_an_unknown_model_still_transcribes(rtc):
    # willow-ts-client always sends its model in 'stop'; the model was chosen at 'start'.
    rtc.send("start")
    await rtc.until("state")
    rtc.mic.speak(utterance(440.0, rate=MIC_RATE))
    await rtc.mic.drained()
    rtc.send("stop", {"model": "large", "beam_size": 1, "detect_language": False})
    messages = await rtc.until("infer")
    logs = [m for m in messages if m["type"] == "log"]
    assert len(logs) == 1 and "large" in logs[0]["message"]
    assert messages[-1]["obj"]["text"] == TIME


async def test_start_options_reach_the_model(rtc):
    rtc.fakes.asr["other"].languages = ("en", "de")
    rtc.send("start", {"model": "other", "beam_size": 3, "language": "de", "partials": False})
    await rtc.until("state")
    rtc.mic.speak(utterance(220.0, rate=MIC_RATE))
    await rtc.mic.drained()
    rtc.send("stop")
    messages = await rtc.until("infer")
    assert "partial" not in kinds(messages)
    assert messages[-1]["obj"]["language"] == "de"
    calls = rtc.fakes.asr["other"].calls
    assert calls and not rtc.fakes.asr["fake"].calls
    assert {(c.options.beam_size, c.options.language) for c in calls} == {(3, "de")}


async def test_the_next_utterance_is_heard_while_the_last_one_still_decodes(rtc):
    # A busy machine: each decode takes 1 s. The person lets go and, at once, holds the
    # button again and speaks; that audio arrives while the first decode still runs.
    model = rtc.fakes.asr["fake"]
    hear = model.transcribe

    def slow(audio: np.ndarray, options: Any) -> Any:
        time.sleep(1.0)
        return hear(audio, options)

    model.transcribe = slow  # type: ignore[method-assign]
    rtc.send("start", {"partials": False})
    await rtc.until("state")
    rtc.mic.speak(np.concatenate([silence(0.3, MIC_RATE), tone(1.2, 220.0, MIC_RATE)]))
    await rtc.mic.drained()
    rtc.send("stop")
    rtc.send("start", {"partials": False})
    # As a browser sends it: in real time, whether or not anyone listens yet.
    second = utterance(440.0, speech_s=0.8, rate=MIC_RATE)
    piece = MIC_RATE // 10
    for offset in range(0, len(second), piece):
        rtc.mic.speak(second[offset : offset + piece])
        await asyncio.sleep(0.1)
    await rtc.mic.drained()
    rtc.send("stop")
    first = await rtc.until("infer")
    second = await rtc.until("infer")
    assert first[-1]["obj"]["text"] == KITCHEN
    assert second[-1]["obj"]["text"] == TIME


@pytest.mark.parametrize("command", ["start", "listen"])
async def test_a_language_the_model_does_not_speak_is_refused(rtc, command):
    rtc.send(command, {"language": "de"})
    error = await rtc.error()
    assert error["obj"] == {"code": "unsupported-language"}
    assert "'de'" in error["message"] and "en" in error["message"]
    assert rtc.session.mode == "idle" and rtc.session.speech is None


async def test_silence_gives_an_empty_transcript_without_decoding(rtc):
    rtc.send("start")
    await rtc.until("state")
    rtc.mic.speak(np.zeros(MIC_RATE, np.int16))
    await rtc.mic.drained()
    rtc.send("stop")
    [infer] = await rtc.until("infer")
    obj = infer["obj"]
    assert {k: obj[k] for k in ("text", "language", "audio_ms", "speech_ms")} == {
        "text": "",
        "language": "en",
        "audio_ms": 1000,
        "speech_ms": 0,
    }
    assert obj["speculative"] is False and obj["decode_ms"] >= 0
    assert not rtc.fakes.asr["fake"].calls


async def test_push_to_talk_with_a_spoken_reply(rtc):
    llm = rtc.fakes.llm
    rtc.send("start", {"reply": True})
    await rtc.until("state")
    rtc.mic.speak(utterance(220.0, rate=MIC_RATE))
    await rtc.mic.drained()
    rtc.send("stop")
    messages = await rtc.until("reply", done=True)
    infer = [m for m in messages if m["type"] == "infer"]
    assert len(infer) == 1 and infer[0]["obj"]["text"] == KITCHEN
    deltas = [m["obj"]["delta"] for m in messages if m["type"] == "reply" and "delta" in m["obj"]]
    assert deltas == llm.tokens
    assert messages[-1]["obj"] == {"text": llm.reply, "done": True}
    assert kinds(messages).index("infer") < kinds(messages).index("reply")

    packets = await pull_reply_audio(rtc.session)
    assert packets and all(isinstance(p, av.Packet) for p in packets)
    assert [p.pts for p in packets] == [packets[0].pts + i * FRAME for i in range(len(packets))]
    # Spoken whole: a short first phrase, then the rest.
    spoken = [s.sentence for s in rtc.fakes.tts.spoken]
    assert len(spoken) == 2 and " ".join(spoken) == llm.reply
    # The exchange is remembered once, under the session's conversation.
    history = rtc.fakes.engines.chat.conversations.history("rtc-test")
    assert [(m.role, m.content) for m in history] == [("user", KITCHEN), ("assistant", llm.reply)]


# --------------------------------------------------------------------------- hands-free


async def test_hands_free_gives_one_transcript_per_utterance(rtc):
    rtc.send("listen", {"language": "en"})
    assert await rtc.next() == {"type": "state", "obj": {"mode": "hands-free"}}
    rtc.mic.speak(utterance(220.0, rate=MIC_RATE))
    rtc.mic.speak(utterance(440.0, speech_s=0.8, rate=MIC_RATE))
    first = await rtc.until("infer")
    second = await rtc.until("infer")
    assert first[-1]["obj"]["text"] == KITCHEN and second[-1]["obj"]["text"] == TIME
    for utterance_messages in (first, second):
        vad = [m["obj"]["speech"] for m in utterance_messages if m["type"] == "vad"]
        assert vad == [True, False]
    await rtc.mic.drained()
    assert not [m for m in rtc.unread() if m["type"] == "infer"]

    rtc.send("mute")
    assert await rtc.until("state") == [{"type": "state", "obj": {"mode": "idle"}}]
    frames = rtc.fakes.vad.frames
    rtc.mic.speak(utterance(220.0, rate=MIC_RATE))
    await rtc.mic.drained()
    assert rtc.fakes.vad.frames == frames and not rtc.unread()


async def test_hands_free_reply_and_barge_in(rtc):
    rtc.send("listen", {"reply": True})
    await rtc.until("state")
    rtc.mic.speak(utterance(220.0, rate=MIC_RATE))
    messages = await rtc.until("reply", done=True)
    assert messages[-1]["obj"]["text"] == rtc.fakes.llm.reply
    assert [m["obj"]["text"] for m in messages if m["type"] == "infer"] == [KITCHEN]
    async with asyncio.timeout(TIMEOUT_S):
        while not rtc.session.reply_track.playing:  # the reply's audio is queued
            await asyncio.sleep(0.01)

    # The person speaks again while the reply plays: it stops at once.
    rtc.mic.speak(at_48k(0.3))
    messages = await rtc.until("reply", interrupted=True)
    assert messages[-1]["obj"] == {"done": True, "interrupted": True}
    assert not rtc.session.reply_track.playing


async def test_phases_follow_the_conversation(rtc):
    rtc.send("listen", {"reply": True})
    await rtc.until("state")
    rtc.mic.speak(utterance(220.0, rate=MIC_RATE))
    await rtc.until("reply", done=True)
    async with asyncio.timeout(TIMEOUT_S):
        while rtc.phases[-1:] != ["listening"] or len(rtc.phases) < 4:
            rtc.unread()
            await asyncio.sleep(0.01)
    assert rtc.phases == ["listening", "thinking", "speaking", "listening"]
    rtc.send("mute")
    await rtc.until("state", mode="idle")
    async with asyncio.timeout(TIMEOUT_S):
        while rtc.phases[-1] not in ("idle", "speaking"):
            rtc.unread()
            await asyncio.sleep(0.01)


async def test_wake_mode_waits_for_the_word_first(rtc):
    rtc.send("listen", {"wake_word": "nope"})
    error = await rtc.until("error")
    assert error[-1]["obj"]["code"] == "invalid-request"
    assert rtc.session.mode == "idle" and rtc.phases == []


# --------------------------------------------------------------------------- say


async def test_say_plays_on_the_reply_track(rtc):
    text = "Dinner is ready."
    rtc.send("say", {"text": text})
    assert await rtc.until("reply") == [{"type": "reply", "obj": {"text": text, "done": True}}]
    packets = await pull_reply_audio(rtc.session)
    # The fake speaks 5 ms per character: 80 ms, four 20 ms packets.
    assert len(packets) == 4 and all(isinstance(p, av.Packet) for p in packets)
    assert [s.sentence for s in rtc.fakes.tts.spoken] == [text]


async def test_say_is_rate_limited_after_a_burst(rtc):
    for i in range(SAY_BURST + 1):
        rtc.send("say", {"text": f"Message number {i}."})
    messages = await rtc.until("error")
    assert messages[-1]["obj"] == {"code": "busy"}


# --------------------------------------------------------------------------- errors


@pytest.mark.parametrize(
    ("raw", "code"),
    [
        ("not json", "invalid-request"),
        (b"\xff\xfe", "invalid-request"),
        ('["start"]', "invalid-request"),
        ({"type": "dance"}, "invalid-request"),
        ({"type": "start", "obj": {"beam_size": "five"}}, "invalid-request"),
        ({"type": "start", "obj": {"beam_size": 11}}, "invalid-request"),
        ({"type": "start", "obj": {"model": "large-v9"}}, "unknown-model"),
        ({"type": "stop"}, "invalid-request"),
        ({"type": "say", "obj": {"text": "  "}}, "invalid-request"),
        ({"type": "say", "obj": {"text": "Hi.", "voice": "xx_XX-nobody"}}, "unknown-voice"),
        ({"type": "say", "obj": {"text": "word " * 100}}, "text-too-long"),
        ({"type": "listen", "obj": {"reply": True, "voice": "xx_XX-nobody"}}, "unknown-voice"),
    ],
)
async def test_bad_commands_get_an_error_with_a_code(rtc, raw, code):
    rtc.channel.deliver(raw)
    error = await rtc.error()
    assert error["obj"] == {"code": code} and error["message"]
    assert rtc.session.mode == "idle"
    rtc.send("ping")
    assert (await rtc.next())["type"] == "pong"


async def test_close_ends_everything(rtc):
    rtc.send("listen")
    await rtc.until("state")
    async with asyncio.timeout(TIMEOUT_S):
        await rtc.session.close()
        await rtc.session.close()  # safe twice
    assert rtc.pc.closed and rtc.session.speech is None
