"""PcmConverter against a reference: what a stream turns into must be what the same
samples give when converted at once with a high-quality resampler (or unchanged)."""

import io

import numpy as np
import pytest
import soxr

from daemon.audio.pcm import RATE, AudioFormat, PcmConverter, pcm_to_float


def speechlike(rate: int, seconds: float = 1.0, level: float = 0.1) -> np.ndarray:
    """Harmonics of a gliding pitch under a syllable-rate envelope, plus a little noise."""
    rng = np.random.default_rng(7)
    t = np.arange(int(rate * seconds)) / rate
    phase = 2 * np.pi * np.cumsum(120 + 40 * np.sin(2 * np.pi * 1.5 * t)) / rate
    voiced = sum(np.sin(k * phase) / k for k in range(1, 25))
    envelope = 0.5 + 0.5 * np.sin(2 * np.pi * 4 * t) ** 2
    signal = voiced * envelope + 0.05 * rng.standard_normal(t.size)
    return (level * signal / np.max(np.abs(signal))).astype(np.float32)


def stream(conv: PcmConverter, data: bytes, sizes: list[int]) -> np.ndarray:
    """Feed ``data`` in chunks of the given sizes (cycled), then flush."""
    out, i, k = [], 0, 0
    while i < len(data):
        out.append(conv.convert(data[i : i + sizes[k % len(sizes)]]))
        i += sizes[k % len(sizes)]
        k += 1
    out.append(conv.flush())
    return np.concatenate(out)


def snr_db(got: np.ndarray, want: np.ndarray) -> float:
    err = got.astype(np.float64) - want.astype(np.float64)
    return float(10 * np.log10(np.sum(want.astype(np.float64) ** 2) / max(np.sum(err**2), 1e-20)))


def test_internal_format_passes_through_unchanged():
    # The quietest samples are the ones a truncating float round trip loses.
    rng = np.random.default_rng(1)
    pcm = np.concatenate(
        [rng.integers(-3, 4, 4000), rng.integers(-32768, 32768, 4000), [32767, -32768, 1, -1]]
    ).astype("<i2")
    got = stream(PcmConverter(AudioFormat(RATE, 2, 1)), pcm.tobytes(), [320, 7, 641])
    np.testing.assert_array_equal(got, pcm)


def test_identical_stereo_channels_give_the_channel_exactly():
    rng = np.random.default_rng(2)
    mono = rng.integers(-2000, 2000, 8000).astype("<i2")
    stereo = np.repeat(mono, 2).tobytes()
    got = stream(PcmConverter(AudioFormat(RATE, 2, 2)), stereo, [640, 3])
    np.testing.assert_array_equal(got, mono)


@pytest.mark.parametrize("chunk_ms", [10, 20])
def test_narrowband_is_upsampled_as_faster_whisper_reads_the_file(chunk_ms):
    # 8 kHz is brought to 16 kHz by libswresample, as faster-whisper's decode_audio does
    # for a file: the stream gives what the raw model would hear from the same WAV.
    from faster_whisper.audio import decode_audio

    from tests.helpers import wav

    frames = np.round(speechlike(8000) * 32767).astype("<i2")
    got = stream(PcmConverter(AudioFormat(8000, 2, 1)), frames.tobytes(), [160 * chunk_ms // 10, 5])
    want = decode_audio(io.BytesIO(wav(frames, 8000)), sampling_rate=RATE)
    assert abs(len(got) - len(want)) <= 1
    n = min(len(got), len(want))
    assert snr_db(pcm_to_float(got[:n]), want[:n]) > 50


@pytest.mark.parametrize(
    ("rate", "channels", "chunk_ms"),
    [(44100, 2, 10), (44100, 2, 20), (48000, 1, 10), (22050, 2, 32)],
)
def test_chunked_stream_matches_one_shot_high_quality_resample(rate, channels, chunk_ms):
    mono = speechlike(rate)
    frames = np.round(mono * 32767).astype("<i2")
    interleaved = np.repeat(frames, channels)
    if channels == 2:
        interleaved[1::2] = np.round(frames * 0.9).astype("<i2")  # a quieter right channel
    step = rate * chunk_ms // 1000 * 2 * channels
    # Real chunk sizes, and odd ones that split sample frames.
    got = stream(PcmConverter(AudioFormat(rate, 2, channels)), interleaved.tobytes(), [step, 5])
    downmix = interleaved.reshape(-1, channels).astype(np.float32).mean(axis=1) / 32768
    want = soxr.resample(downmix, rate, RATE, quality="VHQ")
    assert abs(len(got) - len(want)) <= 1
    n = min(len(got), len(want))
    assert snr_db(pcm_to_float(got[:n]), want[:n]) > 50


def test_downmix_averages_the_channels():
    left = np.round(speechlike(RATE, 0.2) * 32767).astype("<i2")
    stereo = np.stack([left, np.zeros_like(left)], axis=1).reshape(-1)
    got = PcmConverter(AudioFormat(RATE, 2, 2)).convert(stereo.tobytes())
    assert np.max(np.abs(got.astype(int) - left.astype(int) / 2)) <= 0.5
