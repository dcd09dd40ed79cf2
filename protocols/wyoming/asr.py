"""One Wyoming ``transcribe`` request: a spoken request of the core, and a task that
forwards its events.

Who ends the turn depends on what ``info`` told the client (``requires_external_vad``):

- The client (Home Assistant 2024.x, any client with ``wyoming.end_of_turn: client`` or the
  turn model off): its own VAD ends the audio with ``audio-stop``, and the transcript follows.
- Hearth (``wyoming.end_of_turn: server`` with the turn model on; ``requires_external_vad``
  false): the request's profile is a server-ended one, and the transcript goes out as soon as
  the core ends the turn, while the client still sends. Home Assistant 2026 reads while it
  uploads and ends the request at the first ``transcript``; what the client still sends is
  read, counted against the audio cap and dropped until ``audio-stop``, which then adds
  nothing. A client that reads only after its own ``audio-stop`` (Home Assistant 2024.x,
  which ignores the flag) finds the transcript waiting in the socket.

The speaker's name, the audio cap and the deadline are the core's (the profile's values);
this module only frames the request's events for the wire and reports its outcome.
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
from daemon.errors import AudioTooLong, HearthError
from daemon.runtime.api import (
    Decoding,
    HouseView,
    Profile,
    Sensitivity,
    Services,
    SpeechRequest,
    SpokenRequest,
    TranscribeOptions,
    bias_prompt,
)
from daemon.runtime.api import events as ev
from protocols.wyoming.chunks import TranscriptChunker
from protocols.wyoming.errors import Reported, error_event

_LOGGER = logging.getLogger(__name__)


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


def ends_turns(house: HouseView) -> bool:
    """Whether Hearth ends each request's turn itself: ``wyoming.end_of_turn`` is server
    and the turn model is on (without it Home Assistant's own segmenter ends turns as
    well as a fixed silence here would)."""
    return house.config.wyoming.end_of_turn == "server" and house.can_end_turns


class AsrRequest:
    """One transcribe request: the core's spoken request, and a task that forwards its
    events (open it with :meth:`open`)."""

    def __init__(self, conn: Peer, request: SpeechRequest) -> None:
        self.conn = conn
        self.request = request
        self.language = request.language
        self.chunker = TranscriptChunker()
        self._task: asyncio.Task[None] | None = None
        self.stopping = False
        """``audio-stop`` arrived: from here on the connection reports the outcome."""
        self.reported: str | None = None
        """The outcome this request reported itself, before ``audio-stop``: "" when
        its transcript went out, else the code of the error it sent."""

    @classmethod
    async def open(
        cls, conn: Peer, services: Services, request: Transcribe, fmt: AudioFormat
    ) -> AsrRequest:
        """The request ``transcribe`` asked for, its audio in ``fmt`` (checked now)."""
        transcribe = TranscribeOptions(
            language=request.language or None,
            # wyoming 1.10: the house's names and terms bias the decode.
            initial_prompt=bias_prompt(request.transcript_names, request.transcript_terms),
        )
        profile = Profile.SERVER_ENDED if ends_turns(services.house) else Profile.CLIENT_ENDED
        spoken = SpokenRequest(
            profile,
            Decoding(request.name, transcribe),
            sensitivity=sensitivity_of(request.vad_sensitivity),
            stream=True,
        )
        # One request, one set of engines, even across a reload (the core holds them).
        speech = await services.speech.open_request(spoken)
        try:
            speech.start(fmt)
        except BaseException:
            await speech.close()
            raise
        return cls(conn, speech)

    def begin(self) -> None:
        """Forward the request's events from now on (after ``transcript-start``)."""
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
        """One chunk (dropped once the turn is over, within the audio cap)."""
        self._check()
        try:
            await self.request.feed(fmt, pcm)
        except AudioTooLong as exc:
            if self.reported is None:
                raise  # not answered yet: the connection reports it
            # The transcript went out long ago and the client streams on regardless.
            await self.conn.write(error_event(exc))
            raise Reported(exc.code, counted=True) from None

    async def finish(self) -> None:
        """Audio is over: the final transcript is written within the request deadline
        (when the turn ended before, it went out already: nothing more)."""
        self.stopping = True
        self._check()
        assert self._task is not None
        await self.request.finish()
        await self._task  # it writes the final transcript, then ends

    async def close(self) -> None:
        """End the request and the forwarding task (safe to call more than once)."""
        await self.request.close()
        if self._task is not None and not self._task.done():
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    async def _forward(self) -> None:
        try:
            async for event in self.request.events():
                if isinstance(event, ev.VoiceStarted):
                    await self.conn.write(VoiceStarted(timestamp=event.at_ms).event())
                elif isinstance(event, ev.VoiceStopped):
                    await self.conn.write(VoiceStopped(timestamp=event.at_ms).event())
                elif isinstance(event, ev.PartialTranscript):
                    delta = self.chunker.partial(event.text)
                    if delta:
                        await self.conn.write(TranscriptChunk(text=delta).event())
                elif isinstance(event, ev.FinalTranscript):
                    await self._final(event)
        except HearthError as exc:
            await self._failed(exc)

    async def _final(self, event: ev.FinalTranscript) -> None:
        delta = self.chunker.final(event.text)
        if delta:
            await self.conn.write(TranscriptChunk(text=delta).event())
        transcript = Transcript(text=event.text, language=event.language).event()
        if event.speaker is not None:
            # Beyond the protocol: clients that do not know the field ignore it.
            transcript.data["speaker"] = event.speaker
        if not self.stopping:
            # The turn ended before audio-stop: the request is answered now.
            self.reported = ""
            self.conn.observe("")
        await self.conn.write(transcript)
        await self.conn.write(TranscriptStop().event())

    async def _failed(self, exc: HearthError) -> None:
        """The turn failed. After ``audio-stop`` the connection reports it; before it (the
        core ended the turn itself), the error goes out now (Home Assistant 2026 ends
        the request on it) and the connection's sending side closes, as after any error."""
        if self.stopping:
            return
        _LOGGER.info("[%s] %s: %s", self.conn.id, exc.code, exc.message)
        self.reported = exc.code
        self.conn.observe(exc.code)
        await self.conn.write(error_event(exc))
        if self.conn.writer.can_write_eof():
            self.conn.writer.write_eof()
