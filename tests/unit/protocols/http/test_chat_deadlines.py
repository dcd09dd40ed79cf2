"""Chat routes end within ``limits.request_timeout_s``, streamed or not."""

import asyncio
import json
from collections.abc import AsyncIterator
from types import SimpleNamespace

from fastapi.testclient import TestClient

from daemon.config import parse_config
from daemon.engines.llm.base import LlmEngine
from daemon.runtime.context import Core
from daemon.runtime.services import Services
from daemon.speech.chat import ChatService, ChatSettings, ConversationStore
from protocols.http.app import create_app

STALL_S = 4.0
"""How long the fake LLM stalls after its first piece: past the 1 s deadline."""


class StallingLlm(LlmEngine):
    name = "stalling"
    device = "cpu"
    context_tokens = 0

    async def stream_chat(self, messages, sampling) -> AsyncIterator[str]:
        yield "Hello"
        await asyncio.sleep(STALL_S)
        yield " there."


class Service:
    def __init__(self) -> None:
        self.config = parse_config("limits:\n  request_timeout_s: 1\n")
        chat = ChatService(StallingLlm(), ConversationStore(4, 60, 10), ChatSettings())
        engines = SimpleNamespace(chat=chat, llm=chat.llm)
        core = Core(engines, self.config)  # type: ignore[arg-type]
        self.loaded = True
        self.services = Services(lambda: core)

    def health(self):
        return True, {"status": "ok"}


def client() -> TestClient:
    return TestClient(create_app(Service()))


def test_a_chat_completion_past_the_deadline_is_a_504():
    body = {"messages": [{"role": "user", "content": "hi"}]}
    resp = client().post("/v1/chat/completions", json=body)
    assert resp.status_code == 504
    assert resp.json()["error"]["code"] == "timeout"


def test_a_streamed_chat_completion_ends_at_the_deadline():
    body = {"messages": [{"role": "user", "content": "hi"}], "stream": True}
    resp = client().post("/v1/chat/completions", json=body)
    assert resp.status_code == 200
    events = [line[5:].strip() for line in resp.text.splitlines() if line.startswith("data:")]
    assert events[-1] == "[DONE]"
    chunks = [json.loads(e) for e in events[:-1]]
    message = "the request took longer than 1 s (limits.request_timeout_s)"
    assert {"error": {"message": message, "code": "timeout"}} in chunks
    assert chunks[-1]["choices"][0]["finish_reason"] == "error"
    assert "there" not in resp.text


def test_willow_chatbot_past_the_deadline_is_a_504():
    resp = client().get("/api/chatbot", params={"text": "hi"})
    assert resp.status_code == 504 and resp.json()["code"] == "timeout"


def test_willow_chat_websocket_reply_ends_at_the_deadline():
    with client().websocket_connect("/api/ws/chatbot") as ws:
        ws.send_text("hi")
        frames = [ws.receive_text() for _ in range(3)]
    assert frames[0] == "Hello"
    assert frames[1].startswith("error: timeout:")
    assert frames[2] == ""
