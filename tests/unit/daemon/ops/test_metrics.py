"""/metrics: the Prometheus text parses, requests are counted, the API key applies."""

from types import SimpleNamespace

from fastapi.testclient import TestClient
from prometheus_client.parser import text_string_to_metric_families

from daemon.config import parse_config
from daemon.ops.inflight import InFlight
from daemon.ops.metrics import Metrics, ServiceSnapshot, outcome_of_code, outcome_of_status
from protocols.http.app import create_app
from protocols.http.metrics import protocol_of


class FakeService:
    """Loading: no engines; metrics and in-flight tracking like the real service."""

    def __init__(self, api_key: str = "") -> None:
        self.config = parse_config(f'auth:\n  api_key: "{api_key}"\n', "test.yaml")
        self.loaded = False
        self.inflight = InFlight()
        self.metrics = Metrics(
            lambda: ServiceSnapshot(
                "loading", ("loading", "ready"), None, {"wyoming": 2} | self.inflight.active()
            )
        )

    def health(self):
        return False, {"status": "loading"}


def samples(text: str) -> dict[tuple[str, tuple], float]:
    out = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


def test_metrics_parse_and_count_a_request():
    service = FakeService()
    client = TestClient(create_app(service))
    before = samples(client.get("/metrics").text)
    assert before[("hearth_state", (("hearth_state", "loading"),))] == 1
    assert before[("hearth_active_sessions", (("protocol", "wyoming"),))] == 2
    resp = client.get("/api/tts", params={"text": "hi"})
    assert resp.status_code == 503  # still loading
    assert len(resp.headers["x-request-id"]) == 12
    after = samples(client.get("/metrics").text)
    key = ("hearth_requests_total", (("outcome", "busy"), ("protocol", "willow")))
    assert after[key] == 1
    assert client.get("/api/ping").headers.get("x-request-id") is None  # probes: uncounted


def test_a_sane_client_request_id_is_kept():
    client = TestClient(create_app(FakeService()))
    resp = client.get("/v1/models", headers={"X-Request-Id": "abc-123"})
    assert resp.headers["x-request-id"] == "abc-123"
    evil = client.get("/v1/models", headers={"X-Request-Id": "a b\x7f"})
    assert evil.headers["x-request-id"] != "a b\x7f"


def test_the_served_content_type_is_one_the_openapi_schema_lists():
    client = TestClient(create_app(FakeService()))
    operation = client.get("/openapi.json").json()["paths"]["/metrics"]["get"]
    documented = operation["responses"]["200"]["content"]
    served = client.get("/metrics").headers["content-type"]
    assert served.startswith("text/plain")  # the Prometheus text format, not JSON
    assert served in documented, f"served {served!r}, documented {sorted(documented)}"


def test_metrics_need_the_api_key_when_one_is_set():
    client = TestClient(create_app(FakeService("k")))
    assert client.get("/metrics").status_code == 401
    assert client.get("/metrics", headers={"Authorization": "Bearer k"}).status_code == 200


def test_metrics_can_be_turned_off():
    service = FakeService()
    service.config = parse_config("metrics:\n  enabled: false\n", "test.yaml")
    assert TestClient(create_app(service)).get("/metrics").status_code == 404


def test_outcomes_and_protocols():
    assert [outcome_of_status(s) for s in (200, 404, 413, 503, 500)] == [
        "ok",
        "rejected",
        "rejected",
        "busy",
        "error",
    ]
    assert [outcome_of_code(c) for c in ("", "unknown-voice", "busy", "internal-error")] == [
        "ok",
        "rejected",
        "busy",
        "error",
    ]
    assert protocol_of("/v1/audio/speech") == "openai"
    assert protocol_of("/api/willow") == "willow"
    assert protocol_of("/api/rtc/asr") == "webrtc"
    assert protocol_of("/healthz") is None and protocol_of("/api/ping") is None


def test_engine_latency_is_observed_from_the_worker_pools():
    import asyncio

    from daemon.engines.workers import WorkerPool

    metrics = Metrics(lambda: ServiceSnapshot("ready", ("ready",), None))
    engines = SimpleNamespace(
        asr_pool=WorkerPool("asr", 1, 4),
        tts_pool=WorkerPool("tts", 1, 4),
        llm_pool=WorkerPool("llm", 1, 4),
    )
    metrics.watch([engines.asr_pool, engines.tts_pool, engines.llm_pool])
    asyncio.run(engines.asr_pool.run(sum, [1, 2]))
    for pool in (engines.asr_pool, engines.tts_pool, engines.llm_pool):
        pool.close()
    values = samples(metrics.render().decode())
    assert values[("hearth_engine_latency_seconds_count", (("engine", "asr"),))] == 1


def test_windowed_decodes_are_counted_by_window_and_verdict():
    from daemon.ops.metrics import EngineGauges

    gauges = EngineGauges(asr_windows=(("tiny.en", "10", "ok", 7), ("tiny.en", "10", "repeats", 1)))
    metrics = Metrics(lambda: ServiceSnapshot("ready", ("ready",), gauges))
    values = samples(metrics.render().decode())
    key = "hearth_asr_window_decodes_total"
    labels = (("model", "tiny.en"), ("verdict", "repeats"), ("window", "10"))
    assert values[(key, labels)] == 1
    assert values[(key, (("model", "tiny.en"), ("verdict", "ok"), ("window", "10")))] == 7


def test_memory_is_exposed_for_a_households_prometheus():
    metrics = FakeService().metrics
    seen = samples(metrics.render().decode())
    resident = seen[("process_resident_memory_bytes", ())]
    assert resident > 10e6  # this test process: tens of MB at least
    heap = {dict(labels)["kind"]: v for (name, labels), v in seen.items()
            if name == "hearth_native_heap_bytes"}  # fmt: skip
    assert set(heap) == {"in_use", "free", "mapped"}
    # In use may exceed resident: memory handed out but never touched (a calloc of a big
    # array earlier in this process) counts as in use and is not resident.
    assert heap["in_use"] > 0 and heap["free"] >= 0 and heap["mapped"] <= heap["in_use"]
