"""Writes under the state directory fail with one clear, typed error naming the path."""

from __future__ import annotations

import contextlib
import errno
import os
import uuid
from collections.abc import Iterator
from pathlib import Path

from daemon.errors import StorageUnwritable

UNWRITABLE = frozenset({errno.EACCES, errno.EPERM, errno.EROFS, errno.ENOSPC, errno.EDQUOT})
"""OS errors that mean the storage refuses writes (permissions, read-only, full)."""


@contextlib.contextmanager
def writing(what: str, path: Path) -> Iterator[None]:
    """Turn a refused write inside the block into StorageUnwritable naming the path.

    ``what`` says what was being written (``"the voice store"``); ``path`` is named
    when the OS error carries no file name of its own.
    """
    try:
        yield
    except OSError as exc:
        if exc.errno not in UNWRITABLE:
            raise
        where = exc.filename if exc.filename is not None else path
        raise StorageUnwritable(
            f"cannot write {what}: {where}: {exc.strerror or exc} (is the state directory "
            "writable by the daemon's user, and is there space left?)"
        ) from exc


def unwritable(folder: Path) -> str | None:
    """Why files cannot be written in ``folder`` (created if missing); None when they can."""
    probe = folder / f".write-test-{uuid.uuid4().hex}"
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd = os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            os.write(fd, b"x")
        finally:
            os.close(fd)
        probe.unlink()
    except OSError as exc:
        return f"{exc.filename or folder}: {exc.strerror or exc}"
    return None
