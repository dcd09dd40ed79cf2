"""The OpenAI-compatible API against a real daemon, with the official ``openai`` client."""

from __future__ import annotations

import io
import re
from collections.abc import Iterator

import httpx
import numpy as np
import openai
import pytest

from daemon.audio.pcm import RATE, decode_file, resample_pcm
from tests.daemon import Daemon
from tests.helpers import assert_heard, silence, wav, words

pytestmark = pytest.mark.e2e
KITCHEN = "Turn on the kitchen lights."


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    with Daemon(tmp_path_factory.mktemp("openai")) as running:
        yield running


@pytest.fixture(scope="module")
def client(daemon: Daemon) -> openai.OpenAI:
    # No auth.api_key configured: any key is accepted.
    return openai.OpenAI(base_url=f"{daemon.url}/v1", api_key="unused", max_retries=0, timeout=120)


@pytest.fixture(scope="module")
def kitchen_wav(kitchen) -> bytes:
    return wav(np.concatenate([silence(0.2), kitchen, silence(0.2)]))


def test_transcription_json_and_text(client, kitchen_wav):
    result = client.audio.transcriptions.create(
        model="whisper-1", file=("kitchen.wav", kitchen_wav, "audio/wav")
    )
    assert_heard(result.text, KITCHEN, "kitchen")
    text = client.audio.transcriptions.create(
        model="tiny.en", file=("kitchen.wav", kitchen_wav), response_format="text"
    )
    assert_heard(str(text), KITCHEN, "kitchen")


def test_transcription_subtitles_and_verbose_json(client, kitchen_wav):
    srt = str(
        client.audio.transcriptions.create(
            model="whisper-1", file=("k.wav", kitchen_wav), response_format="srt"
        )
    )
    cue = re.match(r"1\n00:00:0\d,\d{3} --> 00:00:0\d,\d{3}\n(.+)", srt, re.S)
    assert cue, srt
    assert_heard(cue[1], KITCHEN, "kitchen")
    vtt = str(
        client.audio.transcriptions.create(
            model="whisper-1", file=("k.wav", kitchen_wav), response_format="vtt"
        )
    )
    assert vtt.startswith("WEBVTT\n\n00:00:0"), vtt
    assert_heard(vtt.split("\n", 3)[3], KITCHEN, "kitchen")
    verbose = client.audio.transcriptions.create(
        model="whisper-1", file=("k.wav", kitchen_wav), response_format="verbose_json"
    )
    assert_heard(verbose.text, KITCHEN, "kitchen")
    assert verbose.language == "en"
    assert abs(verbose.duration - len(kitchen_wav[44:]) / 2 / RATE) < 0.05
    assert verbose.segments and verbose.segments[0].end > verbose.segments[0].start


def test_transcription_stream(client, kitchen_wav):
    events = list(
        client.audio.transcriptions.create(
            model="whisper-1", file=("k.wav", kitchen_wav), stream=True
        )
    )
    deltas = [e.delta for e in events if e.type == "transcript.text.delta"]
    done = [e for e in events if e.type == "transcript.text.done"]
    assert deltas and len(done) == 1 and events[-1] is done[0]
    assert words("".join(deltas)) == words(done[0].text)
    assert_heard(done[0].text, KITCHEN, "kitchen")


def test_transcription_with_language_and_prompt(client, kitchen_wav):
    result = client.audio.transcriptions.create(
        model="whisper-1",
        file=("k.wav", kitchen_wav),
        language="en",
        prompt="Home automation commands.",
    )
    assert_heard(result.text, KITCHEN, "kitchen")


def test_transcription_bad_input(client, kitchen_wav):
    with pytest.raises(openai.BadRequestError) as info:
        client.audio.transcriptions.create(model="whisper-1", file=("x.wav", b"garbage" * 50))
    assert info.value.body["code"] == "invalid-audio"
    with pytest.raises(openai.BadRequestError):
        client.audio.transcriptions.create(
            model="whisper-1", file=("k.wav", kitchen_wav), response_format="docx"
        )
    with pytest.raises(openai.NotFoundError):
        client.audio.transcriptions.create(model="no-such-model", file=("k.wav", kitchen_wav))


@pytest.mark.parametrize(
    ("fmt", "magic"),
    [("wav", b"RIFF"), ("flac", b"fLaC"), ("mp3", None), ("opus", b"OggS"), ("pcm", None)],
)
def test_speech_formats_stream(client, engines, fmt, magic):
    with client.audio.speech.with_streaming_response.create(
        model="tts-1",
        voice="alloy",
        input="Please turn on the kitchen lights and close the blinds.",
        response_format=fmt,
    ) as response:
        data = b"".join(response.iter_bytes())
    if magic:
        assert data.startswith(magic)
    if fmt == "pcm":
        samples = np.frombuffer(resample_pcm(data, 24000, RATE), "<i2")
    else:
        samples = decode_file(data)
    heard = engines.asr_model(None).transcribe(samples / 32768.0, _opts())
    # Piper speaks with its usual noise here (tiny.en may mishear a word): most
    # content words heard back show the audio is the sentence, decodable and whole.
    content = {"turn", "kitchen", "lights", "close", "blinds"}
    assert len(content & set(words(heard.text))) >= 3, heard.text


def _opts():
    from daemon.engines.asr.base import TranscribeOptions

    return TranscribeOptions()


def test_speech_speed_voice_and_errors(client):
    slow = client.audio.speech.create(
        model="tts-1", voice="en_US-joe-medium", input="Good night.", response_format="wav"
    ).content
    fast = client.audio.speech.create(
        model="tts-1", voice="nova", input="Good night.", response_format="wav", speed=2.0
    ).content
    assert len(decode_file(fast)) < 0.75 * len(decode_file(slow))
    with pytest.raises(openai.NotFoundError):
        client.audio.speech.create(model="tts-1", voice="nobody", input="Hi.")
    with pytest.raises(openai.APIStatusError) as info:
        client.audio.speech.create(model="tts-1", voice="alloy", input="word " * 20000)
    assert info.value.status_code == 413
    with pytest.raises(openai.BadRequestError):
        client.audio.speech.create(model="tts-1", voice="alloy", input="Hi.", speed=9.0)


def test_chat_completion(client):
    reply = client.chat.completions.create(
        model="anything",
        messages=[
            {"role": "system", "content": "You answer briefly."},
            {"role": "user", "content": "Say hello."},
        ],
        max_tokens=16,
    )
    assert reply.choices[0].message.role == "assistant"
    assert reply.choices[0].message.content.strip()
    assert reply.usage.completion_tokens > 0


def test_chat_completion_stream(client):
    stream = client.chat.completions.create(
        model="anything",
        messages=[{"role": "user", "content": [{"type": "text", "text": "Count to three."}]}],
        stream=True,
        max_tokens=24,
    )
    chunks = list(stream)
    text = "".join(c.choices[0].delta.content or "" for c in chunks)
    assert text.strip()
    assert chunks[-1].choices[0].finish_reason == "stop"


def test_chat_errors(client):
    with pytest.raises(openai.BadRequestError):
        client.chat.completions.create(model="x", messages=[])
    with pytest.raises(openai.BadRequestError):
        client.chat.completions.create(model="x", messages=[{"role": "user", "content": "  "}])
    with pytest.raises(openai.APIStatusError) as info:
        client.chat.completions.create(
            model="x", messages=[{"role": "user", "content": "x" * 10000}]
        )
    assert info.value.status_code == 413


def test_models(client):
    ids = {m.id for m in client.models.list()}
    # ASR models, the LLM, the engine and every voice (what /audio/speech takes).
    assert {"tiny.en", "piper", "en_US-joe-medium"} <= ids and len(ids) >= 4


def test_save_audio_ignored_when_config_forbids(daemon, kitchen):
    headers = {
        "x-audio-sample-rate": "16000",
        "x-audio-bits": "16",
        "x-audio-channel": "1",
        "x-audio-codec": "pcm",
    }
    pcm = np.concatenate([kitchen, silence(0.3)]).astype("<i2").tobytes()
    resp = httpx.post(
        f"{daemon.url}/api/willow?save_audio=true", content=pcm, headers=headers, timeout=60
    )
    assert resp.status_code == 200, resp.text
    assert_heard(resp.json()["text"], KITCHEN, "kitchen")
    assert not list(daemon.workdir.rglob("*.wav"))


def test_upload_over_the_limit_is_413(tmp_path):
    with Daemon(tmp_path, "limits:\n  max_upload_mb: 1\n") as small:
        big = io.BytesIO(b"\0" * 1_500_000)
        resp = httpx.post(
            f"{small.url}/v1/audio/transcriptions", files={"file": ("a.wav", big)}, timeout=30
        )
        assert resp.status_code == 413
        assert resp.json()["error"]["code"] == "upload-too-large"

        def chunked():  # no content-length: the limit is found while reading
            for _ in range(30):
                yield b" " * 100_000

        resp = httpx.post(
            f"{small.url}/v1/chat/completions",
            content=chunked(),
            headers={"content-type": "application/json"},
            timeout=30,
        )
        assert resp.status_code == 413, resp.text
        assert resp.json()["error"]["code"] == "upload-too-large"
