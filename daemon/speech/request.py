"""One spoken request: a turn of a conversation that a client sends and waits on.

A Wyoming ``transcribe``, a Willow upload and ``/api/sts`` each send one utterance and
wait for its answer: its final transcript (with the speaker's name, verification and a
translation when asked), or the start of a spoken reply. :class:`SpeechRequest` is that
turn of a push-to-talk :class:`~daemon.speech.conversation.Conversation`. Who ends it
(the client's stop, or the session itself while the client still sends), the audio cap
(audio dropped after the session's own end included) and the deadline are values of
the profile (:class:`RequestLimits`), never the adapter's: every wait on the request
(its body, its events, its answer) fails with :class:`~daemon.errors.RequestTimeout`
past the deadline, which counts from the start for an upload and from the end of the
audio for a live stream.

An adapter feeds audio (:meth:`~SpeechRequest.feed`, or a whole body or file), reads
:meth:`~SpeechRequest.events` when it streams them to its client (opened with
``stream``), and awaits :meth:`~SpeechRequest.finish` for the final. A conversation's
error event comes out of both as the typed error it was.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass

from daemon.audio.decode import BodyDecoder
from daemon.audio.pcm import INTERNAL, AudioFormat
from daemon.errors import AudioTooLong, InvalidAudio, error_for
from daemon.ops.deadline import Deadline
from daemon.speech import events as ev
from daemon.speech.conversation import Conversation, ConversationEvent
from daemon.speech.recording import Recording
from daemon.speech.session import SpeechSession
from daemon.speech.transcribe import decode_upload

_LOGGER = logging.getLogger(__name__)


@dataclass(frozen=True)
class RequestLimits:
    """A profile's bounds on one request."""

    max_audio_s: float
    """The most audio the client may send (s), audio dropped after the end included."""
    deadline_s: float
    """How long the answer may take (``limits.request_timeout_s``)."""
    deadline_counts_audio: bool = True
    """The deadline starts when the request opens (an upload), else at the end of the
    audio (a live stream: the speaker paces it, and the cap bounds it)."""


class SpeechRequest:
    """One utterance a client sends and waits on (see the module docstring)."""

    def __init__(
        self,
        conversation: Conversation,
        limits: RequestLimits,
        *,
        stream: bool = False,
        replies: bool = False,
        recording: Recording | None = None,
    ) -> None:
        speech = conversation.speech
        assert speech is not None, "the conversation listens before a request opens"
        self._conversation = conversation
        self._speech: SpeechSession = speech
        self.limits = limits
        self.language = speech.language
        """The language the utterance is expected in."""
        self.audio_s = 0.0
        """Audio received (s), audio dropped after the session's own end included."""
        self._deadline = Deadline(limits.deadline_s, armed=limits.deadline_counts_audio)
        self._replies = replies
        self._recording = recording
        loop = asyncio.get_running_loop()
        self._answer: asyncio.Future[ev.FinalTranscript] = loop.create_future()
        self._answer.add_done_callback(_retrieved)
        self._final: ev.FinalTranscript | None = None
        self._stopped = False
        self._drain: asyncio.Task[None] | None = None
        if not stream:  # nobody reads the events: they are read here, for the answer
            self._drain = asyncio.ensure_future(self._read_all())

    # ---------------------------------------------------------------- audio in

    @property
    def turn_over(self) -> bool:
        """Whether the session ended the turn itself (the turn model or the server's end
        of turn): the client may stop sending; what it still sends is dropped."""
        speech = self._speech
        return speech.turn_ended or speech.ended is not None

    def start(self, fmt: AudioFormat) -> None:
        """Declare the audio's format before any arrives (InvalidAudio when absurd)."""
        self._speech.start(fmt)

    async def feed(self, fmt: AudioFormat, pcm: bytes) -> None:
        """One chunk of the client's audio (any size, in ``fmt``).

        After the session ended the turn, it is counted against the cap and dropped;
        AudioTooLong once the client has sent more than the profile allows.
        """
        self.audio_s += len(pcm) / (fmt.frame_bytes * fmt.rate)
        if self._speech.ended is not None:
            self._deadline.arm()
            if self.audio_s > self.limits.max_audio_s:
                # The answer went out long ago and the client streams on regardless.
                raise AudioTooLong(f"audio is longer than the {self.limits.max_audio_s:g} s limit")
            return
        await self._conversation.feed(fmt, pcm)
        if self._recording is not None and pcm:
            self._recording.add(fmt, pcm)
        if self._speech.ended is not None:
            self._deadline.arm()

    async def hear_body(self, chunks: AsyncIterator[bytes], decoder: BodyDecoder) -> None:
        """Feed an upload's body as it arrives, decoded by ``decoder`` (in a worker
        thread unless it only copies bytes), until it ends or the session ends the turn.
        InvalidAudio when it holds no audio at all."""
        async with self._deadline.bound():
            async for chunk in chunks:
                if not chunk:
                    continue
                if decoder.inline:
                    pcm = decoder.feed(chunk)
                else:
                    pcm = await asyncio.to_thread(decoder.feed, chunk)
                if pcm and decoder.fmt is not None:
                    await self.feed(decoder.fmt, pcm)
                    if self.turn_over:
                        return  # the rest of the body is not needed
            tail = await asyncio.to_thread(decoder.finish)
            if tail and decoder.fmt is not None:
                await self.feed(decoder.fmt, tail)
        if self._speech.samples == 0:
            raise InvalidAudio("the body holds no audio")

    async def hear_file(self, data: bytes) -> None:
        """Feed a whole recording (any format PyAV reads); InvalidAudio when it holds
        no audio, AudioTooLong past the cap."""
        async with self._deadline.bound():
            samples = await decode_upload(data, self.limits.max_audio_s) if data else None
        if samples is None or not samples.size:
            raise InvalidAudio("the file holds no audio")
        await self.feed(INTERNAL, samples.astype("<i2").tobytes())

    async def stop(self) -> None:
        """The audio is over: the final (and a reply) follow. Nothing more happens when
        the session ended the turn itself, or on a second call."""
        self._deadline.arm()
        if self._stopped:
            return
        self._stopped = True
        if self._speech.ended is None:
            await self._conversation.stop()

    # ---------------------------------------------------------------- answer out

    async def events(self) -> AsyncIterator[ConversationEvent]:
        """The turn's events, in order, within the deadline until the answer is known:
        the speech's (voice, partials), the final, and with a reply its text and audio.
        Ends after the final (with a reply: after the reply); an error event is raised
        as its typed error."""
        source = self._conversation.events()
        while True:
            try:
                async with self._deadline.bound():
                    event = await anext(source)
            except StopAsyncIteration:
                self._fail(InvalidAudio("the request ended without a transcript"))
                return
            except BaseException as exc:
                if isinstance(exc, Exception):
                    self._fail(exc)
                raise
            if isinstance(event, ev.RunError):
                error = error_for(event.code, event.message)
                self._fail(error)
                raise error
            over = self._ends_answer(event)
            yield event
            if over:
                return

    def _ends_answer(self, event: ConversationEvent) -> bool:
        """Settle the answer on ``event``; whether the turn is over with it."""
        if isinstance(event, ev.FinalTranscript):
            self._final = event
            if not self._replies or not event.text.strip():
                self._settle(event)
                return True
        elif isinstance(event, ev.SpeechAudioStart | ev.RunEnded) and self._final is not None:
            self._settle(self._final)  # the reply is under way: no deadline for its audio
            return isinstance(event, ev.RunEnded)
        return False

    async def finish(self) -> ev.FinalTranscript:
        """The audio is over: the final transcript (raises why there is none)."""
        await self.stop()
        async with self._deadline.bound():
            final = await asyncio.shield(self._answer)
        if self._recording is not None:
            await self._save()
        return final

    async def close(self) -> None:
        """End the request and its conversation; safe to call more than once."""
        if self._drain is not None:
            self._drain.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._drain
        await self._conversation.close()
        if not self._answer.done():
            self._answer.cancel()

    # ---------------------------------------------------------------- plumbing

    async def _read_all(self) -> None:
        with contextlib.suppress(Exception):
            async for _ in self.events():
                pass

    def _settle(self, final: ev.FinalTranscript) -> None:
        self._deadline.lift()
        if not self._answer.done():
            self._answer.set_result(final)

    def _fail(self, exc: Exception) -> None:
        if not self._answer.done():
            self._answer.set_exception(exc)

    async def _save(self) -> None:
        recording, self._recording = self._recording, None
        assert recording is not None
        path = await asyncio.to_thread(recording.save)
        if path is not None:
            _LOGGER.info("Saved the request's audio to %s", path)


def _retrieved(future: asyncio.Future[ev.FinalTranscript]) -> None:
    """An answer nobody awaited (the client left) is not an unretrieved exception."""
    if not future.cancelled():
        future.exception()
