"""Wyoming request limits with fakes: the streamed-TTS sentence count and deadlines."""

import asyncio
from types import SimpleNamespace

import pytest

from daemon.errors import RequestTimeout, TextTooLong
from daemon.speakers.service import SpeakerLookup
from protocols.wyoming.asr import AsrRequest
from protocols.wyoming.handler import MAX_QUEUED_SENTENCES, _TtsStream


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


async def test_a_transcript_past_the_deadline_is_a_timeout(monkeypatch):
    class StuckSession:
        async def finish(self):
            await asyncio.sleep(3600)

        async def close(self):
            pass

        async def events(self):
            await asyncio.sleep(3600)
            yield None

    request = object.__new__(AsrRequest)
    request.conn, request.session, request.timeout_s = conn(), StuckSession(), 0.1
    request._task, request.speaker = None, SpeakerLookup(None)
    request.stopping, request.reported = False, None
    monkeypatch.setattr(AsrRequest, "_forward", lambda self: self.session.finish())
    request.begin()
    with pytest.raises(RequestTimeout) as caught:
        await asyncio.wait_for(request.finish(), 5)
    assert caught.value.code == "timeout"
    await asyncio.wait_for(request.close(), 5)
