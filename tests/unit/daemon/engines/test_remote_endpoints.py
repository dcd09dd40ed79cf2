"""Choosing among remote endpoints: load, stickiness, failure, recovery; no network."""

from __future__ import annotations

import threading
import time

import pytest

from daemon.config import ConfigError, parse_config
from daemon.engines.remote import (
    AllEndpointsFailed,
    EndpointSet,
    RemoteEndpoint,
    RemoteFailure,
    base_urls,
    status_failure,
)

A, B, C = "http://a/v1", "http://b/v1", "http://c/v1"


def endpoints(*urls: str, retry_s: float = 60.0) -> EndpointSet:
    s = EndpointSet("asr", "m", list(urls), retry_s=retry_s)
    s.probe = lambda url: False  # no network: checks fail unless a test says otherwise
    return s


def test_least_outstanding_requests_then_round_robin():
    s = endpoints(A, B, C)
    first = s.acquire(None, set(), allow_down=False)
    second = s.acquire(None, set(), allow_down=False)
    third = s.acquire(None, set(), allow_down=False)
    assert {first.url, second.url, third.url} == {A, B, C}
    s.release(second)
    assert s.acquire(None, set(), allow_down=False).url == second.url  # the idle one


def test_a_conversation_keeps_its_endpoint_while_healthy():
    s = endpoints(A, B)
    home = s.acquire("talk", set(), allow_down=False)
    s.release(home)
    for _ in range(5):
        busy = s.acquire(None, set(), allow_down=False)  # other load piles up elsewhere
        assert s.acquire("talk", set(), allow_down=False).url == home.url
        s.release(busy)
    s.release(home, RemoteFailure("connect", "refused"))
    moved = s.acquire("talk", set(), allow_down=False)
    assert moved.url != home.url
    s.close()


def test_a_failed_endpoint_leaves_the_choice_until_a_health_check_passes():
    s = endpoints(A, B, retry_s=0.01)
    up = threading.Event()
    s.probe = lambda url: up.is_set()
    a = s.acquire(None, {B}, allow_down=False)
    s.release(a, RemoteFailure("timeout", "no answer"))
    assert [e.url for e in s.endpoints if e.healthy] == [B]
    assert s.acquire(None, {B}, allow_down=False) is None
    up.set()
    deadline = time.monotonic() + 5
    while not s.endpoints[0].healthy:
        assert time.monotonic() < deadline
        time.sleep(0.01)
    s.close()


def test_a_refusal_does_not_take_the_endpoint_out():
    s = endpoints(A)
    a = s.acquire(None, set(), allow_down=False)
    s.release(a, status_failure(404, b"no such model"))
    assert s.endpoints[0].healthy and s.endpoints[0].failures == 1
    assert status_failure(503, b"").endpoint_down


def test_run_fails_over_then_reports_every_failure():
    s = endpoints(A, B)
    seen: list[str] = []

    def call(ep: RemoteEndpoint, left: float) -> str:
        seen.append(ep.url)
        if ep.url == A:
            raise RemoteFailure("status", "answered 500")
        return "ok"

    assert s.run(call, 5, allow_down=False) == "ok"
    assert seen[-1] == B

    def broken(ep: RemoteEndpoint, left: float) -> str:
        raise RemoteFailure("garbage", "not JSON")

    with pytest.raises(AllEndpointsFailed) as info:
        s.run(broken, 5, allow_down=True)
    assert info.value.reason == "garbage" and B in info.value.detail
    # Everything is down now: with a fallback, nothing is tried at all.
    with pytest.raises(AllEndpointsFailed) as info:
        s.run(broken, 5, allow_down=False)
    assert info.value.reason == "down"
    s.close()


def test_counters_and_fallbacks():
    s = endpoints(A)
    s.count_fallback("connect")
    s.count_fallback("connect")
    assert s.fallbacks["connect"] == 2
    (stat,) = s.stats()
    assert (stat.url, stat.healthy, stat.requests) == (A, True, 0)


def test_base_urls_are_trimmed_and_deduplicated():
    assert base_urls(A + "/", [B, A, " "]) == [A, B]


def test_config_checks_remote_models():
    def err(text: str) -> str:
        with pytest.raises(ConfigError) as info:
            parse_config(text, "c.yaml")
        return str(info.value)

    models = "asr:\n  models:\n    tiny.en: {}\n    big:\n      backend: remote\n"
    assert "remote.base_url: must be set" in err(models)
    assert "fallback: must name a local model" in err(
        models + "      fallback: nope\n      remote: {base_url: 'http://gpu:8000/v1'}\n"
    )
    assert "must be a URL" in err(models + "      remote: {base_url: 'gpu:8000'}\n")
    ok = parse_config(
        models + "      fallback: tiny.en\n      remote: {base_url: 'http://gpu:8000/v1'}\n"
    )
    assert ok.asr.models["big"].fallback == "tiny.en"
