"""Which folder an ASR model loads now: its own, the stand-in's, or a clear refusal."""

from __future__ import annotations

import pytest

from daemon.config import parse_config
from daemon.engines.models import embedded_whisper
from daemon.errors import ModelUnavailable
from daemon.runtime.standins import whisper_or_stand_in


def config_for(tmp_path, path: str, allow: bool = True):
    return parse_config(
        f"state_dir: {tmp_path}\nasr:\n  allow_download: {str(allow).lower()}\n"
        f"  default_model: m\n  models:\n    m:\n      path: {path}\n",
        "c.yaml",
    )


def test_a_model_on_disk_is_its_own_folder(tmp_path):
    folder = tmp_path / "models" / "asr" / "small.en"
    folder.mkdir(parents=True)
    (folder / "model.bin").write_bytes(b"x")
    assert whisper_or_stand_in(config_for(tmp_path, "small.en"), "m", "small.en") == (
        folder,
        False,
    )


def test_a_name_not_on_disk_loads_the_stand_in_and_is_to_be_fetched(tmp_path):
    path, fetch = whisper_or_stand_in(config_for(tmp_path, "turbo"), "m", "turbo")
    assert (path, fetch) == (embedded_whisper("tiny.en"), True)


def test_a_typo_stops_at_once(tmp_path):
    with pytest.raises(ModelUnavailable, match="neither a folder, a Whisper name"):
        whisper_or_stand_in(config_for(tmp_path, "smal.en"), "m", "smal.en")


def test_without_downloads_a_missing_model_stops(tmp_path):
    with pytest.raises(ModelUnavailable, match="asr.allow_download is false"):
        whisper_or_stand_in(config_for(tmp_path, "small.en", allow=False), "m", "small.en")
