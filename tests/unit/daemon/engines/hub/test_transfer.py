"""One file fetched: the partial file, resuming with Range, checking, renaming.

Against the loopback hub (tests/loopback_hub.py): real HTTP on 127.0.0.1.
"""

from __future__ import annotations

import hashlib
import threading

import pytest

from daemon.engines.hub.transfer import (
    Expected,
    Limits,
    Offline,
    Stopped,
    fetch_file,
    partial_path,
    resume_from,
    verify,
)
from daemon.errors import ModelUnavailable
from tests.loopback_hub import LoopbackHub

DATA = bytes(range(256)) * 4000  # 1 MB: an LFS file, served by redirect
REPO = "owner/repo"
LIMITS = Limits(timeout_s=10, deadline_s=60, max_bytes=10_000_000, tries=3)


@pytest.fixture
def hub():
    with LoopbackHub() as running:
        running.add(REPO, "model.bin", DATA)
        yield running


def expected(data: bytes = DATA) -> Expected:
    return Expected(len(data), sha256=hashlib.sha256(data).hexdigest())


def url(hub: LoopbackHub) -> str:
    return f"{hub.url}/{REPO}/resolve/main/model.bin"


def test_a_whole_file_lands_in_place_and_no_partial_stays(hub, tmp_path):
    seen: list[int] = []
    target = tmp_path / "m" / "model.bin"
    fetch_file(url(hub), target, expected(), LIMITS, seen.append)
    assert target.read_bytes() == DATA
    assert not partial_path(target).exists()
    assert seen[-1] == len(DATA) and seen == sorted(seen)
    assert [r.range for r in hub.gets("model.bin")] == [""]


def test_a_broken_connection_is_resumed_with_a_range_request(hub, tmp_path):
    hub.cut(REPO, "model.bin", after=300_000)
    target = tmp_path / "model.bin"
    fetch_file(url(hub), target, expected(), LIMITS)
    assert target.read_bytes() == DATA
    assert [r.range for r in hub.gets("model.bin")] == ["", "bytes=300000-"]


def test_a_partial_file_from_before_is_resumed(hub, tmp_path):
    target = tmp_path / "model.bin"
    partial_path(target).write_bytes(DATA[:123_456])
    fetch_file(url(hub), target, expected(), LIMITS)
    assert target.read_bytes() == DATA
    assert [r.range for r in hub.gets("model.bin")] == ["bytes=123456-"]


def test_resume_from(tmp_path):
    partial = tmp_path / "x.partial"
    assert resume_from(partial, Expected(10)) == 0
    partial.write_bytes(b"12345")
    assert resume_from(partial, Expected(10)) == 5
    partial.write_bytes(b"x" * 11)
    assert resume_from(partial, Expected(10)) == 0 and not partial.exists()


def test_a_wrong_file_is_refused_and_removed(hub, tmp_path):
    target = tmp_path / "model.bin"
    wrong = Expected(len(DATA), sha256="0" * 64)
    with pytest.raises(ModelUnavailable, match="SHA-256"):
        fetch_file(url(hub), target, wrong, LIMITS)
    assert not target.exists() and not partial_path(target).exists()


def test_a_wrong_size_is_refused(hub, tmp_path):
    target = tmp_path / "model.bin"
    with pytest.raises(ModelUnavailable, match="longer than"):
        fetch_file(url(hub), target, Expected(len(DATA) - 1), LIMITS)
    assert not target.exists()


def test_too_large_is_refused_before_any_request(hub, tmp_path):
    small = Limits(max_bytes=1000)
    with pytest.raises(ModelUnavailable, match="over the limit"):
        fetch_file(url(hub), tmp_path / "model.bin", expected(), small)
    assert hub.requests == []


def test_a_stop_leaves_the_partial_file_to_resume(hub, tmp_path):
    reached, release = hub.stall(
        REPO, "model.bin", after=262_144
    )  # whole blocks: a read waits for a block
    cancel, written = threading.Event(), threading.Event()
    target = tmp_path / "model.bin"
    errors: list[BaseException] = []

    def progress(done: int) -> None:
        if done >= 262_144:
            written.set()

    def run() -> None:
        try:
            fetch_file(url(hub), target, expected(), Limits(timeout_s=5, tries=1), progress, cancel)
        except BaseException as exc:  # noqa: BLE001 - handed to the test
            errors.append(exc)

    thread = threading.Thread(target=run)
    thread.start()
    assert reached.wait(10) and written.wait(10)
    cancel.set()
    release.set()  # the connection ends: the next read sees the stop first
    thread.join(10)
    assert errors and isinstance(errors[0], (Stopped, ModelUnavailable))
    assert not target.exists()
    assert partial_path(target).stat().st_size == 262_144


def test_offline_by_environment_and_by_refusal(hub, tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(Offline, match="HF_HUB_OFFLINE"):
        fetch_file(url(hub), tmp_path / "model.bin", expected(), LIMITS)
    assert hub.requests == []
    monkeypatch.delenv("HF_HUB_OFFLINE")
    closed = url(hub).replace(str(hub.port), "9")  # discard port: refused
    with pytest.raises(Offline, match="cannot reach"):
        fetch_file(closed, tmp_path / "model.bin", expected(), LIMITS)


def test_verify_checks_md5_and_git_blob_ids(tmp_path):
    path = tmp_path / "f"
    path.write_bytes(b"hello\n")
    verify(path, Expected(6, md5=hashlib.md5(b"hello\n").hexdigest()))
    verify(path, Expected(6, git_sha1="ce013625030ba8dba906f756967f9e9ca394464a"))
    with pytest.raises(ModelUnavailable, match="MD5"):
        verify(path, Expected(6, md5="0" * 32))
    with pytest.raises(ModelUnavailable, match="git blob id"):
        verify(path, Expected(6, git_sha1="0" * 40))
    with pytest.raises(ModelUnavailable, match="6 bytes, expected 7"):
        verify(path, Expected(7))
