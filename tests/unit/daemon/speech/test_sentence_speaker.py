"""The one sentence speaker: text in pieces becomes audio sentence by sentence, within
its bounds (sentences waiting, characters, the deadline)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from daemon.engines.tts.base import SentenceAudio, SynthesisOptions
from daemon.errors import RequestTimeout, TextTooLong
from daemon.speech.sentence_speaker import SentenceSpeaker
from tests.fakes import fake_config, fake_engines

TIMEOUT_S = 10.0


class SlowTts:
    """Speech that never finishes a sentence: the sentences behind it only wait."""

    async def stream_cached(self, text: str, options: Any) -> AsyncIterator[SentenceAudio]:
        await asyncio.sleep(3600)
        yield SentenceAudio(b"", 16000, text)

    stream = stream_cached


def slow(**bounds: Any) -> SentenceSpeaker:
    return SentenceSpeaker(SlowTts(), SynthesisOptions(), cached=True, **bounds)  # type: ignore[arg-type]


async def test_sentences_waiting_for_the_voice_are_bounded_by_count() -> None:
    voice = slow(max_waiting=16)
    with pytest.raises(TextTooLong, match="sentences"):
        for i in range(64):
            voice.write_now(f"This is sentence number {i} of a long stream. ")
    assert voice.waiting <= 16


async def test_streamed_text_is_bounded_by_characters() -> None:
    voice = slow(max_chars=100)
    with pytest.raises(TextTooLong, match="100 characters"):
        voice.write_now("word " * 30)


async def test_audio_past_the_deadline_is_a_timeout() -> None:
    voice = slow(deadline_s=0.1)
    voice.write_now("Hello there.")
    voice.end()
    with pytest.raises(RequestTimeout):
        async with asyncio.timeout(TIMEOUT_S):
            async for _ in voice.audio():
                pass


async def test_every_sentence_is_spoken_in_order_and_silent_ones_are_skipped(
    tmp_path: Path,
) -> None:
    fakes = fake_engines(fake_config(tmp_path))
    assert fakes.engines.tts is not None
    voice = SentenceSpeaker(fakes.engines.tts, SynthesisOptions(), first_words=(3, 5))
    heard: dict[int, str] = {}

    async def write() -> None:
        for piece in ["The kitchen lights", ", as you asked,", " are on now. ", "🙂 ", "Bye now."]:
            await voice.write(piece)
        voice.end()

    async with asyncio.timeout(TIMEOUT_S):
        writer = asyncio.create_task(write())
        async for index, block in voice.audio():
            if block is not None and not heard.get(index, "").endswith(block.sentence):
                # A sentence comes in pieces, as it is synthesized: its text once.
                heard[index] = f"{heard.get(index, '')} {block.sentence}".strip()
        await writer
    # The first piece is a short phrase, to its clause mark (earlier audio); the emoji
    # says nothing.
    assert heard == {0: "The kitchen lights", 1: "as you asked, are on now.", 2: "Bye now."}
    fakes.close()
