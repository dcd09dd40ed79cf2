"""Google's WebRTC VAD (the webrtcvad-wheels distribution)."""

from __future__ import annotations

import numpy as np

from daemon.audio.pcm import RATE
from daemon.engines.vad.base import Vad, VadStream


class _WebRtcStream(VadStream):
    def __init__(self, aggressiveness: int) -> None:
        import webrtcvad

        self._vad = webrtcvad.Vad(aggressiveness)
        self.frame_samples = 480

    def is_speech(self, frame: np.ndarray) -> bool:
        return bool(self._vad.is_speech(frame.astype("<i2").tobytes(), RATE))


class WebRtcVad(Vad):
    """30 ms frames; aggressiveness 0 (permissive) to 3 (strict)."""

    name = "webrtc"
    frame_samples = 480

    def __init__(self, aggressiveness: int = 2) -> None:
        self.aggressiveness = aggressiveness

    def stream(self) -> VadStream:
        """A stream with its own detector instance."""
        return _WebRtcStream(self.aggressiveness)
