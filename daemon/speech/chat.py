"""The LLM as a conversation partner: prompt building, limits and bounded history.

A client's own instructions and limits for its replies are a
:class:`~daemon.engines.llm.values.ChatOptions` (re-exported here).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import OrderedDict
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from dataclasses import dataclass, field, replace
from typing import Protocol

from daemon.engines.llm.base import (
    ChatMessage,
    LlmEngine,
    Reply,
    ReplyPiece,
    Sampling,
    ToolSet,
)
from daemon.engines.llm.repetition import DEFAULT_NGRAM, RepetitionGuard
from daemon.engines.llm.values import ChatOptions
from daemon.errors import InvalidText, TextTooLong

_LOGGER = logging.getLogger(__name__)
__all__ = [
    "ChatOptions",
    "ChatService",
    "ChatSettings",
    "ConversationStore",
    "HomeControl",
    "speaker_line",
]
MAX_SPEAKER_CHARS = 64
"""The longest speaker name put in a system prompt (an enrolled name is at most this)."""


def speaker_line(speaker: str | None) -> str:
    """The system prompt's sentence naming who is speaking ("" when nobody is known).

    The name comes from the speaker store, which users fill: only printable characters
    on one line are kept, at most :data:`MAX_SPEAKER_CHARS` of them.
    """
    if not speaker:
        return ""
    name = " ".join("".join(c if c.isprintable() else " " for c in speaker).split())
    name = name[:MAX_SPEAKER_CHARS].strip()
    return f"The person speaking is {name}." if name else ""


@dataclass
class _Conversation:
    turns: list[ChatMessage] = field(default_factory=list)
    touched: float = 0.0


class ConversationStore:
    """Per-conversation history, bounded in turns, count and age."""

    def __init__(
        self,
        max_turns: int,
        ttl_s: float,
        max_conversations: int,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.max_turns = max_turns
        self.ttl_s = ttl_s
        self.max_conversations = max_conversations
        self._clock = clock
        self._items: OrderedDict[str, _Conversation] = OrderedDict()

    def _expire(self) -> None:
        now = self._clock()
        for key in [k for k, c in self._items.items() if now - c.touched > self.ttl_s]:
            del self._items[key]
        while len(self._items) > self.max_conversations:
            self._items.popitem(last=False)

    def history(self, conversation_id: str) -> list[ChatMessage]:
        """Earlier turns of this conversation (oldest first)."""
        self._expire()
        conv = self._items.get(conversation_id)
        return list(conv.turns) if conv else []

    def add(self, conversation_id: str, user: str, assistant: str) -> None:
        """Record one exchange.

        Past ``max_turns`` the oldest half is forgotten at once, not one turn per
        reply: a local model keeps the conversation it evaluated while the prompt's
        start stays the same, and a history that slid by a turn every reply would be
        evaluated whole every time (about a second on two cores at eight turns).
        """
        conv = self._items.pop(conversation_id, None) or _Conversation()
        conv.turns += [ChatMessage("user", user), ChatMessage("assistant", assistant)]
        if len(conv.turns) > 2 * self.max_turns:
            keep = max(1, self.max_turns // 2) if self.max_turns else 0
            conv.turns = conv.turns[-2 * keep :] if keep else []
        conv.touched = self._clock()
        self._items[conversation_id] = conv
        self._expire()

    def __len__(self) -> int:
        return len(self._items)


@dataclass(frozen=True)
class ChatSettings:
    """LLM prompt and sampling defaults (from config)."""

    system_prompt: str = ""
    sampling: Sampling = Sampling()
    max_prompt_chars: int = 4000
    repeat_ngram: int = DEFAULT_NGRAM
    """A reply ends before a phrase of this many words comes again (0: never cut)."""


async def cut_repetition(pieces: AsyncIterator[str], guard: RepetitionGuard) -> AsyncIterator[str]:
    """Pass ``pieces`` on until they start repeating themselves, then end cleanly and
    stop the generation (the source is closed)."""
    cut = cut_text_repetition(pieces, guard)
    try:
        async for piece in cut:
            assert isinstance(piece, str)
            yield piece
    finally:
        await cut.aclose()


async def cut_text_repetition(
    pieces: AsyncIterator[ReplyPiece], guard: RepetitionGuard
) -> AsyncGenerator[ReplyPiece, None]:
    """:func:`cut_repetition` for a reply with tool calls: the text is cut, the calls
    pass as they come."""
    try:
        async for piece in pieces:
            if not isinstance(piece, str):
                yield piece
                continue
            out = guard.feed(piece)
            if out:
                yield out
            if guard.stopped:
                _LOGGER.info("Cut a reply that started repeating itself")
                break
        tail = guard.finish()
        if tail:
            yield tail
    finally:
        if isinstance(pieces, AsyncGenerator):
            await pieces.aclose()


WARM_UP_QUESTION = "Hello."
"""The user turn of a warm-up completion (its system turn is what is kept)."""
PREPARED_KEPT = 4
"""Clients' system prompts remembered as evaluated (a local model keeps about as many)."""


class HomeControl(Protocol):
    """Who carries out the household's commands (Home Assistant's own agent)."""

    async def is_command(self, text: str) -> bool:
        """Whether ``text`` is a command of the household (never raises)."""
        ...

    async def answer(self, text: str) -> str | None:
        """The spoken answer once ``text`` was carried out; None: not a command (the
        LLM answers). Never raises."""
        ...


class ChatService:
    """The LLM with a system prompt, limits and per-conversation history."""

    def __init__(
        self, llm: LlmEngine, conversations: ConversationStore, settings: ChatSettings
    ) -> None:
        self.llm = llm
        self.conversations = conversations
        self.settings = settings
        self.home: HomeControl | None = None
        """Carries out the household's commands instead of the LLM answering them
        (set by the composition root when Home Assistant is configured)."""
        self._prepared: OrderedDict[str, None] = OrderedDict()
        """Clients' own system prompts evaluated lately (:meth:`prepare`), newest last."""

    def build_messages(
        self, conversation_id: str, text: str, *, speaker: str | None = None
    ) -> list[ChatMessage]:
        """System prompt, the history that fits, and the new user turn (blocking: a local
        model tokenizes; on the event loop use :meth:`prepare_messages`).

        ``speaker`` is the enrolled person who said ``text``, named in the system prompt.
        """
        system, history, user = self._parts(conversation_id, text, speaker)
        return self._fit(system, history, user)

    async def prepare_messages(
        self,
        conversation_id: str,
        text: str,
        *,
        speaker: str | None = None,
        instructions: str | None = None,
    ) -> list[ChatMessage]:
        """Like :meth:`build_messages`, with the token counting in a worker thread
        (``instructions``: a client's own system prompt instead of the configured one)."""
        system, history, user = self._parts(conversation_id, text, speaker, instructions)
        if not history or not self.llm.context_tokens:
            return system + history + [user]  # nothing to measure
        # Tokenizing a long history takes milliseconds of CPU per turn: not on the loop.
        return await asyncio.to_thread(self._fit, system, history, user)

    def _parts(
        self,
        conversation_id: str,
        text: str,
        speaker: str | None = None,
        instructions: str | None = None,
    ) -> tuple[list[ChatMessage], list[ChatMessage], ChatMessage]:
        """Check the prompt; the system turn, the stored history and the user turn."""
        if not text.strip():
            raise InvalidText("the prompt is empty")
        if len(text) > self.settings.max_prompt_chars:
            raise TextTooLong(
                f"prompt is {len(text)} characters; the limit is {self.settings.max_prompt_chars}"
            )
        # The speaker goes after the configured prompt: a local model's evaluated prefix
        # (kept by the LLM's prompt states, primed at load) stays the same whoever speaks.
        configured = self.settings.system_prompt if instructions is None else instructions
        prompt = "\n\n".join(p for p in (configured, speaker_line(speaker)) if p)
        system = [ChatMessage("system", prompt)] if prompt else []
        # The store is read here, on the caller's thread: it is not thread-safe.
        history = self.conversations.history(conversation_id) if conversation_id else []
        return system, history, ChatMessage("user", text)

    def _fit(
        self, system: list[ChatMessage], history: list[ChatMessage], user: ChatMessage
    ) -> list[ChatMessage]:
        """Drop the oldest exchanges until the prompt fits the context window (blocking)."""
        budget = self.llm.context_tokens - self.settings.sampling.max_tokens
        while (
            history
            and self.llm.context_tokens
            and self.llm.count_tokens(system + history + [user]) > budget
        ):
            history = history[2:]
        return system + history + [user]

    async def chat(
        self,
        conversation_id: str,
        text: str,
        remember: bool = True,
        *,
        speaker: str | None = None,
        options: ChatOptions | None = None,
    ) -> AsyncIterator[str]:
        """Stream the LLM's reply to ``text`` (its words; see :meth:`converse`)."""
        pieces = self.converse(conversation_id, text, remember, speaker=speaker, options=options)
        async for piece in pieces:
            if isinstance(piece, str):
                yield piece

    async def converse(
        self,
        conversation_id: str,
        text: str,
        remember: bool = True,
        *,
        speaker: str | None = None,
        options: ChatOptions | None = None,
    ) -> AsyncIterator[ReplyPiece]:
        """Stream the LLM's reply to ``text``: its words and, when ``options`` offer
        tools, the pieces of the calls it makes, from one generation.

        Args:
            conversation_id: whose history to use and extend ("": none).
            text: what the person said.
            remember: add the exchange to the history when the reply is complete (and
                made no call: a call's exchange goes on with its results); a
                speculative reply passes False and is remembered only if it is used.
            speaker: the enrolled person who said it (None: not known); the system
                prompt names them.
            options: the client's own instructions and limits (None: the configured),
                the tool turns the reply answers, and the tools it may call.
        """
        options = options or ChatOptions()
        self.check_options(options)
        if self.home is not None and options.tools is None and not options.turns:
            answer = await self.home.answer(text)
            if answer is not None:  # a command, carried out by Home Assistant
                yield answer
                if remember:
                    self.remember(conversation_id, text, answer)
                return
        messages = await self.prepare_messages(
            conversation_id, text, speaker=speaker, instructions=options.instructions
        )
        sampling = options.sampling(self.settings.sampling)
        pieces: AsyncIterator[ReplyPiece]
        if options.tools is not None or options.turns:
            pieces = self.complete_tools(messages + list(options.turns), options.tools, sampling)
        else:
            pieces = self.reply(messages, sampling)
        reply = Reply()
        try:
            async for piece in pieces:
                if not isinstance(piece, str) and options.tools is None:
                    continue  # a call no tool was offered for
                reply.add(piece)
                yield piece
        finally:
            if isinstance(pieces, AsyncGenerator):
                await pieces.aclose()  # a reply cut short stops the generation now
        if remember and not reply.calls:
            self.remember(conversation_id, text, reply.text.strip())

    def check_options(self, options: ChatOptions) -> None:
        """Refuse instructions longer than a prompt may be (``limits.max_prompt_chars``)."""
        limit = self.settings.max_prompt_chars
        if options.instructions is not None and len(options.instructions) > limit:
            raise TextTooLong(
                f"instructions are {len(options.instructions)} characters; the limit is {limit}"
            )

    async def complete(
        self, messages: list[ChatMessage], sampling: Sampling | None = None
    ) -> AsyncIterator[str]:
        """Stream the LLM's reply to a client's whole message list (no stored history).

        The messages are used as given (OpenAI semantics: the client sends its own
        system prompt); the same prompt limits apply as to :meth:`chat`.
        """
        self._check_prompt(messages)
        async for piece in self.reply(messages, sampling or self.settings.sampling):
            yield piece

    async def complete_tools(
        self, messages: list[ChatMessage], tools: ToolSet | None, sampling: Sampling | None = None
    ) -> AsyncIterator[ReplyPiece]:
        """Stream a reply to a client's whole message list that may call ``tools``.

        Args:
            messages: the conversation as the client keeps it, tool calls and their
                results (``tool`` turns) included.
            tools: the tools offered and the choice among them (None: none offered).
            sampling: None for the configured sampling.

        Returns:
            Text pieces, cut like :meth:`reply`'s where they start repeating, and
            :class:`~daemon.engines.llm.base.ToolCallDelta` pieces of the calls.
        """
        self._check_prompt(messages)
        sampling = sampling or self.settings.sampling
        pieces: AsyncIterator[ReplyPiece]
        if tools is None and not any(m.role == "tool" or m.tool_calls for m in messages):
            pieces = self.reply(messages, sampling)  # plain text, as complete() gives
        else:
            pieces = self.llm.stream_tools(messages, sampling, tools or ToolSet())
            if self.settings.repeat_ngram:
                pieces = cut_text_repetition(pieces, RepetitionGuard(self.settings.repeat_ngram))
        try:
            async for piece in pieces:
                yield piece
        finally:
            if isinstance(pieces, AsyncGenerator):
                await pieces.aclose()  # a client gone mid-reply stops the generation now

    def _check_prompt(self, messages: list[ChatMessage]) -> None:
        """A client's message list must say something and stay within the prompt limit."""
        if not any(m.content.strip() for m in messages if m.role != "system"):
            raise InvalidText("the prompt is empty")
        chars = sum(m.size for m in messages)
        if chars > self.settings.max_prompt_chars:
            raise TextTooLong(
                f"prompt is {chars} characters; the limit is {self.settings.max_prompt_chars}"
            )

    def reply(self, messages: list[ChatMessage], sampling: Sampling) -> AsyncIterator[str]:
        """The LLM's reply to ``messages``, cut where it starts repeating itself: the
        one way every route (chat, speech, Wyoming, Willow, OpenAI) reaches the LLM."""
        pieces = self.llm.stream_chat(messages, sampling)
        if not self.settings.repeat_ngram:
            return pieces
        return cut_repetition(pieces, RepetitionGuard(self.settings.repeat_ngram))

    async def warm_up(self, instructions: str | None = None) -> None:
        """One short completion: loads the weights into the caches and, for a local
        model, keeps the system prompt's evaluated prefix (``instructions``: a client's
        own) for the first request."""
        sampling = replace(self.settings.sampling, max_tokens=1)
        messages = await self.prepare_messages("", WARM_UP_QUESTION, instructions=instructions)
        async for _ in self.llm.stream_chat(messages, sampling):
            pass

    async def prepare(self, instructions: str) -> None:
        """Have a client's own system prompt evaluated now (:meth:`warm_up`), so that its
        first reply evaluates only its own turn. The configured prompt is evaluated at
        load, and the same instructions seen lately are not evaluated again."""
        if instructions == self.settings.system_prompt or instructions in self._prepared:
            return
        self._prepared[instructions] = None
        while len(self._prepared) > PREPARED_KEPT:
            self._prepared.popitem(last=False)
        try:
            await self.warm_up(instructions)
        except BaseException:
            self._prepared.pop(instructions, None)  # the first reply evaluates them
            raise

    def remember(self, conversation_id: str, user: str, assistant: str) -> None:
        """Add an exchange to the conversation's history (no id: nothing kept)."""
        if conversation_id:
            self.conversations.add(conversation_id, user, assistant)
