"""Silero VAD, using the ONNX model that faster-whisper ships in its assets."""

from __future__ import annotations

import importlib.resources

import numpy as np

from daemon.engines.vad.base import Vad, VadStream

FRAME = 512
CONTEXT = 64


def silero_model_path() -> str:
    """Path of faster-whisper's bundled Silero model."""
    assets = importlib.resources.files("faster_whisper") / "assets"
    names = sorted(p.name for p in assets.iterdir() if p.name.startswith("silero_vad"))
    if not names:
        raise FileNotFoundError("faster_whisper/assets has no silero_vad model")
    return str(assets / names[-1])


class _SileroStream(VadStream):
    frame_samples = FRAME

    def __init__(self, vad: SileroVad) -> None:
        self._vad = vad
        self._h = np.zeros((1, 1, 128), dtype=np.float32)
        self._c = np.zeros((1, 1, 128), dtype=np.float32)
        self._context = np.zeros(CONTEXT, dtype=np.float32)
        self.last_probability = 0.0

    def probability(self, frame: np.ndarray) -> float:
        audio = frame.astype(np.float32) / 32768.0
        x = np.concatenate([self._context, audio]).reshape(1, -1)
        self._context = audio[-CONTEXT:]
        prob, self._h, self._c = self._vad.session.run(
            None, {"input": x, "h": self._h, "c": self._c}
        )
        self.last_probability = float(np.asarray(prob).reshape(-1)[0])
        return self.last_probability

    def is_speech(self, frame: np.ndarray) -> bool:
        return self.probability(frame) >= self._vad.threshold


class SileroVad(Vad):
    """32 ms frames; speech when the probability reaches ``threshold``."""

    name = "silero"
    frame_samples = FRAME

    def __init__(self, threshold: float = 0.5) -> None:
        import onnxruntime

        opts = onnxruntime.SessionOptions()
        # A tiny model called per frame: one thread avoids pool overhead per call.
        opts.intra_op_num_threads = 1
        opts.inter_op_num_threads = 1
        opts.log_severity_level = 4
        self.threshold = threshold
        self.session = onnxruntime.InferenceSession(
            silero_model_path(), sess_options=opts, providers=["CPUExecutionProvider"]
        )

    def stream(self) -> VadStream:
        """A stream with its own recurrent state and context."""
        return _SileroStream(self)
