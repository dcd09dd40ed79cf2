"""The GE2E speaker encoder (Resemblyzer's ``pretrained.pt``) in numpy.

What the model was trained on, done the same way (Resemblyzer 0.1.4): 16 kHz audio
raised to -30 dBFS if quieter, pauses longer than a few WebRTC-VAD windows cut out,
40-band mel power spectra (25 ms Hann windows every 10 ms, Slaney mel scale, not
logarithmic), cut into 1.6 s partials that overlap (1.3 per second). A 3-layer LSTM
of 256 units reads each partial; its last hidden state goes through a linear layer
and a ReLU, and is scaled to unit length. The utterance's embedding is the
normalized mean of its partials'. Two embeddings compare by their dot product
(cosine similarity).

Blocking and CPU-bound: call from a worker thread.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from daemon.engines.speaker.checkpoint import load_legacy
from daemon.errors import ModelUnavailable

RATE = 16000
N_FFT = 400
"""25 ms."""
HOP = 160
"""10 ms."""
N_MELS = 40
PARTIAL_FRAMES = 160
"""1.6 s of frames per partial utterance."""
PARTIALS_PER_S = 1.3
MIN_COVERAGE = 0.75
"""The last partial counts when at least this share of it is audio."""
TARGET_DBFS = -30.0
VAD_WINDOW = 480
"""30 ms at 16 kHz: WebRTC VAD's window."""
VAD_AVERAGE = 8
VAD_MAX_SILENCE = 6
LAYERS = 3
HIDDEN = 256


def _mel_filters() -> np.ndarray:
    """Slaney mel filters, area-normalized: (40, 201), as librosa's defaults give."""
    from daemon.engines.turn.features import mel_filters

    return np.asarray(mel_filters(N_MELS, N_FFT, RATE), dtype=np.float64)


def mel_frames(wav: np.ndarray) -> np.ndarray:
    """Mel power frames of float audio in [-1, 1]: (frames, 40) float32.

    A centred STFT (zero-padded by half a window each side) with a periodic Hann window.
    """
    x = np.pad(np.asarray(wav, dtype=np.float64), N_FFT // 2)
    if len(x) < N_FFT:
        x = np.pad(x, (0, N_FFT - len(x)))
    frames = np.lib.stride_tricks.sliding_window_view(x, N_FFT)[::HOP]
    window = 0.5 - 0.5 * np.cos(2.0 * np.pi * np.arange(N_FFT) / N_FFT)
    power = np.abs(np.fft.rfft(frames * window, axis=-1)) ** 2
    return (power @ _mel_filters().T).astype(np.float32)


def normalize_volume(wav: np.ndarray, target_dbfs: float = TARGET_DBFS) -> np.ndarray:
    """Raise quiet audio to ``target_dbfs`` (RMS); louder audio is left as it is."""
    rms = float(np.sqrt(np.mean((wav * 32767.0) ** 2))) if len(wav) else 0.0
    if rms <= 0.0:
        return wav
    change = target_dbfs - 20.0 * np.log10(rms / 32767.0)
    return wav if change < 0 else wav * np.float32(10.0 ** (change / 20.0))


def trim_long_silences(wav: np.ndarray) -> np.ndarray:
    """``wav`` without the pauses WebRTC VAD (mode 3), smoothed, hears no voice in."""
    import webrtcvad

    wav = wav[: len(wav) - len(wav) % VAD_WINDOW]
    if not len(wav):
        return wav
    pcm = np.round(wav * 32767.0).astype("<i2").tobytes()
    vad = webrtcvad.Vad(3)
    step = VAD_WINDOW * 2
    flags = np.array(
        [vad.is_speech(pcm[i : i + step], RATE) for i in range(0, len(pcm), step)], dtype=float
    )
    padded = np.concatenate([np.zeros((VAD_AVERAGE - 1) // 2), flags, np.zeros(VAD_AVERAGE // 2)])
    sums = np.cumsum(padded)
    sums[VAD_AVERAGE:] = sums[VAD_AVERAGE:] - sums[:-VAD_AVERAGE]
    voiced = np.round(sums[VAD_AVERAGE - 1 :] / VAD_AVERAGE).astype(bool)
    # Dilation by VAD_MAX_SILENCE + 1 windows, centred (an odd width), as Resemblyzer's
    # scipy binary_dilation does.
    width = VAD_MAX_SILENCE + 1
    kept = np.convolve(voiced.astype(int), np.ones(width, dtype=int), mode="same") > 0
    return wav[np.repeat(kept, VAD_WINDOW)]


def preprocess(audio: np.ndarray) -> np.ndarray:
    """16 kHz int16 or float audio as the encoder expects it (float32)."""
    x = np.asarray(audio).reshape(-1)
    wav = x.astype(np.float32) / 32768.0 if x.dtype.kind in "iu" else x.astype(np.float32)
    return trim_long_silences(normalize_volume(wav))


def partial_slices(n_samples: int) -> list[slice]:
    """Where the 1.6 s partials of ``n_samples`` of audio lie, in mel frames."""
    n_frames = int(np.ceil((n_samples + 1) / HOP))
    step = int(np.round((RATE / PARTIALS_PER_S) / HOP))
    starts = range(0, max(1, n_frames - PARTIAL_FRAMES + step + 1), step)
    slices = [slice(i, i + PARTIAL_FRAMES) for i in starts]
    last = slices[-1]
    coverage = (n_samples - last.start * HOP) / (PARTIAL_FRAMES * HOP)
    if coverage < MIN_COVERAGE and len(slices) > 1:
        slices = slices[:-1]
    return slices


def _gates(rows: np.ndarray) -> np.ndarray:
    """PyTorch's LSTM rows (input, forget, cell, output gates) as (input, forget,
    output, cell), the sigmoid gates halved: one tanh then serves all four."""
    i, f, g, o = np.split(np.asarray(rows, dtype=np.float32), 4, axis=0)
    return np.concatenate([i * 0.5, f * 0.5, o * 0.5, g], axis=0)


class Ge2eEncoder:
    """The loaded encoder: audio in, a 256-dimension unit vector out."""

    name = "ge2e-resemblyzer"
    dimensions = HIDDEN

    def __init__(self, path: Path) -> None:
        state = load_legacy(path)
        weights = state.get("model_state") if isinstance(state, dict) else None
        if not isinstance(weights, dict):
            raise ModelUnavailable(f"{path} holds no model_state")
        try:
            self.layers = [
                (
                    _gates(weights[f"lstm.weight_ih_l{k}"]).T.copy(),
                    _gates(weights[f"lstm.weight_hh_l{k}"]).T.copy(),
                    _gates(weights[f"lstm.bias_ih_l{k}"] + weights[f"lstm.bias_hh_l{k}"]),
                )
                for k in range(LAYERS)
            ]
            self.linear = (
                weights["linear.weight"].T.astype(np.float32),
                weights["linear.bias"].astype(np.float32),
            )
        except KeyError as exc:
            raise ModelUnavailable(f"{path} is not a GE2E encoder: {exc} missing") from None
        if self.layers[0][0].shape != (N_MELS, 4 * HIDDEN):
            raise ModelUnavailable(f"{path} is not a 40-band GE2E encoder")
        self.path = path

    def forward(self, mels: np.ndarray) -> np.ndarray:
        """Unit embeddings of a batch of partials: (batch, frames, 40) -> (batch, 256)."""
        x = np.asarray(mels, dtype=np.float32)
        batch, steps, _ = x.shape
        h = np.zeros((batch, HIDDEN), np.float32)
        for w_ih, w_hh, bias in self.layers:
            # Every step's input part at once, pre-scaled for one tanh per step (gates
            # reordered i, f, o, g at load: sigmoid(z) = (1 + tanh(z / 2)) / 2).
            projected = x @ w_ih + bias
            h = np.zeros((batch, HIDDEN), np.float32)
            c = np.zeros((batch, HIDDEN), np.float32)
            out = np.empty((batch, steps, HIDDEN), np.float32)
            for t in range(steps):
                z = np.tanh(projected[:, t] + h @ w_hh)
                gates = z[:, : 3 * HIDDEN] * 0.5 + 0.5
                c = gates[:, HIDDEN : 2 * HIDDEN] * c + gates[:, :HIDDEN] * z[:, 3 * HIDDEN :]
                h = gates[:, 2 * HIDDEN :] * np.tanh(c)
                out[:, t] = h
            x = out
        weight, bias = self.linear
        raw = np.maximum(h @ weight + bias, 0.0)
        norms = np.linalg.norm(raw, axis=1, keepdims=True)
        return raw / np.maximum(norms, 1e-12)

    def embed(self, audio: np.ndarray) -> np.ndarray | None:
        """The unit embedding of one utterance (16 kHz), or None when it holds no voice."""
        wav = preprocess(audio)
        if len(wav) < HOP:
            return None
        slices = partial_slices(len(wav))
        needed = slices[-1].stop * HOP
        if needed >= len(wav):
            wav = np.pad(wav, (0, needed - len(wav)))
        mel = mel_frames(wav)
        partials = self.forward(np.stack([mel[s] for s in slices]))
        mean = partials.mean(axis=0)
        return (mean / np.linalg.norm(mean)).astype(np.float32)


def similarity(a: np.ndarray, b: np.ndarray) -> float:
    """Cosine similarity of two embeddings (unit vectors: their dot product)."""
    return float(np.dot(a, b) / max(1e-12, float(np.linalg.norm(a) * np.linalg.norm(b))))
