"""The Realtime API's audio formats: names, base64, and G.711 against the standard."""

from __future__ import annotations

import base64

import numpy as np
import pytest

from daemon.errors import InvalidAudio
from protocols.realtime.audio import PCM, PCMA, PCMU, decode_base64, encoded, wire_format


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ({"type": "audio/pcm", "rate": 24000}, PCM),
        ({"type": "audio/pcm"}, PCM),
        ("pcm16", PCM),
        ({"type": "audio/pcmu"}, PCMU),
        ("g711_ulaw", PCMU),
        ("g711_alaw", PCMA),
    ],
)
def test_formats_by_their_ga_and_beta_names(name, expected):
    assert wire_format(name, "format") is expected


@pytest.mark.parametrize("name", [{"type": "audio/pcm", "rate": 16000}, "opus", 7, None])
def test_other_formats_are_refused(name):
    with pytest.raises(InvalidAudio):
        wire_format(name, "format")


def test_known_g711_codes():
    # Silence and full scale, as every G.711 codec writes them.
    assert PCMU.from_pcm(np.array([0, 32767, -32768], "<i2").tobytes(), 8000) == b"\xff\x80\x00"
    assert PCMA.from_pcm(np.array([0, 32767, -32768], "<i2").tobytes(), 8000) == b"\xd5\xaa\x2a"


@pytest.mark.parametrize("fmt", [PCMU, PCMA])
def test_g711_round_trip_keeps_speech_within_its_quantization(fmt):
    t = np.arange(8000) / 8000
    pcm = (np.sin(2 * np.pi * 440 * t) * 12000).astype("<i2")
    back = np.frombuffer(fmt.to_pcm(fmt.from_pcm(pcm.tobytes(), 8000)), "<i2")
    error = np.abs(back.astype(np.int32) - pcm)
    # G.711 keeps about 13 bits: the step grows with the level (at most 1/16 of it).
    assert np.all(error <= np.abs(pcm.astype(np.int32)) / 16 + 16)
    assert len(back) == len(pcm)


def test_every_g711_byte_decodes_and_encodes_back():
    for fmt in (PCMU, PCMA):
        codes = bytes(range(256))
        again = fmt.from_pcm(fmt.to_pcm(codes), 8000)
        # μ-law has two zeros (0x7f and 0xff); every other code comes back as itself.
        assert sum(a != b for a, b in zip(codes, again, strict=True)) <= 1


def test_reply_audio_is_resampled_to_the_format_rate():
    pcm = np.zeros(24000, "<i2").tobytes()  # 1 s at 24 kHz
    assert len(base64.b64decode(encoded(PCMU, pcm, 24000))) == 8000
    assert len(base64.b64decode(encoded(PCM, pcm, 24000))) == 48000


def test_bad_base64_is_invalid_audio():
    with pytest.raises(InvalidAudio):
        decode_base64("%%%", "audio")
    with pytest.raises(InvalidAudio):
        decode_base64(12, "audio")
    assert decode_base64(base64.b64encode(b"ab").decode(), "audio") == b"ab"
