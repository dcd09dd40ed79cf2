"""A keyless daemon and foreign web pages: Origin and Host checks, /healthz, the schema."""

from __future__ import annotations

import socket
from typing import Any

import pytest
from fastapi.testclient import TestClient
from starlette.testclient import WebSocketDenialResponse
from starlette.websockets import WebSocketDisconnect

from daemon.config import parse_config
from protocols.http.app import create_app
from protocols.http.origin import host_name, same_origin

BASE = "http://127.0.0.1:19000"
OWN = "http://127.0.0.1:19000"
HA = "http://homeassistant.local:8123"
EVIL = "https://evil.example"
BROWSER = {"User-Agent": "Mozilla/5.0 (X11; Linux x86_64) Chrome/120"}


class Service:
    """A service still loading its engines."""

    def __init__(self, extra: str = "") -> None:
        self.config = parse_config(f'http:\n  cors_origins: ["{HA}"]\n{extra}')
        self.loaded = False

    def health(self) -> tuple[bool, dict[str, Any]]:
        return False, {"status": "loading", "versions": {"ctranslate2": "4"}, "engines": {}}


def client(extra: str = "") -> TestClient:
    return TestClient(create_app(Service(extra)), base_url=BASE)


def test_a_foreign_page_cannot_post_to_a_keyless_daemon() -> None:
    http = client()
    take = http.post(
        "/api/speaker?speaker=mallory",
        content=b"RIFF....",
        headers={"Origin": EVIL, "Content-Type": "text/plain"},
    )
    assert take.status_code == 403
    assert take.json()["code"] == "origin-forbidden" and EVIL in take.json()["detail"]
    # Hearth's own pages, the card's origin and clients without Origin get through
    # (to "still loading" here).
    for headers in ({"Origin": OWN}, {"Origin": HA}, {}):
        assert http.post("/api/speaker?speaker=x", content=b"x", headers=headers).status_code == 503
    # Reading is left to CORS: a foreign GET is served, without CORS headers.
    assert http.get("/api/ping", headers={"Origin": EVIL}).status_code == 200


def test_a_foreign_page_cannot_open_the_chat_websocket() -> None:
    http = client()
    with pytest.raises(WebSocketDenialResponse) as denied:
        with http.websocket_connect(
            "/api/ws/chatbot", headers={"Origin": EVIL, "Host": "127.0.0.1:19000"}
        ):
            pass
    assert denied.value.status_code == 403
    own = {"Origin": OWN, "Host": "127.0.0.1:19000"}
    with pytest.raises(WebSocketDisconnect) as passed:  # to the route: still loading
        with http.websocket_connect("/api/ws/chatbot", headers=own):
            pass
    assert passed.value.code == 1013


def test_browsers_must_use_a_name_of_this_machine() -> None:
    http = client('  allowed_hosts: ["hearth.lan"]\n')
    rebinding = http.get("/api/ping", headers={"Host": "evil.example:19000", **BROWSER})
    assert rebinding.status_code == 421
    assert rebinding.json()["code"] == "unknown-host"
    assert "http.allowed_hosts" in rebinding.json()["detail"]
    hostname = socket.gethostname()
    for host in ("127.0.0.1:19000", "[::1]:19000", "localhost", hostname, "hearth.lan:19000"):
        assert http.get("/api/ping", headers={"Host": host, **BROWSER}).status_code == 200, host
    # A Willow device or Home Assistant on a router's DNS name is no browser.
    willow = http.get("/api/ping", headers={"Host": "server.fritz.box", "User-Agent": "Willow/1"})
    assert willow.status_code == 200


def test_origins_compare_by_scheme_host_and_port() -> None:
    assert same_origin("http://127.0.0.1:19000", "http", "127.0.0.1:19000")
    assert same_origin("https://hearth.lan", "wss", "hearth.lan:443")
    assert not same_origin("http://127.0.0.1:19001", "http", "127.0.0.1:19000")
    assert not same_origin("null", "http", "127.0.0.1:19000")
    assert host_name("[::1]:19000") == "::1" and host_name("Hearth.LAN.:80") == "hearth.lan"


def test_healthz_tells_only_its_status_without_the_key() -> None:
    http = client('auth:\n  api_key: "k"\n')
    bare = http.get("/healthz")
    assert bare.status_code == 503 and bare.json() == {"status": "loading"}
    full = http.get("/healthz", headers={"X-API-Key": "k"})
    assert full.status_code == 503 and "versions" in full.json()
    assert "versions" in client().get("/healthz").json()  # no key configured: all of it


def test_the_schema_documents_the_error_answers() -> None:
    schema = client().get("/openapi.json").json()
    tts = schema["paths"]["/api/tts"]["get"]["responses"]
    assert {"400", "401", "404", "413", "503"} <= set(tts) and "422" not in tts
    assert "unknown-voice" in tts["404"]["description"]
    speech = schema["paths"]["/v1/audio/speech"]["post"]["responses"]
    assert speech["401"]["content"]["application/json"]["schema"]["$ref"].endswith(
        "OpenAiErrorBody"
    )
