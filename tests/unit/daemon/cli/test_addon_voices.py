"""The add-on's custom voices move into its own config folder (its backup keeps them)."""

from __future__ import annotations

from daemon.cli.entrypoint import adopt_voices


def test_voices_an_earlier_version_kept_in_share_are_copied_once(tmp_path):
    legacy, voices = tmp_path / "share" / "hearth" / "voices", tmp_path / "config" / "voices"
    (legacy / "kitchen").mkdir(parents=True)
    (legacy / "kitchen" / "kitchen.onnx").write_bytes(b"model")
    (legacy / "kitchen" / "kitchen.onnx.json").write_text("{}")
    assert adopt_voices(legacy, voices) == 1
    assert (voices / "kitchen" / "kitchen.onnx").read_bytes() == b"model"
    assert (legacy / "kitchen" / "kitchen.onnx").is_file()  # the old folder is left alone
    (voices / "kitchen" / "kitchen.onnx").write_bytes(b"changed since")
    assert adopt_voices(legacy, voices) == 0  # once: a folder with voices is never overwritten
    assert (voices / "kitchen" / "kitchen.onnx").read_bytes() == b"changed since"


def test_without_old_voices_the_folder_is_made_empty(tmp_path):
    assert adopt_voices(tmp_path / "missing", tmp_path / "voices") == 0
    assert (tmp_path / "voices").is_dir()
