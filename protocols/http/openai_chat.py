"""OpenAI-compatible chat completions: ``POST /v1/chat/completions``, tools included.

Messages (system, user, assistant with ``tool_calls``, ``tool`` results) become the
core's :class:`~daemon.engines.llm.base.ChatMessage` list; the reply streams back as
OpenAI's chunks (server-sent events) or one completion, text and tool calls alike.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import AsyncIterator
from typing import Any, Literal

from fastapi import APIRouter, Depends, Request
from fastapi.responses import JSONResponse, Response, StreamingResponse
from pydantic import BaseModel, ConfigDict, Field

from daemon.errors import HearthError, InvalidRequest
from daemon.runtime.api import (
    MAX_CALL_ID,
    MAX_TOOLS,
    ChatMessage,
    ClientSampling,
    Reply,
    ReplyPiece,
    Services,
    ToolCall,
    tool_set,
)
from protocols.http import formats
from protocols.http.auth import require_api_key
from protocols.http.common import ready_services, require

router = APIRouter(prefix="/v1", tags=["openai"], dependencies=[Depends(require_api_key)])


class ChatRequest(BaseModel):
    """``POST /v1/chat/completions`` body (the parts Hearth uses)."""

    model_config = ConfigDict(extra="ignore")
    model: str = ""
    messages: list[dict[str, Any]] = Field(min_length=1)
    stream: bool = False
    temperature: float | None = Field(None, ge=0.0, le=2.0)
    top_p: float | None = Field(None, ge=0.0, le=1.0)
    max_tokens: int | None = Field(None, ge=1, le=32768)
    max_completion_tokens: int | None = Field(None, ge=1, le=32768)
    n: int = Field(1, ge=1, le=1)
    tools: Any = None
    """Function tools in OpenAI's shape; checked by ``tool_set`` (its messages name
    the problem)."""
    tool_choice: Any = None
    parallel_tool_calls: Any = None


ROLES: dict[str, Literal["system", "user", "assistant", "tool"]] = {
    "system": "system",
    "developer": "system",
    "user": "user",
    "assistant": "assistant",
    "tool": "tool",
}


def chat_messages(raw: list[dict[str, Any]]) -> list[ChatMessage]:
    """OpenAI messages (string or text-part content; an assistant's ``tool_calls``,
    ``tool`` results) as chat turns."""
    out = []
    for i, message in enumerate(raw):
        role = ROLES.get(str(message.get("role", "")))
        if role is None:
            raise InvalidRequest(f"unsupported message role {str(message.get('role'))[:32]!r}")
        content = message.get("content") or ""
        if isinstance(content, list):
            content = "".join(
                str(p.get("text", "")) for p in content if isinstance(p, dict) and "text" in p
            )
        if not isinstance(content, str):
            raise InvalidRequest("message content must be a string or a list of text parts")
        calls = _tool_calls(message.get("tool_calls"), f"messages[{i}]")
        if calls and role != "assistant":
            raise InvalidRequest(f"messages[{i}]: only assistant messages carry tool_calls")
        call_id = message.get("tool_call_id") if role == "tool" else ""
        if not isinstance(call_id, str) or (role == "tool" and not 0 < len(call_id) <= MAX_CALL_ID):
            raise InvalidRequest(f"messages[{i}].tool_call_id must be the id of a call")
        out.append(ChatMessage(role, content, calls, call_id))
    return out


def _tool_calls(raw: object, where: str) -> tuple[ToolCall, ...]:
    """An assistant message's ``tool_calls`` (arguments kept as the JSON text sent)."""
    if raw is None:
        return ()
    if not isinstance(raw, list) or len(raw) > MAX_TOOLS:
        raise InvalidRequest(f"{where}.tool_calls must be a list of at most {MAX_TOOLS} calls")
    calls = []
    for j, call in enumerate(raw):
        function = call.get("function") if isinstance(call, dict) else None
        call_id = call.get("id", "") if isinstance(call, dict) else None
        if (
            not isinstance(function, dict)
            or not isinstance(function.get("name"), str)
            or not isinstance(call_id, str)
            or len(call_id) > MAX_CALL_ID
        ):
            raise InvalidRequest(
                f"{where}.tool_calls[{j}] must be "
                '{"id", "type": "function", "function": {"name", "arguments"}}'
            )
        arguments = function.get("arguments", "{}")
        if isinstance(arguments, dict):
            arguments = json.dumps(arguments)
        if not isinstance(arguments, str):
            raise InvalidRequest(f"{where}.tool_calls[{j}].function.arguments must be JSON text")
        calls.append(ToolCall(call_id, function["name"][:64], arguments))
    return tuple(calls)


@router.post(
    "/chat/completions",
    summary="Chat with the LLM",
    responses=formats.media_responses(
        ("application/json", "text/event-stream"), "The reply, whole or as server-sent events"
    ),
)
async def chat_completions(
    body: ChatRequest, request: Request, services: Services = Depends(ready_services)
) -> Response:
    """A reply from the configured LLM (local or remote); ``stream`` sends SSE chunks.

    ``tools`` and ``tool_choice`` reach the LLM (a remote one as sent); its calls come
    back as ``tool_calls`` with ``finish_reason`` ``tool_calls``, and ``tool`` messages
    carry their results on the next turn. The whole reply, streamed or not, ends
    within ``limits.request_timeout_s``: 504 before the first piece, an error chunk
    after it.
    """
    require(services.chat.chats, "LLM")
    messages = chat_messages(body.messages)
    tools = None
    if body.tools is not None or body.tool_choice is not None:
        tools = tool_set(body.tools, body.tool_choice, body.parallel_tool_calls)
    llm = services.chat.llm
    assert llm is not None  # the chat service talks to it
    model = body.model or llm.name
    reply_id = f"chatcmpl-{uuid.uuid4().hex}"
    sampling = ClientSampling(
        temperature=body.temperature,
        top_p=body.top_p,
        max_tokens=body.max_completion_tokens or body.max_tokens,
    )
    pieces = services.chat.complete_with_tools(messages, tools, sampling)
    reply = Reply()
    if body.stream:
        first = await _first_piece(pieces)  # errors before any byte become statuses
        chunks = _chat_chunks(reply_id, model, first, pieces)
        return StreamingResponse(chunks, media_type="text/event-stream")
    async for piece in pieces:
        reply.add(piece)
    calls = reply.tool_calls
    said = reply.text + "".join(c.name + c.arguments for c in calls)
    prompt_tokens, completion_tokens = await services.chat.count_tokens(messages, said)
    message: dict[str, Any] = {"role": "assistant", "content": reply.text}
    if calls:
        message["content"] = reply.text or None  # OpenAI's null beside calls
        message["tool_calls"] = [call.to_openai() for call in calls]
    return JSONResponse(
        {
            "id": reply_id,
            "object": "chat.completion",
            "created": int(time.time()),
            "model": model,
            "choices": [
                {
                    "index": 0,
                    "message": message,
                    "finish_reason": "tool_calls" if calls else "stop",
                }
            ],
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens,
            },
        }
    )


async def _first_piece(pieces: AsyncIterator[ReplyPiece]) -> ReplyPiece | None:
    try:
        return await anext(pieces)
    except StopAsyncIteration:
        return None


async def _chat_chunks(
    reply_id: str,
    model: str,
    first: ReplyPiece | None,
    pieces: AsyncIterator[ReplyPiece],
) -> AsyncIterator[bytes]:
    """The reply as SSE chunks; an error chunk ends it (the core's ``timeout`` past the
    request deadline included)."""
    created = int(time.time())
    calls: set[int] = set()
    """Indexes of the tool calls begun (their first delta carries id and name)."""

    def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
        return formats.sse(
            {
                "id": reply_id,
                "object": "chat.completion.chunk",
                "created": created,
                "model": model,
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
            }
        )

    def delta(piece: ReplyPiece) -> dict[str, Any]:
        if isinstance(piece, str):
            return {"content": piece}
        call: dict[str, Any] = {"index": piece.index, "function": {"arguments": piece.arguments}}
        if piece.index not in calls:
            calls.add(piece.index)
            call.update(id=piece.id, type="function")
            call["function"]["name"] = piece.name
        return {"tool_calls": [call]}

    yield chunk({"role": "assistant", "content": ""})
    finish = "stop"
    if first is not None:
        yield chunk(delta(first))
        error: HearthError | None = None
        try:
            async for piece in pieces:
                yield chunk(delta(piece))
        except HearthError as exc:
            error = exc
        if error is not None:
            yield formats.sse({"error": {"message": error.message, "code": error.code}})
            finish = "error"
        elif calls:
            finish = "tool_calls"
    yield chunk({}, finish)
    yield formats.sse("[DONE]")
