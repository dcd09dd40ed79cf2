"""The listener and network sections of config.yaml, in the file's order.

``http``, ``https``, ``webrtc``, ``wyoming``, ``network``, ``mdns``, ``auth``, ``metrics`` and
``willow``: where Hearth listens, how it is reached and what it lets in.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from daemon.config.rules import host_name_ok, network_ok, origin_ok, rules, uri_ok


@dataclass(frozen=True)
class HttpConfig:
    """HTTP API listener."""

    host: str = "0.0.0.0"
    port: int = field(default=19000, metadata=rules(min=1, max=65535))
    cors_origins: list[str] = field(default_factory=list, metadata=rules(check=origin_ok))
    allowed_hosts: list[str] = field(default_factory=list, metadata=rules(check=host_name_ok))
    header_timeout_s: float = field(default=10.0, metadata=rules(min=0.5, max=300.0))
    body_idle_timeout_s: float = field(default=5.0, metadata=rules(min=0.5, max=300.0))
    max_connections: int = field(default=512, metadata=rules(min=8, max=100_000))


@dataclass(frozen=True)
class HttpsConfig:
    """The HTTP API over TLS (browsers give microphone access on secure origins only)."""

    enabled: bool = True
    port: int = field(default=19001, metadata=rules(min=1, max=65535))
    cert_file: str = ""
    key_file: str = ""


@dataclass(frozen=True)
class WebRtcConfig:
    """WebRTC media sessions (browsers, the Home Assistant card)."""

    ice_servers: list[str] = field(default_factory=list)
    ice_username: str = ""
    ice_credential: str = ""
    addresses: list[str] = field(default_factory=list)
    port_min: int = field(default=10000, metadata=rules(min=1024, max=65535))
    port_max: int = field(default=10049, metadata=rules(min=1024, max=65535))
    max_sessions: int = field(default=16, metadata=rules(min=1, max=1000))
    idle_timeout_s: float = field(default=86400.0, metadata=rules(min=10.0, max=2_592_000.0))
    connect_timeout_s: float = field(default=10.0, metadata=rules(min=0.5, max=300.0))


@dataclass(frozen=True)
class WyomingConfig:
    """Wyoming protocol listener."""

    uri: str = field(default="tcp://0.0.0.0:10300", metadata=rules(check=uri_ok))
    max_connections: int = field(default=64, metadata=rules(min=1, max=10000))
    max_event_bytes: int = field(default=1_048_576, metadata=rules(min=65536, max=268_435_456))
    idle_timeout_s: float = field(default=300.0, metadata=rules(min=0.5, max=86400.0))
    end_of_turn: Literal["server", "client"] = "server"
    """server: with the turn model on, Hearth ends each transcribe request's turn itself
    (``requires_external_vad: false`` in ``info``) and sends the transcript at once;
    client: the client's own VAD ends it with ``audio-stop``."""


@dataclass(frozen=True)
class NetworkConfig:
    """Which machines Wyoming and the HTTP API answer (WebRTC's signaling included)."""

    lan: bool = True
    """false: only this machine (Home Assistant on the same host) and ``allow``; every
    other peer is refused (Wyoming: an ``error`` with code forbidden; HTTP: 403)."""
    allow: list[str] = field(default_factory=list, metadata=rules(check=network_ok))
    """Networks (CIDR) or addresses answered with ``lan: false`` too."""


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

    tts_sample_rate: int = field(default=16000, metadata=rules(min=8000, max=48000))
    save_audio: bool = False
    save_dir: str = ""
    speculative_silence_ms: int = field(default=90, metadata=rules(min=30, max=5000))
    padding_ms: int = field(default=180, metadata=rules(min=0, max=2000))
