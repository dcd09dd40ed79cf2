"""Test signals shared by the benchmarks."""

from __future__ import annotations

import numpy as np


def pink_noise(n: int, rng: np.random.Generator) -> np.ndarray:
    """``n`` samples of pink noise (1/f power, no DC), unit RMS, float32."""
    spectrum = np.fft.rfft(rng.standard_normal(n))
    spectrum[1:] /= np.sqrt(np.arange(1, len(spectrum)))
    spectrum[0] = 0
    noise = np.fft.irfft(spectrum, n)
    return (noise / np.sqrt(np.mean(noise**2))).astype(np.float32)
