"""Layers (file < add-on options < environment) and where each setting came from."""

import pytest

from daemon.config import ConfigError, load_config, parse_config, settings_of


@pytest.fixture
def path(tmp_path):
    path = tmp_path / "config.yaml"
    path.write_text(
        "http:\n"  # 1
        "  port: 5000\n"  # 2
        "  host: 127.0.0.1\n"  # 3
        "log:\n"  # 4
        "  level: warning\n"  # 5
        "asr:\n"  # 6
        "  models:\n"  # 7
        "    tiny.en:\n"  # 8
        "      beam_size: 2\n"  # 9
    )
    return path


def test_file_then_add_on_then_environment(path):
    addon = {("http", "port"): 6000, ("http", "host"): "0.0.0.0", ("llm", "max_tokens"): 64}
    cfg = load_config(path, environ={"HEARTH_HTTP__PORT": "7000"}, addon=addon)
    assert cfg.http.port == 7000  # environment over add-on over file
    assert cfg.http.host == "0.0.0.0"  # add-on over file
    assert cfg.log.level == "warning"  # the file over the default
    assert cfg.llm.max_tokens == 64
    assert cfg.asr.models["tiny.en"].beam_size == 2


def test_origins_name_the_file_line_the_variable_and_the_add_on(path):
    cfg = load_config(
        path,
        environ={"HEARTH_HTTP__PORT": "7000", "HEARTH_LLM__BACKEND": "local"},
        addon={("http", "host"): "0.0.0.0", ("tts", "default_voice"): "en_US-joe-medium"},
        addon_source="add-on options (voice)",
    )
    assert dict(cfg.origins) == {
        ("http", "port"): "env HEARTH_HTTP__PORT",
        ("http", "host"): "add-on options (voice)",
        ("log", "level"): f"{path}:5",
        ("asr", "models", "tiny.en", "beam_size"): f"{path}:9",
        ("tts", "default_voice"): "add-on options (voice)",
        ("llm", "backend"): "env HEARTH_LLM__BACKEND",
    }


def test_defaults_have_no_origin():
    cfg = parse_config("vad:\n  turn: off\n", "c.yaml")
    assert dict(cfg.origins) == {("vad", "turn"): "c.yaml:2"}
    assert parse_config("", "c.yaml").origins == {}


def test_an_entry_without_keys_is_a_setting_and_list_items_have_lines():
    text = (
        "asr:\n  models:\n    tiny.en:\n    base: {}\n"
        "tts:\n  remote:\n    - name: k\n      base_url: http://k.lan/v1\n      voices: [a]\n"
    )
    origins = parse_config(text, "c.yaml").origins
    assert origins[("asr", "models", "tiny.en")] == "c.yaml:3"
    assert origins[("asr", "models", "base")] == "c.yaml:4"
    assert origins[("tts", "remote", "0", "base_url")] == "c.yaml:8"


def test_a_higher_layer_replaces_the_origins_below_it(path):
    cfg = load_config(
        path, environ={"HEARTH_ASR__MODELS": "{base: {}}", "HEARTH_ASR__DEFAULT_MODEL": "base"}
    )
    assert ("asr", "models", "tiny.en", "beam_size") not in cfg.origins
    assert cfg.origins[("asr", "models")] == "env HEARTH_ASR__MODELS"


def test_add_on_errors_name_the_add_on_options_and_the_key(path):
    with pytest.raises(ConfigError) as info:
        load_config(path, environ={}, addon={("http", "port"): "x"})
    assert str(info.value) == (
        'add-on options http.port: must be an integer between 1 and 65535, got "x"'
    )
    with pytest.raises(ConfigError, match=r"^Add-on http\.prot: unknown key \(known keys: "):
        load_config(path, environ={}, addon={("http", "prot"): 1}, addon_source="Add-on")


def test_an_unset_add_on_option_sets_nothing(path):
    assert load_config(path, environ={}, addon={("http", "port"): None}).http.port == 5000


def test_settings_list_values_in_file_order_with_secrets_hidden(tmp_path):
    secret = tmp_path / "k"
    secret.write_text("hunter2\n")
    text = (
        "webrtc:\n  ice_credential: pw\n  ice_username: me\n"
        "tts:\n  remote:\n    - name: k\n      base_url: http://k.lan/v1\n"
        "      voices: [a]\n      api_key: sk-1\n"
    )
    path = tmp_path / "c.yaml"
    path.write_text(text)
    cfg = load_config(
        path,
        environ={
            "HEARTH_AUTH__API_KEY_FILE": str(secret),
            "HEARTH_LLM__REMOTE": "{api_key: sk-2, model: m}",
            "HEARTH_HTTP__PORT": "8080",
        },
    )
    shown = {s.key: (s.value, s.origin) for s in settings_of(cfg)}
    # In the schema's (and config.yaml's) order, whichever layer set them.
    assert list(shown)[:3] == ["http.port", "webrtc.ice_username", "webrtc.ice_credential"]
    assert shown["http.port"] == (8080, "env HEARTH_HTTP__PORT")
    assert shown["webrtc.ice_credential"] == ("(set)", f"{path}:2")
    assert shown["webrtc.ice_username"] == ("me", f"{path}:3")
    assert shown["auth.api_key"] == ("(set)", "env HEARTH_AUTH__API_KEY_FILE")
    assert shown["tts.remote.0.api_key"] == ("(set)", f"{path}:9")
    remote = shown["llm.remote"][0]
    assert remote["api_key"] == "(set)" and remote["model"] == "m" and remote["api_key"] != "sk-2"
    assert "hunter2" not in repr(shown) and "sk-1" not in repr(shown)


def test_a_value_from_any_file_is_hidden(tmp_path):
    holder = tmp_path / "model"
    holder.write_text("secret-model-name\n")
    cfg = load_config(None, environ={"HEARTH_LLM__MODEL_FILE": str(holder)})
    assert cfg.llm.model == "secret-model-name"
    (setting,) = settings_of(cfg)
    assert (setting.key, setting.value) == ("llm.model", "(set)")
    # A key that itself ends in _file is shown: it is a path, not a file's content.
    cfg = load_config(
        None, environ={"HEARTH_HTTPS__CERT_FILE": "/c.pem", "HEARTH_HTTPS__KEY_FILE": "/k.pem"}
    )
    assert [s.value for s in settings_of(cfg)] == ["/c.pem", "/k.pem"]
