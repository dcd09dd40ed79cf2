"""One Wyoming connection: events in, calls into daemon/, events out.

A connection may carry many requests one after another (satellites keep theirs
open) or just one (Home Assistant connects per request). Failures become an
``error`` event with the HearthError's stable code.

Home Assistant 2024.x's clients ignore ``error``: they read until the event that
ends their request (``transcript``, ``audio-stop``, ``handled``) or until the
connection closes (only the newest speech-to-text client, 2026's ``stt.py``, ends
its request at an ``error``). So after an error the server ends what the client
waits for the only way every client understands, as the reference servers do: it
sends the ``error``, closes its side (the client reads EOF at once), reads and drops
what the client still sends for at most LINGER_S (so the error is not lost to a TCP
reset), and closes. This holds for every code: ``busy``, ``invalid-audio``,
``unknown-model``, ``unsupported-language``, ``audio-too-long``, ``unknown-voice``,
``text-too-long``, ``invalid-text``, ``timeout``, ``invalid-event`` (a broken
frame or malformed event), ``internal-error``.

One case keeps a satellite's long connection usable: an event type Hearth does not
know is skipped without an answer and the connection lives on, as the Wyoming README
asks: peers skip events they do not handle (a satellite's stream carries events
for other programs), no request was started by it, and nothing waits on its answer.
``describe`` and ``ping`` cannot fail on a well-formed event.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from collections.abc import Callable

from wyoming.asr import Transcribe, Transcript, TranscriptStart
from wyoming.audio import AudioChunk, AudioStart, AudioStop
from wyoming.error import Error
from wyoming.event import Event, async_write_event
from wyoming.info import Describe
from wyoming.ping import Ping, Pong
from wyoming.tts import (
    Synthesize,
    SynthesizeStop,
)

from daemon.audio.pcm import AudioFormat
from daemon.errors import HearthError, InvalidAudio
from daemon.runtime.api import Services, TranscribeOptions
from protocols.wyoming.agent import handle_text
from protocols.wyoming.asr import AsrRequest
from protocols.wyoming.errors import Reported, error_event
from protocols.wyoming.framing import FrameError, read_event
from protocols.wyoming.info import build_info
from protocols.wyoming.tts import WyomingTts
from protocols.wyoming.wake import WyomingWake

_LOGGER = logging.getLogger(__name__)

LINGER_S = 2.0
"""After an error, how long what the client still sends is read and dropped (s)."""
LINGER_BYTES = 64 * 1024 * 1024
"""After an error, at most this much of what the client still sends is read and dropped:
half an hour of 16 kHz audio, so a client that sends a whole recording at once and reads
only when its socket fills still finds the error, not a reset, when it reads."""
WRITE_TIMEOUT_S = 30.0
"""Longest wait for the client to take one event (s). A client that stops reading fills
the socket buffers; without this its TTS request would hold a synthesis worker until
``limits.request_timeout_s``. A live client on a slow link takes an audio chunk in far
less."""
Observer = Callable[[str], None]
"""Told the outcome of each finished request: "" when it succeeded, else the error code."""


SELECT_PROGRAM = "select-program"
"""wyoming 1.10's choice among a server's programs (``wyoming.info.SelectProgram``)."""


class WyomingConnection:
    """Reads events until the peer leaves; answers each request in order."""

    def __init__(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        services: Services,
        max_event_bytes: int,
        body_timeout_s: float,
        observer: Observer | None = None,
    ) -> None:
        self.reader = reader
        self.observer = observer
        self.writer = writer
        self.services = services
        """The core's services (each call reads the engines in use now)."""
        self.max_event_bytes = max_event_bytes
        self.body_timeout_s = body_timeout_s
        self.id = uuid.uuid4().hex[:8]
        self._asr: AsrRequest | None = None
        self._transcribe = Transcribe()
        self._handling = False
        self.closing = False
        """Ending: it serves no more requests (after an error it only drops what the
        client still sends, for up to LINGER_S)."""
        self._wake = WyomingWake(services.wake, self.write, self.id)
        self._tts = WyomingTts(self, services.voices)

    @property
    def busy(self) -> bool:
        """A request is in progress (shutdown lets it finish)."""
        return self._handling or self._asr is not None or self._tts.streaming

    async def write(self, event: Event) -> None:
        """Send one event; a client that does not take it in WRITE_TIMEOUT_S is dropped."""
        try:
            async with asyncio.timeout(WRITE_TIMEOUT_S):
                await async_write_event(event, self.writer)
        except TimeoutError:
            _LOGGER.info("[%s] client stopped reading; dropping it", self.id)
            # close() would wait to flush the buffered bytes to a client that takes none.
            self.writer.transport.abort()
            raise ConnectionResetError("the client stopped reading") from None

    async def run(self) -> None:
        """Serve the connection until it closes (or an error ends it)."""
        failed = False
        try:
            while True:
                try:
                    event = await read_event(self.reader, self.max_event_bytes, self.body_timeout_s)
                except FrameError as exc:
                    _LOGGER.info("[%s] bad event: %s", self.id, exc.message)
                    failed = True
                    await self.write(error_event(exc))
                    return
                if event is None:
                    return
                ends = self._ends_request(event)
                try:
                    self._handling = True
                    await self.handle(event)
                    self.observe("" if ends else None)
                except Reported as exc:
                    if not exc.counted:
                        self.observe(exc.code)
                    failed = True
                    return
                except HearthError as exc:
                    self.observe(exc.code)
                    _LOGGER.info("[%s] %s: %s", self.id, exc.code, exc.message)
                    failed = True
                    await self.write(error_event(exc))
                    return
                except (KeyError, TypeError, ValueError) as exc:
                    self.observe("invalid-event")
                    _LOGGER.info("[%s] malformed %s event: %r", self.id, event.type, exc)
                    problem = f"malformed '{event.type}' event ({type(exc).__name__}: {exc})"
                    failed = True
                    await self.write(Error(text=problem, code="invalid-event").event())
                    return
                except (ConnectionError, asyncio.IncompleteReadError):
                    raise
                except Exception as exc:  # noqa: BLE001 - the client hears an error, then EOF
                    self.observe("internal-error")
                    _LOGGER.exception("[%s] %s event failed", self.id, event.type)
                    failed = True
                    await self.write(error_event(exc))
                    return
                finally:
                    self._handling = False
        except (ConnectionError, asyncio.IncompleteReadError):
            _LOGGER.debug("[%s] connection lost", self.id)
            failed = False
        finally:
            await self.close(linger=failed)

    def _ends_request(self, event: Event) -> bool:
        """Whether handling ``event`` completes a request (for the request count)."""
        kind = event.type
        if AudioStop.is_type(kind):
            # A request whose session ended the turn was counted at its transcript.
            return (self._asr is not None and self._asr.reported is None) or self._wake.active
        if Synthesize.is_type(kind):
            return not self._tts.streaming
        return any(t.is_type(kind) for t in (Describe, SynthesizeStop, Transcript))

    def observe(self, code: str | None) -> None:
        """Tell the observer a request's outcome (None: no request ended)."""
        if code is not None and self.observer is not None:
            self.observer(code)

    async def close(self, linger: bool = False) -> None:
        """End open requests and the connection.

        With ``linger`` (after an error event), the client reads EOF at once, and
        what it still sends is dropped for a moment so the error is not lost to a
        TCP reset.
        """
        self.closing = True
        try:
            await self._drop_asr()
            await self._tts.close()
            await self._wake.close()
            if linger:
                await self._linger()
        finally:
            self.writer.close()
        with contextlib.suppress(Exception):
            await self.writer.wait_closed()

    async def _linger(self) -> None:
        try:
            if self.writer.can_write_eof():
                self.writer.write_eof()
            await self.writer.drain()
            dropped = 0
            async with asyncio.timeout(LINGER_S):
                while dropped < LINGER_BYTES and (data := await self.reader.read(65536)):
                    dropped += len(data)
        except (TimeoutError, ConnectionError, OSError):
            pass  # the client did not leave in time, or left: close either way

    # ------------------------------------------------------------------ dispatch

    async def handle(self, event: Event) -> None:
        """Answer one event (HearthError becomes an ``error`` event)."""
        kind = event.type
        if self._wake.claims(event):
            await self._wake.handle(event)  # detect, and the audio of a detection run
        elif Describe.is_type(kind):
            await self.write((await build_info(self.services)).event())
        elif Ping.is_type(kind):
            await self.write(Pong(text=Ping.from_event(event).text).event())
        elif Transcribe.is_type(kind):
            self._transcribe = Transcribe.from_event(event)
            # An unknown model or a language it does not speak: the error comes now.
            self.services.speech.check_transcribe(
                self._transcribe.name, TranscribeOptions(language=self._transcribe.language or None)
            )
        elif AudioStart.is_type(kind):
            await self._audio_start(AudioStart.from_event(event))
        elif AudioChunk.is_type(kind):
            await self._audio_chunk(event)
        elif AudioStop.is_type(kind):
            await self._audio_stop()
        elif self._tts.claims(event):
            await self._tts.handle(event)  # synthesize, or a stream's start, chunk, stop
        elif Transcript.is_type(kind):
            await self._handle_text(event)
        elif kind == SELECT_PROGRAM:
            # Each request names its model or voice itself: selecting a program changes
            # nothing here, and the client goes on as with any server.
            _LOGGER.debug("[%s] select-program %s", self.id, event.data.get("name"))
        else:
            # The Wyoming README asks servers to skip events they do not know; an error
            # here made clients that send newer events (HA 2026's select-program) fail.
            _LOGGER.debug("[%s] skipped an unknown event type %r", self.id, kind)

    # ------------------------------------------------------------------ ASR

    async def _drop_asr(self) -> None:
        """Close the transcribe request in progress, if any."""
        if self._asr is not None:
            await self._asr.close()
            self._asr = None

    async def _audio_start(self, start: AudioStart) -> None:
        await self._drop_asr()
        request = self._transcribe
        self._transcribe = Transcribe()
        fmt = AudioFormat(start.rate, start.width, start.channels)
        self._asr = await AsrRequest.open(self, self.services, request, fmt)
        await self.write(TranscriptStart(language=self._asr.language).event())
        self._asr.begin()

    async def _audio_chunk(self, event: Event) -> None:
        if self._asr is None:
            raise InvalidAudio("audio-chunk before audio-start")
        try:
            chunk = AudioChunk.from_event(event)
        except (KeyError, TypeError, ValueError):
            raise InvalidAudio("audio-chunk needs rate, width and channels") from None
        await self._asr.feed(AudioFormat(chunk.rate, chunk.width, chunk.channels), chunk.audio)

    async def _audio_stop(self) -> None:
        request, self._asr = self._asr, None
        if request is None:
            raise InvalidAudio("audio-stop before audio-start")
        try:
            await request.finish()
        finally:
            await request.close()

    # ------------------------------------------------------------------ conversation

    async def _handle_text(self, event: Event) -> None:
        # The reply keeps the engines it started with across a reload.
        await handle_text(self.services.chat, self.write, self.id, event)
