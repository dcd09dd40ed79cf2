"""The voice store: bundled voices (read-only) and user voices under ``voices.dir``.

A voice is a folder (or, for bundled voices, a package resource) holding the Piper
``.onnx`` model and its ``.onnx.json`` config, plus Hearth's metadata. The store is
read on every listing so that a voice added to the folder is visible at once.
"""

from __future__ import annotations

import functools
import importlib.resources
import json
import logging
import re
from dataclasses import dataclass
from pathlib import Path

from .errors import UnknownVoice
from .models import package_dir

_LOGGER = logging.getLogger(__name__)
NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
METADATA = "voice.json"


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


@functools.lru_cache(maxsize=256)
def _piper_facts_cached(config_path: Path, mtime_ns: int) -> tuple[str, int, tuple[str, ...]]:
    data = json.loads(config_path.read_text(encoding="utf-8"))
    lang = (data.get("language") or {}).get("code") or (data.get("espeak") or {}).get("voice", "")
    rate = int((data.get("audio") or {}).get("sample_rate", 22050))
    speakers = tuple(
        sorted(data.get("speaker_id_map") or {}, key=lambda s: data["speaker_id_map"][s])
    )
    return str(lang), rate, speakers


def _piper_facts(config_path: Path) -> tuple[str, int, tuple[str, ...]]:
    """Language, sample rate and speakers of a Piper config (parsed once per change)."""
    return _piper_facts_cached(config_path, config_path.stat().st_mtime_ns)


class VoiceStore:
    """Finds voices; the bundled ones come from ``voices/*.json`` metadata."""

    def __init__(self, user_dir: Path) -> None:
        self.user_dir = user_dir

    @functools.cached_property
    def _bundled_voices(self) -> list[VoiceInfo]:
        voices = []
        for entry in importlib.resources.files("voices").iterdir():
            if not entry.name.endswith(".json"):
                continue
            meta = json.loads(entry.read_text(encoding="utf-8"))
            package = package_dir(meta["package"])
            if package is None:
                _LOGGER.warning(
                    "Bundled voice %s is missing: install %s", meta["name"], meta["distribution"]
                )
                continue
            folder = package / meta["folder"]
            model = folder / meta["model"]
            config = Path(f"{model}.json")
            lang, rate, speakers = _piper_facts(config)
            attribution = meta.get("attribution") or {}
            voices.append(
                VoiceInfo(
                    name=meta["name"],
                    model_path=model,
                    config_path=config,
                    language=meta.get("language") or lang,
                    sample_rate=rate,
                    speakers=speakers,
                    display_name=meta.get("display_name", meta["name"]),
                    source="bundled",
                    read_only=True,
                    attribution_name=attribution.get("name", "Piper"),
                    attribution_url=attribution.get("url", VoiceInfo.attribution_url),
                )
            )
        return voices

    def _user(self) -> list[VoiceInfo]:
        if not self.user_dir.is_dir():
            return []
        voices = []
        for folder in sorted(self.user_dir.iterdir()):
            if not folder.is_dir() or not NAME_RE.match(folder.name):
                continue
            models = sorted(folder.glob("*.onnx"))
            if not models or not Path(f"{models[0]}.json").is_file():
                continue
            try:
                meta_file = folder / METADATA
                meta = json.loads(meta_file.read_text("utf-8")) if meta_file.is_file() else {}
                lang, rate, speakers = _piper_facts(Path(f"{models[0]}.json"))
            except (OSError, ValueError) as exc:
                _LOGGER.warning("Skipping voice folder %s: %s", folder, exc)
                continue
            voices.append(
                VoiceInfo(
                    name=folder.name,
                    model_path=models[0],
                    config_path=Path(f"{models[0]}.json"),
                    language=meta.get("language") or lang,
                    sample_rate=rate,
                    speakers=speakers,
                    display_name=meta.get("display_name", folder.name),
                    source="user",
                    read_only=False,
                )
            )
        return voices

    def list(self) -> list[VoiceInfo]:
        """Every voice, bundled first; a user voice may not shadow a bundled name."""
        bundled = self._bundled_voices
        names = {v.name for v in bundled}
        return bundled + [v for v in self._user() if v.name not in names]

    def get(self, name: str) -> VoiceInfo:
        """The voice called ``name``; UnknownVoice names the choices otherwise."""
        voices = self.list()
        for voice in voices:
            if voice.name == name:
                return voice
        known = ", ".join(v.name for v in voices) or "none"
        raise UnknownVoice(f"unknown voice '{name}' (voices: {known})")
