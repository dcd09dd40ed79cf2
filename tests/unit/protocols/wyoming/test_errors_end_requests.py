"""Every Wyoming error ends what Home Assistant waits for: the error, then EOF.

Home Assistant's clients ignore ``error`` events. Its STT client sends ``transcribe``,
``audio-start``, 10 ms chunks and ``audio-stop``, then reads until ``transcript``;
its TTS client reads until ``audio-stop``; its conversation agent until ``handled``
or ``not-handled``. Each stops early only when the connection closes. The client
here does exactly that, under a deadline: a server that sends the error and keeps
the connection open fails by the deadline instead of hanging the test.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import numpy as np
import pytest
from wyoming.asr import Transcribe, Transcript, TranscriptStart
from wyoming.audio import AudioChunk, AudioStart, AudioStop
from wyoming.error import Error
from wyoming.event import Event, async_read_event, async_write_event
from wyoming.handle import Handled, NotHandled
from wyoming.tts import Synthesize, SynthesizeVoice

from daemon.engines.tts.base import SynthesisOptions
from daemon.engines.tts.voices import VoiceInfo
from daemon.runtime.context import Core
from tests.fakes import FakeTts, tone, utterance
from tests.unit.protocols.wyoming.test_handler import (
    HA_CHUNK,
    Daemon,
    start_daemon,
    stop_daemon,
)

DEADLINE_S = 5.0
"""Longer than any answer takes, far shorter than Home Assistant's own timeouts."""
ENDS = (Transcript, AudioStop, Handled, NotHandled)
"""The events after which Home Assistant's clients stop reading."""


@pytest.fixture
async def daemon(tmp_path: Path) -> AsyncIterator[Daemon]:
    running = await start_daemon(tmp_path)
    yield running
    await stop_daemon(running)


def stt_request(audio: np.ndarray, **transcribe: str) -> list[Event]:
    """What Home Assistant's STT entity sends: transcribe, audio-start, 320-byte chunks, stop."""
    pcm = audio.astype("<i2").tobytes()
    events = [Transcribe(**transcribe).event(), AudioStart(rate=16000, width=2, channels=1).event()]
    events += [
        AudioChunk(rate=16000, width=2, channels=1, audio=pcm[i : i + HA_CHUNK]).event()
        for i in range(0, len(pcm), HA_CHUNK)
    ]
    return [*events, AudioStop().event()]


async def home_assistant(daemon: Daemon, request: list[Event], raw: bytes = b"") -> list[Event]:
    """Send a request as Home Assistant does, then read until it would stop reading.

    Returns the events read; the list ends with None when the connection closed.
    """
    events: list[Event | None] = []
    async with asyncio.timeout(DEADLINE_S):
        reader, writer = await asyncio.open_connection("127.0.0.1", daemon.server.port)
        try:
            try:
                if raw:
                    writer.write(raw)
                for event in request:
                    await async_write_event(event, writer)
            except ConnectionError:
                pass  # the server closed first: Home Assistant reads what arrived
            while True:
                try:
                    event = await async_read_event(reader)
                except ConnectionError:
                    event = None
                events.append(event)
                if event is None or any(kind.is_type(event.type) for kind in ENDS):
                    break
        finally:
            writer.close()
    return events  # type: ignore[return-value]


def assert_error_then_eof(events: list[Event | None], code: str) -> None:
    assert events[-1] is None, f"the client still waits after {[e.type for e in events if e]}"
    errors = [Error.from_event(e) for e in events if e is not None and Error.is_type(e.type)]
    assert [e.code for e in errors] == [code]


class SlowTts(FakeTts):
    """Speaks after ``delay_s`` (a worker thread busy past the request deadline)."""

    delay_s = 1.0

    def synthesize(
        self, voice: VoiceInfo, sentence: str, options: SynthesisOptions
    ) -> Iterator[bytes]:
        time.sleep(self.delay_s)
        yield from super().synthesize(voice, sentence, options)


class BrokenTts(FakeTts):
    """Fails as a bug would."""

    def synthesize(
        self, voice: VoiceInfo, sentence: str, options: SynthesisOptions
    ) -> Iterator[bytes]:
        raise RuntimeError("a bug")


@pytest.mark.parametrize(
    ("request_events", "code"),
    [
        (stt_request(utterance(220.0), name="large-v9"), "unknown-model"),
        (stt_request(utterance(220.0), language="de"), "unsupported-language"),
        (stt_request(tone(5.0)), "audio-too-long"),  # limits.max_audio_s is 4
        (
            [Transcribe().event(), AudioStart(rate=16000, width=3, channels=1).event()],
            "invalid-audio",
        ),
        ([AudioStop().event()], "invalid-audio"),
        (
            [Synthesize(text="Hi.", voice=SynthesizeVoice(name="xx_XX-nobody")).event()],
            "unknown-voice",
        ),
        ([Synthesize(text="word " * 100).event()], "text-too-long"),
        ([Synthesize(text="   ").event()], "invalid-text"),
        ([Transcript(text="  ").event()], "invalid-text"),
    ],
)
async def test_each_error_reaches_home_assistant_with_eof(daemon, request_events, code):
    assert_error_then_eof(await home_assistant(daemon, request_events), code)


async def test_a_broken_frame_is_an_error_then_eof(daemon):
    events = await home_assistant(daemon, [], raw=b"this is not json\n")
    assert_error_then_eof(events, "invalid-event")


async def test_a_request_past_its_deadline_is_a_timeout_then_eof(daemon):
    engines = daemon.fakes.engines
    assert engines.tts is not None
    engines.tts.engine = SlowTts()
    limits = dataclasses.replace(engines.config.limits, request_timeout_s=0.2)
    # A live reload of the limits: a new core over the same engines.
    daemon.fakes.core = Core(engines, dataclasses.replace(engines.config, limits=limits))
    events = await home_assistant(daemon, [Synthesize(text="Dinner is ready.").event()])
    assert_error_then_eof(events, "timeout")


async def test_a_failure_in_the_daemon_is_an_internal_error_then_eof(daemon):
    engines = daemon.fakes.engines
    assert engines.tts is not None
    engines.tts.engine = BrokenTts()
    events = await home_assistant(daemon, [Synthesize(text="Dinner is ready.").event()])
    assert_error_then_eof(events, "internal-error")


async def test_a_connection_over_the_cap_is_busy_then_eof(tmp_path):
    daemon = await start_daemon(tmp_path, max_connections=1)
    first = await daemon.connect()
    try:
        # The one slot is in the middle of a request (an idle one would make room).
        await first.send(Transcribe(), AudioStart(rate=16000, width=2, channels=1))
        await first.expect(TranscriptStart)
        events = await home_assistant(daemon, [Synthesize(text="Dinner is ready.").event()])
        assert_error_then_eof(events, "busy")
    finally:
        await first.close()
        await stop_daemon(daemon)


async def test_after_an_error_the_next_request_works(daemon):
    assert_error_then_eof(await home_assistant(daemon, stt_request(tone(5.0))), "audio-too-long")
    events = await home_assistant(daemon, stt_request(utterance(220.0)))
    assert events[-1] is not None and Transcript.is_type(events[-1].type)
