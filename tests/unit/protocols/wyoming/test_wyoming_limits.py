"""Wyoming request limits with fakes: the streamed-TTS sentence count and deadlines."""

import asyncio
import time
from dataclasses import replace
from types import SimpleNamespace

import pytest
from wyoming.asr import Transcribe
from wyoming.error import Error

from daemon.errors import RequestTimeout, TextTooLong
from protocols.wyoming.handler import MAX_QUEUED_SENTENCES, _TtsStream
from protocols.wyoming.server import WyomingServer
from tests.fakes import fake_config, fake_engines, utterance
from tests.unit.protocols.wyoming.test_handler import Daemon


class SlowHearth:
    """Speech that never finishes a sentence: the queue behind it only grows."""

    limits = SimpleNamespace(max_text_chars=1_000_000)

    async def speak(self, text, options):
        await asyncio.sleep(3600)
        yield None


def conn():
    return SimpleNamespace(id="c", write=None)


async def test_streamed_sentences_waiting_for_synthesis_are_bounded_by_count():
    stream = _TtsStream(conn(), SlowHearth(), None, 60)
    with pytest.raises(TextTooLong, match="sentences"):
        for i in range(MAX_QUEUED_SENTENCES * 4):
            stream.add(f"This is sentence number {i} of a long stream. ")
    assert stream.queue.qsize() <= MAX_QUEUED_SENTENCES
    await asyncio.wait_for(stream.cancel(), 5)


async def test_streamed_synthesis_past_the_deadline_is_a_timeout():
    stream = _TtsStream(conn(), SlowHearth(), None, 0.1)
    stream.add("Hello there.")
    with pytest.raises(RequestTimeout):
        await asyncio.wait_for(stream.finish(), 5)
    assert stream.task.done()


async def test_a_transcript_past_the_core_deadline_is_a_timeout_error(tmp_path):
    """The deadline is the request profile's (the core's): the adapter only reports it."""
    config = fake_config(tmp_path)
    fakes = fake_engines(replace(config, limits=replace(config.limits, request_timeout_s=1.0)))
    slow = fakes.asr["fake"]
    heard = slow.transcribe

    def transcribe(audio, options):
        time.sleep(2.5)  # in the ASR worker, past the one-second deadline
        return heard(audio, options)

    slow.transcribe = transcribe  # type: ignore[method-assign]
    daemon = Daemon(
        fakes, WyomingServer("tcp://127.0.0.1:0", lambda: fakes.hearth, 4, 1 << 20, 2.0)
    )
    async with asyncio.timeout(10):
        await daemon.server.start()
        client = await daemon.connect()
        await client.send(Transcribe())
        await client.stream_audio(utterance())
        events = await client.until(Error)
        assert Error.from_event(events[-1]).code == "timeout"
        assert await client.closed()
        await client.close()
        await daemon.server.stop(grace_s=1.0)
    fakes.close()
