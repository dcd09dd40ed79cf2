"""Any OpenAI-compatible chat server (vLLM, llama.cpp server, Ollama) as the LLM."""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator
from dataclasses import asdict

import httpx

from daemon.engines.llm.base import ChatMessage, LlmEngine, Sampling
from daemon.errors import LlmUnavailable, PromptTooLong

_LOGGER = logging.getLogger(__name__)
MAX_LINE = 1 << 20
"""Longest server-sent-event line accepted (bytes)."""


class RemoteLlm(LlmEngine):
    """Streams ``/chat/completions`` over server-sent events."""

    def __init__(
        self, base_url: str, model: str, api_key: str = "", timeout_s: float = 60.0
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.name = model or "remote"
        self.model = model
        self.device = "remote"
        self.context_tokens = 0
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._client = httpx.AsyncClient(
            base_url=self.base_url, headers=headers, timeout=httpx.Timeout(timeout_s)
        )

    async def stream_chat(
        self, messages: list[ChatMessage], sampling: Sampling
    ) -> AsyncIterator[str]:
        """Stream the reply from the server's server-sent events."""
        body = {
            "model": self.model,
            "messages": [asdict(m) for m in messages],
            "stream": True,
            "temperature": sampling.temperature,
            "top_p": sampling.top_p,
            "max_tokens": sampling.max_tokens,
        }
        try:
            async with self._client.stream("POST", "/chat/completions", json=body) as resp:
                if resp.status_code >= 400:
                    detail = (await resp.aread())[:500].decode("utf-8", "replace")
                    if resp.status_code == 400 and "context" in detail.lower():
                        raise PromptTooLong(f"remote LLM refused the prompt: {detail}")
                    raise LlmUnavailable(
                        f"remote LLM at {self.base_url} answered {resp.status_code}: {detail}"
                    )
                async for line in resp.aiter_lines():
                    if len(line) > MAX_LINE:
                        raise LlmUnavailable("remote LLM sent an oversized event")
                    if not line.startswith("data:"):
                        continue
                    data = line[5:].strip()
                    if data == "[DONE]":
                        break
                    try:
                        delta = json.loads(data)["choices"][0].get("delta") or {}
                    except (ValueError, KeyError, IndexError, TypeError):
                        raise LlmUnavailable("remote LLM sent a malformed event") from None
                    piece = delta.get("content")
                    if piece:
                        yield piece
        except httpx.HTTPError as exc:
            raise LlmUnavailable(
                f"remote LLM at {self.base_url} failed: {type(exc).__name__}: {exc}"
            ) from None

    async def close(self) -> None:
        """Close the HTTP client."""
        await self._client.aclose()
