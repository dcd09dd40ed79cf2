"""The Willow Inference Server API against a real daemon, as a Willow device uses it."""

from __future__ import annotations

import base64
import json
import socket
import struct
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import unquote

import httpx
import numpy as np
import pytest
import websockets.sync.client

from daemon.audio.pcm import RATE, decode_file, resample_pcm
from tests.daemon import Daemon
from tests.helpers import PCM_HEADERS, assert_heard, noise, paced, silence, words

pytestmark = pytest.mark.e2e
KEY = "willow-test-key"
KITCHEN = "Turn on the kitchen lights."
DATA = Path(__file__).resolve().parents[1] / "data"


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    work = tmp_path_factory.mktemp("willow")
    extra = (
        f"auth:\n  api_key: {KEY}\n"
        f"willow:\n  save_audio: true\n  save_dir: {work / 'saved'}\n"
        "limits:\n  max_text_chars: 5000\n"
    )
    with Daemon(work, extra) as running:
        yield running


def device_url(daemon: Daemon, path: str) -> str:
    """The URL as a Willow device holds it: Basic credentials embedded."""
    return f"http://hearth:{KEY}@127.0.0.1:{daemon.http_port}{path}"


def utterance(samples: np.ndarray) -> bytes:
    """Speech plus the 0.3 s of silence after which the device's VAD ends the upload."""
    return np.concatenate([samples, silence(0.3)]).astype("<i2").tobytes()


def post_willow(daemon: Daemon, body, headers=PCM_HEADERS, query: str = "") -> httpx.Response:
    return httpx.post(
        device_url(daemon, f"/api/willow{query}"), content=body, headers=headers, timeout=60
    )


def assert_serving(daemon: Daemon) -> None:
    assert httpx.get(f"{daemon.url}/api/ping", timeout=5).json() == {"message": "pong"}
    resp = httpx.get(device_url(daemon, "/api/speaker"), timeout=5)
    assert resp.status_code == 200


# --------------------------------------------------------------------------- /api/willow


def test_firmware_upload_real_time_chunked_pcm(daemon, kitchen):
    resp = post_willow(daemon, paced(utterance(kitchen)), query="?stats=true")
    assert resp.status_code == 200, resp.text
    body = resp.json()
    assert_heard(body["text"], KITCHEN, "kitchen")
    assert body["language"] == "en"
    assert set(body) == {"language", "text", "infer_time", "infer_speedup", "audio_duration"}
    expected_ms = len(kitchen) * 1000 // RATE + 300
    assert abs(body["audio_duration"] - expected_ms) <= 20
    assert isinstance(body["infer_speedup"], int)


def test_plain_response_has_only_language_and_text(daemon, kitchen):
    resp = post_willow(daemon, utterance(kitchen))
    assert resp.status_code == 200
    assert set(resp.json()) == {"language", "text"}


def test_stereo_44k_pcm_is_converted(daemon, kitchen):
    mono = resample_pcm(utterance(kitchen), RATE, 44100)
    stereo = np.repeat(np.frombuffer(mono, "<i2"), 2).tobytes()
    headers = PCM_HEADERS | {"x-audio-sample-rate": "44100", "x-audio-channel": "2"}
    resp = post_willow(daemon, paced(stereo, 4096, 44100 * 4), headers)
    assert resp.status_code == 200, resp.text
    assert_heard(resp.json()["text"], KITCHEN, "kitchen")


def test_amrwb_body_from_ffmpeg_fixture(daemon):
    # tests/data/kitchen.amr: Piper's "Turn on the kitchen lights." encoded by
    # Debian's ffmpeg (libvo_amrwbenc, 23.85 kb/s): "#!AMR-WB\n" and frames, as the
    # firmware sends it. PyAV decodes AMR-WB but cannot encode it.
    amr = (DATA / "kitchen.amr").read_bytes()
    assert amr.startswith(b"#!AMR-WB\n")
    headers = PCM_HEADERS | {"x-audio-codec": "amrwb"}
    resp = post_willow(daemon, (amr[i : i + 61] for i in range(0, len(amr), 61)), headers)
    assert resp.status_code == 200, resp.text
    assert_heard(resp.json()["text"], KITCHEN, "kitchen")


def wav_bytes(samples: np.ndarray, rate: int = RATE, float32: bool = False) -> bytes:
    if float32:
        data = (samples.astype(np.float32) / 32768.0).astype("<f4").tobytes()
        tag, bits = 3, 32
    else:
        data, tag, bits = samples.astype("<i2").tobytes(), 1, 16
    block = bits // 8
    fmt = struct.pack("<HHIIHH", tag, 1, rate, rate * block, block, bits)
    return (
        b"RIFF"
        + struct.pack("<I", 4 + 8 + len(fmt) + 8 + len(data))
        + b"WAVEfmt "
        + struct.pack("<I", len(fmt))
        + fmt
        + b"data"
        + struct.pack("<I", len(data))
        + data
    )


def test_wav_body_streamed(daemon, kitchen):
    wav = wav_bytes(np.concatenate([kitchen, silence(0.3)]))
    resp = post_willow(daemon, paced(wav), PCM_HEADERS | {"x-audio-codec": "wav"})
    assert resp.status_code == 200, resp.text
    assert_heard(resp.json()["text"], KITCHEN, "kitchen")


def test_other_codec_decoded_by_pyav(daemon, kitchen):
    # Ogg Opus: not one of the three firmware codecs, so PyAV decodes the whole body.
    buf = _encode_with_pyav(kitchen, "ogg", "libopus")
    resp = post_willow(daemon, buf, {"x-audio-codec": "opus"})
    assert resp.status_code == 200, resp.text
    assert_heard(resp.json()["text"], KITCHEN, "kitchen")


def _encode_with_pyav(samples: np.ndarray, container: str, codec: str) -> bytes:
    import io

    import av

    out = io.BytesIO()
    with av.open(out, "w", format=container) as c:
        stream = c.add_stream(codec, rate=48000, layout="mono")
        frame = av.AudioFrame.from_ndarray(samples.reshape(1, -1), format="s16", layout="mono")
        frame.sample_rate = RATE
        resampler = av.AudioResampler(
            format=stream.codec_context.format.name, layout="mono", rate=48000
        )
        for f in resampler.resample(frame):
            for packet in stream.encode(f):
                c.mux(packet)
        for packet in stream.encode(None):
            c.mux(packet)
    return out.getvalue()


def test_silence_gives_empty_text(daemon):
    resp = post_willow(daemon, silence(1.0).tobytes())
    assert resp.status_code == 200
    assert resp.json() == {"language": "en", "text": ""}


def test_save_audio_stores_a_wav_when_config_allows(daemon, kitchen):
    saved = daemon.workdir / "saved"
    before = set(saved.glob("*.wav")) if saved.exists() else set()
    assert post_willow(daemon, utterance(kitchen)).status_code == 200
    assert (set(saved.glob("*.wav")) if saved.exists() else set()) == before
    assert post_willow(daemon, utterance(kitchen), query="?save_audio=true").status_code == 200
    new = set(saved.glob("*.wav")) - before
    assert len(new) == 1
    audio = decode_file(str(new.pop()))
    assert abs(len(audio) - len(kitchen) - int(0.3 * RATE)) < 160


def test_translate_with_english_model_returns_the_text(daemon, kitchen):
    resp = post_willow(daemon, utterance(kitchen), query="?translate=true&detect_language=true")
    body = resp.json()
    assert resp.status_code == 200
    assert body["translation"] == body["text"]
    assert_heard(body["text"], KITCHEN, "kitchen")


# --------------------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    ("headers", "why"),
    [
        ({}, "no headers"),
        ({k: v for k, v in PCM_HEADERS.items() if k != "x-audio-sample-rate"}, "no rate"),
        (PCM_HEADERS | {"x-audio-bits": "7"}, "7 bits"),
        (PCM_HEADERS | {"x-audio-channel": "zero"}, "not a number"),
        (PCM_HEADERS | {"x-audio-sample-rate": "99999999"}, "absurd rate"),
    ],
)
def test_bad_headers_are_400_invalid_audio(daemon, headers, why):
    resp = post_willow(daemon, b"\x00" * 3200, headers)
    assert resp.status_code == 400, why
    assert resp.json()["error"] == "Invalid audio"
    assert resp.json()["code"] == "invalid-audio"


@pytest.mark.parametrize("codec", ["wav", "amrwb", "mp3"])
def test_garbage_body_is_400(daemon, codec):
    garbage = np.random.default_rng(1).bytes(8000)
    resp = post_willow(daemon, garbage, PCM_HEADERS | {"x-audio-codec": codec})
    assert resp.status_code == 400, resp.text
    assert resp.json()["error"] == "Invalid audio"
    assert_serving(daemon)


def test_zero_byte_body_is_400(daemon):
    resp = post_willow(daemon, b"")
    assert resp.status_code == 400
    assert resp.json()["detail"] == "the body holds no audio"


def _raw_request(daemon: Daemon, head: bytes, body_parts: list[bytes], close: bool) -> bytes:
    with socket.create_connection(("127.0.0.1", daemon.http_port), timeout=30) as sock:
        sock.sendall(head)
        for part in body_parts:
            sock.sendall(part)
            time.sleep(0.02)
        if close:
            sock.shutdown(socket.SHUT_WR)
        out = b""
        while chunk := sock.recv(65536):
            out += chunk
        return out


def _willow_head(daemon: Daemon) -> bytes:
    auth = base64.b64encode(f"hearth:{KEY}".encode()).decode()
    lines = [
        "POST /api/willow HTTP/1.1",
        f"Host: 127.0.0.1:{daemon.http_port}",
        f"Authorization: Basic {auth}",
        "Transfer-Encoding: chunked",
        *(f"{k}: {v}" for k, v in PCM_HEADERS.items()),
    ]
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


def test_chunked_body_cut_off_midway_leaves_the_daemon_serving(daemon, kitchen):
    pcm = utterance(kitchen)[:16000]
    parts = [b"%x\r\n%s\r\n" % (1000, pcm[i : i + 1000]) for i in range(0, 8000, 1000)]
    parts.append(b"3e8\r\n" + pcm[8000:8400])  # announces 1000 bytes, sends 400, hangs up
    answer = _raw_request(daemon, _willow_head(daemon), parts, close=True)
    assert b" 200 " not in answer.split(b"\r\n", 1)[0]
    assert_serving(daemon)
    assert post_willow(daemon, utterance(kitchen)).status_code == 200


def test_malformed_chunk_framing_is_400(daemon):
    answer = _raw_request(daemon, _willow_head(daemon), [b"zz\r\nnot hex\r\n"], close=False)
    assert answer.startswith(b"HTTP/1.1 400 ")
    assert_serving(daemon)


def test_a_stalled_upload_is_408_long_before_the_request_deadline(daemon):
    # 10 bytes, then nothing: this held the connection for limits.request_timeout_s
    # (120 s); http.body_idle_timeout_s (5 s) now ends it, and closes the connection.
    began = time.monotonic()
    first = [b"a\r\n" + b"\x00" * 10 + b"\r\n"]
    answer = _raw_request(daemon, _willow_head(daemon), first, close=False)
    assert time.monotonic() - began < 30  # 5 s and a margin, not 120 s
    assert answer.startswith(b"HTTP/1.1 408 "), answer[:300]
    assert b'"body-timeout"' in answer and b"connection: close" in answer
    assert_serving(daemon)


def test_audio_over_the_limit_is_413(tmp_path):
    with Daemon(tmp_path, "limits:\n  max_audio_s: 1\n") as small:
        resp = httpx.post(
            f"{small.url}/api/willow", content=noise(3.0).tobytes(), headers=PCM_HEADERS
        )
        assert resp.status_code == 413
        assert resp.json()["code"] == "audio-too-long"


def test_voice_auth_is_refused_406(daemon, kitchen):
    resp = post_willow(daemon, utterance(kitchen), query="?voice_auth=true")
    assert resp.status_code == 406
    assert resp.json()["code"] == "voice-not-authorized"


def test_unknown_model_is_404_and_wis_names_mean_default(daemon, kitchen):
    assert post_willow(daemon, utterance(kitchen), query="?model=nope").status_code == 404
    assert post_willow(daemon, utterance(kitchen), query="?model=large-v2").status_code == 200


def test_bad_beam_size_is_400(daemon, kitchen):
    resp = post_willow(daemon, utterance(kitchen), query="?beam_size=99")
    assert resp.status_code == 400 and resp.json()["code"] == "invalid-request"


# --------------------------------------------------------------------------- auth


@pytest.mark.parametrize(
    ("headers", "status"),
    [
        ({}, 401),
        ({"X-API-Key": "wrong"}, 401),
        ({"Authorization": "Bearer wrong"}, 401),
        ({"Authorization": "Basic " + base64.b64encode(b"hearth:wrong").decode()}, 401),
        ({"Authorization": "Basic !!!"}, 401),
        ({"X-API-Key": KEY}, 200),
        ({"Authorization": f"Bearer {KEY}"}, 200),
        ({"Authorization": "Basic " + base64.b64encode(f"any:{KEY}".encode()).decode()}, 200),
    ],
)
def test_api_key_forms(daemon, headers, status):
    resp = httpx.get(f"{daemon.url}/api/speaker", headers=headers, timeout=10)
    assert resp.status_code == status
    if status == 401:
        assert resp.json()["code"] == "unauthorized"
        # The Basic challenge only when no key header was sent (browsers would pop up a dialog).
        sent_key_header = "X-API-Key" in headers or "Bearer" in headers.get("Authorization", "")
        assert ("www-authenticate" in resp.headers) is not sent_key_header


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("POST", "/api/willow"),
        ("POST", "/api/asr"),
        ("GET", "/api/tts?text=hi"),
        ("POST", "/api/sts"),
        ("GET", "/api/chatbot?text=hi"),
        ("GET", "/docs"),
        ("GET", "/openapi.json"),
        ("GET", "/v1/models"),
        ("POST", "/v1/chat/completions"),
    ],
)
def test_every_route_needs_the_key(daemon, method, path):
    assert httpx.request(method, f"{daemon.url}{path}", timeout=10).status_code == 401


def test_ping_and_healthz_need_no_key(daemon):
    assert httpx.get(f"{daemon.url}/api/ping").status_code == 200
    assert httpx.get(f"{daemon.url}/healthz").status_code == 200


# --------------------------------------------------------------------------- /api/asr


def test_asr_float_wav_file(daemon, kitchen):
    files = {"audio_file": ("kitchen.wav", wav_bytes(kitchen, float32=True), "audio/wav")}
    resp = httpx.post(device_url(daemon, "/api/asr"), files=files, timeout=60)
    assert resp.status_code == 200, resp.text
    body = resp.json()
    assert_heard(body["text"], KITCHEN, "kitchen")
    assert {"infer_time", "infer_speedup", "audio_duration", "language"} <= set(body)
    assert abs(body["audio_duration"] - len(kitchen) * 1000 // RATE) <= 10


def test_asr_garbage_file_is_400(daemon):
    files = {"audio_file": ("x.wav", b"RIFF garbage" * 100, "audio/wav")}
    resp = httpx.post(device_url(daemon, "/api/asr"), files=files, timeout=30)
    assert resp.status_code == 400 and resp.json()["error"] == "Invalid audio"


# --------------------------------------------------------------------------- /api/tts


def _raw_get(daemon: Daemon, target: str) -> tuple[int, dict[str, str], bytes]:
    """GET with the target sent byte for byte, as the firmware sends it."""
    auth = base64.b64encode(f"hearth:{KEY}".encode()).decode()
    head = (
        f"GET {target} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Basic {auth}\r\n"
        "User-Agent: ESP32 HTTP Client/1.0\r\nConnection: close\r\n\r\n"
    ).encode()
    raw = _raw_request(daemon, head, [], close=False)
    head_bytes, _, body = raw.partition(b"\r\n\r\n")
    lines = head_bytes.decode("latin-1").split("\r\n")
    status = int(lines[0].split()[1])
    headers = {k.lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:])}
    if headers.get("transfer-encoding") == "chunked":
        out = b""
        while body:
            size_line, _, body = body.partition(b"\r\n")
            size = int(size_line, 16)
            if size == 0:
                break
            out, body = out + body[:size], body[size + 2 :]
        body = out
    return status, headers, body


def test_tts_raw_spaces_in_query_then_cache_hit(daemon, engines):
    text = "Turn on the lights, please! It's 100% dark & cold."
    status, headers, wav = _raw_get(daemon, f"/api/tts?format=WAV&speaker=CLB&text={text}")
    assert status == 200, wav[:300]
    assert headers["content-type"] == "audio/wav"
    assert headers["x-cache"] == "miss"
    assert wav[:4] == b"RIFF" and struct.unpack("<I", wav[24:28])[0] == 16000
    heard = engines.asr_model(None).transcribe(decode_file(wav) / 32768.0, _opts())
    # The whole text arrived, raw spaces, "%" and "&" (spoken "and") included.
    said = text.replace("&", "and")
    assert_heard(heard.text, said, "lights", "dark", "cold")
    status, headers, again = _raw_get(daemon, f"/api/tts?format=WAV&speaker=CLB&text={text}")
    assert status == 200 and headers["x-cache"] == "hit"
    assert np.array_equal(decode_file(again), decode_file(wav))


def test_a_request_line_ending_in_a_bare_lf_is_400_at_once(daemon):
    # Answered before http.header_timeout_s (10 s), which it used to wait for.
    with socket.create_connection(("127.0.0.1", daemon.http_port), timeout=5) as sock:
        sock.sendall(b"GET /api/ping HTTP/1.1\nHost: x\n\n")
        answer = b""
        while chunk := sock.recv(65536):  # to EOF: closed
            answer += chunk
    assert answer.startswith(b"HTTP/1.1 400 "), answer[:300]
    assert b'"invalid-request"' in answer
    assert_serving(daemon)


def _opts():
    from daemon.engines.asr.base import TranscribeOptions

    return TranscribeOptions()


def test_tts_nocache_and_flac(daemon):
    url = device_url(daemon, "/api/tts")
    first = httpx.get(url, params={"text": "Dinner is ready.", "format": "flac"}, timeout=60)
    assert first.status_code == 200 and first.content[:4] == b"fLaC"
    again = httpx.get(
        url, params={"text": "Dinner is ready.", "format": "flac", "nocache": "true"}, timeout=60
    )
    assert again.headers["x-cache"] == "miss"
    assert len(decode_file(again.content)) > RATE // 2


def test_tts_100k_text_is_414_and_long_text_413(daemon):
    # Unencoded, as the firmware would append it: 100 kB on the request line is
    # more than a URL may hold.
    status, _, body = _raw_get(daemon, "/api/tts?format=WAV&text=" + "word, " * 17000)
    assert status == 414 and json.loads(body)["code"] == "uri-too-long", body[:300]
    # Under the URL limit but over limits.max_text_chars (5000 here).
    status, _, body = _raw_get(daemon, "/api/tts?format=WAV&text=" + "word, " * 1000)
    assert status == 413 and json.loads(body)["code"] == "text-too-long", body[:300]
    assert_serving(daemon)


def test_tts_unknown_speaker_is_404(daemon):
    resp = httpx.get(
        device_url(daemon, "/api/tts"), params={"text": "Hello.", "speaker": "nobody"}, timeout=30
    )
    assert resp.status_code == 404 and resp.json()["code"] == "unknown-voice"


def test_tts_missing_or_empty_text_is_400(daemon):
    assert httpx.get(device_url(daemon, "/api/tts"), timeout=10).status_code == 400
    resp = httpx.get(device_url(daemon, "/api/tts?text="), timeout=10)
    assert resp.status_code == 400 and resp.json()["code"] == "invalid-text"


# --------------------------------------------------------------------------- speakers


def test_speakers(daemon):
    resp = httpx.get(device_url(daemon, "/api/speaker"))
    assert resp.json() == {"speakers": ["en_US-joe-medium"]}
    resp = httpx.delete(device_url(daemon, "/api/speaker?speaker_name=me"))
    assert resp.status_code == 404 and "unknown voice" in resp.json()["error"]
    resp = httpx.delete(device_url(daemon, "/api/speaker?speaker=en_US-joe-medium"))
    assert resp.status_code == 400 and "bundled" in resp.json()["error"]
    resp = httpx.post(device_url(daemon, "/api/speaker"), content=b"")
    assert resp.status_code == 400
    # The wrong multipart field: a 400 naming the right one (not a 500).
    wrong = httpx.post(
        device_url(daemon, "/api/speaker?speaker=me"), files={"file": ("x.wav", b"RIFF")}
    )
    assert wrong.status_code == 400 and "audio_file" in wrong.json()["error"], wrong.text


def test_speaker_enrollment_from_a_multipart_recording(daemon, kitchen):
    """WIS clients send the recording as the multipart field 'audio_file'."""
    recording = np.concatenate([silence(0.5), kitchen, silence(0.5)])
    resp = httpx.post(
        device_url(daemon, "/api/speaker?speaker=multipart-me"),
        files={"audio_file": ("take.wav", wav_bytes(recording), "audio/wav")},
        timeout=60,
    )
    assert resp.status_code == 200, resp.text
    body = resp.json()
    assert body["speaker"] == "multipart-me"
    assert_heard(body["transcript"], KITCHEN, "kitchen")
    assert body["enrolled_seconds"] > 1.0


# --------------------------------------------------------------------------- sts and chat


def test_sts_streams_a_spoken_reply(daemon, kitchen):
    resp = httpx.post(
        device_url(daemon, "/api/sts"),
        content=paced(utterance(kitchen)),
        headers=PCM_HEADERS,
        timeout=120,
    )
    assert resp.status_code == 200, resp.text
    assert_heard(unquote(resp.headers["x-transcript"]), KITCHEN, "kitchen")
    assert unquote(resp.headers["x-reply"]).strip()
    assert resp.headers["x-reply-complete"] in ("true", "false")
    assert resp.headers["content-type"] == "audio/wav"
    assert len(decode_file(resp.content)) > RATE // 2


def test_sts_ends_the_turn_while_the_body_streams_on(daemon, kitchen, speak):
    # A microphone that streams on after the command (no device VAD): the turn model
    # ends the turn, and what is said two seconds later is not part of it.
    later = speak("What is the weather like tomorrow morning?")
    audio = np.concatenate([silence(0.3), kitchen, silence(2.0), later, silence(0.5)])
    resp = httpx.post(
        device_url(daemon, "/api/sts"),
        content=paced(audio.astype("<i2").tobytes()),
        headers=PCM_HEADERS,
        timeout=120,
    )
    assert resp.status_code == 200, resp.text
    heard = unquote(resp.headers["x-transcript"])
    assert_heard(heard, KITCHEN, "kitchen")
    assert "weather" not in words(heard)


def test_sts_multipart_file_and_silence(daemon, kitchen):
    files = {"audio_file": ("k.wav", wav_bytes(kitchen), "audio/wav")}
    resp = httpx.post(device_url(daemon, "/api/sts"), files=files, timeout=120)
    assert resp.status_code == 200, resp.text
    assert_heard(unquote(resp.headers["x-transcript"]), KITCHEN, "kitchen")
    resp = httpx.post(
        device_url(daemon, "/api/sts"),
        content=silence(1.0).tobytes(),
        headers=PCM_HEADERS,
        timeout=60,
    )
    assert resp.status_code == 204 and resp.headers["x-transcript"] == ""


def test_chatbot(daemon):
    resp = httpx.get(device_url(daemon, "/api/chatbot"), params={"text": "Hello!"}, timeout=120)
    assert resp.status_code == 200
    assert resp.json()["response"].strip()


def test_chatbot_websocket_streams_and_needs_the_key(daemon):
    url = f"ws://127.0.0.1:{daemon.http_port}/api/ws/chatbot"
    with websockets.sync.client.connect(url, additional_headers={"X-API-Key": KEY}) as ws:
        ws.send("Say hello.")
        pieces = []
        while (frame := ws.recv(timeout=120)) != "":
            pieces.append(frame)
        assert "".join(pieces).strip()
        ws.send("x" * 10000)
        assert ws.recv(timeout=30).startswith("error: text-too-long")
        assert ws.recv(timeout=30) == ""
    with pytest.raises(websockets.exceptions.WebSocketException):
        with websockets.sync.client.connect(url) as ws:
            ws.recv(timeout=10)
    assert json.loads(httpx.get(f"{daemon.url}/api/ping").text) == {"message": "pong"}
