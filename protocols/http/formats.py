"""Transcript response formats of the OpenAI API (json, text, srt, vtt, verbose_json), and
the OpenAPI description of the responses that are not JSON."""

from __future__ import annotations

import json
from typing import Any

from daemon.audio.stream import FORMATS
from daemon.errors import InvalidRequest
from daemon.runtime.api import Segment

RESPONSE_FORMATS = ("json", "text", "srt", "verbose_json", "vtt")
TEXT_MEDIA_TYPES = ("application/json", "text/plain", "text/vtt", "text/event-stream")
"""What a transcription answers: JSON, text or SRT, WebVTT, or server-sent events."""


def media_responses(
    media_types: tuple[str, ...] | list[str], description: str, status: int = 200
) -> dict[int | str, dict[str, Any]]:
    """OpenAPI ``responses`` for a route whose ``status`` answer is one of ``media_types``."""
    binary = {"type": "string", "format": "binary"}
    content = {
        media_type: {"schema": {} if media_type == "application/json" else binary}
        for media_type in media_types
    }
    return {status: {"description": description, "content": content}}


def audio_responses(description: str) -> dict[int | str, dict[str, Any]]:
    """OpenAPI ``responses`` for a route that streams audio in any output format."""
    media_types = sorted({fmt.media_type for fmt in FORMATS.values()})
    return media_responses(media_types, description)


def timestamp(seconds: float, separator: str) -> str:
    """``HH:MM:SS<separator>mmm`` (``,`` for SRT, ``.`` for WebVTT)."""
    millis = max(0, round(seconds * 1000))
    hours, rest = divmod(millis, 3_600_000)
    minutes, rest = divmod(rest, 60_000)
    secs, millis = divmod(rest, 1000)
    return f"{hours:02d}:{minutes:02d}:{secs:02d}{separator}{millis:03d}"


def to_srt(segments: tuple[Segment, ...] | list[Segment]) -> str:
    """SubRip subtitles, one cue per segment."""
    cues = [
        f"{i}\n{timestamp(s.start_s, ',')} --> {timestamp(s.end_s, ',')}\n{s.text.strip()}\n"
        for i, s in enumerate((s for s in segments if s.text.strip()), start=1)
    ]
    return "\n".join(cues)


def to_vtt(segments: tuple[Segment, ...] | list[Segment]) -> str:
    """WebVTT subtitles, one cue per segment."""
    cues = [
        f"{timestamp(s.start_s, '.')} --> {timestamp(s.end_s, '.')}\n{s.text.strip()}\n"
        for s in segments
        if s.text.strip()
    ]
    return "WEBVTT\n\n" + "\n".join(cues)


def verbose_json(
    text: str, language: str, duration_s: float, segments: tuple[Segment, ...] | list[Segment]
) -> dict[str, Any]:
    """OpenAI's ``verbose_json`` body (fields Whisper does not report are zero)."""
    return {
        "task": "transcribe",
        "language": language,
        "duration": round(duration_s, 3),
        "text": text,
        "segments": [
            {
                "id": i,
                "seek": 0,
                "start": round(s.start_s, 3),
                "end": round(s.end_s, 3),
                "text": s.text,
                "tokens": [],
                "temperature": 0.0,
                "avg_logprob": 0.0,
                "compression_ratio": 0.0,
                "no_speech_prob": 0.0,
            }
            for i, s in enumerate(segments)
        ],
    }


def check_response_format(name: str) -> str:
    """The format name, or InvalidRequest naming the choices."""
    if name not in RESPONSE_FORMATS:
        raise InvalidRequest(
            f"unknown response_format '{name[:32]}' (formats: {', '.join(RESPONSE_FORMATS)})"
        )
    return name


def sse(data: dict[str, Any] | str) -> bytes:
    """One server-sent event carrying JSON (or a bare string such as ``[DONE]``)."""
    payload = data if isinstance(data, str) else json.dumps(data, ensure_ascii=False)
    return f"data: {payload}\n\n".encode()
