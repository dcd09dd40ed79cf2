"""One turn-model interface: the last seconds of a speaker's audio in, "finished?" out."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class TurnPrediction:
    """The model's view of whether the speaker has finished their turn."""

    probability: float
    """Probability (0-1) that the turn is complete."""
    complete: bool
    """``probability`` at or above the model's threshold."""


class TurnModel(ABC):
    """A loaded end-of-turn model shared by all sessions (stateless per call)."""

    name: str
    window_s: float
    """Audio the model looks at, ending at the call (seconds at 16 kHz)."""

    @abstractmethod
    def predict(self, audio: np.ndarray) -> TurnPrediction:
        """Classify 16 kHz mono int16 audio that ends now (blocking; a worker thread).

        Audio longer than ``window_s`` is cut to its last ``window_s``; shorter audio is
        padded as the model expects.
        """
