"""Prometheus metrics: what a home server's dashboard and alerts need.

Counters and histograms are updated as things happen (requests, engine calls);
gauges that describe the present (queue depth, active sessions, loaded models,
TTS cache) are read from the running service at scrape time, so nothing has to
keep them in step. Each :class:`Metrics` has its own registry: nothing is
registered at import, and tests can build as many as they like.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Protocol

from prometheus_client import CollectorRegistry, Counter, Histogram, ProcessCollector
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    Metric,
    StateSetMetricFamily,
)
from prometheus_client.exposition import CONTENT_TYPE_LATEST, generate_latest
from prometheus_client.registry import Collector

from daemon import __version__
from daemon.errors import status_of
from daemon.ops import memory

CONTENT_TYPE = CONTENT_TYPE_LATEST
OBSERVED_ENGINES = ("asr", "turn", "tts", "llm")
"""Worker pools whose calls feed the latency histogram: the decode, the turn model's
check, the voice and the local LLM (VAD calls are per chunk, tiny)."""
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


class ObservedPool(Protocol):
    """A worker pool whose calls can be timed (``daemon.engines.workers.WorkerPool``)."""

    name: str
    observer: Callable[[str, float], None] | None


@dataclass(frozen=True)
class RemoteGauges:
    """Remote endpoints and the requests their fallbacks served."""

    endpoints: tuple[tuple[str, str, str, bool, int, int, int], ...] = ()
    """(kind, model, url, healthy, in flight, requests, failures) of each endpoint."""
    fallbacks: tuple[tuple[str, str, str, int], ...] = ()
    """(kind, model, reason, requests) served by a local fallback."""


@dataclass(frozen=True)
class EngineGauges:
    """What the engines look like now, as plain numbers for the scrape."""

    models: tuple[tuple[str, str, str], ...] = ()
    """(engine, kind, device) of each loaded model."""
    pools: tuple[tuple[str, int, int], ...] = ()
    """(engine, calls queued, calls running) of each worker pool."""
    cache: tuple[int, int, int, int, int] | None = None
    """TTS cache (hits, misses, bytes, entries, damaged entries), None without a cache."""
    remote: RemoteGauges = field(default_factory=RemoteGauges)
    asr_windows: tuple[tuple[str, str, str, int], ...] = ()
    """(model, window seconds, guard verdict, decodes) of windowed Whisper decodes."""


@dataclass
class ServiceSnapshot:
    """What the scrape-time gauges read from the service."""

    state: str
    states: tuple[str, ...]
    engines: EngineGauges | None
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
        # process_resident_memory_bytes and the rest of the standard process metrics:
        # a household's Prometheus sees a slope in memory over weeks.
        ProcessCollector(registry=self.registry)

    def request(self, protocol: str, outcome: str) -> None:
        """Count one finished request."""
        self.requests.labels(protocol, outcome).inc()

    def observe_engine(self, engine: str, seconds: float) -> None:
        """Record one engine call's latency (called from worker threads)."""
        self.latency.labels(engine).observe(seconds)

    def watch(self, pools: Iterable[ObservedPool]) -> None:
        """Time every ASR, turn-check, TTS and LLM call of these worker pools."""
        for pool in pools:
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
        yield from _heap_metrics()
        yield from _engine_metrics(now.engines)


def _heap_metrics() -> Iterator[Metric]:
    """glibc's heap: memory in use, and freed memory the allocator still holds."""
    heap = memory.native_heap()
    if heap is None:
        return
    family = GaugeMetricFamily(
        "hearth_native_heap_bytes",
        "The C allocator's heap: in_use (allocated), free (freed but held), mapped "
        "(large allocations in their own mappings, part of in_use).",
        labels=["kind"],
    )
    family.add_metric(["in_use"], heap.in_use)
    family.add_metric(["free"], heap.free)
    family.add_metric(["mapped"], heap.mapped)
    yield family


def _engine_metrics(engines: EngineGauges | None) -> Iterator[Metric]:
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
    now = engines or EngineGauges()
    for model in now.models:
        models.add_metric(list(model), 1)
    for name, queued, busy in now.pools:
        queue.add_metric([name], queued)
        running.add_metric([name], busy)
    yield models
    yield queue
    yield running
    hits = CounterMetricFamily("hearth_tts_cache_hits", "TTS requests answered from the cache.")
    misses = CounterMetricFamily("hearth_tts_cache_misses", "TTS cache look-ups that missed.")
    size = GaugeMetricFamily("hearth_tts_cache_bytes", "Bytes of audio in the TTS cache.")
    entries = GaugeMetricFamily("hearth_tts_cache_entries", "Entries in the TTS cache.")
    corrupt = CounterMetricFamily(
        "hearth_tts_cache_corrupt",
        "Damaged TTS cache entries found, deleted and synthesized again.",
    )
    if now.cache is not None:
        hit_count, miss_count, cache_bytes, count, corrupt_count = now.cache
        corrupt.add_metric([], corrupt_count)
        hits.add_metric([], hit_count)
        misses.add_metric([], miss_count)
        size.add_metric([], cache_bytes)
        entries.add_metric([], count)
    yield from (hits, misses, size, entries, corrupt)
    windows = CounterMetricFamily(
        "hearth_asr_window_decodes",
        "Whisper decodes in a window cut to the utterance, by window (s) and the guard's"
        " verdict; every verdict but ok was decoded again with the full 30 s window.",
        labels=["model", "window", "verdict"],
    )
    for asr, window, verdict, decodes in now.asr_windows:
        windows.add_metric([asr, window, verdict], decodes)
    yield windows
    yield from _remote_metrics(now.remote)


def _remote_metrics(remote: RemoteGauges) -> Iterator[Metric]:
    labels = ["kind", "model", "endpoint"]
    up = GaugeMetricFamily(
        "hearth_remote_endpoint_up", "Remote endpoints in the choice (1) or down.", labels=labels
    )
    flight = GaugeMetricFamily(
        "hearth_remote_in_flight", "Requests in flight to a remote endpoint.", labels=labels
    )
    requests = CounterMetricFamily(
        "hearth_remote_requests", "Requests sent to a remote endpoint.", labels=labels
    )
    failures = CounterMetricFamily(
        "hearth_remote_failures", "Requests a remote endpoint failed.", labels=labels
    )
    for kind, model, url, healthy, in_flight, sent, failed in remote.endpoints:
        up.add_metric([kind, model, url], 1 if healthy else 0)
        flight.add_metric([kind, model, url], in_flight)
        requests.add_metric([kind, model, url], sent)
        failures.add_metric([kind, model, url], failed)
    fallbacks = CounterMetricFamily(
        "hearth_remote_fallbacks",
        "Requests a local fallback served because every remote endpoint failed, by reason.",
        labels=["kind", "model", "reason"],
    )
    for kind, model, reason, count in remote.fallbacks:
        fallbacks.add_metric([kind, model, reason], count)
    yield from (up, flight, requests, failures, fallbacks)
