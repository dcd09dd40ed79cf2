"""The add-on's options as configuration: the mapping, its errors and its layer."""

from __future__ import annotations

import json

import pytest

from daemon.config import load_config
from daemon.config.addon import (
    ADDON_SETTINGS,
    SUPERVISOR_NETWORK,
    options_to_settings,
    read_options,
)
from daemon.errors import ConfigError

DEFAULTS = {
    "voice": "en_US-joe-medium",
    "asr_model": "tiny.en",
    "wake_words": ["okay_nabu", "hey_jarvis"],
    "llm": "local",
    "speakers": True,
    "log_level": "info",
}


def test_the_default_options_give_the_embedded_house():
    settings = options_to_settings(DEFAULTS)
    config = load_config(None, environ={}, addon=settings)
    assert config.asr.default_model == "tiny.en" and list(config.asr.models) == ["tiny.en"]
    assert list(config.wake.models) == ["okay_nabu", "hey_jarvis"] and config.wake.enabled
    assert config.llm.backend == "local" and config.speakers.enabled
    assert config.voices.dir == ADDON_SETTINGS[("voices", "dir")]
    assert config.origins[("tts", "default_voice")].startswith("add-on options")


def test_every_option_reaches_its_key():
    options = {
        **DEFAULTS,
        "voice": "kitchen-joe",
        "asr_model": "base",
        "language": "de",
        "wake_words": [],
        "llm": "remote",
        "llm_url": "http://ollama.lan:11434/v1",
        "llm_model": "qwen2.5:3b",
        "llm_api_key": "sk-remote",
        "api_key": "household-key",
        "speakers": False,
        "log_level": "debug",
    }
    config = load_config(None, environ={}, addon=options_to_settings(options))
    assert config.tts.default_voice == "kitchen-joe"
    assert config.asr.default_model == "base"
    assert config.asr.models["base"].path == "base" and config.asr.models["base"].language == "de"
    assert not config.wake.enabled
    assert (config.llm.backend, config.llm.remote.base_url) == (
        "remote",
        "http://ollama.lan:11434/v1",
    )
    assert (config.llm.remote.model, config.llm.remote.api_key) == ("qwen2.5:3b", "sk-remote")
    assert config.auth.api_key == "household-key"
    assert not config.speakers.enabled and config.log.level == "debug"


def test_empty_optional_text_keeps_the_default():
    config = load_config(
        None, environ={}, addon=options_to_settings({**DEFAULTS, "api_key": "", "llm_url": ""})
    )
    assert config.auth.api_key == "" and ("auth", "api_key") not in config.origins


def test_the_environment_wins_over_the_options_and_the_options_over_the_file(tmp_path):
    path = tmp_path / "config.yaml"
    path.write_text("log:\n  level: warning\ntts:\n  default_voice: from-file\n")
    config = load_config(
        path,
        environ={"HEARTH_LOG__LEVEL": "error"},
        addon=options_to_settings({**DEFAULTS, "voice": "from-options"}),
    )
    assert (
        config.log.level == "error" and config.origins[("log", "level")] == "env HEARTH_LOG__LEVEL"
    )
    assert config.tts.default_voice == "from-options"


@pytest.mark.parametrize(
    ("options", "problem"),
    [
        ({"colour": "red"}, "add-on option colour: unknown"),
        ({"speakers": "yes"}, "add-on option speakers: must be true or false"),
        ({"wake_words": "okay_nabu"}, "add-on option wake_words: must be a list"),
        ({"voice": 5}, "add-on option voice: must be text"),
    ],
)
def test_a_wrong_option_is_named(options, problem):
    with pytest.raises(ConfigError, match=problem):
        options_to_settings({**DEFAULTS, **options})


def test_a_value_the_config_refuses_names_the_add_on_options():
    with pytest.raises(ConfigError, match=r"add-on options log\.level: must be one of"):
        load_config(None, environ={}, addon=options_to_settings({**DEFAULTS, "log_level": "loud"}))


def test_the_options_file(tmp_path):
    path = tmp_path / "options.json"
    path.write_text(json.dumps(DEFAULTS))
    assert read_options(path)[("tts", "default_voice")] == "en_US-joe-medium"
    path.write_text("{not json")
    with pytest.raises(ConfigError, match="not JSON"):
        read_options(path)
    path.write_text("[1, 2]")
    with pytest.raises(ConfigError, match="JSON object"):
        read_options(path)
    with pytest.raises(ConfigError, match="cannot read"):
        read_options(tmp_path / "missing.json")


HOUSEHOLD_FILE = """\
asr:
  default_model: tiny.en
  models:
    tiny.en:
      path: tiny.en
      beam_size: 3
    base:
      path: base
      language: de
    gpu-box:
      backend: remote
      remote:
        base_url: http://gpu-box.lan:8000/v1
        model: large-v3
wake:
  models:
    okay_nabu:
      probability_cutoff: 0.8
    my_own_word:
      sliding_window: 7
"""


def test_the_options_merge_into_the_add_on_folders_config_and_never_erase_it(tmp_path):
    """The options layer over the add-on folder's config.yaml key by key: a second
    model, a remote ASR and a wake threshold the file sets all survive."""
    path = tmp_path / "config.yaml"
    path.write_text(HOUSEHOLD_FILE)
    options = {**DEFAULTS, "asr_model": "small.en", "wake_words": ["okay_nabu", "hey_jarvis"]}
    config = load_config(path, environ={}, addon=options_to_settings(options))
    models = config.asr.models
    assert config.asr.default_model == "small.en"
    assert set(models) == {"tiny.en", "base", "gpu-box", "small.en"}
    assert models["small.en"].path == "small.en"
    assert models["tiny.en"].beam_size == 3 and models["base"].language == "de"
    assert models["gpu-box"].backend == "remote"
    assert models["gpu-box"].remote.base_url == "http://gpu-box.lan:8000/v1"
    # The options choose the words; a word the file tuned keeps its threshold.
    assert list(config.wake.models) == ["okay_nabu", "hey_jarvis"]
    assert config.wake.models["okay_nabu"].probability_cutoff == 0.8
    assert config.origins[("wake", "models", "okay_nabu", "probability_cutoff")].startswith(
        str(path)
    )
    assert config.origins[("asr", "models", "tiny.en", "beam_size")].startswith(str(path))


def test_an_option_naming_a_model_the_file_defines_keeps_the_files_entry(tmp_path):
    path = tmp_path / "config.yaml"
    path.write_text(HOUSEHOLD_FILE)
    options = {**DEFAULTS, "asr_model": "gpu-box", "language": "en"}
    config = load_config(path, environ={}, addon=options_to_settings(options))
    entry = config.asr.models["gpu-box"]
    assert config.asr.default_model == "gpu-box"
    assert entry.backend == "remote" and entry.remote.model == "large-v3"
    assert entry.language == "en"  # the option that was set still applies


def test_without_a_file_the_options_give_just_their_own_entries():
    options = {**DEFAULTS, "asr_model": "base", "wake_words": ["alexa"]}
    config = load_config(None, environ={}, addon=options_to_settings(options))
    assert list(config.asr.models) == ["base"] and list(config.wake.models) == ["alexa"]


def test_the_add_on_is_closed_to_the_lan_and_silent_on_mdns_unless_opened():
    config = load_config(None, environ={}, addon=options_to_settings(DEFAULTS))
    assert not config.network.lan and config.network.allow == [SUPERVISOR_NETWORK]
    assert not config.mdns.enabled  # the Supervisor's discovery is the one card
    assert config.voices.dir == "/config/voices"  # the add-on's config folder: backed up
    opened = options_to_settings({**DEFAULTS, "lan_access": True})
    assert load_config(None, environ={}, addon=opened).network.lan


def test_a_custom_model_or_voice_wins_over_the_lists_choice():
    options = {**DEFAULTS, "custom_asr_model": "owner/whisper-ct2", "custom_voice": "kitchen"}
    config = load_config(None, environ={}, addon=options_to_settings(options))
    assert config.asr.default_model == "owner/whisper-ct2"
    assert config.asr.models["owner/whisper-ct2"].path == "owner/whisper-ct2"
    assert config.tts.default_voice == "kitchen"
    listed = options_to_settings({**DEFAULTS, "voice": "de_DE-thorsten-medium", "custom_voice": ""})
    assert listed[("tts", "default_voice")] == "de_DE-thorsten-medium"
