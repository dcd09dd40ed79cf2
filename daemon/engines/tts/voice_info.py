"""What a voice is: its facts and settings (:class:`VoiceInfo`), where a remote one is
spoken (:class:`RemoteVoice`), and the rules its name and defaults follow."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from daemon.errors import InvalidRequest, InvalidVoice

NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
"""A voice name; always used with ``fullmatch`` (``$`` would let a trailing newline in)."""
METADATA = "voice.json"
DEFAULT_RANGES: dict[str, tuple[float, float]] = {
    "speed": (0.25, 4.0),
    "noise_scale": (0.0, 2.0),
    "noise_w_scale": (0.0, 2.0),
    "volume": (0.0, 4.0),
}
"""Allowed range of each numeric synthesis default."""
DEFAULT_KEYS = ("default_speaker", *DEFAULT_RANGES)
"""Synthesis defaults a voice's metadata may set."""


@dataclass(frozen=True)
class RemoteVoice:
    """Where a remote voice is spoken: its ``tts.remote`` group, the model and the
    server's own name for the voice (part of the cache key)."""

    group: str
    model: str
    voice: str


@dataclass(frozen=True)
class VoiceInfo:
    """One voice in the store."""

    name: str
    model_path: Path
    config_path: Path
    language: str
    sample_rate: int
    speakers: tuple[str, ...]
    """Speaker names of multi-speaker voices (empty for single-speaker)."""
    display_name: str
    source: str
    """bundled or user."""
    read_only: bool
    attribution_name: str = "Piper"
    attribution_url: str = "https://github.com/OHF-Voice/piper1-gpl"
    default_speaker: str | None = None
    speed: float = 1.0
    """Speaking rate multiplier applied under each request's own."""
    noise_scale: float | None = None
    noise_w_scale: float | None = None
    volume: float = 1.0
    """Gain multiplied with each request's own."""
    origin: str = ""
    """How a user voice came: imported, enrolled (trained) or a folder put there."""
    created: str = ""
    version: int = 0
    """Model file change time (ns): loaded models and cached audio key on it."""
    remote: RemoteVoice | None = None
    """Set for a voice a remote server speaks (``tts.remote``); no model on disk."""

    def describe(self) -> dict[str, Any]:
        """The voice as JSON for the HTTP API and the CLI."""
        return {
            "name": self.name,
            "display_name": self.display_name,
            "language": self.language,
            "sample_rate": self.sample_rate,
            "speakers": list(self.speakers),
            "source": self.source,
            "origin": self.origin,
            "read_only": self.read_only,
            "created": self.created,
            "defaults": {key: getattr(self, key) for key in DEFAULT_KEYS},
            "remote": self.remote.group if self.remote is not None else None,
        }


def check_name(name: str) -> None:
    """InvalidVoice unless ``name`` is a safe folder name (no traversal, no hidden files)."""
    if not NAME_RE.fullmatch(name) or name in (".", ".."):
        raise InvalidVoice(
            f"invalid voice name '{name[:64]}': use 1-64 letters, digits, '.', '_' or '-', "
            "starting with a letter or digit"
        )


def check_defaults(defaults: dict[str, Any], speakers: tuple[str, ...]) -> None:
    """InvalidRequest when a synthesis default is out of range."""
    for key, (low, high) in DEFAULT_RANGES.items():
        value = defaults.get(key)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise InvalidRequest(f"{key} must be a number")
        if not low <= value <= high:
            raise InvalidRequest(f"{key} must be between {low:g} and {high:g}, got {value}")
    speaker = defaults.get("default_speaker")
    if speaker is not None and str(speaker) not in speakers:
        known = ", ".join(speakers) or "none: single-speaker voice"
        raise InvalidRequest(f"no speaker '{str(speaker)[:64]}' (speakers: {known})")
