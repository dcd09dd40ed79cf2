"""Config parsing: defaults, the documented file, and errors naming file, line and key."""

import dataclasses
import re
import subprocess
import sys
from pathlib import Path

import pytest

from daemon.config import Config, load_config, parse_config
from daemon.errors import ConfigError

ROOT = Path(__file__).resolve().parents[3]


def error_of(text: str) -> str:
    with pytest.raises(ConfigError) as info:
        parse_config(text, "config.yaml")
    return str(info.value)


def test_empty_file_is_the_defaults():
    assert parse_config("", "x.yaml") == Config()


def test_documented_default_matches_built_in_defaults():
    assert load_config(ROOT / "config.yaml") == Config()


def _keys(cls, prefix=""):
    for f in dataclasses.fields(cls):
        if f.metadata.get("internal"):
            continue
        yield prefix + f.name
        if dataclasses.is_dataclass(f.type if not isinstance(f.type, str) else None):
            yield from _keys(f.type, prefix + f.name + ".")


def test_every_key_is_documented_with_a_comment():
    lines = (ROOT / "config.yaml").read_text().splitlines()
    # Every "key:" line is preceded by a comment line, or is a section/mapping header.
    for i, line in enumerate(lines):
        m = re.match(r"^(\s*)([a-z_.]+):\s*(\S.*)?$", line)
        if not m or m.group(3) is None or m.group(3).startswith("#"):
            continue
        prev = lines[i - 1].strip()
        assert prev.startswith("#") or re.match(r"^[a-z_]+:", prev), f"undocumented: {line}"


def test_error_names_file_line_and_key():
    text = "asr:\n  models:\n    tiny:\n      path: tiny.en\n      beam_size: five\n"
    assert error_of(text + "  default_model: tiny\n") == (
        'config.yaml:5 asr.models.tiny.beam_size: must be an integer between 1 and 10, got "five"'
    )


def test_out_of_range_and_wrong_type():
    assert error_of("http:\n  port: 70000\n") == (
        "config.yaml:2 http.port: must be an integer between 1 and 65535, got 70000"
    )
    assert error_of("tts:\n  cache:\n    enabled: maybe\n") == (
        'config.yaml:3 tts.cache.enabled: must be true or false, got "maybe"'
    )
    assert "vad.engine: must be one of webrtc, silero" in error_of("vad:\n  engine: magic\n")
    assert "asr.models.tiny.en.device: must be auto, cpu, cuda or cuda:N" in error_of(
        "asr:\n  models:\n    tiny.en:\n      device: gpu\n"
    )


def test_unknown_key_and_duplicates():
    msg = error_of("http:\n  host: 127.0.0.1\n  prot: 1\n")
    assert msg.startswith("config.yaml:3 http.prot: unknown key")
    assert error_of("http:\n  port: 1\n  port: 2\n").startswith(
        "config.yaml:3 http.port: duplicate"
    )


def test_cross_checks():
    assert "asr.default_model: must name one of asr.models" in error_of(
        "asr:\n  default_model: large\n"
    )
    assert "llm.remote.base_url: must be set" in error_of("llm:\n  backend: remote\n")


def test_invalid_yaml_names_the_line():
    assert error_of("http:\n  port: [1, 2\n").startswith("config.yaml:")


def test_cli_exits_78_with_the_message(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("limits:\n  max_audio_s: -3\n")
    proc = subprocess.run(
        [sys.executable, "-m", "daemon.cli", "--config", str(bad), "check", "--no-load"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 78  # EX_CONFIG: the unit does not restart on it
    assert f"{bad}:2 limits.max_audio_s: must be a number between 1.0 and 3600.0" in proc.stderr


def test_missing_file(tmp_path):
    with pytest.raises(ConfigError, match="cannot read config"):
        load_config(tmp_path / "nope.yaml")


def test_env_variable(tmp_path, monkeypatch):
    path = tmp_path / "c.yaml"
    path.write_text("http:\n  port: 1234\n")
    monkeypatch.setenv("HEARTH_CONFIG", str(path))
    assert load_config(None).http.port == 1234


def test_hostile_yaml_is_a_config_error():
    assert error_of("asr: &x\n  models:\n    a: *x\n").startswith("config.yaml:")
    assert error_of("http:\n  host: \x07\n").startswith("config.yaml:2 invalid YAML")
    assert error_of("- 1\n- 2\n") == "config.yaml:1 (top level): must be a mapping, got a list"
    assert "speculative_silence_ms: must not exceed" in error_of(
        "vad:\n  speculative_silence_ms: 900\n  trailing_silence_ms: 700\n"
    )


def test_bare_on_and_off_are_words_not_booleans():
    # YAML 1.1 reads a bare `off` as false; the documented spelling must work.
    cfg = parse_config("vad:\n  turn: off\nasr:\n  partials: on\n", "c.yaml")
    assert cfg.vad.turn == "off" and cfg.asr.partials == "on"
    with pytest.raises(ConfigError, match="vad.turn: must be one of smart-turn, off, got true"):
        parse_config("vad:\n  turn: true\n", "c.yaml")


def test_the_decode_window_is_auto_or_a_bare_30():
    assert parse_config("", "c.yaml").asr.models["tiny.en"].window == "auto"
    cfg = parse_config("asr:\n  models:\n    tiny.en:\n      window: 30\n", "c.yaml")
    assert cfg.asr.models["tiny.en"].window == "30"
    cfg = parse_config("asr:\n  models:\n    tiny.en:\n      window: auto\n", "c.yaml")
    assert cfg.asr.models["tiny.en"].window == "auto"
    with pytest.raises(ConfigError, match="window: must be one of auto, 30, got 12"):
        parse_config("asr:\n  models:\n    tiny.en:\n      window: 12\n", "c.yaml")
