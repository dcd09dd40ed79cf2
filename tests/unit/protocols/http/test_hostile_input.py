"""Input a hostile LAN client sends to the HTTP API: each is refused with a 4xx and a
stable code before any response has begun, never a 200 and a broken body."""

from __future__ import annotations

import asyncio
import io
import logging
import wave
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from daemon.engines.tts.voices import check_name
from daemon.errors import InvalidRequest, InvalidVoice
from daemon.voices.enroll import Enrollment
from tests.fakes import TIME, FakeEngines, utterance


def code_of(resp: Any) -> str:
    body = resp.json()
    error = body["error"] if isinstance(body.get("error"), dict) else body
    return str(error.get("code"))


def wav_body(freq: float = 220.0) -> bytes:
    out = io.BytesIO()
    with wave.open(out, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(16000)
        w.writeframes(utterance(freq).astype("<i2").tobytes())
    return out.getvalue()


PCM = {"x-audio-codec": "pcm", "x-audio-sample-rate": "16000", "x-audio-bits": "16"}


@pytest.mark.parametrize("codec", ["pcm", "wav"])
@pytest.mark.parametrize(
    "bad",
    [
        {"x-audio-sample-rate": "0"},
        {"x-audio-channel": "0"},
        {"x-audio-bits": "0"},
        {"x-audio-sample-rate": "-16000"},
        {"x-audio-bits": "7"},
    ],
)
def test_impossible_willow_headers_are_refused_whatever_the_codec(
    client: TestClient, fakes: FakeEngines, codec: str, bad: dict[str, str]
) -> None:
    headers = PCM | {"x-audio-channel": "1", "x-audio-codec": codec} | bad
    body = wav_body() if codec == "wav" else utterance(220.0).astype("<i2").tobytes()
    resp = client.post("/api/willow", content=body, headers=headers)
    assert resp.status_code == 400, resp.text
    assert code_of(resp) == "invalid-audio"
    assert not fakes.asr["fake"].calls


@pytest.mark.parametrize("text", ["Hello\x00there", "bell\x07 ring", "escape\x1b[2J now"])
def test_control_characters_in_tts_text_are_a_400(
    client: TestClient, fakes: FakeEngines, text: str
) -> None:
    resp = client.get("/api/tts", params={"text": text, "nocache": "true"})
    assert resp.status_code == 400 and code_of(resp) == "invalid-text"
    resp = client.post("/v1/audio/speech", json={"model": "tts-1", "input": text})
    assert resp.status_code == 400 and code_of(resp) == "invalid-text"
    assert fakes.tts.spoken == []


def test_tts_text_with_newlines_is_spoken(client: TestClient) -> None:
    resp = client.post("/v1/audio/speech", json={"input": "One.\nTwo.", "response_format": "wav"})
    assert resp.status_code == 200 and resp.content[:4] == b"RIFF"


@pytest.mark.parametrize("name", ["abc\n", "abc\r\n", ".", "..", "-x", "a" * 65, "a/b"])
def test_voice_names_must_match_whole(name: str) -> None:
    with pytest.raises(InvalidVoice):
        check_name(name)


@pytest.mark.parametrize(
    "path", ["/api/voices/%2E", "/api/voices/%2E%2E", "/api/voices/abc%0A", "/api/voices/..%2Fx"]
)
def test_odd_voice_paths_are_not_found(client: TestClient, path: str) -> None:
    # %2E: what "curl --path-as-is /api/voices/." sends; without it, clients remove the
    # dot segment themselves and ask for the list (/api/voices/ redirects there).
    resp = client.get(path, follow_redirects=False)
    assert resp.status_code in (400, 404), (path, resp.status_code, resp.text)


@pytest.mark.parametrize("take", ["0001\n", "../x", "free", "0001.wav"])
def test_take_ids_must_match_whole(fakes: FakeEngines, take: str) -> None:
    enrollment = Enrollment(fakes.engines.config, "alice")
    with pytest.raises(InvalidRequest, match="invalid take id"):
        enrollment.remove(take)


def test_saved_willow_audio_is_private(fakes: FakeEngines, tmp_path: Path) -> None:
    from daemon.audio.pcm import AudioFormat
    from daemon.speech.recording import save_recording
    from protocols.http.willow import saved_audio

    folder = saved_audio(fakes.engines.config)
    path = save_recording(folder, "upload", AudioFormat(16000, 2, 1), [b"\x00\x00" * 1600])
    assert path.stat().st_mode & 0o777 == 0o600
    with wave.open(str(path)) as back:
        assert back.getnframes() == 1600


async def test_enrollment_logs_never_hold_what_was_heard(
    fakes: FakeEngines, caplog: pytest.LogCaptureFixture
) -> None:
    enrollment = Enrollment(fakes.engines.config, "alice")
    with caplog.at_level(logging.INFO, logger="daemon.voices.enroll"):
        async with asyncio.timeout(30):
            # The prompt is another sentence: the take is refused as "heard ...".
            check = await enrollment.add_take(fakes.engines, wav_body(440.0), 0)
    assert not check.accepted and TIME.lower() in check.problems[0].lower()
    logged = " ".join(r.getMessage() for r in caplog.records)
    assert "refused" in logged and TIME.lower() not in logged.lower()
