"""A damaged TTS cache entry is never served: it is deleted, counted and synthesized again."""

import asyncio
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

from daemon.engines.tts.base import SynthesisOptions
from daemon.engines.tts.cache import SUFFIX, TtsCache
from daemon.engines.tts.service import TtsService
from daemon.engines.workers import WorkerPool
from daemon.ops.metrics import EngineGauges, Metrics, ServiceSnapshot
from tests.fakes import fake_config, fake_engines


def test_a_truncated_entry_is_a_miss_and_is_deleted(tmp_path: Path) -> None:
    cache = TtsCache(tmp_path, 10_000)
    cache.put("k", b"RIFF" + b"a" * 400)
    path = tmp_path / f"k{SUFFIX}"
    path.write_bytes(path.read_bytes()[:200])  # cut short, as by a full disk or a crash
    assert cache.get("k") is None
    assert cache.corrupt == 1 and not path.exists() and len(cache) == 0
    cache.put("k", b"RIFF" + b"a" * 400)
    assert cache.get("k") == b"RIFF" + b"a" * 400


def test_a_changed_or_foreign_entry_is_refused(tmp_path: Path) -> None:
    cache = TtsCache(tmp_path, 10_000)
    cache.put("k", b"x" * 100)
    path = tmp_path / f"k{SUFFIX}"
    blob = bytearray(path.read_bytes())
    blob[-1] ^= 0xFF
    path.write_bytes(bytes(blob))
    assert cache.get("k") is None
    (tmp_path / f"old{SUFFIX}").write_bytes(b"RIFF raw audio without a header")
    reopened = TtsCache(tmp_path, 10_000)
    assert reopened.get("old") is None and reopened.corrupt == 1


async def test_the_service_synthesizes_again_and_metrics_count_it(tmp_path: Path) -> None:
    fakes = fake_engines(fake_config(tmp_path))
    cache = TtsCache(tmp_path / "cache", 1_000_000)
    tts = TtsService(
        fakes.tts,
        fakes.engines.voices,
        WorkerPool("tts-test", 1, 4),
        cache,
        fakes.engines.config.tts.default_voice,
        0.0,
        1000,
    )
    try:
        async with asyncio.timeout(10):
            first = await tts.synthesize("Hello there, house.", SynthesisOptions(), "wav")
            (entry,) = (tmp_path / "cache").glob(f"*{SUFFIX}")
            entry.write_bytes(entry.read_bytes()[:100])
            again = await tts.synthesize("Hello there, house.", SynthesisOptions(), "wav")
        assert again == first
        assert len(fakes.tts.spoken) == 2  # synthesized twice: the damaged copy was not used
        metrics = Metrics(
            lambda: ServiceSnapshot(
                "ready",
                ("ready",),
                EngineGauges(
                    cache=(cache.hits, cache.misses, cache.size_bytes, len(cache), cache.corrupt)
                ),
            )
        )
        values = {
            s.name: s.value
            for family in text_string_to_metric_families(metrics.render().decode())
            for s in family.samples
        }
        assert values["hearth_tts_cache_corrupt_total"] == 1
    finally:
        tts.pool.close()
        fakes.close()
