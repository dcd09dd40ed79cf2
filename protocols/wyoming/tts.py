"""Wyoming text to speech: ``synthesize``, and the streamed ``synthesize-start``,
``synthesize-chunk``..., ``synthesize-stop``.

A whole ``synthesize`` is one ``audio-start`` / ``audio-chunk``... / ``audio-stop``
group. A stream's text goes to the core's sentence speaker as it arrives, and each
sentence goes out as its own group as soon as it is spoken, then
``synthesize-stopped``. Inside a stream, the whole ``synthesize`` old clients also send
is ignored. The voice, the sentences, their bounds and the deadline are the core's;
this module frames the audio (``SAMPLES_PER_CHUNK`` per chunk).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from typing import Any, Protocol

from wyoming.audio import AudioChunk, AudioStart, AudioStop
from wyoming.event import Event
from wyoming.tts import (
    Synthesize,
    SynthesizeChunk,
    SynthesizeStart,
    SynthesizeStop,
    SynthesizeStopped,
)

from daemon.errors import HearthError, InvalidRequest
from daemon.runtime.api import SentenceAudio, SentenceSpeaker, SpeechOut, SynthesisOptions

_LOGGER = logging.getLogger(__name__)
SAMPLES_PER_CHUNK = 1024
"""Audio samples per outgoing ``audio-chunk`` (what Wyoming servers commonly send)."""
KINDS = (Synthesize, SynthesizeStart, SynthesizeChunk, SynthesizeStop)


class Writer(Protocol):
    """What the speech needs of its connection."""

    id: str

    async def write(self, event: Event) -> None:
        """Send one event."""


class WyomingTts:
    """One connection's speech: a whole ``synthesize`` or one stream at a time."""

    def __init__(self, conn: Writer, voices: SpeechOut) -> None:
        self._conn = conn
        self._voices = voices
        self._stream: _TtsStream | None = None

    @property
    def streaming(self) -> bool:
        """A ``synthesize-start`` stream is open."""
        return self._stream is not None

    @staticmethod
    def claims(event: Event) -> bool:
        """Whether ``event`` is for the speech service."""
        return any(kind.is_type(event.type) for kind in KINDS)

    async def handle(self, event: Event) -> None:
        """Answer one speech event (HearthError is the connection's to report)."""
        kind = event.type
        if Synthesize.is_type(kind):
            if self._stream is None:  # inside a stream it is the copy for old servers
                await self._synthesize(Synthesize.from_event(event))
        elif SynthesizeStart.is_type(kind):
            await self._start(SynthesizeStart.from_event(event))
        elif SynthesizeChunk.is_type(kind):
            await self._chunk(SynthesizeChunk.from_event(event))
        elif SynthesizeStop.is_type(kind):
            await self._stop()

    async def close(self) -> None:
        """Cancel the stream in progress, if any."""
        stream, self._stream = self._stream, None
        if stream is not None:
            await stream.cancel()

    def _options(self, voice: Any) -> SynthesisOptions:
        return self._voices.voice_for(
            getattr(voice, "name", None) or None,
            language=getattr(voice, "language", None) or None,
            speaker=getattr(voice, "speaker", None) or None,
        )

    async def _synthesize(self, request: Synthesize) -> None:
        options = self._options(request.voice)
        # One request, one set of engines, even across a reload (the speech holds them).
        await _send_audio(self._conn, self._voices.speak(request.text, options))

    async def _start(self, start: SynthesizeStart) -> None:
        await self.close()
        options = self._options(start.voice)
        self._stream = _TtsStream(self._conn, self._voices.speak_stream(options))

    async def _chunk(self, chunk: SynthesizeChunk) -> None:
        if self._stream is None:
            raise InvalidRequest("synthesize-chunk before synthesize-start")
        try:
            self._stream.add(chunk.text)
        except HearthError:
            await self.close()
            raise

    async def _stop(self) -> None:
        stream, self._stream = self._stream, None
        if stream is None:
            raise InvalidRequest("synthesize-stop before synthesize-start")
        try:
            await stream.finish()
        finally:
            await self._conn.write(SynthesizeStopped().event())


async def _send_audio(conn: Writer, blocks: AsyncIterator[SentenceAudio]) -> None:
    """One audio-start / audio-chunk... / audio-stop group for some sentences."""
    started = False
    async for block in blocks:
        if not started:
            await conn.write(AudioStart(rate=block.rate, width=2, channels=1).event())
            started = True
        await _send_chunks(conn, block)
    if started:
        await conn.write(AudioStop().event())


async def _send_chunks(conn: Writer, block: SentenceAudio) -> None:
    step = SAMPLES_PER_CHUNK * 2
    for offset in range(0, len(block.pcm), step):
        chunk = block.pcm[offset : offset + step]
        await conn.write(AudioChunk(rate=block.rate, width=2, channels=1, audio=chunk).event())


class _TtsStream:
    """Streaming synthesis: text arrives in pieces (the core's sentence speaker speaks
    it), and each finished sentence goes out as its own audio group."""

    def __init__(self, conn: Writer, voice: SentenceSpeaker) -> None:
        self.conn = conn
        self.voice = voice
        self.task = asyncio.create_task(self._run(), name=f"wyoming-tts-{conn.id}")
        self.error: HearthError | None = None

    def add(self, text: str) -> None:
        if self.error is not None:
            raise self.error
        self.voice.write_now(text)

    async def finish(self) -> None:
        self.voice.end()
        await self.task
        if self.error is not None:
            raise self.error

    async def cancel(self) -> None:
        self.task.cancel()
        try:
            await self.task
        except asyncio.CancelledError:
            current = asyncio.current_task()
            if current is not None and current.cancelling():
                raise  # the caller itself is being cancelled, not just the stream
        except (ConnectionError, HearthError):
            pass  # the stream is being dropped; nothing is waiting for its outcome
        except Exception:  # noqa: BLE001 - a dropped stream must not take the connection
            _LOGGER.exception("[%s] streamed synthesis failed", self.conn.id)

    async def _run(self) -> None:
        started = False
        try:
            async for _, block in self.voice.audio():
                if block is None:  # the sentence is spoken: its group ends
                    await self.conn.write(AudioStop().event())
                    started = False
                    continue
                if not started:
                    started = True
                    await self.conn.write(AudioStart(rate=block.rate, width=2, channels=1).event())
                await _send_chunks(self.conn, block)
        except HearthError as exc:
            self.error = exc
        except (asyncio.CancelledError, ConnectionError):
            raise
        except Exception:  # noqa: BLE001 - the client hears an error, not silence
            _LOGGER.exception("[%s] streamed synthesis failed", self.conn.id)
            self.error = HearthError("internal error; see the daemon's log")
