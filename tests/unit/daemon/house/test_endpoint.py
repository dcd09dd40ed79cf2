"""Where Home Assistant is: off unless configured, a URL, or the Supervisor's proxy; and
the ``homeassistant`` section's checks."""

from __future__ import annotations

import pytest

from daemon.config import HomeAssistantConfig, load_config, parse_config
from daemon.config.addon import options_to_settings
from daemon.errors import ConfigError
from daemon.house.endpoint import describe, endpoint_of, websocket_url


@pytest.mark.parametrize(
    ("url", "ws"),
    [
        ("http://homeassistant.local:8123", "ws://homeassistant.local:8123/api/websocket"),
        ("http://ha:8123/", "ws://ha:8123/api/websocket"),
        ("https://ha.example/api", "wss://ha.example/api/websocket"),
        ("https://ha.example/base", "wss://ha.example/base/api/websocket"),
        ("ws://ha:8123/api/websocket", "ws://ha:8123/api/websocket"),
        ("wss://proxy/some/socket", "wss://proxy/some/socket"),
        ("http://supervisor/core/websocket", "ws://supervisor/core/websocket"),
    ],
)
def test_websocket_url(url, ws):
    assert websocket_url(url) == ws


def addon_env(tmp_path, **more: str) -> dict[str, str]:
    options = tmp_path / "options.json"
    options.write_text("{}")
    return {"SUPERVISOR_TOKEN": "addon-token", "HEARTH_ADDON_OPTIONS": str(options)} | more


def test_off_unless_configured_or_inside_the_add_on(tmp_path):
    assert endpoint_of(HomeAssistantConfig(), environ={}) is None
    assert describe(None) == "off"
    # The Supervisor's token alone (no options file) is not the add-on.
    assert endpoint_of(HomeAssistantConfig(), environ={"SUPERVISOR_TOKEN": "t"}) is None
    inside = endpoint_of(HomeAssistantConfig(), environ=addon_env(tmp_path))
    assert inside is not None and inside.via_supervisor
    assert (inside.url, inside.token) == ("ws://supervisor/core/websocket", "addon-token")
    assert "addon-token" not in repr(inside) and "Supervisor" in describe(inside)
    # names: false keeps the add-on off too.
    off = HomeAssistantConfig(names=False)
    assert endpoint_of(off, environ=addon_env(tmp_path)) is None


def test_a_url_wins_inside_the_add_on(tmp_path):
    config = HomeAssistantConfig(url="http://ha:8123", token="mine")
    found = endpoint_of(config, environ=addon_env(tmp_path))
    assert found is not None and not found.via_supervisor
    assert (found.url, found.token) == ("ws://ha:8123/api/websocket", "mine")


def test_a_test_supervisor_on_loopback(tmp_path):
    env = addon_env(tmp_path, HEARTH_SUPERVISOR_URL="http://127.0.0.1:8099")
    found = endpoint_of(HomeAssistantConfig(), environ=env)
    assert found is not None and found.url == "ws://127.0.0.1:8099/core/websocket"


def error_of(text: str) -> str:
    with pytest.raises(ConfigError) as info:
        parse_config(text, "config.yaml")
    return str(info.value)


def test_the_section_is_checked():
    assert parse_config("", "c.yaml").homeassistant == HomeAssistantConfig()
    assert error_of("homeassistant:\n  url: http://ha:8123\n").startswith(
        "config.yaml:1 homeassistant.token: must be set when homeassistant.url is"
    )
    assert "scheme http, https, ws or wss" in error_of("homeassistant:\n  url: ftp://ha\n")
    assert "no query, fragment or user" in error_of(
        "homeassistant:\n  url: http://u:p@ha:8123\n  token: t\n"
    )
    assert "must not exceed homeassistant.retry_max_s" in error_of(
        "homeassistant:\n  retry_min_s: 10\n  retry_max_s: 5\n"
    )
    # names: false needs no token: nothing connects.
    parse_config("homeassistant:\n  url: http://ha:8123\n  names: false\n", "c.yaml")


def test_the_token_comes_from_a_file_and_check_hides_it(tmp_path):
    secret = tmp_path / "token"
    secret.write_text("s3cret\n")
    env = {"HEARTH_HOMEASSISTANT__URL": "http://ha:8123",
           "HEARTH_HOMEASSISTANT__TOKEN_FILE": str(secret)}  # fmt: skip
    config = load_config(None, environ=env)
    assert config.homeassistant.token == "s3cret"
    from daemon.config import settings_of

    shown = {s.key: s.value for s in settings_of(config)}
    assert shown["homeassistant.token"] == "(set)"


def test_the_add_on_option_turns_the_names_off():
    assert options_to_settings({"home_assistant_names": False})[("homeassistant", "names")] is False
    with pytest.raises(ConfigError, match="home_assistant_names"):
        options_to_settings({"home_assistant_names": "yes"})
