"""A language the ASR model does not speak is refused on every HTTP route, with the list.

The fake model speaks English only, like the embedded tiny.en: German must be a 400
with ``unsupported-language``, not an English transcript of German speech.
"""

from __future__ import annotations

import io
import wave
from typing import Any

import pytest

from tests.fakes import KITCHEN, utterance


def wav() -> bytes:
    out = io.BytesIO()
    with wave.open(out, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(16000)
        w.writeframes(utterance(220.0).astype("<i2").tobytes())
    return out.getvalue()


PCM_HEADERS = {
    "x-audio-codec": "pcm",
    "x-audio-sample-rate": "16000",
    "x-audio-bits": "16",
    "x-audio-channel": "1",
}


def assert_refused(resp: Any, code: str = "unsupported-language") -> str:
    assert resp.status_code == 400, resp.text
    body = resp.json()
    error = body["error"] if isinstance(body["error"], dict) else body
    assert error["code"] == code
    text = str(error.get("message") or error.get("detail"))
    assert "'de'" in text and "en" in text
    return text


def test_willow_upload(client, fakes):
    pcm = utterance(220.0).astype("<i2").tobytes()
    resp = client.post("/api/willow?force_language=de", content=pcm, headers=PCM_HEADERS)
    assert_refused(resp)
    ok = client.post("/api/willow?force_language=en", content=pcm, headers=PCM_HEADERS)
    assert ok.status_code == 200 and ok.json()["text"] == KITCHEN


def test_willow_file(client, fakes):
    files = {"audio_file": ("a.wav", wav(), "audio/wav")}
    assert_refused(client.post("/api/asr?force_language=de", files=files))
    assert not fakes.asr["fake"].calls


@pytest.mark.parametrize("stream", ["false", "true"])
def test_openai_transcriptions(client, fakes, stream):
    files = {"file": ("a.wav", wav(), "audio/wav")}
    data = {"model": "whisper-1", "language": "de", "stream": stream}
    assert_refused(client.post("/v1/audio/transcriptions", files=files, data=data))
    assert not fakes.asr["fake"].calls
    data["language"] = "en"
    ok = client.post("/v1/audio/transcriptions", files=files, data=data)
    assert ok.status_code == 200 and KITCHEN in ok.text
