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
from dataclasses import dataclass, field

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

    async def reply(
        self, conversation_id: str, text: str, speak: bool, tts_options: SynthesisOptions
    ) -> AsyncIterator[PipelineEvent]:
        """The reply to ``text`` as events; the exchange is not yet remembered."""
        yield ReplyStarted(conversation_id)
        if not speak:
            parts = []
            async for piece in self.chat.chat(conversation_id, text, remember=False):
                parts.append(piece)
                yield ReplyChunk(piece)
            yield ReplyDone("".join(parts).strip(), conversation_id)
            return
        async for event in self._reply_with_speech(conversation_id, text, tts_options):
            yield event

    async def _reply_with_speech(
        self, conversation_id: str, text: str, tts_options: SynthesisOptions
    ) -> AsyncIterator[PipelineEvent]:
        out: asyncio.Queue[object] = asyncio.Queue()
        sentences: asyncio.Queue[str | None] = asyncio.Queue()

        async def think() -> None:
            splitter = SentenceSplitter(first_clause_chars=FIRST_CLAUSE_CHARS)
            parts: list[str] = []
            try:
                async for piece in self.chat.chat(conversation_id, text, remember=False):
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
                # A TaskGroup cancels the other stage when one fails, so a TTS error
                # does not leave the LLM generating into the void.
                async with asyncio.TaskGroup() as group:
                    group.create_task(think())
                    group.create_task(speak())
            except BaseExceptionGroup as group_error:
                await out.put(group_error.exceptions[0])
            else:
                await out.put(_END)

        runner = asyncio.create_task(run_all())
        try:
            while (item := await out.get()) is not _END:
                if isinstance(item, BaseException):
                    raise item
                yield item  # type: ignore[misc]
        finally:
            await _cancel(runner)


@dataclass
class _Speculation:
    """A reply started from a speculative transcript; its events wait in a queue."""

    text: str
    queue: asyncio.Queue[object] = field(default_factory=asyncio.Queue)
    task: asyncio.Task[None] | None = None


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
        self._spec: _Speculation | None = None
        if session is not None and speculate:
            session.on_speculation(self._on_speculation)

    def _on_speculation(self, text: str | None) -> None:
        """The session has a new speculative transcript (None: it was discarded)."""
        self._drop_speculation()
        if text and text.strip():
            spec = _Speculation(text)
            spec.task = asyncio.ensure_future(self._fill(spec))
            self._spec = spec

    async def _fill(self, spec: _Speculation) -> None:
        try:
            async for event in self.pipeline.reply(
                self.conversation_id, spec.text, self.speak, self.tts_options
            ):
                await spec.queue.put(event)
        except asyncio.CancelledError:
            raise
        except BaseException as exc:  # noqa: BLE001 - replayed to the consumer
            await spec.queue.put(exc)
            return
        await spec.queue.put(_END)

    def _drop_speculation(self) -> None:
        spec, self._spec = self._spec, None
        if spec is not None and spec.task is not None:
            spec.task.cancel()

    async def _replay(self, spec: _Speculation) -> AsyncIterator[PipelineEvent]:
        replayed = 0
        while (item := await spec.queue.get()) is not _END:
            if isinstance(item, BaseException):
                if replayed:
                    raise item
                # Failed before it said anything (busy, say): reply the plain way.
                _LOGGER.debug("Speculative reply failed (%s); replying again", item)
                self.speculation_used = False
                async for event in self.pipeline.reply(
                    self.conversation_id, spec.text, self.speak, self.tts_options
                ):
                    yield event
                return
            replayed += 1
            yield item  # type: ignore[misc]

    async def _reply(self, text: str) -> AsyncIterator[PipelineEvent]:
        spec = self._spec
        if spec is not None and spec.text == text:
            self.speculation_used = True
            source = self._replay(spec)
        else:
            self._drop_speculation()
            source = self.pipeline.reply(self.conversation_id, text, self.speak, self.tts_options)
        async for event in source:
            if isinstance(event, ReplyDone):
                self.pipeline.chat.remember(self.conversation_id, text, event.text)
            yield event

    async def events(self) -> AsyncIterator[PipelineEvent]:
        """Run to the end: the final transcript (for speech), the reply, RunEnded."""
        pipeline = self.pipeline
        try:
            if self.speak:
                pipeline.tts.check_voice(self.tts_options)  # fail before any work
            text = self.text
            if self.session is not None:
                final = await self.session.finish()
                yield final
                text = final.text
            if text and text.strip():
                async for event in self._reply(text):
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


async def _cancel(task: asyncio.Task[None]) -> None:
    task.cancel()
    try:
        await task
    except asyncio.CancelledError:
        pass
