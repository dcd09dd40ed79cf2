"""Models and voices by name, fetched once from a hub on loopback by a real daemon.

The loopback hub (tests/loopback_hub.py) speaks the routes of the Hugging Face hub
Hearth uses and serves real models installed here: the embedded tiny.en CTranslate2
folder as the repository of ``small.en`` (Systran/faster-whisper-small.en: the name
takes the real path through the name table, the weights stay small), and the bundled
Piper voice en_US-joe-medium as ``en_US-joe_copy-medium`` under rhasspy/piper-voices
with a voices.json (a name no package bundles, so it must be fetched). The daemons
reach nothing but 127.0.0.1.
"""

from __future__ import annotations

import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from daemon.engines.models import embedded_whisper
from tests.daemon import Daemon
from tests.helpers import assert_heard, free_port
from tests.loopback_hub import LoopbackHub, piper_voices, whisper_repo

pytestmark = pytest.mark.e2e
REPO = "Systran/faster-whisper-small.en"
VOICE = "en_US-joe_copy-medium"
KITCHEN = "Turn on the kitchen lights."
ONLINE = {"HF_HUB_OFFLINE": "0"}
STALL = 320 * 65536
"""Bytes sent before the hub stalls: whole reads of the fetcher, so all of them arrive."""


@pytest.fixture(scope="module")
def hub() -> Iterator[LoopbackHub]:
    with LoopbackHub() as running:
        whisper_repo(running, REPO)
        piper_voices(running, VOICE)
        yield running


def settings(hub_url: str, asr: bool = True) -> str:
    text = f"hub:\n  url: {hub_url}\n  timeout_s: 120\n"
    if asr:
        text += "asr:\n  default_model: small.en\n  models:\n    small.en:\n      path: small.en\n"
    return text


def health(daemon: Daemon) -> dict[str, Any]:
    body: dict[str, Any] = httpx.get(f"{daemon.url}/healthz", timeout=10).json()
    return body


def download(daemon: Daemon, name: str) -> dict[str, Any]:
    return next(d for d in health(daemon)["downloads"] if d["name"] == name)


def engine(daemon: Daemon, name: str) -> dict[str, Any]:
    return next(e for e in health(daemon)["engines"] if e["name"] == name)


def speech(daemon: Daemon, voice: str = "alloy") -> httpx.Response:
    body = {"model": "tts-1", "input": KITCHEN, "voice": voice, "response_format": "wav"}
    return httpx.post(f"{daemon.url}/v1/audio/speech", json=body, timeout=120)


def transcribe(daemon: Daemon, audio: bytes, model: str) -> str:
    reply = httpx.post(
        f"{daemon.url}/v1/audio/transcriptions",
        files={"file": ("kitchen.wav", audio, "audio/wav")},
        data={"model": model},
        timeout=120,
    )
    assert reply.status_code == 200, reply.text
    text: str = reply.json()["text"]
    return text


def wait_until(check: Any, timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, "never happened"
        time.sleep(0.1)


def test_a_whisper_model_by_name_is_fetched_once_resumed_and_switched_to(
    hub: LoopbackHub, tmp_path: Path
) -> None:
    size = len(hub.files[f"{REPO}/model.bin"].data)
    reached, release = hub.stall(REPO, "model.bin", after=STALL)
    daemon = Daemon(tmp_path, settings(hub.url), env=ONLINE)
    models = tmp_path / "state" / "models" / "asr"
    staging = models / ".small.en.partial"
    try:
        # 1. Ready at once: the embedded tiny.en serves small.en while it is fetched.
        daemon.start()
        assert reached.wait(120)
        # The folder's progress: the small files, then model.bin up to the stall.
        small_files = sum(
            len(f.data)
            for key, f in hub.files.items()
            if key.startswith(f"{REPO}/") and key.endswith((".json", ".txt"))
        )
        wait_until(lambda: download(daemon, "small.en")["done_bytes"] == small_files + STALL)
        fetching = download(daemon, "small.en")
        assert fetching["state"] == "fetching" and 0 < fetching["percent"] < 100
        assert fetching["total_bytes"] == sum(
            len(f.data) for k, f in hub.files.items() if k.startswith(REPO) and "README" not in k
        )
        serving = engine(daemon, "asr:small.en")
        assert serving["path"] == str(embedded_whisper("tiny.en"))
        assert "stand-in until small.en is fetched" in serving["reasons"]
        log = daemon.wait_for_log("Fetching asr small.en: ")
        assert "the embedded tiny.en serves it until it is fetched" in log
        # The half file is never where a model is looked for.
        assert not (models / "small.en").exists()
        assert (staging / "model.bin.partial").is_file()
        assert not (staging / "model.bin").exists()
        said = speech(daemon)
        assert said.status_code == 200, said.text
        assert_heard(transcribe(daemon, said.content, "small.en"), KITCHEN, "kitchen")
        # 2. Killed mid-download: the partial file stays.
        daemon.stop(signal.SIGKILL)
        release.set()
        partial = (staging / "model.bin.partial").stat().st_size
        assert 0 < partial <= STALL
        # 3. The next start resumes where it stopped (and once more after a cut).
        hub.cut(REPO, "model.bin", after=10_000_000)
        daemon.start()
        daemon.wait_for_log("Switched ASR model small.en from the embedded tiny.en", 300)
        assert [r.range for r in hub.gets("/model.bin")] == [
            "",
            f"bytes={partial}-",
            f"bytes={partial + 10_000_000}-",
        ]
        for name in ("config.json", "tokenizer.json", "vocabulary.txt"):
            assert len(hub.gets(f"/{name}")) == 1, name  # kept from the first start
        assert hub.gets("README.md") == []
        assert (models / "small.en" / "model.bin").stat().st_size == size
        assert not staging.exists()
        assert download(daemon, "small.en")["state"] == "done"
        switched = engine(daemon, "asr:small.en")
        assert switched["path"] == str(models / "small.en")
        assert not [r for r in switched["reasons"] if "stand-in" in r]
        assert "Fetched asr small.en" in daemon.log
        assert_heard(transcribe(daemon, said.content, "small.en"), KITCHEN, "kitchen")
        daemon.stop()
        assert daemon.returncode == 0 and "Traceback" not in daemon.output
        # 4. A second start fetches nothing.
        before = len(hub.requests)
        start = len(daemon.output)
        daemon.start()
        assert len(hub.requests) == before
        assert health(daemon)["downloads"] == []
        assert engine(daemon, "asr:small.en")["path"] == str(models / "small.en")
        daemon.stop()
        assert "not on disk yet" not in daemon.output[start:]
    finally:
        release.set()
        daemon.stop()


def test_a_voice_by_name_is_fetched_once_then_spoken(hub: LoopbackHub, tmp_path: Path) -> None:
    paths = piper_voices(hub, VOICE)
    hub.cut("rhasspy/piper-voices", paths["model"], after=5_000_000)
    with Daemon(tmp_path, settings(hub.url, asr=False), env=ONLINE) as daemon:
        before = len(hub.requests)
        said = speech(daemon, VOICE)
        assert said.status_code == 200, said.text
        assert_heard(transcribe(daemon, said.content, "tiny.en"), KITCHEN, "kitchen")
        folder = tmp_path / "state" / "voices" / VOICE
        assert sorted(p.name for p in folder.iterdir()) == sorted(
            ["MODEL_CARD", f"{VOICE}.onnx", f"{VOICE}.onnx.json", "voice.json"]
        )
        assert [r.range for r in hub.gets(paths["model"])] == ["", "bytes=5000000-"]
        for path in (paths["config"], paths["card"], "voices.json"):
            assert len(hub.gets(path)) == 1, path
        done = download(daemon, VOICE)
        assert done["state"] == "done" and done["kind"] == "voice"
        assert f"Fetched voice {VOICE}" in daemon.log
        # Fetched once: asked for again, it is on disk.
        requests = len(hub.requests)
        assert requests > before
        again = speech(daemon, VOICE)
        assert again.status_code == 200
        assert len(hub.requests) == requests
        voices = httpx.get(f"{daemon.url}/api/voices", timeout=10).json()
        assert VOICE in str(voices)


def test_a_default_voice_by_name_speaks_once_fetched(hub: LoopbackHub, tmp_path: Path) -> None:
    other = "en_US-joe_other-medium"
    paths = piper_voices(hub, other)
    reached, release = hub.stall("rhasspy/piper-voices", paths["model"], after=1_000_000)
    extra = settings(hub.url, asr=False) + f"tts:\n  default_voice: {other}\n"
    with Daemon(tmp_path, extra, env=ONLINE) as daemon:
        assert reached.wait(120)
        log = daemon.log
        assert (
            f"Default voice {other} is not on disk yet: the bundled en_US-joe-medium speaks"
        ) in log
        meanwhile = speech(daemon)  # no voice named: the default, the bundled one for now
        assert meanwhile.status_code == 200, meanwhile.text
        release.set()
        daemon.wait_for_log(
            f"Switched the default voice from the bundled en_US-joe-medium to {other}"
        )
        assert (tmp_path / "state" / "voices" / other / f"{other}.onnx").is_file()
        assert [r.range for r in hub.gets(paths["model"])] == ["", "bytes=1000000-"]
        said = speech(daemon)
        assert said.status_code == 200, said.text
        assert_heard(transcribe(daemon, said.content, "tiny.en"), KITCHEN, "kitchen")


def test_offline_names_what_is_missing_while_the_embedded_models_serve(tmp_path: Path) -> None:
    closed = f"http://127.0.0.1:{free_port()}"  # nothing listens: never the internet
    daemon = Daemon(tmp_path, settings(closed))  # HF_HUB_OFFLINE=1, as in the image
    with daemon:
        log = daemon.wait_for_log("could not be fetched")
        assert "ASR model small.en (small.en) could not be fetched" in log
        assert "HF_HUB_OFFLINE" in log and "hub.url" in log
        assert "The embedded tiny.en keeps serving it" in log
        failed = download(daemon, "small.en")
        assert failed["state"] == "failed" and "not on disk" in failed["error"]
        said = speech(daemon)
        assert said.status_code == 200, said.text
        assert_heard(transcribe(daemon, said.content, "small.en"), KITCHEN, "kitchen")
        missing = speech(daemon, VOICE)
        assert missing.status_code == 503
        assert f"voice '{VOICE}' is not on disk" in missing.text
        assert "unset HF_HUB_OFFLINE" in missing.text
    assert not any(Path(tmp_path / "state" / "voices").glob(f"*{VOICE}*"))
