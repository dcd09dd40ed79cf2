"""A spoken request (one turn a client sends and waits on) over fake engines: who ends
it, its audio cap, its deadline, and what its final carries, all the profile's values."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path

import pytest

from daemon.audio.decode import PcmBody
from daemon.audio.pcm import INTERNAL
from daemon.errors import AudioTooLong, InvalidAudio, RequestTimeout
from daemon.runtime.profiles import Profile
from daemon.runtime.requests import SpokenRequest
from daemon.speech import events as ev
from daemon.speech.intake import AudioIntake
from tests.fakes import KITCHEN, FakeEngines, fake_config, fake_engines, silence, utterance

TIMEOUT_S = 10.0


def engines(tmp_path: Path, timeout_s: float | None = None) -> FakeEngines:
    config = fake_config(tmp_path)
    if timeout_s is not None:
        config = replace(config, limits=replace(config.limits, request_timeout_s=timeout_s))
    return fake_engines(config)


def pcm(samples: object) -> bytes:
    return samples.astype("<i2").tobytes()  # type: ignore[attr-defined]


async def chunks(data: bytes, size: int = 3200) -> AsyncIterator[bytes]:
    for offset in range(0, len(data), size):
        yield data[offset : offset + size]


def slow_asr(fakes: FakeEngines, seconds: float) -> None:
    asr = fakes.asr["fake"]
    heard = asr.transcribe

    def transcribe(audio, options):  # type: ignore[no-untyped-def]
        time.sleep(seconds)  # in the ASR worker
        return heard(audio, options)

    asr.transcribe = transcribe  # type: ignore[method-assign]


async def test_a_client_ended_request_answers_with_its_final(tmp_path: Path) -> None:
    fakes = engines(tmp_path)
    speech = fakes.services.speech
    async with asyncio.timeout(TIMEOUT_S):
        request = await speech.open_request(SpokenRequest(Profile.CLIENT_ENDED))
        try:
            await request.feed(INTERNAL, pcm(utterance()))
            final = await request.finish()
        finally:
            await request.close()
    assert final.text == KITCHEN and final.speaker is None and final.translation is None
    fakes.close()


async def test_streamed_events_end_with_the_final(tmp_path: Path) -> None:
    fakes = engines(tmp_path)
    speech = fakes.services.speech
    async with asyncio.timeout(TIMEOUT_S):
        request = await speech.open_request(SpokenRequest(Profile.CLIENT_ENDED, stream=True))
        seen: list[object] = []

        async def read() -> None:
            async for event in request.events():
                seen.append(event)

        reader = asyncio.create_task(read())
        await request.feed(INTERNAL, pcm(utterance()))
        final = await request.finish()
        await reader
        await request.close()
    assert isinstance(seen[-1], ev.FinalTranscript) and seen[-1] is final
    assert any(isinstance(e, ev.VoiceStarted) for e in seen)
    fakes.close()


async def test_a_server_ended_request_answers_while_the_client_sends(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(AudioIntake, "recording", lambda self: False)  # a live speaker
    fakes = engines(tmp_path)
    speech = fakes.services.speech
    limit = fakes.engines.config.limits.max_audio_s
    async with asyncio.timeout(TIMEOUT_S):
        request = await speech.open_request(SpokenRequest(Profile.SERVER_ENDED))
        await request.feed(INTERNAL, pcm(utterance()))
        while not request.turn_over:
            await request.feed(INTERNAL, pcm(silence(0.1)))
        # The answer is there before the client stops: stopping adds nothing.
        final = await request.finish()
        assert final.text == KITCHEN
        # What the client still sends is dropped, and counted against the cap.
        with pytest.raises(AudioTooLong):
            for _ in range(int(limit * 10) + 1):
                await request.feed(INTERNAL, pcm(silence(0.1)))
        await request.close()
    fakes.close()


async def test_an_upload_past_the_deadline_is_a_timeout(tmp_path: Path) -> None:
    fakes = engines(tmp_path, timeout_s=1.0)
    slow_asr(fakes, 2.5)
    speech = fakes.services.speech
    async with asyncio.timeout(TIMEOUT_S):
        request = await speech.open_request(SpokenRequest(Profile.DEVICE_UPLOAD))
        await request.hear_body(chunks(pcm(utterance())), PcmBody(INTERNAL, 60))
        with pytest.raises(RequestTimeout) as caught:
            await request.finish()
        await request.close()
    assert caught.value.code == "timeout"
    fakes.close()


async def test_a_live_streams_deadline_starts_at_the_end_of_its_audio(tmp_path: Path) -> None:
    fakes = engines(tmp_path, timeout_s=1.0)
    speech = fakes.services.speech
    async with asyncio.timeout(TIMEOUT_S):
        request = await speech.open_request(SpokenRequest(Profile.CLIENT_ENDED))
        audio = pcm(utterance())
        step = len(audio) // 4 // 2 * 2
        for offset in range(0, len(audio), step):  # the speaker takes longer than the deadline
            await request.feed(INTERNAL, audio[offset : offset + step])
            await asyncio.sleep(0.35)
        final = await request.finish()
        await request.close()
    assert final.text == KITCHEN
    fakes.close()


async def test_a_body_without_audio_is_refused(tmp_path: Path) -> None:
    fakes = engines(tmp_path)
    speech = fakes.services.speech
    async with asyncio.timeout(TIMEOUT_S):
        request = await speech.open_request(SpokenRequest(Profile.DEVICE_UPLOAD))
        with pytest.raises(InvalidAudio, match="no audio"):
            await request.hear_body(chunks(b""), PcmBody(INTERNAL, 60))
        await request.close()
    fakes.close()


async def test_a_kept_upload_is_written_once_answered(tmp_path: Path) -> None:
    fakes = engines(tmp_path)
    speech = fakes.services.speech
    folder = tmp_path / "kept"
    async with asyncio.timeout(TIMEOUT_S):
        request = await speech.open_request(SpokenRequest(Profile.DEVICE_UPLOAD, record_to=folder))
        await request.hear_body(chunks(pcm(utterance())), PcmBody(INTERNAL, 60))
        await request.finish()
        await request.close()
    (kept,) = folder.glob("*.wav")
    assert kept.stat().st_mode & 0o777 == 0o600
    fakes.close()


async def test_a_translation_rides_on_the_final(tmp_path: Path) -> None:
    fakes = engines(tmp_path)
    speech = fakes.services.speech
    async with asyncio.timeout(TIMEOUT_S):
        request = await speech.open_request(SpokenRequest(Profile.DEVICE_UPLOAD, translate=True))
        await request.hear_body(chunks(pcm(utterance())), PcmBody(INTERNAL, 60))
        final = await request.finish()
        await request.close()
    # An English-only model's transcript is its translation: no second decode.
    assert final.translation == final.text == KITCHEN
    fakes.close()
