"""Incremental decoders for uploaded audio bodies.

An upload may be decoded while it still arrives, so that a speech session works
during the upload: raw PCM passes through, WAV is unwrapped after its header,
AMR-WB frames are decoded one by one. Other codecs (and WAV that is not integer
PCM) are buffered and decoded with PyAV when the body is complete.
"""

from __future__ import annotations

import struct
from typing import Any

import numpy as np

from daemon.audio.pcm import INTERNAL, RATE, AudioFormat, check_header_format, decode_file
from daemon.errors import InvalidAudio

AMRWB_MAGIC = b"#!AMR-WB\n"


class BodyDecoder:
    """Turns body chunks into PCM of :attr:`fmt`; the base class buffers everything."""

    inline = False
    """Whether :meth:`feed` only copies bytes (cheap enough for the event loop); else it
    may decode, and runs in a worker thread."""

    def __init__(self, max_seconds: float) -> None:
        self.fmt: AudioFormat | None = None
        """Layout of the PCM returned; None until known."""
        self.max_seconds = max_seconds
        self._buffer = bytearray()

    def feed(self, data: bytes) -> bytes:
        """Add a body chunk; return the PCM it completes (possibly none)."""
        self._buffer += data
        return b""

    def finish(self) -> bytes:
        """The body is complete: return the remaining PCM (blocking: may decode)."""
        if not self._buffer:
            return b""
        samples = decode_file(bytes(self._buffer), self.max_seconds)
        self._buffer.clear()
        self.fmt = INTERNAL
        return samples.astype("<i2").tobytes()


class PcmBody(BodyDecoder):
    """Raw PCM in the layout the headers declared."""

    inline = True

    def __init__(self, fmt: AudioFormat, max_seconds: float) -> None:
        super().__init__(max_seconds)
        self.fmt = fmt

    def feed(self, data: bytes) -> bytes:
        """Pass the chunk through."""
        return data

    def finish(self) -> bytes:
        """Nothing is held back."""
        return b""


class WavBody(BodyDecoder):
    """A WAV file read as it arrives: the header first, then the samples."""

    inline = True

    def __init__(self, max_seconds: float) -> None:
        super().__init__(max_seconds)
        self._remaining: int | None = None
        """Bytes of the data chunk still to come; None while in the header."""
        self._whole = False
        """True when the WAV is not integer PCM: decode it whole at the end."""

    def feed(self, data: bytes) -> bytes:
        """Parse the header once complete; then return sample bytes."""
        if self._whole:
            return super().feed(data)
        if self._remaining is not None:
            return self._take(data)
        self._buffer += data
        return self._parse_header()

    def _take(self, data: bytes) -> bytes:
        assert self._remaining is not None
        out = data[: self._remaining]
        self._remaining -= len(out)
        return out

    def _parse_header(self) -> bytes:
        buf = bytes(self._buffer)
        if len(buf) < 12:
            return b""
        if buf[:4] != b"RIFF" or buf[8:12] != b"WAVE":
            raise InvalidAudio("the body is not a WAV file (no RIFF/WAVE header)")
        pos = 12
        fmt: AudioFormat | None = None
        while pos + 8 <= len(buf):
            chunk, size = buf[pos : pos + 4], struct.unpack("<I", buf[pos + 4 : pos + 8])[0]
            if chunk == b"data":
                if fmt is None:
                    raise InvalidAudio("the WAV data chunk comes before its fmt chunk")
                self.fmt = fmt
                # Streaming writers put 0 or 0xFFFFFFFF here: read to the end then.
                self._remaining = size if 0 < size < 0xFFFFFFFF else 1 << 62
                rest = buf[pos + 8 :]
                self._buffer.clear()
                return self._take(rest)
            if size > 1 << 20:
                raise InvalidAudio(f"the WAV {chunk!r} chunk is implausibly large")
            if pos + 8 + size > len(buf):
                return b""  # wait for the rest of this chunk
            if chunk == b"fmt ":
                fmt = self._read_fmt(buf[pos + 8 : pos + 8 + size])
                if fmt is None:
                    self._whole = True  # float or compressed WAV: PyAV reads it whole
                    return b""
            pos += 8 + size + (size & 1)
        return b""

    @staticmethod
    def _read_fmt(body: bytes) -> AudioFormat | None:
        if len(body) < 16:
            raise InvalidAudio("the WAV fmt chunk is too short")
        tag, channels, rate, _, _, bits = struct.unpack("<HHIIHH", body[:16])
        check_header_format(rate, channels)  # whatever the encoding
        if tag == 0xFFFE and len(body) >= 26:
            tag = struct.unpack("<H", body[24:26])[0]  # WAVE_FORMAT_EXTENSIBLE sub-format
        if tag != 1 or bits not in (8, 16, 32):
            return None
        return AudioFormat(rate, bits // 8, channels)

    def finish(self) -> bytes:
        """Decode a buffered non-PCM WAV; a streamed one is already out."""
        if self._whole:
            return super().finish()
        if self._remaining is None:
            raise InvalidAudio("the WAV body ended inside its header")
        return b""


class AmrWbBody(BodyDecoder):
    """AMR-WB (the ``#!AMR-WB`` file format) decoded frame by frame with PyAV."""

    def __init__(self, max_seconds: float) -> None:
        super().__init__(max_seconds)
        import av

        self.fmt = INTERNAL
        self._magic_seen = False
        codec: Any = av.CodecContext.create("amrwb", "r")
        codec.sample_rate = RATE
        codec.layout = "mono"
        self._codec = codec
        self._resampler = av.AudioResampler(format="s16", layout="mono", rate=RATE)

    def feed(self, data: bytes) -> bytes:
        """Decode the frames this chunk completes."""
        if not self._magic_seen:
            self._buffer += data
            if len(self._buffer) < len(AMRWB_MAGIC):
                return b""
            if not self._buffer.startswith(AMRWB_MAGIC):
                raise InvalidAudio("the body is not AMR-WB (no #!AMR-WB header)")
            self._magic_seen = True
            data = bytes(self._buffer[len(AMRWB_MAGIC) :])
            self._buffer.clear()
        return self._decode(data)

    def _decode(self, data: bytes | None) -> bytes:
        import av

        out: list[np.ndarray] = []
        try:
            for packet in self._codec.parse(data or b""):
                for frame in self._codec.decode(packet):
                    out += [f.to_ndarray().reshape(-1) for f in self._resampler.resample(frame)]
            if data is None:
                for frame in self._codec.decode(None):
                    out += [f.to_ndarray().reshape(-1) for f in self._resampler.resample(frame)]
                out += [f.to_ndarray().reshape(-1) for f in self._resampler.resample(None)]
        except (av.FFmpegError, ValueError) as exc:
            raise InvalidAudio(f"cannot decode AMR-WB: {exc}") from None
        return b"".join(a.astype("<i2").tobytes() for a in out)

    def finish(self) -> bytes:
        """Flush the decoder."""
        if not self._magic_seen:
            raise InvalidAudio("the body is not AMR-WB (no #!AMR-WB header)")
        return self._decode(None)


def body_decoder(codec: str, fmt: AudioFormat | None, max_seconds: float) -> BodyDecoder:
    """The decoder for a ``codec`` body: pcm (in ``fmt``), wav, amrwb; else buffered."""
    if codec == "pcm":
        assert fmt is not None
        return PcmBody(fmt, max_seconds)
    if codec == "wav":
        return WavBody(max_seconds)
    if codec == "amrwb":
        return AmrWbBody(max_seconds)
    return BodyDecoder(max_seconds)
