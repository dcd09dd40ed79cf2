"""A broken user voice folder is skipped; the rest of the store keeps working."""

import json

import pytest

from daemon.engines.tts.voices import DEFAULT_KEYS, VoiceStore
from daemon.errors import InvalidRequest, UnknownVoice

PIPER_CONFIG = {"audio": {"sample_rate": 22050}, "language": {"code": "en_US"}}


def make_voice(root, name, meta=None):
    folder = root / name
    folder.mkdir(parents=True)
    (folder / "v.onnx").write_bytes(b"not loaded by a listing")
    (folder / "v.onnx.json").write_text(json.dumps(PIPER_CONFIG))
    if meta is not None:
        (folder / "voice.json").write_text(json.dumps(meta))


def test_bad_metadata_skips_only_that_voice(tmp_path):
    make_voice(tmp_path, "good", {"display_name": "Good", "defaults": {"speed": 0.9}})
    make_voice(tmp_path, "bad-speed", {"defaults": {"speed": "fast"}})
    make_voice(tmp_path, "bad-meta", ["not", "an", "object"])
    make_voice(tmp_path, "bad-defaults", {"defaults": 5})
    make_voice(tmp_path, "out-of-range", {"defaults": {"volume": 99}})
    (tmp_path / "incomplete").mkdir()
    store = VoiceStore(tmp_path)
    users = {v.name: v for v in store.list() if v.source == "user"}
    assert set(users) == {"good"}
    assert users["good"].speed == 0.9 and users["good"].display_name == "Good"
    assert store.get("en_US-joe-medium").source == "bundled"


def test_a_voice_is_chosen_by_language(tmp_path):
    store = VoiceStore(tmp_path)
    assert store.for_language("en", "en_US-joe-medium") == "en_US-joe-medium"
    assert store.for_language("en-GB", "nobody") == "en_US-joe-medium"
    assert store.for_language("de", "en_US-joe-medium") is None


def test_get_reads_one_folder_and_keeps_the_error(tmp_path):
    make_voice(tmp_path, "good", {"defaults": {"volume": 0.5}})
    make_voice(tmp_path, "bad-speed", {"defaults": {"speed": "fast"}})
    make_voice(tmp_path.parent / "outside", "x")
    store = VoiceStore(tmp_path)
    assert store.get("good").volume == 0.5 and store.get("good").speed == 1.0
    for name in ("bad-speed", "missing", "../outside/x", str(tmp_path / "good")):
        with pytest.raises(UnknownVoice, match="voices: .*good"):
            store.get(name)


def test_update_checks_defaults_and_bundled_voices(tmp_path):
    make_voice(tmp_path, "good")
    store = VoiceStore(tmp_path)
    voice = store.update("good", "Good", {"speed": 1.5, "noise_scale": 0.3})
    assert (voice.display_name, voice.speed, voice.noise_scale) == ("Good", 1.5, 0.3)
    with pytest.raises(InvalidRequest, match="between 0.25 and 4"):
        store.update("good", None, {"speed": 9})
    with pytest.raises(InvalidRequest, match="bundled"):
        store.update("en_US-joe-medium", None, {"speed": 1.0})
    assert DEFAULT_KEYS == ("default_speaker", "speed", "noise_scale", "noise_w_scale", "volume")


def test_an_unreadable_voice_folder_still_offers_the_bundled_voices(tmp_path, monkeypatch, caplog):
    # A share the daemon's user cannot enter (a mount left root's, mode 0700): describe
    # and every voice listing go on with the bundled voices, and the log says why.
    make_voice(tmp_path, "good")
    store = VoiceStore(tmp_path)

    iterdir = type(tmp_path).iterdir

    def refused(self):
        if self == tmp_path:
            raise PermissionError(13, "Permission denied", str(self))
        return iterdir(self)

    monkeypatch.setattr(type(tmp_path), "iterdir", refused)
    assert [v.name for v in store.list()] == ["en_US-joe-medium"]
    assert "cannot be read: Permission denied" in caplog.text
