"""What the rooms above need of the loaded engines, as structural types.

:class:`daemon.runtime.engines.Engines` satisfies these; speech and voice code
declares what it uses without importing the runtime that sits above it.
"""

from __future__ import annotations

from typing import Protocol

from daemon.engines.asr.base import AsrModel
from daemon.engines.vad.base import Vad
from daemon.engines.workers import WorkerPool


class AsrAccess(Protocol):
    """ASR models by name, and the pool their calls run in."""

    @property
    def asr_pool(self) -> WorkerPool:
        """The ASR worker pool."""
        ...

    def asr_model(self, name: str | None, language: str | None = None) -> AsrModel:
        """The model called ``name`` (None: the default, or with ``language`` one that
        speaks it); UnknownModel otherwise."""
        ...


class SpeechCheckAccess(AsrAccess, Protocol):
    """ASR plus the VAD, for checking recorded takes."""

    @property
    def vad(self) -> Vad | None:
        """The VAD engine (None: not loaded)."""
        ...

    @property
    def vad_pool(self) -> WorkerPool:
        """The VAD worker pool."""
        ...
