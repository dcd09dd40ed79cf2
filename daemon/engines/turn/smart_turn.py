"""Pipecat's Smart Turn v3.2 (Whisper-tiny encoder, BSD-2) on ONNX Runtime.

The model reads the last 8 s of the speaker's audio (zero-padded at the front when
shorter) as Whisper log-mel features (:mod:`daemon.engines.turn.features`) and
returns the probability, through a sigmoid inside the graph, that the turn is
complete. One decision took about 85 ms of one core on a shared 2-vCPU AMD EPYC
(AVX2; features 3-5 ms, the rest the model), as Pipecat's own analyzer did there.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from daemon.engines.turn.base import TurnModel, TurnPrediction
from daemon.engines.turn.features import HOP, N_MELS, RATE, log_mel
from daemon.errors import ModelUnavailable

WINDOW_S = 8.0
SAMPLES = int(WINDOW_S * RATE)
FRAMES = SAMPLES // HOP
INPUT = "input_features"


def window(audio: np.ndarray, samples: int) -> np.ndarray:
    """Int16 (or float) audio as float32 in [-1, 1], the last ``samples`` of it,
    zero-padded at the front to exactly ``samples``."""
    x = np.asarray(audio).reshape(-1)
    x = x.astype(np.float32) / 32768.0 if x.dtype.kind in "iu" else x.astype(np.float32)
    if len(x) >= samples:
        return x[len(x) - samples :]
    return np.concatenate([np.zeros(samples - len(x), dtype=np.float32), x])


class SmartTurn(TurnModel):
    """An ONNX Smart Turn v3 file; complete when the probability reaches ``threshold``.

    Stateless per call; ONNX Runtime sessions may be run from several threads.
    """

    name = "smart-turn-v3.2"
    window_s = WINDOW_S

    def __init__(self, path: Path, threshold: float = 0.5, threads: int = 1) -> None:
        import onnxruntime

        opts = onnxruntime.SessionOptions()
        # One decision at a time from one worker: a single thread avoids pool overhead.
        opts.intra_op_num_threads = threads
        opts.inter_op_num_threads = 1
        opts.execution_mode = onnxruntime.ExecutionMode.ORT_SEQUENTIAL
        opts.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_ALL
        opts.log_severity_level = 4
        self.path = path
        self.threshold = threshold
        self.session = onnxruntime.InferenceSession(
            str(path), sess_options=opts, providers=["CPUExecutionProvider"]
        )
        inputs = self.session.get_inputs()
        if [i.name for i in inputs] != [INPUT] or list(inputs[0].shape[1:]) != [N_MELS, FRAMES]:
            shapes = ", ".join(f"{i.name}{i.shape}" for i in inputs)
            raise ModelUnavailable(f"{path} is not a Smart Turn v3 model (inputs: {shapes})")

    def probability(self, audio: np.ndarray) -> float:
        """The model's probability that ``audio`` (16 kHz, ending now) ends a turn."""
        features = log_mel(window(audio, SAMPLES))
        (out,) = self.session.run(None, {INPUT: features[None]})
        return float(np.asarray(out).reshape(-1)[0])

    def predict(self, audio: np.ndarray) -> TurnPrediction:
        """Classify 16 kHz mono int16 audio that ends now (blocking; a worker thread)."""
        p = self.probability(audio)
        return TurnPrediction(probability=p, complete=p >= self.threshold)
