"""One file over HTTP, fetched once: resumed, bounded, checked, then renamed into place.

The bytes go to ``<target>.partial``; a connection that breaks (or stalls past the
read timeout) is taken up again with a Range request from the partial file's size,
within a number of tries and a deadline; a stop (``cancel``) leaves the partial file
for the next start to resume. Only a file of the expected size and digest is renamed
to ``target``, so a half download is never read as a model.
"""

from __future__ import annotations

import hashlib
import http.client
import json
import logging
import os
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from daemon import __version__
from daemon.errors import ModelUnavailable

_LOGGER = logging.getLogger(__name__)
BLOCK = 1 << 16
"""Bytes read at a time."""
USER_AGENT = f"hearth/{__version__}"


class Offline(ModelUnavailable):
    """The hub cannot be reached (no network, a refused connection, HF_HUB_OFFLINE=1)."""


class Stopped(ModelUnavailable):
    """The fetch was cancelled (the daemon is stopping); the partial file stays."""


@dataclass(frozen=True)
class Expected:
    """What a whole file must be."""

    size: int
    """Bytes."""
    sha256: str = ""
    """Hex digest, where the hub gives it (an LFS file's)."""
    md5: str = ""
    """Hex digest, where a catalogue gives it (Piper's voices.json)."""
    git_sha1: str = ""
    """The git blob id, where the hub gives it (a small, non-LFS file's)."""


@dataclass(frozen=True)
class Limits:
    """How long and how much one file may take."""

    timeout_s: float = 30.0
    """Longest wait for a connection or for the next bytes (s)."""
    deadline_s: float = 6 * 3600.0
    """Longest time for one file, resumes included (s)."""
    max_bytes: int = 8_000_000_000
    """Largest file accepted."""
    tries: int = 5
    """Connections per file: the first and the resumes."""


def partial_path(target: Path) -> Path:
    """Where ``target``'s bytes are written until they are whole and checked."""
    return target.with_name(f"{target.name}.partial")


def resume_from(partial: Path, expected: Expected) -> int:
    """The byte to resume ``partial`` at: its size, or 0 (the file removed) when it is
    longer than the whole file can be."""
    try:
        have = partial.stat().st_size
    except FileNotFoundError:
        return 0
    if have > expected.size:
        partial.unlink()
        return 0
    return have


def verify(path: Path, expected: Expected) -> None:
    """Check ``path``'s size and every digest ``expected`` gives.

    Raises:
        ModelUnavailable: a size or digest differs (named in the message).
    """
    size = path.stat().st_size
    if size != expected.size:
        raise ModelUnavailable(f"{path.name}: {size} bytes, expected {expected.size}")
    sha256, md5 = hashlib.sha256(), hashlib.md5(usedforsecurity=False)
    git = hashlib.sha1(f"blob {size}\0".encode(), usedforsecurity=False)
    with path.open("rb") as data:
        while block := data.read(1 << 20):
            sha256.update(block)
            md5.update(block)
            git.update(block)
    for name, want, digest in (
        ("SHA-256", expected.sha256, sha256),
        ("MD5", expected.md5, md5),
        ("git blob id", expected.git_sha1, git),
    ):
        if want and digest.hexdigest() != want.lower():
            raise ModelUnavailable(
                f"{path.name}: {name} {digest.hexdigest()}, expected {want.lower()}"
            )


def offline() -> bool:
    """Whether the environment says not to reach the hub (HF_HUB_OFFLINE=1)."""
    return os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in ("1", "true", "yes", "on")


def open_url(url: str, timeout_s: float, start: int = 0) -> http.client.HTTPResponse:
    """GET ``url`` (redirects followed, from byte ``start`` when above 0).

    Raises:
        Offline: the hub cannot be reached.
        ModelUnavailable: the hub answers with an error status.
    """
    if offline():
        raise Offline("HF_HUB_OFFLINE=1 is set")
    request = urllib.request.Request(url, headers={"User-Agent": USER_AGENT})
    if start:
        request.add_header("Range", f"bytes={start}-")
    try:
        response: http.client.HTTPResponse = urllib.request.urlopen(request, timeout=timeout_s)
    except urllib.error.HTTPError as exc:
        raise ModelUnavailable(f"{url} answered HTTP {exc.code} {exc.reason}") from None
    except urllib.error.URLError as exc:
        raise Offline(f"cannot reach {url}: {exc.reason}") from None
    except (OSError, http.client.HTTPException) as exc:
        raise Offline(f"cannot reach {url}: {exc}") from None
    return response


def read_json(url: str, limits: Limits, max_bytes: int = 64_000_000) -> Any:
    """GET ``url`` as JSON, at most ``max_bytes``."""
    with open_url(url, limits.timeout_s) as response:
        try:
            body = response.read(max_bytes + 1)
        except (OSError, http.client.HTTPException) as exc:
            raise Offline(f"reading {url}: {exc}") from None
    if len(body) > max_bytes:
        raise ModelUnavailable(f"{url} is larger than {max_bytes} bytes")
    try:
        return json.loads(body)
    except ValueError as exc:
        raise ModelUnavailable(f"{url} is not JSON: {exc}") from None


def fetch_file(
    url: str,
    target: Path,
    expected: Expected,
    limits: Limits,
    progress: Callable[[int], None] = lambda done: None,
    cancel: threading.Event | None = None,
) -> None:
    """Fetch ``url`` into ``target`` through its partial file (blocking: call it from a
    worker thread).

    Args:
        url: the file.
        target: where the whole, checked file ends up.
        expected: its size and digests.
        limits: timeouts, deadline, size limit and tries.
        progress: called with the bytes on disk as they grow.
        cancel: set to stop (the partial file stays, to be resumed).

    Raises:
        Offline: the hub cannot be reached (the partial file stays).
        Stopped: ``cancel`` was set.
        ModelUnavailable: too large, past the deadline or the tries, or the whole file
            is not the expected one (the partial file is removed: it cannot be resumed).
    """
    if expected.size > limits.max_bytes:
        raise ModelUnavailable(
            f"{target.name} is {expected.size} bytes, over the limit of {limits.max_bytes}"
        )
    partial = partial_path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    deadline = time.monotonic() + limits.deadline_s
    failure = ""
    for attempt in range(limits.tries):
        start = resume_from(partial, expected)
        progress(start)
        if start == expected.size:
            break
        if start:
            _LOGGER.info("Resuming %s at byte %d of %d", target.name, start, expected.size)
        try:
            if _transfer(url, partial, start, expected, limits, deadline, progress, cancel):
                break
        except _Broken as exc:
            failure = str(exc)
            _LOGGER.warning(
                "Fetching %s broke off (%s); try %d of %d",
                target.name,
                exc,
                attempt + 1,
                limits.tries,
            )
    else:
        raise ModelUnavailable(f"{target.name}: gave up after {limits.tries} tries ({failure})")
    try:
        verify(partial, expected)
    except ModelUnavailable:
        partial.unlink(missing_ok=True)
        raise
    os.replace(partial, target)


class _Broken(Exception):
    """A connection ended before the file did: resume it."""


def _transfer(
    url: str,
    partial: Path,
    start: int,
    expected: Expected,
    limits: Limits,
    deadline: float,
    progress: Callable[[int], None],
    cancel: threading.Event | None,
) -> bool:
    """Append the file's bytes from ``start`` to ``partial``; True once it is whole."""
    with open_url(url, limits.timeout_s, start) as response:
        if start and response.status != 206:
            start = 0  # the server ignored the Range: take the whole file again
        done = start
        with partial.open("r+b" if start else "wb") as out:
            out.seek(start)
            out.truncate()
            while done < expected.size:
                if cancel is not None and cancel.is_set():
                    raise Stopped(f"stopped fetching {partial.name} at byte {done}")
                if time.monotonic() > deadline:
                    raise ModelUnavailable(
                        f"{partial.name}: not whole after {limits.deadline_s:g} s"
                    )
                try:
                    block = response.read(min(BLOCK, expected.size - done))
                except (OSError, http.client.HTTPException) as exc:
                    raise _Broken(f"{type(exc).__name__}: {exc}") from None
                if not block:
                    raise _Broken(f"connection closed at byte {done}")
                out.write(block)
                done += len(block)
                progress(done)
            if response.read(1):
                raise ModelUnavailable(f"{partial.name}: longer than {expected.size} bytes")
    return True
