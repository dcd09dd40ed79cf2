"""The last sections of config.yaml (``hub``, ``voices``, ``speakers``, ``wake``, ``limits``,
``log``) and the top-level ``Config`` that holds every section, with its derived paths."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from daemon.config.engines import AsrConfig, LlmConfig, TtsConfig, VadConfig
from daemon.config.house import HomeAssistantConfig
from daemon.config.listeners import (
    AuthConfig,
    HttpConfig,
    HttpsConfig,
    MdnsConfig,
    MetricsConfig,
    NetworkConfig,
    WebRtcConfig,
    WillowConfig,
    WyomingConfig,
)
from daemon.config.rules import device_ok, rules


@dataclass(frozen=True)
class HubConfig:
    """Where models and voices asked for by name are fetched from (a Hugging Face hub)."""

    url: str = ""
    """The hub; empty: $HF_ENDPOINT, else https://huggingface.co."""
    voices: bool = True
    """Fetch a Piper voice asked for by its catalogue name."""
    timeout_s: float = field(default=30.0, metadata=rules(min=1.0, max=600.0))
    deadline_s: float = field(default=21600.0, metadata=rules(min=10.0, max=604800.0))
    max_mb: int = field(default=8000, metadata=rules(min=1, max=1_000_000))
    tries: int = field(default=5, metadata=rules(min=1, max=100))


@dataclass(frozen=True)
class VoicesConfig:
    """The voice store, enrollment of a person's own voice, and training."""

    dir: str = ""
    max_upload_mb: int = field(default=200, metadata=rules(min=1, max=4096))
    enroll_dir: str = ""
    prompts_file: str = ""
    target_minutes: float = field(default=30.0, metadata=rules(min=0.1, max=1000.0))
    min_minutes: float = field(default=10.0, metadata=rules(min=0.0, max=1000.0))
    max_wer: float = field(default=0.25, metadata=rules(min=0.0, max=1.0))
    min_snr_db: float = field(default=20.0, metadata=rules(min=0.0, max=100.0))
    min_level_dbfs: float = field(default=-35.0, metadata=rules(min=-90.0, max=0.0))
    max_clipped_percent: float = field(default=0.1, metadata=rules(min=0.0, max=100.0))
    max_take_s: float = field(default=20.0, metadata=rules(min=1.0, max=120.0))
    train_dir: str = ""
    base_checkpoint: str = ""
    espeak_voice: str = "en-us"
    train_device: str = field(default="auto", metadata=rules(check=device_ok))
    train_epochs: int = field(default=1000, metadata=rules(min=1, max=1_000_000))
    train_max_steps: int = field(default=0, metadata=rules(min=0, max=100_000_000))
    train_batch_size: int = field(default=16, metadata=rules(min=1, max=1024))
    train_threads: int = field(default=0, metadata=rules(min=0, max=256))


@dataclass(frozen=True)
class SpeakersConfig:
    """Who is speaking: the people Hearth knows by voice (kept apart from voices)."""

    enabled: bool = True
    """Load the speaker encoder; off: nothing loads, and voice_auth is refused."""
    model: str = ""
    """A GE2E encoder file ("" : the embedded Resemblyzer weights)."""
    threshold: float = field(default=0.8, metadata=rules(min=0.0, max=1.0))
    """Cosine similarity at or above which an utterance is an enrolled speaker's
    (bench/RESULTS.md, "Speaker verification")."""
    max_takes: int = field(default=20, metadata=rules(min=1, max=200))
    """Recordings one enrollment may use."""
    max_speakers: int = field(default=50, metadata=rules(min=1, max=10000))
    require: Literal["off", "known"] = "off"
    """The household gate: ``known`` makes hands-free and wake conversations ignore
    utterances whose voice matches no enrolled speaker (closed when none is enrolled)."""


@dataclass(frozen=True)
class WakeModelConfig:
    """One wake model (0: the model's own cutoff and window)."""

    library: Literal["auto", "micro", "openwakeword"] = "auto"
    probability_cutoff: float = field(default=0.0, metadata=rules(min=0.0, max=1.0))
    sliding_window: int = field(default=0, metadata=rules(min=0, max=100))


def _default_wake_models() -> dict[str, WakeModelConfig]:
    names = ("okay_nabu", "hey_jarvis", "hey_mycroft", "alexa", "hey_rhasspy")
    return {name: WakeModelConfig() for name in names}


@dataclass(frozen=True)
class WakeConfig:
    """Wake-word detection (Wyoming wake service, WebRTC wake mode)."""

    enabled: bool = True
    models: dict[str, WakeModelConfig] = field(default_factory=_default_wake_models)
    refractory_s: float = field(default=2.0, metadata=rules(min=0.0, max=60.0))
    dir: str = ""
    workers: int = field(default=1, metadata=rules(min=1, max=16))
    max_streams: int = field(default=64, metadata=rules(min=1, max=10000))
    command_timeout_s: float = field(default=8.0, metadata=rules(min=1.0, max=120.0))


@dataclass(frozen=True)
class LimitsConfig:
    """Bounds on everything that comes from outside."""

    max_audio_s: float = field(default=60.0, metadata=rules(min=1.0, max=3600.0))
    max_file_audio_s: float = field(default=3600.0, metadata=rules(min=1.0, max=86400.0))
    max_upload_mb: int = field(default=50, metadata=rules(min=1, max=4096))
    max_text_chars: int = field(default=2000, metadata=rules(min=1, max=1_000_000))
    max_prompt_chars: int = field(default=4000, metadata=rules(min=1, max=1_000_000))
    max_sample_rate: int = field(default=192000, metadata=rules(min=8000, max=768000))
    max_channels: int = field(default=8, metadata=rules(min=1, max=64))
    max_queue: int = field(default=32, metadata=rules(min=1, max=10000))
    request_timeout_s: float = field(default=120.0, metadata=rules(min=1.0, max=3600.0))
    shutdown_grace_s: float = field(default=10.0, metadata=rules(min=0.0, max=600.0))


@dataclass(frozen=True)
class LogConfig:
    """Logging."""

    level: Literal["debug", "info", "warning", "error"] = "info"


@dataclass(frozen=True)
class Config:
    """The whole daemon configuration."""

    state_dir: str = ""
    models_dir: str = ""
    hub: HubConfig = field(default_factory=HubConfig)
    http: HttpConfig = field(default_factory=HttpConfig)
    https: HttpsConfig = field(default_factory=HttpsConfig)
    webrtc: WebRtcConfig = field(default_factory=WebRtcConfig)
    wyoming: WyomingConfig = field(default_factory=WyomingConfig)
    network: NetworkConfig = field(default_factory=NetworkConfig)
    mdns: MdnsConfig = field(default_factory=MdnsConfig)
    auth: AuthConfig = field(default_factory=AuthConfig)
    metrics: MetricsConfig = field(default_factory=MetricsConfig)
    willow: WillowConfig = field(default_factory=WillowConfig)
    homeassistant: HomeAssistantConfig = field(default_factory=HomeAssistantConfig)
    asr: AsrConfig = field(default_factory=AsrConfig)
    vad: VadConfig = field(default_factory=VadConfig)
    tts: TtsConfig = field(default_factory=TtsConfig)
    llm: LlmConfig = field(default_factory=LlmConfig)
    voices: VoicesConfig = field(default_factory=VoicesConfig)
    speakers: SpeakersConfig = field(default_factory=SpeakersConfig)
    wake: WakeConfig = field(default_factory=WakeConfig)
    limits: LimitsConfig = field(default_factory=LimitsConfig)
    log: LogConfig = field(default_factory=LogConfig)
    source: str = field(default="<defaults>", compare=False, metadata={"internal": True})
    """The config file read ("<defaults>": none); not a key of the file."""
    origins: Mapping[tuple[str, ...], str] = field(
        default_factory=dict, compare=False, repr=False, metadata={"internal": True}
    )
    """Where each key set by a layer came from, by key path: ``config.yaml:14``,
    ``env HEARTH_LLM__BACKEND`` or the add-on options; the defaults have no entry."""
    addon: Mapping[tuple[str, ...], object] = field(
        default_factory=dict, compare=False, repr=False, metadata={"internal": True}
    )
    """The add-on options' keys this configuration was loaded with: a reload (SIGHUP)
    applies them again over the re-read file."""
    addon_source: str = field(
        default="add-on options", compare=False, repr=False, metadata={"internal": True}
    )

    @property
    def state_path(self) -> Path:
        """The state directory: config, else $STATE_DIRECTORY (systemd), else XDG."""
        if self.state_dir:
            return Path(os.path.expanduser(self.state_dir))
        if os.environ.get("STATE_DIRECTORY"):
            return Path(os.environ["STATE_DIRECTORY"].split(":")[0])
        xdg = os.environ.get("XDG_STATE_HOME") or os.path.expanduser("~/.local/state")
        return Path(xdg) / "hearth"

    @property
    def models_path(self) -> Path:
        """Where downloaded models are stored."""
        return self._dir(self.models_dir, "models")

    @property
    def voices_path(self) -> Path:
        """Where user voices live."""
        return self._dir(self.voices.dir, "voices")

    @property
    def enroll_path(self) -> Path:
        """Where enrollment recordings (datasets) are kept."""
        return self._dir(self.voices.enroll_dir, "enroll")

    @property
    def training_path(self) -> Path:
        """Where training jobs keep checkpoints and progress."""
        return self._dir(self.voices.train_dir, "training")

    def _dir(self, configured: str, default: str) -> Path:
        """``configured`` (``~`` expanded) if set, else ``default`` in the state directory."""
        return Path(os.path.expanduser(configured)) if configured else self.state_path / default

    @property
    def wake_path(self) -> Path:
        """Where custom wake models (.json + .tflite) are looked for."""
        return self._dir(self.wake.dir, "wake")

    @property
    def tls_path(self) -> Path:
        """Where the generated self-signed certificate lives."""
        return self.state_path / "tls"

    @property
    def cache_path(self) -> Path:
        """The cache folder: $CACHE_DIRECTORY (systemd), else the state folder's cache/."""
        if os.environ.get("CACHE_DIRECTORY"):
            return Path(os.environ["CACHE_DIRECTORY"].split(":")[0])
        return self.state_path / "cache"

    @property
    def tts_cache_path(self) -> Path:
        """Where cached TTS audio lives."""
        if self.tts.cache.dir:
            return Path(os.path.expanduser(self.tts.cache.dir))
        return self.cache_path / "tts"

    @property
    def llm_cache_path(self) -> Path:
        """Where a local model's saved system-prompt states live."""
        return self.cache_path / "llm"
