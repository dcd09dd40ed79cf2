"""The speech pipeline: speech → transcript → LLM (streamed) → sentences → TTS (streamed).

Every protocol uses this one pipeline. A run validates what it needs up front,
emits everything as internal events through one async generator, and always ends
with :class:`RunEnded`. TTS starts on the first complete sentence of the reply while
the LLM is still writing the rest.

A run attached to a speech session before the audio ends also replies
*speculatively*: when the session's speculative transcript is ready (the person
has paused), the reply starts at once and its events are held back. If the final
transcript is the same text, the held events are replayed and the reply is
usually already speaking; if speech resumed, the speculative reply is cancelled
and nothing of it is kept (not even in the conversation history).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator

from .chat import ChatService
from .errors import HearthError
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
from .session import SpeechSession
from .text import SentenceSplitter
from .tts.base import SynthesisOptions
from .tts.service import TtsService

_LOGGER = logging.getLogger(__name__)
_END = object()
FIRST_CLAUSE_CHARS = 16
"""The first spoken piece may end at a comma once it is this long (earlier audio)."""


class SpeechPipeline:
    """Runs speech or text through the LLM and, optionally, out as speech."""

    def __init__(self, chat: ChatService, tts: TtsService) -> None:
        self.chat = chat
        self.tts = tts

    def start(
        self,
        *,
        session: SpeechSession | None = None,
        text: str | None = None,
        conversation_id: str = "",
        speak: bool = True,
        tts_options: SynthesisOptions | None = None,
        speculate: bool = True,
    ) -> PipelineRun:
        """Begin a run. Attach it while the session still receives audio so that the
        reply can start speculatively; then iterate :meth:`PipelineRun.events`."""
        return PipelineRun(
            self,
            session,
            text,
            conversation_id,
            speak,
            tts_options or SynthesisOptions(),
            speculate,
        )

    def run(self, **kwargs: object) -> AsyncIterator[PipelineEvent]:
        """Shorthand for ``start(...).events()`` (for input that is already complete)."""
        return self.start(**kwargs).events()  # type: ignore[arg-type]


class _Reply:
    """A reply produced in the background from the moment it is created.

    Its events wait in a queue until :meth:`events` reads them, so the same object
    serves a reply started at the end of the input and one started speculatively.
    The exchange is not remembered here: the run does that once the reply is used.
    """

    def __init__(
        self,
        pipeline: SpeechPipeline,
        conversation_id: str,
        text: str,
        speak: bool,
        tts_options: SynthesisOptions,
    ) -> None:
        self.text = text
        self._chat = pipeline.chat
        self._tts = pipeline.tts
        self._conversation_id = conversation_id
        self._tts_options = tts_options
        self._out: asyncio.Queue[object] = asyncio.Queue()
        self._task = asyncio.ensure_future(self._produce(speak))

    async def _produce(self, speak: bool) -> None:
        sentences: asyncio.Queue[str | None] | None = asyncio.Queue() if speak else None
        await self._out.put(ReplyStarted(self._conversation_id))
        try:
            # A TaskGroup cancels the other stage when one fails, so a TTS error
            # does not leave the LLM generating into the void.
            async with asyncio.TaskGroup() as group:
                group.create_task(self._think(sentences))
                if sentences is not None:
                    group.create_task(self._speak(sentences))
        except BaseExceptionGroup as group_error:
            await self._out.put(group_error.exceptions[0])
        else:
            await self._out.put(_END)

    async def _think(self, sentences: asyncio.Queue[str | None] | None) -> None:
        splitter = SentenceSplitter(first_clause_chars=FIRST_CLAUSE_CHARS)
        parts: list[str] = []
        try:
            async for piece in self._chat.chat(self._conversation_id, self.text, remember=False):
                parts.append(piece)
                await self._out.put(ReplyChunk(piece))
                if sentences is not None:
                    for sentence in splitter.feed(piece):
                        await sentences.put(sentence)
            if sentences is not None:
                for sentence in splitter.flush():
                    await sentences.put(sentence)
            await self._out.put(ReplyDone("".join(parts).strip(), self._conversation_id))
        finally:
            if sentences is not None:
                await sentences.put(None)

    async def _speak(self, sentences: asyncio.Queue[str | None]) -> None:
        started = False
        while (sentence := await sentences.get()) is not None:
            async for block in self._tts.stream(sentence, self._tts_options):
                if not started:
                    started = True
                    await self._out.put(SpeechAudioStart(block.rate))
                await self._out.put(SpeechAudio(block.pcm, block.sentence))
        if started:
            await self._out.put(SpeechAudioStop())

    async def events(self) -> AsyncIterator[PipelineEvent]:
        """Every event, those already produced first; raises the stage's error."""
        try:
            while (item := await self._out.get()) is not _END:
                if isinstance(item, BaseException):
                    raise item
                yield item  # type: ignore[misc]
        finally:
            await self.cancel()

    async def cancel(self) -> None:
        """Stop producing (safe to call more than once)."""
        self._task.cancel()
        try:
            await self._task
        except asyncio.CancelledError:
            pass


class PipelineRun:
    """One run of the pipeline; see :meth:`SpeechPipeline.start`."""

    def __init__(
        self,
        pipeline: SpeechPipeline,
        session: SpeechSession | None,
        text: str | None,
        conversation_id: str,
        speak: bool,
        tts_options: SynthesisOptions,
        speculate: bool,
    ) -> None:
        self.pipeline = pipeline
        self.session = session
        self.text = text
        self.conversation_id = conversation_id
        self.speak = speak
        self.tts_options = tts_options
        self.speculation_used = False
        """True when the reply came from a speculative start."""
        self._spec: _Reply | None = None
        self._dropped: set[asyncio.Task[None]] = set()
        if session is not None and speculate:
            session.on_speculation(self._on_speculation)

    def _new_reply(self, text: str) -> _Reply:
        return _Reply(self.pipeline, self.conversation_id, text, self.speak, self.tts_options)

    def _on_speculation(self, text: str | None) -> None:
        """The session has a new speculative transcript (None: it was discarded)."""
        self._drop_speculation()
        if text and text.strip():
            self._spec = self._new_reply(text)

    def _drop_speculation(self) -> None:
        spec, self._spec = self._spec, None
        if spec is not None:
            # Called from a session callback: cancel in a task of its own.
            task = asyncio.ensure_future(spec.cancel())
            self._dropped.add(task)
            task.add_done_callback(self._dropped.discard)

    def abandon(self) -> None:
        """Give up a run that will never be iterated: its speculative reply, if one
        started, is cancelled and leaves no trace."""
        self._drop_speculation()

    async def events(self) -> AsyncIterator[PipelineEvent]:
        """Run to the end: the final transcript (for speech), the reply, RunEnded."""
        try:
            if self.speak:
                self.pipeline.tts.check_voice(self.tts_options)  # fail before any work
            text = self.text
            if self.session is not None:
                final = await self.session.finish()
                yield final
                text = final.text
            if text and text.strip():
                if self._spec is not None and self._spec.text == text:
                    reply, self._spec = self._spec, None
                    self.speculation_used = True
                else:
                    self._drop_speculation()
                    reply = self._new_reply(text)
                async for event in reply.events():
                    if isinstance(event, ReplyDone):
                        self.pipeline.chat.remember(self.conversation_id, text, event.text)
                    yield event
        except asyncio.CancelledError:
            raise
        except HearthError as exc:
            yield RunError(exc.code, exc.message)
        except Exception as exc:  # noqa: BLE001 - one place turns failures into events
            _LOGGER.exception("Pipeline run failed")
            yield RunError("internal-error", f"{type(exc).__name__}: {exc}")
        finally:
            self._drop_speculation()
            if self.session is not None:
                await self.session.close()
        yield RunEnded()
