"""Names people use for models and voices, and where a hub keeps them (pure data).

Whisper models go by their size names (``tiny.en``, ``large-v3``, ``turbo``,
``distil-large-v3``): each is a CTranslate2 conversion in one Hugging Face repository,
the same table faster-whisper uses. Piper voices go by their catalogue names
(``en_US-lessac-medium``): ``rhasspy/piper-voices`` keeps each at
``en/en_US/lessac/medium/en_US-lessac-medium.onnx`` with its ``.onnx.json``, and lists
them all, with sizes and MD5 digests, in ``voices.json``.
"""

from __future__ import annotations

import fnmatch
import re
from dataclasses import dataclass

WHISPER_REPOS: dict[str, str] = {
    "tiny.en": "Systran/faster-whisper-tiny.en",
    "tiny": "Systran/faster-whisper-tiny",
    "base.en": "Systran/faster-whisper-base.en",
    "base": "Systran/faster-whisper-base",
    "small.en": "Systran/faster-whisper-small.en",
    "small": "Systran/faster-whisper-small",
    "medium.en": "Systran/faster-whisper-medium.en",
    "medium": "Systran/faster-whisper-medium",
    "large-v1": "Systran/faster-whisper-large-v1",
    "large-v2": "Systran/faster-whisper-large-v2",
    "large-v3": "Systran/faster-whisper-large-v3",
    "large": "Systran/faster-whisper-large-v3",
    "distil-large-v2": "Systran/faster-distil-whisper-large-v2",
    "distil-medium.en": "Systran/faster-distil-whisper-medium.en",
    "distil-small.en": "Systran/faster-distil-whisper-small.en",
    "distil-large-v3": "Systran/faster-distil-whisper-large-v3",
    "distil-large-v3.5": "distil-whisper/distil-large-v3.5-ct2",
    "large-v3-turbo": "mobiuslabsgmbh/faster-whisper-large-v3-turbo",
    "turbo": "mobiuslabsgmbh/faster-whisper-large-v3-turbo",
}
"""Whisper size names to the repositories of their CTranslate2 conversions."""
WHISPER_FILES = (
    "config.json",
    "preprocessor_config.json",
    "tokenizer.json",
    "vocabulary.*",
    "model.bin",
)
"""The files of a repository a CTranslate2 Whisper folder needs (faster-whisper's
list); the weights last, so that a folder with ``model.bin`` is a whole one."""
PIPER_REPO = "rhasspy/piper-voices"
"""The repository of the Piper voices."""
PIPER_CATALOGUE = "voices.json"
"""The catalogue at the root of :data:`PIPER_REPO`."""
_REPO_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,95}/[A-Za-z0-9][A-Za-z0-9_.-]{0,95}")
_PIPER_RE = re.compile(
    r"(?P<family>[a-z]{2,3})_(?P<region>[A-Z]{2})-(?P<voice>[A-Za-z0-9_]{1,64})"
    r"-(?P<quality>x_low|low|medium|high)"
)
QUALITY_RATES = {"x_low": 16000, "low": 16000, "medium": 22050, "high": 22050}
"""Sample rate (Hz) of each Piper quality."""


def whisper_repo(spec: str) -> str | None:
    """The repository of Whisper model ``spec``: a size name's, or ``spec`` itself when
    it is a repository id (``owner/name``); None for anything else."""
    if spec in WHISPER_REPOS:
        return WHISPER_REPOS[spec]
    if _REPO_RE.fullmatch(spec) and ".." not in spec:
        return spec
    return None


def whisper_folder_name(spec: str) -> str:
    """The folder a fetched Whisper model ``spec`` is kept in (under ``models_dir/asr``)."""
    return spec.replace("/", "--")


def wanted_whisper_files(files: list[str]) -> list[str]:
    """The files of a repository listing a Whisper folder needs, in fetching order
    (:data:`WHISPER_FILES`); files in subfolders are never wanted."""
    ordered = []
    for pattern in WHISPER_FILES:
        ordered += sorted(f for f in files if "/" not in f and fnmatch.fnmatchcase(f, pattern))
    return ordered


@dataclass(frozen=True)
class PiperName:
    """A Piper catalogue name taken apart."""

    name: str
    family: str
    """Language family (``en``)."""
    language: str
    """Language and region (``en_US``)."""
    voice: str
    quality: str

    @property
    def model(self) -> str:
        """The ``.onnx`` file's path in :data:`PIPER_REPO`."""
        return f"{self.family}/{self.language}/{self.voice}/{self.quality}/{self.name}.onnx"

    @property
    def config(self) -> str:
        """The ``.onnx.json`` file's path in :data:`PIPER_REPO`."""
        return f"{self.model}.json"

    @property
    def sample_rate(self) -> int:
        """The sample rate its quality has (Hz)."""
        return QUALITY_RATES[self.quality]


def piper_name(name: str) -> PiperName | None:
    """``name`` taken apart when it is shaped like a Piper catalogue name
    (``en_US-lessac-medium``), else None."""
    found = _PIPER_RE.fullmatch(name)
    if found is None:
        return None
    family, region = found["family"], found["region"]
    return PiperName(name, family, f"{family}_{region}", found["voice"], found["quality"])
