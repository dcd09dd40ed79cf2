"""Test signals shared by the benchmarks."""

from __future__ import annotations

import struct
import subprocess

import numpy as np

from daemon.audio.pcm import RATE, resample_pcm


def pink_noise(n: int, rng: np.random.Generator) -> np.ndarray:
    """``n`` samples of pink noise (1/f power, no DC), unit RMS, float32."""
    spectrum = np.fft.rfft(rng.standard_normal(n))
    spectrum[1:] /= np.sqrt(np.arange(1, len(spectrum)))
    spectrum[0] = 0
    noise = np.fft.irfft(spectrum, n)
    return (noise / np.sqrt(np.mean(noise**2))).astype(np.float32)


def espeak_pcm(voice: str, wpm: int, text: str) -> np.ndarray:
    """eSpeak NG (the Debian package) saying ``text``: 16 kHz int16, as it speaks it."""
    out = subprocess.run(
        ["espeak-ng", "-v", voice, "-s", str(wpm), "--stdout", text],
        check=True,
        capture_output=True,
    ).stdout
    rate = struct.unpack("<I", out[24:28])[0]
    pcm = resample_pcm(out[44 : 44 + (len(out) - 44) // 2 * 2], rate, RATE)
    return np.frombuffer(pcm, "<i2")
