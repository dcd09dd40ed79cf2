"""CORS for the Home Assistant card: only its routes, only the configured origins."""

from __future__ import annotations

from collections.abc import Mapping

import pytest
from fastapi.testclient import TestClient
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from daemon.config import parse_config
from daemon.errors import ConfigError
from protocols.http.app import create_app
from protocols.http.cors import CARD_ROUTES, CardCors, card_methods, is_card_route

HA = "http://homeassistant.local:8123"
OTHER = "https://evil.example"
BASE = "http://127.0.0.1:19000"
"""Where the card's browser reaches Hearth: by address (a name must be this machine's)."""
CORS_HEADERS = (
    "access-control-allow-origin",
    "access-control-allow-methods",
    "access-control-allow-headers",
    "access-control-allow-credentials",
    "access-control-allow-private-network",
    "access-control-max-age",
)


class FakeService:
    """A service still loading its engines, with CORS (and maybe a key) configured."""

    def __init__(self, origins: list[str], api_key: str = "") -> None:
        self.config = parse_config(config_text(origins, api_key))
        self.loaded = False

    def health(self) -> tuple[bool, dict[str, str]]:
        return False, {"status": "loading"}


def config_text(origins: list[str], api_key: str = "") -> str:
    listed = ", ".join(f'"{o}"' for o in origins)
    return f'http:\n  cors_origins: [{listed}]\nauth:\n  api_key: "{api_key}"\n'


def no_cors(headers: Mapping[str, str]) -> bool:
    return not any(name in headers for name in CORS_HEADERS)


@pytest.fixture
def service() -> FakeService:
    return FakeService([HA])


@pytest.fixture
def client(service: FakeService) -> TestClient:
    return TestClient(create_app(service), base_url=BASE)


def test_route_table() -> None:
    assert is_card_route("HEAD", "/api/ping") and is_card_route("POST", "/api/rtc/asr")
    assert not is_card_route("POST", "/api/voices") and not is_card_route("GET", "/api/rtc/asr")
    assert card_methods("/api/voices") == ["GET", "HEAD"]
    assert card_methods("/api/rtc/asr") == ["POST"] and card_methods("/v1/models") == []
    assert card_methods("/v1/realtime/calls") == ["POST"]


@pytest.mark.parametrize(("method", "path"), sorted(CARD_ROUTES))
def test_allowed_origin_on_card_routes(client: TestClient, method: str, path: str) -> None:
    resp = client.request(method, path, headers={"Origin": HA})
    assert resp.headers["access-control-allow-origin"] == HA
    assert resp.headers["vary"] == "Origin"
    assert "access-control-allow-credentials" not in resp.headers
    # A Realtime call's answer names the call in Location; the page may read it.
    assert resp.headers["access-control-expose-headers"] == "Location"


def test_head_counts_as_get_and_origins_match_case_insensitively(client: TestClient) -> None:
    origin = "http://HomeAssistant.local:8123"
    resp = client.head("/api/ping", headers={"Origin": origin})
    assert resp.headers["access-control-allow-origin"] == origin


def test_vary_is_appended_once() -> None:
    async def ping(request: Request) -> Response:
        return Response("pong", headers={"Vary": "Accept-Encoding"})

    async def origin_already(request: Request) -> Response:
        return Response("js", headers={"Vary": "origin"})

    inner = Starlette(
        routes=[Route("/api/ping", ping), Route("/web/hearth-client.js", origin_already)]
    )
    client = TestClient(CardCors(inner, FakeService([HA])), base_url=BASE)
    assert client.get("/api/ping", headers={"Origin": HA}).headers["vary"] == (
        "Accept-Encoding, Origin"
    )
    assert client.get("/web/hearth-client.js", headers={"Origin": HA}).headers["vary"] == "origin"


@pytest.mark.parametrize(
    ("method", "path", "origin"),
    [
        ("GET", "/api/ping", OTHER),
        ("GET", "/api/ping", HA + "/"),
        ("POST", "/v1/audio/speech", HA),
        ("GET", "/api/voices/x", HA),
        ("DELETE", "/api/voices/x", HA),
        ("POST", "/api/voices", HA),
        ("GET", "/rtc", HA),
    ],
)
def test_other_origins_and_routes_get_nothing(
    client: TestClient, method: str, path: str, origin: str
) -> None:
    assert no_cors(client.request(method, path, headers={"Origin": origin}).headers)


def test_no_origin_is_untouched(client: TestClient) -> None:
    resp = client.get("/api/ping")
    assert resp.status_code == 200 and no_cors(resp.headers) and "vary" not in resp.headers


def preflight(method: str, origin: str = HA, pna: bool = False) -> dict[str, str]:
    headers = {"Origin": origin, "Access-Control-Request-Method": method}
    if pna:
        headers["Access-Control-Request-Private-Network"] = "true"
    return headers


def test_preflight_allowed(client: TestClient) -> None:
    resp = client.options("/api/rtc/asr", headers=preflight("POST", pna=True))
    assert resp.status_code == 204
    assert resp.headers["access-control-allow-origin"] == HA
    assert resp.headers["access-control-allow-methods"] == "POST"
    assert resp.headers["access-control-allow-headers"] == "Content-Type, X-API-Key, Authorization"
    assert resp.headers["access-control-max-age"] == "600"
    assert resp.headers["access-control-allow-private-network"] == "true"
    assert resp.headers["vary"] == "Origin"
    assert "access-control-allow-credentials" not in resp.headers
    resp = client.options("/api/voices", headers=preflight("GET"))
    assert resp.status_code == 204 and resp.headers["access-control-allow-methods"] == "GET, HEAD"
    assert "access-control-allow-private-network" not in resp.headers


def test_preflight_needs_no_key() -> None:
    client = TestClient(create_app(FakeService([HA], api_key="k")), base_url=BASE)
    assert client.options("/api/rtc/asr", headers=preflight("POST")).status_code == 204


@pytest.mark.parametrize(
    ("path", "headers", "named"),
    [
        ("/api/rtc/asr", preflight("POST", OTHER, pna=True), OTHER),
        ("/api/voices", preflight("POST"), "POST /api/voices"),
        ("/api/voices/x", preflight("DELETE"), "DELETE /api/voices/x"),
        ("/v1/audio/speech", preflight("POST"), "POST /v1/audio/speech"),
    ],
)
def test_preflight_refused(
    client: TestClient, path: str, headers: dict[str, str], named: str
) -> None:
    resp = client.options(path, headers=headers)
    assert resp.status_code == 403 and no_cors(resp.headers)
    body = resp.json()
    code = body["error"]["code"] if path.startswith("/v1/") else body["code"]
    assert code == "cors-forbidden"
    assert named in str(body)


def test_errors_carry_the_headers() -> None:
    client = TestClient(create_app(FakeService([HA], api_key="k")), base_url=BASE)
    resp = client.post("/api/rtc/asr", json={}, headers={"Origin": HA, "X-API-Key": "wrong"})
    assert resp.status_code == 401
    assert resp.headers["access-control-allow-origin"] == HA
    assert resp.json()["code"] == "unauthorized"
    service = FakeService([HA])
    service.config = parse_config(config_text([HA]) + "limits:\n  max_upload_mb: 1\n")
    client = TestClient(create_app(service), base_url=BASE)
    resp = client.post("/api/rtc/asr", content=b"x" * 1_000_001, headers={"Origin": HA})
    assert resp.status_code == 413
    assert resp.headers["access-control-allow-origin"] == HA
    resp = client.get("/web/nothing-here.js", headers={"Origin": HA})
    assert resp.status_code == 404 and no_cors(resp.headers)  # not a card route


def test_basic_challenge_only_without_a_key_header() -> None:
    client = TestClient(create_app(FakeService([HA], api_key="k")), base_url=BASE)
    for headers in ({"X-API-Key": "wrong"}, {"Authorization": "Bearer wrong"}):
        resp = client.get("/api/voices", headers=headers)
        assert resp.status_code == 401 and "www-authenticate" not in resp.headers
    for headers in ({}, {"Authorization": "Basic aGVhcnRoOndyb25n"}):  # hearth:wrong
        resp = client.get("/api/voices", headers=headers)
        assert resp.status_code == 401
        assert resp.headers["www-authenticate"] == 'Basic realm="Hearth"'


def test_reloaded_origins_apply_at_once(client: TestClient, service: FakeService) -> None:
    assert (
        client.get("/api/ping", headers={"Origin": OTHER}).headers.get(
            "access-control-allow-origin"
        )
        is None
    )
    service.config = parse_config(config_text([OTHER]))
    resp = client.get("/api/ping", headers={"Origin": OTHER})
    assert resp.headers["access-control-allow-origin"] == OTHER
    assert no_cors(client.get("/api/ping", headers={"Origin": HA}).headers)
    assert client.options("/api/ping", headers=preflight("GET")).status_code == 403


# --------------------------------------------------------------------------- config


@pytest.mark.parametrize(
    "origin",
    [
        "http://homeassistant.local:8123",
        "https://ha.example.com",
        "http://192.168.1.5:8123",
        "https://[::1]:8443",
        "HTTPS://HA.local",
    ],
)
def test_good_origins(origin: str) -> None:
    assert parse_config(config_text([origin])).http.cors_origins == [origin]


@pytest.mark.parametrize(
    ("origin", "problem"),
    [
        ("*", "no '*'"),
        ("https://*.local", "no '*'"),
        ("https://ha.local/", "trailing '/'"),
        ("https://ha.local/lovelace", "no path"),
        ("https://ha.local?x=1", "query"),
        ("https://ha.local#top", "fragment"),
        ("ftp://ha.local", "scheme http or https"),
        ("homeassistant.local:8123", "scheme http or https"),
        ("https://", "scheme://host[:port]"),
        ("https://user@ha.local", "scheme://host[:port]"),
        ("https://ha.local:99999", "port between 1 and 65535"),
        ("https://ha.local:", "port between 1 and 65535"),
        ("https://ha.local:443", "leave out the default port 443"),
        ("http://ha.local:80", "leave out the default port 80"),
    ],
)
def test_bad_origins(origin: str, problem: str) -> None:
    with pytest.raises(ConfigError) as info:
        parse_config(config_text([HA, origin]), "config.yaml")
    message = str(info.value)
    assert message.startswith("config.yaml:2 http.cors_origins.1: must be an origin like ")
    assert problem in message and f'got "{origin}"' in message


def test_an_unhandled_failure_on_a_card_route_is_a_500_the_card_can_read() -> None:
    """Without the headers the browser would report a network error, not the 500."""

    async def broken(scope: Scope, receive: Receive, send: Send) -> None:
        raise RuntimeError("boom")  # as a route's failure reaches the middleware

    app = CardCors(broken, FakeService([HA]))
    client = TestClient(app, raise_server_exceptions=False, base_url=BASE)
    resp = client.post("/api/rtc/asr", headers={"Origin": HA})
    assert resp.status_code == 500
    assert resp.json()["code"] == "internal-error"
    assert resp.headers["access-control-allow-origin"] == HA
