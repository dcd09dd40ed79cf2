"""Remote voices end to end: an edge ``hearth serve`` (B) whose voice ``a-en_US-joe-medium``
is spoken by a second ``hearth serve`` (A) over ``/v1/audio/speech`` on loopback, beside
servers that answer garbage, fail or hang. A is killed mid-run and started again."""

from __future__ import annotations

import asyncio
import json
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator

import httpx
import pytest
from wyoming.client import AsyncTcpClient
from wyoming.info import Describe

from tests.daemon import Daemon, heard, synthesize
from tests.helpers import assert_heard
from tests.remote_servers import BadServer

pytestmark = pytest.mark.e2e
REMOTE = "a-en_US-joe-medium"
STRICT = "strict-en_US-joe-medium"
BAD_TIMEOUT_S = 2.0
BAD_MODES = ("garbage", "500", "hang")


@pytest.fixture(scope="module")
def bad_server() -> Iterator[BadServer]:
    with BadServer() as server:
        yield server


@pytest.fixture(scope="module")
def hearth_a(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    """The box that speaks (its cache off: every request reaches its voice)."""
    extra = "tts:\n  cache:\n    enabled: false\n"
    yield from Daemon(tmp_path_factory.mktemp("hearth-a"), extra).serve()


def _group(name: str, url: str, voice: str, fallback: str = "", timeout_s: float = 20) -> str:
    return (
        f"    - name: '{name}'\n      base_url: {url}\n      voices: [{voice}]\n"
        f"      prefix: {name}-\n      timeout_s: {timeout_s}\n      retry_s: 0.3\n"
        f"      fallback: '{fallback}'\n"
    )


@pytest.fixture(scope="module")
def edge(
    tmp_path_factory: pytest.TempPathFactory, hearth_a: Daemon, bad_server: BadServer
) -> Iterator[Daemon]:
    """The edge: voices of A (one with a local fallback, one without) and bad servers."""
    a = f"{hearth_a.url}/v1"
    extra = (
        "tts:\n  remote:\n"
        + _group("a", a, "en_US-joe-medium", fallback="en_US-joe-medium")
        + _group("strict", a, "en_US-joe-medium")
        + "".join(
            _group(mode, bad_server.url(mode), "x", timeout_s=BAD_TIMEOUT_S) for mode in BAD_MODES
        )
        + f"llm:\n  backend: remote\n  remote:\n    base_url: {a}\n"
        + "limits:\n  request_timeout_s: 30\n"
    )
    yield from Daemon(tmp_path_factory.mktemp("edge"), extra).serve()


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


def sent(daemon: Daemon, group: str) -> float:
    return metric(daemon, "hearth_remote_requests_total", kind="tts", model=group)


def fallbacks(daemon: Daemon, group: str) -> float:
    return metric(daemon, "hearth_remote_fallbacks_total", kind="tts", model=group)


async def test_remote_voices_are_listed_everywhere(edge: Daemon) -> None:
    async with AsyncTcpClient("127.0.0.1", edge.wyoming_port) as c:
        await c.write_event(Describe().event())
        info = await asyncio.wait_for(c.read_event(), 30)
    assert info is not None and info.type == "info"
    voices = {v["name"] for program in info.data["tts"] for v in program["voices"]}
    assert {REMOTE, STRICT, "en_US-joe-medium", "garbage-x"} <= voices
    models = httpx.get(f"{edge.url}/v1/models", timeout=10).json()["data"]
    assert {"id": REMOTE, "owned_by": "hearth:a"}.items() <= next(
        m for m in models if m["id"] == REMOTE
    ).items()
    speakers = httpx.get(f"{edge.url}/api/speaker", timeout=10).json()["speakers"]
    assert REMOTE in speakers
    listed = httpx.get(f"{edge.url}/api/voices", timeout=10).json()["voices"]
    assert next(v for v in listed if v["name"] == REMOTE)["remote"] == "a"


async def test_wyoming_speaks_through_the_remote_voice(edge: Daemon) -> None:
    before = sent(edge, "a")
    events, rate, pcm = await synthesize(edge, "Turn on the kitchen lights.", REMOTE)
    assert events[-1].type == "audio-stop", events
    assert rate == 24000 and len(pcm) > rate  # more than half a second of speech
    assert sent(edge, "a") == before + 1
    assert_heard(heard(edge, pcm, rate), "Turn on the kitchen lights.", "kitchen")
    # The same text again comes from the edge's cache: A is not asked.
    _, _, again = await synthesize(edge, "Turn on the kitchen lights.", REMOTE)
    assert again == pcm and sent(edge, "a") == before + 1


def test_openai_speech_through_the_remote_voice(edge: Daemon) -> None:
    resp = httpx.post(
        f"{edge.url}/v1/audio/speech",
        json={"input": "Good morning.", "voice": REMOTE, "response_format": "wav"},
        timeout=60,
    )
    assert resp.status_code == 200, resp.text
    assert resp.content.startswith(b"RIFF") and len(resp.content) > 24000


@pytest.mark.parametrize("mode", BAD_MODES)
async def test_a_bad_remote_is_a_clear_error_in_time(edge: Daemon, mode: str) -> None:
    began = time.monotonic()
    events, _, _ = await synthesize(edge, f"Hello from the {mode} server.", f"{mode}-x")
    assert events[-1].type == "error" and events[-1].data["code"] == "remote-unavailable"
    assert time.monotonic() - began < BAD_TIMEOUT_S + 5
    began = time.monotonic()
    resp = httpx.post(
        f"{edge.url}/v1/audio/speech",
        json={"input": "Hello again.", "voice": f"{mode}-x", "response_format": "wav"},
        timeout=30,
    )
    assert resp.status_code == 502 and "remote-unavailable" in resp.text, resp.text
    assert time.monotonic() - began < BAD_TIMEOUT_S + 5
    # Nothing else broke: a local voice speaks.
    events, _, pcm = await synthesize(edge, "Still here.", "en_US-joe-medium")
    assert events[-1].type == "audio-stop" and pcm


def test_check_probes_each_remote_voice_endpoint(edge: Daemon) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "daemon.cli", "--config", str(edge.config_path)]
        + ["check", "--no-load", "--json"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    out = json.loads(result.stdout)
    a = out["models"]["tts:a"]
    assert a["endpoints"][0]["up"] is True and "en_US-joe-medium" in a["endpoints"][0]["models"]
    assert a["voices"] == ["en_US-joe-medium"] and "fallback: en_US-joe-medium" in a["remote"]
    assert out["models"]["tts:500"]["endpoints"][0]["up"] is False
    # A remote with no endpoint up and no fallback is a problem: exit code 1.
    assert result.returncode == 1 and any("tts:500" in p for p in out["problems"])


async def test_a_killed_remote_falls_back_and_is_used_again_when_back(
    edge: Daemon, hearth_a: Daemon
) -> None:
    hearth_a.stop(signal.SIGKILL)
    try:
        for text in ("Open the garage door.", "Open the garage door."):
            events, rate, pcm = await synthesize(edge, text, REMOTE)
            assert events[-1].type == "audio-stop", events  # spoken by the local voice
            assert rate == 24000
            assert_heard(heard(edge, pcm, rate), text, "garage")
        assert fallbacks(edge, "a") >= 2  # the fallback's audio was not cached
        assert metric(edge, "hearth_remote_endpoint_up", kind="tts", model="a") == 0
        # No fallback: a clear error, not a hang.
        began = time.monotonic()
        events, _, _ = await synthesize(edge, "Anyone there?", STRICT)
        assert events[-1].data["code"] == "remote-unavailable", events
        assert time.monotonic() - began < 20
    finally:
        hearth_a.start()
    # The health check finds A again; then the voice goes back to it.
    deadline = time.monotonic() + 60
    while metric(edge, "hearth_remote_endpoint_up", kind="tts", model="a") != 1:
        assert time.monotonic() < deadline, "A never came back into use"
        time.sleep(0.2)
    before, fell_back = sent(edge, "a"), fallbacks(edge, "a")
    events, rate, pcm = await synthesize(edge, "Open the garage door.", REMOTE)
    assert events[-1].type == "audio-stop", events
    assert sent(edge, "a") == before + 1 and fallbacks(edge, "a") == fell_back
    assert_heard(heard(edge, pcm, rate), "Open the garage door.", "garage")
