"""A broken user voice folder is skipped; the rest of the store keeps working."""

import json

from daemon.voices import VoiceStore

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
