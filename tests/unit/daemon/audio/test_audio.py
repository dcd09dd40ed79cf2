"""Format conversion at the edges: any PCM layout in, 16 kHz s16 mono out."""

import io
import wave

import numpy as np
import pytest

from daemon.audio.pcm import AudioFormat, PcmConverter, decode_file, encode
from daemon.errors import AudioTooLong, InvalidAudio
from tests.helpers import chunks, tone


def convert_all(data: bytes, fmt: AudioFormat, split: bool) -> np.ndarray:
    conv = PcmConverter(fmt)
    parts = [conv.convert(c) for c in (chunks(data) if split else [data])]
    parts.append(conv.flush())
    return np.concatenate(parts)


@pytest.mark.parametrize(
    "fmt",
    [
        AudioFormat(16000, 2, 1),
        AudioFormat(48000, 2, 2),
        AudioFormat(8000, 1, 1),
        AudioFormat(44100, 4, 1),
        AudioFormat(22050, 2, 6),
    ],
)
def test_any_layout_split_anywhere_gives_the_same_samples(fmt: AudioFormat):
    seconds = 0.5
    t = np.arange(int(seconds * fmt.rate)) / fmt.rate
    mono = np.sin(2 * np.pi * 440 * t) * 0.5
    if fmt.width == 1:
        samples = (mono * 127 + 128).astype(np.uint8)
    elif fmt.width == 2:
        samples = (mono * 32767).astype("<i2")
    else:
        samples = (mono * 2147483647).astype("<i4")
    data = np.repeat(samples, fmt.channels).tobytes()
    whole = convert_all(data, fmt, split=False)
    split = convert_all(data, fmt, split=True)
    assert abs(len(whole) - int(seconds * 16000)) <= 2
    assert abs(len(split) - len(whole)) <= 2
    n = min(len(split), len(whole))
    assert np.max(np.abs(split[:n].astype(int) - whole[:n].astype(int))) <= 2
    assert 0.45 < np.max(np.abs(whole)) / 32768 < 0.55


@pytest.mark.parametrize(
    ("fmt", "message"),
    [
        (AudioFormat(0, 2, 1), "sample rate 0 Hz"),
        (AudioFormat(10_000_000, 2, 1), "sample rate 10000000 Hz"),
        (AudioFormat(16000, 3, 1), "sample width 3"),
        (AudioFormat(16000, 2, 0), "channel count 0"),
        (AudioFormat(16000, 2, 500), "channel count 500"),
    ],
)
def test_absurd_formats_are_refused(fmt, message):
    with pytest.raises(InvalidAudio, match=message):
        fmt.validate()


def wav_bytes(samples: np.ndarray, rate: int = 16000) -> bytes:
    buf = io.BytesIO()
    with wave.open(buf, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(rate)
        w.writeframes(samples.tobytes())
    return buf.getvalue()


def test_decode_wav_and_flac_round_trip():
    audio = tone(0.5)
    assert np.array_equal(decode_file(encode(audio.tobytes(), 16000, "wav")), audio)
    flac = decode_file(encode(audio.tobytes(), 16000, "flac"))
    assert np.array_equal(flac, audio)  # FLAC is lossless
    resampled = decode_file(wav_bytes(tone(0.5), rate=8000))
    assert abs(len(resampled) - 16000) < 200


def test_decode_errors_are_typed():
    with pytest.raises(InvalidAudio, match="empty"):
        decode_file(b"")
    with pytest.raises(InvalidAudio, match="cannot decode"):
        decode_file(b"\x00garbage" * 100)
    with pytest.raises(InvalidAudio, match="no such file"):
        decode_file("/nonexistent/file.wav")
    with pytest.raises(AudioTooLong):
        decode_file(wav_bytes(tone(3.0)), max_seconds=1.0)


def test_unknown_output_format():
    with pytest.raises(InvalidAudio, match="unknown output format"):
        encode(b"\x00\x00", 16000, "ogg-vorbis-deluxe")
