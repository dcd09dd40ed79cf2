"""One audio format inside: 16 kHz, signed 16-bit, mono PCM.

Conversion happens at the edges: :class:`PcmConverter` turns arbitrary PCM chunks
(any rate, width, channel count, split anywhere) into the internal format;
:func:`decode_file` reads anything PyAV can; :func:`encode` writes WAV, FLAC or raw PCM.
"""

from __future__ import annotations

import io
import struct
import wave
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from daemon.errors import InvalidAudio

if TYPE_CHECKING:
    import soxr

RATE = 16000
"""Internal sample rate (Hz)."""
WIDTH = 2
"""Internal sample width (bytes)."""
CHANNELS = 1
"""Internal channel count."""

OUTPUT_FORMATS = ("wav", "flac", "pcm")


@dataclass(frozen=True)
class AudioFormat:
    """Raw PCM layout of a stream."""

    rate: int
    """Sample rate (Hz)."""
    width: int
    """Bytes per sample: 1 (unsigned 8-bit), 2 (s16) or 4 (s32)."""
    channels: int
    """Interleaved channel count."""

    @property
    def frame_bytes(self) -> int:
        """Bytes per multi-channel sample frame."""
        return self.width * self.channels

    def validate(self, max_rate: int = 192000, max_channels: int = 8) -> None:
        """Raise InvalidAudio if the format is absurd."""
        if not 1000 <= self.rate <= max_rate:
            raise InvalidAudio(f"sample rate {self.rate} Hz is out of range 1000..{max_rate}")
        if self.width not in (1, 2, 4):
            raise InvalidAudio(f"sample width {self.width} bytes is not 1, 2 or 4")
        if not 1 <= self.channels <= max_channels:
            raise InvalidAudio(f"channel count {self.channels} is out of range 1..{max_channels}")


INTERNAL = AudioFormat(RATE, WIDTH, CHANNELS)
"""The internal format as an :class:`AudioFormat`."""


def pcm_to_float(pcm: bytes | np.ndarray) -> np.ndarray:
    """Internal s16 PCM to float32 in [-1, 1]."""
    arr = np.frombuffer(pcm, dtype=np.int16) if isinstance(pcm, bytes) else pcm
    return arr.astype(np.float32) / 32768.0


def float_to_pcm(audio: np.ndarray) -> bytes:
    """float32 in [-1, 1] to s16 PCM bytes."""
    return (np.clip(audio, -1.0, 1.0) * 32767.0).astype("<i2").tobytes()


def _to_float_frames(data: bytes, fmt: AudioFormat) -> np.ndarray:
    if fmt.width == 1:
        samples = (np.frombuffer(data, dtype=np.uint8).astype(np.float32) - 128.0) / 128.0
    elif fmt.width == 2:
        samples = np.frombuffer(data, dtype="<i2").astype(np.float32) / 32768.0
    else:
        samples = np.frombuffer(data, dtype="<i4").astype(np.float32) / 2147483648.0
    if fmt.channels > 1:
        samples = samples.reshape(-1, fmt.channels).mean(axis=1)
    return samples


class PcmConverter:
    """Streaming converter from any PCM layout to internal 16 kHz s16 mono.

    Chunks may split a sample frame anywhere; the remainder is carried over. Audio
    already in the internal format passes through unchanged, sample for sample, so a
    stream decodes exactly what a file of the same samples would.
    """

    def __init__(self, fmt: AudioFormat) -> None:
        self.fmt = fmt
        self._rest = b""
        self._resampler: soxr.ResampleStream | _SwrUpsampler | None = None
        if fmt.rate < RATE:
            # Narrowband up to 16 kHz: libswresample, the resampler faster-whisper uses
            # on files. On the held-out set at 8 kHz, Whisper missed 1.0-1.4 points more
            # words after soxr (any quality) than after it (bench/RESULTS.md, "Held-out").
            self._resampler = _SwrUpsampler(fmt.rate)
        elif fmt.rate != RATE:
            import soxr

            self._resampler = soxr.ResampleStream(fmt.rate, RATE, 1, dtype="float32")

    def convert(self, data: bytes) -> np.ndarray:
        """Convert one chunk; returns internal int16 samples (possibly empty)."""
        data = self._rest + data
        usable = len(data) - len(data) % self.fmt.frame_bytes
        self._rest = data[usable:]
        if self.fmt == INTERNAL:
            return np.frombuffer(data[:usable], dtype="<i2").astype(np.int16)
        mono = _to_float_frames(data[:usable], self.fmt)
        if self._resampler is not None:
            mono = self._resampler.resample_chunk(mono, last=False)
        return _float_to_int16(mono)

    def flush(self) -> np.ndarray:
        """Return the resampler's tail at end of stream."""
        self._rest = b""
        if self._resampler is None:
            return np.zeros(0, dtype=np.int16)
        tail = self._resampler.resample_chunk(np.zeros(0, dtype=np.float32), last=True)
        return _float_to_int16(tail)


class _SwrUpsampler:
    """Streaming float32 mono resampling to 16 kHz with libswresample (PyAV)."""

    def __init__(self, rate: int) -> None:
        import av

        self._rate = rate
        self._swr = av.AudioResampler(format="flt", layout="mono", rate=RATE)

    def resample_chunk(self, audio: np.ndarray, last: bool = False) -> np.ndarray:
        import av

        frames: list[Any] = []
        if audio.size:
            frame = av.AudioFrame.from_ndarray(
                np.ascontiguousarray(audio, dtype=np.float32).reshape(1, -1),
                format="flt",
                layout="mono",
            )
            frame.sample_rate = self._rate
            frames += self._swr.resample(frame)
        if last:
            frames += self._swr.resample(None)
        if not frames:
            return np.zeros(0, dtype=np.float32)
        return np.concatenate([f.to_ndarray().reshape(-1) for f in frames]).astype(np.float32)


def to_internal(fmt: AudioFormat, pcm: bytes) -> np.ndarray:
    """PCM of ``fmt`` as the internal 16 kHz int16 samples (blocking)."""
    converter = PcmConverter(fmt)
    return np.concatenate([converter.convert(pcm), converter.flush()])


def _float_to_int16(audio: np.ndarray) -> np.ndarray:
    """float32 (the scale of :func:`pcm_to_float`) to int16, rounded to the nearest step.

    The inverse of ``/ 32768``: an s16 sample survives the round trip unchanged.
    Truncating instead would pull every sample one step towards zero and silence
    the quietest ones (a 1-LSB dead zone).
    """
    return np.clip(np.rint(audio * 32768.0), -32768.0, 32767.0).astype(np.int16)


class PcmResampler:
    """Streaming resampler of mono s16 PCM between two rates: chunk boundaries leave no
    clicks, and a chunk may end mid-sample (the odd byte waits for the next)."""

    def __init__(self, from_rate: int, to_rate: int) -> None:
        self._rest = b""
        self._stream = None
        if from_rate != to_rate:
            import soxr

            self._stream = soxr.ResampleStream(from_rate, to_rate, 1, dtype="float32")

    def feed(self, pcm: bytes, last: bool = False) -> bytes:
        """The resampled audio for ``pcm`` so far (all of it with ``last``)."""
        data = self._rest + pcm
        usable = len(data) - len(data) % 2
        self._rest = data[usable:]
        if self._stream is None:
            return data[:usable]
        audio = np.frombuffer(data[:usable], dtype="<i2").astype(np.float32) / 32768.0
        return float_to_pcm(self._stream.resample_chunk(audio, last=last))


def resample_pcm(pcm: bytes, from_rate: int, to_rate: int) -> bytes:
    """Resample mono s16 PCM between rates."""
    if from_rate == to_rate or not pcm:
        return pcm
    import soxr

    audio = np.frombuffer(pcm, dtype="<i2").astype(np.float32) / 32768.0
    return float_to_pcm(soxr.resample(audio, from_rate, to_rate))


MAX_HEADER_RATE = 768_000
"""The highest sample rate a header may name (limits.max_sample_rate's own ceiling)."""
MAX_HEADER_CHANNELS = 64
"""The most channels a header may name (limits.max_channels' ceiling)."""
_HEADER_SCAN = 1 << 16
"""How far into a WAV its fmt chunk is looked for."""


def check_header_format(rate: int, channels: int) -> None:
    """Refuse a file header that names no usable sample rate or channel count (the
    request's own limits are checked against the configuration later)."""
    if not 1000 <= rate <= MAX_HEADER_RATE:
        raise InvalidAudio(f"the WAV header's sample rate {rate} Hz is not a usable rate")
    if not 1 <= channels <= MAX_HEADER_CHANNELS:
        raise InvalidAudio(f"the WAV header's channel count {channels} is not usable")


def check_wav_header(data: bytes) -> None:
    """For a WAV file's bytes: refuse a fmt chunk without a usable rate or channel
    count, by name (PyAV would only say the data is invalid). Other files pass."""
    if data[:4] != b"RIFF" or data[8:12] != b"WAVE":
        return
    pos = 12
    while pos + 8 <= min(len(data), _HEADER_SCAN):
        chunk, size = data[pos : pos + 4], struct.unpack("<I", data[pos + 4 : pos + 8])[0]
        if chunk == b"fmt " and size >= 8 and pos + 16 <= len(data):
            _, channels, rate = struct.unpack("<HHI", data[pos + 8 : pos + 16])
            check_header_format(rate, channels)
            return
        pos += 8 + size + (size & 1)


def decode_file(source: str | bytes, max_seconds: float = 3600.0, rate: int = RATE) -> np.ndarray:
    """Decode any file PyAV reads to internal int16 samples.

    Args:
        source: a path, or the file's bytes.
        max_seconds: refuse audio longer than this (AudioTooLong).
        rate: output sample rate (Hz); voice recordings keep more than ASR needs.

    Returns:
        mono int16 samples at ``rate`` (16 kHz unless asked).
    """
    import av

    from daemon.errors import AudioTooLong

    if isinstance(source, bytes) and not source:
        raise InvalidAudio("audio is empty (0 bytes)")
    if isinstance(source, bytes):
        check_wav_header(source)
    handle = io.BytesIO(source) if isinstance(source, bytes) else source
    limit = int(max_seconds * rate)
    parts: list[np.ndarray] = []
    total = 0
    try:
        with av.open(handle, mode="r") as container:
            if not container.streams.audio:
                raise InvalidAudio("the file has no audio stream")
            stream = container.streams.audio[0]
            resampler = av.AudioResampler(format="s16", layout="mono", rate=rate)
            for frame in container.decode(stream):
                for out in resampler.resample(frame):
                    arr = out.to_ndarray().reshape(-1)
                    total += arr.size
                    if total > limit:
                        raise AudioTooLong(f"audio is longer than {max_seconds:g} s")
                    parts.append(arr.astype(np.int16))
            for out in resampler.resample(None):
                parts.append(out.to_ndarray().reshape(-1).astype(np.int16))
    except (InvalidAudio, AudioTooLong):
        raise
    except FileNotFoundError as exc:
        raise InvalidAudio(f"cannot open audio: {exc.filename}: no such file") from None
    except (av.FFmpegError, ValueError, OSError) as exc:
        raise InvalidAudio(f"cannot decode audio: {exc}") from None
    if not parts or sum(p.size for p in parts) == 0:
        raise InvalidAudio("audio has no samples")
    return np.concatenate(parts)


def encode(pcm: bytes, rate: int, fmt: str) -> bytes:
    """Encode complete mono s16 PCM as ``wav``, ``flac`` or raw ``pcm``."""
    if fmt == "pcm":
        return pcm
    if not pcm:
        raise InvalidAudio("there is no audio to encode")
    if fmt == "wav":
        buf = io.BytesIO()
        with wave.open(buf, "wb") as wav:
            wav.setnchannels(1)
            wav.setsampwidth(2)
            wav.setframerate(rate)
            wav.writeframes(pcm)
        return buf.getvalue()
    if fmt == "flac":
        return _encode_flac(pcm, rate)
    raise InvalidAudio(f"unknown output format '{fmt}' (use {', '.join(OUTPUT_FORMATS)})")


def _encode_flac(pcm: bytes, rate: int) -> bytes:
    import av

    buf = io.BytesIO()
    with av.open(buf, mode="w", format="flac") as container:
        stream = container.add_stream("flac", rate=rate, layout="mono")
        samples = np.frombuffer(pcm, dtype="<i2").reshape(1, -1)
        frame = av.AudioFrame.from_ndarray(samples, format="s16", layout="mono")
        frame.sample_rate = rate
        for packet in stream.encode(frame):
            container.mux(packet)
        for packet in stream.encode(None):
            container.mux(packet)
    return buf.getvalue()
