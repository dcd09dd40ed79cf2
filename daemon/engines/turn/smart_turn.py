"""Pipecat's Smart Turn v3.2 (Whisper-tiny encoder, BSD-2) on ONNX Runtime.

The model reads the last 8 s of the speaker's audio (zero-padded at the front when
shorter) as Whisper log-mel features (:mod:`daemon.engines.turn.features`) and
returns the probability, through a sigmoid inside the graph, that the turn is
complete.

The file is int8 (QDQ), and ONNX Runtime's integer kernels answer differently on
different CPUs (0.37 or 0.91 for the same clip on AVX-512 VNNI and AVX2), so the
graph is run as the float32 model it encodes (:mod:`daemon.engines.turn.qdq`):
the same weights, float arithmetic, one answer on every x86 CPU. See
bench/RESULTS.md ("Turn-taking") for what that costs per check. Two rewrites make
that float32 graph cheaper without moving its answers: the convolutional stem runs
once over the padding in front of a short clip (:mod:`daemon.engines.turn.padding`)
and the GELUs run as one operator each (:mod:`daemon.engines.turn.gelu`);
``bench/turn_speed.py`` times it against the whole window.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from daemon.engines.turn.base import TurnModel, TurnPrediction
from daemon.engines.turn.features import HOP, N_MELS, RATE, log_mel
from daemon.engines.turn.gelu import fuse_gelu
from daemon.engines.turn.padding import POSITIONS, skip_padding, trim
from daemon.engines.turn.qdq import dequantize
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


def _check_inputs(path: Path, inputs: Sequence[Any]) -> None:
    """Raise unless ``inputs`` (ONNX value infos or ONNX Runtime's) are Smart Turn v3's."""
    shapes = []
    for i in inputs:
        dims = getattr(i, "shape", None)
        if dims is None:
            dims = [d.dim_value or d.dim_param for d in i.type.tensor_type.shape.dim]
        shapes.append((i.name, list(dims)))
    if [name for name, _ in shapes] != [INPUT] or shapes[0][1][1:] != [N_MELS, FRAMES]:
        listed = ", ".join(f"{name}{dims}" for name, dims in shapes)
        raise ModelUnavailable(f"{path} is not a Smart Turn v3 model (inputs: {listed})")


class SmartTurn(TurnModel):
    """An ONNX Smart Turn v3 file; complete when the probability reaches ``threshold``.

    Stateless per call; ONNX Runtime sessions may be run from several threads.
    """

    name = "smart-turn-v3.2"
    window_s = WINDOW_S

    def __init__(
        self, path: Path, threshold: float = 0.5, threads: int = 1, exact: bool = True
    ) -> None:
        """Load ``path``; ``exact`` (the default) runs a quantized file in float32.

        ``exact=False`` runs the file as it is, with the CPU's own integer kernels: only
        for comparison (``bench/turn_bench.py``), since its answers move with the CPU.
        """
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
        self.exact = exact
        model: str | bytes = str(path)
        self.skips_padding = False
        if exact:
            import onnx

            proto = dequantize(onnx.load_from_string(path.read_bytes()))
            _check_inputs(path, proto.graph.input)
            self.skips_padding = skip_padding(proto, INPUT, FRAMES // 2)
            fuse_gelu(proto)
            model = proto.SerializeToString()
        self.session = onnxruntime.InferenceSession(
            model, sess_options=opts, providers=["CPUExecutionProvider"]
        )
        if not self.skips_padding:
            _check_inputs(path, self.session.get_inputs())

    def probability(self, audio: np.ndarray) -> float:
        """The model's probability that ``audio`` (16 kHz, ending now) ends a turn."""
        features = log_mel(window(audio, SAMPLES))
        feeds = {INPUT: features[None]}
        if self.skips_padding:
            frames, positions = trim(features)
            feeds = {INPUT: frames[None], POSITIONS: positions}
        (out,) = self.session.run(None, feeds)
        return float(np.asarray(out).reshape(-1)[0])

    def predict(self, audio: np.ndarray) -> TurnPrediction:
        """Classify 16 kHz mono int16 audio that ends now (blocking; a worker thread)."""
        p = self.probability(audio)
        return TurnPrediction(probability=p, complete=p >= self.threshold)
