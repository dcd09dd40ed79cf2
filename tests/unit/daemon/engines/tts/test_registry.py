"""TTS engines that plug in: ``tts.backend`` to a backend, and the store offering the
voices a plug-in engine brings instead of Piper's voice files."""

from __future__ import annotations

from pathlib import Path

import pytest

from daemon.config import RemoteTtsConfig, parse_config
from daemon.engines.tts.registry import PIPER, TtsBackend, tts_backend
from daemon.engines.tts.remote import voice_infos
from daemon.engines.tts.voices import VoiceStore
from daemon.errors import ConfigError, InvalidVoice

BUNDLED = "en_US-joe-medium"


def test_piper_is_the_default_backend() -> None:
    config = parse_config("", "test")
    assert config.tts.backend == "piper"
    assert tts_backend(config.tts.backend) is PIPER and PIPER.voice_files


def test_a_plug_in_is_a_module_whose_backend_is_found() -> None:
    backend = tts_backend("tests.toy_tts")
    assert isinstance(backend, TtsBackend) and not backend.voice_files
    assert {v.name for v in backend.voices()} == {"toy-espeak", "toy-espeak-gb"}
    assert backend.source is not None and backend.source.name == "toy_tts.py"


@pytest.mark.parametrize(
    ("name", "problem"),
    [
        ("tests.no_such_module", "cannot be imported"),
        ("tests.helpers", "not a TTS engine"),
    ],
)
def test_a_backend_that_is_no_engine_is_named(name: str, problem: str) -> None:
    with pytest.raises(ConfigError, match=problem):
        tts_backend(name)


@pytest.mark.parametrize("value", ["../toy", "tests/toy_tts.py", "toy tts", ""])
def test_the_config_takes_only_a_name_or_a_module(value: str) -> None:
    with pytest.raises(ConfigError, match="tts.backend"):
        parse_config(f"tts:\n  backend: '{value}'\n", "test")


def test_a_plug_ins_voices_replace_the_voice_files(tmp_path: Path) -> None:
    user = tmp_path / "voices"
    store = VoiceStore(user)
    assert BUNDLED in [v.name for v in store.list()]
    toy = tts_backend("tests.toy_tts")
    store.use_engine(toy.voices(), toy.voice_files)
    assert [v.name for v in store.list()] == ["toy-espeak", "toy-espeak-gb"]
    assert store.find(BUNDLED) is None and store.recall(BUNDLED) is None
    assert store.lookup("toy-espeak").source == "engine"
    # A remote voice may not take an engine voice's name; beside it, it is listed.
    clash = RemoteTtsConfig(name="box", base_url="http://127.0.0.1:9/v1", voices=["toy-espeak"])
    with pytest.raises(InvalidVoice, match="prefix"):
        store.set_remote(voice_infos(clash))
    box = RemoteTtsConfig(
        name="box", base_url="http://127.0.0.1:9/v1", voices=["af"], prefix="box-"
    )
    store.set_remote(voice_infos(box))
    assert "box-af" in [v.name for v in store.list()]
    # Back on Piper, the voice files are offered again.
    store.use_engine([], files=True)
    assert BUNDLED in [v.name for v in store.list()] and store.find("toy-espeak") is None
