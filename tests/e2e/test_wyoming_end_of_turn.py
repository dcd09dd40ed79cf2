"""Hearth ends the turn (wyoming 1.10, Home Assistant 2026), end to end.

A real ``hearth serve`` with the embedded models (Whisper tiny.en, Silero VAD, Smart
Turn v3.2) and ``wyoming.end_of_turn: server``, driven by the ``wyoming`` library's
client the way two Home Assistant releases drive it:

- 2026 (``requires_external_vad: false``): 10 ms chunks (320 bytes) at real time, reading
  while it uploads; the first ``transcript`` ends the request and the upload stops.
- 2024.x: every chunk, then ``audio-stop``, then it reads.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pytest
from wyoming.asr import Transcribe, Transcript
from wyoming.audio import AudioChunk, AudioStart, AudioStop
from wyoming.client import AsyncTcpClient
from wyoming.event import Event
from wyoming.info import Describe, Info
from wyoming.ping import Ping

from daemon.audio.pcm import RATE
from tests.daemon import Daemon
from tests.helpers import assert_heard, noise, silence

pytestmark = pytest.mark.e2e

CHUNK = 320
"""Home Assistant's audio-chunk: 10 ms of 16 kHz s16 mono."""
KITCHEN = "Turn on the kitchen lights."
NO_SPEECH_S = 2.0
MAX_UTTERANCE_S = 4.0
MAX_PAUSE_S = 1.6
"""vad.max_pause_ms, the default."""
PATIENT_PAUSE_S = 1.2
"""vad.max_pause_ms of the daemon whose turn model never calls a turn finished."""


def serve(tmp_path_factory: pytest.TempPathFactory, name: str, vad: str = ""):  # noqa: ANN201
    extra = (
        # No partial decodes: a turn check is skipped when decodes wait (a busy
        # machine), and these tests time the end of each turn.
        "asr:\n  partials: off\n"
        f"vad:\n  no_speech_ms: {int(NO_SPEECH_S * 1000)}\n"
        f"  max_utterance_ms: {int(MAX_UTTERANCE_S * 1000)}\n{vad}"
        "limits:\n  max_audio_s: 30\n  request_timeout_s: 30\n"
    )
    path = tmp_path_factory.mktemp(name)
    yield from Daemon(path, extra, wyoming="  end_of_turn: server\n").serve()


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory):
    yield from serve(tmp_path_factory, "wyoming-turn")


@pytest.fixture(scope="module")
def patient(tmp_path_factory: pytest.TempPathFactory):
    """A daemon whose turn model never calls a turn finished (threshold 1, no words):
    only the longest pause ends a turn."""
    vad = (
        "  turn_threshold: 1.0\n  turn_text: false\n"
        f"  max_pause_ms: {int(PATIENT_PAUSE_S * 1000)}\n"
    )
    yield from serve(tmp_path_factory, "wyoming-patient", vad)


def client(daemon: Daemon) -> AsyncTcpClient:
    return AsyncTcpClient("127.0.0.1", daemon.wyoming_port)


@dataclass
class Answer:
    """What a Home Assistant 2026-style client saw."""

    events: list[Event]
    times: list[float]
    """When each event arrived (s since the first chunk went out)."""
    text: str | None
    """The transcript (None: none came)."""
    at_s: float | None
    """Audio time (s since the first chunk went out) when the transcript arrived."""
    stopped_early: bool
    """The transcript came before the client sent audio-stop."""

    def at(self, kind: str) -> float:
        """When the first event of ``kind`` arrived."""
        kinds = [e.type for e in self.events]
        assert kind in kinds, kinds
        return self.times[kinds.index(kind)]


async def ha_2026(daemon: Daemon, pcm: bytes) -> Answer:
    """Upload at real time while reading; the first transcript ends the request."""
    events: list[Event] = []
    times: list[float] = []
    async with client(daemon) as c:
        await c.write_event(Transcribe(language="en").event())
        await c.write_event(AudioStart(rate=RATE, width=2, channels=1).event())
        began = time.monotonic()

        async def upload() -> None:
            for i in range(0, len(pcm), CHUNK):
                delay = began + i / (RATE * 2) - time.monotonic()
                if delay > 0:
                    await asyncio.sleep(delay)
                chunk = AudioChunk(rate=RATE, width=2, channels=1, audio=pcm[i : i + CHUNK])
                await c.write_event(chunk.event())
            await c.write_event(AudioStop().event())

        async def receive() -> Event | None:
            while (event := await c.read_event()) is not None:
                events.append(event)
                times.append(time.monotonic() - began)
                if Transcript.is_type(event.type) or event.type == "error":
                    return event
            return None

        sending = asyncio.create_task(upload())
        reading = asyncio.create_task(receive())
        try:
            async with asyncio.timeout(len(pcm) / (RATE * 2) + 60):
                done, _ = await asyncio.wait(
                    {sending, reading}, return_when=asyncio.FIRST_COMPLETED
                )
                if reading not in done:
                    sending.result()
                    await reading
        finally:
            stopped_early = not sending.done()
            for task in (sending, reading):
                task.cancel()
            await asyncio.gather(sending, reading, return_exceptions=True)
        final = reading.result() if not reading.cancelled() else None
    text = None
    if final is not None and Transcript.is_type(final.type):
        text = Transcript.from_event(final).text
    at_s = times[-1] if text is not None else None
    return Answer(events, times, text, at_s, stopped_early)


async def test_info_tells_home_assistant_that_hearth_ends_the_turn(daemon):
    async with client(daemon) as c:
        await c.write_event(Describe().event())
        event = await asyncio.wait_for(c.read_event(), 30)
    assert event is not None
    (asr,) = Info.from_event(event).asr
    assert asr.requires_external_vad is False
    assert asr.prefers_auto_gain_enabled is False
    assert asr.prefers_noise_reduction_enabled is False


async def test_a_2026_client_gets_the_transcript_before_it_stops_sending(daemon, kitchen):
    speech_end_s = 0.3 + kitchen.size / RATE
    # Silence to spare after the speech: the client would go on sending it for as long
    # as its own pipeline let it (a decode on a loaded machine takes seconds).
    pcm = np.concatenate([silence(0.3), kitchen, silence(6.0)]).tobytes()
    answer = await ha_2026(daemon, pcm)
    assert answer.text is not None, [e.type for e in answer.events]
    assert answer.stopped_early, "the transcript came only after the client's audio-stop"
    assert_heard(answer.text, KITCHEN, "kitchen")
    # Hearth decided within the longest pause of the end of speech, at the latest (with
    # room for a loaded machine's lag, well short of the 6 s the client sends).
    decided = answer.at("voice-stopped") - speech_end_s
    assert decided < MAX_PAUSE_S + 2.5, decided
    assert "error" not in [e.type for e in answer.events]


async def test_a_2024_client_still_gets_it_after_its_own_audio_stop(daemon, kitchen):
    pcm = np.concatenate([silence(0.3), kitchen, silence(2.5)]).tobytes()
    async with client(daemon) as c:
        await c.write_event(Transcribe(language="en").event())
        await c.write_event(AudioStart(rate=RATE, width=2, channels=1).event())
        for i in range(0, len(pcm), CHUNK):
            chunk = AudioChunk(rate=RATE, width=2, channels=1, audio=pcm[i : i + CHUNK])
            await c.write_event(chunk.event())
        await c.write_event(AudioStop().event())
        # Only now does it read, up to the transcript; then the connection still works.
        events: list[Event] = []
        while True:
            event = await asyncio.wait_for(c.read_event(), 60)
            assert event is not None, [e.type for e in events]
            events.append(event)
            if event.type == "transcript-stop":
                break
        await c.write_event(Ping(text="after").event())
        pong = await asyncio.wait_for(c.read_event(), 30)
    kinds = [e.type for e in events]
    assert kinds.count("transcript") == 1 and "error" not in kinds, kinds
    (text,) = [e.data["text"] for e in events if e.type == "transcript"]
    assert_heard(text, KITCHEN, "kitchen")
    # Nothing more after the transcript: no second one, no error, for audio-stop.
    assert pong is not None and pong.type == "pong" and pong.data["text"] == "after"


@pytest.mark.parametrize(
    "quiet",
    [lambda s: silence(s), lambda s: noise(s, level=0.05, seed=11)],
    ids=["silence", "white-noise"],
)
async def test_nobody_speaking_ends_with_an_empty_transcript(daemon, quiet):
    answer = await ha_2026(daemon, quiet(NO_SPEECH_S + 5.0).tobytes())
    assert answer.text == "", [e.type for e in answer.events]
    assert answer.stopped_early
    # No decode to wait for: the transcript is the decision itself (a loaded machine's
    # lag allowed, well short of the end of the audio).
    assert answer.at_s is not None and NO_SPEECH_S - 0.2 < answer.at_s < NO_SPEECH_S + 3.0
    assert "voice-started" not in [e.type for e in answer.events]


@pytest.mark.parametrize(
    "pause",
    [lambda s: silence(s), lambda s: noise(s, level=0.005, seed=12)],
    ids=["silence", "quiet-noise"],
)
async def test_a_turn_the_model_never_calls_finished_ends_at_the_longest_pause(
    patient, kitchen, pause
):
    speech_end_s = 0.3 + kitchen.size / RATE
    pcm = np.concatenate([silence(0.3), kitchen, pause(5.0)]).tobytes()
    answer = await ha_2026(patient, pcm)
    assert answer.text is not None, [e.type for e in answer.events]
    assert_heard(answer.text, KITCHEN, "kitchen")
    waited = answer.at("voice-stopped") - speech_end_s
    # Asked at 0.2 s of silence, the model said "not finished"; the fixed trailing
    # silence (0.7 s) does not end a turn the model was asked about: the longest
    # pause does (Piper's own trailing silence makes the wait look a little shorter; a
    # loaded machine's lag makes it look longer, short of the 5 s the client sends).
    assert PATIENT_PAUSE_S - 0.35 < waited < PATIENT_PAUSE_S + 2.5, waited


def babble(speak: Callable[[str], np.ndarray], seconds: float) -> np.ndarray:
    """Three voices talking over each other without a gap (a television): speech to
    the VAD from start to end."""
    lines = [
        "Please turn on the lights in the kitchen and close the blinds in the living room.",
        "What is the weather like tomorrow morning in the mountains?",
        "The news tonight: rain in the north and sunshine in the south of the country.",
    ]
    n = int(seconds * RATE)
    mix = np.zeros(n, dtype=np.float32)
    for k, line in enumerate(lines):
        voice = speak(line).astype(np.float32)
        track = np.tile(voice, n // voice.size + 2)[k * RATE // 3 :][:n]
        mix += track / 3
    return mix.clip(-32768, 32767).astype(np.int16)


async def test_a_television_that_never_pauses_ends_at_the_longest_utterance(daemon, speak):
    pcm = np.concatenate([silence(0.3), babble(speak, 10.0)]).tobytes()
    answer = await ha_2026(daemon, pcm)
    assert answer.text, [e.type for e in answer.events]
    # Not at a pause (there is none), but when the longest utterance was reached (the
    # transcript follows once the decode is done: seconds on a loaded machine).
    decided = answer.at("voice-stopped")
    assert 0.3 + MAX_UTTERANCE_S - 0.1 < decided < 0.3 + MAX_UTTERANCE_S + 3.0, decided
