"""Uploaded voice archives are read within their limits."""

import io
import tarfile
import zipfile

import pytest

from daemon.errors import HearthError
from daemon.voices.importer import MAX_ARCHIVE_MEMBERS, extract_archive


def zip_of(files: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in files.items():
            archive.writestr(name, data)
    return buf.getvalue()


def test_a_zip_bomb_is_refused_before_it_fills_memory():
    bomb = zip_of({f"part{i}.json": b"\0" * 4_000_000 for i in range(20)})
    assert len(bomb) < 200_000
    with pytest.raises(HearthError, match="too large"):
        extract_archive("bomb.zip", bomb, 10_000_000)


def test_too_many_members_are_refused():
    many = zip_of({f"f{i}.txt": b"x" for i in range(MAX_ARCHIVE_MEMBERS + 1)})
    with pytest.raises(HearthError, match="members"):
        extract_archive("many.zip", many, 10_000_000)


def test_the_voice_files_come_out_by_base_name():
    data = zip_of({"deep/../x/voice.onnx": b"model", "voice.onnx.json": b"{}", "readme": b"r"})
    assert extract_archive("v.zip", data, 1000) == {
        "voice.onnx": b"model",
        "voice.onnx.json": b"{}",
    }
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as archive:
        for name, payload in {"a/voice.onnx": b"m", "a/voice.onnx.json": b"{}"}.items():
            info = tarfile.TarInfo(name)
            info.size = len(payload)
            archive.addfile(info, io.BytesIO(payload))
    assert extract_archive("v.tgz", buf.getvalue(), 1000) == {
        "voice.onnx": b"m",
        "voice.onnx.json": b"{}",
    }
