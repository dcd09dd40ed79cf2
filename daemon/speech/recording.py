"""Keeping what a client sent: a request's audio as a private WAV file.

A client may ask for its upload to be stored (and the configuration allow it); the
request keeps the audio it was fed, and :func:`save_recording` writes it once the
request is answered, in a worker thread.
"""

from __future__ import annotations

import os
import time
import uuid
import wave
from pathlib import Path

from daemon.audio.pcm import AudioFormat
from daemon.ops.storage import writing


class Recording:
    """The audio a request was fed, in the format it came in, for one WAV file."""

    def __init__(self, folder: Path, prefix: str) -> None:
        self.folder = folder
        self.prefix = prefix
        self.fmt: AudioFormat | None = None
        self.parts: list[bytes] = []

    def add(self, fmt: AudioFormat, pcm: bytes) -> None:
        """Keep one chunk (a request's audio keeps one format)."""
        self.fmt = self.fmt or fmt
        self.parts.append(pcm)

    def save(self) -> Path | None:
        """Write the audio kept (blocking); None when there was none."""
        if self.fmt is None or not self.parts:
            return None
        return save_recording(self.folder, self.prefix, self.fmt, self.parts)


def save_recording(folder: Path, prefix: str, fmt: AudioFormat, parts: list[bytes]) -> Path:
    """Write ``parts`` as a WAV file under ``folder`` (blocking); its path."""
    path = folder / f"{prefix}-{time.strftime('%Y%m%d-%H%M%S')}-{uuid.uuid4().hex[:8]}.wav"
    with writing("saved audio", folder):
        folder.mkdir(parents=True, exist_ok=True)
        # 0600: recordings of the household are for the daemon's user only.
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with open(fd, "wb") as raw, wave.open(raw, "wb") as out:
        out.setnchannels(fmt.channels)
        out.setsampwidth(fmt.width)
        out.setframerate(fmt.rate)
        out.writeframes(b"".join(parts))
    return path
