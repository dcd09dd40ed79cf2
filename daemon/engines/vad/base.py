"""One streaming VAD interface: fixed-size 16 kHz frames in, speech yes/no out."""

from __future__ import annotations

from abc import ABC, abstractmethod

import numpy as np


class VadStream(ABC):
    """Per-utterance VAD state; feed frames of exactly ``frame_samples``."""

    frame_samples: int
    """Samples per frame at 16 kHz."""

    @abstractmethod
    def is_speech(self, frame: np.ndarray) -> bool:
        """Classify one int16 frame (blocking, cheap)."""


class Vad(ABC):
    """A loaded VAD model shared by all sessions."""

    name: str
    frame_samples: int

    @abstractmethod
    def stream(self) -> VadStream:
        """A fresh stream with its own state."""

    def speech_flags(self, audio: np.ndarray) -> list[bool]:
        """Classify whole int16 audio frame by frame (the tail frame is dropped)."""
        stream = self.stream()
        n = self.frame_samples
        return [stream.is_speech(audio[i : i + n]) for i in range(0, len(audio) - n + 1, n)]
