"""The voice store: bundled voices (read-only) and user voices under ``voices.dir``.

A voice is a folder (or, for bundled voices, a package resource) holding the Piper
``.onnx`` model and its ``.onnx.json`` config, plus Hearth's metadata. The store is
read on every listing so that a voice added to the folder is visible at once. Reads
block on the disk: the event loop uses the ``*_async`` methods, or, for checks,
:meth:`VoiceStore.recall`, which answers from what the last reads found.

Changes are atomic: a new voice is assembled in a hidden temporary folder and
renamed into place, a removal renames the folder away before deleting it, and
metadata is replaced with ``os.replace``. A lock file serializes writers across
threads and processes, so a crash at any point leaves whole voices only; the
hidden leftovers of a crash are swept on the next change.
"""

from __future__ import annotations

import asyncio
import builtins
import contextlib
import fcntl
import functools
import importlib.resources
import json
import logging
import os
import re
import shutil
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from daemon.engines.models import package_dir
from daemon.errors import InvalidRequest, InvalidVoice, UnknownVoice, VoiceExists
from daemon.ops.jsonfile import write_json
from daemon.ops.locks import exclusive
from daemon.ops.storage import writing

_LOGGER = logging.getLogger(__name__)
NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
"""A voice name; always used with ``fullmatch`` (``$`` would let a trailing newline in)."""
METADATA = "voice.json"
LOCK = ".lock"
TEMP_PREFIX = ".tmp-"
TRASH_PREFIX = ".trash-"
OWNER = ".owner"
"""Lock file of a staging folder, held by the process filling it."""
DEFAULT_RANGES: dict[str, tuple[float, float]] = {
    "speed": (0.25, 4.0),
    "noise_scale": (0.0, 2.0),
    "noise_w_scale": (0.0, 2.0),
    "volume": (0.0, 4.0),
}
"""Allowed range of each numeric synthesis default."""
DEFAULT_KEYS = ("default_speaker", *DEFAULT_RANGES)
"""Synthesis defaults a voice's metadata may set."""
_D = TypeVar("_D", bound=float | None)


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
        self._remote: dict[str, VoiceInfo] = {}
        """Voices remote servers speak (``tts.remote``), by name: set by the engines."""
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
        try:
            if not self.user_dir.is_dir():
                return []
            folders = sorted(self.user_dir.iterdir())
        except OSError as exc:
            _LOGGER.warning("User voices in %s cannot be read: %s", self.user_dir, exc.strerror)
            return []
        voices = (_read_folder(folder) for folder in folders)
        return [voice for voice in voices if voice is not None]

    def set_remote(self, voices: builtins.list[VoiceInfo]) -> None:
        """Offer ``voices`` (spoken by remote servers) beside the local ones.

        Raises:
            InvalidVoice: one is called like a bundled voice (a ``prefix`` tells them apart).
        """
        bundled = {v.name for v in self._bundled_voices}
        for voice in voices:
            if voice.name in bundled:
                raise InvalidVoice(
                    f"remote voice '{voice.name}' has the name of a bundled voice; "
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
        bundled = self._bundled_voices + builtins.list(self._remote.values())
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
        return self._index.get(name) or self.find(name)

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
        for voice in self._bundled_voices:
            if voice.name == name:
                self._remember(name, voice)
                return voice
        remote = self._remote.get(name)
        if remote is not None:
            return remote
        # The name check keeps a path ("../x", "/x") from leaving the store.
        found = _read_folder(self.user_dir / name) if NAME_RE.fullmatch(name) else None
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
        """The voice called ``name``; UnknownVoice names the choices otherwise."""
        voice = self.find(name)
        if voice is not None:
            return voice
        known = ", ".join(v.name for v in self.list()) or "none"
        raise UnknownVoice(f"unknown voice '{name[:64]}' (voices: {known})")

    # -- changes --------------------------------------------------------------

    @contextlib.contextmanager
    def locked(self) -> Iterator[None]:
        """Hold the store's write lock (threads and processes), sweeping crash leftovers."""
        with writing("the voice store", self.user_dir), exclusive(self.user_dir / LOCK):
            self._sweep()
            yield

    def _sweep(self) -> None:
        # Under the lock no writer is mid-change; a staging folder whose owner
        # file is still locked belongs to a live import, any other is a leftover.
        for entry in self.user_dir.iterdir():
            if not entry.is_dir() or not entry.name.startswith((TEMP_PREFIX, TRASH_PREFIX)):
                continue
            if entry.name.startswith(TEMP_PREFIX) and _owned(entry / OWNER):
                continue
            _LOGGER.info("Removing %s, left by an interrupted change", entry.name)
            shutil.rmtree(entry, ignore_errors=True)

    def check_new_name(self, name: str) -> None:
        """InvalidVoice for a bad name, VoiceExists when it is taken."""
        check_name(name)
        if (
            any(v.name == name for v in self._bundled_voices)
            or name in self._remote
            or (self.user_dir / name).exists()
        ):
            raise VoiceExists(f"a voice called '{name}' already exists")

    @contextlib.contextmanager
    def staging(self) -> Iterator[Path]:
        """A hidden temporary folder in the store, removed unless committed."""
        folder = self.user_dir / f"{TEMP_PREFIX}{uuid.uuid4().hex}"
        with self.locked():
            folder.mkdir()
            owner = open(folder / OWNER, "a+b")  # noqa: SIM115 - held until the end
            fcntl.flock(owner, fcntl.LOCK_EX)
        try:
            with writing("the voice store", folder):
                yield folder
        finally:
            owner.close()
            shutil.rmtree(folder, ignore_errors=True)

    def commit(self, staged: Path, name: str, meta: dict[str, Any]) -> VoiceInfo:
        """Write ``voice.json`` into ``staged`` and rename it into place as ``name``."""
        with self.locked():
            self.check_new_name(name)
            meta = {"created": time.strftime("%Y-%m-%dT%H:%M:%S%z")} | meta
            write_json(staged / METADATA, meta)
            (staged / OWNER).unlink(missing_ok=True)
            _fsync_tree(staged)
            os.rename(staged, self.user_dir / name)
            _fsync_dir(self.user_dir)
        _LOGGER.info("Added voice %s", name)
        return self.get(name)

    def _changeable(self, name: str) -> VoiceInfo:
        """The user voice ``name``; InvalidRequest for a bundled one."""
        voice = self.get(name)
        if voice.remote is not None:
            raise InvalidRequest(
                f"voice '{name}' is spoken by the remote '{voice.remote.group}' "
                "(tts.remote) and cannot be changed here"
            )
        if voice.read_only:
            raise InvalidRequest(f"voice '{name}' is bundled with Hearth and cannot be changed")
        return voice

    def remove(self, name: str) -> None:
        """Delete a user voice."""
        with self.locked():
            self._changeable(name)
            folder = self.user_dir / name
            trash = self.user_dir / f"{TRASH_PREFIX}{uuid.uuid4().hex}"
            os.rename(folder, trash)
            self._remember(name, None)
            shutil.rmtree(trash, ignore_errors=True)
        _LOGGER.info("Removed voice %s", name)

    def rename(self, name: str, new_name: str) -> VoiceInfo:
        """Give a user voice another name."""
        with self.locked():
            self._changeable(name)
            folder = self.user_dir / name
            self.check_new_name(new_name)
            os.rename(folder, self.user_dir / new_name)
            self._remember(name, None)
            _fsync_dir(self.user_dir)
        _LOGGER.info("Renamed voice %s to %s", name, new_name)
        return self.get(new_name)

    def update(self, name: str, display_name: str | None, defaults: dict[str, Any]) -> VoiceInfo:
        """Set a user voice's display name and synthesis defaults (None clears a default)."""
        with self.locked():
            voice = self._changeable(name)
            meta_file = self.user_dir / name / METADATA
            meta = json.loads(meta_file.read_text("utf-8")) if meta_file.is_file() else {}
            merged = dict(meta.get("defaults") or {})
            for key, value in defaults.items():
                if key not in DEFAULT_KEYS:
                    raise InvalidRequest(f"unknown voice default '{key}'")
                if value is None:
                    merged.pop(key, None)
                else:
                    merged[key] = value
            check_defaults(merged, voice.speakers)
            meta["defaults"] = merged
            if display_name is not None:
                if not display_name.strip() or len(display_name) > 200:
                    raise InvalidRequest("display name must be 1-200 characters")
                meta["display_name"] = display_name.strip()
            write_json(meta_file, meta)
        return self.get(name)


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


def _owned(path: Path) -> bool:
    """Whether a live process holds the lock on ``path``."""
    try:
        with open(path, "rb") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except FileNotFoundError:
        return False
    except BlockingIOError:
        return True
    return False


def _fsync_tree(folder: Path) -> None:
    for entry in folder.iterdir():
        if entry.is_file():
            with open(entry, "rb") as handle:
                os.fsync(handle.fileno())
    _fsync_dir(folder)


def _fsync_dir(folder: Path) -> None:
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


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
