"""``/v1/realtime`` in the HTTP app: the key (header or subprotocol), the answer's
subprotocol, and the beta dialect."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from starlette.websockets import WebSocketDisconnect

from protocols.http.app import create_app
from tests.fakes import FakeService, fake_config, fake_engines

KEY = "s3cret"


@pytest.fixture
def http(tmp_path: Path):
    fakes = fake_engines(fake_config(tmp_path, f"auth:\n  api_key: {KEY}\n"))
    yield TestClient(create_app(FakeService(fakes.engines.config, fakes.engines)))
    fakes.close()


def test_a_bearer_key_opens_a_session(http: TestClient):
    headers = {"Authorization": f"Bearer {KEY}"}
    with http.websocket_connect("/v1/realtime?model=gpt-realtime", headers=headers) as ws:
        created = json.loads(ws.receive_text())
        assert created["type"] == "session.created"
        assert created["session"]["model"] == "gpt-realtime"
        ws.send_text(json.dumps({"type": "dance", "event_id": "e1"}))
        refused = json.loads(ws.receive_text())
        assert refused["error"]["code"] == "unknown_event"


def test_a_browser_passes_the_key_as_a_subprotocol_and_hears_realtime_back(http):
    offered = ["realtime", f"openai-insecure-api-key.{KEY}"]
    with http.websocket_connect("/v1/realtime", subprotocols=offered) as ws:
        assert ws.accepted_subprotocol == "realtime"
        assert json.loads(ws.receive_text())["type"] == "session.created"


def test_the_beta_header_gets_the_beta_session(http):
    headers = {"Authorization": f"Bearer {KEY}", "OpenAI-Beta": "realtime=v1"}
    with http.websocket_connect("/v1/realtime", headers=headers) as ws:
        session = json.loads(ws.receive_text())["session"]
        assert session["input_audio_format"] == "pcm16" and "audio" not in session


@pytest.mark.parametrize(
    ("headers", "subprotocols"),
    [
        ({}, []),
        ({"Authorization": "Bearer wrong"}, []),
        ({}, ["realtime", "openai-insecure-api-key.wrong"]),
    ],
)
def test_without_the_key_the_handshake_is_refused(http, headers, subprotocols):
    with pytest.raises(WebSocketDisconnect) as refused:
        with http.websocket_connect("/v1/realtime", headers=headers, subprotocols=subprotocols):
            pass
    assert refused.value.code == 1008
