"""Saved llama.cpp states of evaluated prompt prefixes (a chat's system turn).

A local model spends most of a short request's prompt time on the system prompt,
the same every time. :class:`PromptCache` keeps the context state right after that
prefix was evaluated, so a later request restores it and evaluates only its own
turn: a few states in memory (least recently used dropped, bounded in bytes), and
optionally on disk so that a new process (``hearth chat``, a restarted daemon)
starts warm. The caller decides what goes to disk (the configured system prompt).

A disk entry is named by a hash of the model file's identity, the context size, the
llama-cpp-python version and the exact prefix tokens. Files are written atomically
(a temporary file, then a rename), the folder is kept under a byte limit (oldest
first out), and a file that does not read back exactly (truncated, corrupt, another
key) is logged, removed and rebuilt by the caller. No pickle: a small binary layout
(magic, JSON header, tokens as little-endian int32, the raw state bytes).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import struct
import tempfile
import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

_LOGGER = logging.getLogger(__name__)

MAGIC = b"HEARTHKV"
VERSION = 1
SUFFIX = ".kv"
MAX_RAM_ENTRIES = 4
"""States kept in memory: the configured prompt, a few speakers or client prompts."""
MAX_RAM_BYTES = 64 * 1024 * 1024
MAX_DISK_BYTES = 64 * 1024 * 1024
"""A system prompt of a hundred tokens takes about 2 MB with the embedded model."""


@dataclass(frozen=True)
class SavedPrefix:
    """A context's state right after ``tokens`` were evaluated."""

    tokens: tuple[int, ...]
    state: bytes
    """What ``llama_state_get_data`` wrote (the KV cache of ``tokens``, the last logits)."""

    @property
    def size(self) -> int:
        """Bytes held (the state and the tokens)."""
        return len(self.state) + 4 * len(self.tokens)


def model_identity(path: Path, *details: object) -> str:
    """What decides whether a saved state fits a loaded model: the file (resolved path,
    size, modification time) and ``details`` (context size, library version)."""
    stat = path.stat()
    parts = [str(path.resolve()), str(stat.st_size), str(stat.st_mtime_ns), *map(str, details)]
    return "\n".join(parts)


def common_prefix(a: Sequence[int], b: Sequence[int]) -> int:
    """How many leading tokens ``a`` and ``b`` share."""
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


class PromptCache:
    """Saved prefix states for one model: in memory, and under ``directory`` if given.

    Thread-safe; reading or writing a file happens in the caller's thread.
    """

    def __init__(
        self,
        identity: str,
        directory: Path | None = None,
        max_entries: int = MAX_RAM_ENTRIES,
        max_bytes: int = MAX_RAM_BYTES,
        max_disk_bytes: int = MAX_DISK_BYTES,
    ) -> None:
        self.identity = identity
        self.directory = directory
        self.max_entries = max_entries
        self.max_bytes = max_bytes
        self.max_disk_bytes = max_disk_bytes
        self._ram: OrderedDict[tuple[int, ...], SavedPrefix] = OrderedDict()
        self._lock = threading.Lock()
        self.ram_hits = 0
        self.disk_hits = 0
        self.misses = 0
        self.corrupt = 0

    # ------------------------------------------------------------ lookups

    def key(self, tokens: Sequence[int]) -> str:
        """The hex name of ``tokens``' state for this model."""
        digest = hashlib.sha256(self.identity.encode("utf-8"))
        digest.update(b"\0")
        digest.update(_token_bytes(tokens))
        return digest.hexdigest()

    def get(self, tokens: Sequence[int]) -> SavedPrefix | None:
        """The saved state of exactly ``tokens``: from memory, else from disk."""
        wanted = tuple(tokens)
        with self._lock:
            saved = self._ram.get(wanted)
            if saved is not None:
                self._ram.move_to_end(wanted)
                self.ram_hits += 1
                return saved
        saved = self._read(wanted)
        with self._lock:
            if saved is None:
                self.misses += 1
                return None
            self.disk_hits += 1
        self._remember(saved)
        return saved

    def best_match(self, tokens: Sequence[int]) -> tuple[SavedPrefix | None, int]:
        """The state in memory sharing the most leading tokens with ``tokens``, and how
        many it shares (None, 0: none shares any)."""
        best: SavedPrefix | None = None
        shared = 0
        with self._lock:
            for saved in self._ram.values():
                n = common_prefix(saved.tokens, tokens)
                if n > shared:
                    best, shared = saved, n
            if best is not None:
                self._ram.move_to_end(best.tokens)
        return best, shared

    def __len__(self) -> int:
        return len(self._ram)

    @property
    def ram_bytes(self) -> int:
        """Bytes held in memory."""
        with self._lock:
            return sum(s.size for s in self._ram.values())

    # ------------------------------------------------------------ saving

    def put(self, saved: SavedPrefix, disk: bool = True) -> None:
        """Keep ``saved`` in memory, and on disk when ``disk`` and a folder is set."""
        self._remember(saved)
        if disk:
            self.write(saved)

    def _remember(self, saved: SavedPrefix) -> None:
        if saved.size > self.max_bytes:
            return
        with self._lock:
            self._ram[saved.tokens] = saved
            self._ram.move_to_end(saved.tokens)
            total = sum(s.size for s in self._ram.values())
            while len(self._ram) > self.max_entries or total > self.max_bytes:
                _, dropped = self._ram.popitem(last=False)
                total -= dropped.size

    def path(self, tokens: Sequence[int]) -> Path | None:
        """Where ``tokens``' state is kept on disk (None: no disk cache)."""
        if self.directory is None:
            return None
        return self.directory / f"{self.key(tokens)}{SUFFIX}"

    def write(self, saved: SavedPrefix) -> None:
        """Write ``saved`` to disk (atomically), then trim the folder to its limit."""
        target = self.path(saved.tokens)
        if target is None or saved.size > self.max_disk_bytes:
            return
        data = self._encode(saved)
        tmp_name = ""
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            with tempfile.NamedTemporaryFile(
                "wb", dir=target.parent, prefix=".tmp-", suffix=".part", delete=False
            ) as tmp:
                tmp_name = tmp.name
                tmp.write(data)
            os.replace(tmp_name, target)
        except OSError as exc:
            _LOGGER.warning("Could not save a prompt state in %s: %s", target.parent, exc)
            if tmp_name:
                with contextlib.suppress(OSError):
                    os.unlink(tmp_name)
            return
        self._trim()

    def _trim(self) -> None:
        """Remove the least recently used files until the folder fits its limit."""
        assert self.directory is not None
        try:
            files = [(p.stat().st_mtime_ns, p.stat().st_size, p) for p in self._files()]
        except OSError:
            return
        total = sum(size for _, size, _ in files)
        for _, size, path in sorted(files):
            if total <= self.max_disk_bytes:
                break
            try:
                path.unlink()
                total -= size
            except OSError:
                pass

    def _files(self) -> list[Path]:
        assert self.directory is not None
        if not self.directory.is_dir():
            return []
        return [p for p in self.directory.iterdir() if p.suffix == SUFFIX]

    @property
    def disk_bytes(self) -> int:
        """Bytes the disk cache holds now (0: none)."""
        if self.directory is None:
            return 0
        return sum(p.stat().st_size for p in self._files())

    # ------------------------------------------------------------ file layout

    def _encode(self, saved: SavedPrefix) -> bytes:
        tokens = _token_bytes(saved.tokens)
        body = tokens + saved.state
        header = json.dumps(
            {
                "version": VERSION,
                "key": self.key(saved.tokens),
                "identity": self.identity,
                "tokens": len(saved.tokens),
                "state_bytes": len(saved.state),
                "sha256": hashlib.sha256(body).hexdigest(),
            }
        ).encode("utf-8")
        return MAGIC + struct.pack("<I", len(header)) + header + body

    def _read(self, tokens: tuple[int, ...]) -> SavedPrefix | None:
        path = self.path(tokens)
        if path is None:
            return None
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            return None
        except OSError as exc:
            _LOGGER.warning("Could not read the prompt state %s: %s", path, exc)
            return None
        saved = self._decode(data, tokens)
        if isinstance(saved, str):
            _LOGGER.warning("Ignoring the prompt state %s (%s); it will be rebuilt", path, saved)
            with self._lock:
                self.corrupt += 1
            try:
                path.unlink()
            except OSError:
                pass
            return None
        try:
            os.utime(path)  # recently used: trimmed last
        except OSError:
            pass
        return saved

    def _decode(self, data: bytes, tokens: tuple[int, ...]) -> SavedPrefix | str:
        """The entry in ``data``, or why it is not the one for ``tokens``."""
        start = len(MAGIC) + 4
        if len(data) < start or not data.startswith(MAGIC):
            return "not a prompt state file"
        (length,) = struct.unpack("<I", data[len(MAGIC) : start])
        try:
            header = json.loads(data[start : start + length].decode("utf-8"))
            version = header["version"]
            count, state_bytes = int(header["tokens"]), int(header["state_bytes"])
            key, identity, checksum = header["key"], header["identity"], header["sha256"]
        except (ValueError, KeyError, TypeError, UnicodeDecodeError):
            return "unreadable header"
        if version != VERSION:
            return f"format version {version}"
        if identity != self.identity or key != self.key(tokens):
            return "saved for another model or prompt"
        body = data[start + length :]
        if len(body) != 4 * count + state_bytes:
            return "truncated"
        if hashlib.sha256(body).hexdigest() != checksum:
            return "checksum mismatch"
        saved_tokens = tuple(int(t) for t in np.frombuffer(body[: 4 * count], dtype="<i4"))
        if saved_tokens != tokens:
            return "saved for other tokens"
        return SavedPrefix(saved_tokens, bytes(body[4 * count :]))


def _token_bytes(tokens: Sequence[int]) -> bytes:
    return np.asarray(tokens, dtype="<i4").tobytes()
