"""The intake holds chunks until the VAD can use them, and batches a recording."""

import asyncio
import time
from collections import deque
from types import SimpleNamespace

import numpy as np
import pytest

from daemon.audio.pcm import RATE, AudioFormat
from daemon.engines.workers import WorkerPool
from daemon.errors import AudioTooLong
from daemon.speech import intake as intake_module
from daemon.speech.endpoint import EndpointConfig
from daemon.speech.events import FinalTranscript, SpeculativeTranscript
from daemon.speech.intake import BATCH_S, RECORDING_AHEAD_S, AudioIntake, Held
from daemon.speech.session import SessionOptions, SessionSettings, SpeechSession
from tests.helpers import EnergyVad, FakeAsr, chunks, eventually, silence, tone

FMT = AudioFormat(RATE, 2, 1)
FRAME = EnergyVad.frame_samples  # 480 samples, 30 ms
TEN_MS = b"\x00\x00" * 160  # one of Home Assistant's chunks


def intake() -> AudioIntake:
    audio = AudioIntake(30.0, 48000, 2)
    audio.start(FMT)
    return audio


def test_ten_ms_chunks_wait_for_a_whole_vad_frame():
    audio = intake()
    advice = [audio.hold(TEN_MS, FRAME) for _ in range(3)]
    assert advice == [Held.PART_FRAME, Held.PART_FRAME, Held.NOW]  # 480 samples: a frame
    assert audio.received == 480 and audio.samples == 0  # held, not converted yet
    audio.add(audio.take_held())
    assert not audio.holding and audio.samples == 480
    assert len(list(audio.frames(FRAME))) == 1
    # What is left of a frame counts: 160 more samples complete none, 320 more do.
    assert audio.hold(TEN_MS * 2, FRAME) is Held.PART_FRAME
    assert audio.hold(TEN_MS, FRAME) is Held.NOW


def test_audio_ahead_of_the_clock_is_held_in_batches():
    audio = intake()
    ahead = int((RECORDING_AHEAD_S + 0.1) * RATE)
    audio.add(b"\x00\x00" * ahead)  # a recording, sent in no time
    list(audio.frames(FRAME))
    advice = [audio.hold(TEN_MS * 3, FRAME) for _ in range(int(BATCH_S / 0.03) + 1)]
    assert set(advice[:-1]) == {Held.BATCH} and advice[-1] is Held.NOW
    assert audio.received - audio.samples >= BATCH_S * RATE


def test_a_live_speaker_is_never_batched():
    audio = intake()
    audio._marks = deque([(time.monotonic() - 10.0, 0)])  # 10 s of clock, 1 s of audio
    audio.add(b"\x00\x00" * RATE)
    list(audio.frames(FRAME))
    assert audio.hold(TEN_MS * 3, FRAME) is Held.NOW


def test_a_fast_microphone_clock_never_passes_for_a_recording(monkeypatch):
    """A capture clock 200 ppm fast gains 17 s a day; a recording is seconds ahead at once."""
    clock = SimpleNamespace(now=1000.0)
    monkeypatch.setattr(intake_module, "time", SimpleNamespace(monotonic=lambda: clock.now))
    audio = intake()
    second = b"\x00\x00" * RATE
    for _ in range(6 * 3600):  # six hours, a second at a time
        clock.now += 1.0 / 1.0002
        audio.hold(second, FRAME)
        audio.add(audio.take_held())
        list(audio.frames(FRAME))
        audio.forget(audio.buffered)  # hands-free: idle audio goes
    assert audio.samples / RATE - (clock.now - 1000.0) > 4.0  # ahead since the start
    assert abs(audio.ahead_s()) < 0.05  # but not over the last half minute
    # The same stream, then a recording sent at once: ahead by its length.
    for _ in range(5):
        audio.hold(second, FRAME)
    assert 4.9 < audio.ahead_s() < 5.1


@pytest.fixture
async def make():
    """Sessions with EnergyVad and FakeAsr, and the audio each VAD worker call took;
    closed, with their pools, after the test."""
    made: list[tuple[SpeechSession, WorkerPool, WorkerPool]] = []

    def session_of(settings: SessionSettings | None = None):
        asr, asr_pool, vad_pool = FakeAsr(), WorkerPool("asr", 1, 8), WorkerPool("vad", 1, 8)
        session = SpeechSession(
            asr,
            asr_pool,
            EnergyVad(),
            vad_pool,
            settings or SessionSettings(endpoint=EndpointConfig(0.09, 0.24, 0.6), max_audio_s=10),
            SessionOptions(partials=False),
        )
        session.start(FMT)
        made.append((session, asr_pool, vad_pool))
        calls: list[int] = []
        original = vad_pool.run

        async def counted(func, *args):
            calls.append(len(args[0]) // 2)
            return await original(func, *args)

        vad_pool.run = counted  # type: ignore[method-assign]
        return session, asr, calls

    yield session_of
    for session, *pools in made:
        await session.close()
        for pool in pools:
            pool.close()


async def transcribe(session: SpeechSession, audio: np.ndarray) -> FinalTranscript:
    finals = []

    async def read():
        finals.extend([e async for e in session.events() if isinstance(e, FinalTranscript)])

    reader = asyncio.ensure_future(read())
    for piece in chunks(audio.tobytes(), (320,)):
        await session.feed(piece)
    await session.finish()
    await reader
    return finals[0]


async def test_a_recording_sent_at_once_costs_a_few_worker_calls_and_decodes_the_same(make):
    audio = np.concatenate([silence(1.0), tone(1.5), silence(0.3), tone(1.0), silence(0.6)])
    at_once, asr, calls = make()
    final = await transcribe(at_once, audio)
    chunk_count = len(audio) // 160
    assert len(calls) < chunk_count / 4  # per frame for 2 s, then in batches
    assert max(calls) >= BATCH_S * RATE  # the batches
    # The same audio with every frame classified on its own: the same decisions.
    one_by_one, asr_frames, _ = make()
    one_by_one.intake.hold = lambda data, frame: (  # type: ignore[method-assign]
        one_by_one.intake._held.extend(data) or Held.NOW
    )
    assert (await transcribe(one_by_one, audio)).text == final.text
    # The final decodes the same audio; a speculation at the pause, discarded when the
    # speech resumed, is not even started when the resumption comes in the same batch.
    assert asr.calls[-1] == asr_frames.calls[-1]
    assert len(asr.calls) <= len(asr_frames.calls)


def a_recording(session: SpeechSession) -> None:
    """Every chunk from now on is far ahead of the clock: the session batches them all."""
    session.intake._marks = deque([(time.monotonic() + 3600, 0)])


async def test_a_batch_is_classified_when_the_sender_stops(make):
    session, _, _ = make()
    a_recording(session)
    kinds = []

    async def read():
        async for event in session.events():
            kinds.append(type(event))

    reader = asyncio.ensure_future(read())
    audio = np.concatenate([silence(1.9), tone(0.5), silence(0.32)])
    for piece in chunks(audio.tobytes(), (320,)):
        await session.feed(piece)
    assert session.intake.holding  # the tail of the pause waits for a batch
    # The sender stops, without audio-stop: it is not kept waiting.
    await eventually(lambda: SpeculativeTranscript in kinds)
    assert not session.intake.holding and SpeculativeTranscript in kinds
    await session.close()
    await reader


async def test_a_batch_past_the_limit_fails_the_next_call(make):
    session, _, _ = make(SessionSettings(max_audio_s=2.42))
    a_recording(session)
    for piece in chunks(silence(2.45).tobytes(), (320,)):
        await session.feed(piece)  # batches up to 2.25 s: under the limit
    assert session.intake.holding
    await eventually(lambda: not session.intake.holding)
    for later in (session.feed(b"\x00\x00" * 160), session.finish()):
        with pytest.raises(AudioTooLong, match="2.42 s limit"):
            await later


def test_a_recording_is_told_from_a_live_speaker_by_how_far_it_runs_ahead(monkeypatch):
    clock = SimpleNamespace(now=1000.0)
    monkeypatch.setattr(intake_module, "time", SimpleNamespace(monotonic=lambda: clock.now))
    live = intake()
    for _ in range(120):  # 10 ms chunks at the speed they were spoken, for 1.2 s
        clock.now += 0.01
        live.hold(TEN_MS, FRAME)
    assert not live.recording()
    # A stall, then a burst of what it held back: it catches up, it never gets ahead.
    clock.now += 0.3
    live.hold(TEN_MS * 30, FRAME)
    assert not live.recording()
    # A 1.5 s file sent at once is all ahead, though shorter than RECORDING_AHEAD_S.
    file = intake()
    for _ in range(150):
        file.hold(TEN_MS, FRAME)
    assert file.recording()
    # Once the clock has caught up with what a client sent, it is live again.
    clock.now += 1.5
    assert not file.recording()
