"""Prometheus metrics: what a home server's dashboard and alerts need.

Counters and histograms are updated as things happen (requests, engine calls);
gauges that describe the present (queue depth, active sessions, loaded models,
TTS cache) are read from the running service at scrape time, so nothing has to
keep them in step. Each :class:`Metrics` has its own registry: nothing is
registered at import, and tests can build as many as they like.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from prometheus_client import CollectorRegistry, Counter, Histogram
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    Metric,
    StateSetMetricFamily,
)
from prometheus_client.exposition import CONTENT_TYPE_LATEST, generate_latest
from prometheus_client.registry import Collector

from . import __version__
from .errors import status_of

if TYPE_CHECKING:
    from .engines import Engines

CONTENT_TYPE = CONTENT_TYPE_LATEST
OBSERVED_ENGINES = ("asr", "tts", "llm")
"""Worker pools whose calls feed the latency histogram (VAD calls are per chunk, tiny)."""
LATENCY_BUCKETS = (0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0)
"""Seconds: from a fast GPU decode to a long file or reply on a small CPU."""


def outcome_of_code(code: str) -> str:
    """A request's outcome label from its error code ("": it succeeded)."""
    return outcome_of_status(status_of(code)) if code else "ok"


def outcome_of_status(status: int) -> str:
    """A request's outcome label from its HTTP status."""
    if status < 400:
        return "ok"
    if status in (429, 503):
        return "busy"
    if status >= 500:
        return "error"
    return "rejected"


@dataclass
class ServiceSnapshot:
    """What the scrape-time gauges read from the service."""

    state: str
    states: tuple[str, ...]
    engines: Engines | None
    sessions: dict[str, int] = field(default_factory=dict)


class Metrics:
    """The daemon's metrics; :meth:`render` gives the Prometheus text format."""

    def __init__(self, snapshot: Callable[[], ServiceSnapshot]) -> None:
        self.registry = CollectorRegistry()
        self.requests = Counter(
            "hearth_requests",
            "Requests served, by protocol and outcome (ok, rejected, busy, error).",
            ["protocol", "outcome"],
            registry=self.registry,
        )
        self.latency = Histogram(
            "hearth_engine_latency_seconds",
            "Engine calls from submission (queue wait included) to completion.",
            ["engine"],
            buckets=LATENCY_BUCKETS,
            registry=self.registry,
        )
        self.reloads = Counter(
            "hearth_reloads",
            "Configuration reloads (SIGHUP), by outcome (applied, refused, failed).",
            ["outcome"],
            registry=self.registry,
        )
        self.registry.register(_ServiceCollector(snapshot))

    def request(self, protocol: str, outcome: str) -> None:
        """Count one finished request."""
        self.requests.labels(protocol, outcome).inc()

    def observe_engine(self, engine: str, seconds: float) -> None:
        """Record one engine call's latency (called from worker threads)."""
        self.latency.labels(engine).observe(seconds)

    def watch(self, engines: Engines) -> None:
        """Time every ASR, TTS and LLM call of these engines."""
        for pool in (engines.asr_pool, engines.tts_pool, engines.llm_pool):
            if pool.name in OBSERVED_ENGINES:
                pool.observer = self.observe_engine

    def render(self) -> bytes:
        """Every metric in the Prometheus text exposition format."""
        return generate_latest(self.registry)


class _ServiceCollector(Collector):
    """Gauges read from the service on each scrape."""

    def __init__(self, snapshot: Callable[[], ServiceSnapshot]) -> None:
        self.snapshot = snapshot

    def collect(self) -> Iterator[Metric]:
        """Yield the present state."""
        now = self.snapshot()
        info = GaugeMetricFamily("hearth_build_info", "Hearth version.", labels=["version"])
        info.add_metric([__version__], 1)
        yield info
        yield StateSetMetricFamily(
            "hearth_state",
            "Where the daemon is in its life.",
            value={s: s == now.state for s in now.states},
        )
        sessions = GaugeMetricFamily(
            "hearth_active_sessions", "Sessions open now, by protocol.", labels=["protocol"]
        )
        for protocol, count in sorted(now.sessions.items()):
            sessions.add_metric([protocol], count)
        yield sessions
        yield from _engine_metrics(now.engines)


def _engine_metrics(engines: Engines | None) -> Iterator[Metric]:
    models = GaugeMetricFamily(
        "hearth_model_loaded",
        "Models loaded and serving (1), with their device.",
        labels=["engine", "kind", "device"],
    )
    queue = GaugeMetricFamily(
        "hearth_queue_depth", "Engine calls waiting for a free worker.", labels=["engine"]
    )
    running = GaugeMetricFamily(
        "hearth_engine_calls_running", "Engine calls running now.", labels=["engine"]
    )
    if engines is not None:
        for status in engines.status:
            models.add_metric([status.name, status.kind, status.device], 1)
        for pool in (engines.asr_pool, engines.vad_pool, engines.tts_pool, engines.llm_pool):
            queue.add_metric([pool.name], pool.queued)
            running.add_metric([pool.name], pool.pending - pool.queued)
    yield models
    yield queue
    yield running
    cache = engines.tts.cache if engines is not None and engines.tts is not None else None
    hits = CounterMetricFamily("hearth_tts_cache_hits", "TTS requests answered from the cache.")
    misses = CounterMetricFamily("hearth_tts_cache_misses", "TTS cache look-ups that missed.")
    size = GaugeMetricFamily("hearth_tts_cache_bytes", "Bytes of audio in the TTS cache.")
    entries = GaugeMetricFamily("hearth_tts_cache_entries", "Entries in the TTS cache.")
    if cache is not None:
        hits.add_metric([], cache.hits)
        misses.add_metric([], cache.misses)
        size.add_metric([], cache.size_bytes)
        entries.add_metric([], len(cache))
    yield from (hits, misses, size, entries)
