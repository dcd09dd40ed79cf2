"""The ``homeassistant`` section of config.yaml: where Hearth reads the household's names.

Home Assistant's exposed entities, their aliases, its areas and floors bias what
Whisper writes (``daemon/house/``). Nothing connects unless ``url`` is set, or Hearth
runs as the Home Assistant add-on (then through the Supervisor, with the add-on's own
token); ``names: false`` keeps it off in the add-on too.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from daemon.config.rules import ha_url_ok, rules


@dataclass(frozen=True)
class HomeAssistantConfig:
    """Home Assistant's websocket API, read for the household's names."""

    url: str = field(default="", metadata=rules(check=ha_url_ok))
    """``http(s)://HOST:8123`` or the websocket's own ``ws(s)://HOST:8123/api/websocket``
    ("": off, except inside the add-on, which goes through the Supervisor)."""
    token: str = ""
    """A long-lived access token of an administrator (``homeassistant/expose_entity/list``
    is an administrator's command); secret: set it with ``HEARTH_HOMEASSISTANT__TOKEN_FILE``."""
    names: bool = True
    """false: never connect, not even inside the add-on."""
    commands: bool = True
    """Read a transcript that is not a command Home Assistant understands against the
    household's commands (its sentence templates with the household's names), and take
    the command the audio supports as well (:mod:`daemon.house.commands`); false: the
    words as Whisper wrote them."""
    connect_timeout_s: float = field(default=10.0, metadata=rules(min=0.5, max=300.0))
    """Connecting, the handshake and authentication, together."""
    request_timeout_s: float = field(default=30.0, metadata=rules(min=1.0, max=600.0))
    """One command's answer (a registry list of a large house takes a while)."""
    max_message_mb: int = field(default=16, metadata=rules(min=1, max=256))
    """Largest websocket message read (``get_states`` of a large house is several MB)."""
    max_names: int = field(default=2000, metadata=rules(min=1, max=100_000))
    """Names kept in memory: the most likely to be said first."""
    refresh_delay_ms: int = field(default=1000, metadata=rules(min=0, max=600_000))
    """After a registry change, wait this long for more changes before reading again."""
    retry_min_s: float = field(default=1.0, metadata=rules(min=0.1, max=3600.0))
    """First wait before reconnecting; it doubles after each failure up to ``retry_max_s``."""
    retry_max_s: float = field(default=300.0, metadata=rules(min=0.1, max=86400.0))
