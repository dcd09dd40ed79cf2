"""Where saved system-prompt states live, and the switch that turns them off."""

from pathlib import Path

from daemon.config import parse_config
from daemon.runtime.loading import model_keys


def test_states_live_in_the_cache_folder_beside_the_tts_cache(tmp_path, monkeypatch):
    monkeypatch.delenv("CACHE_DIRECTORY", raising=False)
    config = parse_config(f"state_dir: {tmp_path}\n", "test.yaml")
    assert config.llm_cache_path == tmp_path / "cache" / "llm"
    assert config.tts_cache_path.parent == config.llm_cache_path.parent
    monkeypatch.setenv("CACHE_DIRECTORY", "/var/cache/hearth:/elsewhere")
    assert config.llm_cache_path == Path("/var/cache/hearth/llm")
    assert config.tts_cache_path.parent == config.llm_cache_path.parent


def test_prompt_cache_is_on_by_default_and_turning_it_off_reloads_the_model(tmp_path):
    on = parse_config(f"state_dir: {tmp_path}\n", "test.yaml")
    off = parse_config(f"state_dir: {tmp_path}\nllm:\n  prompt_cache: false\n", "test.yaml")
    assert on.llm.prompt_cache and not off.llm.prompt_cache
    assert model_keys(on)["llm"] != model_keys(off)["llm"]
