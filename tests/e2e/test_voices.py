"""The voice store: user voices in voices.dir are seen at once, bad folders are skipped."""

import shutil

import pytest

from daemon.engines.tts.base import SynthesisOptions
from daemon.engines.tts.voices import VoiceStore
from daemon.errors import UnknownVoice

pytestmark = pytest.mark.e2e


async def test_a_user_voice_appears_without_restart_and_speaks(engines, config):
    store = engines.tts.store
    bundled = store.get("en_US-joe-medium")
    assert bundled.source == "bundled" and bundled.read_only and bundled.sample_rate == 22050
    folder = config.voices_path / "kitchen-joe"
    folder.mkdir(parents=True)
    shutil.copy(bundled.model_path, folder / "kitchen-joe.onnx")
    shutil.copy(bundled.config_path, folder / "kitchen-joe.onnx.json")
    (folder / "voice.json").write_text('{"display_name": "Kitchen Joe"}')
    try:
        voice = store.get("kitchen-joe")
        assert voice.source == "user" and voice.display_name == "Kitchen Joe"
        audio = await engines.tts.synthesize("Hi.", SynthesisOptions(voice="kitchen-joe"), "pcm")
        assert len(audio) > 4000
    finally:
        shutil.rmtree(folder)
    with pytest.raises(UnknownVoice):
        store.get("kitchen-joe")


def test_broken_and_badly_named_folders_are_skipped(tmp_path):
    (tmp_path / "no-model").mkdir()
    (tmp_path / "..hidden").mkdir()
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "broken.onnx").write_bytes(b"x")
    (broken / "broken.onnx.json").write_text("{not json")
    names = [v.name for v in VoiceStore(tmp_path).list()]
    assert names == ["en_US-joe-medium"]
