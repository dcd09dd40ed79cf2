"""Remote voices (``tts.remote``) against fake speech servers (httpx mock transports):
streaming as audio arrives, WAV and raw PCM, failover, fallback, deadlines, size
limits, garbage; and the TTS service and voice store around them. No network."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator, Callable, Coroutine
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pytest

from daemon.audio.stream import wav_header
from daemon.config import ConfigError, RemoteTtsConfig, parse_config
from daemon.engines.remote import EndpointSet
from daemon.engines.tts import remote as remote_module
from daemon.engines.tts.base import SynthesisOptions
from daemon.engines.tts.cache import TtsCache
from daemon.engines.tts.remote import MixedTts, RemoteTts, SpeakLocally, voice_infos
from daemon.engines.tts.service import TtsService
from daemon.engines.tts.voices import VoiceStore
from daemon.engines.workers import WorkerPool
from daemon.errors import InvalidRequest, InvalidVoice, RemoteUnavailable
from tests.fakes import FakeTts

A, B = "http://a.lan/v1", "http://b.lan/v1"
LOCAL = "en_US-joe-medium"
Handler = Callable[[httpx.Request], Coroutine[Any, Any, httpx.Response]]


def tone(seconds: float, rate: int) -> bytes:
    t = np.arange(int(seconds * rate)) / rate
    return (np.sin(2 * np.pi * 220 * t) * 8000).astype("<i2").tobytes()


async def trickle(*parts: bytes, gate: asyncio.Event | None = None) -> AsyncIterator[bytes]:
    """The parts of an answer; with ``gate``, everything after the first waits for it."""
    for i, part in enumerate(parts):
        if i == 1 and gate is not None:
            await gate.wait()
        yield part


def group(
    handler: Handler,
    *urls: str,
    fallback: str = "",
    timeout_s: float = 5.0,
    response_format: str = "wav",
    api_key: str = "",
) -> RemoteTts:
    config = RemoteTtsConfig(
        name="box",
        base_url=urls[0] if urls else A,
        base_urls=list(urls[1:]),
        model="kokoro",
        voices=["af_bella"],
        prefix="box-",
        api_key=api_key,
        timeout_s=timeout_s,
        fallback=fallback,
        response_format=response_format,  # type: ignore[arg-type]
    )
    endpoints = EndpointSet("tts", "box", list(urls or [A]), api_key, retry_s=60)
    endpoints.probe = lambda url: False  # no network: health checks fail
    return RemoteTts(config, endpoints, transport=httpx.MockTransport(handler))


async def collect(g: RemoteTts, text: str = "Hello there.", **opts: Any) -> bytes:
    voice = g.voices["box-af_bella"]
    return b"".join([pcm async for pcm in g.stream(voice, text, SynthesisOptions(**opts))])


async def test_streams_wav_as_it_arrives_with_model_voice_speed_and_key() -> None:
    gate = asyncio.Event()
    seen: list[httpx.Request] = []
    audio = tone(1.0, 24000)

    async def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        body = trickle(wav_header(24000) + audio[:24000], audio[24000:], gate=gate)
        return httpx.Response(200, headers={"content-type": "audio/wav"}, content=body)

    g = group(handler, api_key="s3cret")
    stream = g.stream(g.voices["box-af_bella"], "Hello there.", SynthesisOptions(speed=1.5))
    first = await asyncio.wait_for(anext(stream), 5)  # before the server finished
    assert len(first) == 24000
    gate.set()
    rest = b"".join([pcm async for pcm in stream])
    assert first + rest == audio
    body = json.loads(seen[0].content)
    assert body == {
        "model": "kokoro",
        "input": "Hello there.",
        "voice": "af_bella",
        "response_format": "wav",
        "speed": 1.5,
    }
    assert seen[0].headers["authorization"] == "Bearer s3cret"
    assert str(seen[0].url) == f"{A}/audio/speech"
    await g.close()


async def test_wav_at_another_rate_or_in_stereo_comes_out_at_the_voice_rate() -> None:
    mono = tone(0.5, 16000)
    stereo = np.repeat(np.frombuffer(mono, "<i2"), 2).tobytes()
    header = bytearray(wav_header(16000))
    header[22:24] = (2).to_bytes(2, "little")  # channels
    header[32:34] = (4).to_bytes(2, "little")  # block align

    async def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, content=bytes(header) + stereo)

    g = group(handler)
    pcm = await collect(g)
    assert abs(len(pcm) / 2 - 12000) < 50  # 0.5 s at the voice's 24 kHz
    await g.close()


async def test_raw_pcm_and_volume() -> None:
    audio = tone(0.2, 24000)

    async def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, headers={"content-type": "audio/pcm"}, content=audio)

    g = group(handler, response_format="pcm")
    quiet = await collect(g, volume=0.5)
    assert len(quiet) == len(audio)
    ratio = np.abs(np.frombuffer(quiet, "<i2")).max() / np.abs(np.frombuffer(audio, "<i2")).max()
    assert 0.45 < ratio < 0.55
    await g.close()


async def test_a_failing_endpoint_moves_the_sentence_to_the_next() -> None:
    async def handler(request: httpx.Request) -> httpx.Response:
        if request.url.host == "a.lan":
            return httpx.Response(500, json={"error": "out of memory"})
        return httpx.Response(200, content=wav_header(24000) + tone(0.1, 24000))

    g = group(handler, A, B)
    assert await collect(g)
    assert [e.healthy for e in g.endpoints.endpoints] == [False, True]
    assert "answered 500" in g.endpoints.endpoints[0].last_error
    await g.close()


@pytest.mark.parametrize(
    ("answer", "reason"),
    [
        (httpx.Response(200, content=b"<html>surprise</html>"), "garbage"),
        (httpx.Response(200, json={"text": "not audio"}), "garbage"),
        (httpx.Response(200, content=b"RIFF\x00\x00\x00\x00WAVEdata\x00\x00\x00\x00"), "garbage"),
        (httpx.Response(503, text="busy"), "status"),
    ],
)
async def test_garbage_and_errors_fall_back_counted_by_reason(
    answer: httpx.Response, reason: str
) -> None:
    async def handler(request: httpx.Request) -> httpx.Response:
        return answer

    g = group(handler, fallback=LOCAL)
    with pytest.raises(SpeakLocally) as info:
        await collect(g)
    assert info.value.voice == LOCAL and info.value.reason == reason
    assert g.endpoints.fallbacks[reason] == 1
    await g.close()


async def test_without_a_fallback_the_error_is_typed() -> None:
    async def handler(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("refused", request=request)

    g = group(handler)
    with pytest.raises(RemoteUnavailable, match="no fallback.*refused"):
        await collect(g)
    await g.close()


async def test_a_hanging_server_is_an_error_within_the_timeout() -> None:
    async def silent(request: httpx.Request) -> httpx.Response:
        await asyncio.sleep(30)
        raise AssertionError("not reached")

    async def stalls(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, content=trickle(wav_header(24000), b"", gate=asyncio.Event()))

    for handler in (silent, stalls):
        g = group(handler, timeout_s=0.5)
        began = time.monotonic()
        with pytest.raises(RemoteUnavailable, match="in time"):
            await collect(g)
        assert time.monotonic() - began < 2
        await g.close()


async def test_a_flood_is_cut_off(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(remote_module, "MAX_SENTENCE_S", 0.5)

    pieces = [wav_header(24000)] + [tone(0.2, 24000)] * 10

    async def handler(request: httpx.Request) -> httpx.Response:
        if request.url.host == "a.lan":
            return httpx.Response(200, content=trickle(*pieces))
        return httpx.Response(200, content=b"".join(pieces))

    g = group(handler, fallback=LOCAL)
    with pytest.raises(RemoteUnavailable, match="broke off.*more than 0.5 s"):
        await collect(g)  # audio went out already: no fallback mid-sentence
    await g.close()
    at_once = group(handler, B, fallback=LOCAL)
    with pytest.raises(SpeakLocally, match="more than 0.5 s"):
        await collect(at_once)  # nothing went out yet: the fallback speaks
    await at_once.close()


async def test_a_dead_endpoint_is_skipped_until_it_answers_a_health_check() -> None:
    calls: list[str] = []

    async def handler(request: httpx.Request) -> httpx.Response:
        calls.append(str(request.url.host))
        raise httpx.ConnectError("refused", request=request)

    g = group(handler, fallback=LOCAL)
    for _ in range(3):
        with pytest.raises(SpeakLocally):
            await collect(g)
    assert calls == ["a.lan"]  # later requests went straight to the fallback
    assert g.endpoints.fallbacks == {"connect": 1, "down": 2}
    await g.close()


# ------------------------------------------------------------------ store and config


def test_remote_voices_are_listed_found_and_protected(tmp_path: Path) -> None:
    store = VoiceStore(tmp_path / "voices")
    (tmp_path / "voices").mkdir()
    config = RemoteTtsConfig(name="box", base_url=A, voices=["af_bella"], prefix="box-")
    store.set_remote(voice_infos(config))
    names = [v.name for v in store.list()]
    assert "box-af_bella" in names and LOCAL in names
    voice = store.get("box-af_bella")
    assert voice.remote is not None and voice.remote.voice == "af_bella"
    assert voice.describe()["remote"] == "box"
    assert store.lookup("box-af_bella") is voice
    assert store.for_language("en", "box-af_bella") == "box-af_bella"
    with pytest.raises(Exception, match="already exists"):
        store.check_new_name("box-af_bella")
    with pytest.raises(InvalidRequest, match="remote"):
        store.update("box-af_bella", "x", {})
    clash = RemoteTtsConfig(name="box", base_url=A, voices=[LOCAL])
    with pytest.raises(InvalidVoice, match="prefix"):
        store.set_remote(voice_infos(clash))
    store.set_remote([])
    assert store.find("box-af_bella") is None


def test_config_of_remote_voices() -> None:
    config = parse_config(
        "tts:\n  remote:\n    - name: box\n      base_url: http://a.lan/v1\n"
        "      voices: [af_bella, am_adam]\n      prefix: k-\n      fallback: en_US-joe-medium\n"
    )
    (r,) = config.tts.remote
    assert r.local_names() == {"k-af_bella": "af_bella", "k-am_adam": "am_adam"}
    assert (r.model, r.response_format, r.sample_rate, r.timeout_s) == ("tts-1", "wav", 24000, 30)
    bad = {
        "      voices: [x]\n": "tts.remote.0.base_url: must be set",
        "      base_url: http://a.lan/v1\n": "tts.remote.0.voices: must name",
        "      base_url: http://a.lan/v1\n      voices: [x]\n      fallback: x\n": "local voice",
        "      base_url: ftp://a\n      voices: [x]\n": "must be a URL",
        "      base_url: http://a.lan/v1\n      voices: ['a b']\n": "voice name",
    }
    for body, problem in bad.items():
        with pytest.raises(ConfigError, match=problem):
            parse_config(f"tts:\n  remote:\n    - name: box\n{body}")
    twice = "    - name: box\n      base_url: http://a.lan/v1\n      voices: [x]\n"
    with pytest.raises(ConfigError, match="unique"):
        parse_config(f"tts:\n  remote:\n{twice}{twice.replace('box', 'other')}")


# ------------------------------------------------------------------ the TTS service


def service(tmp_path: Path, g: RemoteTts, cache: bool = True) -> tuple[TtsService, FakeTts]:
    store = VoiceStore(tmp_path / "voices")
    store.set_remote(list(g.voices.values()))
    local = FakeTts()
    tts = TtsService(
        MixedTts(local, [g]),
        store,
        WorkerPool("tts-test", 1, 4),
        TtsCache(tmp_path / "cache", 10_000_000) if cache else None,
        LOCAL,
        0.0,
        10_000,
    )
    return tts, local


async def test_the_service_streams_caches_and_falls_back_uncached(tmp_path: Path) -> None:
    up = True
    requests = 0

    async def handler(request: httpx.Request) -> httpx.Response:
        nonlocal requests
        requests += 1
        if not up:
            raise httpx.ConnectError("refused", request=request)
        return httpx.Response(200, content=wav_header(24000) + tone(0.3, 24000))

    g = group(handler, fallback=LOCAL)
    tts, local = service(tmp_path, g)
    options = SynthesisOptions(voice="box-af_bella")
    try:
        blocks = [
            b
            async for b in tts.stream_cached(
                "The first sentence is here. And this is the second one.", options
            )
        ]
        assert {b.rate for b in blocks} == {24000} and not any(b.fallback for b in blocks)
        assert requests == 2 and local.spoken == []  # one request per sentence
        again = [
            b
            async for b in tts.stream_cached(
                "The first sentence is here. And this is the second one.", options
            )
        ]
        assert requests == 2 and b"".join(b.pcm for b in again) == b"".join(
            b.pcm for b in blocks
        )  # from the cache
        up = False
        spoken = [b async for b in tts.stream_cached("Three.", options)]
        assert spoken and all(b.fallback for b in spoken) and {b.rate for b in spoken} == {24000}
        assert [s.voice for s in local.spoken] == [LOCAL]
        up = True
        g.endpoints.endpoints[0].healthy = True  # as a health check would find it
        fresh = [b async for b in tts.stream_cached("Three.", options)]
        assert not any(b.fallback for b in fresh)  # the fallback's audio was not cached
        wav = await tts.synthesize("Four.", options, "wav")
        assert wav.startswith(b"RIFF")
        at_16k = [
            b
            async for b in tts.stream(
                "Five.", SynthesisOptions(voice="box-af_bella", sample_rate=16000)
            )
        ]
        assert abs(sum(len(b.pcm) for b in at_16k) / 2 - 4800) < 50
    finally:
        tts.pool.close()
        await g.close()


async def test_the_service_without_fallback_raises_before_any_audio(tmp_path: Path) -> None:
    async def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(500, text="no")

    g = group(handler)
    tts, _ = service(tmp_path, g, cache=False)
    try:
        with pytest.raises(RemoteUnavailable):
            _ = [b async for b in tts.stream("Hello.", SynthesisOptions(voice="box-af_bella"))]
    finally:
        tts.pool.close()
        await g.close()


async def test_mixed_engine_keeps_local_voices_local(tmp_path: Path) -> None:
    async def handler(request: httpx.Request) -> httpx.Response:
        raise AssertionError("a local voice went remote")

    g = group(handler)
    tts, local = service(tmp_path, g, cache=False)
    try:
        blocks = [b async for b in tts.stream("Hello.", SynthesisOptions())]
        assert blocks and [s.voice for s in local.spoken] == [LOCAL]
        assert tts.engine.endpoints == [g.endpoints]  # type: ignore[attr-defined]
        with pytest.raises(InvalidRequest):
            tts.engine.synthesize(g.voices["box-af_bella"], "x", SynthesisOptions())
    finally:
        tts.pool.close()
        await g.close()
