"""Every setting from a HEARTH_* environment variable: names, types, files and errors."""

import pytest

from daemon.config import Config, ConfigError, load_config


def env(variables: dict[str, str], text: str | None = None, tmp_path=None) -> Config:
    path = None
    if text is not None:
        path = tmp_path / "config.yaml"
        path.write_text(text)
    return load_config(path, environ=variables)


def error_of(variables: dict[str, str], text: str | None = None, tmp_path=None) -> str:
    with pytest.raises(ConfigError) as info:
        env(variables, text, tmp_path)
    return str(info.value)


def test_no_variables_is_the_defaults():
    assert load_config(None, environ={}) == Config()
    assert load_config(None, environ={}).origins == {}


def test_a_string_key_takes_the_text_as_it_is():
    cfg = env({"HEARTH_AUTH__API_KEY": "12345", "HEARTH_WYOMING__URI": "tcp://127.0.0.1:1"})
    assert cfg.auth.api_key == "12345"
    assert cfg.wyoming.uri == "tcp://127.0.0.1:1"
    # Text that YAML would read as something else stays the text.
    assert env({"HEARTH_LLM__MODEL": "true"}).llm.model == "true"
    assert env({"HEARTH_AUTH__API_KEY": ""}).auth.api_key == ""


def test_other_keys_read_a_yaml_value():
    cfg = env(
        {
            "HEARTH_HTTP__PORT": "8080",
            "HEARTH_LLM__TEMPERATURE": "0.3",
            "HEARTH_HTTPS__ENABLED": "false",
            "HEARTH_VAD__TURN": "off",
            "HEARTH_ASR__PARTIALS": "on",
            "HEARTH_LOG__LEVEL": "debug",
            "HEARTH_HTTP__CORS_ORIGINS": "[http://a.lan:8123, https://b.lan]",
        }
    )
    assert cfg.http.port == 8080
    assert cfg.llm.temperature == 0.3
    assert cfg.https.enabled is False
    assert cfg.vad.turn == "off" and cfg.asr.partials == "on"
    assert cfg.log.level == "debug"
    assert cfg.http.cors_origins == ["http://a.lan:8123", "https://b.lan"]
    assert env({"HEARTH_ASR__MODELS__TINY_EN__WINDOW": "30"}).asr.models["tiny.en"].window == "30"


def test_nested_keys_and_a_top_level_key():
    cfg = env(
        {
            "HEARTH_LLM__BACKEND": "remote",
            "HEARTH_LLM__REMOTE__BASE_URL": "http://gpu.lan:8000/v1",
            "HEARTH_TTS__CACHE__MAX_MB": "64",
            "HEARTH_STATE_DIR": "/data",
        }
    )
    assert cfg.llm.backend == "remote"
    assert cfg.llm.remote.base_url == "http://gpu.lan:8000/v1"
    assert cfg.tts.cache.max_mb == 64
    assert cfg.state_dir == "/data"


def test_a_whole_section_as_a_mapping():
    cfg = env({"HEARTH_LLM__REMOTE": "{base_url: 'http://gpu.lan:8000/v1', model: qwen}"})
    assert cfg.llm.remote.base_url == "http://gpu.lan:8000/v1"
    assert cfg.llm.remote.model == "qwen"


def test_mapping_entries_are_named_by_letters_and_digits():
    cfg = env({"HEARTH_ASR__MODELS__TINY_EN__BEAM_SIZE": "3"})
    assert cfg.asr.models["tiny.en"].beam_size == 3
    # Matched case-insensitively; the other entries of a default mapping stay.
    cfg = env({"HEARTH_WAKE__MODELS__alexa__PROBABILITY_CUTOFF": "0.6"})
    assert cfg.wake.models["alexa"].probability_cutoff == 0.6
    assert set(cfg.wake.models) == set(Config().wake.models)


def test_an_entry_of_the_file_is_matched(tmp_path):
    text = "asr:\n  default_model: small.en\n  models:\n    small.en:\n      path: small.en\n"
    cfg = env({"HEARTH_ASR__MODELS__SMALL_EN__DEVICE": "cpu"}, text, tmp_path)
    assert cfg.asr.models["small.en"].device == "cpu"
    assert list(cfg.asr.models) == ["small.en"]  # the file replaced the defaults


def test_a_new_entry_needs_a_whole_mapping():
    cfg = env({"HEARTH_ASR__MODELS__BASE": "{path: base}"})
    assert cfg.asr.models["base"].path == "base"
    assert "tiny.en" in cfg.asr.models
    cfg = env(
        {"HEARTH_ASR__MODELS__BASE": "{path: base}", "HEARTH_ASR__MODELS__BASE__BEAM_SIZE": "5"}
    )
    assert cfg.asr.models["base"].beam_size == 5
    assert error_of({"HEARTH_ASR__MODELS__BASE__BEAM_SIZE": "2"}) == (
        'HEARTH_ASR__MODELS__BASE__BEAM_SIZE: asr.models has no entry "BASE" (entries: '
        "tiny.en); to add one, set HEARTH_ASR__MODELS__BASE to a whole mapping"
    )
    assert error_of({"HEARTH_ASR__MODELS__BASE": "base"}).startswith(
        'HEARTH_ASR__MODELS__BASE: asr.models has no entry "BASE"'
    )


def test_a_whole_mapping_replaces_the_entries():
    cfg = env({"HEARTH_ASR__MODELS": "{base: {path: base}}", "HEARTH_ASR__DEFAULT_MODEL": "base"})
    assert list(cfg.asr.models) == ["base"]


def test_file_form_reads_a_secret(tmp_path):
    secret = tmp_path / "key"
    secret.write_text("s3cret\n")
    assert env({"HEARTH_AUTH__API_KEY_FILE": str(secret)}).auth.api_key == "s3cret"
    secret.write_text("two\nlines\n\n")
    assert env({"HEARTH_AUTH__API_KEY_FILE": str(secret)}).auth.api_key == "two\nlines\n"
    port = tmp_path / "port"
    port.write_text("8123\n")
    assert env({"HEARTH_HTTP__PORT_FILE": str(port)}).http.port == 8123


def test_file_form_errors(tmp_path):
    missing = tmp_path / "nope"
    assert error_of({"HEARTH_AUTH__API_KEY_FILE": str(missing)}) == (
        f"HEARTH_AUTH__API_KEY_FILE: cannot read {missing}: No such file or directory"
    )
    secret = tmp_path / "key"
    secret.write_text("k")
    both = {"HEARTH_AUTH__API_KEY": "a", "HEARTH_AUTH__API_KEY_FILE": str(secret)}
    assert error_of(both) == (
        "HEARTH_AUTH__API_KEY_FILE: auth.api_key is also set by HEARTH_AUTH__API_KEY; "
        "set only one of them"
    )


def test_a_key_ending_in_file_is_the_key_not_a_file(tmp_path):
    cfg = env({"HEARTH_HTTPS__CERT_FILE": "/tls/c.pem", "HEARTH_HTTPS__KEY_FILE": "/tls/k.pem"})
    assert (cfg.https.cert_file, cfg.https.key_file) == ("/tls/c.pem", "/tls/k.pem")
    holder = tmp_path / "where"
    holder.write_text("/tls/from-file.pem\n")
    cfg = env({"HEARTH_HTTPS__CERT_FILE_FILE": str(holder), "HEARTH_HTTPS__KEY_FILE": "/tls/k.pem"})
    assert cfg.https.cert_file == "/tls/from-file.pem"


def test_unknown_keys_are_refused_with_the_name():
    assert error_of({"HEARTH_WYOMING__URL": "tcp://x:1"}) == (
        "HEARTH_WYOMING__URL: unknown key (known keys: end_of_turn, idle_timeout_s, "
        "max_connections, max_event_bytes, uri)"
    )
    assert error_of({"HEARTH_NOPE__X": "1"}).startswith("HEARTH_NOPE__X: unknown key (known keys:")
    assert error_of({"HEARTH_HTTP__PORT__X": "1"}).startswith("HEARTH_HTTP__PORT__X: unknown key")
    assert error_of({"HEARTH_TTS__REMOTE__0__NAME": "a"}).startswith(
        "HEARTH_TTS__REMOTE__0__NAME: unknown key (tts.remote takes a whole value"
    )


def test_only_names_with_levels_are_settings():
    cfg = env({"HEARTH_CONFIG": "", "HEARTH_CUDA_INSTALL_TEST": "1", "OTHER__X": "1"})
    assert cfg == Config()


def test_a_mistyped_setting_is_refused_with_the_right_name():
    assert error_of({"HEARTH_LOG_LEVEL": "debug"}) == (
        "HEARTH_LOG_LEVEL: not a setting; did you mean HEARTH_LOG__LEVEL? "
        "(the levels of a key path are joined by __)"
    )
    assert "did you mean HEARTH_HTTPS__PORT?" in error_of({"HEARTH_HTTPS_PORT": "1"})
    assert error_of({"HEARTH_HTTP": "x"}).startswith("HEARTH_HTTP: not a setting")


def test_errors_name_the_variable_in_the_file_s_words(tmp_path):
    assert error_of({"HEARTH_ASR__MODELS__TINY_EN__BEAM_SIZE": "five"}) == (
        'HEARTH_ASR__MODELS__TINY_EN__BEAM_SIZE: must be an integer between 1 and 10, got "five"'
    )
    # The file's message for the same problem says the same after file:line and key.
    file_error = error_of({}, "http:\n  port: 70000\n", tmp_path)
    assert file_error.endswith("http.port: must be an integer between 1 and 65535, got 70000")
    assert error_of({"HEARTH_HTTP__PORT": "70000"}) == (
        "HEARTH_HTTP__PORT: must be an integer between 1 and 65535, got 70000"
    )
    assert error_of({"HEARTH_VAD__TURN": "maybe"}) == (
        'HEARTH_VAD__TURN: must be one of smart-turn, off, got "maybe"'
    )
    assert error_of({"HEARTH_HTTP__PORT": "[1"}).startswith("HEARTH_HTTP__PORT: invalid YAML:")
    # A key deeper than the variable: the variable, then the key.
    assert error_of({"HEARTH_ASR__MODELS": "{base: {beam: 1}}"}).startswith(
        "HEARTH_ASR__MODELS asr.models.base.beam: unknown key (known keys:"
    )


def test_a_cross_check_names_the_variable_that_broke_it(tmp_path):
    assert error_of({"HEARTH_VAD__TRAILING_SILENCE_MS": "100"}) == (
        "HEARTH_VAD__TRAILING_SILENCE_MS vad.speculative_silence_ms: must not exceed "
        "vad.trailing_silence_ms (100), got 160"
    )
    assert error_of({"HEARTH_LLM__BACKEND": "remote"}) == (
        "HEARTH_LLM__BACKEND llm.remote.base_url: must be set when llm.backend is remote"
    )
    text = "asr:\n  default_model: tiny.en\n"
    assert error_of({"HEARTH_ASR__MODELS": "{base: {}}"}, text, tmp_path).startswith(
        "HEARTH_ASR__MODELS asr.default_model: must name one of asr.models (base)"
    )
    # A cross-check broken by the file alone still names the file's line.
    text = "vad:\n  speculative_silence_ms: 900\n"
    assert error_of({"HEARTH_HTTP__PORT": "1"}, text, tmp_path).startswith(
        f"{tmp_path / 'config.yaml'}:2 vad.speculative_silence_ms: must not exceed"
    )


def test_the_environment_fixes_what_the_file_leaves_open(tmp_path):
    cfg = env(
        {"HEARTH_LLM__REMOTE__BASE_URL": "http://gpu.lan:8000/v1"},
        "llm:\n  backend: remote\n",
        tmp_path,
    )
    assert cfg.llm.backend == "remote" and cfg.llm.remote.base_url


def test_the_file_s_own_errors_come_first_and_unchanged(tmp_path):
    text = "http:\n  port: x\n"
    assert error_of({"HEARTH_HTTP__PORT": "1"}, text, tmp_path) == (
        f'{tmp_path / "config.yaml"}:2 http.port: must be an integer between 1 and 65535, got "x"'
    )


def test_hearth_config_comes_from_the_given_environment(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("http:\n  port: 1234\n")
    cfg = load_config(None, environ={"HEARTH_CONFIG": str(path), "HEARTH_HTTP__HOST": "::1"})
    assert (cfg.http.port, cfg.http.host, cfg.source) == (1234, "::1", str(path))


def test_parse_config_reads_no_environment(monkeypatch):
    from daemon.config import parse_config

    monkeypatch.setenv("HEARTH_HTTP__PORT", "8080")
    assert parse_config("", "c.yaml").http.port == 19000
    assert load_config(None).http.port == 8080  # environ=None: os.environ
