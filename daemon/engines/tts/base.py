"""The narrow interface the TTS service needs from a speech synthesizer."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterator
from dataclasses import dataclass

from daemon.engines.tts.voices import VoiceInfo
from daemon.errors import InvalidRequest


@dataclass(frozen=True)
class SynthesisOptions:
    """Per-request synthesis settings; None means the voice's default."""

    voice: str | None = None
    speaker: str | None = None
    speed: float = 1.0
    """Speaking rate multiplier (0.25..4)."""
    noise_scale: float | None = None
    noise_w_scale: float | None = None
    volume: float = 1.0
    """Output gain (0..4)."""
    sentence_silence_s: float | None = None
    """Silence between sentences; None uses tts.sentence_silence_ms."""
    sample_rate: int | None = None
    """Output rate (Hz); None keeps the voice's native rate."""

    def __post_init__(self) -> None:
        if not 0.25 <= self.speed <= 4.0:
            raise InvalidRequest(f"speed must be between 0.25 and 4, got {self.speed}")
        if not 0.0 <= self.volume <= 4.0:
            raise InvalidRequest(f"volume must be between 0 and 4, got {self.volume}")
        for name in ("noise_scale", "noise_w_scale"):
            value = getattr(self, name)
            if value is not None and not 0.0 <= value <= 2.0:
                raise InvalidRequest(f"{name} must be between 0 and 2, got {value}")
        if self.sentence_silence_s is not None and not 0 <= self.sentence_silence_s <= 5:
            raise InvalidRequest("sentence silence must be between 0 and 5 s")
        if self.sample_rate is not None and not 8000 <= self.sample_rate <= 48000:
            raise InvalidRequest(
                f"sample rate must be between 8000 and 48000 Hz, got {self.sample_rate}"
            )


@dataclass(frozen=True)
class SentenceAudio:
    """One sentence of synthesized mono s16 PCM."""

    pcm: bytes
    rate: int
    """Sample rate (Hz)."""
    sentence: str
    fallback: bool = False
    """Spoken by a remote voice's local fallback: such audio is never cached."""


class TtsEngine(ABC):
    """A synthesizer over the voice store; calls are blocking."""

    device: str

    @abstractmethod
    def synthesize(
        self, voice: VoiceInfo, sentence: str, options: SynthesisOptions
    ) -> Iterator[bytes]:
        """Yield native-rate mono s16 PCM for one sentence (blocking; in a worker)."""

    @abstractmethod
    def preload(self, voice: VoiceInfo) -> None:
        """Load a voice now so the first request is fast."""
