"""The speech pipeline: speech → transcript → LLM (streamed) → sentences → TTS (streamed).

Every protocol uses this one pipeline. A run validates what it needs up front,
emits everything as internal events through one async generator, and always ends
with :class:`RunEnded`. A run over a speech session passes the session's events
(VAD, partials, the final transcript) through too, so an adapter reads one stream;
it reads it from the start, while the audio still arrives, and calls the session's
``finish()`` when the audio ends. The reply's text becomes a voice through the one
sentence speaker (:mod:`~daemon.speech.sentence_speaker`): TTS starts on the first
complete sentence while the LLM is still writing the rest.

A reply that may call tools (``ChatOptions.tools``) is the same one generation: its
words are spoken as they come, and its calls arrive whole with :class:`ReplyDone`.

A run over a speech session also replies *speculatively*: when the session's
speculative transcript arrives (the person has paused), the reply starts at once
and its events are held back. If the final transcript is the same text, the held
events are replayed and the reply is usually already speaking; if speech resumed,
the speculative reply is cancelled and nothing of it is kept (not even in the
conversation history).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncGenerator, AsyncIterator
from dataclasses import replace

from daemon.engines.llm.base import Reply
from daemon.engines.llm.toolcalls import new_call_id
from daemon.engines.tts.base import SynthesisOptions
from daemon.engines.tts.service import TtsService
from daemon.engines.tts.text import FIRST_WORDS
from daemon.errors import HearthError
from daemon.speech.chat import ChatOptions, ChatService
from daemon.speech.events import (
    FinalTranscript,
    PipelineEvent,
    ReplyChunk,
    ReplyDone,
    ReplyStarted,
    RunEnded,
    RunError,
    SpeculationDiscarded,
    SpeculativeTranscript,
    SpeechAudio,
    SpeechAudioStart,
    SpeechAudioStop,
)
from daemon.speech.sentence_speaker import SentenceSpeaker
from daemon.speech.session import SpeechSession

_LOGGER = logging.getLogger(__name__)
_END = object()
MAX_REPLY_EVENTS = 64
"""Reply events produced ahead of the reader; then the LLM and TTS wait."""


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
        speaker: str | None = None,
        chat_options: ChatOptions | None = None,
    ) -> PipelineRun:
        """Begin a run; read :meth:`PipelineRun.events` from now on (with a session,
        while its audio still arrives, so that the reply can start speculatively).
        ``chat_options``: the client's own instructions and limits for the reply."""
        return PipelineRun(
            self,
            session,
            text,
            conversation_id,
            speak,
            tts_options or SynthesisOptions(),
            speculate,
            speaker,
            chat_options or ChatOptions(),
        )

    def replies(
        self,
        conversation_id: str = "",
        speak: bool = True,
        tts_options: SynthesisOptions | None = None,
        chat_options: ChatOptions | None = None,
    ) -> SpeculativeReplies:
        """Replies to each utterance of a hands-free stream, started speculatively."""
        replies = SpeculativeReplies(
            self, conversation_id, speak, tts_options or SynthesisOptions()
        )
        replies.chat_options = chat_options or ChatOptions()
        return replies

    def run(self, **kwargs: object) -> AsyncIterator[PipelineEvent]:
        """Shorthand for ``start(...).events()`` (for input that is already complete)."""
        return self.start(**kwargs).events()  # type: ignore[arg-type]


class _Reply:
    """A reply produced in the background from the moment it is created.

    Its events wait in a bounded queue until :meth:`events` reads them (when the
    queue is full the LLM and TTS wait), so the same object
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
        speaker: str | None = None,
        chat_options: ChatOptions | None = None,
        speculative: bool = False,
    ) -> None:
        self.text = text
        self.speaker = speaker
        self._home = pipeline.chat.home if speculative else None
        self._command: asyncio.Task[bool] | None = None
        """A speculative reply's question: is its text a household command? A command
        is never carried out on a guess (the person may go on: "turn on the lights ...
        in the kitchen"); such a reply stays silent and the final starts its own."""
        if self._home is not None:
            self._command = asyncio.ensure_future(self._home.is_command(text))
        """The enrolled speaker the reply is for (the system prompt names them)."""
        self.chat_options = chat_options or ChatOptions()
        """The client's own instructions and limits the reply is written under."""
        self._chat = pipeline.chat
        self._tts = pipeline.tts
        self._conversation_id = conversation_id
        self._tts_options = tts_options
        self._out: asyncio.Queue[object] = asyncio.Queue(MAX_REPLY_EVENTS)
        self._task = asyncio.ensure_future(self._produce(speak))

    async def deferred(self) -> bool:
        """Whether this speculative reply held back for a command (then unusable)."""
        return self._command is not None and await self._command

    async def _produce(self, speak: bool) -> None:
        if await self.deferred():
            await self._out.put(_END)
            return
        voice = None
        if speak:
            voice = SentenceSpeaker(self._tts, self._tts_options, first_words=FIRST_WORDS)
        await self._out.put(ReplyStarted(self._conversation_id))
        try:
            # A TaskGroup cancels the other stage when one fails, so a TTS error
            # does not leave the LLM generating into the void.
            async with asyncio.TaskGroup() as group:
                group.create_task(self._think(voice))
                if voice is not None:
                    group.create_task(self._speak(voice))
        except BaseExceptionGroup as group_error:
            await self._out.put(_one_error(group_error))
        else:
            await self._out.put(_END)

    async def _think(self, voice: SentenceSpeaker | None) -> None:
        reply = Reply()
        async for piece in self._chat.converse(
            self._conversation_id,
            self.text,
            remember=False,
            speaker=self.speaker,
            options=self.chat_options,
        ):
            reply.add(piece)
            if not isinstance(piece, str):
                continue  # a piece of a tool call: the calls come whole with the end
            await self._out.put(ReplyChunk(piece))
            if voice is not None:
                await voice.write(piece)
        calls = tuple(replace(c, id=c.id or new_call_id()) for c in reply.tool_calls)
        await self._out.put(ReplyDone(reply.text.strip(), self._conversation_id, calls))
        if voice is not None:
            voice.end()

    async def _speak(self, voice: SentenceSpeaker) -> None:
        started = False
        async for _, block in voice.audio():
            if block is None:
                continue  # a sentence's end: the reply's audio runs on
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
        speaker: str | None = None,
        chat_options: ChatOptions | None = None,
    ) -> None:
        self.pipeline = pipeline
        self.session = session
        self.text = text
        self.conversation_id = conversation_id
        self.speak = speak
        self.tts_options = tts_options
        self.speaker = speaker
        self.chat_options = chat_options or ChatOptions()
        self.speculation_used = False
        """True when the reply came from a speculative start."""
        self._speculate = speculate
        self._spec: _Reply | None = None

    def _new_reply(self, text: str, speculative: bool = False) -> _Reply:
        return _Reply(
            self.pipeline,
            self.conversation_id,
            text,
            self.speak,
            self.tts_options,
            self.speaker,
            self.chat_options,
            speculative,
        )

    async def _drop_speculation(self) -> None:
        spec, self._spec = self._spec, None
        if spec is not None:
            await spec.cancel()

    async def events(self) -> AsyncGenerator[PipelineEvent, None]:
        """Run to the end: the final transcript (for speech), the reply, RunEnded."""
        try:
            if self.speak:
                self.pipeline.tts.check_voice(self.tts_options)  # fail before any work
            text = self.text
            if self.session is not None:
                text = None
                async for heard in self.session.events():
                    if isinstance(heard, SpeculativeTranscript | SpeculationDiscarded):
                        await self._drop_speculation()
                        if isinstance(heard, SpeculativeTranscript) and self._speculate:
                            if heard.text.strip():
                                self._spec = self._new_reply(heard.text, speculative=True)
                    yield heard
                    if isinstance(heard, FinalTranscript):
                        text = heard.text
                # No final: finish() failed or the session closed, and the caller
                # of finish() reports why.
            if text and text.strip():
                spec = self._spec
                wanted = (text, self.speaker, self.chat_options)
                same = spec is not None and (spec.text, spec.speaker, spec.chat_options) == wanted
                if spec is not None and same and not await spec.deferred():
                    reply, self._spec = spec, None
                    self.speculation_used = True
                else:
                    await self._drop_speculation()
                    reply = self._new_reply(text)
                async for event in reply.events():
                    if isinstance(event, ReplyDone) and not event.tool_calls:
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
            await self._drop_speculation()
            if self.session is not None:
                await self.session.close()
        yield RunEnded()


class SpeculativeReplies:
    """Hands-free replies that start on each utterance's speculative transcript.

    A hands-free stream has many utterances and its reader must never wait on a
    reply (the audio intake would stall), so the reply of each one runs beside the
    stream: :meth:`observe` sees every session event and starts the reply when a
    speculative transcript arrives (while the turn is still being decided);
    :meth:`start` gives the run for a final transcript, which uses that reply when
    the final says the same.
    """

    def __init__(
        self,
        pipeline: SpeechPipeline,
        conversation_id: str,
        speak: bool,
        tts_options: SynthesisOptions,
    ) -> None:
        self.pipeline = pipeline
        self.conversation_id = conversation_id
        self.speak = speak
        self.tts_options = tts_options
        self.speaker: str | None = None
        """Whose voice the next utterance is expected to be (the last one heard): a
        speculative reply is written for them, and kept when the final agrees."""
        self.chat_options = ChatOptions()
        """The client's instructions and limits for the next reply (a change applies to
        the next speculative start)."""
        self._spec: _Reply | None = None

    async def observe(self, event: PipelineEvent) -> None:
        """Follow the session's events (call for each, in order)."""
        if isinstance(event, SpeculativeTranscript | SpeculationDiscarded):
            await self.close()
            if isinstance(event, SpeculativeTranscript) and event.text.strip():
                self._spec = _Reply(
                    self.pipeline,
                    self.conversation_id,
                    event.text,
                    self.speak,
                    self.tts_options,
                    self.speaker,
                    self.chat_options,
                    speculative=True,
                )

    def start(self, final: FinalTranscript) -> PipelineRun:
        """The reply run for an utterance's final transcript (read its events)."""
        run = self.pipeline.start(
            text=final.text,
            conversation_id=self.conversation_id,
            speak=self.speak,
            tts_options=self.tts_options,
            speaker=final.speaker,
            chat_options=self.chat_options,
        )
        run._spec, self._spec = self._spec, None  # used when text, speaker and options match
        self.speaker = final.speaker
        return run

    async def close(self) -> None:
        """Drop a speculative reply that no final claimed."""
        spec, self._spec = self._spec, None
        if spec is not None:
            await spec.cancel()


def _one_error(group: BaseExceptionGroup[BaseException]) -> BaseException:
    """The error a failed reply reports: its first HearthError, else its first error.

    The others are logged, not lost. Cancellation alone is re-raised, and so is
    anything that is not an Exception (KeyboardInterrupt, SystemExit).
    """
    leaves = _leaves(group)
    if any(not isinstance(e, Exception | asyncio.CancelledError) for e in leaves):
        raise group
    errors = [e for e in leaves if not isinstance(e, asyncio.CancelledError)]
    if not errors:
        raise asyncio.CancelledError()
    chosen = next((e for e in errors if isinstance(e, HearthError)), errors[0])
    for other in errors:
        if other is not chosen:
            _LOGGER.error("A reply stage also failed", exc_info=other)
    return chosen


def _leaves(group: BaseExceptionGroup[BaseException]) -> list[BaseException]:
    out: list[BaseException] = []
    for exc in group.exceptions:
        out.extend(_leaves(exc) if isinstance(exc, BaseExceptionGroup) else [exc])
    return out
