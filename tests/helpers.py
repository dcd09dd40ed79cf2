"""Shared test helpers: audio generation, fakes and free ports."""

from __future__ import annotations

import difflib
import re
import socket
from collections.abc import Iterator
from typing import Any

import numpy as np

from daemon.asr.base import AsrModel, TranscribeOptions, Transcript
from daemon.audio import RATE, encode, pcm_to_float
from daemon.vad.base import Vad, VadStream


def free_port() -> int:
    """A TCP port free on loopback now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def words(text: str) -> list[str]:
    """Lower-case words without punctuation, for comparing transcripts."""
    return re.findall(r"[a-z0-9']+", text.lower())


def sounds_like(heard: str, said: str, at_least: float = 0.85) -> bool:
    """Whisper heard ``said`` in speech the daemon synthesized.

    The daemon's voices keep Piper's noise scales, so each synthesis differs a
    little and Whisper may split a word ("pre eating"): compare the letters, not
    the exact words.
    """
    a, b = " ".join(words(heard)), " ".join(words(said))
    return difflib.SequenceMatcher(None, a, b).ratio() >= at_least


def silence(seconds: float) -> np.ndarray:
    """Digital silence, int16 at 16 kHz."""
    return np.zeros(int(seconds * RATE), dtype=np.int16)


def noise(seconds: float, level: float = 0.05, seed: int = 0) -> np.ndarray:
    """White noise at ``level`` RMS (of full scale), int16 at 16 kHz."""
    rng = np.random.default_rng(seed)
    return (rng.normal(0, level, int(seconds * RATE)) * 32767).clip(-32768, 32767).astype(np.int16)


def chunks(data: bytes, sizes: tuple[int, ...] = (1, 7, 320, 4093, 960)) -> Iterator[bytes]:
    """Split bytes into awkward, varying chunk sizes."""
    i = k = 0
    while i < len(data):
        n = sizes[k % len(sizes)]
        yield data[i : i + n]
        i += n
        k += 1


class EnergyVad(Vad):
    """A deterministic fake VAD: a frame is speech when its RMS passes a threshold."""

    name = "energy"
    frame_samples = 480

    def __init__(self, threshold: float = 0.02) -> None:
        self.threshold = threshold

    def stream(self) -> VadStream:
        vad = self

        class _Stream(VadStream):
            frame_samples = 480

            def is_speech(self, frame: np.ndarray) -> bool:
                rms = float(np.sqrt(np.mean((frame.astype(np.float32) / 32768) ** 2)))
                return rms >= vad.threshold

        return _Stream()


class FakeAsr(AsrModel):
    """Records every decode; answers with the decoded length."""

    name = "fake"
    languages = ("en",)
    device = "cpu"
    default_language = "en"

    def __init__(self) -> None:
        self.calls: list[int] = []

    def transcribe(self, audio: np.ndarray, options: TranscribeOptions) -> Transcript:
        self.calls.append(len(audio))
        return Transcript(f"{len(audio)} samples", "en", len(audio) / RATE)


def tone(seconds: float, freq: float = 220.0, level: float = 0.3) -> np.ndarray:
    """A sine tone (loud enough for EnergyVad), int16 at 16 kHz."""
    t = np.arange(int(seconds * RATE)) / RATE
    return (np.sin(2 * np.pi * freq * t) * level * 32767).astype(np.int16)


def wav(samples: np.ndarray, rate: int = RATE) -> bytes:
    """int16 samples as a mono 16-bit WAV file."""
    return encode(samples.astype("<i2").tobytes(), rate, "wav")


def hear(engines: Any, pcm: bytes | np.ndarray) -> str:
    """What the default Whisper model hears in 16 kHz int16 audio (English)."""
    samples = pcm if isinstance(pcm, bytes) else pcm.astype("<i2")
    model = engines.asr[engines.config.asr.default_model]
    return model.transcribe(pcm_to_float(samples), TranscribeOptions(language="en")).text
