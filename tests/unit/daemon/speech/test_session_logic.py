"""The speech session's logic with a fake VAD and a fake ASR (no models)."""

import asyncio
import threading

import numpy as np
import pytest

from daemon.audio.pcm import RATE, AudioFormat
from daemon.engines.turn.base import TurnModel, TurnPrediction
from daemon.engines.workers import WorkerPool
from daemon.errors import AudioTooLong, InvalidAudio
from daemon.ops.stream import EventStream
from daemon.speech.endpoint import EndpointConfig
from daemon.speech.events import (
    FinalTranscript,
    PartialTranscript,
    SpeculationDiscarded,
    SpeculativeTranscript,
    VoiceStarted,
    VoiceStopped,
)
from daemon.speech.session import SessionOptions, SessionSettings, SpeechSession
from tests.helpers import EnergyVad, FakeAsr, chunks, eventually, noise, silence, tone

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


async def feed(
    session: SpeechSession, audio: np.ndarray, realtime: bool = False, keep_up: bool = False
) -> None:
    """Feed 20 ms chunks; with ``keep_up``, wait after each for the decode and the turn
    decision in flight, as on a machine that keeps up with the speaker (the decisions
    then do not depend on how loaded this one is)."""
    for piece in chunks(audio.tobytes(), (640,)):
        await asyncio.wait_for(session.feed(piece), 5)
        if keep_up:
            await caught_up(session)
        if realtime:
            await asyncio.sleep(0.001)


async def caught_up(session: SpeechSession) -> None:
    """Wait (bounded) for the speculative decode and the turn decision in flight."""
    pending = {t for t in (session.turns.task if session.turns else None,) if t is not None}
    spec = session.decodes.spec
    if spec is not None:
        pending.add(spec.task)
    if pending:
        await asyncio.wait(pending, timeout=5)


class Reader:
    """Reads a session's one event stream in a task of its own, as adapters do."""

    def __init__(self, session: SpeechSession) -> None:
        self.events: list[object] = []
        self.task = asyncio.ensure_future(self._read(session))

    async def _read(self, session: SpeechSession) -> None:
        async for event in session.events():
            self.events.append(event)

    def kinds(self) -> list[type]:
        return [type(e) for e in self.events]

    def finals(self) -> list[FinalTranscript]:
        return [e for e in self.events if isinstance(e, FinalTranscript)]

    async def end(self) -> list[object]:
        await asyncio.wait_for(self.task, 5)
        return self.events


async def finish(session: SpeechSession, reader: Reader | None = None) -> FinalTranscript:
    """End the audio and return the final transcript read from the stream."""
    reader = reader or Reader(session)
    await asyncio.wait_for(session.finish(), 5)
    events = await reader.end()
    assert isinstance(events[-1], FinalTranscript)
    return events[-1]


@pytest.mark.parametrize("audio", [silence(2.0), noise(2.0, level=0.005)])
async def test_no_speech_means_empty_transcript_and_no_decode(audio):
    session, asr = make()
    await feed(session, audio)
    final = await finish(session)
    assert final.text == "" and final.speech_ms == 0
    assert asr.calls == [] and session.asr_calls == 0


async def test_speculative_decode_is_used_when_the_client_ends_later():
    session, asr = make(SessionOptions(partials=False))
    reader = Reader(session)
    await feed(session, np.concatenate([silence(0.5), tone(1.0), silence(0.8)]))
    assert await eventually(lambda: SpeculativeTranscript in reader.kinds())
    final = await finish(session, reader)
    assert final.speculative
    assert len(asr.calls) == 1  # the speculative decode was the final one
    # trimmed: 1.0 s of speech plus 0.24 s padding on each side
    assert abs(asr.calls[0] / RATE - 1.48) < 0.07
    assert reader.kinds() == [VoiceStarted, SpeculativeTranscript, VoiceStopped, FinalTranscript]
    assert reader.events[1].text == final.text


async def test_push_to_talk_speculates_sooner_and_the_release_finds_it_ready():
    # Released 150 ms after the speech: the daemon-wide settings (240 ms) have not
    # started a decode yet; push-to-talk's (90 ms) has, and the final is that decode.
    audio = np.concatenate([silence(0.5), tone(1.0), silence(0.15)])
    for settings, speculated in ((SETTINGS, False), (SETTINGS.push_to_talk(0.09), True)):
        session, asr = make(SessionOptions(partials=False), settings)
        reader = Reader(session)
        await feed(session, audio)
        if speculated:
            assert await eventually(lambda r=reader: SpeculativeTranscript in r.kinds())
        else:
            await asyncio.sleep(0.05)
            assert SpeculativeTranscript not in reader.kinds()
        final = await finish(session, reader)
        assert final.speculative is speculated and len(asr.calls) == 1
    assert SETTINGS.push_to_talk(0.09).padding_s == SETTINGS.padding_s  # the final's trim


async def test_speech_resuming_discards_the_speculation():
    session, asr = make(SessionOptions(partials=False))
    reader = Reader(session)
    await feed(session, np.concatenate([tone(0.6), silence(0.4)]))
    assert await eventually(lambda: SpeculativeTranscript in reader.kinds())
    assert len(asr.calls) == 1  # speculated on the pause
    await feed(session, np.concatenate([tone(0.6), silence(0.8)]))
    final = await finish(session, reader)
    assert final.speculative and len(asr.calls) == 2
    assert asr.calls[1] > asr.calls[0]
    assert final.text == f"{asr.calls[1]} samples"
    speculation = [
        e for e in reader.events if isinstance(e, SpeculativeTranscript | SpeculationDiscarded)
    ]
    assert [type(e) for e in speculation] == [
        SpeculativeTranscript,
        SpeculationDiscarded,
        SpeculativeTranscript,
    ]
    assert speculation[-1].text == final.text


async def test_no_speculation_decodes_at_the_end():
    session, asr = make(SessionOptions(partials=False, speculative=False))
    await feed(session, np.concatenate([tone(1.0), silence(0.8)]))
    final = await finish(session)
    assert not final.speculative and len(asr.calls) == 1


async def test_speech_until_the_last_sample_is_decoded_whole():
    session, asr = make(SessionOptions(partials=False))
    await feed(session, np.concatenate([silence(0.3), tone(1.2)]))
    final = await finish(session)
    assert not final.speculative
    assert abs(asr.calls[0] / RATE - 1.44) < 0.07


async def test_partials_arrive_before_the_final():
    session, _ = make()
    reader = Reader(session)
    await feed(session, tone(2.0), realtime=True)
    assert await eventually(lambda: PartialTranscript in reader.kinds())
    await finish(session, reader)
    kinds = reader.kinds()
    assert PartialTranscript in kinds
    assert kinds.index(PartialTranscript) < kinds.index(FinalTranscript)
    assert kinds[-1] is FinalTranscript


class SlowAsr(FakeAsr):
    """A fake ASR whose decodes wait until the test lets them finish."""

    def __init__(self) -> None:
        super().__init__()
        self.release = threading.Event()

    def transcribe(self, audio, options):
        self.release.wait(5)
        return super().transcribe(audio, options)


async def test_a_partial_reaches_the_reader_without_more_audio():
    session = SpeechSession(
        SlowAsr(), WorkerPool("asr", 1, 8), EnergyVad(), WorkerPool("vad", 1, 8), SETTINGS
    )
    session.start(FMT)
    reader = Reader(session)
    await feed(session, tone(0.8))  # long enough for one partial, which now waits
    await asyncio.sleep(0.05)
    assert PartialTranscript not in reader.kinds()
    session.asr.release.set()  # the partial finishes between two chunks...
    # ...and is read with no further feed.
    assert await eventually(lambda: PartialTranscript in reader.kinds())
    await session.close()
    await reader.end()


async def test_the_stream_is_bounded_and_a_slow_reader_holds_feeding_back():
    session, _ = make(
        SessionOptions(partials=False, hands_free=True),
        SessionSettings(endpoint=EndpointConfig(0.09, 0.24, 0.6), max_audio_s=3),
    )
    session._events = EventStream(2)  # a small bound, so a few utterances fill it
    utterance = np.concatenate([tone(0.3), silence(0.8)])
    blocked = asyncio.ensure_future(feed(session, np.concatenate([utterance] * 4)))
    assert await eventually(lambda: len(session._events) == 2)
    await asyncio.sleep(0.3)  # and stays there: the feed waits for the reader
    assert not blocked.done() and len(session._events) == 2
    reader = Reader(session)
    await asyncio.wait_for(blocked, 5)
    await settle(reader, 4)  # the last utterance's decode may still run on a loaded machine
    await session.close()
    await reader.end()
    assert len(reader.finals()) == 4


async def test_decodes_take_their_audio_while_the_vad_worker_is_idle():
    """The VAD worker thread changes the buffer during feed(): a decode must copy its
    audio while the session lock keeps that worker away, never later from a task."""
    session, _ = make()
    unlocked = []
    original = session.intake.audio

    def checked(start, end):
        if not session._lock.locked():
            unlocked.append((start, end))
        return original(start, end)

    session.intake.audio = checked
    reader = Reader(session)
    await feed(session, np.concatenate([tone(2.0), silence(0.8)]), realtime=True)
    await finish(session, reader)
    assert PartialTranscript in reader.kinds()
    assert unlocked == []


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
    await finish(done)
    with pytest.raises(InvalidAudio, match="after the end"):
        await done.feed(b"\x00\x00")


async def test_hands_free_finds_two_utterances_with_bounded_memory():
    session, asr = make(
        SessionOptions(partials=False, hands_free=True),
        SessionSettings(endpoint=EndpointConfig(0.09, 0.24, 0.6), max_audio_s=3),
    )
    reader = Reader(session)
    # 8 s of audio in all, more than max_audio_s: idle audio must be dropped.
    for part in [silence(2.0), tone(0.8), silence(1.0), silence(2.0), tone(1.0), silence(1.2)]:
        await feed(session, part)
    await session.close()
    await reader.end()
    finals = reader.finals()
    assert len(finals) == 2
    assert all(f.text.endswith("samples") for f in finals)
    assert session.intake.buffered < 3 * RATE


async def test_repeated_format_is_fine_and_a_changed_one_is_refused():
    session, _ = make(SessionOptions(partials=False))
    await feed(session, tone(0.2))
    session.start(FMT)  # Wyoming repeats the format with every chunk
    with pytest.raises(InvalidAudio, match="format changed mid-stream"):
        session.start(AudioFormat(48000, 2, 1))


async def test_concurrent_finish_and_late_feed_are_refused():
    session, asr = make(SessionOptions(partials=False, speculative=False))
    reader = Reader(session)
    await feed(session, np.concatenate([tone(0.5), silence(0.3)]))
    first = asyncio.ensure_future(session.finish())
    second = asyncio.ensure_future(session.finish())
    late = asyncio.ensure_future(session.feed(b"\x00\x00" * 100))
    gathered = asyncio.gather(first, second, late, return_exceptions=True)
    results = await asyncio.wait_for(gathered, 5)
    assert results[0] is None
    assert isinstance(results[1], InvalidAudio) and isinstance(results[2], InvalidAudio)
    assert len(asr.calls) == 1
    assert len((await reader.end()) and reader.finals()) == 1


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
    reader = Reader(session)
    for _ in range(50):  # 10 s of uninterrupted "speech"
        await feed(session, tone(0.2))
    await session.close()
    await reader.end()
    finals = reader.finals()
    assert len(finals) >= 2
    assert all(f.speech_ms <= 3000 for f in finals)


async def test_a_failed_finish_ends_the_stream_without_a_final():
    class Broken(FakeAsr):
        def transcribe(self, audio, options):
            raise RuntimeError("decoder exploded")

    session = SpeechSession(
        Broken(),
        WorkerPool("asr", 1, 8),
        EnergyVad(),
        WorkerPool("vad", 1, 8),
        SETTINGS,
        SessionOptions(partials=False, speculative=False),
    )
    session.start(FMT)
    reader = Reader(session)
    await feed(session, np.concatenate([tone(0.5), silence(0.3)]))
    with pytest.raises(RuntimeError, match="exploded"):
        await asyncio.wait_for(session.finish(), 5)
    assert reader.finals() == [] and VoiceStarted in (await reader.end() and reader.kinds())


async def test_the_event_stream_waits_when_full_and_ends_after_close():
    stream: EventStream[int] = EventStream(2)
    await stream.put(1)
    await stream.put(2)
    third = asyncio.ensure_future(stream.put(3))
    await asyncio.sleep(0.01)
    assert not third.done()
    assert await asyncio.wait_for(stream.get(), 1) == 1
    await asyncio.wait_for(third, 1)
    stream.close()
    await asyncio.wait_for(stream.put(4), 1)  # closed: dropped, never waits
    assert [i async for i in stream] == [2, 3]
    assert await asyncio.wait_for(stream.get(), 1) is None


# --------------------------------------------------------------------------- turn model


class FakeTurn(TurnModel):
    """Answers from a script ("complete" when it runs out); records what it saw."""

    name = "fake-turn"
    window_s = 8.0

    def __init__(self, answers: list[bool] | None = None) -> None:
        self.answers = list(answers or [])
        self.seen: list[int] = []

    def predict(self, audio: np.ndarray) -> TurnPrediction:
        self.seen.append(audio.size)
        complete = self.answers.pop(0) if self.answers else True
        return TurnPrediction(1.0 if complete else 0.0, complete)


TURN_SETTINGS = SessionSettings(
    endpoint=EndpointConfig(
        0.09, 0.24, 0.6, turn=True, turn_check_s=0.15, turn_recheck_s=0.3, max_pause_s=1.5
    ),
    padding_s=0.24,
    max_audio_s=10,
)


def make_turn(turn: FakeTurn | None, hands_free: bool = True, live: bool = True) -> SpeechSession:
    """A session with a turn model; ``live``: as if the audio these tests feed at once
    had come at the speed it was spoken (else it is a recording sent at once)."""
    session = SpeechSession(
        FakeAsr(),
        WorkerPool("asr", 1, 8),
        EnergyVad(),
        WorkerPool("vad", 1, 8),
        TURN_SETTINGS,
        SessionOptions(partials=False, hands_free=hands_free),
        turn=turn,
        turn_pool=WorkerPool("turn", 1, 8),
    )
    session.start(FMT)
    if live:
        session.intake.ahead_s = lambda: 0.0  # type: ignore[method-assign]
        session.intake.recording = lambda: False  # type: ignore[method-assign]
    return session


async def settle(reader: Reader, count: int) -> None:
    """Wait (bounded) until the reader holds ``count`` final transcripts."""
    await eventually(lambda: len(reader.finals()) >= count)


async def test_a_complete_turn_ends_long_before_the_fixed_silence():
    turn = FakeTurn([True])
    session = make_turn(turn)
    reader = Reader(session)
    await feed(session, np.concatenate([silence(0.3), tone(0.8), silence(0.3)]))
    await settle(reader, 1)
    # 0.3 s of silence is half the 0.6 s trailing silence: only the model ended it.
    assert len(reader.finals()) == 1
    assert session.turn_checks == 1
    # The model heard the utterance from its leading padding to the check.
    assert 0.8 * RATE < turn.seen[0] < 1.4 * RATE
    await session.close()


async def test_a_pause_mid_sentence_gives_one_transcript_not_two():
    # "set a timer for ... ten minutes": the model says "not yet" through the pause.
    turn = FakeTurn([False] * 4 + [True])
    session = make_turn(turn)
    reader = Reader(session)
    audio = np.concatenate([tone(0.8), silence(1.0), tone(0.6), silence(0.4)])
    await feed(session, audio, keep_up=True)
    await settle(reader, 1)
    await session.close()
    await reader.end()
    finals = reader.finals()
    assert len(finals) == 1
    assert int(finals[0].text.split()[0]) > 2.4 * RATE  # both halves, one decode
    assert [type(e) for e in reader.events].count(VoiceStopped) == 1


async def test_an_unsure_model_still_ends_the_turn_at_max_pause():
    session = make_turn(FakeTurn([False] * 20))
    reader = Reader(session)
    await feed(session, np.concatenate([tone(0.8), silence(1.2)]))
    await asyncio.sleep(0.1)
    assert reader.finals() == []  # 1.2 s of silence, past trailing_silence_s, is a pause
    await feed(session, silence(0.5))
    await settle(reader, 1)
    assert len(reader.finals()) == 1
    await session.close()


async def test_a_busy_machine_skips_the_check_and_the_fixed_silence_decides():
    # Another session's check holds the one turn worker: this pause is not asked about
    # (its CPU would delay transcripts) and ends at the 0.6 s trailing silence, not 1.5 s.
    turn = FakeTurn([False] * 20)
    session = make_turn(turn)
    assert session.turns is not None
    pool = session.turns.pool  # stands in for the daemon's shared pool
    release = threading.Event()
    blocker = asyncio.ensure_future(pool.run(release.wait, 5))
    await asyncio.sleep(0.05)
    try:
        reader = Reader(session)
        await feed(session, np.concatenate([tone(0.8), silence(0.7)]))
        await settle(reader, 1)
        assert len(reader.finals()) == 1
        assert session.turn_checks == 0 and session.turn_skips == 1 and turn.seen == []
    finally:
        release.set()
        await blocker
    # Idle again: the next pause is asked about.
    await feed(session, np.concatenate([tone(0.8), silence(0.3)]))
    await eventually(lambda: session.turn_checks > 0)
    assert session.turn_checks == 1
    await session.close()


async def test_without_a_loaded_model_the_fixed_silence_decides():
    session = make_turn(None)
    reader = Reader(session)
    await feed(session, np.concatenate([tone(0.8), silence(0.7)]))
    await settle(reader, 1)
    assert len(reader.finals()) == 1 and session.turn_checks == 0
    await session.close()


async def test_push_to_talk_gets_voice_stopped_from_the_model():
    session = make_turn(FakeTurn([True]), hands_free=False)
    reader = Reader(session)
    await feed(session, np.concatenate([tone(0.8), silence(0.3)]))
    assert await eventually(lambda: VoiceStopped in reader.kinds())
    final = await finish(session, reader)
    assert final.speculative  # the decode started at the first check was used


async def test_a_recording_sent_at_once_is_not_asked_about():
    # Audio seconds ahead of the clock is a recording, not a live speaker: the client
    # marks its end, and the turn model's CPU would only delay the transcript.
    turn = FakeTurn([True] * 4)
    session = make_turn(turn, live=False)
    reader = Reader(session)
    await feed(session, np.concatenate([silence(1.0), tone(1.5), silence(1.0)]))
    await settle(reader, 1)
    assert session.turns is not None and session.turns.asked == 0
    assert session.turns.skipped >= 1
    assert len(reader.finals()) == 1  # the fixed silence ended it
    await session.close()
    await reader.end()


ENDS_TURN = SessionSettings(
    endpoint=EndpointConfig(0.09, 0.24, 0.6, no_speech_s=1.0, max_utterance_s=8.0),
    padding_s=0.12,
    max_audio_s=20,
)


def make_ending(recording: bool) -> tuple[SpeechSession, FakeAsr]:
    """A session that ends the turn itself (Wyoming's server-ended turn), fed either a
    ``recording`` sent at once or, as far as it can tell, a live speaker."""
    session, asr = make(SessionOptions(partials=False, ends_turn=True), ENDS_TURN)
    session.intake.recording = lambda: recording  # type: ignore[method-assign]
    return session, asr


A_PAUSE_INSIDE = np.concatenate([silence(0.3), tone(0.8), silence(0.9), tone(0.8), silence(0.4)])
"""Two phrases with a 0.9 s pause between them: longer than the 0.6 s trailing silence."""


async def test_a_live_speaker_ends_the_turn_at_the_pause_and_the_rest_is_dropped():
    session, asr = make_ending(recording=False)
    reader = Reader(session)
    await feed(session, A_PAUSE_INSIDE)
    assert session.ended is not None
    await asyncio.wait_for(session.finish(), 5)
    events = await reader.end()
    (final,) = [e for e in events if isinstance(e, FinalTranscript)]
    # The first phrase with its padding: the turn the session decided, nothing later.
    assert 0.8 * RATE <= asr.calls[-1] <= 1.1 * RATE
    assert final.text == f"{asr.calls[-1]} samples"


async def test_a_recording_sent_at_once_ends_at_its_audio_stop_with_every_word():
    session, asr = make_ending(recording=True)
    reader = Reader(session)
    await feed(session, A_PAUSE_INSIDE)
    assert session.ended is None  # the pause inside the file ended nothing
    final = await finish(session, reader)
    # Both phrases and the pause between them, in one decode.
    assert 2.5 * RATE <= asr.calls[-1] <= 2.8 * RATE
    assert final.text == f"{asr.calls[-1]} samples"
    assert [type(e) for e in reader.events].count(FinalTranscript) == 1


async def test_silence_leading_a_recording_past_no_speech_does_not_lose_its_speech():
    session, asr = make_ending(recording=True)
    reader = Reader(session)
    await feed(session, np.concatenate([silence(2.5), tone(0.8), silence(0.4)]))
    final = await finish(session, reader)
    assert final.text and 0.8 * RATE <= asr.calls[-1] <= 1.1 * RATE


async def test_a_stream_that_slows_to_the_clock_ends_its_turn_after_all():
    # A live client that sent a burst ahead of the clock (buffered audio) looks like a
    # recording at the pause; once it keeps pace, the next audio ends the turn.
    session, asr = make_ending(recording=True)
    reader = Reader(session)
    await feed(session, np.concatenate([silence(0.3), tone(0.8), silence(0.7)]))
    assert session.ended is None
    session.intake.recording = lambda: False  # type: ignore[method-assign]
    await feed(session, silence(0.1))
    assert session.ended is not None
    await asyncio.wait_for(session.finish(), 5)
    events = await reader.end()
    assert [type(e) for e in events].count(FinalTranscript) == 1
    assert 0.8 * RATE <= asr.calls[-1] <= 1.1 * RATE
