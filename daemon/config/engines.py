"""The engine sections of config.yaml, in the file's order: ``asr``, ``vad``, ``tts``, ``llm``."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from daemon.config.rules import (
    COMPUTE_TYPES,
    base_url_ok,
    device_ok,
    module_ok,
    remote_voice_ok,
    rules,
)


@dataclass(frozen=True)
class RemoteAsrConfig:
    """An OpenAI-compatible transcription server (vLLM, speaches, another Hearth)."""

    base_url: str = field(default="", metadata=rules(check=base_url_ok))
    base_urls: list[str] = field(default_factory=list, metadata=rules(check=base_url_ok))
    model: str = ""
    api_key: str = ""
    timeout_s: float = field(default=30.0, metadata=rules(min=0.5, max=3600.0))
    retry_s: float = field(default=5.0, metadata=rules(min=0.1, max=3600.0))
    stream: bool = True


@dataclass(frozen=True)
class AsrModelConfig:
    """One faster-whisper model, local or on a remote server."""

    backend: Literal["local", "remote"] = "local"
    remote: RemoteAsrConfig = field(default_factory=RemoteAsrConfig)
    fallback: str = ""
    path: str = "tiny.en"
    device: str = field(default="auto", metadata=rules(check=device_ok))
    compute_type: str = field(default="auto", metadata=rules(choices=COMPUTE_TYPES))
    beam_size: int = field(default=1, metadata=rules(min=1, max=10))
    language: str = ""
    cpu_threads: int = field(default=0, metadata=rules(min=0, max=256))
    window: Literal["auto", "30"] = "auto"
    """Decode window: cut to the utterance (auto, with a guard; telephone-band audio
    keeps 30 s) or always Whisper's 30 s (bench/RESULTS.md, "Decode window")."""


@dataclass(frozen=True)
class AsrConfig:
    """Speech-to-text engine."""

    default_model: str = "tiny.en"
    models: dict[str, AsrModelConfig] = field(default_factory=lambda: {"tiny.en": AsrModelConfig()})
    workers: int = field(default=1, metadata=rules(min=1, max=16))
    partial_interval_ms: int = field(default=600, metadata=rules(min=100, max=10000))
    partials: Literal["auto", "on", "off"] = "auto"
    allow_download: bool = True
    batch_window_ms: int = field(default=5, metadata=rules(min=0, max=1000))
    max_batch: int = field(default=0, metadata=rules(min=0, max=64))


@dataclass(frozen=True)
class VadConfig:
    """Voice activity detection and endpointing."""

    engine: Literal["webrtc", "silero"] = "silero"
    threshold: float = field(default=0.5, metadata=rules(min=0.0, max=1.0))
    aggressiveness: int = field(default=2, metadata=rules(min=0, max=3))
    speech_start_ms: int = field(default=90, metadata=rules(min=0, max=2000))
    speculative_silence_ms: int = field(default=160, metadata=rules(min=30, max=5000))
    """Silence after speech at which the speculative decode starts (with that much
    trailing audio, at most ``padding_ms``)."""
    push_to_talk_silence_ms: int = field(default=90, metadata=rules(min=30, max=5000))
    """Push-to-talk: silence after speech at which the speculative decode starts."""
    trailing_silence_ms: int = field(default=700, metadata=rules(min=60, max=10000))
    padding_ms: int = field(default=180, metadata=rules(min=0, max=2000))
    turn: Literal["smart-turn", "off"] = "smart-turn"
    """End of turn by a turn model (Smart Turn v3.2) instead of a fixed silence."""
    turn_model: str = ""
    """An ONNX turn model file ("" : the embedded Smart Turn v3.2 CPU model)."""
    turn_threshold: float = field(default=0.85, metadata=rules(min=0.0, max=1.0))
    """Probability of "finished" that ends the turn (bench/RESULTS.md, "Turn-taking")."""
    turn_check_ms: int = field(default=200, metadata=rules(min=30, max=5000))
    """Silence after speech by which the turn model is asked (its threshold's point)."""
    turn_early_check_ms: int = field(default=0, metadata=rules(min=0, max=5000))
    """An earlier first question, as the speculative decode starts (0: none); an
    "incomplete" answer is asked again at ``turn_check_ms``."""
    turn_recheck_ms: int = field(default=0, metadata=rules(min=0, max=5000))
    """Further silence between later checks while the model says "incomplete" (0: none)."""
    max_pause_ms: int = field(default=1600, metadata=rules(min=60, max=10000))
    """With the turn model: the longest pause inside a turn (the turn ends here)."""
    turn_text: bool = True
    """The speculative transcript's last words join the turn model's answer: one that
    ends in "for", "and", "the" or "um" does not end the turn."""
    turn_text_threshold: float = field(default=0.5, metadata=rules(min=0.0, max=1.0))
    """With ``turn_text``: P(complete) that ends the turn when the words could end it."""
    max_utterance_ms: int = field(default=15000, metadata=rules(min=1000, max=600_000))
    """When Hearth ends the turn (Wyoming): the longest utterance, from its first word."""
    no_speech_ms: int = field(default=8000, metadata=rules(min=500, max=600_000))
    """When Hearth ends the turn (Wyoming): audio without speech after which the request
    ends with an empty transcript."""


@dataclass(frozen=True)
class TtsCacheConfig:
    """Disk cache of synthesized audio."""

    enabled: bool = True
    dir: str = ""
    max_mb: int = field(default=256, metadata=rules(min=1, max=1_000_000))


@dataclass(frozen=True)
class RemoteTtsConfig:
    """Voices served by an OpenAI-compatible speech server (Kokoro-FastAPI, speaches,
    openedai-speech, another Hearth): one model, one or more base URLs."""

    name: str = field(default="", metadata=rules(check=remote_voice_ok))
    """Names the group in logs, /metrics and ``hearth check``."""
    base_url: str = field(default="", metadata=rules(check=base_url_ok))
    base_urls: list[str] = field(default_factory=list, metadata=rules(check=base_url_ok))
    model: str = "tts-1"
    voices: list[str] = field(default_factory=list, metadata=rules(check=remote_voice_ok))
    """The server's voice names; each is offered here as ``prefix`` + its name."""
    prefix: str = ""
    language: str = "en"
    api_key: str = ""
    response_format: Literal["wav", "pcm"] = "wav"
    sample_rate: int = field(default=24000, metadata=rules(min=8000, max=48000))
    """The rate the server speaks at (``pcm`` answers carry none; WAV ones are resampled)."""
    timeout_s: float = field(default=30.0, metadata=rules(min=0.5, max=3600.0))
    retry_s: float = field(default=5.0, metadata=rules(min=0.1, max=3600.0))
    fallback: str = ""
    """A local voice that speaks when every endpoint fails ("": a clear error instead)."""

    def local_names(self) -> dict[str, str]:
        """Each voice's name here (``prefix`` + the server's name) -> the server's name."""
        return {f"{self.prefix}{voice}": voice for voice in self.voices}


@dataclass(frozen=True)
class TtsConfig:
    """Text-to-speech engine."""

    backend: str = field(default="piper", metadata=rules(check=module_ok))
    """The engine that speaks local voices: ``piper``, or a plug-in module's dotted
    name (see :mod:`daemon.engines.tts.registry`)."""
    default_voice: str = "en_US-joe-medium"
    device: str = field(default="auto", metadata=rules(check=device_ok))
    workers: int = field(default=1, metadata=rules(min=1, max=16))
    sentence_silence_ms: int = field(default=150, metadata=rules(min=0, max=5000))
    loaded_voices: int = field(default=4, metadata=rules(min=1, max=64))
    cache: TtsCacheConfig = field(default_factory=TtsCacheConfig)
    remote: list[RemoteTtsConfig] = field(default_factory=list)


@dataclass(frozen=True)
class RemoteLlmConfig:
    """An OpenAI-compatible chat server (vLLM, llama.cpp server, Ollama)."""

    base_url: str = field(default="", metadata=rules(check=base_url_ok))
    base_urls: list[str] = field(default_factory=list, metadata=rules(check=base_url_ok))
    api_key: str = ""
    model: str = ""
    timeout_s: float = field(default=60.0, metadata=rules(min=1.0, max=3600.0))
    retry_s: float = field(default=5.0, metadata=rules(min=0.1, max=3600.0))
    fallback: str = ""


@dataclass(frozen=True)
class LlmConfig:
    """Conversation model."""

    backend: Literal["local", "remote"] = "local"
    model: str = ""
    device: str = field(default="auto", metadata=rules(check=device_ok))
    gpu_layers: int = field(default=-1, metadata=rules(min=-1, max=1000))
    context_tokens: int = field(default=2048, metadata=rules(min=256, max=131072))
    threads: int = field(default=0, metadata=rules(min=0, max=256))
    system_prompt: str = (
        "You are Hearth, a helpful voice assistant in a home. Answer in one or two short "
        "sentences; your answers are spoken aloud, so use plain words, no lists or code."
    )
    temperature: float = field(default=0.0, metadata=rules(min=0.0, max=2.0))
    top_p: float = field(default=0.9, metadata=rules(min=0.0, max=1.0))
    repeat_penalty: float = field(default=1.1, metadata=rules(min=1.0, max=2.0))
    max_tokens: int = field(default=128, metadata=rules(min=1, max=8192))
    history_turns: int = field(default=8, metadata=rules(min=0, max=100))
    history_ttl_s: int = field(default=1800, metadata=rules(min=1, max=604800))
    max_conversations: int = field(default=256, metadata=rules(min=1, max=100000))
    prompt_cache: bool = True
    """Keep the evaluated system prompt (local models): in memory, and on disk under the
    cache folder's ``llm/`` so that a new process starts warm."""
    remote: RemoteLlmConfig = field(default_factory=RemoteLlmConfig)
