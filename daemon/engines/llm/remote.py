"""Any OpenAI-compatible chat server (vLLM, llama.cpp server, Ollama) as the LLM.

The server may be reachable at several base URLs (:class:`EndpointSet`). A
conversation keeps to one endpoint while that one is healthy: its key is the
conversation's opening (system prompt and first user turn), which every later
request repeats, so the server's prefix cache holds its history. A request moves
to another endpoint, then to the local fallback model, only before any text of
the reply went out; a failure after that ends the reply with an error.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import time
from collections.abc import AsyncGenerator, AsyncIterator, Callable

import httpx

from daemon.engines.llm.base import (
    ChatMessage,
    LlmEngine,
    ReplyPiece,
    Sampling,
    ToolCallDelta,
    ToolSet,
)
from daemon.engines.remote import (
    AllEndpointsFailed,
    EndpointSet,
    RemoteEndpoint,
    RemoteFailure,
    classify,
    status_failure,
    stream_failover,
)
from daemon.errors import LlmUnavailable, PromptTooLong

_LOGGER = logging.getLogger(__name__)
MAX_LINE = 1 << 20
"""Longest server-sent-event line accepted (bytes)."""
MAX_ERROR_BODY = 4096
"""Bytes of an error answer read for its message."""


def conversation_key(messages: list[ChatMessage]) -> str:
    """What every request of one conversation starts with, as a short hash."""
    opening = [m.to_openai() for m in messages[:2]]
    return hashlib.sha256(json.dumps(opening).encode()).hexdigest()[:16]


def delta_pieces(data: str) -> list[ReplyPiece]:
    """The text and tool-call pieces of one server-sent chunk (its JSON ``data``).

    Raises:
        RemoteFailure: the chunk is not a chat completion chunk.
    """
    try:
        delta = json.loads(data)["choices"][0].get("delta") or {}
        out: list[ReplyPiece] = []
        if delta.get("content"):
            out.append(str(delta["content"]))
        for call in delta.get("tool_calls") or []:
            function = call.get("function") or {}
            out.append(
                ToolCallDelta(
                    index=int(call.get("index", 0)),
                    id=str(call.get("id") or ""),
                    name=str(function.get("name") or ""),
                    arguments=str(function.get("arguments") or ""),
                )
            )
        return out
    except (ValueError, KeyError, IndexError, TypeError, AttributeError):
        raise RemoteFailure("garbage", "sent a malformed event") from None


class RemoteLlm(LlmEngine):
    """Streams ``/chat/completions`` over server-sent events."""

    def __init__(
        self,
        base_url: str | EndpointSet,
        model: str,
        api_key: str = "",
        timeout_s: float = 60.0,
        fallback: LlmEngine | None = None,
    ) -> None:
        if isinstance(base_url, str):
            base_url = EndpointSet("llm", model or "remote", [base_url.rstrip("/")], api_key)
        self.endpoints = base_url
        self.base_url = self.endpoints.urls[0]
        self.name = model or "remote"
        self.model = model
        self.device = "remote"
        self.context_tokens = 0
        self.timeout_s = timeout_s
        self.fallback = fallback
        key = self.endpoints.api_key
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        self._client = httpx.AsyncClient(headers=headers, timeout=httpx.Timeout(timeout_s))

    async def stream_chat(
        self, messages: list[ChatMessage], sampling: Sampling
    ) -> AsyncIterator[str]:
        """Stream the reply from the server's server-sent events (or the fallback's)."""
        body = self._body(messages, sampling)
        pieces = self._failover(messages, body, lambda llm: llm.stream_chat(messages, sampling))
        try:
            async for piece in pieces:
                if isinstance(piece, str):
                    yield piece
        finally:
            await pieces.aclose()  # now: the endpoint is released when the reply is cut

    def stream_tools(
        self, messages: list[ChatMessage], sampling: Sampling, tools: ToolSet
    ) -> AsyncIterator[ReplyPiece]:
        """Stream a reply that may call ``tools``: the server gets the tools and the
        choice as the client sent them, and its ``tool_calls`` deltas come back as
        they stream (the fallback model, if it answers, uses its own way)."""
        body = self._body(messages, sampling)
        if tools.tools:  # else a conversation with results, and no tools this turn
            body["tools"] = [tool.to_openai() for tool in tools.tools]
        if tools.choice_sent:
            body["tool_choice"] = tools.choice.to_openai()
        if tools.parallel is not None:
            body["parallel_tool_calls"] = tools.parallel
        return self._failover(
            messages, body, lambda llm: llm.stream_tools(messages, sampling, tools)
        )

    def _body(self, messages: list[ChatMessage], sampling: Sampling) -> dict[str, object]:
        return {
            "model": self.model,
            "messages": [m.to_openai() for m in messages],
            "stream": True,
            "temperature": sampling.temperature,
            "top_p": sampling.top_p,
            "max_tokens": sampling.max_tokens,
        }

    async def _failover(
        self,
        messages: list[ChatMessage],
        body: dict[str, object],
        fallback: Callable[[LlmEngine], AsyncIterator[ReplyPiece]],
    ) -> AsyncGenerator[ReplyPiece, None]:
        """The reply from the healthy endpoints in turn, then ``fallback(model)``'s."""

        def broke_off(ep: RemoteEndpoint, failure: RemoteFailure) -> Exception:
            return LlmUnavailable(f"remote LLM at {ep.url} broke off its reply: {failure.detail}")

        replies = stream_failover(
            self.endpoints,
            lambda ep, deadline: self._stream(ep, body, deadline),
            self.timeout_s,
            allow_down=self.fallback is None,
            broke_off=broke_off,
            key=conversation_key(messages),
        )
        try:
            async with contextlib.aclosing(replies):
                async for piece in replies:
                    yield piece
            return
        except AllEndpointsFailed as exc:
            reason, detail = exc.reason, exc.detail
        if self.fallback is None:
            raise LlmUnavailable(f"remote LLM failed: {detail}")
        _LOGGER.warning(
            "Remote LLM failed (%s: %s); answering with '%s'", reason, detail, self.fallback.name
        )
        self.endpoints.count_fallback(reason)
        async for piece in fallback(self.fallback):
            yield piece

    async def _stream(
        self, ep: RemoteEndpoint, body: dict[str, object], deadline: float
    ) -> AsyncIterator[ReplyPiece]:
        """The reply's pieces from one endpoint; RemoteFailure when it fails."""
        left = max(0.1, deadline - time.monotonic())
        try:
            async with self._client.stream(
                "POST", f"{ep.url}/chat/completions", json=body, timeout=httpx.Timeout(left)
            ) as resp:
                if resp.status_code >= 400:
                    detail = b""
                    async for chunk in resp.aiter_bytes():
                        detail += chunk
                        if len(detail) >= MAX_ERROR_BODY:
                            break
                    text = detail[:500].decode("utf-8", "replace")
                    if resp.status_code == 400 and "context" in text.lower():
                        raise PromptTooLong(f"remote LLM refused the prompt: {text}")
                    raise status_failure(resp.status_code, detail)
                async for line in resp.aiter_lines():
                    if len(line) > MAX_LINE:
                        raise RemoteFailure("oversized", "sent an oversized event")
                    if not line.startswith("data:"):
                        continue
                    data = line[5:].strip()
                    if data == "[DONE]":
                        break
                    for piece in delta_pieces(data):
                        yield piece
        except httpx.HTTPError as exc:
            raise classify(exc) from None

    async def close(self) -> None:
        """Close the HTTP client, stop health checks and close the fallback."""
        self.endpoints.close()
        await self._client.aclose()
        if self.fallback is not None:
            await self.fallback.close()
