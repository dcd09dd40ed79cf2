"""The speech pipeline: speech → transcript → LLM (streamed) → sentences → TTS (streamed).

Every protocol uses this one pipeline. A run validates what it needs up front,
runs its stages in order, emits everything as internal events through one async
generator, and always ends with :class:`RunEnded`. TTS starts on the first complete
sentence of the reply while the LLM is still writing the rest.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import OrderedDict
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field

from .errors import HearthError, InvalidText, TextTooLong
from .events import (
    PipelineEvent,
    ReplyChunk,
    ReplyDone,
    ReplyStarted,
    RunEnded,
    RunError,
    SpeechAudio,
    SpeechAudioStart,
    SpeechAudioStop,
)
from .llm.base import ChatMessage, LlmEngine, Sampling
from .session import SpeechSession
from .text import SentenceSplitter
from .tts.base import SynthesisOptions
from .tts.service import TtsService

_LOGGER = logging.getLogger(__name__)


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
        """Record one exchange."""
        conv = self._items.pop(conversation_id, None) or _Conversation()
        conv.turns += [ChatMessage("user", user), ChatMessage("assistant", assistant)]
        conv.turns = conv.turns[-2 * self.max_turns :] if self.max_turns else []
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


class ChatService:
    """The LLM with a system prompt, limits and per-conversation history."""

    def __init__(
        self, llm: LlmEngine, conversations: ConversationStore, settings: ChatSettings
    ) -> None:
        self.llm = llm
        self.conversations = conversations
        self.settings = settings

    def build_messages(self, conversation_id: str, text: str) -> list[ChatMessage]:
        """System prompt, the history that fits, and the new user turn."""
        if not text.strip():
            raise InvalidText("the prompt is empty")
        if len(text) > self.settings.max_prompt_chars:
            raise TextTooLong(
                f"prompt is {len(text)} characters; the limit is {self.settings.max_prompt_chars}"
            )
        system = (
            [ChatMessage("system", self.settings.system_prompt)]
            if self.settings.system_prompt
            else []
        )
        history = self.conversations.history(conversation_id) if conversation_id else []
        user = ChatMessage("user", text)
        budget = self.llm.context_tokens - self.settings.sampling.max_tokens
        # Drop the oldest exchanges until the prompt fits the context window.
        while (
            history
            and self.llm.context_tokens
            and self.llm.count_tokens(system + history + [user]) > budget
        ):
            history = history[2:]
        return system + history + [user]

    async def chat(self, conversation_id: str, text: str) -> AsyncIterator[str]:
        """Stream the LLM's reply to ``text``; the exchange joins the history."""
        messages = self.build_messages(conversation_id, text)
        parts: list[str] = []
        async for piece in self.llm.stream_chat(messages, self.settings.sampling):
            parts.append(piece)
            yield piece
        if conversation_id:
            self.conversations.add(conversation_id, text, "".join(parts).strip())


class SpeechPipeline:
    """Runs speech or text through the LLM and out as speech."""

    def __init__(self, chat: ChatService, tts: TtsService) -> None:
        self.chat = chat
        self.tts = tts

    async def run(
        self,
        *,
        session: SpeechSession | None = None,
        text: str | None = None,
        conversation_id: str = "",
        speak: bool = True,
        tts_options: SynthesisOptions | None = None,
    ) -> AsyncIterator[PipelineEvent]:
        """One run: a finished session's audio (or ``text``) in, events out.

        The caller feeds ``session`` (the pipeline calls ``finish``), or passes text.
        """
        tts_options = tts_options or SynthesisOptions()
        try:
            if speak:
                self.tts.check_voice(tts_options)  # an unknown voice fails before any work
            if session is not None:
                final = await session.finish()
                yield final
                text = final.text
            if not text or not text.strip():
                return
            yield ReplyStarted(conversation_id)
            if speak:
                async for event in self._reply_with_speech(conversation_id, text, tts_options):
                    yield event
            else:
                parts = []
                async for piece in self.chat.chat(conversation_id, text):
                    parts.append(piece)
                    yield ReplyChunk(piece)
                yield ReplyDone("".join(parts).strip(), conversation_id)
        except asyncio.CancelledError:
            raise
        except HearthError as exc:
            yield RunError(exc.code, exc.message)
        except Exception as exc:  # noqa: BLE001 - one place turns failures into events
            _LOGGER.exception("Pipeline run failed")
            yield RunError("internal-error", f"{type(exc).__name__}: {exc}")
        finally:
            if session is not None:
                await session.close()
        yield RunEnded()

    async def _reply_with_speech(
        self, conversation_id: str, text: str, tts_options: SynthesisOptions
    ) -> AsyncIterator[PipelineEvent]:
        out: asyncio.Queue[PipelineEvent | BaseException | None] = asyncio.Queue()
        sentences: asyncio.Queue[str | None] = asyncio.Queue()

        async def think() -> None:
            splitter = SentenceSplitter()
            parts: list[str] = []
            try:
                async for piece in self.chat.chat(conversation_id, text):
                    parts.append(piece)
                    await out.put(ReplyChunk(piece))
                    for sentence in splitter.feed(piece):
                        await sentences.put(sentence)
                for sentence in splitter.flush():
                    await sentences.put(sentence)
                await out.put(ReplyDone("".join(parts).strip(), conversation_id))
            finally:
                await sentences.put(None)

        async def speak() -> None:
            started = False
            while (sentence := await sentences.get()) is not None:
                async for block in self.tts.stream(sentence, tts_options):
                    if not started:
                        started = True
                        await out.put(SpeechAudioStart(block.rate))
                    await out.put(SpeechAudio(block.pcm, block.sentence))
            if started:
                await out.put(SpeechAudioStop())

        async def run_all() -> None:
            try:
                await asyncio.gather(think(), speak())
            except BaseException as exc:  # noqa: BLE001 - handed to the consumer
                await out.put(exc)
            else:
                await out.put(None)

        runner = asyncio.create_task(run_all())
        try:
            while (item := await out.get()) is not None:
                if isinstance(item, BaseException):
                    raise item
                yield item
        finally:
            runner.cancel()
            try:
                await runner
            except asyncio.CancelledError:
                pass


__all__ = ["ChatService", "ChatSettings", "ConversationStore", "SpeechPipeline"]
