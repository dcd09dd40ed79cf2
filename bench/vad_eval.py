"""Scoring a VAD against labeled audio (used by the tests and the benchmark)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from daemon.audio.pcm import RATE
from daemon.engines.vad.base import Vad
from daemon.speech.endpoint import EndpointConfig, Endpointer


@dataclass(frozen=True)
class VadScore:
    """Frame-level agreement with the labels, and endpointing results."""

    precision: float
    recall: float
    f1: float
    utterances: int
    """Utterances the endpointer found."""
    onset_error_ms: float
    """Mean |found - true| speech onset (ms), over matched utterances."""
    offset_error_ms: float
    """Mean |found - true| speech end (ms)."""
    us_per_frame: float
    """Microseconds of CPU per frame."""


def speech_labels(segments: list[tuple[int, int]], total: int) -> np.ndarray:
    """Per-sample truth: True inside the given [start, end) speech segments."""
    labels = np.zeros(total, dtype=bool)
    for start, end in segments:
        labels[start:end] = True
    return labels


def labeled_mix(
    utterances: list[np.ndarray], noisy: bool, gap_s: float = 1.2, seed: int = 3
) -> tuple[np.ndarray, np.ndarray, list[tuple[int, int]]]:
    """Utterances separated by silence (1 s at the ends), optionally with white noise
    about 10 dB below the speech level. Truth segments run from the first to the last
    sample of each utterance above -40 dBFS.

    Returns:
        (int16 audio, per-sample labels, speech segments in samples).
    """
    edge = np.zeros(RATE, dtype=np.int16)
    gap = np.zeros(int(gap_s * RATE), dtype=np.int16)
    parts: list[np.ndarray] = [edge]
    segments = []
    pos = len(edge)
    for index, utt in enumerate(utterances):
        loud = np.flatnonzero(np.abs(utt.astype(np.float32)) > 0.01 * 32768)
        segments.append((pos + int(loud[0]), pos + int(loud[-1])))
        parts.append(utt)
        pos += len(utt)
        tail = edge if index == len(utterances) - 1 else gap
        parts.append(tail)
        pos += len(tail)
    audio = np.concatenate(parts)
    if noisy:
        speech_rms = float(np.sqrt(np.mean((utterances[0].astype(np.float32) / 32768) ** 2)))
        rng = np.random.default_rng(seed)
        hum = rng.normal(0, speech_rms / 3.2, len(audio)) * 32767
        audio = np.clip(audio.astype(np.float64) + hum, -32768, 32767).astype(np.int16)
    return audio, speech_labels(segments, len(audio)), segments


def score(
    vad: Vad,
    audio: np.ndarray,
    labels: np.ndarray,
    segments: list[tuple[int, int]],
    endpoint: EndpointConfig | None = None,
) -> VadScore:
    """Run ``vad`` over int16 ``audio`` and compare with per-sample ``labels``."""
    import time

    n = vad.frame_samples
    began = time.perf_counter()
    flags = np.array(vad.speech_flags(audio))
    elapsed = time.perf_counter() - began
    truth = np.array([labels[i * n : (i + 1) * n].mean() >= 0.5 for i in range(len(flags))])
    tp = float(np.sum(flags & truth))
    precision = tp / max(1.0, float(np.sum(flags)))
    recall = tp / max(1.0, float(np.sum(truth)))
    f1 = 2 * precision * recall / max(1e-9, precision + recall)

    ep = Endpointer(endpoint or EndpointConfig())
    found: list[tuple[float, float]] = []
    for flag in flags:
        for event in ep.process(n / RATE, bool(flag)):
            if event.kind == "ended":
                found.append((ep.speech_start_s or 0.0, event.at_s))
                ep.reset()
    onset, offset = [], []
    for (f_start, f_end), (t_start, t_end) in zip(found, segments, strict=False):
        onset.append(abs(f_start - t_start / RATE) * 1000)
        offset.append(abs(f_end - t_end / RATE) * 1000)
    return VadScore(
        precision=round(precision, 3),
        recall=round(recall, 3),
        f1=round(f1, 3),
        utterances=len(found),
        onset_error_ms=round(float(np.mean(onset)), 1) if onset else float("nan"),
        offset_error_ms=round(float(np.mean(offset)), 1) if offset else float("nan"),
        us_per_frame=round(elapsed / max(1, len(flags)) * 1e6, 1),
    )
