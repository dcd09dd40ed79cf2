"""The speech session's logic with a fake VAD and a fake ASR (no models)."""

import asyncio

import numpy as np
import pytest

from daemon.audio import RATE, AudioFormat
from daemon.endpoint import EndpointConfig
from daemon.errors import AudioTooLong, InvalidAudio
from daemon.events import FinalTranscript, PartialTranscript, VoiceStarted, VoiceStopped
from daemon.session import SessionOptions, SessionSettings, SpeechSession
from daemon.workers import WorkerPool
from tests.helpers import EnergyVad, FakeAsr, chunks, noise, silence, tone

FMT = AudioFormat(RATE, 2, 1)
SETTINGS = SessionSettings(
    endpoint=EndpointConfig(0.09, 0.24, 0.6),
    padding_s=0.24,
    partial_interval_s=0.5,
    max_audio_s=10,
)


def make(options: SessionOptions | None = None, settings: SessionSettings = SETTINGS):
    asr = FakeAsr()
    session = SpeechSession(
        asr,
        WorkerPool("asr", 1, 8),
        EnergyVad(),
        WorkerPool("vad", 1, 8),
        settings,
        options or SessionOptions(),
    )
    session.start(FMT)
    return session, asr


async def feed(session: SpeechSession, audio: np.ndarray, realtime: bool = False) -> None:
    for piece in chunks(audio.tobytes(), (640,)):
        await session.feed(piece)
        if realtime:
            await asyncio.sleep(0.001)


@pytest.mark.parametrize("audio", [silence(2.0), noise(2.0, level=0.005)])
async def test_no_speech_means_empty_transcript_and_no_decode(audio):
    session, asr = make()
    await feed(session, audio)
    final = await session.finish()
    assert final.text == "" and final.speech_ms == 0
    assert asr.calls == [] and session.asr_calls == 0


async def test_speculative_decode_is_used_when_the_client_ends_later():
    session, asr = make(SessionOptions(partials=False))
    await feed(session, np.concatenate([silence(0.5), tone(1.0), silence(0.8)]))
    await asyncio.sleep(0.05)
    final = await session.finish()
    assert final.speculative
    assert len(asr.calls) == 1  # the speculative decode was the final one
    # trimmed: 1.0 s of speech plus 0.24 s padding on each side
    assert abs(asr.calls[0] / RATE - 1.48) < 0.07
    events = session.pending_events()
    assert [type(e) for e in events] == [VoiceStarted, VoiceStopped, FinalTranscript]


async def test_speech_resuming_discards_the_speculation():
    session, asr = make(SessionOptions(partials=False))
    await feed(session, np.concatenate([tone(0.6), silence(0.4)]))
    await asyncio.sleep(0.05)
    assert len(asr.calls) == 1  # speculated on the pause
    await feed(session, np.concatenate([tone(0.6), silence(0.8)]))
    final = await session.finish()
    assert final.speculative and len(asr.calls) == 2
    assert asr.calls[1] > asr.calls[0]
    assert final.text == f"{asr.calls[1]} samples"


async def test_no_speculation_decodes_at_the_end():
    session, asr = make(SessionOptions(partials=False, speculative=False))
    await feed(session, np.concatenate([tone(1.0), silence(0.8)]))
    final = await session.finish()
    assert not final.speculative and len(asr.calls) == 1


async def test_speech_until_the_last_sample_is_decoded_whole():
    session, asr = make(SessionOptions(partials=False))
    await feed(session, np.concatenate([silence(0.3), tone(1.2)]))
    final = await session.finish()
    assert not final.speculative
    assert abs(asr.calls[0] / RATE - 1.44) < 0.07


async def test_partials_arrive_before_the_final():
    session, _ = make()
    seen = []

    async def collect():
        async for event in session.events():
            seen.append(event)

    collector = asyncio.ensure_future(collect())
    await feed(session, tone(2.0), realtime=True)
    await asyncio.sleep(0.05)
    await session.finish()
    await asyncio.wait_for(collector, 5)
    kinds = [type(e) for e in seen]
    assert PartialTranscript in kinds
    assert kinds.index(PartialTranscript) < kinds.index(FinalTranscript)
    assert kinds[-1] is FinalTranscript


async def test_limits_and_order_errors():
    session, _ = make(settings=SessionSettings(max_audio_s=1.0))
    with pytest.raises(AudioTooLong, match="1 s limit"):
        await feed(session, tone(1.5))
    fresh = SpeechSession(FakeAsr(), WorkerPool("a", 1, 1), EnergyVad(), WorkerPool("v", 1, 1))
    with pytest.raises(InvalidAudio, match="before its format"):
        await fresh.feed(b"\x00\x00")
    with pytest.raises(InvalidAudio, match="sample rate"):
        fresh.start(AudioFormat(50, 2, 1))
    done, _ = make()
    await done.finish()
    with pytest.raises(InvalidAudio, match="after the end"):
        await done.feed(b"\x00\x00")


async def test_hands_free_finds_two_utterances_with_bounded_memory():
    session, asr = make(
        SessionOptions(partials=False, hands_free=True),
        SessionSettings(endpoint=EndpointConfig(0.09, 0.24, 0.6), max_audio_s=3),
    )
    finals = []
    # 8 s of audio in all, more than max_audio_s: idle audio must be dropped.
    for part in [silence(2.0), tone(0.8), silence(1.0), silence(2.0), tone(1.0), silence(1.2)]:
        await feed(session, part)
        result = await session.next_utterance()
        if result is not None:
            finals.append(result)
    assert len(finals) == 2
    assert all(f.text.endswith("samples") for f in finals)
    assert len(session._buf) // 2 < 3 * RATE


async def test_repeated_format_is_fine_and_a_changed_one_is_refused():
    session, _ = make(SessionOptions(partials=False))
    await feed(session, tone(0.2))
    session.start(FMT)  # Wyoming repeats the format with every chunk
    with pytest.raises(InvalidAudio, match="format changed mid-stream"):
        session.start(AudioFormat(48000, 2, 1))


async def test_concurrent_finish_and_late_feed_are_refused():
    session, asr = make(SessionOptions(partials=False, speculative=False))
    await feed(session, np.concatenate([tone(0.5), silence(0.3)]))
    first = asyncio.ensure_future(session.finish())
    second = asyncio.ensure_future(session.finish())
    late = asyncio.ensure_future(session.feed(b"\x00\x00" * 100))
    results = await asyncio.gather(first, second, late, return_exceptions=True)
    assert isinstance(results[0], FinalTranscript)
    assert isinstance(results[1], InvalidAudio) and isinstance(results[2], InvalidAudio)
    assert len(asr.calls) == 1


async def test_an_oversized_chunk_is_refused_before_conversion():
    session, _ = make(settings=SessionSettings(max_audio_s=2.0))
    with pytest.raises(AudioTooLong):
        await session.feed(b"\x00\x00" * RATE * 30)
    assert session.samples == 0


async def test_hands_free_cuts_endless_speech_instead_of_failing():
    session, asr = make(
        SessionOptions(partials=False, hands_free=True),
        SessionSettings(endpoint=EndpointConfig(0.09, 0.24, 0.6), max_audio_s=3),
    )
    finals = []
    for _ in range(50):  # 10 s of uninterrupted "speech", checked after each feed
        await feed(session, tone(0.2))
        result = await session.next_utterance()
        if result is not None:
            finals.append(result)
    assert len(finals) >= 2
    assert all(f.speech_ms <= 3000 for f in finals)
