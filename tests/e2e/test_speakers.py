"""Speaker verification end to end: enroll with the CLI, verify over Willow's ``voice_auth``.

A real ``hearth serve`` and the real encoder. The enrolled person is the bundled Piper
voice; the stranger is eSpeak NG (Debian's ``espeak-ng``, installed by ``make test``).
Uploads come as a Willow device sends them: raw PCM in 1024-byte pieces, paced in real
time, with the firmware's ``x-audio-*`` headers.
"""

from __future__ import annotations

import json
import re
import shutil
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import numpy as np
import pytest

from daemon.audio.pcm import RATE, resample_pcm
from tests.daemon import Daemon
from tests.helpers import PCM_HEADERS, assert_heard, paced, silence, wav

pytestmark = pytest.mark.e2e

ENROLL = (
    "The quick brown fox jumps over the lazy dog.",
    "Please remind me to water the plants on Sunday.",
    "What is the weather going to be like this weekend?",
)
COMMAND = "Turn on the kitchen lights."


def hearth(daemon: Daemon, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "daemon.cli", "--config", str(daemon.config_path), *args],
        capture_output=True,
        text=True,
        timeout=300,
    )


def upload(daemon: Daemon, samples: np.ndarray) -> httpx.Response:
    pcm = np.concatenate([samples, silence(0.3)]).astype("<i2").tobytes()
    return httpx.post(
        f"{daemon.url}/api/willow?voice_auth=true",
        content=paced(pcm),
        headers=PCM_HEADERS,
        timeout=60,
    )


def espeak(text: str) -> np.ndarray:
    if shutil.which("espeak-ng") is None:
        pytest.skip("espeak-ng is not installed (make test installs it as root)")
    out = subprocess.run(
        ["espeak-ng", "-v", "en-us", "--stdout", text], capture_output=True, check=True
    ).stdout
    return np.frombuffer(resample_pcm(out[44:], 22050, RATE), dtype="<i2").copy()


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory, speak) -> Iterator[Daemon]:
    work = tmp_path_factory.mktemp("speakers")
    running = Daemon(work)
    files = []
    for i, text in enumerate(ENROLL):
        path = work / f"take{i}.wav"
        path.write_bytes(wav(speak(text)))
        files.append(str(path))
    done = hearth(running, "speakers", "enroll", "Joe", *files)
    assert done.returncode == 0, done.stderr
    assert "enrolled speaker Joe from 3 recording(s)" in done.stdout
    with running:
        yield running


def test_the_enrolled_voice_is_verified(daemon, kitchen):
    resp = upload(daemon, kitchen)
    assert resp.status_code == 200, resp.text
    body = resp.json()
    assert body["speaker_status"] == "I heard Joe say:"
    assert list(body["voice_auth"]) == ["Joe"] and float(body["voice_auth"]["Joe"]) >= 0.8
    assert_heard(body["text"], COMMAND, "kitchen")
    assert {"infer_time", "infer_speedup", "audio_duration", "language"} <= set(body)


def test_another_voice_is_refused_406(daemon):
    resp = upload(daemon, espeak(COMMAND))
    assert resp.status_code == 406
    assert resp.json()["code"] == "voice-not-authorized"


def test_silence_is_refused_406(daemon):
    assert upload(daemon, silence(1.0)).status_code == 406


def test_the_store_is_private_and_the_cli_manages_it(daemon, kitchen):
    folder = Path(daemon.workdir) / "state" / "speakers"
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    (path,) = folder.glob("*.json")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    # Embeddings are never shown or logged.
    shown = daemon.log + hearth(daemon, "speakers", "list").stdout
    assert "embedding" not in shown and not re.search(r"\d\.\d{5}", shown)

    listed = json.loads(hearth(daemon, "speakers", "list", "--json").stdout)
    assert [(s["name"], s["takes"]) for s in listed] == [("Joe", 3)]
    assert hearth(daemon, "speakers", "rename", "Joe", "Joseph").returncode == 0
    resp = upload(daemon, kitchen)  # the daemon reads the store afresh
    assert resp.status_code == 200 and resp.json()["speaker_status"] == "I heard Joseph say:"

    assert hearth(daemon, "speakers", "remove", "Joseph").returncode == 0
    assert not list(folder.glob("*.json"))  # the embedding is gone
    refused = upload(daemon, kitchen)  # nobody enrolled: closed, as WIS
    assert refused.status_code == 406
    gone = hearth(daemon, "speakers", "remove", "Joseph")
    assert gone.returncode == 1 and "unknown-speaker" in gone.stderr


def test_the_http_api_enrolls_lists_renames_and_removes(daemon, kitchen):
    takes = [("files", (p.name, p.read_bytes(), "audio/wav")) for p in sorted(
        Path(daemon.workdir).glob("take*.wav"))]  # fmt: skip
    api = f"{daemon.url}/api/speakers"
    made = httpx.post(f"{api}/Ann", files=takes, timeout=120)
    assert made.status_code == 201, made.text
    assert made.json()["name"] == "Ann" and made.json()["takes"] == 3
    listed = httpx.get(api).json()["speakers"]
    assert [s["name"] for s in listed] == ["Ann"] and "embedding" not in listed[0]
    assert upload(daemon, kitchen).json()["speaker_status"] == "I heard Ann say:"

    renamed = httpx.patch(f"{api}/Ann", json={"new_name": "Annie"})
    assert renamed.status_code == 200 and renamed.json()["name"] == "Annie"
    assert httpx.delete(f"{api}/Annie").status_code == 204
    assert httpx.get(api).json()["speakers"] == []
    missing = httpx.delete(f"{api}/Annie")
    assert missing.status_code == 404 and missing.json()["code"] == "unknown-speaker"

    silent = [("files", ("quiet.wav", wav(silence(2.0)), "audio/wav"))]
    refused = httpx.post(f"{api}/Nobody", files=silent, timeout=60)
    assert refused.status_code == 400 and refused.json()["code"] == "invalid-audio"
    bad = httpx.post(f"{api}/..%2Fetc", files=takes, timeout=60)
    assert bad.status_code in (400, 404)


def test_a_custom_voices_takes_enroll_its_speaker(daemon, speak, kitchen):
    # Takes recorded for a custom voice (hearth voices enroll) are 22,050 Hz WAVs.
    wavs = Path(daemon.workdir) / "state" / "enroll" / "joe" / "wavs"
    wavs.mkdir(parents=True)
    for i, text in enumerate(ENROLL):
        pcm = resample_pcm(speak(text).astype("<i2").tobytes(), RATE, 22050)
        (wavs / f"{i + 1:04d}.wav").write_bytes(wav(np.frombuffer(pcm, "<i2"), 22050))
    done = hearth(daemon, "speakers", "enroll", "Jo", "--from-voice", "joe")
    assert done.returncode == 0, done.stderr
    assert "from 3 recording(s)" in done.stdout
    assert upload(daemon, kitchen).json()["speaker_status"] == "I heard Jo say:"
    assert hearth(daemon, "speakers", "remove", "Jo").returncode == 0
    none = hearth(daemon, "speakers", "enroll", "Jo", "--from-voice", "nobody")
    assert none.returncode == 1 and "no enrollment takes" in none.stderr


def test_verbose_json_names_the_speaker(daemon, kitchen):
    from openai import OpenAI

    files = [str(p) for p in sorted(Path(daemon.workdir).glob("take*.wav"))]
    assert hearth(daemon, "speakers", "enroll", "Joe", *files).returncode == 0
    client = OpenAI(base_url=f"{daemon.url}/v1", api_key="unused", max_retries=0)

    def transcribe(samples: np.ndarray, fmt: str) -> object:
        return client.audio.transcriptions.create(
            model="whisper-1", file=("a.wav", wav(samples)), response_format=fmt
        )

    joe = transcribe(kitchen, "verbose_json")
    assert joe.model_extra["speaker"] == "Joe"
    assert_heard(joe.text, COMMAND, "kitchen")
    stranger = transcribe(espeak(COMMAND), "verbose_json")
    assert stranger.model_extra["speaker"] is None
    assert "speaker" not in (transcribe(kitchen, "json").model_extra or {})
    assert hearth(daemon, "speakers", "remove", "Joe").returncode == 0
    assert "speaker" not in (transcribe(kitchen, "verbose_json").model_extra or {})


async def test_a_wyoming_transcript_names_the_speaker(daemon, kitchen):
    """Home Assistant's chunking (10 ms, 320 bytes) at real time; the extra field."""
    import asyncio

    from wyoming.asr import Transcribe
    from wyoming.audio import AudioChunk, AudioStart, AudioStop
    from wyoming.client import AsyncTcpClient

    files = [str(p) for p in sorted(Path(daemon.workdir).glob("take*.wav"))]
    assert hearth(daemon, "speakers", "enroll", "Joe", *files).returncode == 0

    async def transcript(samples: np.ndarray) -> dict:
        pcm = np.concatenate([samples, silence(0.8)]).astype("<i2").tobytes()
        async with AsyncTcpClient("127.0.0.1", daemon.wyoming_port) as client:
            await client.write_event(Transcribe().event())
            await client.write_event(AudioStart(rate=RATE, width=2, channels=1).event())
            began = time.monotonic()
            for i in range(0, len(pcm), 320):
                chunk = AudioChunk(rate=RATE, width=2, channels=1, audio=pcm[i : i + 320])
                await client.write_event(chunk.event())
                await asyncio.sleep(max(0.0, began + (i + 320) / (RATE * 2) - time.monotonic()))
            await client.write_event(AudioStop().event())
            while True:
                event = await asyncio.wait_for(client.read_event(), 60)
                assert event is not None
                if event.type == "transcript":
                    return dict(event.data)

    joe = await transcript(kitchen)
    assert joe["speaker"] == "Joe"
    assert_heard(joe["text"], COMMAND, "kitchen")
    assert "speaker" not in await transcript(espeak(COMMAND))
    assert hearth(daemon, "speakers", "remove", "Joe").returncode == 0


@pytest.fixture(scope="module")
def gated(tmp_path_factory: pytest.TempPathFactory, speak) -> Iterator[Daemon]:
    """A daemon whose household gate is closed to voices nobody enrolled."""
    work = tmp_path_factory.mktemp("speakers-gate")
    extra = (
        "speakers:\n  require: known\n"
        "webrtc:\n  addresses: [127.0.0.1]\n  port_min: 21200\n  port_max: 21299\n"
    )
    running = Daemon(work, extra)
    files = []
    for i, text in enumerate(ENROLL):
        path = work / f"take{i}.wav"
        path.write_bytes(wav(speak(text)))
        files.append(str(path))
    assert hearth(running, "speakers", "enroll", "Joe", *files).returncode == 0
    with running:
        yield running


async def test_the_household_gate_in_a_hands_free_webrtc_session(gated, kitchen):
    """An enrolled voice is heard and named; a stranger is set aside, and said so."""
    from tests.webrtc_client import RtcClient

    stranger = espeak("Open the garage door.")
    client = await RtcClient(gated.url).connect()
    try:
        client.send("listen")
        assert (await client.expect("state"))["obj"]["mode"] == "hands-free"
        await client.speak(np.concatenate([silence(0.3), kitchen, silence(2.0)]))
        infer = await client.expect("infer")
        assert infer["obj"]["speaker"] == "Joe"
        assert_heard(infer["obj"]["text"], COMMAND, "kitchen")
        await client.speak(np.concatenate([stranger, silence(2.0)]))
        ignored = await client.expect("ignored")
        assert ignored["obj"]["reason"] == "unknown-speaker"
        assert ignored["obj"]["speaker"] is None and ignored["obj"]["text"]
        # The stranger's words never reached the client as a transcript.
        assert [m["type"] for m in client.received].count("infer") == 1
        # Joe is still heard after it.
        await client.speak(np.concatenate([kitchen, silence(2.0)]))
        again = await client.expect("infer")
        assert again["obj"]["speaker"] == "Joe"
    finally:
        await client.close()
