"""Importing Piper voices into the store: files or an archive, checked by speaking.

A voice is accepted only when its config parses, its model loads and it speaks a
test sentence; anything else is refused with the reason (:class:`InvalidVoice`).
The files are copied into a hidden folder of the store and validated there, and
only a voice that passed is renamed into place.
"""

from __future__ import annotations

import io
import json
import logging
import shutil
import tarfile
import time
import zipfile
from pathlib import Path, PurePosixPath
from typing import IO, Any

from daemon.engines.tts.voices import VoiceInfo, VoiceStore, check_defaults
from daemon.errors import InvalidVoice

_LOGGER = logging.getLogger(__name__)
TEST_SENTENCE = "This is a test of a new voice."
MAX_CONFIG_BYTES = 4_000_000


def import_files(
    store: VoiceStore,
    name: str,
    model: Path,
    config: Path,
    meta: dict[str, Any] | None = None,
    max_bytes: int | None = None,
) -> VoiceInfo:
    """Copy a Piper model and its config into the store as ``name`` (validated first)."""
    store.check_new_name(name)
    for path in (model, config):
        if not path.is_file():
            raise InvalidVoice(f"{path} is not a file")
    if max_bytes is not None and model.stat().st_size + config.stat().st_size > max_bytes:
        raise InvalidVoice(f"the voice is larger than {max_bytes / 1e6:g} MB")
    with store.staging() as staged:
        shutil.copyfile(model, staged / f"{name}.onnx")
        shutil.copyfile(config, staged / f"{name}.onnx.json")
        return _validate_and_commit(store, staged, name, meta or {})


def import_bytes(
    store: VoiceStore,
    name: str,
    files: dict[str, bytes],
    meta: dict[str, Any] | None = None,
    max_bytes: int | None = None,
) -> VoiceInfo:
    """Import uploaded files: a model and its config, or one .tar/.zip holding them.

    ``files`` maps each upload's file name to its content.
    """
    store.check_new_name(name)
    total = sum(len(data) for data in files.values())
    if max_bytes is not None and total > max_bytes:
        raise InvalidVoice(f"the upload is larger than {max_bytes / 1e6:g} MB")
    if len(files) == 1:
        ((filename, data),) = files.items()
        files = extract_archive(filename, data, max_bytes)
    model, config = pick_voice_files(files)
    with store.staging() as staged:
        (staged / f"{name}.onnx").write_bytes(model)
        (staged / f"{name}.onnx.json").write_bytes(config)
        return _validate_and_commit(store, staged, name, meta or {})


def import_path(
    store: VoiceStore, name: str | None, path: Path, max_bytes: int | None = None
) -> VoiceInfo:
    """``hearth voices add PATH``: a .onnx (config beside it), a folder, or an archive."""
    if not path.exists():
        raise InvalidVoice(f"{path}: no such file or folder")
    if path.is_dir():
        models = sorted(path.glob("*.onnx"))
        if len(models) != 1:
            raise InvalidVoice(f"{path} must hold exactly one .onnx model, found {len(models)}")
        path = models[0]
    if path.suffix == ".onnx":
        config = Path(f"{path}.json")
        if not config.is_file():
            raise InvalidVoice(
                f"{config} is missing: a Piper voice is the .onnx and its .onnx.json"
            )
        return import_files(store, name or _stem(path.name), path, config, None, max_bytes)
    if path.name.endswith(".onnx.json"):
        model = path.with_suffix("")
        return import_files(store, name or _stem(model.name), model, path, None, max_bytes)
    if max_bytes is not None and path.stat().st_size > max_bytes:
        raise InvalidVoice(f"{path} is larger than {max_bytes / 1e6:g} MB")
    files = extract_archive(path.name, path.read_bytes(), max_bytes)
    model_name = next((n for n in files if n.endswith(".onnx")), path.name)
    return import_bytes(store, name or _stem(model_name), files, None, max_bytes)


def _stem(filename: str) -> str:
    base = PurePosixPath(filename).name
    for suffix in (".onnx.json", ".onnx", ".tar.gz", ".tgz", ".tar", ".zip"):
        if base.endswith(suffix):
            return base[: -len(suffix)]
    return base


MAX_ARCHIVE_MEMBERS = 64
"""Members of an uploaded archive looked at, at most (a voice needs two)."""


def extract_archive(filename: str, data: bytes, max_bytes: int | None) -> dict[str, bytes]:
    """The .onnx and .json files of a .tar(.gz) or .zip, by base name.

    Members never touch disk. What is read is bounded as it is read: the members
    looked at, and the running total of their unpacked bytes (a "zip bomb" is
    refused before it fills memory).
    """
    limit = max_bytes or 1 << 40
    out: dict[str, bytes] = {}
    total = 0

    def take(name: str, size: int, handle: IO[bytes]) -> None:
        nonlocal total
        if len(out) >= 2 * MAX_ARCHIVE_MEMBERS or size > limit - total:
            raise InvalidVoice("the archive's contents are too large")
        chunks = []
        while chunk := handle.read(1 << 20):
            total += len(chunk)
            if total > limit:
                raise InvalidVoice("the archive's contents are too large")
            chunks.append(chunk)
        out[PurePosixPath(name).name] = b"".join(chunks)

    try:
        if zipfile.is_zipfile(io.BytesIO(data)):
            with zipfile.ZipFile(io.BytesIO(data)) as zipped:
                members = zipped.infolist()
                if len(members) > MAX_ARCHIVE_MEMBERS:
                    raise InvalidVoice(f"the archive has over {MAX_ARCHIVE_MEMBERS} members")
                for info in members:
                    if info.is_dir() or not info.filename.endswith((".onnx", ".json")):
                        continue
                    with zipped.open(info) as handle:
                        take(info.filename, info.file_size, handle)
        else:
            with tarfile.open(fileobj=io.BytesIO(data)) as tarred:
                for count, member in enumerate(tarred):
                    if count >= MAX_ARCHIVE_MEMBERS:
                        raise InvalidVoice(f"the archive has over {MAX_ARCHIVE_MEMBERS} members")
                    if not member.isfile() or not member.name.endswith((".onnx", ".json")):
                        continue
                    extracted = tarred.extractfile(member)
                    if extracted is not None:
                        take(member.name, member.size, extracted)
    except (tarfile.TarError, zipfile.BadZipFile, OSError, EOFError) as exc:
        raise InvalidVoice(
            f"{filename}: not a Piper voice: send the .onnx and .onnx.json, "
            f"or a .tar or .zip holding them ({exc})"
        ) from None
    return out


def pick_voice_files(files: dict[str, bytes]) -> tuple[bytes, bytes]:
    """(model, config) among uploaded or extracted files; InvalidVoice unless one of each."""
    models = [n for n in files if n.endswith(".onnx")]
    configs = [n for n in files if n.endswith(".json") and n != "voice.json"]
    if len(models) != 1 or len(configs) != 1:
        raise InvalidVoice(
            "a Piper voice is exactly one model (.onnx) and its config (.onnx.json); "
            f"got {', '.join(sorted(files)) or 'nothing'}"
        )
    return files[models[0]], files[configs[0]]


def check_piper_config(path: Path) -> dict[str, Any]:
    """The parsed config; InvalidVoice naming what is wrong with it."""
    if path.stat().st_size > MAX_CONFIG_BYTES:
        raise InvalidVoice("the voice config is too large")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as exc:
        raise InvalidVoice(f"the voice config is not valid JSON: {exc}") from None
    if not isinstance(data, dict):
        raise InvalidVoice("the voice config must be a JSON object")
    rate = (data.get("audio") or {}).get("sample_rate")
    if not isinstance(rate, int) or not 8000 <= rate <= 48000:
        raise InvalidVoice("the voice config has no usable audio.sample_rate")
    if not isinstance(data.get("phoneme_id_map"), dict) or not data["phoneme_id_map"]:
        raise InvalidVoice("the voice config has no phoneme_id_map")
    if not isinstance(data.get("num_speakers", 1), int) or data.get("num_speakers", 1) < 1:
        raise InvalidVoice("the voice config's num_speakers must be a positive integer")
    return data


def test_speak(model: Path, config: Path) -> float:
    """Load the voice and speak the test sentence; seconds of audio it made."""
    from piper import PiperVoice

    try:
        voice = PiperVoice.load(model, config, use_cuda=False)
        samples = 0
        rate = voice.config.sample_rate
        for chunk in voice.synthesize(TEST_SENTENCE):
            samples += len(chunk.audio_int16_bytes) // 2
    except Exception as exc:  # noqa: BLE001 - any failure means the voice is unusable
        raise InvalidVoice(
            f"the voice does not load or speak: {type(exc).__name__}: {exc}"
        ) from None
    seconds = samples / rate
    if seconds < 0.2:
        raise InvalidVoice("the voice spoke no audio for the test sentence")
    return seconds


def _validate_and_commit(
    store: VoiceStore, staged: Path, name: str, meta: dict[str, Any]
) -> VoiceInfo:
    started = time.perf_counter()
    model, config = staged / f"{name}.onnx", staged / f"{name}.onnx.json"
    data = check_piper_config(config)
    seconds = test_speak(model, config)
    speakers = tuple(data.get("speaker_id_map") or {})
    check_defaults(meta.get("defaults") or {}, speakers)
    language = (data.get("language") or {}).get("code") or (data.get("espeak") or {}).get("voice")
    meta = {"display_name": name, "language": language or "", "source": "imported"} | meta
    _LOGGER.info(
        "Voice %s checked in %.2f s (spoke %.1f s of audio)",
        name,
        time.perf_counter() - started,
        seconds,
    )
    return store.commit(staged, name, meta)
