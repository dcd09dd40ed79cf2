"""Pure parts of the HTTP adapters: auth parsing, raw queries, formats, bodies, errors."""

from __future__ import annotations

import base64
import struct

import numpy as np
import pytest
from fastapi.testclient import TestClient

from daemon.audio.decode import WavBody
from daemon.audio.pcm import AudioFormat
from daemon.audio.stream import StreamEncoder, output_format, wav_header
from daemon.config import parse_config
from daemon.engines.asr.base import Segment
from daemon.errors import HearthError, InvalidAudio, InvalidRequest
from protocols.http import errors
from protocols.http.app import create_app
from protocols.http.auth import key_matches, offered_keys
from protocols.http.formats import timestamp, to_srt, to_vtt, verbose_json
from protocols.http.rawquery import raw_params
from protocols.http.server import repair_request_line
from protocols.http.willow_audio import parse_audio_headers

# --------------------------------------------------------------------------- auth


def basic(user: str, password: str) -> str:
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()


@pytest.mark.parametrize(
    ("headers", "keys"),
    [
        ({}, []),
        ({"x-api-key": " k1 "}, ["k1"]),
        ({"authorization": "Bearer k2"}, ["k2"]),
        ({"authorization": "bearer   k2 "}, ["k2"]),
        ({"authorization": basic("hearth", "k3")}, ["k3"]),
        ({"authorization": basic("", "with:colon")}, ["with:colon"]),
        ({"authorization": "Basic bm9jb2xvbg=="}, []),  # "nocolon"
        ({"authorization": "Basic %%%"}, []),
        ({"authorization": "Digest x"}, []),
        ({"x-api-key": "a", "authorization": "Bearer b"}, ["a", "b"]),
    ],
)
def test_offered_keys(headers, keys):
    assert offered_keys(headers) == keys


def test_key_matches():
    assert key_matches("s3cret", ["nope", "s3cret"])
    assert not key_matches("s3cret", ["s3cre", "s3cret!", ""])
    assert not key_matches("s3cret", [])
    assert key_matches("clé", ["clé"])


# --------------------------------------------------------------------------- raw queries


@pytest.mark.parametrize(
    ("query", "text"),
    [
        ("format=WAV&speaker=CLB&text=Turn%20on%20the%20lights.", "Turn on the lights."),
        ("format=WAV&text=salt%20&%20pepper", "salt & pepper"),
        ("format=WAV&text=1+1%20is%202", "1+1 is 2"),
        ("text=Turn+on+the+lights&format=flac", "Turn on the lights"),
        ("text=caf%C3%A9%20au%20lait", "café au lait"),
        ("text=100%25%20done!%20%231", "100% done! #1"),
        ("speaker=x&context=y&text=a%20b", "a b"),
        ("format=wav", None),
        ("text=", ""),
    ],
)
def test_raw_params_text(query, text):
    assert raw_params(query).get("text") == text


def test_raw_params_keeps_other_parameters():
    params = raw_params("format=FLAC&speaker=CLB&text=hi%20there&nocache=true")
    assert params == {"format": "FLAC", "speaker": "CLB", "text": "hi there", "nocache": "true"}


@pytest.mark.parametrize(
    ("line", "repaired"),
    [
        (b"GET /a?text=b c HTTP/1.1", b"GET /a?text=b%20c HTTP/1.1"),
        (b"GET /a?x=1%202 HTTP/1.1", b"GET /a?x=1%202 HTTP/1.1"),
        (b"GET /a?t=100% ok# HTTP/1.1", b"GET /a?t=100%25%20ok%23 HTTP/1.1"),
        ("GET /a?t=é HTTP/1.1".encode(), b"GET /a?t=%C3%A9 HTTP/1.1"),
        (b"GET /a", b"GET /a"),
        (b"garbage line", b"garbage line"),
    ],
)
def test_repair_request_line(line, repaired):
    assert repair_request_line(line) == repaired


# --------------------------------------------------------------------------- formats


def test_timestamps_and_subtitles():
    assert timestamp(3725.0456, ",") == "01:02:05,046"
    assert timestamp(-1, ".") == "00:00:00.000"
    segs = (Segment(0.0, 1.5, " Hello."), Segment(1.5, 2.25, ""), Segment(2.25, 3.0, "Bye."))
    assert to_srt(segs) == (
        "1\n00:00:00,000 --> 00:00:01,500\nHello.\n\n2\n00:00:02,250 --> 00:00:03,000\nBye.\n"
    )
    assert to_vtt(segs).startswith("WEBVTT\n\n00:00:00.000 --> 00:00:01.500\nHello.\n")
    body = verbose_json("Hello. Bye.", "en", 3.0, segs)
    assert body["duration"] == 3.0 and [s["id"] for s in body["segments"]] == [0, 1, 2]


# --------------------------------------------------------------------------- bodies


def test_audio_headers():
    pcm = {"x-audio-codec": "PCM", "x-audio-sample-rate": "16000", "x-audio-bits": "16"}
    assert parse_audio_headers(pcm | {"x-audio-channel": "1"}, 48000, 2) == (
        "pcm",
        AudioFormat(16000, 2, 1),
    )
    for bad in (
        {},
        pcm,
        pcm | {"x-audio-channel": "1", "x-audio-bits": "7"},
        pcm | {"x-audio-channel": "3"},
        {"x-audio-codec": "../etc"},
    ):
        with pytest.raises(InvalidAudio):
            parse_audio_headers(bad, 48000, 2)
    assert parse_audio_headers({"x-audio-codec": "amrwb"}, 48000, 2) == ("amrwb", None)


def wav(tag: int, bits: int, data: bytes, extra_chunk: bytes = b"") -> bytes:
    fmt = struct.pack("<HHIIHH", tag, 1, 8000, 8000 * bits // 8, bits // 8, bits)
    return (
        b"RIFF\0\0\0\0WAVE"
        + extra_chunk
        + b"fmt "
        + struct.pack("<I", 16)
        + fmt
        + b"data"
        + struct.pack("<I", len(data))
        + data
    )


def test_wav_body_streams_after_its_header_byte_by_byte():
    data = bytes(range(200))
    body = wav(1, 16, data, extra_chunk=b"LIST" + struct.pack("<I", 3) + b"abc\0")
    decoder = WavBody(10)
    out = b"".join(decoder.feed(body[i : i + 1]) for i in range(len(body)))
    assert out == data and decoder.fmt == AudioFormat(8000, 2, 1)
    assert decoder.finish() == b""


def test_wav_body_float_is_buffered_and_garbage_refused():
    decoder = WavBody(10)
    samples = (np.sin(np.arange(8000) / 5) * 0.5).astype("<f4").tobytes()
    assert decoder.feed(wav(3, 32, samples)) == b""
    pcm = decoder.finish()
    assert decoder.fmt == AudioFormat(16000, 2, 1) and len(pcm) == 2 * 16000
    with pytest.raises(InvalidAudio):
        WavBody(10).feed(b"not a riff header at all")
    with pytest.raises(InvalidAudio):
        WavBody(10).finish()


def test_stream_encoder_wav_and_pcm():
    enc = StreamEncoder(output_format("WAV"), 16000)
    assert enc.write(b"\1\0") == wav_header(16000) + b"\1\0"
    assert enc.write(b"\2\0") == b"\2\0" and enc.close() == b"" and enc.close() == b""
    assert StreamEncoder(output_format("wav"), 8000).close() == wav_header(8000, 0)
    with pytest.raises(InvalidRequest):
        output_format("wma")


# --------------------------------------------------------------------------- errors


def test_every_hearth_error_code_has_a_status():
    import daemon.errors as core

    codes = {
        cls.code
        for cls in vars(core).values()
        if isinstance(cls, type) and issubclass(cls, HearthError)
    }
    assert codes <= set(errors.STATUS)
    assert errors.status_of("busy") == 503 and errors.status_of("unknown-voice") == 404


def test_error_body_dialects():
    assert errors.error_body("/api/willow", "invalid-audio", "x-audio-bits is 7") == {
        "error": "Invalid audio",
        "code": "invalid-audio",
        "detail": "x-audio-bits is 7",
    }
    body = errors.error_body("/v1/audio/speech", "unknown-voice", "no such voice")
    assert body["error"]["type"] == "invalid_request_error"
    assert body["error"]["code"] == "unknown-voice"


class LoadingService:
    """A service whose engines are not loaded yet."""

    def __init__(self, api_key: str = "") -> None:
        self.config = parse_config(f'auth:\n  api_key: "{api_key}"\n')
        self.loaded = False

    def health(self):
        return False, {"status": "loading"}


def test_routes_answer_503_until_engines_are_loaded():
    client = TestClient(create_app(LoadingService()))
    assert client.get("/healthz").status_code == 503
    assert client.get("/api/ping").status_code == 200
    for method, path in (("GET", "/api/speaker"), ("GET", "/v1/models"), ("GET", "/api/tts")):
        resp = client.request(method, path)
        assert resp.status_code == 503, path
        assert resp.headers["retry-after"] == "1"


def test_key_checked_before_readiness():
    client = TestClient(create_app(LoadingService("k")))
    assert client.get("/api/speaker").status_code == 401
    assert client.get("/api/speaker", headers={"X-API-Key": "k"}).status_code == 503
