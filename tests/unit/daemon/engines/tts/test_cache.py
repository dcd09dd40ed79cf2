"""The TTS disk cache: identical bytes back, LRU eviction under a size cap, persistence."""

from daemon.engines.tts.cache import TtsCache, cache_key


def test_hit_returns_identical_bytes(tmp_path):
    cache = TtsCache(tmp_path, 1000)
    key = cache_key(text="hi", voice="v")
    assert cache.get(key) is None
    cache.put(key, b"abc" * 10)
    assert cache.get(key) == b"abc" * 10
    assert (cache.hits, cache.misses) == (1, 1)


def test_keys_differ_by_every_part():
    base = {"text": "hi", "voice": "a", "speed": 1.0, "fmt": "wav"}
    keys = {cache_key(**base)}
    for field, value in [("text", "ho"), ("voice", "b"), ("speed", 1.1), ("fmt", "flac")]:
        keys.add(cache_key(**(base | {field: value})))
    assert len(keys) == 5


def test_lru_eviction_keeps_recently_used(tmp_path):
    cache = TtsCache(tmp_path, 300)
    for name in "abc":
        cache.put(name, name.encode() * 100)
    assert cache.get("a") is not None  # a is now the most recent
    cache.put("d", b"d" * 100)
    assert cache.get("b") is None
    assert cache.get("a") is not None and cache.get("d") is not None
    assert cache.size_bytes <= 300 and len(cache) == 3


def test_survives_restart_and_respects_a_smaller_cap(tmp_path):
    cache = TtsCache(tmp_path, 1000)
    cache.put("x", b"1" * 400)
    cache.put("y", b"2" * 400)
    reopened = TtsCache(tmp_path, 500)
    assert len(reopened) == 1 and reopened.get("y") == b"2" * 400


def test_oversized_entry_is_not_stored(tmp_path):
    cache = TtsCache(tmp_path, 10)
    cache.put("big", b"x" * 11)
    assert cache.get("big") is None and cache.size_bytes == 0
