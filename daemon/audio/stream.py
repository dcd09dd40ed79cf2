"""Incremental encoding of mono s16 PCM, for audio that is sent while it is made.

:class:`StreamEncoder` turns PCM blocks into bytes of WAV, raw PCM, FLAC, MP3, Opus
(in Ogg) or AAC (ADTS) as they come, so an HTTP response can start with the first
spoken sentence. A streamed WAV header cannot know the length: its sizes hold the
largest value, which players read as "until the end of the stream".
"""

from __future__ import annotations

import struct
import threading
from dataclasses import dataclass
from typing import Any

import numpy as np

from daemon.errors import InvalidRequest

STREAM_SIZE = 0xFFFFFFFF
"""RIFF and data chunk size of a WAV whose length is unknown."""


@dataclass(frozen=True)
class OutputFormat:
    """One encoding a client may ask for."""

    name: str
    media_type: str
    container: str | None
    """PyAV muxer; None for the formats written here directly."""
    codec: str | None
    rate: int | None = None
    """Sample rate the codec requires (Hz); None keeps the input rate."""


FORMATS = {
    f.name: f
    for f in (
        OutputFormat("wav", "audio/wav", None, None),
        OutputFormat("pcm", "audio/pcm", None, None),
        OutputFormat("flac", "audio/flac", "flac", "flac"),
        OutputFormat("mp3", "audio/mpeg", "mp3", "libmp3lame"),
        OutputFormat("opus", "audio/ogg", "ogg", "libopus", 48000),
        OutputFormat("aac", "audio/aac", "adts", "aac"),
    )
}


def output_format(name: str) -> OutputFormat:
    """The format called ``name`` (case-insensitive); InvalidRequest otherwise."""
    fmt = FORMATS.get(name.strip().lower())
    if fmt is None:
        raise InvalidRequest(f"unknown audio format '{name}' (formats: {', '.join(FORMATS)})")
    return fmt


def wav_header(rate: int, data_bytes: int = STREAM_SIZE) -> bytes:
    """A 44-byte mono s16 WAV header; the default sizes mean "unknown length"."""
    riff = STREAM_SIZE if data_bytes == STREAM_SIZE else 36 + data_bytes
    return (
        b"RIFF"
        + struct.pack("<I", riff)
        + b"WAVEfmt "
        + struct.pack("<IHHIIHH", 16, 1, 1, rate, rate * 2, 2, 16)
        + b"data"
        + struct.pack("<I", data_bytes)
    )


class _Sink:
    """A write-only, non-seekable file for PyAV: bytes are collected until taken."""

    def __init__(self) -> None:
        self._parts: list[bytes] = []

    def write(self, data: Any) -> int:
        self._parts.append(bytes(data))
        return len(data)

    def take(self) -> bytes:
        out, self._parts = b"".join(self._parts), []
        return out


class StreamEncoder:
    """Encodes mono s16 PCM at ``rate`` block by block (blocking calls: PyAV)."""

    def __init__(self, fmt: OutputFormat, rate: int) -> None:
        self.format = fmt
        self.rate = rate
        self._started = False
        self._closed = False
        self._container: Any = None
        # write() and close() run in worker threads; when a client leaves, close()
        # may be called while a cancelled write is still running in its thread.
        # PyAV's containers are not thread-safe: one call at a time.
        self._lock = threading.Lock()
        if fmt.container is not None:
            import av

            self._sink = _Sink()
            self._container = av.open(self._sink, mode="w", format=fmt.container)
            self._stream = self._container.add_stream(
                fmt.codec, rate=fmt.rate or rate, layout="mono"
            )
            codec_format = self._stream.codec_context.format
            self._resampler = av.AudioResampler(
                format=codec_format.name if codec_format else "s16",
                layout="mono",
                rate=fmt.rate or rate,
            )

    def write(self, pcm: bytes) -> bytes:
        """Encode one block; returns the bytes ready so far (possibly none)."""
        with self._lock:
            return self._write(pcm)

    def _write(self, pcm: bytes) -> bytes:
        if self._closed:
            raise ValueError("the encoder is closed")
        if self._container is None:
            head = b""
            if not self._started and self.format.name == "wav":
                head = wav_header(self.rate)
            self._started = True
            return head + pcm
        if not pcm:
            return b""
        import av

        samples = np.frombuffer(pcm[: len(pcm) - len(pcm) % 2], dtype="<i2").reshape(1, -1)
        frame = av.AudioFrame.from_ndarray(samples, format="s16", layout="mono")
        frame.sample_rate = self.rate
        for out in self._resampler.resample(frame):
            self._mux(out)
        return self._sink.take()

    def _mux(self, frame: Any) -> None:
        for packet in self._stream.encode(frame):
            self._container.mux(packet)

    def close(self) -> bytes:
        """Flush the encoder; returns the last bytes (idempotent)."""
        with self._lock:
            return self._close()

    def _close(self) -> bytes:
        """Flush the encoder; returns the last bytes. Safe to call more than once."""
        if self._closed:
            return b""
        self._closed = True
        if self._container is None:
            if not self._started and self.format.name == "wav":
                return wav_header(self.rate, 0)
            return b""
        for out in self._resampler.resample(None):
            self._mux(out)
        self._mux(None)
        self._container.close()
        return self._sink.take()
