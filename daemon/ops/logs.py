"""Log lines: one per event, with level, logger and the request id.

Under systemd the lines carry no timestamp (journald adds its own); when stderr
is the journal itself each line starts with its syslog priority (``<3>`` for
errors) so that ``journalctl -p warning`` filters by level, and a traceback is
folded into its event's line instead of becoming one journal entry per line.
Logging never includes audio or secrets: routes log codes and sizes, not bodies.
"""

from __future__ import annotations

import contextvars
import logging
import os
import sys
from typing import TextIO

request_id: contextvars.ContextVar[str] = contextvars.ContextVar("request_id", default="")
"""The id of the request being served (HTTP); worker threads inherit it."""

PRIORITY = {
    logging.CRITICAL: 2,
    logging.ERROR: 3,
    logging.WARNING: 4,
    logging.INFO: 6,
    logging.DEBUG: 7,
}
"""syslog priority of each logging level (sd-daemon(3) prefixes)."""

NOISY = ("faster_whisper", "httpx", "uvicorn.error")
"""Libraries that log every request at INFO: kept at WARNING or above."""


def under_systemd(environ: dict[str, str] | None = None) -> bool:
    """True when started by systemd (which timestamps what we write)."""
    env = os.environ if environ is None else environ
    return bool(env.get("JOURNAL_STREAM") or env.get("INVOCATION_ID"))


def stream_is_journal(stream: TextIO, environ: dict[str, str] | None = None) -> bool:
    """True when ``stream`` is connected to journald ($JOURNAL_STREAM is its dev:inode)."""
    env = os.environ if environ is None else environ
    expected = env.get("JOURNAL_STREAM", "")
    if not expected:
        return False
    try:
        info = os.fstat(stream.fileno())
    except (OSError, ValueError, AttributeError):
        return False
    return expected == f"{info.st_dev}:{info.st_ino}"


class EventFormatter(logging.Formatter):
    """``LEVEL logger: [request] message``; optionally journald priority, one line."""

    def __init__(self, timestamps: bool, journal: bool) -> None:
        fmt = "%(levelname)s %(name)s: %(message)s"
        super().__init__(("%(asctime)s " + fmt) if timestamps else fmt)
        self.journal = journal

    def format(self, record: logging.LogRecord) -> str:
        """Format one record as one event."""
        line = super().format(record)
        rid = request_id.get()
        if rid:
            head, sep, message = line.partition(": ")
            line = f"{head}{sep}[{rid}] {message}" if sep else line
        if self.journal:
            line = line.replace("\n", " \u23ce ")  # journald would make each line an entry
            line = f"<{PRIORITY.get(record.levelno, 6)}>{line}"
        return line


def setup_logging(level: str, stream: TextIO | None = None) -> None:
    """Log to stderr (or ``stream``) at ``level``; see the module docstring."""
    stream = stream or sys.stderr
    handler = logging.StreamHandler(stream)
    handler.setFormatter(
        EventFormatter(timestamps=not under_systemd(), journal=stream_is_journal(stream))
    )
    logging.basicConfig(level=level.upper(), handlers=[handler], force=True)
    set_level(level)


def set_level(level: str) -> None:
    """Change the level at run time (a reload with a new ``log.level``)."""
    root = logging.getLogger()
    root.setLevel(level.upper())
    for noisy in NOISY:
        logging.getLogger(noisy).setLevel(max(logging.WARNING, root.level))
