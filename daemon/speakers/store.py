"""Enrolled speakers on disk: one embedding per person, private to the daemon's user.

Embeddings are personal data. Each lives in ``<state>/speakers/<id>.json`` (mode 0600,
the folder 0700), written atomically, never logged, and deleted with its speaker.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from daemon.errors import InvalidRequest, UnknownSpeaker
from daemon.ops.jsonfile import write_atomic

NAME = re.compile(r"^[^\W_][\w .'-]{0,62}[\w.]?$")
"""A person's name: letters or digits first, then words, spaces, dots, dashes and
apostrophes; 64 characters at most."""
DIMENSIONS = 256


@dataclass(frozen=True)
class Speaker:
    """An enrolled person (what may be shown: no embedding)."""

    name: str
    takes: int
    """Recordings the embedding was made from."""
    enrolled_at: float
    """Unix time of the enrollment."""


@dataclass(frozen=True)
class Match:
    """Who an utterance sounds like."""

    name: str | None
    """The best enrolled speaker at or above the threshold; None: nobody."""
    scores: dict[str, float]
    """Every enrolled speaker's cosine similarity, best first."""


def check_name(name: str) -> str:
    """The name, stripped; InvalidRequest when it is not one a person could have."""
    name = " ".join(str(name).split())
    if not NAME.match(name):
        raise InvalidRequest(
            f"speaker name {name[:80]!r} must be 1-64 letters, digits, spaces, dots, dashes "
            "or apostrophes, starting with a letter or digit"
        )
    return name


def _file_id(name: str) -> str:
    """A file name for a person's name: readable, and unique whatever the case."""
    slug = re.sub(r"[^a-z0-9]+", "-", name.casefold()).strip("-")[:40] or "speaker"
    digest = hashlib.sha256(name.casefold().encode("utf-8")).hexdigest()[:10]
    return f"{slug}-{digest}"


class SpeakerStore:
    """The enrolled speakers of one state directory (thread-safe; blocking file I/O)."""

    def __init__(self, folder: Path, max_speakers: int = 50) -> None:
        self.folder = folder
        self.max_speakers = max_speakers
        self._lock = threading.Lock()

    def _path(self, name: str) -> Path:
        return self.folder / f"{_file_id(name)}.json"

    def _read(self, path: Path) -> tuple[Speaker, np.ndarray] | None:
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            vector = np.asarray(data["embedding"], dtype=np.float32)
            speaker = Speaker(str(data["name"]), int(data["takes"]), float(data["enrolled_at"]))
        except (OSError, ValueError, KeyError, TypeError):
            return None  # a damaged file is nobody: it never matches
        if vector.shape != (DIMENSIONS,) or not np.isfinite(vector).all():
            return None
        return speaker, vector / max(float(np.linalg.norm(vector)), 1e-12)

    def _all(self) -> list[tuple[Speaker, np.ndarray]]:
        if not self.folder.is_dir():
            return []
        found = (self._read(p) for p in sorted(self.folder.glob("*.json")))
        return [item for item in found if item is not None]

    def anyone(self) -> bool:
        """Whether any speaker is enrolled (no file is parsed)."""
        return self.folder.is_dir() and any(self.folder.glob("*.json"))

    def list(self) -> list[Speaker]:
        """Every enrolled speaker, by name."""
        return sorted((s for s, _ in self._all()), key=lambda s: s.name.casefold())

    def get(self, name: str) -> Speaker:
        """One enrolled speaker; UnknownSpeaker when there is none of that name."""
        found = self._read(self._path(check_name(name)))
        if found is None:
            raise UnknownSpeaker(f"no speaker named {name!r} is enrolled")
        return found[0]

    def save(self, name: str, embedding: np.ndarray, takes: int) -> Speaker:
        """Enroll ``name`` (or enroll again: the old embedding is replaced)."""
        name = check_name(name)
        vector = np.asarray(embedding, dtype=np.float32).reshape(-1)
        if vector.shape != (DIMENSIONS,) or not np.isfinite(vector).all():
            raise InvalidRequest("a speaker embedding must be 256 finite numbers")
        speaker = Speaker(name, takes, time.time())
        with self._lock:
            path = self._path(name)
            if not path.exists() and len(self._all()) >= self.max_speakers:
                raise InvalidRequest(
                    f"{self.max_speakers} speakers are enrolled (speakers.max_speakers)"
                )
            self.folder.mkdir(parents=True, exist_ok=True)
            os.chmod(self.folder, 0o700)
            self._write(speaker, vector)
        return speaker

    def rename(self, old: str, new: str) -> Speaker:
        """Give an enrolled speaker another name (their embedding stays)."""
        new = check_name(new)
        with self._lock:
            found = self._read(self._path(check_name(old)))
            if found is None:
                raise UnknownSpeaker(f"no speaker named {old!r} is enrolled")
            if self._path(new) != self._path(old) and self._path(new).exists():
                raise InvalidRequest(f"a speaker named {new!r} is already enrolled")
            renamed = Speaker(new, found[0].takes, found[0].enrolled_at)
            self._write(renamed, found[1])
            if self._path(new) != self._path(old):
                self._path(old).unlink(missing_ok=True)
        return renamed

    def _write(self, speaker: Speaker, vector: np.ndarray) -> None:
        """The speaker's file, replaced atomically, readable by the daemon's user only."""
        record = {
            "name": speaker.name,
            "takes": speaker.takes,
            "enrolled_at": speaker.enrolled_at,
            "embedding": [round(float(v), 7) for v in vector],
        }
        write_atomic(self._path(speaker.name), json.dumps(record).encode("utf-8"), mode=0o600)

    def remove(self, name: str) -> None:
        """Forget a speaker: their embedding is deleted."""
        with self._lock:
            path = self._path(check_name(name))
            if not path.exists():
                raise UnknownSpeaker(f"no speaker named {name!r} is enrolled")
            path.unlink()

    def match(self, embedding: np.ndarray, threshold: float) -> Match:
        """Who ``embedding`` (a unit vector) sounds like, against every enrolled speaker."""
        scores = {s.name: float(np.dot(v, embedding)) for s, v in self._all()}
        ranked = dict(sorted(scores.items(), key=lambda item: item[1], reverse=True))
        best = next(iter(ranked.items()), None)
        name = best[0] if best is not None and best[1] >= threshold else None
        return Match(name, ranked)
