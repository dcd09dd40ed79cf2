"""The turn check's CPU per call: the previous float32 path against the current one.

Both run the int8 Smart Turn v3.2 file as the float32 model it encodes, on one
thread. The previous way: float64 log-mel features and the whole 8 s window
through the graph (``float_model_bytes``, ``ORT_ENABLE_ALL``). The current way is
:class:`SmartTurn`. For each of the reference clips (``tests/data/turn``, the unit
tests' table) the two are timed alternately, CPU time of the calling thread per
call (ONNX Runtime runs a one-thread session on the caller's thread), the median
of ``--calls`` after ``--warmup``; the largest difference between their
probabilities, and from the table's, is printed too.

    .venv/bin/python -m bench.turn_speed [--calls 30] [--rounds 5] [--clips lights,...]
"""

from __future__ import annotations

import json
import statistics
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

import numpy as np

from bench.harness import arguments
from bench.turn_reference import TABLE, clip_audio
from daemon.engines.models import resolve_turn_model
from daemon.engines.turn.features import (
    HOP,
    MEL_FLOOR,
    N_FFT,
    NORM_EPS,
    _window,
    mel_filters,
)
from daemon.engines.turn.qdq import float_model_bytes
from daemon.engines.turn.smart_turn import INPUT, SAMPLES, SmartTurn, window


def previous_log_mel(audio: np.ndarray) -> np.ndarray:
    """The features as computed before: the spectrum in float64, every frame."""
    x = np.asarray(audio, dtype=np.float32)
    x = (x - x.mean()) / np.sqrt(x.var() + NORM_EPS)
    padded = np.pad(x.astype(np.float64), N_FFT // 2, mode="reflect")
    frames = np.lib.stride_tricks.sliding_window_view(padded, N_FFT)[::HOP]
    power = np.abs(np.fft.rfft(frames * _window(), axis=-1)) ** 2
    mel = mel_filters() @ power.T
    spec = np.log10(np.maximum(mel, MEL_FLOOR))[:, :-1]
    spec = np.maximum(spec, spec.max() - 8.0)
    return ((spec + 4.0) / 4.0).astype(np.float32)


class Previous:
    """The previous float32 path: the whole window, ORT_ENABLE_ALL, one thread."""

    def __init__(self, path: Path) -> None:
        import onnxruntime

        opts = onnxruntime.SessionOptions()
        opts.intra_op_num_threads = 1
        opts.inter_op_num_threads = 1
        opts.execution_mode = onnxruntime.ExecutionMode.ORT_SEQUENTIAL
        opts.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_ALL
        opts.log_severity_level = 4
        self.session = onnxruntime.InferenceSession(
            float_model_bytes(path.read_bytes()), opts, providers=["CPUExecutionProvider"]
        )

    def probability(self, audio: np.ndarray) -> float:
        features = previous_log_mel(window(audio, SAMPLES))
        (out,) = self.session.run(None, {INPUT: features[None]})
        return float(np.asarray(out).reshape(-1)[0])


def cpu_ms(
    calls: dict[str, Callable[[], object]], n: int, rounds: int, warmup: int
) -> dict[str, float]:
    """Median thread CPU ms per call of each callable, timed in alternating rounds."""
    times: dict[str, list[float]] = {name: [] for name in calls}
    for call in calls.values():
        for _ in range(warmup):
            call()
    per_round = max(1, n // rounds)
    for _ in range(rounds):
        for name, call in calls.items():
            for _ in range(per_round):
                start = time.thread_time()
                call()
                times[name].append(time.thread_time() - start)
    return {name: statistics.median(t) * 1000 for name, t in times.items()}


def main() -> None:
    parser = arguments(__doc__, write=False)
    parser.add_argument("--calls", type=int, default=30, help="timed calls per way and clip")
    parser.add_argument("--rounds", type=int, default=5, help="alternations per clip")
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--clips", default="", help="comma-separated names (default: all)")
    args = parser.parse_args()

    table = json.loads(TABLE.read_text())
    names = args.clips.split(",") if args.clips else sorted(table["clips"])
    path = resolve_turn_model("")
    ways: dict[str, Previous | SmartTurn] = {"previous": Previous(path), "current": SmartTurn(path)}
    print(f"CPU ms per call (median of {args.calls}, after {args.warmup} warm-up calls):")
    print(f"{'clip':<15} {'s':>5} {'previous':>9} {'current':>9} {'p prev':>8} {'p now':>8}")
    worst, worst_table = 0.0, 0.0
    totals: dict[str, list[float]] = {name: [] for name in ways}
    for name in names:
        audio = clip_audio(name, table["clips"][name])
        p = {way: model.probability(audio) for way, model in ways.items()}
        worst = max(worst, abs(p["previous"] - p["current"]))
        worst_table = max(worst_table, abs(p["current"] - table["clips"][name]["probability"]))
        calls: dict[str, Callable[[], object]] = {
            way: partial(model.probability, audio) for way, model in ways.items()
        }
        ms = cpu_ms(
            calls,
            args.calls,
            args.rounds,
            args.warmup,
        )
        for way in ways:
            totals[way].append(ms[way])
        seconds = len(audio) / 16000
        print(
            f"{name:<15} {seconds:5.1f} {ms['previous']:9.1f} {ms['current']:9.1f}"
            f" {p['previous']:8.5f} {p['current']:8.5f}"
        )
    print(
        f"{'median':<15} {'':>5} {statistics.median(totals['previous']):9.1f}"
        f" {statistics.median(totals['current']):9.1f}"
    )
    print(f"largest probability difference, previous vs current: {worst:.2e}")
    print(f"largest difference from the reference table (numpy evaluator): {worst_table:.2e}")


if __name__ == "__main__":
    main()
