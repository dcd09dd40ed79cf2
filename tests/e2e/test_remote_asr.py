"""Remote ASR models end to end: a real ``hearth serve`` whose models are decoded by
faster-whisper-server (an OpenAI-compatible server that is not Hearth) on loopback,
beside a local model, and by servers that misbehave. Each protocol (OpenAI, Wyoming,
Willow, WebRTC) transcribes through the remote model."""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
import sys
import time
from collections.abc import Iterator

import httpx
import numpy as np
import openai
import pytest
from wyoming.asr import Transcribe
from wyoming.audio import AudioChunk, AudioStart, AudioStop
from wyoming.client import AsyncTcpClient

from tests.daemon import Daemon
from tests.helpers import assert_heard, silence, wav
from tests.remote_servers import BadServer, WhisperServer
from tests.webrtc_client import RtcClient

pytestmark = pytest.mark.e2e
KITCHEN = "Turn on the kitchen lights."
BAD_TIMEOUT_S = 2.0


@pytest.fixture(scope="module")
def whisper_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[WhisperServer]:
    server = WhisperServer(tmp_path_factory.mktemp("fws")).start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def bad_server() -> Iterator[BadServer]:
    with BadServer() as server:
        yield server


def _remote(name: str, url: str, fallback: str = "", timeout_s: float = 20) -> str:
    return (
        f"    {name}:\n      backend: remote\n      fallback: '{fallback}'\n"
        f"      remote:\n        base_url: {url}\n        model: tiny.en\n"
        f"        timeout_s: {timeout_s}\n        retry_s: 0.3\n"
    )


@pytest.fixture(scope="module")
def daemon(tmp_path_factory, whisper_server, bad_server) -> Iterator[Daemon]:
    extra = (
        "asr:\n  default_model: tiny.en\n  models:\n    tiny.en: {}\n"
        + _remote("remote", whisper_server.base_url, fallback="tiny.en")
        + _remote("strict", whisper_server.base_url)
        + "".join(
            _remote(mode, bad_server.url(mode), timeout_s=BAD_TIMEOUT_S)
            for mode in ("garbage", "hang", "500", "huge")
        )
        + "limits:\n  request_timeout_s: 30\n"
        + "webrtc:\n  addresses: [127.0.0.1]\n  port_min: 22200\n  port_max: 22299\n"
    )
    yield from Daemon(tmp_path_factory.mktemp("remote-asr"), extra).serve()


@pytest.fixture(scope="module")
def client(daemon: Daemon) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{daemon.url}/v1", api_key="unused", max_retries=0, timeout=60)


@pytest.fixture(scope="module")
def kitchen_wav(kitchen) -> bytes:
    return wav(np.concatenate([silence(0.3), kitchen, silence(0.5)]))


def metric(daemon: Daemon, name: str, **labels: str) -> float:
    """The sum of the samples of /metrics with these labels (0 when absent)."""
    text = httpx.get(f"{daemon.url}/metrics", timeout=10).text
    total = 0.0
    for line in text.splitlines():
        if not line.startswith(name + "{"):
            continue
        found = dict(re.findall(r'(\w+)="([^"]*)"', line.split("}")[0]))
        if all(found.get(k) == v for k, v in labels.items()):
            total += float(line.rsplit(" ", 1)[1])
    return total


def sent(daemon: Daemon, model: str) -> float:
    return metric(daemon, "hearth_remote_requests_total", model=model)


async def wyoming_transcribe(daemon: Daemon, pcm: bytes, model: str) -> tuple[str, dict]:
    """(event type, data) of the first transcript or error for ``pcm``."""
    async with AsyncTcpClient("127.0.0.1", daemon.wyoming_port) as c:
        await c.write_event(Transcribe(name=model, language="en").event())
        await c.write_event(AudioStart(rate=16000, width=2, channels=1).event())
        for i in range(0, len(pcm), 3200):
            chunk = AudioChunk(rate=16000, width=2, channels=1, audio=pcm[i : i + 3200])
            await c.write_event(chunk.event())
        await c.write_event(AudioStop().event())
        while True:
            event = await asyncio.wait_for(c.read_event(), 60)
            assert event is not None, "connection closed"
            if event.type in ("transcript", "error"):
                return event.type, event.data


def test_openai_transcribes_through_the_remote_model(daemon, client, kitchen_wav):
    before = sent(daemon, "remote")
    result = client.audio.transcriptions.create(
        model="remote", file=("k.wav", kitchen_wav, "audio/wav")
    )
    assert_heard(result.text, KITCHEN, "kitchen")
    assert sent(daemon, "remote") == before + 1
    # The local model still answers beside it.
    local = client.audio.transcriptions.create(model="tiny.en", file=("k.wav", kitchen_wav))
    assert_heard(local.text, KITCHEN, "kitchen")


def test_openai_stream_and_timestamps_through_the_remote_model(client, kitchen_wav):
    events = list(
        client.audio.transcriptions.create(model="remote", file=("k.wav", kitchen_wav), stream=True)
    )
    done = [e for e in events if e.type == "transcript.text.done"]
    assert len(done) == 1 and events[-1] is done[0]
    assert_heard(done[0].text, KITCHEN, "kitchen")
    verbose = client.audio.transcriptions.create(
        model="remote", file=("k.wav", kitchen_wav), response_format="verbose_json"
    )
    assert verbose.segments and verbose.segments[0].end > verbose.segments[0].start
    assert verbose.language == "en"


async def test_wyoming_transcribes_through_the_remote_model(daemon, kitchen):
    before = sent(daemon, "remote")
    kind, data = await wyoming_transcribe(daemon, kitchen.tobytes(), "remote")
    assert kind == "transcript", data
    assert_heard(data["text"], KITCHEN, "kitchen")
    assert sent(daemon, "remote") > before


async def test_silence_stays_local_and_is_empty(daemon):
    before = sent(daemon, "remote")
    kind, data = await wyoming_transcribe(daemon, silence(1.5).tobytes(), "remote")
    assert (kind, data["text"]) == ("transcript", "")
    assert sent(daemon, "remote") == before  # VAD found no speech: nothing was sent


def test_willow_transcribes_through_the_remote_model(daemon, kitchen):
    resp = httpx.post(
        f"{daemon.url}/api/willow?model=remote",
        content=np.concatenate([silence(0.3), kitchen, silence(0.5)]).tobytes(),
        headers={
            "x-audio-codec": "pcm",
            "x-audio-sample-rate": "16000",
            "x-audio-bits": "16",
            "x-audio-channel": "1",
        },
        timeout=60,
    )
    assert resp.status_code == 200, resp.text
    assert_heard(resp.json()["text"], KITCHEN, "kitchen")


async def test_webrtc_transcribes_through_the_remote_model(
    daemon: Daemon, kitchen: np.ndarray
) -> None:
    before = sent(daemon, "remote")
    fallbacks = metric(daemon, "hearth_remote_fallbacks_total", model="remote")
    client = await RtcClient(daemon.url).connect()
    try:
        # Push to talk; the model is chosen at 'start' (one named at 'stop' is not used).
        client.send("start", model="remote")
        assert (await client.expect("state"))["obj"]["mode"] == "push-to-talk"
        await client.speak(np.concatenate([silence(0.2), kitchen, silence(0.4)]))
        client.send("stop")
        infer = await client.expect("infer")
        assert_heard(infer["obj"]["text"], KITCHEN, "kitchen")
    finally:
        await client.close()
    # Decoded by the server, not by the local fallback.
    assert sent(daemon, "remote") > before
    assert metric(daemon, "hearth_remote_fallbacks_total", model="remote") == fallbacks


@pytest.mark.parametrize("mode", ["garbage", "hang", "500", "huge"])
async def test_a_bad_remote_is_a_clear_error_in_time(daemon, client, kitchen, kitchen_wav, mode):
    began = time.monotonic()
    with pytest.raises(openai.APIStatusError) as info:
        client.audio.transcriptions.create(model=mode, file=("k.wav", kitchen_wav))
    assert info.value.status_code == 502
    assert "remote-unavailable" in info.value.response.text
    # Within the remote's timeout, and the upload's decode, with room for a slow CI box.
    assert time.monotonic() - began < BAD_TIMEOUT_S + 10
    kind, data = await wyoming_transcribe(daemon, kitchen.tobytes(), mode)
    assert kind == "error" and data["code"] == "remote-unavailable", data
    # Nothing else broke.
    ok = client.audio.transcriptions.create(model="remote", file=("k.wav", kitchen_wav))
    assert_heard(ok.text, KITCHEN, "kitchen")


def test_check_probes_each_endpoint(daemon, whisper_server, bad_server):
    result = subprocess.run(
        [sys.executable, "-m", "daemon.cli", "--config", str(daemon.config_path)]
        + ["check", "--no-load", "--json"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    models = json.loads(result.stdout)["models"]
    assert models["asr:remote"]["endpoints"][0]["up"] is True
    assert "fallback: tiny.en" in models["asr:remote"]["remote"]
    assert models["asr:500"]["endpoints"][0]["up"] is False
    # A remote with no endpoint up and no fallback is a problem: exit code 1.
    assert result.returncode == 1
    assert any("asr:500" in p for p in json.loads(result.stdout)["problems"])


def test_a_dead_remote_falls_back_and_is_used_again_when_back(
    daemon, client, whisper_server, kitchen_wav
):
    whisper_server.stop()
    try:
        for _ in range(2):
            result = client.audio.transcriptions.create(model="remote", file=("k.wav", kitchen_wav))
            assert_heard(result.text, KITCHEN, "kitchen")  # decoded by the local tiny.en
        assert metric(daemon, "hearth_remote_fallbacks_total", model="remote") >= 2
        assert metric(daemon, "hearth_remote_endpoint_up", model="remote") == 0
        # No fallback: a clear 502, not a hang.
        with pytest.raises(openai.APIStatusError) as info:
            client.audio.transcriptions.create(model="strict", file=("k.wav", kitchen_wav))
        assert info.value.status_code == 502
    finally:
        whisper_server.start()
    # The health check finds it again; then requests go back to it.
    deadline = time.monotonic() + 30
    while metric(daemon, "hearth_remote_endpoint_up", model="remote") != 1:
        assert time.monotonic() < deadline, "the remote never came back into use"
        time.sleep(0.2)
    fallbacks = metric(daemon, "hearth_remote_fallbacks_total", model="remote")
    before = sent(daemon, "remote")
    result = client.audio.transcriptions.create(model="remote", file=("k.wav", kitchen_wav))
    assert_heard(result.text, KITCHEN, "kitchen")
    assert sent(daemon, "remote") == before + 1
    assert metric(daemon, "hearth_remote_fallbacks_total", model="remote") == fallbacks
