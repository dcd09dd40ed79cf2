"""The Home Assistant add-on's options as configuration keys.

The Supervisor writes the options a household chose in the add-on's page (its schema is
in ``addon/config.yaml``) to ``/data/options.json`` before each start. They are one
layer of the configuration, above the config file and below ``HEARTH_*`` variables
(:func:`daemon.config.load.load_config`), and ``hearth check`` names them as their
origin. A few keys are the add-on's own whatever the options say (``ADDON_SETTINGS``).
Home Assistant's names need no option beyond ``home_assistant_names``: the add-on reaches
its websocket API through the Supervisor (``homeassistant_api: true``) with its own token.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from daemon.errors import ConfigError

KeyPath = tuple[str, ...]
Settings = dict[KeyPath, object]


@dataclass(frozen=True)
class AddEntry:
    """An option that adds one entry to a mapping-valued key: the config file's other
    entries stay, and an entry of that name the file already has is kept as written
    (``asr_model`` adds its model beside a second model or a remote one)."""

    name: str
    value: dict[str, object] = field(default_factory=dict)


@dataclass(frozen=True)
class KeepEntries:
    """An option that chooses which entries a mapping-valued key holds: each keeps what
    the config file wrote under it (a wake word's threshold), a new one starts empty."""

    names: tuple[str, ...]


SUPERVISOR_NETWORK = "172.30.32.0/23"
"""The Supervisor's internal network (``hassio``): its watchdog connects from there."""
ADDON_SETTINGS: Settings = {
    ("voices", "dir"): "/config/voices",
    ("mdns", "enabled"): False,
    ("network", "lan"): False,
    ("network", "allow"): [SUPERVISOR_NETWORK],
}
"""What the add-on sets whatever its options say (``lan_access`` opens the network):
custom voices in its own config folder (in its backup, reached with the Samba and SSH
add-ons); no mDNS, since the Supervisor's discovery is the one card Home Assistant
shows; only this machine and the Supervisor's network answered."""
LEGACY_VOICES = Path("/share/hearth/voices")
"""Where an earlier version kept custom voices (outside the add-on's backup)."""
ADDON_CONFIG_FILE = Path("/config/config.yaml")
"""A full Hearth config.yaml in the add-on's own config folder (``addon_config``), for
settings the options do not offer; the options and the environment win over it."""
MAX_OPTIONS_BYTES = 1 << 20


def _text(name: str, value: object) -> str:
    if not isinstance(value, str):
        raise ConfigError(f"add-on option {name}: must be text, got {value!r:.80}")
    return value.strip()


def _flag(name: str, value: object) -> bool:
    if not isinstance(value, bool):
        raise ConfigError(f"add-on option {name}: must be true or false, got {value!r:.80}")
    return value


def _names(name: str, value: object) -> list[str]:
    if not isinstance(value, list):
        raise ConfigError(f"add-on option {name}: must be a list, got {value!r:.80}")
    return [_text(name, item) for item in value if _text(name, item)]


def _chosen(options: Mapping[str, object], listed: str, custom: str, default: str) -> str:
    """A list option's choice, or its free-text companion's when that is set."""
    own = _text(custom, options.get(custom, "") or "")
    return own or _text(listed, options.get(listed, default)) or default


def _asr(options: Mapping[str, object]) -> Settings:
    model = _chosen(options, "asr_model", "custom_asr_model", "tiny.en")
    settings: Settings = {
        ("asr", "models"): AddEntry(model, {"path": model}),
        ("asr", "default_model"): model,
    }
    language = _text("language", options.get("language", "") or "")
    if language:
        settings[("asr", "models", model, "language")] = language
    return settings


def _voice(options: Mapping[str, object]) -> Settings:
    return (
        {("tts", "default_voice"): _chosen(options, "voice", "custom_voice", "")}
        if (options.get("voice") or options.get("custom_voice"))
        else {}
    )


def _wake(options: Mapping[str, object]) -> Settings:
    words = _names("wake_words", options.get("wake_words", []))
    if not words:
        return {("wake", "enabled"): False}
    return {("wake", "enabled"): True, ("wake", "models"): KeepEntries(tuple(words))}


_SIMPLE: dict[str, tuple[KeyPath, Callable[[str, object], object]]] = {
    "llm": (("llm", "backend"), _text),
    "llm_url": (("llm", "remote", "base_url"), _text),
    "llm_model": (("llm", "remote", "model"), _text),
    "llm_api_key": (("llm", "remote", "api_key"), _text),
    "api_key": (("auth", "api_key"), _text),
    "speakers": (("speakers", "enabled"), _flag),
    "home_assistant_names": (("homeassistant", "names"), _flag),
    "home_assistant_commands": (("homeassistant", "commands"), _flag),
    "lan_access": (("network", "lan"), _flag),
    "log_level": (("log", "level"), _text),
}
"""Options that set one key each, with how their value is read."""
_WHOLE = {"voice", "custom_voice", "asr_model", "custom_asr_model", "language", "wake_words"}
"""Options that set several keys together."""


def options_to_settings(options: Mapping[str, object]) -> Settings:
    """The configuration keys the add-on's ``options`` set (the add-on's own included).

    Raises:
        ConfigError: an option the add-on does not have, or a value of the wrong kind,
            naming the option.
    """
    unknown = sorted(set(options) - set(_SIMPLE) - _WHOLE)
    if unknown:
        known = ", ".join(sorted(set(_SIMPLE) | _WHOLE))
        raise ConfigError(f"add-on option {unknown[0]}: unknown (known options: {known})")
    settings: Settings = dict(ADDON_SETTINGS)
    settings.update(_voice(options))
    settings.update(_asr(options))
    settings.update(_wake(options))
    for name, (path, read) in _SIMPLE.items():
        if name in options and options[name] is not None:
            value = read(name, options[name])
            if value != "":  # an empty optional text keeps the default
                settings[path] = value
    return settings


def read_options(path: Path) -> Settings:
    """The configuration keys of the add-on options file at ``path``."""
    try:
        raw = path.read_bytes()[: MAX_OPTIONS_BYTES + 1]
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read the add-on options: {exc.strerror}") from None
    if len(raw) > MAX_OPTIONS_BYTES:
        raise ConfigError(f"{path}: the add-on options are over {MAX_OPTIONS_BYTES} bytes")
    try:
        options = json.loads(raw)
    except ValueError as exc:
        raise ConfigError(f"{path}: the add-on options are not JSON: {exc}") from None
    if not isinstance(options, dict):
        raise ConfigError(f"{path}: the add-on options must be a JSON object")
    return options_to_settings(options)
