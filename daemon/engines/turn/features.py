"""Whisper log-mel features in numpy, as Smart Turn v3 was trained on them.

The same numbers as Hugging Face's ``WhisperFeatureExtractor(chunk_length=8)`` with
``do_normalize=True`` on exactly eight seconds: the waveform scaled to zero mean and
unit variance, a centred (reflect-padded) 400-point STFT with a periodic Hann window
every 160 samples, the power spectrum on 80 Slaney mel bands, ``log10`` floored at
1e-10, the last frame dropped, everything within 8 of the peak and mapped by
``(x + 4) / 4``. No torch, no transformers.
"""

from __future__ import annotations

from functools import cache

import numpy as np

RATE = 16000
N_FFT = 400
HOP = 160
N_MELS = 80
MEL_FLOOR = 1e-10
NORM_EPS = 1e-7


def _hz_to_mel(hz: np.ndarray) -> np.ndarray:
    """Slaney's mel scale: linear below 1 kHz, logarithmic above."""
    linear = hz * 3.0 / 200.0
    log = 15.0 + np.log(np.maximum(hz, 1e-12) / 1000.0) * 27.0 / np.log(6.4)
    return np.where(hz >= 1000.0, log, linear)


def _mel_to_hz(mel: np.ndarray) -> np.ndarray:
    linear = mel * 200.0 / 3.0
    log = 1000.0 * np.exp((mel - 15.0) * np.log(6.4) / 27.0)
    return np.where(mel >= 15.0, log, linear)


@cache
def mel_filters(n_mels: int = N_MELS, n_fft: int = N_FFT, rate: int = RATE) -> np.ndarray:
    """Triangular, area-normalised (Slaney) mel filters: (n_mels, n_fft // 2 + 1)."""
    edges = _mel_to_hz(np.linspace(0.0, _hz_to_mel(np.array(rate / 2.0)).item(), n_mels + 2))
    bins = np.linspace(0.0, rate // 2, n_fft // 2 + 1)
    lower, centre, upper = edges[:-2, None], edges[1:-1, None], edges[2:, None]
    rising = (bins[None, :] - lower) / (centre - lower)
    falling = (upper - bins[None, :]) / (upper - centre)
    weights = np.maximum(0.0, np.minimum(rising, falling))
    return weights * (2.0 / (upper - lower))


@cache
def _window(n_fft: int = N_FFT) -> np.ndarray:
    """Periodic Hann window (torch.hann_window's default)."""
    return 0.5 - 0.5 * np.cos(2.0 * np.pi * np.arange(n_fft) / n_fft)


@cache
def _window32(n_fft: int = N_FFT) -> np.ndarray:
    return _window(n_fft).astype(np.float32)


@cache
def _filters32(n_mels: int = N_MELS) -> np.ndarray:
    return np.ascontiguousarray(mel_filters(n_mels).astype(np.float32))


def constant_frames(leading: int, frames: int) -> int:
    """How many of the first STFT frames see only the first ``leading`` samples.

    Frame ``i`` (centred, reflect-padded by ``N_FFT // 2``) reads samples
    ``HOP * i - 200 .. HOP * i + 199``, the first frame reflected into ``1 .. 200``;
    when those samples are all equal (the zero padding in front of a short clip),
    so are the frames, and their spectra need computing once.
    """
    half = N_FFT // 2
    if leading <= half:
        return 0
    return min(frames, (leading - half) // HOP + 1)


def log_mel(audio: np.ndarray) -> np.ndarray:
    """Features of float audio in [-1, 1] at 16 kHz: (80, len(audio) // 160) float32.

    Args:
        audio: one-dimensional float samples, already cut or padded to the window.

    Returns:
        The normalised log-mel spectrogram the model reads.

    The spectrum is taken in float32 (the features within about 1e-5 of a float64
    spectrum's), and the frames that read nothing but the leading zeros (the padding in
    front of a clip shorter than the window) are computed once.
    """
    x = np.asarray(audio, dtype=np.float32).reshape(-1)
    n = len(x) // HOP  # the frames kept: the last of the centred STFT is dropped
    nonzero = np.flatnonzero(x)
    same = constant_frames(int(nonzero[0]) if len(nonzero) else len(x), n)
    first = max(same - 1, 0)  # one of the equal frames stands for all of them
    x = (x - x.mean()) / np.sqrt(x.var() + np.float32(NORM_EPS))
    padded = np.pad(x, N_FFT // 2, mode="reflect")
    frames = np.lib.stride_tricks.sliding_window_view(padded, N_FFT)[::HOP][first:n]
    spectrum = np.fft.rfft(frames * _window32(), axis=-1)
    power = spectrum.real**2 + spectrum.imag**2
    mel = (_filters32() @ power.T).astype(np.float64)  # the log in float64: silence is -1.5
    spec = np.log10(np.maximum(mel, MEL_FLOOR))
    spec = np.maximum(spec, spec.max() - 8.0)
    spec = (spec + 4.0) / 4.0
    if first:
        spec = np.concatenate([np.repeat(spec[:, :1], first, axis=1), spec], axis=1)
    return np.ascontiguousarray(spec, dtype=np.float32)
