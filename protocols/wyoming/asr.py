"""One Wyoming ``transcribe`` request: a speech session, and a task that forwards its events.

Who ends the turn depends on what ``info`` told the client (``requires_external_vad``):

- The client (Home Assistant 2024.x, any client with ``wyoming.end_of_turn: client`` or the
  turn model off): its own VAD ends the audio with ``audio-stop``, and the transcript follows.
- Hearth (``wyoming.end_of_turn: server`` with the turn model on; ``requires_external_vad``
  false): the session ends the utterance itself, at a finished turn, the longest pause, the
  longest utterance, or with an empty transcript when nobody speaks for ``vad.no_speech_ms``.
  The transcript goes out at once, while the client still sends. Home Assistant 2026 reads
  while it uploads and ends the request at the first ``transcript``. What the client still
  sends is read and dropped until ``audio-stop`` or the connection closes; ``audio-stop``
  then adds nothing. A client that reads only after its own ``audio-stop`` (Home Assistant
  2024.x, which ignores the flag) finds the transcript waiting in the socket.

Audio is bounded either way: the request's whole stream, dropped audio included, is at
most ``limits.max_audio_s``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Protocol

from wyoming.asr import Transcribe, Transcript, TranscriptChunk, TranscriptStop
from wyoming.event import Event
from wyoming.vad import VoiceStarted, VoiceStopped

from daemon.audio.pcm import AudioFormat
from daemon.engines.asr.base import TranscribeOptions
from daemon.engines.asr.prompt import bias_prompt
from daemon.errors import AudioTooLong, HearthError
from daemon.runtime.facade import Hearth
from daemon.runtime.profiles import Profile, Sensitivity
from daemon.speakers.service import SpeakerLookup
from daemon.speech import events as ev
from daemon.speech.session import SpeechSession
from protocols.wyoming.chunks import TranscriptChunker
from protocols.wyoming.errors import Reported, error_event, timed_out

_LOGGER = logging.getLogger(__name__)

SPEAKER_WAIT_S = 1.0
"""Longest a transcript waits for the speaker's name (an embedding takes about 30 ms)."""


class Peer(Protocol):
    """What a request needs of its connection."""

    id: str
    writer: asyncio.StreamWriter

    async def write(self, event: Event) -> None:
        """Send one event."""

    def observe(self, code: str | None) -> None:
        """Tell the observer a request's outcome ("" for success, else the error code)."""


def sensitivity_of(value: object) -> Sensitivity:
    """wyoming 1.10's ``vad_sensitivity`` (an enum, or a string it did not know) as the
    core's :class:`Sensitivity`; none, or one Hearth does not know, is the default."""
    try:
        return Sensitivity(getattr(value, "value", value))
    except ValueError:
        return Sensitivity.DEFAULT


class AsrRequest:
    """One transcribe request: a speech session, and a task that forwards its events."""

    def __init__(self, conn: Peer, hearth: Hearth, request: Transcribe, fmt: AudioFormat) -> None:
        self.conn = conn
        transcribe = TranscribeOptions(
            language=request.language or None,
            # wyoming 1.10: the house's names and terms bias the decode.
            initial_prompt=bias_prompt(request.transcript_names, request.transcript_terms),
        )
        self.session: SpeechSession = hearth.open_session(
            Profile.WYOMING_REQUEST,
            request.name,
            transcribe,
            sensitivity=sensitivity_of(request.vad_sensitivity),
        )
        self.session.start(fmt)
        self.language = self.session.language
        limits = hearth.limits
        self.timeout_s = limits.request_timeout_s
        self.max_audio_s = limits.max_audio_s
        self.chunker = TranscriptChunker()
        self._task: asyncio.Task[None] | None = None
        self.speaker = SpeakerLookup(hearth.speakers)
        """Who is speaking, found beside the decode once the utterance has ended."""
        self.audio_s = 0.0
        """Audio received so far (s), dropped audio included."""
        self.stopping = False
        """``audio-stop`` arrived: from here on the connection reports the outcome."""
        self.reported: str | None = None
        """The outcome this request reported itself, before ``audio-stop``: "" when
        its transcript went out, else the code of the error it sent."""

    def begin(self) -> None:
        """Forward the session's events from now on (after ``transcript-start``)."""
        self._task = asyncio.create_task(self._forward(), name=f"wyoming-asr-{self.conn.id}")
        self._task.add_done_callback(self._forwarding_ended)

    def _forwarding_ended(self, task: asyncio.Task[None]) -> None:
        if not task.cancelled() and (exc := task.exception()) is not None:
            if isinstance(exc, ConnectionError):
                _LOGGER.debug("[%s] connection lost while forwarding", self.conn.id)
            else:
                _LOGGER.error("[%s] forwarding speech events failed", self.conn.id, exc_info=exc)

    def _check(self) -> None:
        """Raise Reported when this request already sent its error."""
        if self.reported:
            raise Reported(self.reported, counted=True)

    async def feed(self, fmt: AudioFormat, pcm: bytes) -> None:
        """One chunk; after the session ended the turn, it is dropped."""
        self._check()
        self.session.start(fmt)
        self.audio_s += len(pcm) / (fmt.frame_bytes * fmt.rate)
        if pcm:
            await self.session.feed(pcm)  # dropped at once once the turn has ended
        if self.session.ended is not None and self.audio_s > self.max_audio_s:
            # The transcript went out long ago and the client streams on regardless.
            exc = AudioTooLong(f"audio is longer than the {self.max_audio_s:g} s limit")
            if self.reported is None:
                raise exc  # not answered yet: the connection reports it
            await self.conn.write(error_event(exc))
            raise Reported(exc.code, counted=True)

    async def finish(self) -> None:
        """Audio is over: the final transcript is written within the request deadline
        (when the session ended the turn itself, it went out already: nothing more)."""
        self.stopping = True
        self._check()
        assert self._task is not None
        try:
            async with asyncio.timeout(self.timeout_s):
                await self.session.finish()
                await self._task  # it writes the final transcript, then ends
        except TimeoutError:
            raise timed_out(self.timeout_s) from None

    async def _identify(self) -> None:
        """Start finding who speaks in the utterance, once."""
        if self.speaker.service is not None and not self.speaker.started:
            self.speaker.start(await self.session.utterance_audio())

    async def close(self) -> None:
        """End the session and the forwarding task (safe to call more than once)."""
        self.speaker.cancel()
        await self.session.close()
        if self._task is not None and not self._task.done():
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    async def _forward(self) -> None:
        async for event in self.session.events():
            if isinstance(event, ev.VoiceStarted):
                await self.conn.write(VoiceStarted(timestamp=event.at_ms).event())
            elif isinstance(event, ev.VoiceStopped):
                await self.conn.write(VoiceStopped(timestamp=event.at_ms).event())
                await self._identify()
            elif isinstance(event, ev.PartialTranscript):
                delta = self.chunker.partial(event.text)
                if delta:
                    await self.conn.write(TranscriptChunk(text=delta).event())
            elif isinstance(event, ev.FinalTranscript):
                await self._final(event)
        await self._after_stream()

    async def _final(self, event: ev.FinalTranscript) -> None:
        delta = self.chunker.final(event.text)
        if delta:
            await self.conn.write(TranscriptChunk(text=delta).event())
        transcript = Transcript(text=event.text, language=event.language).event()
        if event.text:
            await self._identify()  # when no voice-stopped came first
            match = await self.speaker.match(SPEAKER_WAIT_S)
            if match is not None and match.name is not None:
                # Beyond the protocol: clients that do not know the field ignore it.
                transcript.data["speaker"] = match.name
        if not self.stopping:
            # The session ended the turn: the request is answered now, before audio-stop.
            self.reported = ""
            self.conn.observe("")
        await self.conn.write(transcript)
        await self.conn.write(TranscriptStop().event())

    async def _after_stream(self) -> None:
        """The stream ended: when the session's own end of the turn failed before
        ``audio-stop``, the error goes out now (Home Assistant 2026 ends the request
        on it) and the connection's sending side closes, as after any error."""
        ended = self.session.ended
        if ended is None or self.stopping:
            return  # the client ends the turn, or audio-stop came: finish() reports
        await asyncio.wait({ended})
        if ended.cancelled() or (exc := ended.exception()) is None or self.stopping:
            return
        code = exc.code if isinstance(exc, HearthError) else "internal-error"
        if isinstance(exc, HearthError):
            _LOGGER.info("[%s] %s: %s", self.conn.id, exc.code, exc.message)
        else:
            _LOGGER.error("[%s] the transcript failed", self.conn.id, exc_info=exc)
        self.reported = code
        self.conn.observe(code)
        await self.conn.write(error_event(exc))
        if self.conn.writer.can_write_eof():
            self.conn.writer.write_eof()
