"""A WAV header that names no usable rate or channel count is refused by name, whether
the body is streamed (Willow, /api/sts) or read whole (uploads, enrollment)."""

from __future__ import annotations

import struct

import numpy as np
import pytest

from daemon.audio.decode import body_decoder
from daemon.audio.pcm import decode_file
from daemon.errors import InvalidAudio


def wav(rate: int = 16000, channels: int = 1, bits: int = 16, tag: int = 1) -> bytes:
    data = np.zeros(16000, dtype="<i2").tobytes()
    block = (channels * bits // 8) & 0xFFFF
    fmt = struct.pack("<HHIIHH", tag, channels, rate, (rate * block) & 0xFFFFFFFF, block, bits)
    return (
        b"RIFF" + struct.pack("<I", 36 + len(data)) + b"WAVE"
        + b"fmt " + struct.pack("<I", 16) + fmt
        + b"data" + struct.pack("<I", len(data)) + data
    )  # fmt: skip


BAD = {
    "rate 0": (wav(rate=0), "sample rate 0 Hz"),
    "absurd rate": (wav(rate=4_000_000_000), "sample rate 4000000000 Hz"),
    "0 channels": (wav(channels=0), "channel count 0"),
    "65000 channels": (wav(channels=65000), "channel count 65000"),
    "float at rate 0": (wav(rate=0, bits=32, tag=3), "sample rate 0 Hz"),
    "0 bits": (wav(bits=0), "cannot decode"),
}


@pytest.mark.parametrize("name", list(BAD))
def test_a_streamed_body_with_a_bad_header_is_refused_by_name(name):
    body, problem = BAD[name]
    decoder = body_decoder("wav", None, 60)
    with pytest.raises(InvalidAudio, match=problem):
        decoder.feed(body)
        decoder.finish()


@pytest.mark.parametrize("name", list(BAD))
def test_a_whole_file_with_a_bad_header_is_refused_by_name(name):
    body, problem = BAD[name]
    with pytest.raises(InvalidAudio, match=problem):
        decode_file(body)


def test_a_good_header_still_decodes():
    decoder = body_decoder("wav", None, 60)
    pcm = decoder.feed(wav()) + decoder.finish()
    assert len(pcm) == 32000
    assert decode_file(wav()).size == 16000
