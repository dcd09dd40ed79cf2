"""One streaming wake-word interface: 16 kHz mono int16 in, detections out."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

RATE = 16000
"""Samples per second every wake model takes."""


@dataclass(frozen=True)
class WakeModelInfo:
    """What a wake model is, for ``describe`` and the web pages."""

    name: str
    """The id clients name in ``detect`` (e.g. ``okay_nabu``)."""
    phrase: str
    """What to say (e.g. "Okay Nabu")."""
    languages: tuple[str, ...]
    library: str
    """``micro`` (microWakeWord) or ``openwakeword``."""
    source: str
    """``builtin`` or the custom model file's path."""
    probability_cutoff: float
    """Mean probability (0-1) over ``sliding_window`` outputs that counts as heard."""
    sliding_window: int
    """Model outputs averaged before comparing with the cutoff."""


@dataclass(frozen=True)
class WakeHit:
    """A wake word heard in a stream."""

    name: str
    end_sample: int
    """Samples into the stream (16 kHz) where the detection fired."""
    probability: float


class Detector(ABC):
    """One model's state for one listener (blocking calls, in a worker)."""

    name: str

    @abstractmethod
    def process(self, pcm: bytes) -> list[tuple[int, float]]:
        """Feed 16 kHz s16 audio; (samples into ``pcm``, probability) per firing."""

    @abstractmethod
    def reset(self) -> None:
        """Forget everything heard so far."""

    @abstractmethod
    def close(self) -> None:
        """Free the interpreter; safe to call more than once."""


class WakeStream:
    """The detectors one listener runs, with the refractory period between hits.

    Not thread-safe: feed it from one worker call at a time (the callers await each
    call before the next).
    """

    def __init__(
        self,
        detectors: list[Detector],
        refractory_s: float,
        on_close: Callable[[], None] | None = None,
    ) -> None:
        self._detectors = detectors
        self._on_close = on_close
        self._refractory = int(refractory_s * RATE)
        self._last_hit: dict[str, int] = {}
        self.samples = 0
        """Samples fed so far."""

    @property
    def names(self) -> list[str]:
        """The models this stream listens for."""
        return [d.name for d in self._detectors]

    def process(self, samples: np.ndarray) -> list[WakeHit]:
        """Feed int16 samples (blocking: call in a worker); the hits, in order."""
        pcm = np.ascontiguousarray(samples, dtype="<i2").tobytes()
        hits: list[WakeHit] = []
        for det in self._detectors:
            for offset, prob in det.process(pcm):
                at = self.samples + offset
                last = self._last_hit.get(det.name)
                if last is not None and at - last < self._refractory:
                    continue  # the same utterance of the word, still echoing in the window
                self._last_hit[det.name] = at
                hits.append(WakeHit(det.name, at, prob))
        self.samples += len(samples)
        hits.sort(key=lambda h: h.end_sample)
        return hits

    def reset(self) -> None:
        """Start over (a new detection run): state and the refractory period."""
        for det in self._detectors:
            det.reset()
        self._last_hit.clear()

    def close(self) -> None:
        """Free every detector; safe to call more than once."""
        for det in self._detectors:
            det.close()
        self._detectors = []
        on_close, self._on_close = self._on_close, None
        if on_close is not None:
            on_close()
