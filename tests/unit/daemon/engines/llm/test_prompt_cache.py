"""Saved prompt states: bounded in memory, round trip on disk, bad files rebuilt."""

import logging
import os

import pytest

from daemon.engines.llm.prompt_cache import (
    MAGIC,
    PromptCache,
    SavedPrefix,
    common_prefix,
    model_identity,
)


def saved(tokens: range | list[int], size: int = 100, fill: int = 7) -> SavedPrefix:
    return SavedPrefix(tuple(tokens), bytes([fill]) * size)


@pytest.fixture
def model(tmp_path):
    path = tmp_path / "model.gguf"
    path.write_bytes(b"GGUF" + bytes(100))
    return path


def test_memory_keeps_the_most_recently_used_few(tmp_path):
    cache = PromptCache("model", max_entries=2)
    a, b, c = saved([1, 2]), saved([3, 4]), saved([5, 6])
    cache.put(a)
    cache.put(b)
    assert cache.get([1, 2]) == a  # a is now the most recent
    cache.put(c)
    assert len(cache) == 2
    assert cache.get([3, 4]) is None  # b was dropped
    assert cache.get([1, 2]) == a and cache.get([5, 6]) == c
    assert (cache.ram_hits, cache.misses) == (3, 1)


def test_memory_is_bounded_in_bytes():
    cache = PromptCache("model", max_entries=10, max_bytes=1000)
    for n in range(5):
        cache.put(saved([n], size=400))
    assert len(cache) == 2 and cache.ram_bytes <= 1000
    cache.put(saved([9], size=2000))  # larger than the whole budget: not kept
    assert cache.get([9]) is None and len(cache) == 2


def test_best_match_is_the_longest_shared_prefix():
    cache = PromptCache("model")
    short, long = saved([1, 2, 3]), saved([1, 2, 3, 4, 5, 9])
    cache.put(short)
    cache.put(long)
    assert cache.best_match([1, 2, 3, 4, 5, 6, 7]) == (long, 5)
    assert cache.best_match([1, 2, 8]) in ((short, 2), (long, 2))
    assert cache.best_match([7, 7]) == (None, 0)
    assert common_prefix([1, 2, 3], [1, 2]) == 2


def test_disk_round_trip_in_a_new_process(tmp_path, model):
    identity = model_identity(model, 2048, "0.3.36")
    first = PromptCache(identity, tmp_path / "llm")
    state = bytes(range(256)) * 40
    first.put(SavedPrefix((10, 20, 30), state))
    files = list((tmp_path / "llm").iterdir())
    assert len(files) == 1 and files[0].suffix == ".kv"
    assert files[0].read_bytes().startswith(MAGIC)
    assert not [p for p in files if p.name.startswith(".tmp-")]

    second = PromptCache(identity, tmp_path / "llm")  # nothing in memory
    loaded = second.get([10, 20, 30])
    assert loaded == SavedPrefix((10, 20, 30), state)
    assert (second.disk_hits, second.misses) == (1, 0)
    assert second.get([10, 20, 30]) == loaded and second.ram_hits == 1
    assert second.get([10, 20]) is None  # another prefix: another file


def test_memory_only_without_a_folder(tmp_path):
    cache = PromptCache("model")
    cache.put(saved([1, 2]))
    assert cache.path([1, 2]) is None and cache.disk_bytes == 0


def test_the_key_changes_with_the_tokens_and_the_model(tmp_path, model):
    identity = model_identity(model, 2048, "0.3.36")
    cache = PromptCache(identity)
    assert cache.key([1, 2, 3]) == PromptCache(identity).key([1, 2, 3])
    assert cache.key([1, 2, 3]) != cache.key([1, 2, 4])
    assert cache.key([1, 2, 3]) != cache.key([1, 2])
    assert PromptCache(model_identity(model, 4096, "0.3.36")).key([1]) != cache.key([1])
    assert PromptCache(model_identity(model, 2048, "0.3.37")).key([1]) != cache.key([1])
    model.write_bytes(b"GGUF" + bytes(200))  # another model file at the same path
    assert PromptCache(model_identity(model, 2048, "0.3.36")).key([1]) != cache.key([1])
    before = model_identity(model, 2048)
    stat = model.stat()
    os.utime(model, ns=(stat.st_atime_ns, stat.st_mtime_ns + 10**9))  # rewritten in place
    assert model_identity(model, 2048) != before


def test_another_models_file_is_not_used(tmp_path, model):
    folder = tmp_path / "llm"
    PromptCache("model A", folder).put(saved([1, 2, 3]))
    other = PromptCache("model B", folder)
    assert other.get([1, 2, 3]) is None  # another key: another file name
    # The same name with another identity inside (renamed by hand): refused too.
    (path,) = folder.iterdir()
    path.rename(other.path([1, 2, 3]))
    assert other.get([1, 2, 3]) is None and other.corrupt == 1


@pytest.mark.parametrize(
    "damage",
    [
        lambda data: data[: len(data) // 2],  # truncated
        lambda data: data[:-1] + bytes([data[-1] ^ 0xFF]),  # a flipped byte in the state
        lambda data: b"NOTKV" + data[5:],  # not our file
        lambda data: data[:12] + b"{broken" + data[19:],  # an unreadable header
        lambda data: b"",
    ],
)
def test_a_corrupt_file_is_ignored_logged_and_rebuilt(tmp_path, caplog, damage):
    folder = tmp_path / "llm"
    PromptCache("model", folder).put(saved([1, 2, 3], size=500))
    (path,) = folder.iterdir()
    path.write_bytes(damage(path.read_bytes()))

    cache = PromptCache("model", folder)
    with caplog.at_level(logging.WARNING):
        assert cache.get([1, 2, 3]) is None
    assert "rebuilt" in caplog.text and cache.corrupt == 1
    assert not path.exists()
    cache.put(saved([1, 2, 3], size=500))  # the caller evaluates it again
    assert PromptCache("model", folder).get([1, 2, 3]) == saved([1, 2, 3], size=500)


def test_the_folder_is_kept_under_its_limit(tmp_path):
    folder = tmp_path / "llm"
    cache = PromptCache("model", folder, max_disk_bytes=3000)
    for n in range(6):
        cache.put(saved([n], size=900))
        path = cache.path([n])
        assert path is not None
        os.utime(path, ns=(n * 10**9, n * 10**9))  # written in this order
    assert cache.disk_bytes <= 3000
    kept = PromptCache("model", folder)
    assert kept.get([5]) is not None and kept.get([0]) is None
    cache.put(saved([99], size=5000))  # larger than the whole folder may be: not written
    assert cache.path([99]) is not None and not cache.path([99]).exists()


def test_an_unwritable_folder_only_logs(tmp_path, caplog):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    cache = PromptCache("model", blocker / "llm")
    with caplog.at_level(logging.WARNING):
        cache.put(saved([1, 2]))
    assert "Could not save" in caplog.text
    assert cache.get([1, 2]) is not None  # still in memory
