"""A read-only state directory: speech is still served, and every write fails with
``storage-unwritable`` (HTTP 507) naming the path, never an unclear 500."""

from __future__ import annotations

import asyncio
import builtins
import errno
import io
import os
import wave
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from daemon.audio.pcm import AudioFormat
from daemon.engines.tts.base import SynthesisOptions
from daemon.engines.tts.cache import TtsCache
from daemon.engines.tts.service import TtsService
from daemon.errors import StorageUnwritable
from daemon.ops import tls
from daemon.ops.storage import unwritable
from daemon.speech.recording import save_recording
from daemon.voices.enroll import Enrollment
from daemon.voices.training import Training
from protocols.http.app import create_app
from protocols.http.willow import saved_audio
from tests.fakes import FakeEngines, FakeService, fake_config, fake_engines, utterance

WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_TRUNC


@pytest.fixture
def read_only(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Writes under ``tmp_path/state`` fail as on a read-only mount (tests run as root,
    where permission bits would not stop them)."""
    root = tmp_path / "state"
    root.mkdir()

    def inside(path: Any) -> bool:
        try:
            return Path(os.fsdecode(path)).absolute().is_relative_to(root)
        except (TypeError, ValueError):
            return False

    def refuse(path: Any) -> None:
        raise OSError(errno.EROFS, os.strerror(errno.EROFS), os.fsdecode(path))

    real_open, real_os_open = builtins.open, os.open
    real_mkdir, real_rename, real_replace = os.mkdir, os.rename, os.replace

    def guarded_open(file: Any, mode: str = "r", *args: Any, **kwargs: Any) -> Any:
        if not isinstance(file, int) and inside(file) and set(mode) & set("wax+"):
            refuse(file)
        return real_open(file, mode, *args, **kwargs)

    def guarded_os_open(path: Any, flags: int, *args: Any, **kwargs: Any) -> int:
        if flags & WRITE_FLAGS and inside(path):
            refuse(path)
        return real_os_open(path, flags, *args, **kwargs)

    def guarded_mkdir(path: Any, *args: Any, **kwargs: Any) -> None:
        if inside(path):
            refuse(path)
        real_mkdir(path, *args, **kwargs)

    def guarded_move(real: Any) -> Any:
        def move(src: Any, dst: Any, *args: Any, **kwargs: Any) -> None:
            if inside(dst) or inside(src):
                refuse(dst)
            real(src, dst, *args, **kwargs)

        return move

    monkeypatch.setattr(builtins, "open", guarded_open)
    monkeypatch.setattr(io, "open", guarded_open)
    monkeypatch.setattr(os, "open", guarded_os_open)
    monkeypatch.setattr(os, "mkdir", guarded_mkdir)
    monkeypatch.setattr(os, "rename", guarded_move(real_rename))
    monkeypatch.setattr(os, "replace", guarded_move(real_replace))
    return root


@pytest.fixture
def fakes(read_only: Path) -> Iterator[FakeEngines]:
    made = fake_engines(fake_config(read_only))
    yield made
    made.close()


@pytest.fixture
def client(fakes: FakeEngines) -> TestClient:
    return TestClient(create_app(FakeService(fakes.engines.config, fakes.engines)))


def assert_unwritable(resp: Any, root: Path) -> None:
    assert resp.status_code == 507, resp.text
    body = resp.json()
    error = body["error"] if isinstance(body.get("error"), dict) else body
    assert error["code"] == "storage-unwritable"
    assert str(root) in str(error.get("message") or error.get("detail"))


def take_wav() -> bytes:
    out = io.BytesIO()
    with wave.open(out, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(16000)
        w.writeframes(utterance(220.0).astype("<i2").tobytes())
    return out.getvalue()


def test_the_state_dir_is_reported_unwritable(read_only: Path, tmp_path: Path) -> None:
    problem = unwritable(read_only)
    assert problem is not None and str(read_only) in problem
    assert unwritable(tmp_path / "elsewhere") is None


def test_voice_import_is_a_507_naming_the_path(client: TestClient, read_only: Path) -> None:
    files = {"model": ("v.onnx", b"onnx"), "config": ("v.onnx.json", b"{}")}
    resp = client.post("/api/voices", data={"name": "grandpa"}, files=files)
    assert_unwritable(resp, read_only)


def test_an_enrollment_take_is_a_507(client: TestClient, read_only: Path) -> None:
    resp = client.put("/api/voices/alice/enrollment/takes/0", content=take_wav())
    assert_unwritable(resp, read_only)


def test_speech_is_still_served_uncached(
    fakes: FakeEngines, read_only: Path, caplog: pytest.LogCaptureFixture
) -> None:
    cache = TtsCache(read_only / "cache" / "tts", 1_000_000)
    assert any("cannot write" in r.getMessage() for r in caplog.records)
    tts = fakes.engines.tts
    assert isinstance(tts, TtsService)
    tts.cache = cache

    async def speak() -> bytes:
        async with asyncio.timeout(10):
            return await tts.synthesize("Dinner is ready.", SynthesisOptions(), "wav")

    assert asyncio.run(speak())[:4] == b"RIFF"
    assert asyncio.run(speak())[:4] == b"RIFF"


def test_training_tls_and_saved_audio_name_the_path(fakes: FakeEngines, read_only: Path) -> None:
    config = fakes.engines.config
    with pytest.raises(StorageUnwritable, match=str(read_only)):
        with Training(config)._exclusive():
            pass
    with pytest.raises(StorageUnwritable, match=str(read_only)):
        tls.certificate_files(config, ["127.0.0.1"])
    with pytest.raises(StorageUnwritable, match=str(read_only)):
        save_recording(saved_audio(config), "upload", AudioFormat(16000, 2, 1), [b"\x00" * 320])
    with pytest.raises(StorageUnwritable, match=str(read_only)):
        Enrollment(config, "alice").remove("0001")
