"""Typed configuration: one frozen dataclass tree from config.yaml, the add-on options
and the environment.

Validation errors name the file, the line and the key path, e.g.
``config.yaml:14 asr.models.tiny.beam_size: must be an integer between 1 and 10, got "five"``,
or the environment variable that set the value. The documented default lives in
``config.yaml`` at the project root; every field here has the same default so that
an empty file is a valid configuration.

The schema in config.yaml's order: ``listeners`` (http ... willow), ``house``
(homeassistant: where the household's names are read), ``engines`` (asr, vad, tts,
llm), ``root`` (voices ... log, and ``Config``), with the field checks in ``rules``.
Loading: ``reader`` (YAML text, line numbers), ``convert`` (raw values to the typed
tree), ``cross`` (checks across keys), ``layers`` (file < add-on options < environment),
``environ`` (``HEARTH_*`` variables), ``load`` (``parse_config``, ``load_config``);
``provenance`` lists where each setting came from, ``exposure`` what the listeners open
to the network.

This package is the foundation with ``daemon.errors``: it imports nothing else of
Hearth's, and every room may import it.
"""

from daemon.config.engines import (
    AsrConfig,
    AsrModelConfig,
    LlmConfig,
    RemoteAsrConfig,
    RemoteLlmConfig,
    RemoteTtsConfig,
    TtsCacheConfig,
    TtsConfig,
    VadConfig,
)
from daemon.config.exposure import exposure_warnings
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
from daemon.config.load import load_config, parse_config
from daemon.config.provenance import Setting, settings_of
from daemon.config.root import (
    Config,
    LimitsConfig,
    LogConfig,
    SpeakersConfig,
    VoicesConfig,
    WakeConfig,
    WakeModelConfig,
)
from daemon.config.rules import COMPUTE_TYPES, DEVICE_HELP
from daemon.errors import ConfigError

__all__ = [
    "COMPUTE_TYPES",
    "DEVICE_HELP",
    "AsrConfig",
    "AsrModelConfig",
    "AuthConfig",
    "Config",
    "ConfigError",
    "HomeAssistantConfig",
    "HttpConfig",
    "HttpsConfig",
    "LimitsConfig",
    "LlmConfig",
    "LogConfig",
    "MdnsConfig",
    "NetworkConfig",
    "MetricsConfig",
    "RemoteAsrConfig",
    "RemoteLlmConfig",
    "RemoteTtsConfig",
    "Setting",
    "SpeakersConfig",
    "TtsCacheConfig",
    "TtsConfig",
    "VadConfig",
    "VoicesConfig",
    "WakeConfig",
    "WakeModelConfig",
    "WebRtcConfig",
    "WillowConfig",
    "WyomingConfig",
    "exposure_warnings",
    "load_config",
    "parse_config",
    "settings_of",
]
