"""The Realtime API's audio formats at the edge: 24 kHz PCM and G.711 at 8 kHz.

Audio travels base64-encoded inside JSON events. Input is handed to the
conversation in its own layout (the speech session converts any PCM to 16 kHz);
G.711 is expanded to 16-bit PCM first. Reply audio is synthesized at the format's
rate (the TTS worker resamples), and only compressed here. G.711 coding is two
table lookups per sample (ITU-T G.711, the segment tables of Sun's reference
``g711.c``), cheap enough for the event loop at speech sizes; large payloads are
coded in a worker thread.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
from dataclasses import dataclass
from functools import cache

import numpy as np

from daemon.audio.pcm import AudioFormat, resample_pcm
from daemon.errors import InvalidAudio

PCM_RATE = 24000
"""The only PCM rate of the Realtime API (Hz)."""
G711_RATE = 8000
"""G.711's rate (Hz)."""
OFF_LOOP_BYTES = 256 * 1024
"""Payloads from this size on are coded in a worker thread."""


@dataclass(frozen=True)
class WireFormat:
    """One audio format of the Realtime API."""

    type: str
    """``audio/pcm``, ``audio/pcmu`` or ``audio/pcma``."""
    rate: int
    """Sample rate (Hz)."""
    beta: str
    """The 2024 beta's name: ``pcm16``, ``g711_ulaw``, ``g711_alaw``."""

    @property
    def pcm(self) -> AudioFormat:
        """The PCM layout its samples expand to."""
        return AudioFormat(self.rate, 2, 1)

    def describe(self) -> dict[str, object]:
        """As the generally available API writes it (``{"type", "rate"}``)."""
        return (
            {"type": self.type, "rate": self.rate}
            if self.type == "audio/pcm"
            else {"type": self.type}
        )

    def to_pcm(self, data: bytes) -> bytes:
        """Encoded bytes to 16-bit little-endian PCM at :attr:`rate`."""
        if self.type == "audio/pcm":
            return data[: len(data) - len(data) % 2]
        table = _ulaw_to_pcm() if self.type == "audio/pcmu" else _alaw_to_pcm()
        return table[np.frombuffer(data, dtype=np.uint8)].astype("<i2").tobytes()

    def from_pcm(self, pcm: bytes, rate: int) -> bytes:
        """16-bit PCM at ``rate`` to this format (resampled when the rates differ)."""
        pcm = resample_pcm(pcm, rate, self.rate)
        if self.type == "audio/pcm":
            return pcm
        table = _pcm_to_ulaw() if self.type == "audio/pcmu" else _pcm_to_alaw()
        samples = np.frombuffer(pcm[: len(pcm) - len(pcm) % 2], dtype="<i2")
        return table[samples.astype(np.int32) + 32768].tobytes()


PCM = WireFormat("audio/pcm", PCM_RATE, "pcm16")
PCMU = WireFormat("audio/pcmu", G711_RATE, "g711_ulaw")
PCMA = WireFormat("audio/pcma", G711_RATE, "g711_alaw")
FORMATS = {f.type: f for f in (PCM, PCMU, PCMA)} | {f.beta: f for f in (PCM, PCMU, PCMA)}
"""Every format by its generally available and its beta name."""


def wire_format(value: object, param: str) -> WireFormat:
    """The format a client names: ``{"type": "audio/pcm", "rate": 24000}`` or ``"pcm16"``."""
    name, rate = value, None
    if isinstance(value, dict):
        name, rate = value.get("type"), value.get("rate")
    fmt = FORMATS.get(name) if isinstance(name, str) else None
    if fmt is None:
        known = ", ".join(f.type for f in (PCM, PCMU, PCMA))
        raise InvalidAudio(f"{param}: unknown audio format {name!r} (formats: {known})")
    if rate is not None and rate != fmt.rate:
        raise InvalidAudio(f"{param}: {fmt.type} is {fmt.rate} Hz only, not {rate!r}")
    return fmt


def decode_base64(text: object, param: str) -> bytes:
    """The bytes of a base64 ``audio`` field."""
    if not isinstance(text, str):
        raise InvalidAudio(f"{param} must be a base64 string")
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raise InvalidAudio(f"{param} is not valid base64") from None


async def received(fmt: WireFormat, text: object, param: str) -> bytes:
    """A base64 payload of ``fmt`` as PCM (large ones decoded in a worker thread)."""
    if isinstance(text, str) and len(text) >= OFF_LOOP_BYTES:
        return await asyncio.to_thread(lambda: fmt.to_pcm(decode_base64(text, param)))
    return fmt.to_pcm(decode_base64(text, param))


def encoded(fmt: WireFormat, pcm: bytes, rate: int) -> str:
    """Reply PCM at ``rate`` as base64 text of ``fmt`` (blocking when it resamples)."""
    return base64.b64encode(fmt.from_pcm(pcm, rate)).decode("ascii")


# ---------------------------------------------------------------- G.711 tables

_SEG_ULAW_END = np.array([0x3F, 0x7F, 0xFF, 0x1FF, 0x3FF, 0x7FF, 0xFFF, 0x1FFF])
_SEG_ALAW_END = np.array([0x1F, 0x3F, 0x7F, 0xFF, 0x1FF, 0x3FF, 0x7FF, 0xFFF])
_ULAW_BIAS = 0x84
_ULAW_CLIP = 8159


@cache
def _ulaw_to_pcm() -> np.ndarray:
    u = ~np.arange(256, dtype=np.int32) & 0xFF
    t = ((u & 0x0F) << 3) + _ULAW_BIAS
    t <<= (u & 0x70) >> 4
    return np.where(u & 0x80, _ULAW_BIAS - t, t - _ULAW_BIAS).astype(np.int16)


@cache
def _alaw_to_pcm() -> np.ndarray:
    a = np.arange(256, dtype=np.int32) ^ 0x55
    seg = (a & 0x70) >> 4
    t = (a & 0x0F) << 4
    t = np.where(seg == 0, t + 8, (t + 0x108) << np.maximum(seg - 1, 0))
    return np.where(a & 0x80, t, -t).astype(np.int16)


@cache
def _pcm_to_ulaw() -> np.ndarray:
    """μ-law byte of every 16-bit sample, indexed by ``sample + 32768``."""
    pcm = np.arange(-32768, 32768, dtype=np.int32) >> 2
    mask = np.where(pcm < 0, 0x7F, 0xFF)
    value = np.minimum(np.abs(pcm), _ULAW_CLIP) + (_ULAW_BIAS >> 2)
    seg = np.searchsorted(_SEG_ULAW_END, value)
    code = (seg << 4) | ((value >> (seg + 1)) & 0x0F)
    code = np.where(seg >= 8, 0x7F, code)
    return (code ^ mask).astype(np.uint8)


@cache
def _pcm_to_alaw() -> np.ndarray:
    """A-law byte of every 16-bit sample, indexed by ``sample + 32768``."""
    pcm = np.arange(-32768, 32768, dtype=np.int32) >> 3
    mask = np.where(pcm >= 0, 0xD5, 0x55)
    value = np.where(pcm >= 0, pcm, -pcm - 1)
    seg = np.searchsorted(_SEG_ALAW_END, value)
    shift = np.where(seg < 2, 1, seg)
    code = (np.minimum(seg, 7) << 4) | ((value >> shift) & 0x0F)
    code = np.where(seg >= 8, 0x7F, code)
    return (code ^ mask).astype(np.uint8)
