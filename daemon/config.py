"""Typed configuration: one frozen dataclass tree loaded from YAML.

Validation errors name the file, the line and the key path, e.g.
``config.yaml:14 asr.models.tiny.beam_size: must be an integer >= 1, got "five"``.
The documented default lives in ``config.yaml`` at the project root; every field
here has the same default so that an empty file is a valid configuration.
"""

from __future__ import annotations

import dataclasses
import ipaddress
import os
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit

import yaml

from daemon.errors import ConfigError

DEVICE_HELP = "auto, cpu, cuda or cuda:N"
COMPUTE_TYPES = (
    "auto",
    "int8",
    "int8_float16",
    "int8_float32",
    "int8_bfloat16",
    "int16",
    "float16",
    "bfloat16",
    "float32",
)


def _c(**rules: Any) -> dict[str, Any]:
    """Field metadata holding validation rules (min, max, choices, check).

    On a list, the rules apply to each item.
    """
    return {"rules": rules}


def _device_ok(value: str) -> str | None:
    if value in ("auto", "cpu", "cuda"):
        return None
    if value.startswith("cuda:") and value[5:].isdigit():
        return None
    return f"must be {DEVICE_HELP}"


def _uri_ok(value: str) -> str | None:
    if value.startswith("unix://") and len(value) > len("unix://"):
        return None
    if value.startswith("tcp://"):
        host, sep, port = value[len("tcp://") :].rpartition(":")
        if sep and host and port.isdigit() and 1 <= int(port) <= 65535:
            return None
    return "must be tcp://HOST:PORT or unix://PATH"


def _origin_ok(value: str) -> str | None:
    like = "must be an origin like https://homeassistant.local:8123"
    if "*" in value:
        return f"{like} (no '*': list each origin)"
    parts = urlsplit(value)
    if parts.scheme.lower() not in ("http", "https"):
        return f"{like} (scheme http or https)"
    if parts.path or "?" in value or "#" in value:
        return f"{like} (no path, query, fragment or trailing '/')"
    if not parts.hostname or "@" in parts.netloc or any(c.isspace() for c in value):
        return f"{like} (scheme://host[:port])"
    try:
        port = parts.port
    except ValueError:
        port = 0
    if port == 0 or parts.netloc.endswith(":"):
        return f"{like} (port between 1 and 65535)"
    default = 443 if parts.scheme.lower() == "https" else 80
    if port == default:
        # Browsers leave the default port out of Origin, so this entry would never match.
        return f"{like} (leave out the default port {default})"
    return None


def _base_url_ok(value: str) -> str | None:
    if not value:
        return None
    parts = urlsplit(value)
    if parts.scheme.lower() not in ("http", "https") or not parts.hostname:
        return "must be a URL like http://gpu-server.lan:8000/v1"
    if "?" in value or "#" in value or "@" in parts.netloc:
        return "must be a URL like http://gpu-server.lan:8000/v1 (no query, fragment or user)"
    return None


def _host_name_ok(value: str) -> str | None:
    if value == "*":
        return None
    like = "must be a host name or address like hearth.lan or 192.168.1.10, or '*'"
    if not value or len(value) > 253 or any(c in value for c in "/@?#* \t"):
        return like
    if value.count(":") == 1 and not value.startswith("["):
        return f"{like} (no port)"
    return None


@dataclass(frozen=True)
class HttpConfig:
    """HTTP API listener."""

    host: str = "0.0.0.0"
    port: int = field(default=19000, metadata=_c(min=1, max=65535))
    cors_origins: list[str] = field(default_factory=list, metadata=_c(check=_origin_ok))
    allowed_hosts: list[str] = field(default_factory=list, metadata=_c(check=_host_name_ok))
    header_timeout_s: float = field(default=10.0, metadata=_c(min=0.5, max=300.0))
    body_idle_timeout_s: float = field(default=5.0, metadata=_c(min=0.5, max=300.0))
    max_connections: int = field(default=512, metadata=_c(min=8, max=100_000))


@dataclass(frozen=True)
class HttpsConfig:
    """The HTTP API over TLS (browsers give microphone access on secure origins only)."""

    enabled: bool = True
    port: int = field(default=19001, metadata=_c(min=1, max=65535))
    cert_file: str = ""
    key_file: str = ""


@dataclass(frozen=True)
class WebRtcConfig:
    """WebRTC media sessions (browsers, the Home Assistant card)."""

    ice_servers: list[str] = field(default_factory=list)
    ice_username: str = ""
    ice_credential: str = ""
    addresses: list[str] = field(default_factory=list)
    port_min: int = field(default=10000, metadata=_c(min=1024, max=65535))
    port_max: int = field(default=10049, metadata=_c(min=1024, max=65535))
    max_sessions: int = field(default=16, metadata=_c(min=1, max=1000))
    idle_timeout_s: float = field(default=86400.0, metadata=_c(min=10.0, max=2_592_000.0))
    connect_timeout_s: float = field(default=10.0, metadata=_c(min=0.5, max=300.0))


@dataclass(frozen=True)
class WyomingConfig:
    """Wyoming protocol listener."""

    uri: str = field(default="tcp://0.0.0.0:10300", metadata=_c(check=_uri_ok))
    max_connections: int = field(default=64, metadata=_c(min=1, max=10000))
    max_event_bytes: int = field(default=1_048_576, metadata=_c(min=65536, max=268_435_456))
    idle_timeout_s: float = field(default=300.0, metadata=_c(min=0.5, max=86400.0))
    end_of_turn: Literal["server", "client"] = "server"
    """server: with the turn model on, Hearth ends each transcribe request's turn itself
    (``requires_external_vad: false`` in ``info``) and sends the transcript at once;
    client: the client's own VAD ends it with ``audio-stop``."""


@dataclass(frozen=True)
class MdnsConfig:
    """Zeroconf/mDNS advertisement of the Wyoming and HTTP services."""

    enabled: bool = True
    name: str = ""
    interfaces: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class AuthConfig:
    """Optional shared key for the HTTP API."""

    api_key: str = ""


@dataclass(frozen=True)
class MetricsConfig:
    """Prometheus metrics at GET /metrics."""

    enabled: bool = True


@dataclass(frozen=True)
class WillowConfig:
    """Willow Inference Server compatibility."""

    tts_sample_rate: int = field(default=16000, metadata=_c(min=8000, max=48000))
    save_audio: bool = False
    save_dir: str = ""
    speculative_silence_ms: int = field(default=90, metadata=_c(min=30, max=5000))
    padding_ms: int = field(default=180, metadata=_c(min=0, max=2000))


@dataclass(frozen=True)
class RemoteAsrConfig:
    """An OpenAI-compatible transcription server (vLLM, speaches, another Hearth)."""

    base_url: str = field(default="", metadata=_c(check=_base_url_ok))
    base_urls: list[str] = field(default_factory=list, metadata=_c(check=_base_url_ok))
    model: str = ""
    api_key: str = ""
    timeout_s: float = field(default=30.0, metadata=_c(min=0.5, max=3600.0))
    retry_s: float = field(default=5.0, metadata=_c(min=0.1, max=3600.0))
    stream: bool = True


@dataclass(frozen=True)
class AsrModelConfig:
    """One faster-whisper model, local or on a remote server."""

    backend: Literal["local", "remote"] = "local"
    remote: RemoteAsrConfig = field(default_factory=RemoteAsrConfig)
    fallback: str = ""
    path: str = "tiny.en"
    device: str = field(default="auto", metadata=_c(check=_device_ok))
    compute_type: str = field(default="auto", metadata=_c(choices=COMPUTE_TYPES))
    beam_size: int = field(default=1, metadata=_c(min=1, max=10))
    language: str = ""
    cpu_threads: int = field(default=0, metadata=_c(min=0, max=256))
    window: Literal["auto", "30"] = "auto"
    """Decode window: cut to the utterance (auto, with a guard; telephone-band audio
    keeps 30 s) or always Whisper's 30 s (bench/RESULTS.md, "Decode window")."""


@dataclass(frozen=True)
class AsrConfig:
    """Speech-to-text engine."""

    default_model: str = "tiny.en"
    models: dict[str, AsrModelConfig] = field(default_factory=lambda: {"tiny.en": AsrModelConfig()})
    workers: int = field(default=1, metadata=_c(min=1, max=16))
    partial_interval_ms: int = field(default=600, metadata=_c(min=100, max=10000))
    partials: Literal["auto", "on", "off"] = "auto"
    allow_download: bool = True
    batch_window_ms: int = field(default=5, metadata=_c(min=0, max=1000))
    max_batch: int = field(default=0, metadata=_c(min=0, max=64))


@dataclass(frozen=True)
class VadConfig:
    """Voice activity detection and endpointing."""

    engine: Literal["webrtc", "silero"] = "silero"
    threshold: float = field(default=0.5, metadata=_c(min=0.0, max=1.0))
    aggressiveness: int = field(default=2, metadata=_c(min=0, max=3))
    speech_start_ms: int = field(default=90, metadata=_c(min=0, max=2000))
    speculative_silence_ms: int = field(default=240, metadata=_c(min=30, max=5000))
    push_to_talk_silence_ms: int = field(default=90, metadata=_c(min=30, max=5000))
    """Push-to-talk: silence after speech at which the speculative decode starts."""
    trailing_silence_ms: int = field(default=700, metadata=_c(min=60, max=10000))
    padding_ms: int = field(default=180, metadata=_c(min=0, max=2000))
    turn: Literal["smart-turn", "off"] = "smart-turn"
    """End of turn by a turn model (Smart Turn v3.2) instead of a fixed silence."""
    turn_model: str = ""
    """An ONNX turn model file ("" : the embedded Smart Turn v3.2 CPU model)."""
    turn_threshold: float = field(default=0.85, metadata=_c(min=0.0, max=1.0))
    """Probability of "finished" that ends the turn (bench/RESULTS.md, "Turn-taking")."""
    turn_check_ms: int = field(default=200, metadata=_c(min=30, max=5000))
    """Silence after speech before the turn model is first asked."""
    turn_recheck_ms: int = field(default=0, metadata=_c(min=0, max=5000))
    """Further silence between later checks while the model says "incomplete" (0: none)."""
    max_pause_ms: int = field(default=1600, metadata=_c(min=60, max=10000))
    """With the turn model: the longest pause inside a turn (the turn ends here)."""
    turn_text: bool = True
    """The speculative transcript's last words join the turn model's answer: one that
    ends in "for", "and", "the" or "um" does not end the turn."""
    turn_text_threshold: float = field(default=0.5, metadata=_c(min=0.0, max=1.0))
    """With ``turn_text``: P(complete) that ends the turn when the words could end it."""
    max_utterance_ms: int = field(default=15000, metadata=_c(min=1000, max=600_000))
    """When Hearth ends the turn (Wyoming): the longest utterance, from its first word."""
    no_speech_ms: int = field(default=8000, metadata=_c(min=500, max=600_000))
    """When Hearth ends the turn (Wyoming): audio without speech after which the request
    ends with an empty transcript."""


@dataclass(frozen=True)
class TtsCacheConfig:
    """Disk cache of synthesized audio."""

    enabled: bool = True
    dir: str = ""
    max_mb: int = field(default=256, metadata=_c(min=1, max=1_000_000))


def _remote_voice_ok(value: str) -> str | None:
    if (
        not value
        or len(value) > 128
        or value.startswith(".")
        or any(c.isspace() or c in "/\\?#%" for c in value)
    ):
        return "must be a voice name (1-128 characters, no spaces, '/', '?', '#' or '%')"
    return None


@dataclass(frozen=True)
class RemoteTtsConfig:
    """Voices served by an OpenAI-compatible speech server (Kokoro-FastAPI, speaches,
    openedai-speech, another Hearth): one model, one or more base URLs."""

    name: str = field(default="", metadata=_c(check=_remote_voice_ok))
    """Names the group in logs, /metrics and ``hearth check``."""
    base_url: str = field(default="", metadata=_c(check=_base_url_ok))
    base_urls: list[str] = field(default_factory=list, metadata=_c(check=_base_url_ok))
    model: str = "tts-1"
    voices: list[str] = field(default_factory=list, metadata=_c(check=_remote_voice_ok))
    """The server's voice names; each is offered here as ``prefix`` + its name."""
    prefix: str = ""
    language: str = "en"
    api_key: str = ""
    response_format: Literal["wav", "pcm"] = "wav"
    sample_rate: int = field(default=24000, metadata=_c(min=8000, max=48000))
    """The rate the server speaks at (``pcm`` answers carry none; WAV ones are resampled)."""
    timeout_s: float = field(default=30.0, metadata=_c(min=0.5, max=3600.0))
    retry_s: float = field(default=5.0, metadata=_c(min=0.1, max=3600.0))
    fallback: str = ""
    """A local voice that speaks when every endpoint fails ("": a clear error instead)."""

    def local_names(self) -> dict[str, str]:
        """Each voice's name here (``prefix`` + the server's name) -> the server's name."""
        return {f"{self.prefix}{voice}": voice for voice in self.voices}


@dataclass(frozen=True)
class TtsConfig:
    """Text-to-speech engine."""

    default_voice: str = "en_US-joe-medium"
    device: str = field(default="auto", metadata=_c(check=_device_ok))
    workers: int = field(default=1, metadata=_c(min=1, max=16))
    sentence_silence_ms: int = field(default=150, metadata=_c(min=0, max=5000))
    loaded_voices: int = field(default=4, metadata=_c(min=1, max=64))
    cache: TtsCacheConfig = field(default_factory=TtsCacheConfig)
    remote: list[RemoteTtsConfig] = field(default_factory=list)


@dataclass(frozen=True)
class RemoteLlmConfig:
    """An OpenAI-compatible chat server (vLLM, llama.cpp server, Ollama)."""

    base_url: str = field(default="", metadata=_c(check=_base_url_ok))
    base_urls: list[str] = field(default_factory=list, metadata=_c(check=_base_url_ok))
    api_key: str = ""
    model: str = ""
    timeout_s: float = field(default=60.0, metadata=_c(min=1.0, max=3600.0))
    retry_s: float = field(default=5.0, metadata=_c(min=0.1, max=3600.0))
    fallback: str = ""


@dataclass(frozen=True)
class LlmConfig:
    """Conversation model."""

    backend: Literal["local", "remote"] = "local"
    model: str = ""
    device: str = field(default="auto", metadata=_c(check=_device_ok))
    gpu_layers: int = field(default=-1, metadata=_c(min=-1, max=1000))
    context_tokens: int = field(default=2048, metadata=_c(min=256, max=131072))
    threads: int = field(default=0, metadata=_c(min=0, max=256))
    system_prompt: str = (
        "You are Hearth, a helpful voice assistant in a home. Answer in one or two short "
        "sentences; your answers are spoken aloud, so use plain words, no lists or code."
    )
    temperature: float = field(default=0.0, metadata=_c(min=0.0, max=2.0))
    top_p: float = field(default=0.9, metadata=_c(min=0.0, max=1.0))
    repeat_penalty: float = field(default=1.1, metadata=_c(min=1.0, max=2.0))
    max_tokens: int = field(default=128, metadata=_c(min=1, max=8192))
    history_turns: int = field(default=8, metadata=_c(min=0, max=100))
    history_ttl_s: int = field(default=1800, metadata=_c(min=1, max=604800))
    max_conversations: int = field(default=256, metadata=_c(min=1, max=100000))
    prompt_cache: bool = True
    """Keep the evaluated system prompt (local models): in memory, and on disk under the
    cache folder's ``llm/`` so that a new process starts warm."""
    remote: RemoteLlmConfig = field(default_factory=RemoteLlmConfig)


@dataclass(frozen=True)
class VoicesConfig:
    """The voice store, enrollment of a person's own voice, and training."""

    dir: str = ""
    max_upload_mb: int = field(default=200, metadata=_c(min=1, max=4096))
    enroll_dir: str = ""
    prompts_file: str = ""
    target_minutes: float = field(default=30.0, metadata=_c(min=0.1, max=1000.0))
    min_minutes: float = field(default=10.0, metadata=_c(min=0.0, max=1000.0))
    max_wer: float = field(default=0.25, metadata=_c(min=0.0, max=1.0))
    min_snr_db: float = field(default=20.0, metadata=_c(min=0.0, max=100.0))
    min_level_dbfs: float = field(default=-35.0, metadata=_c(min=-90.0, max=0.0))
    max_clipped_percent: float = field(default=0.1, metadata=_c(min=0.0, max=100.0))
    max_take_s: float = field(default=20.0, metadata=_c(min=1.0, max=120.0))
    train_dir: str = ""
    base_checkpoint: str = ""
    espeak_voice: str = "en-us"
    train_device: str = field(default="auto", metadata=_c(check=_device_ok))
    train_epochs: int = field(default=1000, metadata=_c(min=1, max=1_000_000))
    train_max_steps: int = field(default=0, metadata=_c(min=0, max=100_000_000))
    train_batch_size: int = field(default=16, metadata=_c(min=1, max=1024))
    train_threads: int = field(default=0, metadata=_c(min=0, max=256))


@dataclass(frozen=True)
class WakeModelConfig:
    """One wake model (0: the model's own cutoff and window)."""

    library: Literal["auto", "micro", "openwakeword"] = "auto"
    probability_cutoff: float = field(default=0.0, metadata=_c(min=0.0, max=1.0))
    sliding_window: int = field(default=0, metadata=_c(min=0, max=100))


def _default_wake_models() -> dict[str, WakeModelConfig]:
    names = ("okay_nabu", "hey_jarvis", "hey_mycroft", "alexa", "hey_rhasspy")
    return {name: WakeModelConfig() for name in names}


@dataclass(frozen=True)
class WakeConfig:
    """Wake-word detection (Wyoming wake service, WebRTC wake mode)."""

    enabled: bool = True
    models: dict[str, WakeModelConfig] = field(default_factory=_default_wake_models)
    refractory_s: float = field(default=2.0, metadata=_c(min=0.0, max=60.0))
    dir: str = ""
    workers: int = field(default=1, metadata=_c(min=1, max=16))
    max_streams: int = field(default=64, metadata=_c(min=1, max=10000))
    command_timeout_s: float = field(default=8.0, metadata=_c(min=1.0, max=120.0))


@dataclass(frozen=True)
class LimitsConfig:
    """Bounds on everything that comes from outside."""

    max_audio_s: float = field(default=60.0, metadata=_c(min=1.0, max=3600.0))
    max_file_audio_s: float = field(default=3600.0, metadata=_c(min=1.0, max=86400.0))
    max_upload_mb: int = field(default=50, metadata=_c(min=1, max=4096))
    max_text_chars: int = field(default=2000, metadata=_c(min=1, max=1_000_000))
    max_prompt_chars: int = field(default=4000, metadata=_c(min=1, max=1_000_000))
    max_sample_rate: int = field(default=192000, metadata=_c(min=8000, max=768000))
    max_channels: int = field(default=8, metadata=_c(min=1, max=64))
    max_queue: int = field(default=32, metadata=_c(min=1, max=10000))
    request_timeout_s: float = field(default=120.0, metadata=_c(min=1.0, max=3600.0))
    shutdown_grace_s: float = field(default=10.0, metadata=_c(min=0.0, max=600.0))


@dataclass(frozen=True)
class LogConfig:
    """Logging."""

    level: Literal["debug", "info", "warning", "error"] = "info"


@dataclass(frozen=True)
class SpeakersConfig:
    """Who is speaking: the people Hearth knows by voice (kept apart from voices)."""

    enabled: bool = True
    """Load the speaker encoder; off: nothing loads, and voice_auth is refused."""
    model: str = ""
    """A GE2E encoder file ("" : the embedded Resemblyzer weights)."""
    threshold: float = field(default=0.8, metadata=_c(min=0.0, max=1.0))
    """Cosine similarity at or above which an utterance is an enrolled speaker's
    (bench/RESULTS.md, "Speaker verification")."""
    max_takes: int = field(default=20, metadata=_c(min=1, max=200))
    """Recordings one enrollment may use."""
    max_speakers: int = field(default=50, metadata=_c(min=1, max=10000))
    require: Literal["off", "known"] = "off"
    """The household gate: ``known`` makes hands-free and wake conversations ignore
    utterances whose voice matches no enrolled speaker (closed when none is enrolled)."""


@dataclass(frozen=True)
class Config:
    """The whole daemon configuration."""

    state_dir: str = ""
    models_dir: str = ""
    http: HttpConfig = field(default_factory=HttpConfig)
    https: HttpsConfig = field(default_factory=HttpsConfig)
    webrtc: WebRtcConfig = field(default_factory=WebRtcConfig)
    wyoming: WyomingConfig = field(default_factory=WyomingConfig)
    mdns: MdnsConfig = field(default_factory=MdnsConfig)
    auth: AuthConfig = field(default_factory=AuthConfig)
    metrics: MetricsConfig = field(default_factory=MetricsConfig)
    willow: WillowConfig = field(default_factory=WillowConfig)
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


def _loopback(host: str) -> bool:
    """Whether ``host`` (a bind address or name) only reaches this machine."""
    host = host.strip("[]").lower()
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def exposure_warnings(config: Config) -> list[str]:
    """What the listeners expose to the network without a key (for ``hearth check``).

    Empty when nothing is open to other machines without authentication.
    """
    warnings = []
    if not _loopback(config.http.host) and not config.auth.api_key:
        warnings.append(
            f"the HTTP API listens on {config.http.host} with no auth.api_key: anyone on the "
            "network can use it (speech, chat, voices, enrollment); set auth.api_key, or "
            "http.host: 127.0.0.1 behind a reverse proxy"
        )
    uri = config.wyoming.uri
    if uri.startswith("tcp://"):
        host = uri[len("tcp://") :].rpartition(":")[0]
        if not _loopback(host):
            warnings.append(
                f"Wyoming listens on {uri} and has no authentication (auth.api_key does not "
                "cover it): bind wyoming.uri to an address only Home Assistant reaches, or "
                f"allow only Home Assistant's address to port {uri.rpartition(':')[2]} in a "
                "firewall"
            )
    return warnings


# --------------------------------------------------------------------------- loading


def _line_map(text: str) -> dict[tuple[str, ...], int]:
    """Map each key path to its 1-based line; reject duplicate keys."""
    lines: dict[tuple[str, ...], int] = {}

    seen_nodes: set[int] = set()

    def walk(node: yaml.Node, path: tuple[str, ...]) -> None:
        if id(node) in seen_nodes:  # an alias: its keys were mapped where it was defined
            return
        seen_nodes.add(id(node))
        if isinstance(node, yaml.MappingNode):
            seen: set[str] = set()
            for key_node, value_node in node.value:
                key = str(key_node.value)
                if key_node.tag.endswith(":null"):
                    key = "None"  # what yaml.safe_load makes of a null key
                sub = (*path, key)
                if key in seen:
                    raise _Invalid(sub, "duplicate key", key_node.start_mark.line + 1)
                seen.add(key)
                lines[sub] = key_node.start_mark.line + 1
                walk(value_node, sub)
        elif isinstance(node, yaml.SequenceNode):
            for i, item in enumerate(node.value):
                lines[(*path, str(i))] = item.start_mark.line + 1
                walk(item, (*path, str(i)))

    root = yaml.compose(text, Loader=yaml.SafeLoader)
    if root is not None:
        walk(root, ())
    return lines


class _Invalid(Exception):
    def __init__(self, path: tuple[str, ...], problem: str, line: int | None = None) -> None:
        super().__init__(problem)
        self.path = path
        self.problem = problem
        self.line = line


def _describe(value: Any) -> str:
    if isinstance(value, str):
        return f'"{value}"'
    if value is None:
        return "nothing"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (dict, list)):
        return "a mapping" if isinstance(value, dict) else "a list"
    return repr(value)


def _check_rules(value: Any, rules: dict[str, Any], kind: str) -> None:
    lo, hi = rules.get("min"), rules.get("max")
    if lo is not None and hi is not None and not lo <= value <= hi:
        raise _Invalid((), f"must be {kind} between {lo} and {hi}, got {_describe(value)}")
    if lo is not None and value < lo:
        raise _Invalid((), f"must be {kind} >= {lo}, got {_describe(value)}")
    if hi is not None and value > hi:
        raise _Invalid((), f"must be {kind} <= {hi}, got {_describe(value)}")
    choices = rules.get("choices")
    if choices is not None and value not in choices:
        raise _Invalid((), f"must be one of {', '.join(choices)}, got {_describe(value)}")
    check = rules.get("check")
    if check is not None:
        problem = check(value)
        if problem:
            raise _Invalid((), f"{problem}, got {_describe(value)}")


def _convert(tp: Any, value: Any, rules: dict[str, Any], path: tuple[str, ...]) -> Any:
    """Validate ``value`` against the annotation ``tp``; return the typed value."""
    try:
        return _convert_inner(tp, value, rules, path)
    except _Invalid as exc:
        if not exc.path:
            exc.path = path
        raise


def _convert_inner(tp: Any, value: Any, rules: dict[str, Any], path: tuple[str, ...]) -> Any:
    origin = typing.get_origin(tp)
    if dataclasses.is_dataclass(tp):
        return _build(tp, value, path)
    if origin is dict:
        if not isinstance(value, dict):
            raise _Invalid(path, f"must be a mapping, got {_describe(value)}")
        _, val_tp = typing.get_args(tp)
        if not value:
            raise _Invalid(path, "must name at least one entry")
        return {str(k): _convert(val_tp, v, {}, (*path, str(k))) for k, v in value.items()}
    if origin is list:
        if not isinstance(value, list):
            raise _Invalid(path, f"must be a list, got {_describe(value)}")
        (item_tp,) = typing.get_args(tp)
        return [_convert(item_tp, v, rules, (*path, str(i))) for i, v in enumerate(value)]
    if origin is Literal:
        choices = typing.get_args(tp)
        if isinstance(value, bool):  # YAML reads a bare on/off as a boolean
            word = "on" if value else "off"
            value = word if word in choices else value
        elif isinstance(value, int | float) and str(value) in choices:
            value = str(value)  # a bare number among words (window: 30)
        if value not in choices:
            raise _Invalid(
                path, f"must be one of {', '.join(map(str, choices))}, got {_describe(value)}"
            )
        return value
    if tp is bool:
        if not isinstance(value, bool):
            raise _Invalid(path, f"must be true or false, got {_describe(value)}")
        return value
    if tp is int:
        if isinstance(value, bool) or not isinstance(value, int):
            kind = "an integer"
            lo = rules.get("min")
            suffix = f" >= {lo}" if lo is not None and rules.get("max") is None else ""
            if lo is not None and rules.get("max") is not None:
                suffix = f" between {lo} and {rules['max']}"
            raise _Invalid(path, f"must be {kind}{suffix}, got {_describe(value)}")
        _check_rules(value, rules, "an integer")
        return value
    if tp is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise _Invalid(path, f"must be a number, got {_describe(value)}")
        _check_rules(float(value), rules, "a number")
        return float(value)
    if tp is str:
        if not isinstance(value, str):
            raise _Invalid(path, f"must be a string, got {_describe(value)}")
        _check_rules(value, rules, "a string")
        return value
    raise TypeError(f"unsupported config type {tp!r}")  # a bug in this module


def _build(cls: Any, data: Any, path: tuple[str, ...]) -> Any:
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise _Invalid(path, f"must be a mapping, got {_describe(data)}")
    hints = typing.get_type_hints(cls)
    fields = {f.name: f for f in dataclasses.fields(cls) if not f.metadata.get("internal")}
    for key in data:
        if key not in fields:
            known = ", ".join(sorted(fields))
            raise _Invalid((*path, str(key)), f"unknown key (known keys: {known})")
    kwargs = {}
    for name, f in fields.items():
        if name in data:
            kwargs[name] = _convert(
                hints[name], data[name], f.metadata.get("rules", {}), (*path, name)
            )
    return cls(**kwargs)


def _cross_checks(config: Config) -> None:
    if config.asr.default_model not in config.asr.models:
        raise _Invalid(
            ("asr", "default_model"),
            f"must name one of asr.models ({', '.join(config.asr.models)}), "
            f'got "{config.asr.default_model}"',
        )
    if config.vad.speculative_silence_ms > config.vad.trailing_silence_ms:
        raise _Invalid(
            ("vad", "speculative_silence_ms"),
            f"must not exceed vad.trailing_silence_ms ({config.vad.trailing_silence_ms}), "
            f"got {config.vad.speculative_silence_ms}",
        )
    if config.willow.speculative_silence_ms > config.vad.trailing_silence_ms:
        raise _Invalid(
            ("willow", "speculative_silence_ms"),
            f"must not exceed vad.trailing_silence_ms ({config.vad.trailing_silence_ms}), "
            f"got {config.willow.speculative_silence_ms}",
        )
    if config.webrtc.port_min > config.webrtc.port_max:
        raise _Invalid(
            ("webrtc", "port_min"),
            f"must not exceed webrtc.port_max ({config.webrtc.port_max}), "
            f"got {config.webrtc.port_min}",
        )
    if bool(config.https.cert_file) != bool(config.https.key_file):
        raise _Invalid(("https", "cert_file"), "cert_file and key_file must be set together")
    if config.llm.backend == "remote" and not (
        config.llm.remote.base_url or config.llm.remote.base_urls
    ):
        raise _Invalid(("llm", "remote", "base_url"), "must be set when llm.backend is remote")
    _remote_checks(config)
    _tts_remote_checks(config)


def _tts_remote_checks(config: Config) -> None:
    """Remote voice groups name their servers and voices; no voice is named twice."""
    groups: set[str] = set()
    names: set[str] = set()
    for i, r in enumerate(config.tts.remote):
        path = ("tts", "remote", str(i))
        if not r.name or r.name in groups:
            raise _Invalid((*path, "name"), f'must be set and unique, got "{r.name}"')
        groups.add(r.name)
        if not (r.base_url or r.base_urls):
            raise _Invalid((*path, "base_url"), "must be set")
        if not r.voices:
            raise _Invalid((*path, "voices"), "must name at least one voice the server offers")
        for local in r.local_names():
            if _remote_voice_ok(local) or local in names:
                raise _Invalid((*path, "voices"), f'"{local}" is not a usable, unique voice name')
            names.add(local)
    for i, r in enumerate(config.tts.remote):
        if r.fallback in names:
            raise _Invalid(
                ("tts", "remote", str(i), "fallback"),
                f'must name a local voice, not a remote one, got "{r.fallback}"',
            )


def _remote_checks(config: Config) -> None:
    """Remote ASR models name their servers and a fallback that exists."""
    local = [n for n, m in config.asr.models.items() if m.backend == "local"]
    for name, m in config.asr.models.items():
        path = ("asr", "models", name)
        if m.backend == "remote" and not (m.remote.base_url or m.remote.base_urls):
            raise _Invalid((*path, "remote", "base_url"), "must be set when backend is remote")
        if m.fallback and (m.backend != "remote" or m.fallback not in local):
            raise _Invalid(
                (*path, "fallback"),
                f"must name a local model of asr.models ({', '.join(local) or 'none'}) "
                f'on a remote model, got "{m.fallback}"',
            )


def parse_config(text: str, source: str = "<string>") -> Config:
    """Parse and validate YAML text; raise ConfigError naming file, line and key."""
    try:
        lines = _line_map(text)
        data = yaml.safe_load(text)
        config = _build(Config, data, ())
        _cross_checks(config)
    except _Invalid as exc:
        key = ".".join(exc.path) or "(top level)"
        line = exc.line if exc.path else (exc.line or 1)
        probe = exc.path
        while line is None and probe:
            line = lines.get(probe)
            probe = probe[:-1]
        where = f"{source}:{line}" if line else source
        raise ConfigError(f"{where} {key}: {exc.problem}") from None
    except yaml.reader.ReaderError as exc:
        line = text.count("\n", 0, exc.position) + 1
        raise ConfigError(f"{source}:{line} invalid YAML: {exc.reason}") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{source}:{mark.line + 1}" if mark else source
        problem = getattr(exc, "problem", None) or str(exc)
        raise ConfigError(f"{where} invalid YAML: {problem}") from None
    except RecursionError:
        raise ConfigError(f"{source}: invalid YAML: nested or recursive too deeply") from None
    return dataclasses.replace(config, source=source)


def load_config(path: str | os.PathLike[str] | None) -> Config:
    """Load the config at ``path`` (or $HEARTH_CONFIG); None and no env means defaults."""
    if path is None:
        path = os.environ.get("HEARTH_CONFIG") or None
    if path is None:
        return Config()
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read config: {exc.strerror}") from None
    except UnicodeDecodeError:
        raise ConfigError(f"{path}: config is not UTF-8 text") from None
    return parse_config(text, str(path))
