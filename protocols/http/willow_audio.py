"""Willow upload bodies: the ``x-audio-*`` headers that describe them.

A Willow device streams its microphone as a chunked body while the person speaks;
:mod:`daemon.audio.decode` turns the chunks into PCM as they arrive.
"""

from __future__ import annotations

from collections.abc import Mapping

from daemon.audio.pcm import RATE, AudioFormat
from daemon.errors import InvalidAudio


def _header_int(headers: Mapping[str, str], name: str, required: bool) -> int | None:
    value = headers.get(name)
    if value is None or not value.strip():
        if required:
            raise InvalidAudio(f"the {name} header is missing")
        return None
    try:
        return int(value.strip())
    except ValueError:
        raise InvalidAudio(f"the {name} header is not a number: {value[:40]!r}") from None


def parse_audio_headers(
    headers: Mapping[str, str], max_rate: int, max_channels: int
) -> tuple[str, AudioFormat | None]:
    """The codec and, for raw PCM, the sample layout the headers declare.

    ``x-audio-codec`` is required; raw ``pcm`` also needs ``x-audio-sample-rate``,
    ``x-audio-bits`` (8, 16 or 32) and ``x-audio-channel``. Containers (wav, amrwb
    and anything PyAV reads) carry their own layout, so those headers are optional
    there, but must be sane when present.
    """
    codec = (headers.get("x-audio-codec") or "").strip().lower()
    if not codec:
        raise InvalidAudio("the x-audio-codec header is missing")
    if len(codec) > 32 or not codec.replace("_", "").replace("-", "").isalnum():
        raise InvalidAudio(f"unknown x-audio-codec {codec[:32]!r}")
    required = codec == "pcm"
    rate = _header_int(headers, "x-audio-sample-rate", required)
    bits = _header_int(headers, "x-audio-bits", required)
    channels = _header_int(headers, "x-audio-channel", required)
    if bits is not None and bits not in (8, 16, 32):
        raise InvalidAudio(f"x-audio-bits must be 8, 16 or 32, got {bits}")
    # Explicit None checks: a header of 0 is a value to refuse, not a missing one.
    fmt = AudioFormat(
        RATE if rate is None else rate,
        2 if bits is None else bits // 8,
        1 if channels is None else channels,
    )
    fmt.validate(max_rate, max_channels)
    return codec, fmt if required else None
