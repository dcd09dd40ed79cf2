"""The voice store: bundled voices (read-only) and user voices under ``voices.dir``.

A voice is a folder (or, for bundled voices, a package resource) holding the Piper
``.onnx`` model and its ``.onnx.json`` config, plus Hearth's metadata. The store is
read on every listing so that a voice added to the folder is visible at once. Reads
block on the disk: the event loop uses the ``*_async`` methods, or, for checks,
:meth:`VoiceStore.recall`, which answers from what the last reads found.

What a voice is lives in :mod:`~daemon.engines.tts.voice_info`; changing the store
(atomically, under a lock) in :mod:`~daemon.engines.tts.voice_changes`.
"""

from __future__ import annotations

import asyncio
import builtins
import functools
import importlib.resources
import json
import logging
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from daemon.engines.hub.names import piper_name
from daemon.engines.models import package_dir
from daemon.engines.tts.voice_changes import VoiceChanges
from daemon.engines.tts.voice_info import (
    DEFAULT_KEYS,
    DEFAULT_RANGES,
    METADATA,
    NAME_RE,
    RemoteVoice,
    VoiceInfo,
    check_defaults,
    check_name,
)
from daemon.errors import InvalidVoice, UnknownVoice

_LOGGER = logging.getLogger(__name__)
__all__ = [
    "DEFAULT_KEYS",
    "DEFAULT_RANGES",
    "RemoteVoice",
    "VoiceInfo",
    "VoiceStore",
    "check_defaults",
    "check_name",
]
_D = TypeVar("_D", bound=float | None)


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


class VoiceStore(VoiceChanges):
    """Finds voices; the bundled ones come from ``voices/*.json`` metadata."""

    def __init__(self, user_dir: Path, fetch: Callable[[str], object] | None = None) -> None:
        self.user_dir = user_dir
        self._fetch = fetch
        """Fetches a Piper voice by catalogue name into ``user_dir`` (blocking); None:
        voices are never fetched."""
        self._remote: dict[str, VoiceInfo] = {}
        """Voices remote servers speak (``tts.remote``), by name: set by the engines."""
        self._engine: dict[str, VoiceInfo] = {}
        """Voices a plug-in TTS engine brings by name (``tts.backend``)."""
        self.files = True
        """Whether the engine speaks voice files (Piper's): False, the bundled and user
        voices are not offered, and nothing is fetched from the catalogue."""
        self._index: dict[str, VoiceInfo] = {}
        """Every voice the last reads found, by name: :meth:`recall` answers from it."""
        self._index_lock = threading.Lock()
        self._listed = False

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
        """The user voices; none (and a warning) when their folder cannot be read, so
        that the bundled voices are still offered."""
        if not self.files:
            return []
        try:
            if not self.user_dir.is_dir():
                return []
            folders = sorted(self.user_dir.iterdir())
        except OSError as exc:
            _LOGGER.warning("User voices in %s cannot be read: %s", self.user_dir, exc.strerror)
            return []
        voices = (_read_folder(folder) for folder in folders)
        return [voice for voice in voices if voice is not None]

    @property
    def _own(self) -> builtins.list[VoiceInfo]:
        """The voices of the local engine that are not user folders."""
        return self._bundled_voices if self.files else builtins.list(self._engine.values())

    def _taken_elsewhere(self, name: str) -> bool:
        return any(v.name == name for v in self._own) or name in self._remote

    def use_engine(self, voices: builtins.list[VoiceInfo], files: bool) -> None:
        """The local engine's voices: its voice files (Piper: ``files``), or the
        ``voices`` it brings by name instead."""
        with self._index_lock:
            self.files = files
            self._engine = {v.name: v for v in voices}
            self._index = {**self._engine, **self._remote}  # the next listing reads the rest
            self._listed = False

    def set_remote(self, voices: builtins.list[VoiceInfo]) -> None:
        """Offer ``voices`` (spoken by remote servers) beside the local ones.

        Raises:
            InvalidVoice: one is called like a bundled voice (a ``prefix`` tells them apart).
        """
        own = {v.name for v in self._own}
        for voice in voices:
            if voice.name in own:
                raise InvalidVoice(
                    f"remote voice '{voice.name}' has the name of a local engine's voice; "
                    "give its tts.remote entry a prefix"
                )
        with self._index_lock:
            for name in self._remote:
                self._index.pop(name, None)
            self._remote = {v.name: v for v in voices}
            self._index.update(self._remote)

    def list(self) -> list[VoiceInfo]:
        """Every voice, bundled first, then remote ones; a user voice may not shadow
        a bundled or remote name."""
        bundled = self._own + builtins.list(self._remote.values())
        names = {v.name for v in bundled}
        voices = bundled + [v for v in self._user() if v.name not in names]
        with self._index_lock:
            self._index = {v.name: v for v in voices}
            self._listed = True
        return voices

    async def list_async(self) -> builtins.list[VoiceInfo]:
        """:meth:`list`, reading the disk in a worker thread."""
        return await asyncio.to_thread(self.list)

    async def get_async(self, name: str) -> VoiceInfo:
        """:meth:`get`, reading the disk in a worker thread."""
        return await asyncio.to_thread(self.get, name)

    def recall(self, name: str) -> VoiceInfo | None:
        """The voice called ``name``, or None, for a check on the event loop.

        A voice read before comes from memory; only a name not seen yet (a voice just
        put in the folder, or a wrong name) reads the disk, and only that one folder.
        What a voice is synthesized with is read afresh off the loop (:meth:`get_async`),
        so a voice changed since is never spoken stale.
        """
        return self._index.get(name) or self.find(name) or self._fetchable(name)

    def _fetchable(self, name: str) -> VoiceInfo | None:
        """A voice of the Piper catalogue not fetched yet, as far as its name tells
        (language, sample rate): :meth:`get` fetches it before it is spoken."""
        parsed = piper_name(name) if self._fetch is not None and self.files else None
        if parsed is None:
            return None
        return VoiceInfo(
            name=name,
            model_path=self.user_dir / name / f"{name}.onnx",
            config_path=self.user_dir / name / f"{name}.onnx.json",
            language=parsed.language,
            sample_rate=parsed.sample_rate,
            speakers=(),
            display_name=name,
            source="catalogue",
            read_only=True,
            attribution_name="rhasspy/piper-voices",
            attribution_url="https://huggingface.co/rhasspy/piper-voices",
        )

    def lookup(self, name: str) -> VoiceInfo:
        """:meth:`recall`, with UnknownVoice naming the voices known otherwise."""
        voice = self.recall(name)
        if voice is not None:
            return voice
        raise UnknownVoice(f"unknown voice '{name[:64]}' (voices: {self.names()})")

    def names(self) -> str:
        """The voices the last reads found, comma-separated ("none" when none); no disk."""
        return ", ".join(sorted(self._index)) or "none"

    def for_language(self, language: str, preferred: str) -> str | None:
        """A voice that speaks ``language`` (``en``, ``en_US``, ``en-GB``): ``preferred``
        when it does, else the first that does; None when none does.

        For the event loop: chosen among the voices the last listing found (the first
        call lists the store).
        """
        wanted = language.lower().replace("-", "_")

        def speaks(voice: VoiceInfo) -> bool:
            have = voice.language.lower().replace("-", "_")
            return have == wanted or have.split("_")[0] == wanted.split("_")[0]

        voices = builtins.list(self._index.values()) if self._listed else self.list()
        matches = [v.name for v in voices if speaks(v)]
        if not matches:
            return None
        return preferred if preferred in matches else matches[0]

    def find(self, name: str) -> VoiceInfo | None:
        """The voice called ``name``, or None; reads only that voice's folder."""
        for voice in self._own:
            if voice.name == name:
                self._remember(name, voice)
                return voice
        remote = self._remote.get(name)
        if remote is not None:
            return remote
        # The name check keeps a path ("../x", "/x") from leaving the store.
        folder = self.files and NAME_RE.fullmatch(name)
        found = _read_folder(self.user_dir / name) if folder else None
        self._remember(name, found)
        return found

    def _remember(self, name: str, voice: VoiceInfo | None) -> None:
        """Keep what a read found about ``name`` for :meth:`recall`."""
        with self._index_lock:
            if voice is not None:
                self._index[name] = voice
            else:
                self._index.pop(name, None)

    def get(self, name: str) -> VoiceInfo:
        """The voice called ``name``, a catalogue voice fetched first (blocking: off the
        event loop); UnknownVoice names the choices otherwise.

        Raises:
            ModelUnavailable: a catalogue voice cannot be fetched (offline: the message
                says what to do).
        """
        voice = self.find(name)
        if voice is not None:
            return voice
        if self._fetch is not None and self.files and piper_name(name) is not None:
            self._fetch(name)
            voice = self.find(name)
            if voice is not None:
                return voice
        known = ", ".join(v.name for v in self.list()) or "none"
        raise UnknownVoice(f"unknown voice '{name[:64]}' (voices: {known})")


def _number(defaults: dict[str, Any], key: str, default: _D) -> float | _D:
    """Default ``key`` from voice.json: a number in range, or ``default`` when absent."""
    value = defaults.get(key)
    if value is None:
        return default
    low, high = DEFAULT_RANGES[key]
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not low <= value <= high:
        raise ValueError(f"{key} must be a number from {low:g} to {high:g}, got {value!r}")
    return float(value)


def _read_folder(folder: Path) -> VoiceInfo | None:
    """The voice in a user folder; None when absent, incomplete or broken (logged)."""
    if not NAME_RE.fullmatch(folder.name) or not folder.is_dir():
        return None
    try:
        return _user_voice(folder)
    except (OSError, ValueError, TypeError, AttributeError) as exc:
        # One broken folder must not hide the others (or break synthesis).
        _LOGGER.warning("Skipping voice folder %s: %s", folder, exc)
        return None


def _user_voice(folder: Path) -> VoiceInfo | None:
    """The voice in ``folder``; None while it is incomplete; ValueError when broken."""
    models = sorted(folder.glob("*.onnx"))
    if not models or not Path(f"{models[0]}.json").is_file():
        return None
    meta_file = folder / METADATA
    meta = json.loads(meta_file.read_text("utf-8")) if meta_file.is_file() else {}
    if not isinstance(meta, dict):
        raise ValueError(f"{METADATA} must hold a JSON object")
    defaults = meta.get("defaults") or {}
    if not isinstance(defaults, dict):
        raise ValueError(f"{METADATA} 'defaults' must be an object")
    speaker = defaults.get("default_speaker")
    if speaker is not None and not isinstance(speaker, str):
        raise ValueError("default_speaker must be a string")
    lang, rate, speakers = _piper_facts(Path(f"{models[0]}.json"))
    return VoiceInfo(
        name=folder.name,
        model_path=models[0],
        config_path=Path(f"{models[0]}.json"),
        language=str(meta.get("language") or lang),
        sample_rate=rate,
        speakers=speakers,
        display_name=str(meta.get("display_name", folder.name)),
        source="user",
        read_only=False,
        default_speaker=speaker,
        speed=_number(defaults, "speed", 1.0),
        noise_scale=_number(defaults, "noise_scale", None),
        noise_w_scale=_number(defaults, "noise_w_scale", None),
        volume=_number(defaults, "volume", 1.0),
        origin=str(meta.get("source", "folder")),
        created=str(meta.get("created", "")),
        version=models[0].stat().st_mtime_ns,
    )
