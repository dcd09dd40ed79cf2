"""The remote LLM backend against a small OpenAI-style SSE server on loopback."""

import asyncio
import json

import pytest
import uvicorn
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, StreamingResponse

from daemon.engines.llm.base import ChatMessage, Sampling
from daemon.engines.llm.remote import RemoteLlm
from daemon.errors import LlmUnavailable
from tests.helpers import free_port


def sse_app() -> FastAPI:
    app = FastAPI()
    app.state.bodies = []

    @app.post("/v1/chat/completions")
    async def chat(request: Request):
        body = await request.json()
        app.state.bodies.append((body, request.headers.get("authorization")))
        if body["messages"][-1]["content"] == "fail":
            return JSONResponse({"error": "overloaded"}, status_code=503)

        async def events():
            for word in ["Hello", " from", " the", " big", " box."]:
                chunk = {"choices": [{"delta": {"content": word}, "index": 0}]}
                yield f"data: {json.dumps(chunk)}\n\n"
                await asyncio.sleep(0.01)
            yield "data: [DONE]\n\n"

        return StreamingResponse(events(), media_type="text/event-stream")

    return app


@pytest.fixture
async def server():
    app = sse_app()
    port = free_port()
    srv = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="error"))
    task = asyncio.ensure_future(srv.serve())
    while not srv.started:
        await asyncio.sleep(0.02)
    yield app, f"http://127.0.0.1:{port}/v1"
    srv.should_exit = True
    await task


async def test_streams_pieces_and_sends_key_and_sampling(server):
    app, url = server
    llm = RemoteLlm(url, "big-model", api_key="s3cret")
    pieces = [p async for p in llm.stream_chat([ChatMessage("user", "hi")], Sampling(0.1, 0.5, 9))]
    assert pieces == ["Hello", " from", " the", " big", " box."]
    body, auth = app.state.bodies[-1]
    assert auth == "Bearer s3cret"
    assert body["model"] == "big-model" and body["stream"] is True and body["max_tokens"] == 9
    await llm.close()


async def test_server_errors_and_unreachable_servers_are_typed(server):
    _, url = server
    llm = RemoteLlm(url, "m")
    with pytest.raises(LlmUnavailable, match="answered 503"):
        _ = [p async for p in llm.stream_chat([ChatMessage("user", "fail")], Sampling())]
    await llm.close()
    dead = RemoteLlm(f"http://127.0.0.1:{free_port()}/v1", "m", timeout_s=2)
    with pytest.raises(LlmUnavailable, match="failed"):
        _ = [p async for p in dead.stream_chat([ChatMessage("user", "hi")], Sampling())]
    await dead.close()
