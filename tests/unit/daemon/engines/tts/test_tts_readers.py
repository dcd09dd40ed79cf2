"""TTS requests against hostile text and readers: a slow reader holds no worker,
text is checked before any audio, and long text is synthesized in bounded pieces."""

import asyncio
import itertools
from pathlib import Path

import pytest

from daemon.audio.stream import output_format
from daemon.engines.tts.base import SynthesisOptions
from daemon.engines.tts.service import TtsService
from daemon.engines.tts.text import MAX_PIECE_CHARS, bound_pieces, check_speakable
from daemon.engines.workers import WorkerPool
from daemon.errors import InvalidText, RequestTimeout
from daemon.speech import speak
from tests.fakes import FakeEngines, fake_config, fake_engines

MANY_SENTENCES = " ".join(f"Sentence number {i} is here." for i in range(100))


@pytest.fixture
def fakes(tmp_path: Path):
    made = fake_engines(fake_config(tmp_path))
    yield made
    made.close()


def service(fakes: FakeEngines, workers: int = 1, stall_s: float = 30.0) -> TtsService:
    """A TTS service over the fake engine with one worker, like ``tts.workers: 1``."""
    return TtsService(
        fakes.tts,
        fakes.engines.voices,
        WorkerPool("tts-test", workers, 4),
        None,
        fakes.engines.config.tts.default_voice,
        0.0,
        10_000,
        stall_timeout_s=stall_s,
    )


async def test_a_stalled_reader_does_not_hold_the_worker(fakes: FakeEngines) -> None:
    tts = service(fakes)
    stalled = tts.stream(MANY_SENTENCES, SynthesisOptions()).__aiter__()
    try:
        async with asyncio.timeout(10):
            await stalled.__anext__()  # one sentence read, then nothing more
            await asyncio.sleep(0.2)  # the stalled request fills what it may buffer
            audio = await tts.synthesize("Hello there, neighbour.", SynthesisOptions(), "pcm")
        assert audio
    finally:
        await stalled.aclose()
        tts.pool.close()


async def test_a_reader_stalled_past_the_deadline_is_dropped(fakes: FakeEngines) -> None:
    tts = service(fakes, stall_s=0.1)
    stalled = tts.stream(MANY_SENTENCES, SynthesisOptions()).__aiter__()
    try:
        async with asyncio.timeout(10):
            await stalled.__anext__()
            await asyncio.sleep(1.0)
            with pytest.raises(RequestTimeout):
                async for _ in stalled:
                    pass
        # It stopped synthesizing: far fewer sentences than the text has were spoken.
        assert len(fakes.tts.spoken) < 20
    finally:
        await stalled.aclose()
        tts.pool.close()


async def test_a_reader_that_keeps_up_gets_every_sentence(fakes: FakeEngines) -> None:
    tts = service(fakes)
    try:
        async with asyncio.timeout(10):
            blocks = [block async for block in tts.stream(MANY_SENTENCES, SynthesisOptions())]
        # Each sentence in the pieces its engine made (two here), in order.
        said = [sentence for sentence, _ in itertools.groupby(b.sentence for b in blocks)]
        assert said == [f"Sentence number {i} is here." for i in range(100)]
        assert len(blocks) == 200
    finally:
        tts.pool.close()


async def test_http_speech_drops_a_client_that_stops_reading(
    fakes: FakeEngines, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The task sending the response is cancelled when a send outlasts the deadline,
    which makes the server close the connection."""
    monkeypatch.setattr(speak, "SEND_TIMEOUT_S", 0.2)
    tts = service(fakes)
    stream = await speak.open_speech(
        tts, MANY_SENTENCES, SynthesisOptions(), output_format("pcm"), use_cache=False
    )
    never = asyncio.Event()

    async def send_response() -> None:
        async for _chunk in stream.chunks:
            await never.wait()  # a client that reads nothing: the send never returns

    sender = asyncio.create_task(send_response())
    try:
        async with asyncio.timeout(10):
            with pytest.raises(asyncio.CancelledError):
                await sender
    finally:
        sender.cancel()
        tts.pool.close()


@pytest.mark.parametrize("bad", ["a\x00b", "bell\x07", "esc\x1b[2J", "del\x7f", "lone \ud800"])
async def test_unspeakable_text_is_refused_before_any_audio(fakes: FakeEngines, bad: str) -> None:
    tts = service(fakes)
    try:
        with pytest.raises(InvalidText):
            check_speakable(bad)
        with pytest.raises(InvalidText):
            async with asyncio.timeout(10):
                await speak.open_speech(tts, bad, SynthesisOptions(), output_format("wav"))
        assert fakes.tts.spoken == []
    finally:
        tts.pool.close()


def test_tabs_and_newlines_are_speakable() -> None:
    check_speakable("one\ttwo\r\nthree\n")


def test_long_text_without_a_break_is_synthesized_in_bounded_pieces() -> None:
    run_on = " ".join(["word"] * 400)
    pieces = bound_pieces([run_on])
    assert all(len(piece) <= MAX_PIECE_CHARS for piece in pieces)
    assert " ".join(pieces) == run_on
    one_word = "x" * 1999
    assert "".join(bound_pieces([one_word])) == one_word
    assert max(len(p) for p in bound_pieces([one_word])) <= MAX_PIECE_CHARS


def test_long_sentences_split_at_clauses_first() -> None:
    clause = "the lights in the kitchen are on"
    sentence = ", ".join([clause] * 12) + "."
    pieces = bound_pieces([sentence])
    assert len(pieces) > 1
    assert all(piece.endswith(",") for piece in pieces[:-1])
    assert bound_pieces(["Short one.", "Another."]) == ["Short one.", "Another."]


async def test_the_engine_never_sees_more_than_a_piece(fakes: FakeEngines) -> None:
    tts = service(fakes)
    try:
        async with asyncio.timeout(10):
            await tts.synthesize("a " * 999, SynthesisOptions(), "pcm", use_cache=False)
        assert max(len(spoken.sentence) for spoken in fakes.tts.spoken) <= MAX_PIECE_CHARS
    finally:
        tts.pool.close()
