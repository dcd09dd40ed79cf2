"""The few routes of a Hugging Face hub Hearth uses, and fetching whole folders.

* ``GET /api/models/<repo>/revision/<rev>?blobs=true``: a repository's files, with each
  file's size, its LFS SHA-256 (large files) or git blob id (small ones), and the commit.
* ``GET /<repo>/resolve/<commit>/<path>``: a file (the hub may redirect; Range honoured).
* ``voices.json`` of ``rhasspy/piper-voices``: every Piper voice, its files, sizes, MD5s.

A folder is fetched into a hidden ``.<name>.partial`` folder beside its place (each file
through its own ``.partial`` file) and renamed into place once every file is whole and
checked: the model and voice finders never see a half folder. One fetch per name at a
time in the process: a second caller waits for the first and finds the folder in place.
"""

from __future__ import annotations

import json
import logging
import math
import os
import threading
import time
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from daemon.engines.hub.names import (
    PIPER_CATALOGUE,
    PIPER_REPO,
    PiperName,
    piper_name,
    wanted_whisper_files,
    whisper_folder_name,
    whisper_repo,
)
from daemon.engines.hub.progress import Download, Downloads
from daemon.engines.hub.transfer import (
    Expected,
    Limits,
    Offline,
    fetch_file,
    read_json,
    verify,
)
from daemon.errors import ModelUnavailable, UnknownVoice

_LOGGER = logging.getLogger(__name__)
DEFAULT_URL = "https://huggingface.co"
CATALOGUE_MAX_BYTES = 64_000_000
CATALOGUE_REFRESH_S = 3600.0
"""Least time between two fetches of the catalogue for names it lacks (s)."""
METADATA = "voice.json"
"""Hearth's file beside a voice (the voice store's metadata)."""


@dataclass(frozen=True)
class RemoteFile:
    """A file of a repository, and what it must be once fetched."""

    path: str
    expected: Expected


def hub_url(configured: str) -> str:
    """The hub to fetch from: ``hub.url``, else $HF_ENDPOINT, else huggingface.co."""
    return (configured or os.environ.get("HF_ENDPOINT") or DEFAULT_URL).rstrip("/")


def repo_listing(info: Any) -> tuple[str, list[RemoteFile]]:
    """The commit and files of a hub's repository answer (``siblings`` with blobs)."""
    if not isinstance(info, dict) or not isinstance(info.get("siblings"), list):
        raise ModelUnavailable("the hub's answer has no file list")
    files = []
    for sibling in info["siblings"]:
        lfs = sibling.get("lfs") or {}
        size = lfs.get("size", sibling.get("size"))
        if not isinstance(size, int):
            continue  # a file without a size cannot be checked: never wanted
        expected = Expected(
            size,
            sha256=str(lfs.get("sha256", "")),
            git_sha1="" if lfs else str(sibling.get("blobId", "")),
        )
        files.append(RemoteFile(str(sibling["rfilename"]), expected))
    return str(info.get("sha") or "main"), files


def voice_files(entry: Any, name: PiperName) -> list[RemoteFile]:
    """The files of catalogue ``entry`` a voice folder needs: model, config, model card."""
    listed = entry.get("files") if isinstance(entry, dict) else None
    if not isinstance(listed, dict):
        raise ModelUnavailable(f"voices.json lists no files for {name.name}")
    files = []
    for path, facts in listed.items():
        if path in (name.model, name.config) or path.endswith("/MODEL_CARD"):
            files.append(RemoteFile(path, Expected(facts["size_bytes"], md5=facts["md5_digest"])))
    if {f.path for f in files} < {name.model, name.config}:
        raise ModelUnavailable(f"voices.json lacks the model or config of {name.name}")
    return sorted(files, key=lambda f: f.path == name.model)  # the model last


class Hub:
    """Fetches named models and voices from one hub (blocking: call from threads)."""

    def __init__(
        self,
        url: str,
        limits: Limits,
        downloads: Downloads,
        cancel: threading.Event | None = None,
    ) -> None:
        self.url = url.rstrip("/")
        self.limits = limits
        self.downloads = downloads
        self.cancel = cancel or threading.Event()
        """Set when the daemon stops: fetches end, their partial files stay."""
        self._catalogue: dict[str, Any] | None = None
        self._fetched_at = -math.inf
        """When the catalogue was last fetched (monotonic s; never: -inf)."""

    def file_url(self, repo: str, revision: str, path: str) -> str:
        """Where the hub serves ``path`` of ``repo`` at ``revision``."""
        return f"{self.url}/{repo}/resolve/{revision}/{urllib.parse.quote(path)}"

    def repo_files(self, repo: str, revision: str = "main") -> tuple[str, list[RemoteFile]]:
        """The commit ``revision`` names and the files of ``repo`` there."""
        info = read_json(
            f"{self.url}/api/models/{repo}/revision/{revision}?blobs=true", self.limits
        )
        return repo_listing(info)

    # ---------------------------------------------------------------- Whisper

    def fetch_whisper(self, spec: str, models_dir: Path) -> Path:
        """The folder of Whisper model ``spec`` under ``models_dir/asr``, fetched once.

        Raises:
            Offline: the hub cannot be reached (the message says what to do).
            ModelUnavailable: not a Whisper name or repository, or the files are not
                the expected ones.
        """
        target = models_dir / "asr" / whisper_folder_name(spec)
        repo = whisper_repo(spec)
        if repo is None:
            raise ModelUnavailable(
                f"ASR model '{spec}' is neither a folder, a Whisper name (tiny, base, "
                "small, medium, large-v3, turbo, distil-large-v3, the .en ones) nor a "
                "Hugging Face repository id"
            )
        with _folder_lock(target):
            if (target / "model.bin").is_file():
                return target
            try:
                commit, listing = self.repo_files(repo)
            except Offline as exc:
                raise self._unreachable("asr", spec, repo, target, exc) from None
            by_path = {f.path: f for f in listing}
            wanted = [by_path[p] for p in wanted_whisper_files(list(by_path))]
            if "model.bin" not in {f.path for f in wanted}:
                raise ModelUnavailable(f"{repo} has no model.bin: not a CTranslate2 Whisper model")
            self._fetch_folder(spec, "asr", repo, commit, wanted, target, flat=False)
        return target

    # ---------------------------------------------------------------- Piper

    def catalogue(self, cache: Path, fresh: bool = False) -> dict[str, Any]:
        """The Piper voice catalogue: read from ``cache`` (kept there once fetched),
        or fetched when absent or ``fresh``."""
        if self._catalogue is not None and not fresh:
            return self._catalogue
        if cache.is_file() and not fresh:
            try:
                data = json.loads(cache.read_text("utf-8"))
            except (OSError, ValueError) as exc:
                _LOGGER.warning(
                    "Fetching the voice catalogue again: %s unreadable (%s)", cache, exc
                )
            else:
                if isinstance(data, dict):
                    self._catalogue = data
                    return data
        url = self.file_url(PIPER_REPO, "main", PIPER_CATALOGUE)
        _LOGGER.info("Fetching the Piper voice catalogue from %s", url)
        data = read_json(url, self.limits, CATALOGUE_MAX_BYTES)
        self._fetched_at = time.monotonic()
        if not isinstance(data, dict):
            raise ModelUnavailable(f"{url} is not a voice catalogue")
        cache.parent.mkdir(parents=True, exist_ok=True)
        partial = cache.with_name(f"{cache.name}.partial")
        partial.write_text(json.dumps(data), "utf-8")
        os.replace(partial, cache)
        self._catalogue = data
        return data

    def fetch_voice(self, name: str, voices_dir: Path, cache: Path) -> Path:
        """The folder of Piper voice ``name`` under ``voices_dir``, fetched once.

        Raises:
            Offline: the hub cannot be reached (the message says what to do).
            ModelUnavailable: not a catalogue name, or the files are not the expected ones.
        """
        parsed = piper_name(name)
        if parsed is None:
            raise ModelUnavailable(f"'{name[:64]}' is not a Piper voice name (en_US-lessac-medium)")
        target = voices_dir / name
        if (target / f"{name}.onnx").is_file():
            return target
        try:
            entry = self._catalogue_entry(name, cache)
        except Offline as exc:
            source = f"{PIPER_REPO}/{parsed.model}"
            raise self._unreachable("voice", name, source, target, exc) from None
        files = voice_files(entry, parsed)
        language = (entry.get("language") or {}).get("code", parsed.language)
        meta = {"language": language, "source": "piper-voices", "display_name": name}
        with _folder_lock(target):
            if not (target / f"{name}.onnx").is_file():
                extra = {METADATA: json.dumps(meta).encode()}
                self._fetch_folder(name, "voice", PIPER_REPO, "main", files, target, True, extra)
        return target

    def _catalogue_entry(self, name: str, cache: Path) -> Any:
        """Voice ``name``'s catalogue entry; the catalogue is fetched afresh for a name it
        lacks, at most once per :data:`CATALOGUE_REFRESH_S` (new voices come rarely, and
        a wrong name must not fetch it every time).

        Raises:
            UnknownVoice: the catalogue has no such voice.
        """
        catalogue = self.catalogue(cache)
        if name not in catalogue and time.monotonic() - self._fetched_at > CATALOGUE_REFRESH_S:
            catalogue = self.catalogue(cache, fresh=True)
        if name not in catalogue:
            raise UnknownVoice(f"voice '{name}' is not in the Piper catalogue ({PIPER_REPO})")
        return catalogue[name]

    # ---------------------------------------------------------------- folders

    def _fetch_folder(
        self,
        name: str,
        kind: str,
        repo: str,
        revision: str,
        files: list[RemoteFile],
        target: Path,
        flat: bool,
        extra: dict[str, bytes] | None = None,
    ) -> None:
        """Fetch ``files`` into a hidden partial folder (``flat``: without their
        folders), add the ``extra`` files, then rename it to ``target``."""
        staging = target.with_name(f".{target.name}.partial")
        item = self.downloads.begin(
            name, kind, repo, str(target), sum(f.expected.size for f in files)
        )
        done = 0
        try:
            for remote in files:
                local = staging / (remote.path.rsplit("/", 1)[-1] if flat else remote.path)
                if not _whole(local, remote.expected):
                    fetch_file(
                        self.file_url(repo, revision, remote.path),
                        local,
                        remote.expected,
                        self.limits,
                        _progress(self.downloads, item, done),
                        self.cancel,
                    )
                done += remote.expected.size
            for extra_name, data in (extra or {}).items():
                (staging / extra_name).write_bytes(data)
            if target.exists():
                raise ModelUnavailable(f"{target} is in the way: move it away")
            os.replace(staging, target)
        except Offline as exc:
            error = self._offline(kind, name, repo, target, exc)
            self.downloads.fail(item, str(error))
            raise error from None
        except ModelUnavailable as exc:
            self.downloads.fail(item, str(exc))
            raise
        except OSError as exc:
            self.downloads.fail(item, str(exc))
            raise ModelUnavailable(f"cannot write {target}: {exc}") from None
        self.downloads.finish(item)

    def _offline(self, what: str, name: str, source: str, target: Path, exc: Exception) -> Offline:
        """The error for a fetch that cannot reach the hub: the model, and what to do."""
        what = {"asr": "ASR model", "voice": "voice"}.get(what, what)
        return Offline(
            f"{what} '{name}' is not on disk and {self.url} cannot be reached ({exc}). "
            f"Connect Hearth to the internet (and unset HF_HUB_OFFLINE) or set hub.url to a "
            f"reachable mirror, then restart; or put the files of {source} into {target}"
        )

    def _unreachable(
        self, kind: str, name: str, source: str, target: Path, exc: Exception
    ) -> Offline:
        """:meth:`_offline`, recorded as a failed download (``/healthz`` shows it)."""
        error = self._offline(kind, name, source, target, exc)
        self.downloads.failed(name, kind, source, str(target), str(error))
        return error


_FOLDER_LOCKS: dict[Path, threading.Lock] = {}
_FOLDER_LOCKS_LOCK = threading.Lock()


def _folder_lock(target: Path) -> threading.Lock:
    """One fetch into ``target`` at a time in this process, whichever :class:`Hub` asks
    (the engines before and after a reload each have one): two writers must never
    append to one partial file."""
    with _FOLDER_LOCKS_LOCK:
        return _FOLDER_LOCKS.setdefault(target.resolve(), threading.Lock())


def _whole(local: Path, expected: Expected) -> bool:
    """Whether ``local`` (a file an earlier try left whole in the partial folder) is the
    expected one; one that is not is removed, to be fetched again."""
    if not local.is_file():
        return False
    try:
        verify(local, expected)
    except ModelUnavailable as exc:
        _LOGGER.warning("Fetching %s again: %s", local.name, exc)
        local.unlink(missing_ok=True)
        return False
    return True


def _progress(downloads: Downloads, item: Download, base: int) -> Callable[[int], None]:
    """Report a file's bytes as the folder's, after the ``base`` bytes of the files before."""
    return lambda done: downloads.advance(item, base + done)
