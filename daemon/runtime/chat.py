"""Chat: the LLM's replies to a conversation's text or a client's message list, with or
without tools (see :mod:`daemon.runtime.services`)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import replace
from typing import TypeVar

from daemon.engines.llm.base import ChatMessage, ReplyPiece, Sampling, ToolSet
from daemon.errors import ModelUnavailable
from daemon.ops.deadline import bounded
from daemon.runtime.context import CurrentCore
from daemon.runtime.requests import ClientSampling
from daemon.runtime.views import ModelView
from daemon.speech.chat import ChatOptions, ChatService

T = TypeVar("T")


class Chat:
    """The LLM, on the engines in force at each call; each reply is due within the
    request deadline from its call."""

    def __init__(self, current: CurrentCore) -> None:
        self._current = current

    def _chat(self) -> ChatService:
        chat = self._current().engines.chat
        if chat is None:
            raise ModelUnavailable("the LLM engine is not loaded")
        return chat

    def _within_deadline(self, pieces: AsyncIterator[T]) -> AsyncIterator[T]:
        """``pieces``, each due within the request deadline from now (RequestTimeout)."""
        return bounded(self._current().request_deadline(), pieces)

    @property
    def chats(self) -> bool:
        """Whether the LLM's chat service is loaded."""
        return self._current().engines.chat is not None

    @property
    def replies(self) -> bool:
        """Whether spoken replies can be made (the speech pipeline: LLM and TTS)."""
        return self._current().engines.pipeline is not None

    @property
    def llm(self) -> ModelView | None:
        """The LLM (None: not loaded)."""
        llm = self._current().engines.llm
        return ModelView(llm.name, llm.device) if llm is not None else None

    def check_options(self, options: ChatOptions) -> None:
        """Refuse a client's own instructions or limits before a reply uses them (too
        long a system prompt); ModelUnavailable without the LLM."""
        self._chat().check_options(options)

    def chat(self, conversation_id: str, text: str) -> AsyncIterator[str]:
        """The LLM's reply to ``text``, streamed; the conversation's history is used and
        extended ("" keeps none). The whole reply is due within the request deadline."""
        return self._within_deadline(self._chat().chat(conversation_id, text))

    def complete(
        self, messages: list[ChatMessage], sampling: ClientSampling = ClientSampling()
    ) -> AsyncIterator[str]:
        """The LLM's reply to a client's whole message list (no stored history), with
        the configured sampling where ``sampling`` leaves a value None, within the
        request deadline."""
        chat = self._chat()
        return self._within_deadline(chat.complete(messages, _sampling(chat, sampling)))

    def complete_with_tools(
        self,
        messages: list[ChatMessage],
        tools: ToolSet | None,
        sampling: ClientSampling = ClientSampling(),
    ) -> AsyncIterator[ReplyPiece]:
        """Like :meth:`complete`, for a reply that may call ``tools`` (read them from
        OpenAI's JSON with :func:`~daemon.engines.llm.base.tool_set`): text pieces and
        :class:`~daemon.engines.llm.base.ToolCallDelta` pieces, which
        :class:`~daemon.engines.llm.base.Reply` puts together. ``messages`` may hold
        earlier calls and their results (``tool`` turns). Within the request deadline."""
        chat = self._chat()
        pieces = chat.complete_tools(messages, tools, _sampling(chat, sampling))
        return self._within_deadline(pieces)

    async def prepare_instructions(self, instructions: str) -> None:
        """Have a client's own system prompt evaluated now, within the request deadline,
        so that its first reply starts sooner (a local model keeps the state)."""
        core = self._current()
        async with asyncio.timeout(core.limits.request_timeout_s):
            await self._chat().prepare(instructions)

    async def chat_messages(
        self, conversation_id: str, text: str, instructions: str | None = None
    ) -> list[ChatMessage]:
        """The system turn, the conversation's history that fits, and ``text`` as the
        user turn (``instructions``: a client's own system prompt), as :meth:`chat`
        would send them: the start of a reply that may call tools."""
        return await self._chat().prepare_messages(conversation_id, text, instructions=instructions)

    async def count_tokens(self, messages: list[ChatMessage], reply: str) -> tuple[int, int]:
        """Tokens of a prompt and of its reply (a local model tokenizes, off the loop)."""
        llm = self._chat().llm

        def count() -> tuple[int, int]:
            return llm.count_tokens(messages), llm.count_tokens([ChatMessage("assistant", reply)])

        return await asyncio.to_thread(count)


def _sampling(chat: ChatService, client: ClientSampling) -> Sampling:
    """The configured sampling with a client's values where it gave them."""
    base = chat.settings.sampling
    return replace(
        base,
        temperature=base.temperature if client.temperature is None else client.temperature,
        top_p=base.top_p if client.top_p is None else client.top_p,
        max_tokens=client.max_tokens or base.max_tokens,
    )
