"""Changing the voice store: adding, removing, renaming and updating user voices.

Changes are atomic: a new voice is assembled in a hidden temporary folder and renamed
into place, a removal renames the folder away before deleting it, and metadata is
replaced with ``os.replace``. A lock file serializes writers across threads and
processes, so a crash at any point leaves whole voices only; the hidden leftovers of a
crash are swept on the next change.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import os
import shutil
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from daemon.engines.tts.voice_info import (
    DEFAULT_KEYS,
    METADATA,
    VoiceInfo,
    check_defaults,
    check_name,
)
from daemon.errors import InvalidRequest, VoiceExists
from daemon.ops.jsonfile import write_json
from daemon.ops.locks import exclusive
from daemon.ops.storage import writing

_LOGGER = logging.getLogger(__name__)
LOCK = ".lock"
TEMP_PREFIX = ".tmp-"
TRASH_PREFIX = ".trash-"
OWNER = ".owner"
"""Lock file of a staging folder, held by the process filling it."""


class VoiceChanges:
    """The voice store's writes (mixed into :class:`~daemon.engines.tts.voices.VoiceStore`)."""

    user_dir: Path

    def get(self, name: str) -> VoiceInfo:
        """The voice called ``name`` (the store's)."""
        raise NotImplementedError

    def _remember(self, name: str, voice: VoiceInfo | None) -> None:
        raise NotImplementedError

    def _taken_elsewhere(self, name: str) -> bool:
        """Whether a bundled or remote voice has ``name`` (the store's)."""
        raise NotImplementedError

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
        if self._taken_elsewhere(name) or (self.user_dir / name).exists():
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
